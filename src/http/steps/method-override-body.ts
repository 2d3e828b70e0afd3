import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { RequestHandler } from 'express';
import {
  createOverrideScanner,
  formBodyKind,
  OverrideNames,
  type OverrideScanner,
} from '../../guards/method-override.js';
import { deny } from '../deny.js';
import { assertNonNegativeInteger } from '../option-checks.js';
import { pathOf } from '../request-url.js';
import { allowsRequest } from './scope-check.js';

/** What a route without `methods` forwards (config/schema.ts): an override can reach no other. */
const EVERY_METHOD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export interface MethodOverrideBodyOptions {
  /** `methodOverride.params`: the names a body may not carry where methods are restricted. */
  names: readonly string[];
  /** The configured routes: a route that lists `methods` restricts them. */
  routes: readonly { prefix: string; methods?: readonly string[] | undefined }[];
  /** `methodOverride.bodyScanLimitBytes`: a body ending within it reaches the upstream only once checked. */
  bodyScanLimitBytes: number;
  /** `server.bodyLimitBytes` (0 = none): counted here too, since this step reads the body first. */
  bodyLimitBytes: number;
}

/**
 * Step 13, a method override in the body (threat model: T2; T4 for its memory), only where it could change something:
 * the route lists `methods`, or the company's or the key's scope for this path does not allow every
 * method. Everywhere else, and for bodies that are neither forms nor JSON, the body streams
 * untouched. Where it applies, the body is read as it streams past (`createOverrideScanner`: a
 * window of about 1 KiB carried between chunks), never held whole:
 * - a body that ends within `bodyScanLimitBytes` is held, checked, then forwarded (with its length);
 *   an override is 400 `METHOD_OVERRIDE_IN_BODY` and nothing reaches the upstream;
 * - a longer body is forwarded as it streams, still checked: an override found later cuts the
 *   upstream request (which then never sees a complete body) and answers 400 if nothing was answered;
 * - a compressed or non-ASCII-charset form or JSON body is 415 `UNSUPPORTED_FORM_ENCODING`.
 * Sends `100 Continue` itself when the client waits for it. Needs `req.gw` with route, company, key.
 *
 * @example
 * const methodOverrideBody = createMethodOverrideBody({ names: ['_method'], routes: config.routes, bodyScanLimitBytes: 65536, bodyLimitBytes: 0 });
 */
export function createMethodOverrideBody(opts: MethodOverrideBodyOptions): RequestHandler {
  assertNonNegativeInteger(opts.bodyScanLimitBytes, 'bodyScanLimitBytes');
  assertNonNegativeInteger(opts.bodyLimitBytes, 'bodyLimitBytes');
  const names = new OverrideNames(opts.names);
  const restricted = new Set(
    opts.routes
      .filter((r) => r.methods && !EVERY_METHOD.every((m) => allows(r.methods!, m)))
      .map((r) => r.prefix),
  );
  const hold =
    opts.bodyLimitBytes > 0
      ? Math.min(opts.bodyScanLimitBytes, opts.bodyLimitBytes)
      : opts.bodyScanLimitBytes;
  return function methodOverrideBody(req, res, next) {
    if (names.size === 0 || !mayWiden(req, restricted)) return next();
    const kind = formBodyKind(req.headers);
    if (kind === 'none') return next();
    if (kind === 'unreadable') return deny(req, res, 'UNSUPPORTED_FORM_ENCODING');
    // The client waited for our go: it is authenticated, in scope and within limits.
    if (/100-continue/i.test(req.headers.expect ?? '')) {
      res.writeContinue();
      delete req.headers.expect;
    }
    const guard = new OverrideGuard(createOverrideScanner(kind, names), hold, opts.bodyLimitBytes);
    let handedOn = false;
    const handOn = () => {
      if (handedOn) return;
      handedOn = true;
      req.gw.body = guard;
      next();
    };
    guard.once('passing', handOn);
    guard.once('checked', (length: number) => {
      // Held whole: the upstream gets it framed by its length (a chunked body too).
      delete req.headers['transfer-encoding'];
      req.headers['content-length'] = String(length);
      handOn();
    });
    guard.once('error', (err: Error) => {
      req.unpipe(guard);
      req.gw.error = err.message === 'PAYLOAD_TOO_LARGE' ? 'PAYLOAD_TOO_LARGE' : 'METHOD_OVERRIDE_IN_BODY';
      if (req.gw.error === 'PAYLOAD_TOO_LARGE') req.gw.bodyTooLarge = true;
      // Handed on: the route proxy cuts the upstream request and answers (or closes) the client.
      if (!handedOn && !res.headersSent) deny(req, res, req.gw.error);
    });
    req.once('close', () => {
      // The client went away before the body was checked: nothing is forwarded or answered.
      if (!handedOn && !req.complete) guard.destroy();
    });
    req.pipe(guard);
  };
}

function allows(methods: readonly string[], m: string): boolean {
  return methods.includes(m) || (m === 'HEAD' && methods.includes('GET'));
}

/** Whether an override could reach a method the route or a scope does not let this request use. */
function mayWiden(req: IncomingMessage, restricted: ReadonlySet<string>): boolean {
  const st = req.gw;
  if (restricted.has(st.route)) return true;
  const c = st.company?.scopes ?? null;
  const k = st.key?.scopes ?? null;
  if (c === null && k === null) return false;
  const path = pathOf(req.url ?? '/');
  return !EVERY_METHOD.every(
    (m) => allowsRequest(c, st.route, m, path) && allowsRequest(k, st.route, m, path),
  );
}

/**
 * Passes a body through the override scanner: holds it up to `hold` bytes (then emits `checked`
 * with its length at the end, or `passing` once it is longer and flows on), errors with
 * `METHOD_OVERRIDE_IN_BODY` when the scanner sees one, or `PAYLOAD_TOO_LARGE` past `limit`. Once
 * passing, the latest chunk is held back until the next one, and the last until the scanner has
 * read the end: the upstream never gets a complete body before the check is done.
 */
class OverrideGuard extends Transform {
  private held: Buffer[] = [];
  private size = 0;
  private passing = false;
  private last: Buffer | null = null;
  constructor(
    private readonly scanner: OverrideScanner,
    private readonly hold: number,
    private readonly limit: number,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.limit > 0 && this.size > this.limit) return cb(new Error('PAYLOAD_TOO_LARGE'));
    if (this.scanner.write(chunk)) return cb(new Error('METHOD_OVERRIDE_IN_BODY'));
    if (this.passing) {
      const previous = this.last;
      this.last = chunk;
      return cb(null, previous ?? undefined);
    }
    this.held.push(chunk);
    if (this.size > this.hold) {
      this.passing = true;
      this.last = this.held.pop()!;
      for (const c of this.held.splice(0)) this.push(c);
      this.emit('passing');
    }
    cb();
  }
  override _flush(cb: TransformCallback): void {
    if (this.scanner.end()) return cb(new Error('METHOD_OVERRIDE_IN_BODY'));
    for (const c of this.held.splice(0)) this.push(c);
    if (this.last !== null) this.push(this.last);
    if (!this.passing) this.emit('checked', this.size);
    cb();
  }
}
