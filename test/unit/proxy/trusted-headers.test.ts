import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { createHeaderScrubber, scrubResponseHeaders } from '../../../src/proxy/trusted-headers.js';

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
    const scrub = createHeaderScrubber(NAMES, ['X-Debug', 'X-Internal-*']);
    assert.deepEqual(
      scrub({ 'x-debug': '1', 'x-debug-2': '2', 'x-internal-a': '3', 'x-internal_b': '4', '*': '5' }),
      {
        'x-debug-2': '2',
        '*': '5',
      },
    );
    assert.deepEqual(createHeaderScrubber(NAMES)({ 'x-internal-a': '3' }), { 'x-internal-a': '3' });
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
