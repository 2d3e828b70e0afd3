import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { CliExit } from '../../../src/cli/io.js';
import {
  parseLimitsOption,
  parseNonNegative,
  parseOnOff,
  parsePort,
  parsePositive,
  parseScopesOption,
  parseStatus,
} from '../../../src/cli/options.js';

const invalidArgument = (message: string) => (e: unknown) =>
  e instanceof InvalidArgumentError && e.message === message;
const usage = (pattern: RegExp) => (e: unknown) =>
  e instanceof CliExit && e.exitCode === 2 && pattern.test(e.message);

test('parsePositive and parseNonNegative: whole numbers only, commander words otherwise', () => {
  assert.equal(parsePositive('3'), 3);
  for (const v of ['0', '-1', '1.5', 'x', ''])
    assert.throws(() => parsePositive(v), invalidArgument('must be a positive whole number'), v);
  assert.equal(parseNonNegative('0'), 0);
  assert.equal(parseNonNegative('86400'), 86400);
  for (const v of ['-1', '0.5', 'soon'])
    assert.throws(() => parseNonNegative(v), invalidArgument('must be a whole number >= 0'));
});

test('parsePort: 0-65535; anything else stops with exit 2', () => {
  assert.equal(parsePort('0'), 0);
  assert.equal(parsePort('65535'), 65535);
  for (const v of ['65536', '-1', '80.5', 'http'])
    assert.throws(() => parsePort(v), usage(new RegExp(`^invalid port: ${v}`)));
});

test('parseOnOff and parseStatus', () => {
  assert.deepEqual(['on', 'true', 'off', 'false'].map(parseOnOff), [true, true, false, false]);
  assert.throws(() => parseOnOff('yes'), invalidArgument('must be on or off'));
  for (const s of ['active', 'pending', 'suspended']) assert.equal(parseStatus(s), s);
  assert.throws(() => parseStatus('Active'), invalidArgument('must be active, pending or suspended'));
});

test('parseScopesOption: all is null (wrapped), JSON is passed on unchecked, unreadable JSON is exit 2', () => {
  assert.deepEqual(parseScopesOption('all'), { set: null });
  assert.deepEqual(parseScopesOption('[{"route":"/notify/v1","methods":["POST"]}]'), {
    set: [{ route: '/notify/v1', methods: ['POST'] }],
  });
  // The service judges the content: the parser only reads it.
  assert.deepEqual(parseScopesOption('{"x":1}'), { set: { x: 1 } });
  assert.throws(() => parseScopesOption('[{route:'), usage(/^--scopes: must be "all" or a JSON list/));
});

test('parseLimitsOption: tier and none are null, windows POINTS/SECONDS with an optional s', () => {
  assert.deepEqual(parseLimitsOption('tier'), { set: null });
  assert.deepEqual(parseLimitsOption('none'), { set: null });
  assert.deepEqual(parseLimitsOption('10/1, 600/60s'), {
    set: [
      { points: 10, duration: 1 },
      { points: 600, duration: 60 },
    ],
  });
  for (const v of ['5', '10/1,', '1.5/2', '10/1m', 'unlimited'])
    assert.throws(
      () => parseLimitsOption(v),
      usage(/^--limits: must be "tier", "none" or POINTS\/SECONDS/),
      v,
    );
});
