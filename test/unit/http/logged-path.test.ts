import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { createUrlKeyGuard } from '../../../src/auth/url-key-guard.js';
import { DEFAULT_URL_KEY_PARAMS } from '../../../src/config/schema.js';
import { createLoggedPath, REDACTED_PATH } from '../../../src/http/logged-path.js';
import type { RequestState } from '../../../src/request-state.js';

const loggedPath = createLoggedPath({
  checkUrlForKey: createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS),
  keyMaxLength: 256,
  acceptLegacyKeys: true,
});
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
