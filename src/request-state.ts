import type { Readable } from 'node:stream';
import type { Company, KeyRecord } from './store/types.js';
import type { ErrorCode } from './errors.js';

// A neutral home: both the HTTP pipeline (src/http) and the proxy wiring (src/proxy) read and write
// this state, and neither may import the other's folder for it.

/**
 * What the gateway learns about a request as it moves down the pipeline. Set as `req.gw` by the
 * first step (request context); every later step and the route proxy may read and add to it.
 */
export interface RequestState {
  id: string;
  /** process.hrtime.bigint() at arrival. */
  start: bigint;
  /** Client address (peer, or from X-Forwarded-For when the peer is a trusted proxy). */
  clientIp: string;
  /** The direct peer is a configured trusted proxy (its X-Forwarded-* are believed). */
  peerTrusted: boolean;
  /** Matched route prefix ('-' before matching, so log and metric labels stay bounded). */
  route: string;
  key?: KeyRecord;
  company?: Company;
  /** The gateway's own error code when it answered the request itself. */
  error?: ErrorCode;
  /** Why authentication failed (metrics and logs; never the key). */
  denyReason?: string;
  /** The URL carried a key, or had more parts than the key guard reads: the path is redacted in the log line. */
  keyInUrl?: boolean;
  /** The URL key guard read the whole URL and found nothing: the access line need not read it again. */
  urlGuardPassed?: boolean;
  /** The URL holds no material of the presented (authenticated) key: the access line need not read it again. */
  urlHoldsNoPresentedKey?: boolean;
  /**
   * The body the route proxy sends instead of reading the request stream (a step that read part of
   * it, such as the method-override body check). When it fails, the upstream request is cut and the
   * client answered with `error`, if set.
   */
  body?: Readable;
  upstreamTimedOut?: boolean;
  /** Why the upstream request failed (a connect or socket error): the access line logs its cause. */
  upstreamError?: Error;
  /** The client sent `Connection: close`: its connection is closed after the response. */
  clientClose?: boolean;
  bodyTooLarge?: boolean;
}

declare module 'node:http' {
  interface IncomingMessage {
    /** Gateway request state, set by the first middleware. */
    gw: RequestState;
  }
}
