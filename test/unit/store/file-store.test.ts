import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import { FileKeyStore, parseKeyFile, type FileReloadResult } from '../../../src/store/file-store.js';

const tiers = new Set(['free', 'standard']);
const hash = (i: number) => hashApiKey(`nk_live_unit${i}`);

/** A realistic file: two companies, keys with every security-relevant field. */
const FULL = `# keys
companies:
  - id: acme
    name: Acme
    tier: standard
    status: active
    apiAccess: true
    keys:
      - id: acme-1
        hash: ${hash(1)}
        revokedAt: 2026-12-01T00:00:00Z
      - id: acme-2
        hash: sha256:${hash(2).toUpperCase()}
        expiresAt: 2027-01-01T00:00:00Z
  - id: off
    tier: free
    status: suspended
    apiAccess: false
    keys:
      - id: off-1
        hash: ${hash(3)}
`;

function problemsOf(text: string): string {
  const r = parseKeyFile(text, tiers);
  assert.equal(r.ok, false, `accepted:\n${text}`);
  return r.ok ? '' : r.problems.join('\n');
}

describe('parseKeyFile: broken shapes are refused, not read as "no companies"', () => {
  test('empty, whitespace-only and comment-only files', () => {
    for (const text of ['', '   \n\t\n', '# all keys were here\n'])
      assert.match(problemsOf(text), /\(file\): the key file is empty; write `companies: \[\]`/);
  });

  test('a top level that is not a mapping: a truncated key, a list, a number', () => {
    assert.match(problemsOf('compan'), /\(top level\): must be a mapping .* got a string/);
    assert.match(problemsOf('- id: acme\n'), /got a list/);
    assert.match(problemsOf('42\n'), /got a number/);
  });

  test('no companies key, and companies without a value', () => {
    assert.match(problemsOf('other: 1\n'), /^companies: missing; write `companies: \[\]`/m);
    assert.match(problemsOf('companies:\n'), /^companies: has no value/m);
    assert.match(problemsOf('companies: ~\n'), /^companies: has no value/m);
    assert.match(problemsOf('companies: nope\n'), /^companies: Expected array/m);
  });

  test('an explicit `companies: []` is the one way to say "no companies"', () => {
    assert.deepEqual(parseKeyFile('companies: []\n', tiers), { ok: true, companies: [], keys: [] });
  });

  test('almost every cut of a valid file is refused; an accepted cut invents no key or company', () => {
    const full = parseKeyFile(FULL, tiers);
    assert.ok(full.ok);
    const keys = new Map(full.keys.map((k) => [k.hash, `${k.companyId}/${k.id}`]));
    const companies = new Map(full.companies.map((c) => [c.id, c.tier]));
    let refused = 0;
    for (let cut = 0; cut < FULL.length; cut++) {
      const r = parseKeyFile(FULL.slice(0, cut), tiers);
      if (!r.ok) {
        refused++;
        continue;
      }
      for (const c of r.companies) assert.equal(companies.get(c.id), c.tier, `cut ${cut}: company ${c.id}`);
      for (const k of r.keys) assert.equal(keys.get(k.hash), `${k.companyId}/${k.id}`, `cut ${cut}`);
    }
    // A cut at a line boundary can parse (and drop a trailing revokedAt or status: the store's
    // prefix guard below catches those); a cut inside a line cannot.
    assert.ok(refused > FULL.length * 0.8, `only ${refused} of ${FULL.length} cuts refused`);
  });
});

