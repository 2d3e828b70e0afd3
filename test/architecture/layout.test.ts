import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Holds src/ to docs/architecture.md: the import rules, the packages that carry a layer, the
// composition roots, what the CLI loads, the 80-line limit on functions, the request path, and
// test/unit mirroring src/ (with the files that have no unit test, and why). The rules are
// tables here; the first tests check that the page says the same.

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
  ['upstream', 'upstream/'],
  ['proxy', 'proxy/'],
  ['observability', 'observability/'],
  ['usage', 'usage/'],
  ['events', 'events/'],
  ['admin-api', 'admin/router.ts'],
  ['admin', 'admin/'],
  ['dashboard-http', 'dashboard/app.ts'],
  ['dashboard', 'dashboard/'],
  ['http', 'http/'],
  ['demo', 'demo/'],
  ['server', 'server.ts'],
  ['supervisor', 'supervisor.ts'],
  ['tls', 'tls.ts'],
  ['cli', 'cli/'],
  ['bin', 'cli.ts'],
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
  upstream: FOUNDATION,
  proxy: [...FOUNDATION, 'request-state', 'signing', 'auth', 'guards', 'upstream'],
  observability: FOUNDATION,
  usage: [...FOUNDATION, 'redis'],
  events: [...FOUNDATION, 'redis', 'store', 'signing', 'observability'],
  'admin-api': [...FOUNDATION, 'store', 'admin', 'observability', 'events'],
  admin: [...FOUNDATION, 'store', 'auth', 'usage', 'events'],
  'dashboard-http': [...FOUNDATION, 'store', 'admin', 'admin-api', 'dashboard', 'observability'],
  dashboard: [...FOUNDATION, 'redis', 'store', 'admin', 'usage', 'events', 'observability'],
  http: [
    ...FOUNDATION,
    'store',
    'request-state',
    'signing',
    'auth',
    'guards',
    'ratelimit',
    'upstream',
    'proxy',
    'observability',
  ],
  demo: allBut('demo', 'cli', 'bin', 'index'),
  server: allBut('server', 'demo', 'cli', 'bin', 'index'),
  supervisor: [...FOUNDATION, 'observability'],
  tls: [...FOUNDATION, 'observability'],
  cli: allBut('cli', 'bin', 'index'),
  bin: ['cli'],
  index: allBut('index', 'demo', 'cli', 'bin'),
};

/** Packages that carry a layer with them, and the only paths (in src/) that may import them. */
const PACKAGES: Record<string, readonly string[]> = {
  express: ['http/', 'admin/router.ts', 'dashboard/app.ts', 'demo/backend.ts'],
  helmet: ['http/', 'admin/router.ts', 'dashboard/app.ts'],
  ioredis: [
    'redis/',
    'store/redis-store.ts',
    'store/redis-invalidations.ts',
    'ratelimit/',
    'usage/redis-usage-store.ts',
  ],
  pino: ['observability/logger.ts'],
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

/**
 * The modules a file loads when it runs: static imports and re-exports that are not `import type`
 * (under verbatimModuleSyntax `import { type X }` still loads its module), and, with `dynamic`,
 * `import()` calls with a literal specifier.
 */
function loadsOf(file: string, dynamic: boolean): string[] {
  const sf = ts.createSourceFile(file, text(file), ts.ScriptTarget.ES2022, true);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly)
      specs.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly)
      specs.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (
      dynamic &&
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      specs.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return specs;
}

/**
 * The packages that running `from` loads: its modules in src/ followed through what each loads
 * (static imports; `import()` calls too for the files in `dynamicIn`).
 */
