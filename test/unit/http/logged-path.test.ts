import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { DEFAULT_METHOD_OVERRIDE_PARAMS, DEFAULT_URL_KEY_PARAMS } from '../../../src/config/schema.js';
import { createKeyMatcherOf, type GuardLevel } from '../../../src/guards/key-material.js';
import { createUrlKeyGuard } from '../../../src/guards/url-key-guard.js';
import { createLoggedPath, REDACTED_PATH } from '../../../src/http/logged-path.js';
import type { RequestState } from '../../../src/request-state.js';

/** The rule as app.ts builds it, at a level; `req.gw` is the state passed (the matcher is kept there). */
function loggedPathAt(level: GuardLevel) {
  const rule = createLoggedPath({
    checkUrlForKey: createUrlKeyGuard({
      paramNames: DEFAULT_URL_KEY_PARAMS,
      overrideNames: DEFAULT_METHOD_OVERRIDE_PARAMS,
      maxParams: 256,
      maxPathSegments: 128,
      level,
    }),
    keyMatcherOf: createKeyMatcherOf(level, { maxLength: 256, acceptLegacy: true }),
  });
  return (r: IncomingMessage, st: RequestState) => rule(Object.assign(r, { gw: st }), st);
}
/** The existing expectations read every form: the strict level. */
const loggedPath = loggedPathAt('strict');
const req = (url: string, key?: string) =>
  ({ url, headers: key === undefined ? {} : { 'x-api-key': key } }) as unknown as IncomingMessage;
const state = (over: Partial<RequestState> = {}): RequestState => ({
  id: 'r',
  start: 0n,
  clientIp: '127.0.0.1',
  peerTrusted: false,
  route: '-',
  ...over,
});
const b64url = (s: string) => Buffer.from(s).toString('base64url');

describe('the logged path: one rule for every outcome', () => {
  const key = generateApiKey('live');
  const body = key.slice(8);

  test('a benign path is logged as sent, without the query', () => {
    assert.equal(loggedPath(req('/notify/v1/otps/123?to=49151', key), state()), '/notify/v1/otps/123');
    assert.equal(loggedPath(req('/notify/v1/otps/123'), state()), '/notify/v1/otps/123');
  });

  test('a URL a step saw a key in is redacted', () => {
    assert.equal(loggedPath(req('/notify/v1/otps'), state({ keyInUrl: true })), REDACTED_PATH);
  });

  test('key shapes, bare bodies and key-named matrix parameters are redacted when the guard did not run', () => {
    for (const url of [
      `/x/${key}`,
      `/x/${body}`,
      `/x/${body.split('').join('-')}`,
      '/x;api_key=secret-value',
    ])
      assert.equal(loggedPath(req(url), state()), REDACTED_PATH, url);
    // Once the guard passed the URL, it is not read again.
    assert.equal(loggedPath(req('/x;api_key=v'), state({ urlGuardPassed: true })), '/x;api_key=v');
  });

  test('the presented key in any shape the matcher knows is redacted, whatever the key’s fate', () => {
    for (const url of [`/x/${b64url(key)}`, `/x/${body.toUpperCase()}`, `/x/${body.slice(5, 30)}`]) {
      assert.equal(loggedPath(req(url, key), state({ urlGuardPassed: true })), REDACTED_PATH, url);
      // A checksum typo in the header is still the key's material.
      const typo = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
      assert.equal(loggedPath(req(url, typo), state({ urlGuardPassed: true })), REDACTED_PATH, url);
    }
    // A legacy key (accepted format) too.
    const legacy = 'legacy-0123456789abcdefghij';
    assert.equal(
      loggedPath(req(`/x/${b64url(legacy)}`, legacy), state({ urlGuardPassed: true })),
      REDACTED_PATH,
    );
    // After the presented-key step found nothing, not read again.
    const clean = state({ urlGuardPassed: true, urlHoldsNoPresentedKey: true });
    assert.equal(loggedPath(req(`/x/${b64url(key)}`, key), clean), `/x/${b64url(key)}`);
  });

  test('a header value that is no key shape has no material: short or malformed values redact nothing', () => {
    for (const v of ['a', 'x', 'nk_live_short', 'x'.repeat(300)])
      assert.equal(
        loggedPath(req('/notify/v1/a/x', v), state({ urlGuardPassed: true })),
        '/notify/v1/a/x',
        v,
      );
  });
});

