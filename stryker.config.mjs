// Mutation testing of the security core (docs/testing.md, "Mutation testing"). Run with
// `npm run test:mutation`; not part of CI.
//
// StrykerJS has no node:test runner: the tap runner starts each test file as its own process
// (node:test prints TAP when its output is not a terminal) and, with perTest coverage, runs a
// mutant only against the test files whose run reached it. Loading tsx costs most of a small
// file's run, so the sandbox (instrumented sources and the unit tests) is first transpiled once
// with esbuild into .mutation-build/ and the tests run as plain JavaScript.

const BUILD = '.mutation-build';

// Test files outside test/unit that a folder's run also uses: code whose tests need more than one
// process or a real server (LeaseLimiter: several instances on one real redis-server). They are
// transpiled with the rest and run in the whole run too.
const EXTRA_TESTS = {
  ratelimit: ['test/integration/lease-limiter.test.ts'],
};
const js = (ts) => `${BUILD}/${ts.replace(/\.ts$/, '.js')}`;

// One folder (or file) of src at a time, against its own unit tests (and its EXTRA_TESTS) only:
// MUTATION_FOLDER=guards (or auth, proxy, ratelimit, signing.ts, admin/service.ts) npx stryker run --concurrency 1.
const FOLDER = process.env.MUTATION_FOLDER;
const one = FOLDER
  ? {
      mutate: [FOLDER.endsWith('.ts') ? `src/${FOLDER}` : `src/${FOLDER}/**/*.ts`],
      testFiles: [
        `${BUILD}/test/unit/${FOLDER.replace(/\.ts$/, '')}{,/**/*}.test.js`,
        ...(EXTRA_TESTS[FOLDER] ?? []).map(js),
      ],
      reports: `reports/mutation/${FOLDER.replace(/[/.]/g, '-')}`,
    }
  : null;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'tap',
  plugins: ['@stryker-mutator/tap-runner'],
  buildCommand:
    `esbuild src/**/*.ts test/unit/**/*.ts test/helpers/**/*.ts ${Object.values(EXTRA_TESTS).flat().join(' ')} ` +
    `--outdir=${BUILD} --outbase=. ` +
    '--format=esm --platform=node --target=node20 --log-level=warning',
  tap: {
    // These read config/, docs/ or deploy/ next to their source, and cover none of the mutated files.
    testFiles: one?.testFiles ?? [
      `${BUILD}/test/unit/**/!(config|load|errors|deploy-manifests).test.js`,
      ...Object.values(EXTRA_TESTS).flat().map(js),
    ],
    nodeArgs: [],
    forceBail: true,
  },
  mutate: one?.mutate ?? [
    'src/auth/**/*.ts',
    'src/guards/**/*.ts',
    'src/proxy/**/*.ts',
    'src/signing.ts',
    'src/ratelimit/**/*.ts',
    'src/admin/service.ts',
  ],
  coverageAnalysis: 'perTest',
  // The machine is shared: two test processes at a time at most.
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `${one?.reports ?? 'reports/mutation'}/index.html` },
  jsonReporter: { fileName: `${one?.reports ?? 'reports/mutation'}/mutation.json` },
  tempDirName: '.stryker-tmp',
  ignorePatterns: [BUILD, 'dist', 'reports', 'bench/results', 'coverage', '*.log', 'test/scale'],
  thresholds: { high: 90, low: 85, break: null },
};