describe('parseKeyFile: every problem at once', () => {
  test('YAML errors, schema issues, unknown tiers and duplicates are listed together', () => {
    const text = [
      'companies:',
      '  - id: a',
      '    tier: free',
      '    keys:',
      `      - { id: k, hash: ${hash(1)} }`,
      `      - { id: k, hash: ${hash(1)} }`,
      '      - { id: k2, hash: nothex }',
      '  - id: a',
      '    tier: gold',
      '    status: sleeping',
      '  - id: b',
      '    tier: free',
      '    tier: standard',
      'extra: [1, 2',
      '',
    ].join('\n');
    const problems = problemsOf(text);
    for (const want of [
      /^YAML: Map keys must be unique at line 13/m,
      /^YAML: Flow sequence .* at line 15/m,
      /^companies\.0\.keys\.2\.hash: must be the 64-hex SHA-256/m,
      /^companies\.1\.status: Invalid enum value/m,
      /^companies\.0\.keys\.1\.id: duplicate key id k/m,
      /^companies\.0\.keys\.1\.hash: the same key hash appears twice/m,
      /^companies\.1\.id: duplicate company id a/m,
      /^companies\.1\.tier: unknown tier "gold"/m,
      /Unrecognized key\(s\) in object: 'extra'/m,
    ])
      assert.match(problems, want);
  });

  test('no problem quotes a hash or a key, even one written where a name goes', () => {
    const key = generateApiKey('live');
    const problems = problemsOf(
      `companies:\n  - id: a\n    tier: free\n    keys:\n      - { id: k, ${hash(7)}: x, hash: ${key} }\n`,
    );
    assert.match(problems, /Unrecognized key/);
    assert.ok(!problems.includes(hash(7)) && !problems.includes(key), problems);
  });
});

