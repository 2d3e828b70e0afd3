import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../../src/auth/api-key.js';
import {
  createHeaderScrubber as createScrubber,
  normaliseHeaderName,
  scrubResponseHeaders,
  type TrustedHeaderNames,
} from '../../../src/guards/header-scrub.js';
import { createKeyMatcher, type GuardLevel } from '../../../src/guards/key-material.js';
import { createStrictMatcher } from '../../../src/guards/strict-material.js';

/**
 * The scrubber as the forward step runs it: with the matcher of the request's `X-API-Key` (an
 * array or none: no presented key), at the strict level unless asked (the split-copy tests need it).
 */
function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
  allow?: readonly string[],
  level: GuardLevel = 'strict',
) {
  const scrub = createScrubber(names, extra, allow);
  return (h: IncomingHttpHeaders, trusted = false) =>
    scrub(h, trusted, createKeyMatcher(typeof h['x-api-key'] === 'string' ? h['x-api-key'] : '', level));
}

const NAMES = {
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
  requestId: 'x-request-id',
};

// Every name the scrubber documents as dropped from every peer, trusted proxies included.
const ALWAYS_DROPPED = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-authentication-info',
  'http2-settings',
  'forwarded',
  'x-real-ip',
  'true-client-ip',
  'x-client-ip',
  'client-ip',
  'cf-connecting-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  'x-proxyuser-ip',
  'x-originating-ip',
  'x-remote-ip',
  'x-remote-addr',
  'wl-proxy-client-ip',
  'proxy-client-ip',
  'x-host',
  'x-http-host-override',
  'x-rewrite-url',
  'x-forwarded-prefix',
  'x-forwarded-uri',
  'x-forwarded-url',
  'x-forwarded-path',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-url',
  'x-original-forwarded-for',
  'x-forwarded',
  'forwarded-for',
  'forwarded-host',
  'forwarded-proto',
  'x-scheme',
  'x-url-scheme',
  'x-client-scheme',
  'front-end-https',
  'x-arr-ssl',
  'remote-user',
  'remote-addr',
  'x-user',
  'x-auth-user',
  'x-forwarded-user',
  'x-forwarded-email',
  'x-forwarded-groups',
  'x-forwarded-preferred-username',
  'x-forwarded-access-token',
  'x-api-key',
  'x-company-id',
  'x-api-key-id',
  'x-company-tier',
  'x-request-id',
];

