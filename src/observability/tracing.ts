import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type * as Api from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { safeMessage } from '../errors.js';
import type { Logger } from './logger.js';

// OpenTelemetry tracing, off unless an OTLP endpoint is configured. When off, nothing of
// OpenTelemetry is loaded and every hook in the request path is skipped behind `tracing.on`.
// When on, the SDK is imported here, once, at start.

/** What the request span reads from the request state (`req.gw` satisfies it). */
export interface TracedRequest {
  id: string;
  route: string;
  clientIp: string;
  /** The direct peer is a trusted proxy: only then is its `traceparent` continued. */
  peerTrusted: boolean;
  company?: { id: string };
  key?: { id: string };
  error?: string;
  denyReason?: string;
}

/** A child span as the steps hold it; opaque. */
export interface ChildSpan {
  readonly kind: 'child';
}

/**
 * The request path's tracing hooks. Every call site guards with `tracing.on` (one boolean): when
 * tracing is off no hook runs and nothing is allocated.
 */
export interface Tracing {
  readonly on: boolean;
  /**
   * Starts the request's server span (step 1). `holdsKey` is the request's key-material check: a
   * trusted proxy's `tracestate` entries it finds key material in are dropped.
   */
  startRequest(state: TracedRequest, req: IncomingMessage, holdsKey?: (text: string) => boolean): void;
  /** The trace id of the request's server span (for the access line), before `endRequest`. */
  traceIdOf(state: TracedRequest): string | undefined;
  /** Ends it with route, company, key, decision and status, and any child span still open. */
  endRequest(state: TracedRequest, status: number): void;
  /** A child span of the request: the key lookup, the limiter. */
  startChild(state: TracedRequest, name: string): ChildSpan;
  /** Ends a child span with its outcome (`ok`, a registry code, `limited`...). */
  endChild(span: ChildSpan, outcome: string): void;
  /** Starts the upstream call's client span and writes its `traceparent` into the upstream headers. */
  startUpstream(state: TracedRequest, headers: IncomingHttpHeaders): void;
  /** Exports what is buffered. */
  forceFlush(): Promise<void>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

const noop = (): void => undefined;
const resolved = (): Promise<void> => Promise.resolve();
const NO_CHILD: ChildSpan = { kind: 'child' };

/** Tracing off: `on` is false, so no hook is ever called. */
export const TRACING_OFF: Tracing = Object.freeze({
  on: false,
  startRequest: noop,
  traceIdOf: () => undefined,
  endRequest: noop,
  startChild: () => NO_CHILD,
  endChild: noop,
  startUpstream: noop,
  forceFlush: resolved,
  shutdown: resolved,
});

/** The OTLP protocols this build can export with. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** What the `OTEL_*` environment asks for, or the problem with it. */
export type TracingSettings =
  | { ok: true; enabled: false }
  | { ok: true; enabled: true; protocol: OtlpProtocol }
  | { ok: false; problem: string };

/**
 * Reads the standard `OTEL_*` variables that decide whether and how to export: on when
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and neither
 * `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`); the protocol from
 * `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL` (default `http/protobuf`).
 * `grpc` and anything else is a problem, named with the variable (values are not echoed).
 *
 * @example
 * tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }) // { ok: true, enabled: true, protocol: 'http/protobuf' }
 */
export function tracingSettings(env: Readonly<Record<string, string | undefined>>): TracingSettings {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { ok: true, enabled: false };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim().toLowerCase());
  if (exporters.includes('none')) return { ok: true, enabled: false };
  if (exporters.some((e) => e !== '' && e !== 'otlp'))
    return { ok: false, problem: 'OTEL_TRACES_EXPORTER: only otlp (or none) is supported' };
  const endpointVar = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
    : env.OTEL_EXPORTER_OTLP_ENDPOINT
      ? 'OTEL_EXPORTER_OTLP_ENDPOINT'
      : null;
  if (endpointVar === null) return { ok: true, enabled: false };
  if (!/^https?:\/\/[^/\s]/i.test(env[endpointVar]!.trim()))
    return { ok: false, problem: `${endpointVar}: must be an http:// or https:// URL` };
  const protocolVar = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (env[protocolVar] || 'http/protobuf').trim();
  if (protocol === 'http/protobuf' || protocol === 'http/json') return { ok: true, enabled: true, protocol };
  if (protocol === 'grpc')
    return {
      ok: false,
      problem: `${protocolVar}=grpc: the gRPC exporter is not installed; use http/protobuf (the default, port 4318) or http/json`,
    };
  return { ok: false, problem: `${protocolVar}: must be http/protobuf or http/json` };
}

