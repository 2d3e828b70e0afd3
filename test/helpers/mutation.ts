/**
 * True when this test process runs against code instrumented by StrykerJS (`npm run test:mutation`):
 * the tap runner preloads a hook that defines the `__stryker__` global before any test module.
 * Instrumented code is several times slower and not uniformly so, and every mutant reruns the
 * whole file, so CPU-time comparisons are skipped and property runs are fewer there.
 */
export const underMutation = process.env.STRYKER_NAMESPACE !== undefined || '__stryker__' in globalThis;

/**
 * The number of fast-check runs for a property: `runs` normally, a twentieth of it (at least 100)
 * under mutation testing, where the examples and the smaller sample still reach every branch.
 */
export function propertyRuns(runs: number): number {
  return underMutation ? Math.max(100, Math.ceil(runs / 20)) : runs;
}
