import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inCliWords, jsonText, table } from '../../../src/cli/output.js';

test('table: a header line, one line per row, columns two spaces apart, no trailing spaces', () => {
  const out = table(
    [
      { id: 'acme', tier: 'free', note: 'x' },
      { id: 'b', tier: 'enterprise', note: '' },
    ],
    ['id', 'tier', 'note'],
  );
  assert.equal(out, 'id    tier        note\nacme  free        x\nb     enterprise\n');
});

test('table: no rows is (none); null and undefined are "-", every time is shown as stored', () => {
  assert.equal(table([], ['id']), '(none)\n');
  assert.equal(
    table(
      [{ a: null, b: undefined, c: '1970-01-01T00:00:00Z', d: '2026-01-02T03:04:05Z' }],
      ['a', 'b', 'c', 'd'],
    ),
    'a  b  c                     d\n-  -  1970-01-01T00:00:00Z  2026-01-02T03:04:05Z\n',
  );
});

test('table: scopes and windows in one cell; an empty list is (none)', () => {
  const row = {
    scopes: [
      { route: '/notify/v1', methods: ['POST', 'GET'], paths: ['/notify/v1/otps'] },
      { route: '/media' },
    ],
    limits: [
      { points: 10, duration: 1 },
      { points: 600, duration: 60 },
    ],
    other: [],
  };
  assert.equal(
    table([row], ['scopes', 'limits', 'other']).split('\n')[1],
    'POST|GET /notify/v1/otps, * /media  10/1s, 600/60s  (none)',
  );
});

test('table: control, bidi and invisible characters are shown escaped, so a cell cannot forge a row', () => {
  const out = table([{ name: 'evil\u001b[31m\nacme  free\u202e' }], ['name']);
  assert.equal(out.split('\n').length, 3, 'header, one row, the final newline');
  assert.ok(!out.includes('\u001b') && !out.includes('\u202e'), JSON.stringify(out));
  assert.match(out, /evil\\u001b\[31m\\u000aacme {2}free\\u202e/);
});

test('jsonText: indented by two, one trailing newline', () => {
  assert.equal(jsonText({ a: [1] }), '{\n  "a": [\n    1\n  ]\n}\n');
});

test("inCliWords: the admin API's field names become the CLI's options; others stay", () => {
  assert.equal(
    inCliWords('expiresAt: must be UTC; tier: unknown; scopes: too wide; gracePeriodSeconds: too long'),
    '--expires-at: must be UTC; --tier: unknown; scopes: too wide; --grace: too long',
  );
  assert.equal(inCliWords('id: must be 1-64 letters'), '<id>: must be 1-64 letters');
  assert.equal(inCliWords('company acme has 2 active keys'), 'company acme has 2 active keys');
});