describe('FileKeyStore: a reload that drops or postpones a revocation applies, and is reported', () => {
  test('dropped, postponed, moved to a new id; an earlier or equal revocation is not reported', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ng-unit-keys-')), 'keys.yaml');
    const file = (entries: [string, number, string?][]) =>
      `companies:\n  - id: a\n    tier: free\n    keys:\n` +
      entries
        .map(([id, i, at]) => `      - { id: ${id}, hash: ${hash(i)}${at ? `, revokedAt: ${at}` : ''} }\n`)
        .join('');
    writeFileSync(
      path,
      file([
        ['k1', 1, '2026-01-01T00:00:00Z'],
        ['k2', 2, '2026-01-01T00:00:00Z'],
        ['k3', 3, '2026-01-01T00:00:00Z'],
        ['k4', 4, '2026-01-01T00:00:00Z'],
        ['k5', 5, '2026-01-01T00:00:00Z'],
      ]),
    );
    const reloads: FileReloadResult[] = [];
    const store = new FileKeyStore({
      path,
      knownTiers: tiers,
      watchIntervalMs: 0,
      onReload: (r) => reloads.push(r),
    });
    try {
      writeFileSync(
        path,
        file([
          ['k1', 1], // dropped
          ['k2', 2, '2026-06-01T00:00:00Z'], // postponed
          ['k3', 3, '2025-01-01T00:00:00Z'], // earlier: fine
          ['k4', 4, '2026-01-01T00:00:00Z'], // same: fine
          ['k5-renamed', 5], // the same secret under a new id, revocation dropped
        ]),
      );
      store.reload();
      const r = reloads.at(-1);
      assert.ok(r?.ok, JSON.stringify(r));
      assert.deepEqual(r.revocationsUndone, [
        { keyId: 'k1', companyId: 'a', was: '2026-01-01T00:00:00Z', now: null },
        { keyId: 'k2', companyId: 'a', was: '2026-01-01T00:00:00Z', now: '2026-06-01T00:00:00Z' },
        { keyId: 'k5-renamed', companyId: 'a', was: '2026-01-01T00:00:00Z', now: null },
      ]);
      // The file is the source of truth: the reload applied.
      assert.equal((await store.findKeyByHash(hash(1)))?.revokedAt, null);
      // Compared with the last good content: reloading the same file reports nothing more.
      store.reload();
      assert.deepEqual((reloads.at(-1) as { revocationsUndone: unknown }).revocationsUndone, []);
    } finally {
      await store.close();
    }
  });

  test('no cut of the loaded file that reloads drops a revocation, an expiry or a suspension', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ng-unit-keys-')), 'keys.yaml');
    writeFileSync(path, FULL);
    const reloads: FileReloadResult[] = [];
    const store = new FileKeyStore({
      path,
      knownTiers: tiers,
      watchIntervalMs: 0,
      onReload: (r) => reloads.push(r),
    });
    const revokedAt = async (id: string) => (await store.getKey(id))?.revokedAt;
    try {
      let accepted = 0;
      for (let cut = 0; cut < FULL.length; cut++) {
        writeFileSync(path, FULL.slice(0, cut));
        store.reload();
        if (!reloads.at(-1)?.ok) continue;
        accepted++;
        // An accepted cut only removes whole entries (access lost, never gained): every key and
        // company still there keeps its restrictions.
        const k1 = await store.getKey('acme-1');
        if (k1) assert.equal(k1.revokedAt, '2026-12-01T00:00:00Z', `cut ${cut}`);
        const k2 = await store.getKey('acme-2');
        if (k2) assert.equal(k2.expiresAt, '2027-01-01T00:00:00Z', `cut ${cut}`);
        const off = await store.getCompany('off');
        if (off) assert.deepEqual([off.status, off.apiAccess], ['suspended', false], `cut ${cut}`);
        // Back to the full file, so the next cut is measured against it.
        writeFileSync(path, FULL);
        store.reload();
        assert.equal(reloads.at(-1)?.ok, true);
      }
      assert.ok(accepted > 0, 'cuts that only drop whole trailing entries are applied');
      // Cut just before acme-1's revokedAt: valid YAML that would un-revoke it, refused.
      writeFileSync(path, FULL.slice(0, FULL.indexOf('        revokedAt')));
      store.reload();
      const refused = reloads.at(-1)!;
      assert.equal(refused.ok, false);
      assert.match(refused.ok ? '' : refused.problems.join('\n'), /key acme-1: revokedAt would be dropped/);
      assert.equal(await revokedAt('acme-1'), '2026-12-01T00:00:00Z');
      // Deleting the last key of the file on purpose is applied: that key stops working.
      writeFileSync(path, FULL.slice(0, FULL.indexOf('      - id: off-1')));
      store.reload();
      assert.equal(reloads.at(-1)?.ok, false, '`keys:` without entries is broken');
      writeFileSync(path, FULL.slice(0, FULL.indexOf('    keys:\n      - id: off-1')));
      store.reload();
      assert.equal(reloads.at(-1)?.ok, true, JSON.stringify(reloads.at(-1)));
      assert.equal(await store.getKey('off-1'), null);
      // A loosening change at the end on purpose: end the file with a comment.
      writeFileSync(path, FULL);
      store.reload();
      writeFileSync(path, FULL.slice(0, FULL.indexOf('    status: suspended')) + '# off is active again\n');
      store.reload();
      assert.equal(reloads.at(-1)?.ok, true, JSON.stringify(reloads.at(-1)));
      assert.equal((await store.getCompany('off'))?.status, 'active');
    } finally {
      void store.close();
    }
  });

  test('a cut that would drop the scopes or limits of a company or key is refused', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ng-unit-keys-')), 'keys.yaml');
    const full = `companies:
  - id: narrow
    tier: free
    keys:
      - id: narrow-1
        hash: ${'a'.repeat(64)}
        limits: [{ points: 5, duration: 60 }]
    scopes: [{ route: /notify/v1 }]
`;
    writeFileSync(path, full);
    const reloads: FileReloadResult[] = [];
    const store = new FileKeyStore({
      path,
      knownTiers: tiers,
      watchIntervalMs: 0,
      onReload: (r) => reloads.push(r),
    });
    try {
      writeFileSync(path, full.slice(0, full.indexOf('    scopes:')));
      store.reload();
      const r = reloads.at(-1)!;
      assert.equal(r.ok, false);
      assert.match(r.ok ? '' : r.problems.join('\n'), /company narrow: scopes would be dropped/);
      writeFileSync(path, full.slice(0, full.indexOf('        limits:')));
      store.reload();
      const r2 = reloads.at(-1)!;
      assert.match(r2.ok ? '' : r2.problems.join('\n'), /key narrow-1: limits would be dropped/);
    } finally {
      void store.close();
    }
  });

  test('the first load refuses an empty file: a gateway must not start keyless by accident', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ng-unit-keys-')), 'keys.yaml');
    writeFileSync(path, '');
    assert.throws(
      () => new FileKeyStore({ path, knownTiers: tiers, watchIntervalMs: 0 }),
      /is invalid:\n {2}\(file\): the key file is empty/,
    );
    writeFileSync(path, 'companies: []\n');
    const empty = new FileKeyStore({ path, knownTiers: tiers, watchIntervalMs: 0 });
    void empty.close();
  });
});

