import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  createRouteMatcher,
  isSafeRequestPath,
  methodRuleOf,
  REFUSED_METHODS,
} from '../../../src/proxy/routes.js';

describe('route method rules', () => {
  test('the default list, GET implying HEAD, config order kept, refused methods never allowed', () => {
    assert.equal(methodRuleOf({}).allow, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    const ro = methodRuleOf({ methods: ['POST', 'GET'] });
    assert.equal(ro.allow, 'POST, GET, HEAD');
    assert.ok(ro.allows('HEAD') && ro.allows('GET') && ro.allows('POST'));
    assert.ok(!ro.allows('PUT') && !ro.allows('get') && !ro.allows('OPTIONS'));
    assert.equal(methodRuleOf({ methods: ['HEAD', 'GET'] }).allow, 'HEAD, GET');
    const odd = methodRuleOf({ methods: ['TRACE', 'PROPFIND', 'CONNECT'] });
    assert.equal(odd.allow, 'PROPFIND');
    assert.ok(!odd.allows('TRACE') && !odd.allows('CONNECT'));
    for (const m of ['TRACE', 'TRACK', 'CONNECT']) assert.ok(!methodRuleOf({}).allows(m), m);
  });
  test('computed once per route object', () => {
    const route = { methods: ['GET'] };
    assert.equal(methodRuleOf(route), methodRuleOf(route));
  });
});

describe('route matching', () => {
  const match = createRouteMatcher([
    { prefix: '/notify/v1' },
    { prefix: '/notify/v1/admin' },
    { prefix: '/billing' },
  ]);
  test('longest prefix on segment boundaries', () => {
    assert.equal(match('/notify/v1')?.prefix, '/notify/v1');
    assert.equal(match('/notify/v1/otps')?.prefix, '/notify/v1');
    assert.equal(match('/notify/v1/admin/x')?.prefix, '/notify/v1/admin');
    assert.equal(match('/notify/v10'), null);
    assert.equal(match('/notify'), null);
    assert.equal(match('/billingx'), null);
  });
  test('a catch-all route', () => {
    assert.equal(createRouteMatcher([{ prefix: '/' }])('/anything')?.prefix, '/');
  });
  test('`;` ends the prefix segment: `/notify/v1;x` is the /notify/v1 route, as Tomcat reads it', () => {
    const withCatchAll = createRouteMatcher([{ prefix: '/' }, { prefix: '/notify/v1' }]);
    assert.equal(withCatchAll('/notify/v1;x')?.prefix, '/notify/v1');
    assert.equal(withCatchAll('/notify/v1;jsessionid=1/otps')?.prefix, '/notify/v1');
    assert.equal(withCatchAll('/notify/v1x')?.prefix, '/');
  });
  test('unsafe paths: dot segments (plain, encoded, with ;), empty segments, fragments, backslashes, absolute-form', () => {
    for (const p of [
      '/notify/v1/../admin',
      '/notify/v1/%2e%2e/admin',
      '/notify/v1/.%2E/x',
      '/a/./b',
      '/a\\b',
      'http://evil/x',
      '//evil/x',
      '/a%00b',
      '/notify/v1/%2E%2E%2Fadmin',
      '/notify/v1//health',
      '/notify/v1/x#frag',
      '/notify/v1/..;/admin',
      '/notify/v1/.%2e;x/admin',
      // Found by an adversarial pass: encoded `;`, IIS `%u`, overlong UTF-8, double encoding.
      '/notify/v1/..%3b/admin',
      '/notify/v1/%2e%2e%3b/admin',
      '/notify/v1/%u002e%u002e/admin',
      '/notify/v1/%U002E/x',
      '/notify/v1/%c0%ae%c0%ae/admin',
      '/notify/v1/%C1%9C/x',
      '/notify/v1/%e0%80%ae/x',
      '/notify/v1/%f0%80%80%ae/x',
      '/notify/v1/%252e%252e/admin',
      '/notify/v1/..%252f..%252fadmin',
      '/notify/v1/%255c/x',
      '/notify/v1/%252e%252e%253b/admin',
      '/notify/v1/%2500/x',
    ]) {
      assert.equal(isSafeRequestPath(p), false, p);
    }
    for (const p of [
      '/notify/v1/otps',
      '/notify/v1/file.json',
      '/a/..b/c',
      '/v1.2/x',
      '/',
      '/a;v=1/b',
      '/notify/v1/x%2fy',
      '/notify/v1/caf%c3%a9',
      '/notify/v1/%25',
      '/notify/v1/100%25done',
      '/notify/v1/a%3bb',
    ])
      assert.equal(isSafeRequestPath(p), true, p);
  });
});

describe('isSafeRequestPath: each refusal on its own', () => {
  test('not starting with /, an empty segment, a fragment, a literal backslash', () => {
    for (const p of ['a/b', '/a//b', '/a#b', '/a\\b']) assert.equal(isSafeRequestPath(p), false, p);
    assert.equal(isSafeRequestPath('/a/b'), true);
  });

  test('a dot segment at the very end, plain or encoded', () => {
    for (const p of ['/a/.', '/a/..', '/a/%2e', '/a/%2E%2e']) assert.equal(isSafeRequestPath(p), false, p);
    // Dots inside a segment, or a segment that only starts with dots, are names.
    for (const p of ['/.well-known/x', '/a/.b', '/a/..b', '/a/b.', '/a/b..'])
      assert.equal(isSafeRequestPath(p), true, p);
  });

  test('%3b is a ; (so ..%3bx is ..;x), only the listed escapes are refused', () => {
    assert.equal(isSafeRequestPath('/a/..%3bx/b'), false);
    assert.equal(isSafeRequestPath('/a/..%3Bx/b'), false);
    assert.equal(isSafeRequestPath('/a/b%3bc'), true);
    // %5C (backslash) is refused, other %5X are ordinary characters.
    assert.equal(isSafeRequestPath('/a%5cb'), false);
    for (const p of ['/a%50b', '/a%5Db', '/a%5fb']) assert.equal(isSafeRequestPath(p), true, p);
    // Overlong UTF-8 starting %F0%8x is refused; other 4-byte leads are not overlong.
    assert.equal(isSafeRequestPath('/a%f0%80%80%ae'), false);
    assert.equal(isSafeRequestPath('/a%f1%80%80%80'), true);
    assert.equal(isSafeRequestPath('/a%a0%80'), true);
    // A double-encoded ; is refused; other double-encoded 3x characters are not.
    assert.equal(isSafeRequestPath('/a%253bb'), false);
    assert.equal(isSafeRequestPath('/a%2531b'), true);
  });

  test('a full-width percent sign (U+FF05) that NFKC folds into a refused escape, raw or encoded once', () => {
    // Raw UTF-8 bytes reach the matcher as latin1 characters; the raw form holds no ASCII `%`, so
    // only the fold shows `%2e%2e` (an upstream that normalises, then decodes, sees `..`).
    const fullWidthPercent = Buffer.from('\uff05', 'utf8').toString('latin1');
    for (const p of [
      `/a/${fullWidthPercent}2e${fullWidthPercent}2e/b`,
      `/a/${fullWidthPercent}2f/b`,
      '/a/%EF%BC%852e%EF%BC%852e/b',
    ])
      assert.equal(isSafeRequestPath(p), false, p);
    // The same sign before ordinary hex digits is data.
    assert.equal(isSafeRequestPath(`/a/${fullWidthPercent}41/b`), true);
  });

  test('REFUSED_METHODS holds TRACE, TRACK and CONNECT, and no route can allow them', () => {
    assert.deepEqual([...REFUSED_METHODS].sort(), ['CONNECT', 'TRACE', 'TRACK']);
    const rule = methodRuleOf({ methods: ['CONNECT', 'TRACE', 'TRACK', 'GET'] });
    assert.equal(rule.allow, 'GET, HEAD');
    assert.equal(rule.allows('CONNECT'), false);
  });
});

describe('isSafeRequestPath: dot segments behind any number of decodings (B2)', () => {
  const scoped = '/notify/v1/health/';
  /** How many times over an upstream may decode: every accepted path must stay safe through this many. */
  const UPSTREAM_DECODES = 8;
  /** One round of encoding of each chosen character of `s` (`%XX`, hex in the chosen case). */
  const encodeSome = (s: string, pick: (i: number) => boolean, upper: boolean) =>
    [...s]
      .map((c, i) => {
        if (!pick(i)) return c;
        const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
        return `%${upper ? hex.toUpperCase() : hex}`;
      })
      .join('');
  const encodeAll = (s: string) => encodeSome(s, () => true, false);
  const layer = fc.record({
    mask: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
    upper: fc.boolean(),
  });
  /** What an upstream that decodes `rounds` times (WHATWG-style, malformed `%` literal) would resolve. */
  function escapesAt(path: string, rounds: number): string | null {
    let s = path;
    for (let r = 0; r <= rounds; r++) {
      if (/[\\\0]|%[uU]|[/\\;]\.\.?(?:[/\\;?#]|$)/.test(s)) return s;
      s = unescape(s);
    }
    return null;
  }

  test('every double-encoded spelling of a dot or backslash found by the adversarial pass is refused', () => {
    for (const seg of [
      '%25%32%65%25%32%65',
      '%%32e%%32e',
      '%2%65%2%65',
      '%25252e%25252e',
      '%252e%252e',
      '%25%32%45%25%32%45',
      '%%32%65%%32%65',
      '.%25%32%65',
      '%2525252e.',
      '..%25%35%63',
      '..%%35c',
      '..%5%63',
      '..%25%30%30',
      '..%25%33%62x',
      '%%%33%32e.',
    ]) {
      assert.ok(escapesAt(`${scoped}${seg}/otps`, UPSTREAM_DECODES) !== null, `${seg} is an attack`);
      assert.equal(isSafeRequestPath(`${scoped}${seg}/otps`), false, seg);
      assert.equal(isSafeRequestPath(`${scoped}${seg}`), false, `${seg} at the end`);
    }
  });

  test('legitimate encoding stays accepted: once, twice, and in a short path up to 8 times', () => {
    for (const p of [
      '/notify/v1/a%20b',
      '/notify/v1/a%2520b',
      '/notify/v1/caf%25C3%25A9',
      '/notify/v1/100%25',
      '/notify/v1/%%%',
      '/notify/v1/a.b%2ec',
      '/notify/v1/%2e%2ejson',
      '/notify/v1/%2541',
      `/notify/v1/${encodeAll(encodeAll('xyz'))}`,
      `/notify/v1/${encodeAll(encodeAll('a1'))}`,
    ])
      assert.equal(isSafeRequestPath(p), true, p);
    // Three levels or more: decoded on, up to 8 times, in a path of up to 2048 characters; refused
    // in a longer one, and when still decoding after the 8th decoding.
    let deep = 'xyz';
    for (let i = 0; i < 5; i++) deep = encodeAll(deep);
    assert.equal(isSafeRequestPath(`/notify/v1/${deep}`), true, '5 levels, every character');
    // `x` behind 8 and 9 levels of encoding its `%`.
    assert.equal(isSafeRequestPath(`/notify/v1/%${'25'.repeat(7)}78`), true, '8 levels');
    assert.equal(isSafeRequestPath(`/notify/v1/%${'25'.repeat(8)}78`), false, '9 levels');
    assert.equal(isSafeRequestPath('/notify/v1/%25252541'), true);
    const long = `/notify/v1/${'a'.repeat(2100)}/`;
    assert.equal(isSafeRequestPath(`${long}%25252541`), false, 'long, 3 levels');
    assert.equal(isSafeRequestPath(`${long}%2520`), true, 'long, 2 levels');
  });

  test('property: `..` (and `.`) encoded in any mix of layers, characters and hex case is refused', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('..', '.'),
        fc.constantFrom('/otps', ';/otps', '', ';x/otps'),
        fc.array(layer, { minLength: 1, maxLength: UPSTREAM_DECODES }),
        (dots, rest, layers) => {
          let seg: string = dots;
          // Each layer encodes a chosen subset of the characters: a `%` left alone in front of hex
          // digits decodes a round early, which only makes the dots show sooner.
          for (const l of layers) seg = encodeSome(seg, (i) => l.mask[i % 64]!, l.upper);
          return !isSafeRequestPath(`${scoped}${seg}${rest}`);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('property: an accepted path shows no dot segment, backslash, NUL or %u through 8 decodings', () => {
    const piece = fc.constantFrom(
      '%',
      '2',
      '5',
      'e',
      'E',
      '3',
      'b',
      'c',
      '0',
      'f',
      'F',
      '.',
      '/',
      ';',
      'x',
      'u',
      '%25',
      '%2e',
      '%2f',
      '%3b',
      '%5c',
      '%32',
      '%35',
      '%65',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), fc.boolean(), (pieces, long) => {
        const path = `${scoped}${long ? 'a'.repeat(2100) + '/' : ''}${pieces.join('')}`;
        return !isSafeRequestPath(path) || escapesAt(path, UPSTREAM_DECODES) === null;
      }),
      { numRuns: 20000 },
    );
  });

  test('property: a name encoded once or twice in any mix of characters and case is accepted', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9-]{1,8}$/),
        fc.array(layer, { minLength: 0, maxLength: 2 }),
        (name, layers) => {
          let seg = name;
          for (const l of layers) seg = encodeSome(seg, (i) => l.mask[i % 64]!, l.upper);
          return isSafeRequestPath(`${scoped}${seg}/otps`);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('isSafeRequestPath: the round-by-round decoding, at its edges', () => {
  /** `s` with every `%` encoded again until it takes `depth` decodings to show `s`'s characters. */
  const nest = (s: string, depth: number) => s.replaceAll('%', `%${'25'.repeat(depth - 1)}`);

  test('escapes close to a refused one are data at every depth up to 8, alone or next to double encoding', () => {
    // Near %5c (backslash), %c0/%c1 and %e0%8x/%f0%8x (overlong): `P`, `]`, `é`, valid 3- and
    // 4-byte sequences, a lone continuation byte.
    for (const esc of [
      '%50',
      '%5D',
      '%c3%a9',
      '%C2%A0',
      '%e0%a0%80',
      '%f0%90%80%80',
      '%f1%80%80%80',
      '%a0%80',
    ])
      for (let depth = 1; depth <= 8; depth++) {
        const p = `/notify/v1/a${nest(esc, depth)}b`;
        assert.equal(isSafeRequestPath(p), true, p);
      }
    for (const esc of ['%50', '%a0%80', '%f1%80%80%80'])
      assert.equal(isSafeRequestPath(`/notify/v1/a${esc}b%2520c`), true, `${esc} with %2520`);
  });

  test('a "/" or ";" still encoded in a later decoded form is refused (an upstream decoding on would split there)', () => {
    for (const esc of ['%2f', '%2F', '%3b', '%3B'])
      for (let depth = 3; depth <= 8; depth++) {
        const p = `/notify/v1/a${nest(esc, depth)}b`;
        assert.equal(isSafeRequestPath(p), false, p);
      }
  });

  test('a dot segment ended by "?" or "#", encoded any number of times up to 8, is refused', () => {
    for (const end of ['%3f', '%3F', '%23'])
      for (let depth = 1; depth <= 8; depth++) {
        const p = `/notify/v1/..${nest(end, depth)}/admin`;
        assert.equal(isSafeRequestPath(p), false, p);
      }
    assert.equal(isSafeRequestPath(`/notify/v1/..x${nest('%3f', 3)}/admin`), true, 'not a dot segment');
  });

  test('a literal "%" that no decoding changes does not stop the rounds from accepting', () => {
    assert.equal(isSafeRequestPath('/notify/v1/%25252541/100%'), true);
    assert.equal(isSafeRequestPath('/notify/v1/%25252541/%zz'), true);
    // After the 8th decoding a "%" followed by one hex digit is no escape.
    assert.equal(isSafeRequestPath(`/notify/v1/${nest('%78', 8)}%5z`), true);
    assert.equal(isSafeRequestPath(`/notify/v1/${nest('%78', 8)}${nest('%5a', 9)}`), false);
  });

  test('decoded on only through %25 chains: a new escape made another way is refused', () => {
    // `%25%2531a` decodes to `%%31a`, then to `%1a`: an escape that was not there.
    assert.equal(isSafeRequestPath('/notify/v1/%25%2531a'), false);
    assert.equal(isSafeRequestPath('/notify/v1/%25%2575002e'), false);
  });

  test('decoded on in paths of up to 2048 characters exactly', () => {
    const tail = `/${nest('%41', 3)}`;
    const of = (length: number) => `/notify/v1/${'a'.repeat(length - 11 - tail.length)}${tail}`;
    assert.equal(of(2048).length, 2048);
    assert.equal(isSafeRequestPath(of(2048)), true);
    assert.equal(isSafeRequestPath(of(2049)), false);
  });
});

describe('dot-like segments and Unicode separators', () => {
  /**
   * Segments that an upstream trimming trailing spaces, dots or tabs (Windows,
   * IIS) or applying NFKC resolves to `.` or `..`, and NFKC forms of `/` and `\`.
   */

  const scoped = '/notify/v1/health/';
  const pctUtf8 = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => '%' + b.toString(16)).join('');
  /** Raw bytes of a UTF-8 string as Node hands a request target over: one latin1 character per byte. */
  const rawUtf8 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

  /** Every spelling the report found forwarded, and siblings. */
  const REPORTED = [
    '..%20',
    '..%09',
    '.%20.',
    '...',
    '%2e%2e%2e',
    '%ef%bc%8e%ef%bc%8e',
    '%e2%80%a4%e2%80%a4',
    '..%ef%bc%8f',
    '..%ef%bc%bc',
  ];
  const SIBLINGS = [
    '.%20',
    '%20..',
    '..%20%20%09.',
    '....',
    '..%0b',
    '..%0c',
    '..%c2%a0', // NBSP: NFKC makes it a space
    '..%e3%80%80', // ideographic space
    '%e2%80%a5', // two-dot leader: `..`
    '%e2%80%a6', // ellipsis: `...`
    '%ef%b9%92%ef%b9%92', // small full stop
    '%EF%BC%8E%EF%BC%8E',
    '%ef%bc%8e.',
    '..%ef%b9%a8', // small reverse solidus
    '%2e%2e%2520', // decoded twice: `.. `
    '%2e%2e%25ef%25bc%258f', // full-width `/` behind double encoding
    '%25ef%25bc%258e%25ef%25bc%258e',
    '..%2509',
  ];

  describe('each shape, raw and escaped', () => {
    for (const seg of [...REPORTED, ...SIBLINGS])
      test(`${seg} is refused, inside the path and at its end`, () => {
        assert.equal(isSafeRequestPath(`${scoped}${seg}/otps`), false);
        assert.equal(isSafeRequestPath(`${scoped}${seg}`), false);
        assert.equal(isSafeRequestPath(`${scoped}${seg};x/otps`), false);
      });

    test('the same as raw bytes (UTF-8 in the target, as Node hands it over)', () => {
      for (const s of ['．．', '‥', '…', '..／otps', '..＼otps', '\u2024\u2024'])
        assert.equal(isSafeRequestPath(`${scoped}${rawUtf8(s)}/otps`), false, s);
    });

    test('ordinary segments with dots, spaces and non-ASCII still pass', () => {
      for (const p of [
        '/notify/v1/a%20b',
        '/notify/v1/a.b%2ec',
        '/notify/v1/%2e%2ejson',
        '/notify/v1/.well-known/x',
        '/notify/v1/file.v2.json',
        '/notify/v1/..a',
        '/notify/v1/a..',
        '/notify/v1/a%20.',
        '/notify/v1/%20a',
        '/notify/v1/caf%c3%a9',
        '/notify/v1/caf%25C3%25A9',
        `/notify/v1/${pctUtf8('ｆｕｌｌ')}`,
        `/notify/v1/${pctUtf8('日本語')}/x`,
        `/notify/v1/${rawUtf8('naïve')}`,
        '/notify/v1/a%2520b',
        '/notify/v1/%20',
      ])
        assert.equal(isSafeRequestPath(p), true, p);
    });

    test('property: dots mixed with trailing spaces, tabs, dot look-alikes, in any escape, are refused', () => {
      const dot = fc.constantFrom('.', '%2e', '%2E', '%ef%bc%8e', '%e2%80%a4', '%ef%b9%92', '%252e');
      const trail = fc.constantFrom('%20', '%09', '.', '%2e', '%c2%a0', '%2520', '%e3%80%80');
      const end = fc.constantFrom('/otps', '', ';x', '%ef%bc%8fotps', '%ef%bc%bcotps', '/');
      fc.assert(
        fc.property(
          fc.array(dot, { minLength: 1, maxLength: 3 }),
          fc.array(trail, { maxLength: 3 }),
          end,
          (d, t, e) => {
            return !isSafeRequestPath(`${scoped}${d.join('')}${t.join('')}${e}`);
          },
        ),
        { numRuns: 2000 },
      );
    });

    test('property: a segment with a letter or digit among dots and spaces passes', () => {
      const piece = fc.constantFrom('.', '%20', '%2e', '%09', '%ef%bc%8e');
      fc.assert(
        fc.property(
          fc.array(piece, { maxLength: 4 }),
          fc.stringMatching(/^[a-z0-9]{1,4}$/),
          fc.array(piece, { maxLength: 4 }),
          (before, name, after) =>
            isSafeRequestPath(`${scoped}${before.join('')}${name}${after.join('')}/otps`),
        ),
        { numRuns: 1000 },
      );
    });

    test('the cost stays linear: 16 KB of dots, spaces and full-width dots decide quickly', () => {
      for (const s of [
        '.'.repeat(16_000) + 'x',
        '.%20'.repeat(4000) + 'x',
        '%ef%bc%8e'.repeat(1800) + 'x',
        '/.'.repeat(8000) + 'x',
      ]) {
        const t0 = process.hrtime.bigint();
        isSafeRequestPath(`/notify/v1/${s}`);
        // A generous bound against quadratic blow-up (16 K² steps take seconds), not a timing test.
        assert.ok(process.hrtime.bigint() - t0 < 500_000_000n, s.slice(0, 12));
      }
    });
  });
});

describe('dot segments padded with characters some runtime trims or ignores', () => {
  const scoped = '/notify/v1/health/';
  const pct = (s: string) =>
    [...Buffer.from(s, 'utf8')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('');
  const raw = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
  /** What Java's trim(), Python's strip(), Go's TrimSpace or a Unicode-aware framework drops. */
  const IGNORED = [
    ...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).filter((c) => c !== '\0'),
    '\x7f',
    '\u0085',
    '\u00a0',
    '\u00ad',
    '\u034f',
    '\u115f',
    '\u1160',
    '\u1680',
    '\u180e',
    ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
    '\u200b',
    '\u200c',
    '\u200d',
    '\u200e',
    '\u200f',
    '\u2028',
    '\u2029',
    '\u202f',
    '\u205f',
    '\u2060',
    '\u3000',
    '\u3164',
    '\ufeff',
    '\uffa0',
  ];
  const DOTS = ['.', '\u3002', '\uff0e', '\u2024', '\ufe52', '\u0701', '\u0702', '\uff61', '\u06d4'];
  const SEPARATORS = ['\u2215', '\u2044', '\u2216', '\u29f5', '\ufe68', '\u00a5', '\u20a9'];
  /** One character as a raw UTF-8 target, once escaped, twice escaped. */
  const spellings = (c: string) => [c.charCodeAt(0) < 0x80 ? c : raw(c), pct(c), pct(c).replace(/%/g, '%25')];

  test('each reported spelling is refused, before or after the dots, mid-path and at the end', () => {
    const reported = [
      '..%01',
      '..%08',
      '..%0e',
      '..%1c',
      '..%1f',
      '..%7f',
      '..%c2%85',
      '..%251c',
      '..%257f',
      '..%25c2%2585',
      '..%e2%88%95',
      '..%e2%88%96',
      '..%c2%a5',
      '..%e2%80%8b',
      '..%c2%ad',
      '..%cd%8f',
      '..%e1%85%9f',
      '%e3%80%82%e3%80%82',
      '%1f..',
      '%e2%80%8b..',
      '.%c2%ad.',
    ];
    const accepted: string[] = [];
    for (const seg of reported)
      for (const end of ['/otps', '', ';x', '?a=1'])
        if (isSafeRequestPath(`${scoped}${seg}${end}`)) accepted.push(seg + end);
    assert.deepEqual(accepted, []);
  });

  test('every ignorable character, at any position and escape depth, makes a dot segment refused', () => {
    const accepted: string[] = [];
    for (const c of IGNORED)
      for (const s of spellings(c))
        for (const seg of [`..${s}`, `${s}..`, `.${s}.`, `.${s}`, `${s}.${s}`])
          if (isSafeRequestPath(`${scoped}${seg}/otps`)) accepted.push(JSON.stringify(seg));
    assert.deepEqual(accepted, []);
  });

  test('dot look-alikes count as dots, alone or mixed with dots', () => {
    const accepted: string[] = [];
    for (const d of DOTS)
      for (const s of spellings(d))
        for (const seg of [`${s}${s}`, `.${s}`, `${s}.`, s])
          for (const end of ['/otps', ''])
            if (isSafeRequestPath(`${scoped}${seg}${end}`)) accepted.push(JSON.stringify(seg + end));
    assert.deepEqual(accepted, []);
  });

  test('Windows best-fit and code-page separators (∕ ⁄ ∖ ⧵ ﹨ ¥ ₩) next to dots are separators', () => {
    const accepted: string[] = [];
    for (const c of SEPARATORS)
      for (const s of spellings(c))
        for (const p of [
          `${scoped}..${s}otps`,
          `/notify/v1/a${s}..${s}b`,
          `/notify/v1/a${s}..`,
          `${scoped}.${s}`,
        ])
          if (isSafeRequestPath(p)) accepted.push(JSON.stringify(p));
    assert.deepEqual(accepted, []);
  });

  test('ordinary paths, and these characters away from a dot-only segment, still pass', () => {
    for (const p of [
      '/notify/v1/caf%C3%A9',
      `/notify/v1/${raw('café')}/x`,
      '/notify/v1/file.v2.json',
      '/notify/v1/a%20.',
      '/notify/v1/a..',
      '/notify/v1/..a',
      '/notify/v1/prices/%c2%a5100',
      `/notify/v1/prices/${raw('₩5.0')}`,
      '/notify/v1/a%e2%88%95b',
      '/notify/v1/%e3%80%82a',
      '/notify/v1/a%e2%80%8b.',
      `/notify/v1/${raw('på..x')}`,
      '/notify/v1/a%7f',
      '/notify/v1/%01x',
    ])
      assert.equal(isSafeRequestPath(p), true, p);
  });

  test('property: dots and ignorable characters in any mix and escape depth are refused', () => {
    const piece = fc.oneof(
      fc.constantFrom(...DOTS).chain((c) => fc.constantFrom(...spellings(c))),
      fc.constantFrom(...IGNORED).chain((c) => fc.constantFrom(...spellings(c))),
    );
    const dot = fc.constantFrom(...DOTS).chain((c) => fc.constantFrom(...spellings(c)));
    const end = fc.constantFrom('/otps', '', ';x', '/', ...SEPARATORS.map((c) => `${pct(c)}otps`));
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 4 }),
        dot,
        fc.array(piece, { maxLength: 4 }),
        end,
        (b, d, a, e) => {
          return !isSafeRequestPath(`${scoped}${b.join('')}${d}${a.join('')}${e}`);
        },
      ),
      { numRuns: 3000 },
    );
  });

  test('property: a letter or digit among dots and ignorable characters makes the segment pass', () => {
    // A twice-escaped dot (`%252e`) is refused wherever it is, by design: only `.` and `%2e` here.
    const piece = fc.oneof(
      fc.constantFrom('.', '%2e'),
      fc.constantFrom(...DOTS.slice(1)).chain((c) => fc.constantFrom(...spellings(c))),
      fc.constantFrom(...IGNORED.filter((c) => c > ' ')).chain((c) => fc.constantFrom(...spellings(c))),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 4 }),
        fc.stringMatching(/^[a-z0-9]{1,4}$/),
        fc.array(piece, { maxLength: 4 }),
        (b, name, a) => isSafeRequestPath(`${scoped}${b.join('')}${name}${a.join('')}/otps`),
      ),
      { numRuns: 2000 },
    );
  });

  test('the cost stays linear: 16 KB of dots and ignorable characters decide quickly', () => {
    for (const s of [
      '.%e2%80%8b'.repeat(1600) + 'x',
      '%e3%80%82%01'.repeat(1300) + 'x',
      ('/' + raw('\u3002\u200b')).repeat(2000) + 'x',
      raw('\u2215.').repeat(4000) + 'x',
    ]) {
      const t0 = process.hrtime.bigint();
      isSafeRequestPath(`/notify/v1/${s}`);
      // A generous bound against quadratic blow-up (16 K² steps take seconds), not a timing test.
      assert.ok(process.hrtime.bigint() - t0 < 500_000_000n, s.slice(0, 12));
    }
  });
});