function packagesLoadedFrom(from: string, dynamicIn: (file: string) => boolean): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [from];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of loadsOf(file, dynamicIn(file))) {
      if (spec.startsWith('.')) queue.push(resolveInSrc(file, spec));
      else if (packageOf(spec)) packages.add(packageOf(spec)!);
    }
  }
  return packages;
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

  test('express, helmet, ioredis and pino only where their layer is', () => {
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

describe('the CLI loads what a command runs when it runs', () => {
  /** What the gateway's request path carries: a management command has no use for it. */
  const SERVING = ['express', 'helmet', 'http-proxy-middleware', 'prom-client', 'pino', 'proxy-addr'];

  test('the bin, as `--help` runs it, loads commander and no other package', () => {
    assert.deepEqual([...packagesLoadedFrom('cli.ts', () => false)], ['commander']);
  });

  test('a management command (its session on the store, every store) loads nothing of the serving path', () => {
    const loaded = packagesLoadedFrom('cli/store-session.ts', (f) => f === 'cli/store-session.ts');
    for (const p of ['zod', 'yaml', 'ioredis']) assert.ok(loaded.has(p), `${p} is followed`);
    assert.deepEqual(
      [...loaded].filter((p) => SERVING.includes(p) || p.startsWith('@opentelemetry/')),
      [],
    );
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

/**
 * The files of src/ without their test/unit mirror, and where they are tested instead. A new file
 * gets a unit test, or a line here that says why not.
 */
const WITHOUT_UNIT_TEST: Record<string, string> = {
  'proxy/attempt.ts': 'one attempt of the route proxy: test/unit/proxy/route-proxy.test.ts on real sockets',
  'cli.ts': 'the bin: test/integration/cli*.test.ts run it as users do',
  'admin/usage-query.ts': 'the usage route: test/integration/usage.test.ts',
  'config/field-patterns.ts': 'the patterns of the field rules: test/unit/config/fields.test.ts',
  'config/schema.ts': 'through the loader: test/unit/config/load.test.ts',
  'events/admin.ts': 'the webhook routes: test/integration/webhooks.test.ts',
  'events/events.ts': 'the wiring: test/integration/webhooks.test.ts',
  'events/metrics.ts': 'its counters are read by test/integration/webhooks.test.ts',
  'events/redis-store.ts':
    'the events store contract: test/unit/events/store.test.ts, test/scale/events-cluster.test.ts',
  'events/schemas.ts': 'through the bus and the admin routes: test/unit/events/bus.test.ts, webhooks.test.ts',
  'events/send.ts': 'against real receivers: test/unit/events/dispatcher.test.ts, webhooks.test.ts',
  'events/types.ts': 'types only',
  'dashboard/store.ts': 'the dashboard store contract: test/integration/dashboard-store.test.ts',
  'dashboard/app.ts': 'over HTTP: test/integration/dashboard.test.ts, test/browser/dashboard.test.ts',
  'dashboard/mail.ts': 'against a real SMTP server: test/integration/dashboard.test.ts',
  'dashboard/redis-store.ts': 'the dashboard store contract: test/integration/dashboard-store.test.ts',
  'demo/backend.ts': 'test/integration/demo.test.ts and the fake upstreams of hardening.test.ts',
  'demo/run-demo.ts': 'test/integration/demo.test.ts, test/browser/console.test.ts',
  'http/deny.ts': 'a helper of the steps: test/unit/http/steps/',
  'http/forwarded.ts': 'a helper of the steps: test/unit/http/steps/',
  'http/key-in-url.ts': 'a helper of the steps: test/unit/http/steps/url-key-guard.test.ts',
  'http/option-checks.ts': 'a helper of createApp: test/unit/http/app.test.ts',
  'http/pipeline.ts': 'runs every step: test/unit/http/app.test.ts',
  'http/request-url.ts': 'a helper of the steps: test/unit/http/steps/',
  'http/route-proxies.ts': 'a helper of the forward step: test/unit/http/steps/forward.test.ts',
  'http/steps/presented-key-in-url.ts': 'test/integration/url-key-material.test.ts',
  'observability/cluster-metrics.ts': 'serve --workers: test/integration/operations.test.ts',
  'ratelimit/lease-limiter.ts': 'against Redis: test/integration/lease-limiter.test.ts',
  'redis/connection.ts': 'every Redis test; Cluster and Sentinel: test/scale/',
  'request-state.ts': 'types and the state constructor, used by every step test',
  'server.ts': 'the wiring: every integration test starts a gateway with it',
  'store/memory-store.ts': 'the store contract: test/integration/store-contract.test.ts',
  'store/redis-invalidations.ts': 'test/integration/store-contract.test.ts, redis-flap.test.ts',
  'store/redis-store.ts': 'the store contract: test/integration/store-contract.test.ts',
  'usage/usage-store.ts': 'test/unit/usage/recorder.test.ts',
};

describe('test/unit mirrors src/', () => {
  const unitTestOf = (file: string) => join(ROOT, 'test', 'unit', file.replace(/\.ts$/, '.test.ts'));

  test('every file of src/ has its unit test, or is listed in WITHOUT_UNIT_TEST with where it is tested', () => {
    assert.deepEqual(
      FILES.filter((f) => !existsSync(unitTestOf(f)) && !(f in WITHOUT_UNIT_TEST)),
      [],
      'new files without a unit test',
    );
    assert.deepEqual(
      Object.keys(WITHOUT_UNIT_TEST).filter((f) => !FILES.includes(f) || existsSync(unitTestOf(f))),
      [],
      'listed, but gone or unit-tested now: remove the line',
    );
  });

  test('each test/unit/<path>.test.ts tests src/<path>.ts', () => {
    const unit = join(ROOT, 'test', 'unit');
    const orphans = walk(unit, '.test.ts')
      .map((p) => relative(unit, p).split(sep).join('/'))
      .filter((p) => !existsSync(join(SRC, p.replace(/\.test\.ts$/, '.ts'))));
    assert.deepEqual(orphans, []);
  });
});