describe('key file timestamps', () => {
  test('an impossible createdAt, expiresAt or revokedAt rejects the file, naming each field', () => {
    const h = (i: number) => String(i).repeat(64).slice(0, 64);
    const r = parseKeyFile(
      `companies:\n  - id: a\n    tier: free\n    keys:\n` +
        `      - { id: k1, hash: ${h(1)}, expiresAt: "2027-02-30T00:00:00Z" }\n` +
        `      - { id: k2, hash: ${h(2)}, revokedAt: "2030-13-01T00:00:00Z" }\n` +
        `      - { id: k3, hash: ${h(3)}, createdAt: "2027-01-01T24:00:00Z" }\n` +
        `      - { id: k4, hash: ${h(4)}, revokedAt: "2027-01-01T23:59:60Z" }\n`,
      new Set(['free']),
    );
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    for (const path of [
      'companies.0.keys.0.expiresAt',
      'companies.0.keys.1.revokedAt',
      'companies.0.keys.2.createdAt',
      'companies.0.keys.3.revokedAt',
    ])
      assert.match(text, new RegExp(`${path.replace(/\./g, '\\.')}: must be a real UTC instant`));
  });
});

describe('key file input: the admin API rules for scopes, names and labels', () => {
  const routes = [{ prefix: '/notify/v1' }];
  test('a scope path or route with a dot or empty segment rejects the file, naming the field', () => {
    for (const p of ['/notify/v1/../media', '/notify/v1/./otps', '/notify/v1//otps', '/notify/v1/..']) {
      const text =
        `companies:\n  - id: a\n    tier: free\n    scopes: [{ route: /notify/v1, paths: ["${p}"] }]\n` +
        `    keys:\n      - { id: k1, hash: ${hash(1)}, scopes: [{ route: "/notify/v1/${p.slice(11)}" }] }\n`;
      const r = parseKeyFile(text, tiers, routes);
      assert.equal(r.ok, false, p);
      const problems = r.ok ? '' : r.problems.join('\n');
      assert.match(problems, /^companies\.0\.scopes\.0\.paths\.0: must not hold an empty/m, p);
      assert.match(problems, /^companies\.0\.keys\.0\.scopes\.0\.route: must not hold an empty/m, p);
    }
  });

  test('a name or label with control, bidi, zero-width or unpaired surrogate characters rejects the file, naming it', () => {
    // JSON strings are YAML flow scalars: the escapes reach the parser as in an admin API body.
    for (const bad of [
      'a\nb',
      'a\u001b[31mb',
      'a\u0085b',
      'a\u202eb',
      'a\u2066b',
      'a\u200bb',
      'a\ufeffb',
      'a\ud800b',
    ]) {
      const text =
        `companies:\n  - id: a\n    tier: free\n    name: ${JSON.stringify(bad)}\n` +
        `    keys:\n      - { id: k1, hash: ${hash(1)}, label: ${JSON.stringify(bad)}, ` +
        `prefix: ${JSON.stringify(bad)}, environment: ${JSON.stringify(bad)} }\n`;
      const r = parseKeyFile(text, tiers);
      assert.equal(r.ok, false, JSON.stringify(bad));
      const problems = r.ok ? '' : r.problems.join('\n');
      assert.match(
        problems,
        /^companies\.0\.name: must not contain control characters/m,
        JSON.stringify(bad),
      );
      assert.match(problems, /^companies\.0\.keys\.0\.label: must not contain control/m, JSON.stringify(bad));
      // Prefix and environment are no free text: each has the shape of the key format.
      assert.match(problems, /^companies\.0\.keys\.0\.prefix: must be the display prefix/m);
      assert.match(problems, /^companies\.0\.keys\.0\.environment: must be 2-16 lowercase/m);
    }
    const fine = parseKeyFile(
      `companies:\n  - id: a\n    tier: free\n    name: "Zürich 東京 🚀"\n    keys:\n      - { id: k1, hash: ${hash(1)}, label: "CI — prod" }\n`,
      tiers,
    );
    assert.equal(fine.ok, true);
  });

  test('ids are case-sensitive: ACME and acme are two companies, not duplicates (docs/admin.md)', () => {
    const r = parseKeyFile(
      `companies:\n  - { id: ACME, tier: free, keys: [{ id: K1, hash: ${hash(1)} }] }\n` +
        `  - { id: acme, tier: free, keys: [{ id: k1, hash: ${hash(2)} }] }\n`,
      tiers,
    );
    assert.equal(r.ok, true, r.ok ? '' : r.problems.join('\n'));
    assert.deepEqual(r.ok ? r.companies.map((c) => c.id) : [], ['ACME', 'acme']);
  });
});