/** Where spans go: the environment's OTLP endpoint, or an exporter given by the embedder (tests). */
export interface TracingOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Export here instead of OTLP; tracing is then on whatever the environment says. */
  exporter?: SpanExporter;
  logger: Logger;
}

/**
 * Tracing from the `OTEL_*` environment ({@link tracingSettings}), or {@link TRACING_OFF}. When on,
 * loads the SDK (BasicTracerProvider, BatchSpanProcessor, which reads `OTEL_BSP_*`), the OTLP
 * exporter of the protocol (which reads the endpoint, headers, timeout and compression variables),
 * and the resource from `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (default service name
 * `notify-gateway`). Throws on a settings problem.
 */
export async function createTracing(opts: TracingOptions): Promise<Tracing> {
  const settings = tracingSettings(opts.env);
  if (!settings.ok) throw new Error(`tracing: ${settings.problem}`);
  if (!settings.enabled && !opts.exporter) return TRACING_OFF;
  const [api, core, resources, sdk] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  const exporter = opts.exporter ?? (await createOtlpExporter(settings.enabled ? settings.protocol : null));
  // Export failures surface through the SDK's global error handler: one warning each, message masked.
  core.setGlobalErrorHandler((err) => opts.logger.warn({ error: safeMessage(err) }, 'trace export failed'));
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'notify-gateway' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.BasicTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  opts.logger.info(
    { protocol: opts.exporter ? 'custom' : settings.enabled && settings.protocol },
    'tracing on (OpenTelemetry)',
  );
  return new ActiveTracing(api, new core.W3CTraceContextPropagator(), provider);
}

