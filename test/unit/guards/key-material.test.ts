import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { addKeyShapes, createKeyMatcher, createKeyMatcherOf } from '../../../src/guards/key-material.js';
import type { RequestState } from '../../../src/request-state.js';
import { propertyRuns } from '../../helpers/mutation.js';

// The default level (threat model T1, T5): the copies an honest client makes by mistake, found
// exactly; the encodings only a deliberate client builds are left to the strict level.

const key = generateApiKey('live');
const other = generateApiKey('test');
const body = key.slice(8);
const b64 = (s: string, enc: 'base64' | 'base64url' = 'base64') => Buffer.from(s, 'latin1').toString(enc);
const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
const m = createKeyMatcher(key, 'default');

describe('default level: what it finds', () => {
  const FOUND: [string, string][] = [
    ['the key', key],
    ['inside a longer value', `Bearer ${key}; x=1`],
    ['the body without nk_live_', body],
    ['the key without its checksum', key.slice(0, -6)],
    ['%-encoded', pct(key)],
    ['%-encoded five times', pct(key).replace(/%/g, '%25252525')],
    ['Basic credentials', `Basic ${b64(`${key}:`)}`],
    ['Basic, key as the password', `Basic ${b64(`user:${key}`)}`],
    ['base64url', b64(key, 'base64url')],
    ['base64 in a JWT payload', `eyJhbGciOiJub25lIn0.${b64(JSON.stringify({ k: key }), 'base64url')}.`],
    ['base64, %-encoded', encodeURIComponent(b64(`u:${key}`))],
    ['another valid key', other],
    ['another valid key, upper-case prefix', other.replace('nk_test_', 'NK_TEST_')],
    ['another valid key, %-encoded', pct(other)],
    ['another valid key in Basic credentials', `Basic ${b64(`${other}:`)}`],
  ];
  for (const [label, text] of FOUND)
    test(label, () => {
      const f = m.find(text);
      assert.ok(f !== null && !f.undecided, label);
      assert.ok(m.holds(text), label);
    });

  test('the key found is the presented one, as sent; another key as found', () => {
    assert.deepEqual(m.find(`a=${body}`)?.keys, [key]);
    assert.deepEqual(m.find(`a=${other.replace('nk_test_', 'NK_TEST_')}`)?.keys, [other]);
    assert.deepEqual(m.find(`${key} ${other}`)?.keys, [key, other]);
  });

  test('base64 at every byte offset of a longer blob (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ maxLength: 40 }), (a, z) => {
        const blob = Buffer.concat([a, Buffer.from(key), z]);
        assert.ok(m.holds(blob.toString('base64')));
        assert.ok(m.holds(blob.toString('base64url')));
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  test('a header name (lowercased by Node) holding the key is found in any case', () => {
    assert.ok(m.holdsName(`x-${key.toLowerCase()}`));
    assert.ok(m.holdsName(`x-${body.slice(0, 32).toLowerCase()}`));
    assert.equal(m.holdsName('x-request-id'), false);
  });

  test('escapes nested past 8 rounds are undecided (a header dropped, a URL refused)', () => {
    let deep = pct(key);
    for (let i = 0; i < 8; i++) deep = deep.replace(/%/g, '%25');
    assert.deepEqual(m.find(deep), { keys: [], undecided: true });
  });
});

describe('default level: what it leaves to the strict level, on purpose', () => {
  const LEFT: [string, string][] = [
    ['upper case', key.toUpperCase()],
    ['lower case', key.toLowerCase()],
    ['hex', Buffer.from(key).toString('hex')],
    ['\\u escapes', [...key].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')],
    ['HTML entities', [...key].map((c) => `&#${c.charCodeAt(0)};`).join('')],
    ['separators between characters', key.split('').join('.')],
    ['base64 of base64', b64(b64(key))],
    ['base32-like: reversed', [...key].reverse().join('')],
    ['24 characters of the body', body.slice(3, 27)],
    ["another key's bare body", other.slice(8)],
    ['another key in base64 (not Basic)', b64(`${other}:`)],
    ['a key-shaped value with a wrong checksum', `nk_live_${'A'.repeat(38)}`],
  ];
  for (const [label, text] of LEFT)
    test(label, () => {
      assert.equal(m.find(text), null, label);
    });

  test('ordinary values pass: tokens, ids, base64 of other bytes', () => {
    for (const v of [
      'Bearer some-other-credential',
      '0af7651916cd43dd8448eb211c80319c',
      b64(Buffer.alloc(64, 7).toString('latin1')),
      '%25%25%41 \\x41 &#65;',
      'x'.repeat(300),
    ])
      assert.equal(m.holds(v), false, v);
  });

  test('a text shorter than any copy is not read', () => {
    assert.equal(m.holds(body.slice(0, 31)), false);
  });
});

describe('addKeyShapes', () => {
  test('valid keys only, prefix lowercased; none without `nk_`', () => {
    const found: string[] = [];
    addKeyShapes(`a ${key} b NK_TEST_${other.slice(8)} nk_live_${'A'.repeat(38)}`, found);
    assert.deepEqual(found, [key, other]);
    const none: string[] = [];
    addKeyShapes('x'.repeat(100), none);
    assert.deepEqual(none, []);
  });
});

describe('createKeyMatcherOf: one matcher per request, kept on req.gw', () => {
  const of = createKeyMatcherOf('default', { maxLength: 256, acceptLegacy: false });
  const req = (headers: Record<string, string | string[]>) =>
    ({ headers, gw: { id: 'r', route: '-' } as RequestState }) as unknown as IncomingMessage;

  test('built on first use, then the same object', () => {
    const r = req({ 'x-api-key': key });
    const first = of(r);
    assert.equal(of(r), first);
    assert.equal(r.gw.keyMatcher, first);
    assert.equal(first.key, key);
  });

  test('the key inside a malformed key header: sent twice, Bearer, junk, over the length, other headers', () => {
    for (const headers of <Record<string, string | string[]>[]>[
      { 'x-api-key': `${key}, ${key}` },
      { 'x-api-key': `Bearer ${key}` },
      { 'x-api-key': `${key}#junk` },
      { 'x-api-key': key + 'A'.repeat(300) },
      { authorization: `Bearer ${key}` },
      { x_api_key: key },
      { 'x-api-key': [key, key] },
    ])
      assert.equal(of(req(headers)).key, key, JSON.stringify(headers).slice(0, 40));
  });

  test('no key shape: no presented key, other valid keys are still found', () => {
    const none = of(req({ 'x-api-key': 'not-a-key' }));
    assert.equal(none.key, '');
    assert.ok(none.holds(other));
    assert.equal(none.holds(body), false);
  });

  test('a legacy key, or any X-API-Key value of 20 characters or more, is a secret as sent; a shorter one is not', () => {
    const legacy = 'legacy-secret-0123456789abcdef';
    const accepting = createKeyMatcherOf('default', { maxLength: 256, acceptLegacy: true });
    assert.ok(accepting(req({ 'x-api-key': legacy })).holds(`x=${legacy}`));
    assert.ok(
      of(req({ 'x-api-key': legacy })).holds(`x=${legacy}`),
      'an unknown value is still the client secret',
    );
    assert.equal(of(req({ 'x-api-key': 'short-value' })).key, '');
    assert.equal(of(req({ 'x-api-key': 'x'.repeat(300) })).key, '', 'longer than keys.maxLength: not read');
  });

  test('the strict level builds the strict matcher', () => {
    const strict = createKeyMatcherOf('strict', { maxLength: 256, acceptLegacy: false });
    const mm = strict(req({ 'x-api-key': key }));
    assert.ok(mm.split !== null);
    assert.ok(mm.holds(key.toUpperCase()));
  });
});