describe('createHeaderScrubber', () => {
  test('every documented name is dropped, in either spelling, from a trusted peer too', () => {
    const scrub = createHeaderScrubber(NAMES);
    for (const name of ALWAYS_DROPPED)
      for (const spelled of [name, name.replace(/-/g, '_')])
        for (const trusted of [false, true])
          assert.deepEqual(
            scrub({ [spelled]: 'a-value-of-twenty-chars-or-more', accept: 'a' }, trusted),
            { accept: 'a' },
            `${spelled} ${trusted}`,
          );
  });

  test('X-Forwarded-For/-Proto/-Host pass from a trusted peer in canonical spelling only; the rest of the family too', () => {
    const scrub = createHeaderScrubber(NAMES);
    const h = {
      'x-forwarded-for': '1.2.3.4',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'h',
      'x-forwarded-port': '443',
    };
    assert.deepEqual(scrub(h, true), h);
    assert.deepEqual(scrub(h, false), {});
    assert.deepEqual(
      scrub(
        { x_forwarded_for: '1', x_forwarded_proto: 'http', x_forwarded_host: 'e', x_forwarded_port: '1' },
        true,
      ),
      {
        x_forwarded_port: '1',
      },
    );
  });

  test('Connection drops the names it lists, never the framing headers', () => {
    const scrub = createHeaderScrubber(NAMES);
    const h: IncomingHttpHeaders = {
      connection: 'close, keep-alive, host, content-length, transfer-encoding, content-type, x-a',
      host: 'h',
      'content-length': '1',
      'transfer-encoding': 'chunked',
      'content-type': 't',
      'x-a': '1',
      close: 'c',
    };
    assert.deepEqual(scrub(h), {
      host: 'h',
      'content-length': '1',
      'transfer-encoding': 'chunked',
      'content-type': 't',
      close: 'c',
    });
  });

  test('extra names: exact ones, and prefixes ending in *', () => {
    const scrub = createHeaderScrubber(NAMES, ['X-Debug', 'X-Extra-*']);
    assert.deepEqual(
      scrub({ 'x-debug': '1', 'x-debug-2': '2', 'x-extra-a': '3', 'x-extra_b': '4', '*': '5' }),
      {
        'x-debug-2': '2',
        '*': '5',
      },
    );
    assert.deepEqual(createHeaderScrubber(NAMES)({ 'x-extra-a': '3' }), { 'x-extra-a': '3' });
  });

  test('the presented key goes wherever it appears: a header name, a value, an array, a cookie pair', () => {
    const scrub = createHeaderScrubber(NAMES);
    const key = generateApiKey('live');
    const out = scrub({
      'x-api-key': key,
      authorization: `Bearer ${key}`,
      [`x-${key.toLowerCase()}`]: 'v',
      'x-list': ['a', key] as unknown as string,
      'x-other': ['a', 'b'] as unknown as string,
      cookie: `a=1; k=${key};; b=2`,
      'x-plain': 'p',
    });
    assert.deepEqual(out, { 'x-other': ['a', 'b'], cookie: 'a=1; b=2', 'x-plain': 'p' });
    assert.deepEqual(scrub({ 'x-api-key': key, cookie: `k=${key}` }), {}, 'a cookie of only the key goes');
    // Without a key, or an empty one, nothing is scanned.
    assert.deepEqual(scrub({ 'x-api-key': '', cookie: 'a=1' }), { cookie: 'a=1' });
  });
});

