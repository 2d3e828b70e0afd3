import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminErrorCode, isJsonMediaType, isLoopbackName } from '../../../src/admin/router.js';
import {
  allowedMethods,
  companyCreateSchema,
  keyCreateSchema,
  keyPatchSchema,
  missingBodyDetails,
} from '../../../src/admin/schemas.js';
import { isStoreOutage } from '../../../src/store/types.js';

describe('admin error mapping', () => {
  test('store outages are 503, everything else unexpected is 500', () => {
    const outages = [
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('Command timed out'),
      Object.assign(new Error('Reached the max retries per request limit'), {
        name: 'MaxRetriesPerRequestError',
      }),
      Object.assign(new Error('Failed to refresh slots cache.'), { name: 'ClusterAllFailedError' }),
      new Error('CLUSTERDOWN The cluster is down'),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error('connect ECONNREFUSED 127.0.0.1:6379'),
    ];
    for (const e of outages) {
      assert.equal(isStoreOutage(e), true, e.message);
      assert.equal(adminErrorCode(e), 'STORE_UNAVAILABLE', e.message);
    }
    const bugs: unknown[] = [
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      new Error('ERR Error running script (call to f_0123): @user_script:1: bad argument'),
      new Error('NOPERM User has no permissions to access the channel'),
      new Error('WRONGTYPE Operation against a key holding the wrong kind of value'),
      'a string',
      null,
    ];
    for (const e of bugs) {
      assert.equal(isStoreOutage(e), false, String(e));
      assert.equal(adminErrorCode(e), 'INTERNAL', String(e));
    }
  });
  test("body-parser's client errors keep their meaning", () => {
    assert.equal(adminErrorCode({ status: 400, type: 'entity.parse.failed' }), 'ADMIN_INVALID_JSON');
    assert.equal(adminErrorCode({ status: 413, type: 'entity.too.large' }), 'ADMIN_PAYLOAD_TOO_LARGE');
    assert.equal(
      adminErrorCode({ status: 415, type: 'encoding.unsupported' }),
      'ADMIN_UNSUPPORTED_MEDIA_TYPE',
    );
    assert.equal(adminErrorCode({ status: 400, type: 'request.aborted' }), 'BAD_REQUEST');
  });
});

describe('isLoopbackName', () => {
  test('loopback in every spelling, IPv4-mapped IPv6 included (net.BlockList)', () => {
    for (const name of [
      'localhost',
      'LocalHost',
      '127.0.0.1',
      '127.255.3.4',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::FFFF:127.1.2.3',
    ]) {
      assert.equal(isLoopbackName(name), true, name);
    }
  });

  test('anything else is not loopback', () => {
    for (const name of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '128.0.0.1',
      '::ffff:10.0.0.1',
      '::2',
      '127.0.0.1.nip.io',
      'localhost.example.com',
      '127.999.0.1',
      '',
    ]) {
      assert.equal(isLoopbackName(name), false, name);
    }
  });
});

describe('isJsonMediaType', () => {
  test('exactly application/json, any case, parameters allowed', () => {
    for (const t of [
      'application/json',
      'APPLICATION/JSON',
      'application/json; charset=utf-8',
      'application/json;charset="UTF-8"',
      ' application/json ; charset=utf-8',
      'application/json;',
      'application/json; Charset=Utf-8; foo=bar',
      'application/json; foo="a;b"',
    ]) {
      assert.equal(isJsonMediaType(t), true, t);
    }
  });
  test('a charset other than UTF-8, in any spelling, or two of them', () => {
    for (const t of [
      'application/json; charset=utf-16',
      'application/json; charset=UTF-16LE',
      'application/json; charset="utf-16"',
      'application/json;charset=utf-32',
      'application/json; charset=utf-7',
      'application/json; charset=utf8',
      'application/json; charset=iso-8859-1',
      'application/json; charset=""',
      'application/json; charset=',
      'application/json; charset',
      'application/json; charset="utf-8',
      'application/json; CHARSET=Utf-16',
      'application/json; charset = utf-16',
      'application/json; charset=utf-8; charset=utf-16',
      'application/json; charset=utf-8; charset=utf-8',
    ]) {
      assert.equal(isJsonMediaType(t), false, t);
    }
  });
  test('no other media type, +json and look-alikes included', () => {
    for (const t of [
      undefined,
      '',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/jsonx',
      'application/json5',
      'application/json,text/plain',
      'text/json',
      'text/plain; application/json',
      'json',
    ]) {
      assert.equal(isJsonMediaType(t), false, String(t));
    }
  });
});

describe('allowedMethods and missingBodyDetails', () => {
  test("a path's methods as Express matches it (any case, one trailing slash); none for an unknown path", () => {
    assert.deepEqual(allowedMethods('/admin/v1/keys/k1'), ['GET', 'HEAD', 'PATCH', 'DELETE']);
    assert.deepEqual(allowedMethods('/Admin/V1/Companies/'), ['POST', 'GET', 'HEAD']);
    assert.deepEqual(allowedMethods('/admin/v1/keys/k1/rotate'), ['POST']);
    assert.deepEqual(allowedMethods('/healthz'), ['GET', 'HEAD']);
    assert.deepEqual(allowedMethods('/admin/v1/keys'), ['GET', 'HEAD']);
    for (const p of ['/admin/v1/keys/k1//', '/admin/v1/companies/a/b', '/admin/v1', '/']) {
      assert.deepEqual(allowedMethods(p), [], p);
    }
  });
  test('names what the operation requires, after the body sentence', () => {
    assert.equal(missingBodyDetails(companyCreateSchema), 'body: a JSON object is required; id: Required');
    assert.equal(
      missingBodyDetails(keyPatchSchema),
      'body: a JSON object is required; at least one of scopes, limits is required',
    );
    assert.equal(missingBodyDetails(keyCreateSchema), 'body: a JSON object is required');
  });
});
