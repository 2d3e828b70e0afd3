import { Agent as HttpAgent, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { GatewayConfig } from '../config/schema.js';
import { createRouteProxy, type SecurityHeadersMode } from '../proxy/route-proxy.js';
import { signGatewayRequest } from '../signing.js';
import '../request-state.js';

export interface RouteProxies {
  /** Each route's proxy by route prefix. */
  proxies: Map<string, ReturnType<typeof createRouteProxy>>;
  /** Destroys the keep-alive agents' pooled sockets (shutdown). */
  closeAgents(): void;
}

export interface RouteProxiesOptions {
  routes: GatewayConfig['routes'];
  upstream: Pick<GatewayConfig['upstream'], 'maxSockets' | 'keepAliveMs' | 'timeoutMs'>;
  /** 0 = no limit; enforced on streamed bodies by the proxy. */
  bodyLimitBytes: number;
  /** Sign each request as it leaves; `null` = no signature. */
  signing: { secret: string; header: string } | null;
  /** The upstream answered with headers after `seconds`. */
  onUpstreamResponse: (req: IncomingMessage, seconds: number) => void;
  /** The gateway's security headers on proxied answers (`securityHeaders.proxied`, their names). */
  securityHeaders: { mode: SecurityHeadersMode; names: readonly string[] };
}

/**
 * One proxy per route over two shared keep-alive agents (HTTP and HTTPS), signing requests on their
 * way out when signing is on.
 *
 * @example
 * const { proxies, closeAgents } = createRouteProxies({ routes, upstream, bodyLimitBytes, signing: null, onUpstreamResponse });
 */
export function createRouteProxies(opts: RouteProxiesOptions): RouteProxies {
  const agentOptions = {
    keepAlive: true,
    maxSockets: opts.upstream.maxSockets,
    keepAliveMsecs: opts.upstream.keepAliveMs,
  };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent(agentOptions);
  const signProxyRequest = opts.signing ? createProxyRequestSigner(opts.signing) : null;
  const proxies = new Map(
    opts.routes.map((r) => [
      r.prefix,
      createRouteProxy({
        target: r.targets[0]!.url,
        timeoutMs: r.timeoutMs ?? opts.upstream.timeoutMs,
        bodyLimitBytes: opts.bodyLimitBytes,
        agent: r.targets[0]!.url.startsWith('https:') ? httpsAgent : httpAgent,
        onUpstreamResponse: opts.onUpstreamResponse,
        securityHeaders: opts.securityHeaders,
        // Signed here, on the request as it leaves: proxyReq.path is what the upstream receives
        // (target base path joined, as http-proxy builds it).
        ...(signProxyRequest ? { onProxyReq: signProxyRequest } : {}),
      }),
    ]),
  );
  return {
    proxies,
    closeAgents() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/** Sets the gateway signature header on an outgoing request; needs `req.gw` with key and company. */
function createProxyRequestSigner(signing: { secret: string; header: string }) {
  return function signProxyRequest(proxyReq: ClientRequest, req: IncomingMessage): void {
    const st = req.gw;
    proxyReq.setHeader(
      signing.header,
      signGatewayRequest(signing.secret, {
        method: proxyReq.method,
        target: proxyReq.path,
        companyId: st.company!.id,
        keyId: st.key!.id,
        tier: st.company!.tier,
      }),
    );
  };
}
