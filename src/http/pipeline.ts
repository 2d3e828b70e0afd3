import type { RequestHandler } from 'express';

/**
 * Runs middleware steps in order with Express semantics: `next()` goes on, `next(err)` and a
 * rejected promise go to Express's error handling. One Express layer for the whole list, so
 * Express's per-layer routing does not run for each step.
 *
 * @example
 * app.use(runInOrder([requestContext, authenticate, forward]));
 */
export function runInOrder(steps: RequestHandler[]): RequestHandler {
  return function gatewayPipeline(req, res, done) {
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') return done(err);
      const step = steps[i++];
      if (!step) return done();
      try {
        const r = step(req, res, next) as unknown;
        if (r instanceof Promise) r.catch(done);
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}

/**
 * The headers a request-independent middleware (such as helmet) sets, captured once by running it
 * on a stand-in request. Throws when the middleware does not call `next` synchronously.
 */
export function captureHeaders(mw: RequestHandler): [string, string][] {
  const headers: [string, string][] = [];
  const res = {
    setHeader: (name: string, value: string | number | string[]) => void headers.push([name, String(value)]),
    removeHeader: () => undefined,
    getHeader: () => undefined,
  };
  let called = false;
  mw({ headers: {}, method: 'GET', url: '/' } as never, res as never, () => (called = true));
  if (!called) throw new Error('security header middleware did not complete synchronously');
  return headers;
}