describe('createHeaderScrubber: the key in names, arrays, cookies and split values', () => {
  const scrub = createHeaderScrubber(NAMES);
  const key = generateApiKey('live');
  const body = key.slice(key.indexOf('_', 3) + 1);

  test('a header whose name holds the key is dropped', () => {
    assert.deepEqual(scrub({ 'x-api-key': key, [`x-${body.toLowerCase()}`]: '1', accept: 'a' }), {
      accept: 'a',
    });
  });

  test('a repeated header (array) is dropped when any one value holds the key', () => {
    assert.deepEqual(scrub({ 'x-api-key': key, 'x-multi': ['plain', `t ${key}`], 'x-ok': ['a', 'b'] }), {
      'x-ok': ['a', 'b'],
    });
    // Node gives Cookie as one string; a caller's array is read like any repeated header.
    const cookies = {
      'x-api-key': key,
      cookie: ['a=1', `k=${key}`],
      accept: 'a',
    } as unknown as IncomingHttpHeaders;
    assert.deepEqual(scrub(cookies), { accept: 'a' });
  });

  test('a repeated header holding another valid key in one value is dropped (no split search covers it)', () => {
    const other = generateApiKey('live');
    assert.deepEqual(scrub({ 'x-api-key': key, 'x-multi': ['plain', other], accept: 'a' }), { accept: 'a' });
    assert.deepEqual(scrub({ 'x-multi': [other, 'plain'], accept: 'a' }), { accept: 'a' });
  });

  test('only Cookie loses single pairs; any other header holding the key goes whole', () => {
    assert.deepEqual(scrub({ 'x-api-key': key, 'x-note': `a=1; ${key}`, cookie: `a=1; k=${key}; b=2` }), {
      cookie: 'a=1; b=2',
    });
  });

  test('a key split over several headers: every part goes, the headers around it stay', () => {
    const out = scrub({
      'x-api-key': key,
      'x-before': 'text/plain',
      'x-part-1': key.slice(0, 20),
      'x-part-2': key.slice(20, 35),
      'x-part-3': key.slice(35),
      'x-after': 'unrelated value',
    });
    assert.deepEqual(out, { 'x-before': 'text/plain', 'x-after': 'unrelated value' });
    // Repeated values are joined like one value.
    assert.deepEqual(
      scrub({ 'x-api-key': key, 'x-a': 'keep', 'x-list': [body.slice(0, 12), body.slice(12, 30)] }),
      {
        'x-a': 'keep',
      },
    );
    // Without a copy of the secret nothing is dropped: 23 of its characters. Names and values are
    // joined, so the letters next to the pieces differ from the secret's 12th character (else the
    // piece would go on, and 24 characters of the secret would be there).
    const c = body[11]!.toLowerCase() === 'q' ? 'w' : 'q';
    assert.deepEqual(
      scrub({ 'x-api-key': key, 'x-p': body.slice(0, 11), [`${c}-q`]: 'zz', [`x-${c}`]: body.slice(12, 24) }),
      {
        'x-p': body.slice(0, 11),
        [`${c}-q`]: 'zz',
        [`x-${c}`]: body.slice(12, 24),
      },
    );
  });

  test('a header that continues a split copy by up to 3 characters by chance stays; from 4 on it goes', () => {
    // The stretch in `x-a` is extended as far as the joined text matches the secret: into the next
    // header's name when that starts with the secret's next characters (about 1 key in 100 did with
    // `x-innocent` after a 30-character split).
    // After the n characters comes one that is not the secret's next, so the stretch stops there
    // (`innocent` alone continued it by one more whenever the secret's next character was an `i`).
    const next = body.slice(22, 26).toLowerCase();
    const stop = (i: number) => (body[i]!.toLowerCase() === 'q' ? 'w' : 'q');
    for (const [n, kept] of [
      [1, true],
      [3, true],
      [4, false],
    ] as const) {
      const innocent = `${next.slice(0, n)}-${stop(22 + n)}-innocent`;
      const out = scrub({
        'x-api-key': key,
        'x-a': key.slice(0, 30),
        [innocent]: 'stays',
        'x-b': key.slice(30),
      });
      assert.deepEqual(out, kept ? { [innocent]: 'stays' } : {}, innocent);
    }
  });

  test('pieces in reverse header order (http-proxy copies headers backwards onto the upstream request)', () => {
    // 7-character pieces, each under the 8 a stretch needs, in reverse order;
    // on the wire they arrive in the right order and spell the whole secret.
    const pieces: string[] = [];
    for (let i = 0; i < body.length; i += 7) pieces.push(body.slice(i, i + 7));
    const names: IncomingHttpHeaders = { 'x-api-key': key, accept: 'a' };
    for (const p of [...pieces].reverse()) names[p.toLowerCase()] = '-';
    assert.deepEqual(scrub(names), { accept: 'a' });
    // The first header kept takes part too (the reverse join reads every header).
    const first: IncomingHttpHeaders = { 'x-api-key': key };
    for (const p of [...pieces].reverse()) first[p.toLowerCase()] = '-';
    first.accept = 'a';
    assert.deepEqual(scrub(first), { accept: 'a' });
    // Name and value split (4 + 3), reversed too.
    const split: IncomingHttpHeaders = { 'x-api-key': key, accept: 'a' };
    for (const p of [...pieces].reverse()) split[p.slice(0, 4).toLowerCase()] = p.slice(4);
    assert.deepEqual(scrub(split), { accept: 'a' });
  });

  test('a header the gateway removes later (Transfer-Encoding, traceparent) does not keep two pieces apart', () => {
    // 7 + 17 characters around Transfer-Encoding, which route-proxy deletes once a
    // form or JSON body is read whole; neither piece alone is a copy, side by side they are 24.
    const s = body.toLowerCase();
    for (const between of ['transfer-encoding', 'traceparent', 'tracestate', 'x-forwarded-host']) {
      for (const [a, b] of [
        [s.slice(17, 24), `zz${s.slice(0, 17)}`],
        [`zz${s.slice(0, 17)}`, s.slice(17, 24)],
      ]) {
        const out = scrub({
          'x-api-key': key,
          host: 'gw',
          [a!]: 'zz',
          [between]: 'x',
          'x-b': b!,
          accept: 'a',
        });
        delete out[between];
        const seen = Object.entries(out)
          .flatMap(([n, v]) => [n, String(v)])
          .join('')
          .toLowerCase()
          .replace(/[^a-z0-9]/g, '');
        const reversed = Object.entries(out)
          .reverse()
          .flatMap(([n, v]) => [n, String(v)])
          .join('')
          .toLowerCase()
          .replace(/[^a-z0-9]/g, '');
        for (const text of [seen, reversed])
          for (let i = 0; i + 24 <= s.length; i++)
            assert.ok(!text.includes(s.slice(i, i + 24)), `${between}: ${text}`);
      }
    }
  });

  test('escapes between pieces do not break a copy the raw text holds (`&#9`, `%6f` decode to other characters)', () => {
    // `&#` before a digit makes the decoded form lose that digit (a tab), so
    // only the raw form, separators removed, holds the secret whole.
    // A key whose decoded pieces hold no stretch covering 24 (most keys), so only the raw join finds it.
    for (let tries = 0; tries < 500; tries++) {
      const k = generateApiKey('live');
      const m = createStrictMatcher(k).split!;
      const eaten = k.slice(8).replace(/(\d)(?=\D|$)/g, '&#$1');
      const cut = eaten.length >> 1;
      if (m.piecesIn(m.normalise(eaten.slice(0, cut)) + m.normalise(eaten.slice(cut))) !== null) continue;
      const out = scrub({ 'x-api-key': k, [`x-${eaten.slice(0, cut)}`]: eaten.slice(cut), accept: 'a' });
      assert.deepEqual(out, { accept: 'a' });
      const cookie = scrub({
        'x-api-key': k,
        cookie: `a=1; p=${eaten.slice(0, cut)}; q=${eaten.slice(cut)}`,
      });
      assert.deepEqual(cookie, { cookie: 'a=1' });
      return;
    }
    assert.fail('no key in 500 had its stretches hidden by decoding');
  });

  test('with several X-API-Key values, valid keys are still found, nothing else is', () => {
    const other = generateApiKey('live');
    assert.deepEqual(
      scrub({ 'x-api-key': [key, other], 'x-a': `b ${other}`, 'x-note': 'Stryker was here!' }),
      {
        'x-note': 'Stryker was here!',
      },
    );
  });
});

