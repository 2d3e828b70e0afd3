import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { createKeyMaterialMatcher } from '../../../src/proxy/key-material.js';
import { createHeaderScrubber } from '../../../src/proxy/trusted-headers.js';

/**
 * Attack report F5 (header part): escape forms, Unicode forms and splits of the presented key, and
 * another company's key body without its prefix, that reached the upstream.
 */

const hex = (c: string, pad: number) => c.charCodeAt(0).toString(16).padStart(pad, '0');
/** What Node hands over for a header sent as UTF-8: one latin1 character per byte. */
const asHeader = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const fullWidth = (s: string) => [...s].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join('');
const pctUtf8 = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => '%' + b.toString(16)).join('');

/** Every form the report found forwarded, for a key `k`. */
const FORMS: [string, (k: string) => string][] = [
  ['%uXXXX', (k) => [...k].map((c) => '%u' + hex(c, 4)).join('')],
  ['%UXXXX upper', (k) => [...k].map((c) => '%U' + hex(c, 4).toUpperCase()).join('')],
  [
    'overlong UTF-8, 2 bytes (%c1%ae)',
    (k) =>
      [...k]
        .map((c) => {
          const n = c.charCodeAt(0);
          return `%${(0xc0 | (n >> 6)).toString(16)}%${(0x80 | (n & 0x3f)).toString(16)}`;
        })
        .join(''),
  ],
  [
    'overlong UTF-8, 3 bytes (%e0%81%ae)',
    (k) =>
      [...k]
        .map((c) => {
          const n = c.charCodeAt(0);
          return `%e0%${(0x80 | (n >> 6)).toString(16)}%${(0x80 | (n & 0x3f)).toString(16)}`;
        })
        .join(''),
  ],
  ['\\u{6e}', (k) => [...k].map((c) => `\\u{${hex(c, 1)}}`).join('')],
  ['\\u006e', (k) => [...k].map((c) => `\\u${hex(c, 4)}`).join('')],
  ['\\U0000006e', (k) => [...k].map((c) => `\\U${hex(c, 8)}`).join('')],
  ['octal \\156', (k) => [...k].map((c) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0')).join('')],
  ['&#00000110;', (k) => [...k].map((c) => `&#${String(c.charCodeAt(0)).padStart(8, '0')};`).join('')],
  ['&#x0006e;', (k) => [...k].map((c) => `&#x${hex(c, 5)};`).join('')],
  ['&#X0000006E (no ;)', (k) => [...k].map((c) => `&#X${hex(c, 8).toUpperCase()}`).join('')],
  ['full-width, as a JS string', fullWidth],
  ['full-width, as Node hands a UTF-8 header', (k) => asHeader(fullWidth(k))],
  ['full-width, %-encoded UTF-8', (k) => pctUtf8(fullWidth(k))],
  [
    'mathematical bold digits and letters (NFKC)',
    (k) => asHeader(k.replace(/[0-9]/g, (d) => String.fromCodePoint(0x1d7ce + Number(d)))),
  ],
  [
    'circled letters (NFKC)',
    (k) => asHeader(k.replace(/[a-z]/g, (c) => String.fromCodePoint(0x24d0 + c.charCodeAt(0) - 97))),
  ],
  [
    'full-width %-escapes (％６ｅ)',
    (k) => asHeader(fullWidth(Buffer.from(k).toString('hex').replace(/(..)/g, '%$1'))),
  ],
];

const MIXABLE = FORMS.filter(([label]) => !label.includes('no ;')).map(([, f]) => f);

describe('key material: escape and Unicode forms (F5)', () => {
  const key = generateApiKey('live');
  const m = createKeyMaterialMatcher(key);

  for (const [label, encode] of FORMS)
    test(`the presented key as ${label} is key material, anywhere in a value`, () => {
      const v = encode(key);
      assert.equal(m.holds(v), true, v.slice(0, 60));
      assert.equal(m.holds(`Bearer ${v}`), true);
      assert.equal(m.holds(encode(key.slice(8))), true, 'the body alone');
    });

  test('property: any mix of the forms, character by character, is key material', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(FORMS.length - 1), { minLength: key.length, maxLength: key.length }),
        (picks) => {
          // An entity without `;` reads on into a following hex digit (as in HTML): not mixed.
          const v = [...key].map((c, i) => MIXABLE[picks[i]! % MIXABLE.length]!(c)).join('');
          return m.holds(v);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('ordinary values with these escapes and non-ASCII text are not key material', () => {
    for (const v of [
      'caf\u00e9 \u00fcber stra\u00dfe '.repeat(4),
      asHeader('Ｈｅｌｌｏ，　ｗｏｒｌｄ！ ノーティファイ ✓ '.repeat(3)),
      '%u0041%u0042 \\u{1F600} \\101\\102 &#0000065;&#x00042; plain text here',
      'C:\\Program Files\\App\\123\\456 and more text to pass the length',
      pctUtf8('über naïve résumé — ok ok ok ok'),
      '\u00c1\u00ae'.repeat(40),
    ])
      assert.equal(m.holds(v), false, v);
  });
});

describe("another company's key body without its prefix (F5)", () => {
  const key = generateApiKey('live');
  const m = createKeyMaterialMatcher(key);
  const none = createKeyMaterialMatcher('');

  test('a checksum-valid 38-character body of a live or test key, or of the presented environment, is key material', () => {
    for (const other of [generateApiKey('live'), generateApiKey('test')]) {
      const body = other.slice(other.indexOf('_', 3) + 1);
      for (const v of [
        body,
        `Bearer ${body}`,
        `token=${body}; x=1`,
        `abc${body}xyz`,
        `${'9'.repeat(40)}${body}`,
      ]) {
        assert.equal(m.holds(v), true, v);
        assert.equal(none.holds(v), true, `without a presented key: ${v}`);
        assert.deepEqual(m.find(v), { keys: [other], undecided: false }, v);
      }
    }
    const staging = createKeyMaterialMatcher(generateApiKey('staging'));
    const stagingOther = generateApiKey('staging');
    assert.equal(staging.holds(stagingOther.slice(11)), true, 'the presented key’s environment');
  });

  test('a 38-character run with a wrong checksum, or one character off, is not', () => {
    const other = generateApiKey('live');
    const body = other.slice(8);
    const flip = (c: string) => (c === 'a' ? 'b' : 'a');
    for (const v of [
      body.slice(0, 37) + flip(body[37]!),
      flip(body[0]!) + body.slice(1),
      body.slice(1),
      'A'.repeat(38),
      '0123456789abcdef0123456789abcdef01234567',
    ])
      assert.equal(m.holds(v), false, v);
  });

  test('found through the same decodings: %-encoded, base64, full-width', () => {
    const other = generateApiKey('live');
    const body = other.slice(8);
    for (const v of [
      encodeURIComponent(body).replace(/./g, (c) => '%' + hex(c, 2)),
      Buffer.from(body).toString('base64'),
      asHeader(fullWidth(body)),
    ])
      assert.equal(m.holds(v), true, v);
  });
});

describe('a key split between headers, names and cookie pairs (F5)', () => {
  const NAMES = {
    companyId: 'x-company-id',
    keyId: 'x-api-key-id',
    companyTier: 'x-company-tier',
    requestId: 'x-request-id',
  };
  const scrub = createHeaderScrubber(NAMES);
  const key = generateApiKey('live');
  const body = key.slice(8);
  const a = body.slice(0, 19);
  const b = body.slice(19);
  const base = { 'x-api-key': key, accept: 'application/json', 'user-agent': 'sdk/1.0' };
  const kept = { accept: 'application/json', 'user-agent': 'sdk/1.0' };

  test('X-<first 19>: <last 19>: split between a header name and its value', () => {
    assert.deepEqual(scrub({ ...base, [`x-${a.toLowerCase()}`]: b }), kept);
    assert.deepEqual(scrub({ ...base, [a.toLowerCase()]: b }), kept);
    assert.deepEqual(
      scrub({ ...base, 'x-first': a, [`x-${b.toLowerCase()}`]: '1' }),
      kept,
      'value, then a name',
    );
  });

  test('split across two cookie pairs: only those pairs go, the rest of the cookie stays', () => {
    for (const [cookie, left] of [
      [`a=${a}; b=${b}`, undefined],
      [`theme=dark; a=${a}; b=${b}; lang=en`, 'theme=dark; lang=en'],
      [`a=${a}; zz=q; b=${b}`, 'zz=q'],
      [`b=${b}; a=${a}`, undefined],
      [`${a}=1; ${b}=2; keep=1`, 'keep=1'],
    ] as const) {
      const want: Record<string, string> = { ...kept };
      if (left !== undefined) want.cookie = left;
      assert.deepEqual(scrub({ ...base, cookie }), want, cookie);
    }
  });

  test('pieces with other letters or digits between them, in any order, across headers', () => {
    const c = body.slice(0, 13);
    const d = body.slice(13, 26);
    const e = body.slice(26);
    assert.deepEqual(scrub({ ...base, 'x-one': `id1 ${e}`, 'x-two': `9${c}9`, 'x-three': `z${d}z` }), kept);
    assert.deepEqual(
      scrub({ ...base, 'x-a': `%u00${hex(a[0]!, 2)}${a.slice(1)}`, 'x-b': fullWidth(b) }),
      kept,
    );
  });

  test('pieces that do not add up to 24 characters of the secret stay', () => {
    // The name after the second piece starts with a letter other than the secret's next one.
    const next = body[22]!.toLowerCase() === 'q' ? 'w' : 'q';
    const h = {
      ...base,
      'x-a': body.slice(0, 11),
      'x-b': body.slice(11, 22),
      [`${next}-c`]: 'unrelated value',
    };
    assert.deepEqual(scrub(h), {
      ...kept,
      'x-a': body.slice(0, 11),
      'x-b': body.slice(11, 22),
      [`${next}-c`]: 'unrelated value',
    });
    // The same piece twice covers only its own characters.
    const twice = { ...base, 'x-a': body.slice(0, 14), 'x-b': body.slice(0, 14) };
    assert.deepEqual(scrub(twice), { ...kept, 'x-a': body.slice(0, 14), 'x-b': body.slice(0, 14) });
  });
});
