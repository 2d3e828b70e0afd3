import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isoSeconds, parseInstant, TIMESTAMP_PATTERN } from '../../src/time.js';
import { IMPOSSIBLE_INSTANTS as IMPOSSIBLE } from '../helpers/instants.js';

describe('time', () => {
  test('isoSeconds writes UTC without milliseconds, from a number or a Date', () => {
    assert.equal(isoSeconds(0), '1970-01-01T00:00:00Z');
    assert.equal(isoSeconds(Date.parse('2026-03-04T05:06:07.999Z')), '2026-03-04T05:06:07Z');
    assert.equal(isoSeconds(new Date('2026-03-04T05:06:07.001Z')), '2026-03-04T05:06:07Z');
    assert.match(isoSeconds(), TIMESTAMP_PATTERN);
  });

  test('isoSeconds throws on an invalid date instead of writing a bad timestamp', () => {
    assert.throws(() => isoSeconds(Number.NaN), RangeError);
  });

  test('TIMESTAMP_PATTERN accepts only the spec shape', () => {
    assert.match('2026-01-01T00:00:00Z', TIMESTAMP_PATTERN);
    for (const bad of ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00+00:00', '2026-01-01 00:00:00Z', ''])
      assert.doesNotMatch(bad, TIMESTAMP_PATTERN);
  });
});

describe('parseInstant', () => {
  test('real instants parse to their ms', () => {
    assert.equal(parseInstant('2026-01-01T00:00:00Z'), Date.UTC(2026, 0, 1));
    assert.equal(parseInstant('2028-02-29T23:59:59Z'), Date.UTC(2028, 1, 29, 23, 59, 59));
    assert.equal(parseInstant('2000-02-29T00:00:00Z'), Date.UTC(2000, 1, 29));
    assert.equal(parseInstant('0050-06-01T00:00:00Z'), Date.parse('0050-06-01T00:00:00Z'));
  });
  test('impossible dates and times, and other shapes, are null', () => {
    for (const s of [
      ...IMPOSSIBLE,
      '1900-02-29T00:00:00Z',
      '2026-01-01',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00+00:00',
      ' 2026-01-01T00:00:00Z',
      '',
      'garbage',
    ])
      assert.equal(parseInstant(s), null, s);
  });
});