describe('the logged path: split copies and keys in malformed key headers', () => {
  const key = generateApiKey('live');
  const body = key.slice(8);
  const guardDone = () => state({ urlGuardPassed: true });
  const reqWith = (url: string, headers: Record<string, string | string[]>) =>
    ({ url, headers }) as unknown as IncomingMessage;

  /** The presented key's body split over URL parts, in any order, also %-encoded. */
  const splitPaths = [
    `/notify/v1/send/${body.slice(0, 19)}/a/${body.slice(19)}`,
    `/notify/v1/send/${body.slice(0, 19)};x=${body.slice(19)}`,
    `/notify/v1/send/${body.slice(19)}/a/${body.slice(0, 19)}`,
    `/notify/v1/send/nk_live_${body.slice(0, 19)}/q/${body.slice(19)}`,
    `/notify/v1/send/${body.slice(0, 13)}/y/${body.slice(13, 26)}/z/${body.slice(26)}`,
    `/notify/v1/send/${encodeURIComponent(body.slice(0, 19)).replace(/./g, (c) => '%' + c.charCodeAt(0).toString(16))}/a/${body.slice(19)}`,
  ];

  test('the presented key split over path segments and matrix parameters is redacted', () => {
    for (const url of splitPaths) assert.equal(loggedPath(req(url, key), guardDone()), REDACTED_PATH, url);
  });

  test('pieces of the key covering fewer than 24 characters, or shorter than 8, are logged', () => {
    // Separators that extend neither piece (not the secret's neighbouring characters).
    const lower = body.toLowerCase();
    const sep = (at: number) => ['0', '1', '2'].find((c) => c !== lower[at] && c !== lower[at - 1])!;
    const short = `/notify/v1/send/${body.slice(0, 11)}/${sep(11)}${sep(20)}/${body.slice(20, 31)}`; // 22 characters
    assert.equal(loggedPath(req(short, key), guardDone()), short);
    const tiny = `/x/${body.slice(0, 7)}/${sep(7)}/${body.slice(7, 14)}/${sep(14)}/${body.slice(14, 21)}/${sep(21)}/${body.slice(21, 28)}`;
    assert.equal(loggedPath(req(tiny, key), guardDone()), tiny);
  });

  /** The real key arrives in a malformed key header; the path holds its base64 or lower-case body. */
  const malformed: [string, Record<string, string | string[]>][] = [
    ['X-API-Key sent twice', { 'x-api-key': `${key}, ${key}` }],
    ['X-API-Key: Bearer K', { 'x-api-key': `Bearer ${key}` }],
    ['K followed by junk', { 'x-api-key': `${key}!!junk` }],
    ['K over maxLength', { 'x-api-key': key + 'A'.repeat(300) }],
    ['only Authorization: Bearer K', { authorization: `Bearer ${key}` }],
    ['only X_API_KEY', { x_api_key: key }],
  ];

  test('a key inside a malformed key header: its base64 or lower-case copy in the path is redacted', () => {
    for (const [label, headers] of malformed)
      for (const url of [`/notify/v1/send/${b64url(key)}`, `/notify/v1/send/${body.toLowerCase()}`]) {
        assert.equal(loggedPath(reqWith(url, headers), state()), REDACTED_PATH, `${label}: ${url}`);
        assert.equal(loggedPath(reqWith(url, headers), guardDone()), REDACTED_PATH, `${label}: ${url}`);
      }
  });

  test('one presented key per request: the first key shape of a header full of them', () => {
    const keys = Array.from({ length: 6 }, () => generateApiKey('live'));
    const headers = { 'x-api-key': keys.join(',') };
    const lower = (k: string) => `/x/${k.slice(8).toLowerCase()}`;
    assert.equal(loggedPath(reqWith(lower(keys[0]!), headers), guardDone()), REDACTED_PATH);
    assert.equal(loggedPath(reqWith(lower(keys[1]!), headers), guardDone()), lower(keys[1]!));
    // A benign path with a malformed header is logged as sent.
    assert.equal(
      loggedPath(reqWith('/notify/v1/otps', { authorization: `Bearer ${key}` }), state()),
      '/notify/v1/otps',
    );
  });
});