async function createOtlpExporter(protocol: OtlpProtocol | null): Promise<SpanExporter> {
  // The exporters read OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, compression) themselves.
  if (protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/** One traced request: its server span, its context (the parent of its children) and open children. */
interface RequestTrace {
  method: string;
  span: Api.Span;
  ctx: Api.Context;
  children: Api.Span[];
}

type Provider = {
  getTracer(name: string): Api.Tracer;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
};

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
const UPSTREAM_FAILURES = new Set(['UPSTREAM_UNREACHABLE', 'UPSTREAM_TIMEOUT', 'PAYLOAD_TOO_LARGE']);

/**
 * Header getters for `extract`: both read `traceparent` as is; the untrusted one sees no
 * `tracestate`, the trusted one sees it without entries that may carry key material.
 */
const UNTRUSTED_STATE_GETTER: Api.TextMapGetter<IncomingHttpHeaders> = {
  keys: (headers) => Object.keys(headers).filter((k) => k !== 'tracestate'),
  get: (headers, key) => (key === 'tracestate' ? undefined : headers[key]),
};
const trustedStateGetter = (
  holdsKey?: (text: string) => boolean,
): Api.TextMapGetter<IncomingHttpHeaders> => ({
  keys: (headers) => Object.keys(headers),
  get: (headers, key) => {
    const v = headers[key];
    return key === 'tracestate' && v !== undefined ? scrubTraceState(v, holdsKey) : v;
  },
});

/**
 * A tracestate without its entries that could hold a key (threat model: T5): one the request's key-material check
 * (`holdsKey`, the same as for forwarded headers) finds material in, and, more broadly, one with
 * `nk_` or a run of 32 or more letters and digits (a key's random part: a dropped vendor entry
 * costs nothing, a kept key leaks it). Undefined when nothing is left.
 */
export function scrubTraceState(
  value: string | string[],
  holdsKey: (text: string) => boolean = () => false,
): string | undefined {
  const entries = (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '' && !KEY_MATERIAL.test(e) && !holdsKey(e));
  return entries.length ? entries.join(',') : undefined;
}
const KEY_MATERIAL = /nk_|[0-9A-Za-z]{32}/;

class ActiveTracing implements Tracing {
  readonly on = true;
  private readonly tracer: Api.Tracer;
  private readonly requests = new WeakMap<TracedRequest, RequestTrace>();

  constructor(
    private readonly api: typeof Api,
    private readonly propagator: Api.TextMapPropagator,
    private readonly provider: Provider,
  ) {
    this.tracer = provider.getTracer('notify-gateway');
  }

  startRequest(state: TracedRequest, req: IncomingMessage, holdsKey?: (text: string) => boolean): void {
    const { api } = this;
    const method = METHODS.has(req.method ?? '') ? req.method! : '_OTHER';
    // A client's traceparent is continued only from a trusted proxy (server.trustedProxies), like
    // every other client-asserted header: anyone else could join or force-sample our traces. It
    // is kept as a link, so the client's trace can still be found from ours.
    // A client's tracestate is its own text, which the SDK would export (link or parent) and
    // propagate upstream: from an untrusted peer it is dropped whole, from a trusted proxy only
    // entries that could carry key material are (a key pasted there is in no span, invariant 1).
    const getter = state.peerTrusted ? trustedStateGetter(holdsKey) : UNTRUSTED_STATE_GETTER;
    const incoming = api.trace.getSpanContext(this.propagator.extract(api.ROOT_CONTEXT, req.headers, getter));
    const valid = incoming !== undefined && api.isSpanContextValid(incoming);
    const parent =
      valid && state.peerTrusted ? api.trace.setSpanContext(api.ROOT_CONTEXT, incoming) : api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      method,
      {
        kind: api.SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'gateway.request_id': state.id },
        ...(valid && !state.peerTrusted ? { links: [{ context: incoming }] } : {}),
      },
      parent,
    );
    this.requests.set(state, { method, span, ctx: api.trace.setSpan(api.ROOT_CONTEXT, span), children: [] });
  }

  traceIdOf(state: TracedRequest): string | undefined {
    return this.requests.get(state)?.span.spanContext().traceId;
  }

  endRequest(state: TracedRequest, status: number): void {
    const t = this.requests.get(state);
    if (!t) return;
    this.requests.delete(state);
    const failed = status === 0 || status >= 500;
    // Children still open: the upstream call (it lasts until the answer is sent), or a lookup
    // that threw (store outage).
    const upstreamFailed = state.error !== undefined && UPSTREAM_FAILURES.has(state.error);
    for (const child of t.children) {
      if (!child.isRecording()) continue; // ended already
      if (upstreamFailed || failed)
        child.setStatus({ code: this.api.SpanStatusCode.ERROR, message: state.error });
      child.end();
    }
    const route = state.route === '-' ? undefined : state.route;
    if (route) t.span.updateName(`${t.method} ${route}`);
    t.span.setAttributes({
      'http.route': route,
      'http.response.status_code': status,
      'client.address': state.clientIp,
      'gateway.company_id': state.company?.id,
      'gateway.key_id': state.key?.id,
      'gateway.decision': state.error ?? (state.key ? 'forwarded' : 'answered'),
      'gateway.deny_reason': state.denyReason,
    });
    if (failed) t.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: state.error ?? 'aborted' });
    t.span.end();
  }

  startChild(state: TracedRequest, name: string): ChildSpan {
    const t = this.requests.get(state);
    if (!t) return NO_CHILD;
    const span = this.tracer.startSpan(name, { kind: this.api.SpanKind.INTERNAL }, t.ctx);
    t.children.push(span);
    return span as unknown as ChildSpan;
  }

  endChild(child: ChildSpan, outcome: string): void {
    if (child === NO_CHILD) return;
    const span = child as unknown as Api.Span;
    span.setAttribute('gateway.outcome', outcome);
    span.end();
  }

  startUpstream(state: TracedRequest, headers: IncomingHttpHeaders): void {
    const t = this.requests.get(state);
    if (!t) return;
    const span = this.tracer.startSpan(
      'upstream',
      { kind: this.api.SpanKind.CLIENT, attributes: { 'http.route': state.route } },
      t.ctx,
    );
    t.children.push(span);
    // The upstream continues our trace, never the client's: its copies are replaced.
    delete headers.traceparent;
    delete headers.tracestate;
    this.propagator.inject(
      this.api.trace.setSpan(this.api.ROOT_CONTEXT, span),
      headers,
      this.api.defaultTextMapSetter,
    );
  }

  forceFlush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