describe('createHeaderScrubber: names and hostnames, which arrive lowercased', () => {
  // Node lowercases header names and clients lowercase hostnames (writing `-` for `_`): a key there
  // has lost its checksum, so its shape counts whosever it is, and the presented key in any case.
  const key = generateApiKey('live');
  const other = generateApiKey('test');
  const folded = (k: string) => k.toLowerCase().replace(/_/g, '-');
  for (const level of ['default', 'strict'] as const) {
    const scrub = createHeaderScrubber(NAMES, [], undefined, level);
    test(`${level}: a header name holding any key's shape, lowercased, is dropped`, () => {
      for (const name of [`x-${other.toLowerCase()}`, `x-${folded(other)}`, `${folded(key)}-x`])
        assert.deepEqual(scrub({ 'x-api-key': key, [name]: '1', accept: 'a' }), { accept: 'a' }, name);
    });
    test(`${level}: Host and a trusted X-Forwarded-Host holding a key in any case are dropped`, () => {
      for (const k of [key, other])
        for (const host of [
          `${folded(k)}.example.com`,
          `${k.toUpperCase()}.example.com`,
          `a.example.com:${folded(k)}`,
        ]) {
          assert.deepEqual(scrub({ 'x-api-key': key, host, accept: 'a' }), { accept: 'a' }, host);
          assert.deepEqual(
            scrub({ 'x-api-key': key, 'x-forwarded-host': host, host: 'gw.example.com' }, true),
            { host: 'gw.example.com' },
            host,
          );
        }
      // The presented key's secret alone, lowercased, is a copy too (a hostname has no checksum to check).
      const secret = key.slice(8, 40).toLowerCase();
      assert.deepEqual(scrub({ 'x-api-key': key, host: `${secret}.example.com` }), {});
    });
    test(`${level}: ordinary names and hostnames pass`, () => {
      const h = { 'x-api-key': key, host: 'api.example.com:8443', 'x-nk-live-setting': '1', accept: 'a' };
      const { 'x-api-key': _k, ...rest } = h;
      assert.deepEqual(scrub(h), rest);
    });
  }
});

