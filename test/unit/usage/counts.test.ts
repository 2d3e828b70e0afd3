import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countsFor, hourStart, hourTag } from '../../../src/usage/counts.js';

test('countsFor: refusals by limit and scope, admitted requests by upstream class', () => {
  assert.deepEqual(countsFor('RATE_LIMITED', 429), ['rateLimited']);
  assert.deepEqual(countsFor('SCOPE_DENIED', 403), ['scopeDenied']);
  assert.deepEqual(countsFor('RATE_LIMITER_UNAVAILABLE', 503), []);
  assert.deepEqual(countsFor(undefined, 201), ['allowed', 'upstream2xx']);
  assert.deepEqual(countsFor(undefined, 404), ['allowed', 'upstream4xx']);
  assert.deepEqual(countsFor(undefined, 503), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor('UPSTREAM_UNREACHABLE', 502), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor('UPSTREAM_TIMEOUT', 504), ['allowed', 'upstream5xx']);
  assert.deepEqual(countsFor('PAYLOAD_TOO_LARGE', 413), ['allowed']);
  assert.deepEqual(countsFor(undefined, 304), ['allowed']);
  assert.deepEqual(countsFor(undefined, 0), ['allowed']);
});

test('hourStart and hourTag: UTC hours', () => {
  const at = Date.parse('2026-11-26T09:59:59Z');
  assert.equal(hourStart(at), Date.parse('2026-11-26T09:00:00Z'));
  assert.equal(hourTag(hourStart(at)), '2026112609');
});
