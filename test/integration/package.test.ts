import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

// What `npm pack` ships, the light signing entry, and the TypeScript in README.md and docs/.
const ROOT = resolve(import.meta.dirname, '../..');
if (!existsSync(join(ROOT, 'dist/signing.d.ts')))
  throw new Error('dist/ is missing: run `npm run build` first (npm test does)');

/** Imports `specifier` in a fresh node (from the package root, so the package's own name resolves). */
function loadIn(specifier: string): { cjs: string[]; exports: string[] } {
  const code = [
    `const m = await import(${JSON.stringify(specifier)});`,
    "const { createRequire } = await import('node:module');",
    // express, ioredis and prom-client are CommonJS: whatever loads them lands in this cache.
    'const cjs = Object.keys(createRequire(import.meta.url).cache);',
    'console.log(JSON.stringify({ cjs, exports: Object.keys(m).sort() }));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--input-type=module', '--eval', code], { cwd: ROOT });
  return JSON.parse(out.toString()) as { cjs: string[]; exports: string[] };
}

/** README.md and every page of docs/, as paths from the package root. */
function docPages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}

describe('package', () => {
  test('notify-gateway/signing loads no express, ioredis or prom-client (the main entry does)', () => {
    const heavy = ['express', 'ioredis', 'prom-client'];
    const loads = (files: string[], pkg: string) => files.some((f) => f.includes(`/node_modules/${pkg}/`));
    const light = loadIn('notify-gateway/signing');
    assert.deepEqual(light.exports, [
      'WEBHOOK_HEADERS',
      'gatewaySignatureMiddleware',
      'generateWebhookSecret',
      'signGatewayRequest',
      'signWebhook',
      'verifyGatewaySignature',
      'verifyWebhook',
    ]);
    for (const pkg of heavy) assert.ok(!loads(light.cjs, pkg), `the signing entry loads ${pkg}`);
    assert.equal(light.cjs.length, 0, `CommonJS modules loaded: ${light.cjs.join(', ')}`);
    const main = loadIn('notify-gateway');
    for (const pkg of heavy) assert.ok(loads(main.cjs, pkg), `the probe cannot see ${pkg}`);
    for (const name of light.exports) assert.ok(main.exports.includes(name), `${name} left the main entry`);
  });

  test('npm pack ships dist, config, LICENSE and README; no sources, tests or maps without sources', () => {
    // --ignore-scripts: `prepare` would rebuild; the suite built dist already.
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [pack] = JSON.parse(out.toString()) as { files: { path: string }[] }[];
    const files = pack!.files.map((f) => f.path).sort();
    for (const must of [
      'LICENSE',
      'README.md',
      'package.json',
      'config/default.yaml',
      'config/keys.yaml',
      'config/schema.json',
      'dist/cli.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/signing.js',
      'dist/signing.d.ts',
      'console/index.html',
      'dashboard/index.html',
    ])
      assert.ok(files.includes(must), `${must} is not packed`);
    const allowed =
      /^(LICENSE|README\.md|CHANGELOG\.md|package\.json|config\/[\w.-]+\.(ya?ml|json)|dist\/.+\.(js|d\.ts|js\.map)|(console|dashboard)\/[\w/.-]+\.(html|js|css|svg))$/;
    assert.deepEqual(
      files.filter((f) => !allowed.test(f)),
      [],
      'unexpected files in the package',
    );
    // Every packed map carries its sources: src/ is not shipped, so `sources` alone would dangle.
    for (const map of files.filter((f) => f.endsWith('.map'))) {
      const m = JSON.parse(readFileSync(join(ROOT, map), 'utf8')) as {
        sources: string[];
        sourcesContent?: string[];
      };
      assert.equal(m.sourcesContent?.length, m.sources.length, `${map} has no sourcesContent`);
    }
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(pkg.license, 'MIT');
    assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License/);
    assert.match(
      String((pkg.repository as { url: string }).url),
      /github\.com\/notify-gateway\/notify-gateway/,
    );
    assert.ok(pkg.homepage);
  });

  test('the TypeScript blocks of README.md and docs/ type-check under strict, against the built package', () => {
    // A block that imports the test helpers is a test file: it is checked from test/integration/;
    // one that imports './' is code inside the gateway: it is checked from src/.
    const blocks = docPages().flatMap((page) =>
      [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```$/gm)].map(
        (m, i) => {
          const dir = m[1]!.includes("from '../helpers/")
            ? 'test/integration'
            : m[1]!.includes("from './")
              ? 'src'
              : '';
          return [join(ROOT, dir, `${page.replace(/\W/g, '-')}-block-${i}.ts`), m[1]!] as const;
        },
      ),
    );
    assert.ok(blocks.length >= 3, `only ${blocks.length} ts blocks found in README.md and docs/`);
    const config = ts.getParsedCommandLineOfConfigFile(
      join(ROOT, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(String(d.messageText)),
      },
    )!;
    const options = { ...config.options, noEmit: true, strict: true, noUnusedLocals: true };
    // Virtual files in the package root: 'notify-gateway' resolves to the package itself (exports).
    const virtual = new Map(blocks);
    const host = ts.createCompilerHost(options);
    const { getSourceFile, fileExists, readFile } = host;
    host.fileExists = (f) => virtual.has(f) || fileExists.call(host, f);
    host.readFile = (f) => virtual.get(f) ?? readFile.call(host, f);
    host.getSourceFile = (f, lang, ...rest) =>
      virtual.has(f)
        ? ts.createSourceFile(f, virtual.get(f)!, lang)
        : getSourceFile.call(host, f, lang, ...rest);
    // Two programs: the blocks a user runs against the package (dist/), and the example tests, which
    // import the sources through test/helpers. In one program the two copies of the request state's
    // declaration merging (src/ and dist/) would meet.
    const [asTests, asPackage] = [true, false].map((tests) =>
      [...virtual.keys()].filter((f) => f.startsWith(join(ROOT, 'test', 'integration')) === tests),
    );
    const problems = [asTests!, asPackage!]
      .filter((files) => files.length > 0)
      .flatMap((files) => ts.getPreEmitDiagnostics(ts.createProgram(files, options, host)))
      .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    assert.deepEqual(problems, []);
  });

  test('README and docs cite only files in the repository (no shared/spec/... a user does not have)', () => {
    const pages = docPages();
    const missing: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      const cited = [
        ...text.matchAll(/`((?:shared|docs|src|config|deploy|bench|test)\/[\w./-]*\w)`/g),
        ...text.matchAll(/\]\(((?!https?:)[\w./-]+\.md)(?:#[\w-]*)?\)/g),
      ].map((m) => m[1]!);
      for (const path of cited) {
        const base =
          page.startsWith('docs/') && !/^(docs|src|config|deploy|bench|test|shared)\//.test(path)
            ? 'docs'
            : '';
        if (!path.includes('*') && !existsSync(join(ROOT, base, path))) missing.push(`${page}: ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('links between README.md and docs/ land on a heading that exists', () => {
    const broken: string[] = [];
    for (const page of docPages()) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const [, target = '', anchor = ''] of text.matchAll(
        /\]\(((?!https?:)[\w./-]*\.md)?#([\w-]+)\)/g,
      )) {
        const file = target ? join(ROOT, page.startsWith('docs/') ? 'docs' : '', target) : join(ROOT, page);
        if (!existsSync(file)) continue; // the test above reports it
        if (!headingSlugs(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target}#${anchor}`);
      }
    }
    assert.deepEqual(broken, []);
  });
});

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as `-`. */
function headingSlugs(markdown: string): Set<string> {
  const outsideCode = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  return new Set(
    [...outsideCode.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}
