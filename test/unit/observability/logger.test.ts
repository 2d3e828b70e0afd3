import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import {
  createLogger,
  REDACT_PATHS,
  REDACTED_NAMES,
  unredactedChild,
} from '../../../src/observability/logger.js';

function capture(level = 'info', now?: () => number) {
  const text: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { logger: createLogger({ level, destination: sink, ...(now ? { now } : {}) }), text };
}

test('REDACTED_NAMES: every name a redaction path ends in or starts from', () => {
  assert.equal(REDACT_PATHS.length, 16, 'a new path: check that REDACTED_NAMES picks up its names');
  assert.deepEqual(
    [...REDACTED_NAMES].sort(),
    [
      'apiKey',
      'authorization',
      'hash',
      'headers',
      'key',
      'password',
      'req',
      'secret',
      'token',
      'x-api-key',
    ].sort(),
  );
});

test('the logger redacts a key, a hash and nested secrets; the unredacted child does not (same format)', () => {
  const { logger, text } = capture();
  const record = { key: 'nk_live_x', inner: { hash: 'abc', secret: 's' }, route: '/r' };
  logger.info(structuredClone(record), 'm');
  unredactedChild(logger).info(structuredClone(record), 'm');
  const [redacted, plain] = text.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(redacted!.key, '[REDACTED]');
  assert.deepEqual(redacted!.inner, { hash: '[REDACTED]', secret: '[REDACTED]' });
  assert.equal(plain!.key, 'nk_live_x');
  assert.deepEqual(Object.keys(plain!), Object.keys(redacted!));
  assert.equal(plain!.service, 'notify-gateway');
  assert.equal(plain!.level, 'info');
});

test('a record without redacted names is written byte for byte the same by both', () => {
  const { logger, text } = capture('info', () => Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  const line = { requestId: 'r1', method: 'GET', route: '/n', path: '/n/x', status: 200, durationMs: 1.5 };
  logger.info({ ...line }, 'request');
  unredactedChild(logger).info({ ...line }, 'request');
  assert.equal(text[0], text[1]);
  assert.match(text[0]!, /"time":"2026-01-02T03:04:05\.678Z"/);
});

test('the unredacted child keeps the parent level', () => {
  const { logger, text } = capture('info');
  unredactedChild(logger).debug({ a: 1 }, 'hidden');
  assert.equal(text.length, 0);
});
