import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { EVENT_TYPES, matchesEventFilter } from '../../../src/config/events.js';
import { validateConfig } from '../../../src/config/load.js';
import { redactConfig } from '../../../src/redact.js';

const secret = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;

describe('events config', () => {
  test('a webhook needs an http(s) URL and a whsec_ secret of 24 to 64 bytes; every problem is named', () => {
    const ok = validateConfig({
      events: { webhooks: [{ url: 'https://ops.example/h', secret: secret(32) }] },
    });
    assert.ok(ok.ok);
    assert.deepEqual(ok.config.events.webhooks[0]!.events, ['*']);
    const bad = validateConfig({
      events: {
        webhooks: [
          { url: 'ftp://ops.example/h', secret: secret(16), events: ['key.nope'] },
          { url: 'https://ops.example/h#x', secret: 'not-whsec' },
        ],
        delivery: { maxAttempts: 0 },
      },
    });
    assert.ok(!bad.ok);
    const text = bad.problems.join('\n');
    for (const field of [
      'events.webhooks.0.url',
      'events.webhooks.0.secret',
      'events.webhooks.0.events.0',
      'events.webhooks.1.url',
      'events.webhooks.1.secret',
      'events.delivery.maxAttempts',
    ])
      assert.ok(text.includes(field), `${field} in:\n${text}`);
    assert.ok(!text.includes('not-whsec'), 'the secret is not echoed');
  });

  test('two webhooks with one id are refused', () => {
    const w = { id: 'ops', url: 'https://ops.example/h', secret: secret(32) };
    assert.ok(!validateConfig({ events: { webhooks: [w, w] } }).ok);
  });

  test('filters: a type, a group or *', () => {
    assert.ok(matchesEventFilter(['*'], 'quota.threshold'));
    assert.ok(matchesEventFilter(['key.*'], 'key.grace_ending'));
    assert.ok(!matchesEventFilter(['key.*'], 'company.suspended'));
    assert.ok(matchesEventFilter(['company.suspended'], 'company.suspended'));
    assert.ok(!matchesEventFilter(['quota.threshold'], 'key.revoked'));
    assert.equal(EVENT_TYPES.length, 8);
  });

  test('printed config: the secret is [set], credentials in the URL masked', () => {
    const s = secret(32);
    const r = validateConfig({ events: { webhooks: [{ url: 'https://u:pw@ops.example/h', secret: s }] } });
    assert.ok(r.ok);
    const printed = JSON.stringify(redactConfig(r.config));
    assert.ok(!printed.includes(s.slice(6)) && !printed.includes('pw@'));
    assert.match(printed, /"secret":"\[set\]"/);
    assert.match(printed, /https:\/\/\[credentials\]@ops\.example\/h/);
  });
});
