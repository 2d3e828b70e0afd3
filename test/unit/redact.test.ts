import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { maskUrlCredentials } from '../../src/redact.js';

describe('maskUrlCredentials', () => {
  test('user and password are replaced, the rest of the URL is kept', () => {
    assert.equal(
      maskUrlCredentials('rediss://default:s3cret@redis.internal:6380/2'),
      'rediss://[credentials]@redis.internal:6380/2',
    );
    assert.equal(maskUrlCredentials('redis://:s3cret@10.0.0.1'), 'redis://[credentials]@10.0.0.1');
  });

  test('a URL without credentials comes back unchanged', () => {
    assert.equal(maskUrlCredentials('redis://10.0.0.1:6379/0'), 'redis://10.0.0.1:6379/0');
  });
});