describe('scrubResponseHeaders', () => {
  test('hop-by-hop, Connection-named and plain chunked go; Expect and other codings stay', () => {
    const h: IncomingHttpHeaders = {
      connection: 'close, x-internal',
      'x-internal': '1',
      'keep-alive': 't',
      'proxy-authenticate': 'p',
      'proxy-connection': 'p',
      'proxy-authentication-info': 'p',
      'http2-settings': 's',
      te: 't',
      trailer: 't',
      upgrade: 'u',
      expect: '100-continue',
      'transfer-encoding': ' Chunked ',
      'content-type': 'c',
    };
    scrubResponseHeaders(h);
    assert.deepEqual(h, { expect: '100-continue', 'content-type': 'c' });
    const gz: IncomingHttpHeaders = { 'transfer-encoding': 'gzip, chunked' };
    scrubResponseHeaders(gz);
    assert.deepEqual(gz, { 'transfer-encoding': 'gzip, chunked' });
  });
});

describe('look-alikes of configured trusted names', () => {
  const names = (companyId: string) => ({
    companyId,
    keyId: 'x-kid',
    companyTier: 'x-level',
    requestId: 'x-rid',
  });

  test('a name of 6 or more characters is dropped wherever it appears; a shorter one only whole', () => {
    const six = createHeaderScrubber(names('x-abcdef'));
    for (const n of ['x-abcdef', 'abcdef', 'xabcdef', 'x-abcdef-2', 'x-my-abc-def'])
      assert.deepEqual(six({ [n]: 'v' }), {}, n);
    const five = createHeaderScrubber(names('x-abcde'));
    for (const n of ['x-abcde', 'abcde', 'xabcde', 'x-ab-cde']) assert.deepEqual(five({ [n]: 'v' }), {}, n);
    for (const n of ['x-abcde-2', 'yabcde', 'abcdex'])
      assert.deepEqual(five({ [n]: 'v' }), { [n]: 'v' }, `${n} passes`);
  });
});

describe('allow-list mode (headers.allowFromClients)', () => {
  test('only listed names and prefixes pass, with the framing headers; every drop rule still applies', () => {
    const scrub = createHeaderScrubber(NAMES, [], ['Accept', 'X-Sdk-*', 'X-Company-Id', 'X-Debug']);
    const h: IncomingHttpHeaders = {
      host: 'h',
      'content-length': '1',
      'transfer-encoding': 'chunked',
      'content-type': 't',
      accept: 'a',
      'x-sdk-version': '1',
      x_sdk_lang: 'ts',
      'x-company-id': 'forged',
      'x-debug': 'd',
      'x-debugger': 'no',
      'user-agent': 'no',
      'x-forwarded-for': '1.2.3.4',
    };
    assert.deepEqual(scrub({ ...h }, false), {
      host: 'h',
      'content-length': '1',
      'transfer-encoding': 'chunked',
      'content-type': 't',
      accept: 'a',
      'x-sdk-version': '1',
      x_sdk_lang: 'ts',
      'x-debug': 'd',
    });
    // A trusted proxy's X-Forwarded-For/-Proto/-Host are read by the forward step.
    assert.equal(scrub({ ...h }, true)['x-forwarded-for'], '1.2.3.4');
  });

  test('without prefixes nothing else passes; an empty list keeps the framing headers only', () => {
    assert.deepEqual(createHeaderScrubber(NAMES, [], ['accept'])({ accept: 'a', 'x-b': 'b' }), {
      accept: 'a',
    });
    assert.deepEqual(createHeaderScrubber(NAMES, [], [])({ host: 'h', accept: 'a' }), { host: 'h' });
  });
});

