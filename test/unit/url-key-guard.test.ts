import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../src/auth/api-key.js';
import { createUrlKeyGuard, normaliseParamName } from '../../src/auth/url-key-guard.js';
import { DEFAULT_URL_KEY_PARAMS } from '../../src/config/schema.js';

const check = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS);

describe('URL key guard', () => {
  test('key-like names in any case, separator or %-encoding', () => {
    for (const url of [
      '/a?api_key=1',
      '/a?API_KEY=1',
      '/a?Api-Key=1',
      '/a?apikey=1',
      '/a?api%5Fkey=1',
      '/a?%61pi_key=1',
      '/a?%2561pi_key=1',
      '/a?%252561pi_key=1',
      '/a?x-api-key=1',
      '/a?X_API_KEY=1',
      '/a?key',
      '/a?token=',
      '/a?x=1;api_key=2',
      '/a?access_key=1',
      '/a?api.key=1',
      '/a;api_key=1',
      '/a;v=1;API-KEY=1/b',
      '/a%3Bapi_key=1',
    ]) {
      assert.equal(check(url).found, true, url);
    }
  });

  test('key-shaped values anywhere: other params, path, names, double-encoded', () => {
    const k = generateApiKey('live');
    for (const url of [
      `/a?q=${k}`,
      `/a/${k}`,
      `/a?${k}`,
      `/a?q=${encodeURIComponent(encodeURIComponent(k))}`,
      `/a%2F${k}`,
      `/a?q=prefix${k}suffix`,
    ]) {
      const r = check(url);
      assert.equal(r.found, true, url);
      assert.ok(r.found && r.candidates.includes(k), url);
    }
  });

  test('ordinary URLs pass', () => {
    for (const url of [
      '/notify/v1/otps',
      '/notify/v1/otps?page=2&sort=desc',
      '/a?monkey=1',
      '/a?keys=1',
      '/a?nk_=1',
      '/a?identifier=nk_live_short',
    ]) {
      assert.equal(check(url).found, false, url);
    }
  });

  test('normalised names', () => {
    assert.equal(normaliseParamName('X-API_Key'), 'xapikey');
    assert.equal(normaliseParamName('%58-Api-Key'), 'xapikey');
  });

  test('property: never throws on arbitrary input, and a key placed anywhere in a query is found', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        check('/' + s);
        check('/a?' + s);
      }),
      { numRuns: 3000 },
    );
    const k = generateApiKey('test');
    fc.assert(
      fc.property(
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        (a, b) => {
          assert.equal(check(`/x?${a}=${b}&p=${k}`).found, true);
          assert.equal(check(`/x?${a}=${encodeURIComponent(k)}`).found, true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
