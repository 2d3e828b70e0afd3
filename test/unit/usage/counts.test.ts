import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERRORS, type ErrorCode } from '../../../src/errors.js';
import {
  countsFor,
  hourStart,
  hourTag,
  USAGE_OF_ERROR,
  type UsageOutcome,
} from '../../../src/usage/counts.js';

/**
 * Every code of the error registry with the usage counter its answer lands in, written out here
 * on purpose: a code added to src/errors.ts fails this test until someone decides its counter.
 */
const EXPECTED: Record<string, UsageOutcome> = {
  MISSING_KEY: 'refused',
  INVALID_KEY: 'refused',
  KEY_IN_URL: 'refused',
  METHOD_OVERRIDE_IN_URL: 'refused',
  METHOD_OVERRIDE_IN_BODY: 'refused',
  UNSUPPORTED_FORM_ENCODING: 'refused',
  COMPANY_INACTIVE: 'refused',
  API_ACCESS_DISABLED: 'refused',
  TIER_NOT_CONFIGURED: 'refused',
  SCOPE_DENIED: 'scopeDenied',
  HTTPS_REQUIRED: 'refused',
  BROWSER_REQUEST: 'refused',
  NOT_FOUND: 'refused',
  METHOD_NOT_ALLOWED: 'refused',
  PAYLOAD_TOO_LARGE: 'refused',
  RATE_LIMITED: 'rateLimited',
  AUTH_RATE_LIMITED: 'refused',
  BAD_REQUEST: 'refused',
  REQUEST_TIMEOUT: 'refused',
  HEADERS_TOO_LARGE: 'refused',
  INTERNAL: 'refused',
  UPSTREAM_UNREACHABLE: 'allowed',
  STORE_UNAVAILABLE: 'refused',
  RATE_LIMITER_UNAVAILABLE: 'refused',
  OVERLOADED: 'refused',
  UPSTREAM_TIMEOUT: 'allowed',
  UPSTREAM_CONNECT_TIMEOUT: 'allowed',
  UPSTREAM_TOTAL_TIMEOUT: 'allowed',
  UPSTREAM_BUSY: 'refused',
  NO_HEALTHY_UPSTREAM: 'refused',
  ADMIN_INVALID_REQUEST: 'refused',
  ADMIN_INVALID_JSON: 'refused',
  ADMIN_UNAUTHORIZED: 'refused',
  ADMIN_BROWSER_REQUEST: 'refused',
  ADMIN_LOOPBACK_ONLY: 'refused',
  ADMIN_FORBIDDEN: 'refused',
  ADMIN_NOT_FOUND: 'refused',
  ADMIN_UNKNOWN_ID: 'refused',
  ADMIN_METHOD_NOT_ALLOWED: 'refused',
  DASHBOARD_SIGN_IN_REQUIRED: 'refused',
  DASHBOARD_CODE_REFUSED: 'refused',
  DASHBOARD_CROSS_ORIGIN: 'refused',
  DASHBOARD_OWNER_ONLY: 'refused',
  DASHBOARD_REGISTRATION_CLOSED: 'refused',
  DASHBOARD_NOT_FOUND: 'refused',
  DASHBOARD_ADDRESS_TAKEN: 'refused',
  DASHBOARD_LAST_OWNER: 'refused',
  DASHBOARD_REGISTRATION_DECIDED: 'refused',
  DASHBOARD_TOO_MANY_ATTEMPTS: 'refused',
  ADMIN_DUPLICATE_COMPANY: 'refused',
  ADMIN_KEY_CAP_REACHED: 'refused',
  ADMIN_KEY_INACTIVE: 'refused',
  ADMIN_READ_ONLY_STORE: 'refused',
  ADMIN_PAYLOAD_TOO_LARGE: 'refused',
  ADMIN_UNSUPPORTED_MEDIA_TYPE: 'refused',
};
const OUTCOMES = ['allowed', 'rateLimited', 'scopeDenied', 'refused'];

test('every registry code has its counter, and each answer lands in exactly one outcome', () => {
  assert.deepEqual(
    Object.keys(ERRORS).sort(),
    Object.keys(EXPECTED).sort(),
    'a code without a decided counter',
  );
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    assert.equal(USAGE_OF_ERROR[code], EXPECTED[code], code);
    const fields = countsFor(code, ERRORS[code].status);
    assert.equal(fields.filter((f) => OUTCOMES.includes(f)).length, 1, `${code}: ${fields.join()}`);
    assert.equal(fields[0], EXPECTED[code], code);
  }
});

test('countsFor: a refusal after authentication is never "allowed"; upstream answers by class', () => {
  assert.deepEqual(countsFor('KEY_IN_URL', 401), ['refused']);
  assert.deepEqual(countsFor('PAYLOAD_TOO_LARGE', 413), ['refused']);
  assert.deepEqual(countsFor('INTERNAL', 500), ['refused']);
  assert.deepEqual(countsFor('RATE_LIMITER_UNAVAILABLE', 503), ['refused']);
  assert.deepEqual(countsFor('RATE_LIMITED', 429), ['rateLimited']);
  assert.deepEqual(countsFor('SCOPE_DENIED', 403), ['scopeDenied']);
  assert.deepEqual(countsFor(undefined, 201), ['allowed', 'upstream2xx']);
  assert.deepEqual(countsFor(undefined, 404), ['allowed', 'upstream4xx']);
  assert.deepEqual(countsFor(undefined, 503), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor('UPSTREAM_UNREACHABLE', 502), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor('UPSTREAM_TIMEOUT', 504), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor(undefined, 304), ['allowed']);
  assert.deepEqual(countsFor(undefined, 0), ['allowed']);
  // A code from outside the registry (a plugin's own) is a refusal, not a pass.
  assert.deepEqual(countsFor('SOMETHING_NEW' as ErrorCode, 418), ['refused']);
});

test('hourStart and hourTag: UTC hours', () => {
  const at = Date.parse('2026-11-26T09:59:59Z');
  assert.equal(hourStart(at), Date.parse('2026-11-26T09:00:00Z'));
  assert.equal(hourTag(hourStart(at)), '2026112609');
});