describe('createHeaderScrubber: values and cookies (mutation testing)', () => {
  const scrub = createHeaderScrubber(NAMES);
  const key = generateApiKey('live');
  const body = key.slice(key.indexOf('_', 3) + 1);

  test('a header without a value is left out; empty cookie pairs go', () => {
    assert.deepEqual(scrub({ 'x-a': undefined, accept: 'a' }), { accept: 'a' });
    assert.deepEqual(scrub({ cookie: 'a=1;; b=2; ' }), { cookie: 'a=1; b=2' });
  });

  test('a cookie given as an array passes as it is when it holds no key', () => {
    const h = { cookie: ['a=1', 'b=2'], accept: 'a' } as unknown as IncomingHttpHeaders;
    assert.deepEqual(scrub(h), { cookie: ['a=1', 'b=2'], accept: 'a' });
  });

  test('a name holding the key in hex is dropped by its name alone', () => {
    const name = `x-${Buffer.from(key).toString('hex')}`;
    assert.deepEqual(scrub({ 'x-api-key': key, [name]: 'v', accept: 'a' }), { accept: 'a' });
  });

  test('a key split between the first header name and its value: both go', () => {
    assert.deepEqual(
      scrub({ 'x-api-key': key, [`x-${body.slice(0, 16).toLowerCase()}`]: body.slice(16), accept: 'a' }),
      { accept: 'a' },
    );
  });
});

describe('createHeaderScrubber: survivors of the mutation run at 3f232ac', () => {
  test('separators fold as a run: a doubled or mixed separator does not get a listed prefix past', () => {
    const scrub = createHeaderScrubber(NAMES);
    for (const n of ['x--hasura--role', 'x-.sendfile_type', 'x-hasura.-role'])
      assert.deepEqual(scrub({ [n]: 'v', accept: 'a' }), { accept: 'a' }, n);
  });

  test('only a leading X- comes off a trusted name before its look-alikes are made', () => {
    const scrub = createHeaderScrubber({
      companyId: 'x-c',
      keyId: 'x-k',
      companyTier: 'tax-level',
      requestId: 'x-r',
    });
    assert.deepEqual(scrub({ 'x-taxlevel-2': 'v', accept: 'a' }), { accept: 'a' });
  });

  test('a key split over headers next to a repeated Cookie (an array): the parts go, the cookies stay', () => {
    const scrub = createHeaderScrubber(NAMES);
    const key = generateApiKey('live');
    const h = {
      'x-api-key': key,
      cookie: ['a=1', 'b=2'],
      'x-part-1': key.slice(0, 24),
      'x-part-2': key.slice(24),
    } as unknown as IncomingHttpHeaders;
    assert.deepEqual(scrub(h), { cookie: ['a=1', 'b=2'] });
  });
});

const KEY = 'nk_live_0123456789abcdefghijABCDEFGHIJ0123456789';

