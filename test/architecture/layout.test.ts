import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Holds src/ to docs/architecture.md: the import rules, the packages that carry a layer, the
// composition roots, the 80-line limit on functions, the request path, and test/unit mirroring
// src/. The rules are tables here; the first tests check that the page says the same.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SRC = join(ROOT, 'src');
const DOC = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');

/** Areas of src/, first match wins; a path ending in `/` is a folder. Same as the page's table. */
const AREAS = [
  ['time', 'time.ts'],
  ['errors', 'errors.ts'],
  ['redact', 'redact.ts'],
  ['config', 'config/'],
  ['redis', 'redis/'],
  ['store', 'store/'],
  ['request-state', 'request-state.ts'],
  ['signing', 'signing.ts'],
  ['auth', 'auth/'],
  ['guards', 'guards/'],
  ['ratelimit', 'ratelimit/'],
  ['proxy', 'proxy/'],
  ['observability', 'observability/'],
  ['usage', 'usage/'],
  ['admin-api', 'admin/router.ts'],
  ['admin', 'admin/'],
  ['http', 'http/'],
  ['demo', 'demo/'],
  ['server', 'server.ts'],
  ['supervisor', 'supervisor.ts'],
  ['tls', 'tls.ts'],
  ['cli', 'cli.ts'],
  ['index', 'index.ts'],
] as const;
type Area = (typeof AREAS)[number][0];
const ALL: readonly Area[] = AREAS.map(([a]) => a);
const allBut = (...not: Area[]): Area[] => ALL.filter((a) => !not.includes(a));

const FOUNDATION: Area[] = ['time', 'errors', 'redact', 'config'];
const foundationBut = (self: Area) => FOUNDATION.filter((a) => a !== self);

/** What each area may import from src/, besides itself. */
const MAY_IMPORT: Record<Area, readonly Area[]> = {
  time: foundationBut('time').filter((a) => a !== 'config'),
  errors: foundationBut('errors').filter((a) => a !== 'config'),
  redact: foundationBut('redact').filter((a) => a !== 'config'),
  config: foundationBut('config'),
  redis: FOUNDATION,
  store: [...FOUNDATION, 'redis'],
  'request-state': [...FOUNDATION, 'store'],
  signing: FOUNDATION,
  auth: [...FOUNDATION, 'store'],
  guards: [...FOUNDATION, 'request-state', 'auth'],
  ratelimit: [...FOUNDATION, 'redis'],
  proxy: [...FOUNDATION, 'request-state', 'signing', 'auth', 'guards'],
  observability: FOUNDATION,
  usage: [...FOUNDATION, 'redis'],
  'admin-api': [...FOUNDATION, 'store', 'admin', 'observability'],
  admin: [...FOUNDATION, 'store', 'auth', 'usage'],
  http: [
    ...FOUNDATION,
    'store',
    'request-state',
    'signing',
    'auth',
    'guards',
    'ratelimit',
    'proxy',
    'observability',
  ],
  demo: allBut('demo', 'cli', 'index'),
  server: allBut('server', 'demo', 'cli', 'index'),
  supervisor: [...FOUNDATION, 'observability'],
  tls: [...FOUNDATION, 'observability'],
  cli: allBut('cli', 'index'),
  index: allBut('index', 'demo', 'cli'),
};

/** Packages that carry a layer with them, and the only paths (in src/) that may import them. */
const PACKAGES: Record<string, readonly string[]> = {
  express: ['http/', 'admin/router.ts', 'demo/backend.ts'],
  helmet: ['http/', 'admin/router.ts'],
  ioredis: [
    'redis/',
    'store/redis-store.ts',
    'store/redis-invalidations.ts',
    'ratelimit/',
    'usage/redis-usage-store.ts',
  ],
  pino: ['observability/logger.ts'],
  'http-proxy-middleware': ['proxy/route-proxy.ts'],
};