/**
 * Without a key header (or with another key), a valid key in base64 or hex
 * in the path reached the access line in clear. The one rule now redacts it through the URL guard.
 */
describe('the logged path: base64 and hex keys without the key header', () => {
  const key = generateApiKey('live');
  const other = generateApiKey('test');
  const encodings: [string, (b: Buffer) => string][] = [
    ['base64url', (b) => b.toString('base64url')],
    ['base64', (b) => b.toString('base64')],
    ['base64, +/= %-encoded', (b) => encodeURIComponent(b.toString('base64'))],
    ['hex', (b) => b.toString('hex')],
    ['HEX', (b) => b.toString('hex').toUpperCase()],
  ];

  test('no key header, or another key: the path holding a base64 or hex key (or body) is redacted', () => {
    for (const [label, enc] of encodings)
      for (const material of [key, key.slice(8)])
        for (let lead = 0; lead < 3; lead++) {
          const blob = Buffer.concat([Buffer.alloc(lead, 0x7f), Buffer.from(material), Buffer.from('!')]);
          for (const url of [`/notify/v1/otps/${enc(blob)}`, `/unrouted/${enc(blob)}`, `/x;s=${enc(blob)}/y`])
            for (const headers of [undefined, other]) {
              assert.equal(loggedPath(req(url, headers), state()), REDACTED_PATH, `${label}: ${url}`);
            }
        }
  });

  test('ordinary paths of the same alphabets are logged as sent', () => {
    for (const url of [
      '/notify/v1/messages/123e4567-e89b-12d3-a456-426614174000',
      '/notify/v1/blobs/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      `/notify/v1/x/${Buffer.from('{"page":2,"after":"2024-01-01T00:00:00Z"}').toString('base64url')}`,
    ])
      assert.equal(loggedPath(req(url), state()), url);
  });

  test('property: a key or body in base64/hex at any offset of random bytes is redacted; the bytes alone are not', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 120 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.constantFrom(...encodings),
        fc.constantFrom(key, key.slice(8)),
        (before, after, [, enc], material) => {
          const noise = enc(Buffer.concat([Buffer.from(before), Buffer.from(after)]));
          assert.equal(loggedPath(req(`/notify/v1/x/${noise}`), state()), `/notify/v1/x/${noise}`);
          const withKey = enc(
            Buffer.concat([Buffer.from(before), Buffer.from(material), Buffer.from(after)]),
          );
          assert.equal(loggedPath(req(`/notify/v1/x/${withKey}`), state()), REDACTED_PATH);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('the logged path at the default level', () => {
  const logged = loggedPathAt('default');
  const key = generateApiKey('live');
  const body = key.slice(8);
  test('the presented key as sent, %-encoded or in base64 is redacted; key shapes and key names too', () => {
    for (const url of [
      `/x/${key}`,
      `/x/${body}`,
      `/x/${encodeURIComponent(b64url(key))}`,
      `/x/${b64url(key)}`,
    ])
      assert.equal(logged(req(url, key), state()), REDACTED_PATH, url);
    assert.equal(logged(req(`/x/${generateApiKey('test')}`), state()), REDACTED_PATH);
    assert.equal(logged(req('/x;api_key=secret'), state()), REDACTED_PATH);
  });
  test('forms only a deliberate client builds are left to the strict level', () => {
    for (const url of [`/x/${body.toUpperCase()}`, `/x/${Buffer.from(key).toString('hex')}`])
      assert.equal(logged(req(url, key), state()), url, url);
  });
});
