import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { safeMessage } from '../../src/errors.js';
import { maskUrlCredentials, maskUrlsInText, redactConfig } from '../../src/redact.js';

describe('maskUrlCredentials', () => {
  test('user and password are replaced, the rest of the URL is kept', () => {
    assert.equal(
      maskUrlCredentials('rediss://default:s3cret@redis.internal:6380/2'),
      'rediss://[credentials]@redis.internal:6380/2',
    );
    assert.equal(maskUrlCredentials('redis://:s3cret@10.0.0.1'), 'redis://[credentials]@10.0.0.1');
    assert.equal(
      maskUrlCredentials('http://svc:pw@backend:9090/base?x=1'),
      'http://[credentials]@backend:9090/base?x=1',
    );
  });

  test('a URL without @ comes back unchanged; an @ after the host is masked up to (over-masking)', () => {
    assert.equal(maskUrlCredentials('redis://10.0.0.1:6379/0'), 'redis://10.0.0.1:6379/0');
    assert.equal(maskUrlCredentials('not a url'), 'not a url');
    // `redis://u:1234/cd@h` parses as host u, port 1234, path /cd@h: a parser-based mask would print
    // the password "1234/cd". An @ in a path is therefore masked up to, like user info.
    assert.equal(maskUrlCredentials('redis://u:1234/cd@h:1'), 'redis://[credentials]@h:1');
    assert.equal(maskUrlCredentials('http://backend/users/a@b.example'), 'http://[credentials]@b.example');
  });

  test('passwords holding "/", "@", "%40" or ":" are masked whole', () => {
    // The old regex `//([^@/]*)@` stopped at the "/" (nothing masked) and at the first "@" (half masked).
    const cases: [string, string][] = [
      ['redis://:ab/cd@h', 'redis://[credentials]@h'],
      ['redis://:ab/cd@h:6379/1', 'redis://[credentials]@h:6379/1'],
      ['redis://:p@ss@h', 'redis://[credentials]@h'],
      ['redis://u:p@ss@word@h:1', 'redis://[credentials]@h:1'],
      ['redis://:p%40ss@h:1/0', 'redis://[credentials]@h:1/0'],
      ['redis://user:pa:ss@h:1', 'redis://[credentials]@h:1'],
      ['HTTPS://u:p@H.example:8443/x', 'HTTPS://[credentials]@H.example:8443/x'],
      ['http:\\\\u:p@h/x', 'http:\\\\[credentials]@h/x'],
      ['redis://onlyuser@h', 'redis://[credentials]@h'],
    ];
    for (const [input, want] of cases) assert.equal(maskUrlCredentials(input), want, input);
  });

  test('property: for any user and password, the output holds neither (length >= 4) and keeps the host', () => {
    const secret = fc.string({ minLength: 4, maxLength: 40, unit: 'binary-ascii' });
    const host = 'redis-host.example';
    fc.assert(
      fc.property(
        fc.constantFrom('redis', 'rediss', 'http', 'https'),
        fc.oneof(fc.constant(''), secret),
        secret,
        fc.boolean(),
        (scheme, user, password, encode) => {
          const info = encode
            ? `${encodeURIComponent(user)}:${encodeURIComponent(password)}`
            : `${user}:${password}`;
          const out = maskUrlCredentials(`${scheme}://${info}@${host}:6390/0`);
          // A secret that is part of the visible rest ("host", "6390") cannot be told apart.
          fc.pre(!`${host}:6390/0`.includes(password));
          assert.ok(!out.includes(password), `password in ${out}`);
          assert.ok(!out.includes(encodeURIComponent(password)), `encoded password in ${out}`);
          if (user.length >= 4 && !`${host}:6390/0`.includes(user)) assert.ok(!out.includes(user));
          assert.ok(out.endsWith(`[credentials]@${host}:6390/0`), out);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('maskUrlsInText and safeMessage', () => {
  test('every URL in a message is masked; the rest of the message stays', () => {
    assert.equal(
      maskUrlsInText('connect to redis://:pw@h:1 failed, then http://u:p%40x@b:2/y'),
      'connect to redis://[credentials]@h:1 failed, then http://[credentials]@b:2/y',
    );
    assert.equal(
      safeMessage(new Error('Invalid URL: redis://:ab/cd@h:6379\nstack')),
      'Invalid URL: redis://[credentials]@h:6379',
    );
  });
});

describe('redactConfig', () => {
  test('secret-named values become [set]; every URL value is masked, wherever it is', () => {
    const shown = redactConfig({
      admin: { token: 'admin-token-canary-0123', port: 8081 },
      signing: { secret: 's'.repeat(40), header: 'x-gateway-signature' },
      store: { redis: { url: 'redis://u:p/w@h:1/0', keyPrefix: 'ng:' } },
      rateLimit: { redisUrl: 'rediss://:rl-pass@rl:6380' },
      routes: [{ prefix: '/a', target: 'http://svc:route-pass@backend:9090/base' }],
      future: { nested: [{ endpoint: 'https://otel:otel-pass@collector:4318' }], tlsPassphrase: 'tls-pass' },
    });
    assert.deepEqual(shown, {
      admin: { token: '[set]', port: 8081 },
      signing: { secret: '[set]', header: 'x-gateway-signature' },
      store: { redis: { url: 'redis://[credentials]@h:1/0', keyPrefix: 'ng:' } },
      rateLimit: { redisUrl: 'rediss://[credentials]@rl:6380' },
      routes: [{ prefix: '/a', target: 'http://[credentials]@backend:9090/base' }],
      future: { nested: [{ endpoint: 'https://[credentials]@collector:4318' }], tlsPassphrase: '[set]' },
    });
  });
});