/** The only files that read `process.env` or call `process.exit`. */
const COMPOSITION_ROOTS = ['server.ts', 'cli.ts'];

const MAX_FUNCTION_LINES = 79;

function walk(dir: string, suffix: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p, suffix) : p.endsWith(suffix) ? [p] : [];
  });
}

/** src/ files as posix paths relative to src/. */
const FILES = walk(SRC, '.ts').map((p) => relative(SRC, p).split(sep).join('/'));
const text = (file: string) => readFileSync(join(SRC, file), 'utf8');
const matches = (file: string, path: string) => (path.endsWith('/') ? file.startsWith(path) : file === path);

function areaOf(file: string): Area | undefined {
  return AREAS.find(([, path]) => matches(file, path))?.[0];
}

/** Every module a file names: static, type-only, side-effect and dynamic imports, and re-exports. */
function importsOf(file: string): string[] {
  return ts.preProcessFile(text(file), true, true).importedFiles.map((f) => f.fileName);
}

/** A relative specifier as a src/ path (`../time.js` from `auth/x.ts` → `time.ts`). */
function resolveInSrc(file: string, spec: string): string {
  return posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts');
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`); null for `node:` builtins. */
function packageOf(spec: string): string | null {
  if (spec.startsWith('node:')) return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Rows of the markdown table whose header row starts with `| <firstHeader> |`. */
function docTable(firstHeader: string): string[][] {
  const lines = DOC.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^\\|\\s*${firstHeader}\\s*\\|`).test(l));
  assert.ok(start >= 0, `docs/architecture.md has a table headed "${firstHeader}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

const list = (cell: string) =>
  cell
    .split(',')
    .map((s) => s.trim().replace(/`/g, ''))
    .filter(Boolean);