describe('header scrubbing, at the default level', () => {
  const scrub = createHeaderScrubber(NAMES, [], undefined, 'default');
  test('removes the key, trusted headers in any form, X-Forwarded-*, hop-by-hop and Connection-named headers', () => {
    const h: Record<string, string> = {
      host: 'a',
      'x-api-key': KEY,
      'x-company-id': 'evil',
      x_company_id: 'evil',
      'x-company_tier': 'evil',
      'x-api-key-id': 'evil',
      'x-request-id': 'evil',
      'x-forwarded-for': '1.1.1.1',
      forwarded: 'for=x',
      connection: 'keep-alive, x-custom, host, content-length',
      'x-custom': 'v',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      trailer: 'x-company-id',
      expect: '100-continue',
      'content-length': '3',
      'content-type': 'application/json',
      'x-other': 'kept',
    };
    const before = { ...h };
    const out = scrub(h);
    assert.deepEqual(h, before, 'the client view is not changed');
    assert.deepEqual(out, {
      host: 'a',
      'content-length': '3',
      'content-type': 'application/json',
      'x-other': 'kept',
    });
  });
  test('the X-Forwarded-* family: dropped from untrusted peers; from trusted ones only the canonical spelling', () => {
    const h = {
      'x-forwarded-for': '1.1.1.1',
      x_forwarded_for: '6.6.6.6',
      'x-forwarded-port': '443',
      'x-forwarded-prefix': '/admin',
      'x-original-url': '/admin',
      'x-http-method-override': 'DELETE',
      'proxy-authorization': 'Basic x',
    };
    assert.deepEqual(scrub(h), {});
    assert.deepEqual(scrub(h, true), { 'x-forwarded-for': '1.1.1.1', 'x-forwarded-port': '443' });
  });
  test('extra names and prefixes', () => {
    const s = createHeaderScrubber(
      { companyId: 'a', keyId: 'b', companyTier: 'c', requestId: 'd' },
      ['x-sig', 'x-extra-*'],
      undefined,
      'default',
    );
    assert.deepEqual(s({ 'x-sig': '1', x_sig: '1', 'x-extra-a': '1', x_extra_b: '1', 'x-extras': 'kept' }), {
      'x-extras': 'kept',
    });
  });
  test('the key: a header holding it is dropped, a cookie loses only the pair holding it', () => {
    const out = scrub({
      'x-api-key': KEY,
      authorization: `Bearer ${KEY}`,
      cookie: `a=1; k=${encodeURIComponent(KEY)}; b=2`,
      'x-other': 'kept',
    });
    assert.deepEqual(out, { cookie: 'a=1; b=2', 'x-other': 'kept' });
  });
  test('the default level leaves a split copy, which only the strict level reads', () => {
    const key = generateApiKey('live');
    const h = { 'x-api-key': key, 'x-a': key.slice(0, 24), 'x-b': key.slice(24) };
    assert.deepEqual(scrub(h), { 'x-a': key.slice(0, 24), 'x-b': key.slice(24) });
    assert.deepEqual(createHeaderScrubber(NAMES)(h), {});
  });
  test('response: Connection-named, hop-by-hop and plain chunked Transfer-Encoding removed in place', () => {
    const h: Record<string, string> = {
      connection: 'close, X-Debug, x_internal',
      'x-debug': '1',
      x_internal: '1',
      'keep-alive': 'timeout=5',
      'proxy-authenticate': 'Basic',
      upgrade: 'h2c',
      trailer: 'x-sum',
      'transfer-encoding': 'chunked',
      'content-type': 'text/plain',
    };
    scrubResponseHeaders(h);
    assert.deepEqual(h, { 'content-type': 'text/plain' });
    const gz: Record<string, string> = { 'transfer-encoding': 'gzip, chunked' };
    scrubResponseHeaders(gz);
    assert.deepEqual(gz, { 'transfer-encoding': 'gzip, chunked' }, 'other codings stay: the body is in them');
  });
  test('normalised names', () => {
    assert.equal(normaliseHeaderName('X_Company_ID'), 'x-company-id');
  });
});
