import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRouteMatcher, isSafeRequestPath } from '../../src/proxy/routes.js';
import { createHeaderScrubber, normaliseHeaderName } from '../../src/proxy/trusted-headers.js';

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
    ]) {
      assert.equal(isSafeRequestPath(p), false, p);
    }
    for (const p of ['/notify/v1/otps', '/notify/v1/file.json', '/a/..b/c', '/v1.2/x', '/', '/a;v=1/b'])
      assert.equal(isSafeRequestPath(p), true, p);
  });
});

describe('trusted header scrubbing', () => {
  const scrub = createHeaderScrubber({
    companyId: 'x-company-id',
    keyId: 'x-api-key-id',
    companyTier: 'x-company-tier',
    requestId: 'x-request-id',
  });
  test('removes the key, trusted headers in any form, X-Forwarded-*, hop-by-hop and Connection-named headers', () => {
    const h: Record<string, string> = {
      host: 'a',
      'x-api-key': 'k',
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
  test('normalised names', () => {
    assert.equal(normaliseHeaderName('X_Company_ID'), 'x-company-id');
  });
});