describe('docs/architecture.md and these rules say the same', () => {
  test('the import rules table', () => {
    const rows = docTable('area');
    assert.deepEqual(
      rows.map(([area, path]) => [area, path!.replace(/`/g, '')]),
      AREAS.map(([a, p]) => [a, p]),
      'areas and their paths, in order',
    );
    for (const [area, , cell] of rows) {
      const m = /^all but (.*)$/.exec(cell!);
      const listed = m ? allBut(...(list(m[1]!) as Area[])).filter((a) => a !== area) : list(cell!);
      assert.deepEqual(new Set(listed), new Set(MAY_IMPORT[area as Area]), `may import of ${area}`);
    }
  });

  test('the packages table', () => {
    const rows = docTable('package');
    assert.deepEqual(Object.fromEntries(rows.map(([pkg, cell]) => [pkg, list(cell!)])), PACKAGES);
  });
});

describe('src/ layering', () => {
  test('every file of src/ belongs to an area', () => {
    assert.deepEqual(
      FILES.filter((f) => areaOf(f) === undefined),
      [],
    );
  });

  test('nothing imports upward: each import is the area itself or one its row allows', () => {
    const bad: string[] = [];
    for (const file of FILES) {
      const from = areaOf(file)!;
      for (const spec of importsOf(file).filter((s) => s.startsWith('.'))) {
        const target = resolveInSrc(file, spec);
        const to = areaOf(target);
        assert.ok(existsSync(join(SRC, target)), `${file} imports ${spec}, which is not in src/`);
        if (to !== from && !MAY_IMPORT[from].includes(to!)) bad.push(`${file} (${from}) → ${target} (${to})`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test('express, helmet, ioredis, pino and http-proxy-middleware only where their layer is', () => {
    const bad: string[] = [];
    for (const file of FILES) {
      for (const spec of importsOf(file).filter((s) => !s.startsWith('.'))) {
        const allowed = PACKAGES[packageOf(spec) ?? ''];
        if (allowed && !allowed.some((p) => matches(file, p))) bad.push(`${file} → ${spec}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test('only the composition roots read process.env or call process.exit', () => {
    const bad: string[] = [];
    for (const file of FILES.filter((f) => !COMPOSITION_ROOTS.includes(f))) {
      const sf = ts.createSourceFile(file, text(file), ts.ScriptTarget.ES2022, true);
      const visit = (node: ts.Node): void => {
        if (
          ts.isPropertyAccessExpression(node) &&
          ts.isIdentifier(node.expression) &&
          node.expression.text === 'process' &&
          (node.name.text === 'env' || node.name.text === 'exit')
        ) {
          bad.push(
            `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1} process.${node.name.text}`,
          );
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
    assert.deepEqual(bad, []);
  });
});

describe('src/ functions', () => {
  test(`every function, method and arrow function is at most ${MAX_FUNCTION_LINES} lines`, () => {
    const long: string[] = [];
    for (const file of FILES) {
      const sf = ts.createSourceFile(file, text(file), ts.ScriptTarget.ES2022, true);
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
          const lines = sf.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
          const name = node.name?.getText(sf) ?? '(anonymous)';
          if (lines > MAX_FUNCTION_LINES) long.push(`${file}:${first + 1} ${name}: ${lines} lines`);
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
    assert.deepEqual(long, []);
  });
});

describe('the public API', () => {
  test('every export of src/index.ts has a JSDoc comment where it is declared', () => {
    const program = ts.createProgram([join(SRC, 'index.ts')], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      noEmit: true,
    });
    const checker = program.getTypeChecker();
    const index = program.getSourceFile(join(SRC, 'index.ts'))!;
    // index.ts comments a group of re-exports at once, so its own comments do not count: each name
    // needs one at its declaration, or at the re-export in src/ that names it (`Logger` from pino).
    const documented = (symbol: ts.Symbol): boolean => {
      for (let s: ts.Symbol | undefined = symbol; s;) {
        const decls = (s.declarations ?? []).filter((d) => d.getSourceFile() !== index);
        const own = decls.some(
          (d) => ts.getJSDocCommentsAndTags(ts.isExportSpecifier(d) ? d.parent.parent : d).length > 0,
        );
        if (own) return true;
        s = s.flags & ts.SymbolFlags.Alias ? checker.getImmediateAliasedSymbol(s) : undefined;
      }
      return false;
    };
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(index)!);
    assert.ok(exports.length > 20, `${exports.length} exports found`);
    assert.deepEqual(
      exports.filter((e) => !documented(e)).map((e) => e.name),
      [],
    );
  });
});

describe('the request path', () => {
  test('the page lists the step modules in the order src/http/app.ts runs them', () => {
    const app = text('http/app.ts');
    const moduleOf = new Map<string, string>();
    for (const m of app.matchAll(/import \{ ([^}]+) \} from '\.\/(steps\/[\w-]+)\.js'/g)) {
      const factory = m[1]!
        .split(',')
        .map((n) => n.trim())
        .find((n) => n.startsWith('create'));
      if (factory) moduleOf.set(factory, `${m[2]!}.ts`);
    }
    const body = app.slice(app.indexOf('export function createApp'));
    const order = [...body.matchAll(/\b(create\w+)\(/g)]
      .map((m) => moduleOf.get(m[1]!))
      .filter((p): p is string => p !== undefined);
    assert.equal(order.length, moduleOf.size, 'every imported step is used once');
    const documented = [...DOC.matchAll(/^\d+\. `(steps\/[\w-]+\.ts)`/gm)].map((m) => m[1]!);
    assert.deepEqual(documented, order);
    for (const p of order) assert.ok(existsSync(join(SRC, 'http', p)), p);
  });
});

describe('test/unit mirrors src/', () => {
  test('each test/unit/<path>.test.ts tests src/<path>.ts', () => {
    const unit = join(ROOT, 'test', 'unit');
    const orphans = walk(unit, '.test.ts')
      .map((p) => relative(unit, p).split(sep).join('/'))
      .filter((p) => !existsSync(join(SRC, p.replace(/\.test\.ts$/, '.ts'))));
    assert.deepEqual(orphans, []);
  });
});
