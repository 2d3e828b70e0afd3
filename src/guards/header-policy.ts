// Which client headers never reach the upstream, from any peer (threat model: T3, a client forging
// what a proxy or the gateway would assert; invariant 9). One reviewed table: a name or prefix is
// compared with the header name lowercased, `_` and every run of separators read as `-`
// (`X_Real.IP` is `x-real-ip`); a pattern is tested on the name's letters and digits only
// (`X-Company.Id`, `XCompanyId` both read `xcompanyid`). A deny list cannot name every header an
// upstream might trust: allow-list mode (`headers.allowFromClients`) is the only complete answer.

/** One row: what it matches, and why (where the header family is documented). */
export interface HeaderRule {
  match: { name: string } | { prefix: string } | { pattern: RegExp };
  reason: string;
}

/** RFC 9110 §7.6.1 hop-by-hop headers, and credentials or settings for this hop only. */
// prettier-ignore
export const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect',
  'proxy-authorization', 'proxy-authenticate', 'proxy-authentication-info', 'http2-settings'];

/** Words that may lead a subject: `X-Auth-User`, `X-Forwarded-Email`, `X-End-User-Id`, `X-Gw-Org`. */
const LEAD =
  '(?:auth|authenticated|authorized|verified|forwarded|remote|proxy|api|end|enduser|loggedin|current|real|trusted|upstream|gateway|gw|iam|sso|oauth2?|saml|ldap|token)';
/** Words that make a URL, host or path an override: `Request-Uri`, `Base-Url`, `X-Backend-Host`. */
const OVERRIDE =
  '(?:original|rewrite|rewritten|request|base|proxy|destination|real|backend|target|upstream|override|full|absolute|raw|forwarded|matched|replaced|invoke)';
/** Suffixes that make a tenant word an identifier (`-Id`, `-Name`, `-Slug`...). */
const ID = '(?:ids?|names?|slugs?|domains?|uu?ids?|guids?|codes?|refs?|tier|plan)';
const ADDRESS_WORD =
  '(?:clients?|real|true|remote|source|src|origin|originating|original|user|peer|socket|connecting|connection|viewer|cluster|forward(?:ed|er|ing)?|proxy|end|custom|wap|cdn|visitor)';
const p = (source: string) => ({ pattern: new RegExp(`^(?:${source})$`) });

/** The reviewed table. Every row is dropped from every peer, trusted proxies included. */
// prettier-ignore
export const CLIENT_HEADER_POLICY: readonly HeaderRule[] = [
  ...HOP_BY_HOP.map((name) => ({ match: { name }, reason: 'hop-by-hop or proxy-only (RFC 9110 §7.6.1)' })),
  // Who the request is for and what it may do: only the gateway says (look-alikes of its trusted
  // names are dropped by header-scrub.ts, which knows the configured names).
  { match: { pattern: /company|companies|tenant/ }, reason: 'tenant identity: X-Company-Id in every spelling, X-Tenant-*' },
  { match: p(`x?${LEAD}{0,2}(?:(?:org|organi[sz]ation|account|customer|project|workspace|team|merchant|partner|subscription|realm|namespace|owner|caller|actor|requester|business|vendor|seller|brand|tier|plan|internal|trusted|bypass)s?${ID}?|(?:app|application|site|shop|store|domain)s?${ID}|clients?(?:ids?|uu?ids?)?)`), reason: 'tenant, owner, tier and trust flags (X-Org-Id, X-Owner, X-Subscription-Tier, X-Bypass, X-App-Id); X-App-Version and X-Client-Name pass' },
  { match: p(`x${LEAD}{0,2}(?:users?|userid|username|useremail|userinfo|userroles?|usergroups|e?mail|subject|sub|uid|login|principal|principalname|roles?|groups?|account|accountid|identity|preferredusername|name|scopes?|claims?|idtoken|accesstoken|admin|isadmin)`), reason: 'end-user identity from auth proxies (X-User, X-Auth-Email, X-Forwarded-User: oauth2-proxy, Keycloak Gatekeeper); whole names only: X-User-Agent passes' },
  { match: p(`x?${LEAD}{0,2}(?:access|api)?keys?(?:ids?|uu?ids?)`), reason: 'key ids (X-Key-Id, X-Gateway-Key-Id): the gateway sends its own' },
  { match: p(`x?ip(?:s|v4|v6|addr|address)?|[a-z0-9]{0,24}${ADDRESS_WORD}{1,3}(?:ip(?:s|v4|v6|addr|address)?|addr|address|for)`), reason: 'client address under any vendor prefix: X-Real-IP, X-Client-IP, X-Cluster-Client-IP, Fly-Client-IP, Do-Connecting-Ip (DigitalOcean), Cdn-Src-Ip (Tencent, Baidu), WL-Proxy-Client-IP (WebLogic), X-Azure-ClientIP' },
  { match: p(`x?(?:http)?${OVERRIDE}{0,2}(?:method|verb)(?:override)?`), reason: 'method override (X-HTTP-Method-Override, X-Method, X-HTTP-Verb, X-Forwarded-Method): Rails, Symfony, Express method-override' },
  { match: p('x(?:url|client|request|real|arr)?(?:scheme|proto|protocol|https?|ssl|tls)|frontendhttps'), reason: 'the scheme outside X-Forwarded-Proto (X-Scheme, X-Url-Scheme, Front-End-Https, X-Client-Scheme: Alibaba CDN)' },
  { match: p(`x?(?:http)?${OVERRIDE}{0,3}ur[il]s?(?:override)?`), reason: 'URL overrides (X-Original-URL, X-HTTP-DestinationURL, Request-Uri, Base-Url): IIS, Symfony, Laminas' },
  { match: p(`(?:x(?:http)?${OVERRIDE}{0,3}|(?:http)?${OVERRIDE}{1,3})(?:host|hostname|servername|path|prefix)(?:override)?`), reason: 'host and path overrides (X-Backend-Host, X-Forwarded-Prefix: Spring; X-Matched-Path: Next.js); Host itself passes' },
  // Forwarding outside X-Forwarded-*, where the gateway states it (the rest of that family passes
  // from a trusted proxy only: header-scrub.ts).
  { match: { name: 'forwarded' }, reason: 'RFC 7239 forwarding' },
  { match: { name: 'x-forwarded' }, reason: 'forwarding without a family member' },
  { match: { name: 'x-forwarded-by' }, reason: 'forwarding' },
  { match: { name: 'forwarded-proto' }, reason: 'the scheme outside X-Forwarded-Proto' },
  { match: { name: 'x-forward-port' }, reason: 'Tencent Cloud CDN origin-pull port (tencentcloud.com/document/product/228/37037)' },
  { match: { name: 'x-custom-ip-authorization' }, reason: 'an IP allow-list bypass header' },
  { match: { name: 'true-client-ip' }, reason: 'Akamai, and Cloudflare Enterprise: the client address (techdocs.akamai.com; developers.cloudflare.com)' },
  { match: { name: 'cdn-loop' }, reason: 'CDN loop detection (RFC 8586; Cloudflare, Fastly): a forged one makes a CDN behind refuse' },
  // CDNs and clouds: what they set for the origin, from their own documentation.
  { match: { prefix: 'cf-connecting-' }, reason: 'Cloudflare: CF-Connecting-IP, -IPv6 (developers.cloudflare.com/fundamentals/reference/http-headers); CF-Ray, a request id, passes' },
  { match: { name: 'cf-pseudo-ipv4' }, reason: 'Cloudflare: the client address as a pseudo IPv4 (same page)' },
  { match: { name: 'cf-ipcountry' }, reason: 'Cloudflare: the client country (same page)' },
  { match: { name: 'cf-visitor' }, reason: 'Cloudflare: the client scheme (same page)' },
  { match: { name: 'cf-worker' }, reason: 'Cloudflare: the zone of a Worker subrequest (same page)' },
  { match: { prefix: 'cf-access-' }, reason: 'Cloudflare Access: Cf-Access-Jwt-Assertion, -Authenticated-User-Email' },
  { match: { prefix: 'akamai-' }, reason: 'Akamai: Akamai-Origin-Hop' },
  { match: { prefix: 'x-akamai-' }, reason: 'Akamai: X-Akamai-Edgescape (techdocs.akamai.com/property-mgr/docs/content-tgting)' },
  { match: { prefix: 'fastly-client' }, reason: 'Fastly: Fastly-Client-IP, Fastly-Client (fastly.com/documentation/reference/http/http-headers); Fastly-Debug passes' },
  { match: { name: 'fastly-ssl' }, reason: 'Fastly: the client scheme, kept as the client sent it (same reference)' },
  { match: { name: 'fastly-ff' }, reason: 'Fastly: the Fastly hops a request passed (same reference)' },
  { match: { prefix: 'cloudfront-' }, reason: 'AWS CloudFront: CloudFront-Viewer-Address, -Country, CloudFront-Forwarded-Proto, CloudFront-Is-*-Viewer (docs.aws.amazon.com/AmazonCloudFront, adding-cloudfront-headers)' },
  { match: { prefix: 'x-amzn-oidc-' }, reason: 'AWS ALB authentication: X-Amzn-Oidc-Identity, -Data, -Accesstoken' },
  { match: { prefix: 'x-amzn-mtls-' }, reason: 'AWS ALB mutual TLS: X-Amzn-Mtls-Clientcert*' },
  { match: { prefix: 'x-amzn-request' }, reason: 'AWS API Gateway request context (X-Amzn-RequestContext); X-Amzn-Trace-Id passes' },
  { match: { prefix: 'x-amzn-vpce-' }, reason: 'AWS API Gateway private APIs: X-Amzn-Vpce-Id' },
  { match: { prefix: 'x-apigw-' }, reason: 'AWS API Gateway: x-apigw-api-id selects the API (docs.aws.amazon.com/apigateway, private REST APIs)' },
  { match: { prefix: 'x-apigateway-' }, reason: 'AWS API Gateway event and context (serverless-express)' },
  { match: { prefix: 'x-azure-' }, reason: 'Azure Front Door: X-Azure-ClientIP, -SocketIP, -Ref, -RequestChain, -FDID (learn.microsoft.com/azure/frontdoor/front-door-http-headers-protocol)' },
  { match: { prefix: 'x-fd-' }, reason: 'Azure Front Door: reserved X-FD-* (same page)' },
  { match: { prefix: 'x-arr-' }, reason: 'Azure App Service and IIS ARR: X-ARR-ClientCert, X-ARR-SSL' },
  { match: { prefix: 'x-ms-client-principal' }, reason: 'Azure App Service authentication: the identity' },
  { match: { prefix: 'x-ms-token-' }, reason: 'Azure App Service authentication: the tokens' },
  { match: { prefix: 'x-goog-' }, reason: 'Google: reserved for its load balancers; IAP X-Goog-Authenticated-User-*, X-Goog-IAP-JWT-Assertion (cloud.google.com/load-balancing/docs/custom-headers)' },
  { match: { prefix: 'x-google-' }, reason: 'Google: reserved X-Google-* (cloud.google.com/appengine/docs, request headers)' },
  { match: { prefix: 'x-gfe-' }, reason: 'Google front end: reserved (cloud.google.com/load-balancing/docs/custom-headers)' },
  { match: { name: 'x-user-ip' }, reason: 'Google load balancers: reserved client address (same page)' },
  { match: { prefix: 'x-appengine-' }, reason: 'App Engine: X-AppEngine-User-IP, -Country, -City, -Cron, -QueueName (cloud.google.com/appengine/docs, request headers)' },
  { match: { name: 'x-serverless-authorization' }, reason: 'Cloud Run: the identity token it verifies' },
  { match: { prefix: 'x-vercel-' }, reason: 'Vercel: x-vercel-forwarded-for, -ip-country, -ip-city, -id (vercel.com/docs/headers/request-headers)' },
  { match: { prefix: 'x-nf-' }, reason: 'Netlify: x-nf-client-connection-ip, -geo, -account-id, -request-id (@netlify/serverless-functions-api)' },
  { match: { prefix: 'fly-' }, reason: 'Fly.io: Fly-Client-IP, Fly-Forwarded-Port, Fly-Region (fly.io/docs/networking/request-headers)' },
  { match: { prefix: 'incap-' }, reason: 'Imperva: Incap-Client-IP' },
  { match: { prefix: 'x-sucuri-' }, reason: 'Sucuri: X-Sucuri-ClientIP, -Country' },
  { match: { prefix: 'ali-cdn-' }, reason: 'Alibaba Cloud CDN: Ali-Cdn-Real-Ip (alibabacloud.com/help/en/cdn, custom request headers)' },
  { match: { prefix: 'wl-proxy-' }, reason: 'WebLogic proxy plug-in: WL-Proxy-Client-IP, WL-Proxy-SSL' },
  // Proxies and API gateways that an upstream behind the gateway may run, and trust from their hop.
  { match: { prefix: 'x-envoy-' }, reason: 'Envoy: sanitised from external requests (envoyproxy.io, HTTP header sanitizing)' },
  { match: { name: 'x-client-trace-id' }, reason: 'Envoy: forces tracing (same page)' },
  { match: { prefix: 'x-ext-authz' }, reason: 'Envoy ext_authz results' },
  { match: { prefix: 'x-consumer-' }, reason: 'Kong and APISIX: consumer identity (X-Consumer-ID, -Custom-ID, -Username; apisix.apache.org key-auth)' },
  { match: { prefix: 'x-credential-' }, reason: 'Kong and APISIX: X-Credential-Identifier' },
  { match: { name: 'x-anonymous-consumer' }, reason: 'Kong: the anonymous consumer flag' },
  { match: { prefix: 'x-kong-' }, reason: 'Kong' },
  { match: { prefix: 'x-tyk-' }, reason: 'Tyk' },
  { match: { prefix: 'x-istio-' }, reason: 'Istio' },
  { match: { prefix: 'x-ambassador-' }, reason: 'Ambassador' },
  { match: { prefix: 'x-jwt-' }, reason: 'JWT claims and payloads forwarded by Istio and WSO2' },
  // Identity from auth proxies and platforms.
  { match: { prefix: 'x-authenticated-' }, reason: 'Kong OAuth2: X-Authenticated-Userid, -Scope' },
  { match: { prefix: 'x-auth-request-' }, reason: 'oauth2-proxy' },
  { match: { prefix: 'x-remote-' }, reason: 'auth proxies: X-Remote-User, -Addr, -Group' },
  { match: { prefix: 'remote-' }, reason: 'Authelia and CGI: Remote-User, -Groups, -Email' },
  { match: { prefix: 'x-webauth-' }, reason: 'Grafana auth proxy' },
  { match: { prefix: 'x-grafana-' }, reason: 'Grafana org and user' },
  { match: { prefix: 'x-authentik-' }, reason: 'authentik' },
  { match: { prefix: 'x-pomerium-' }, reason: 'Pomerium' },
  { match: { prefix: 'x-vouch-' }, reason: 'Vouch' },
  { match: { prefix: 'x-endpoint-api-' }, reason: 'Google ESP: X-Endpoint-API-UserInfo' },
  { match: { prefix: 'x-hasura-' }, reason: 'Hasura session variables' },
  { match: { prefix: 'oidc-' }, reason: 'mod_auth_openidc: OIDC_CLAIM_*, OIDC_access_token' },
  { match: { prefix: 'x-oidc-' }, reason: 'OIDC claims under an X- prefix' },
  { match: { prefix: 'x-iap-' }, reason: 'identity-aware proxies' },
  { match: { prefix: 'x-claim-' }, reason: 'claims' },
  { match: { prefix: 'x-auth-claim' }, reason: 'claims' },
  { match: { prefix: 'x-shopify-' }, reason: 'Shopify shop identity' },
  { match: { prefix: 'x-ssl-' }, reason: 'client certificates from TLS terminators (nginx, HAProxy)' },
  { match: { prefix: 'ssl-client-' }, reason: 'client certificates' },
  { match: { prefix: 'x-client-cert' }, reason: 'client certificates' },
  { match: { name: 'x-client-verify' }, reason: 'the client certificate verdict' },
  { match: { name: 'x-client-dn' }, reason: 'the client certificate subject' },
  { match: { name: 'x-client-s-dn' }, reason: 'the client certificate subject' },
  { match: { name: 'x-client-i-dn' }, reason: 'the client certificate issuer' },
  { match: { name: 'x-auth-audience' }, reason: 'an audience flag' },
  { match: { name: 'x-permissions' }, reason: 'permission flags' },
  { match: { name: 'x-user-permissions' }, reason: 'permission flags' },
  { match: { name: 'x-superuser' }, reason: 'a privilege flag' },
  { match: { name: 'x-is-superuser' }, reason: 'a privilege flag' },
  { match: { name: 'x-scope-orgid' }, reason: 'Loki, Mimir and Cortex: the tenant' },
  // Acting as someone else.
  { match: { prefix: 'impersonate-' }, reason: 'Kubernetes impersonation' },
  { match: { prefix: 'x-impersonat' }, reason: 'impersonation' },
  { match: p('x?(?:onbehalfof|actas|actingas|runas|sudo|serviceaccount|serviceaccountname|switchuser|asuser|delegateduser)'), reason: 'acting as someone else (X-On-Behalf-Of, X-Run-As, X-Sudo, X-Service-Account)' },
  { match: { prefix: 'x-sudo-' }, reason: 'acting as someone else' },
  { match: { prefix: 'x-run-as-' }, reason: 'acting as someone else' },
  { match: { prefix: 'x-act-as-' }, reason: 'acting as someone else' },
  { match: { prefix: 'x-on-behalf-of-' }, reason: 'acting as someone else' },
  // URL overrides and framework internals.
  { match: { prefix: 'x-original-' }, reason: 'IIS and Symfony X-Original-URL; Azure Application Gateway X-Original-Host; ingress-nginx X-Original-Forwarded-For' },
  { match: { prefix: 'x-rewrite-' }, reason: 'X-Rewrite-URL (IIS, Symfony)' },
  { match: { prefix: 'x-override-' }, reason: 'overrides' },
  { match: { prefix: 'x-middleware-' }, reason: 'Next.js X-Middleware-Subrequest (CVE-2025-29927)' },
  { match: { prefix: 'x-invoke-' }, reason: 'Next.js router internals' },
  { match: { name: 'x-now-route-matches' }, reason: 'Next.js router internals' },
  { match: { name: 'x-sendfile-type' }, reason: 'Rack::Sendfile: a request-side setting' },
  { match: { name: 'x-accel-mapping' }, reason: 'Rack::Sendfile: a request-side setting' },
  { match: { name: 'x-script-name' }, reason: 'a SCRIPT_NAME override' },
  // The gateway's own namespace, and privilege flags.
  { match: { prefix: 'x-gateway-' }, reason: "the gateway's namespace" },
  { match: { prefix: 'x-gw-' }, reason: "the gateway's namespace" },
  { match: { prefix: 'x-internal-' }, reason: 'privilege flags (X-Internal-Request)' },
  { match: { prefix: 'x-trusted-' }, reason: 'privilege flags (X-Trusted-Client)' },
  { match: { prefix: 'x-bypass-' }, reason: 'privilege flags (X-Bypass-Auth)' },
];

/** A header name in the form the table compares: lowercase, `_` and separator runs as one `-`. */
export function tableName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/**
 * Compiles a table (and more names or `*` prefixes, `headers.stripFromClients`) into one test: a
 * Set for names, one anchored pattern for prefixes, one for the patterns (on the squashed name).
 *
 * @example
 * const dropped = compilePolicy(CLIENT_HEADER_POLICY, ['x-debug-*']);
 * dropped('x-real-ip') // true
 */
export function compilePolicy(
  table: readonly HeaderRule[],
  extra: readonly string[] = [],
): (name: string) => boolean {
  const names = new Set<string>();
  const prefixes: string[] = [];
  const patterns: string[] = [];
  for (const { match } of table) {
    if ('name' in match) names.add(match.name);
    else if ('prefix' in match) prefixes.push(match.prefix);
    else patterns.push(match.pattern.source);
  }
  for (const e of extra)
    if (e.endsWith('*')) prefixes.push(tableName(e.slice(0, -1)));
    else names.add(tableName(e));
  const prefix = prefixes.length ? new RegExp(`^(?:${prefixes.join('|')})`) : null;
  const pattern = patterns.length ? new RegExp(patterns.join('|')) : null;
  return (name) =>
    names.has(name) || prefix?.test(name) === true || pattern?.test(name.replace(/-/g, '')) === true;
}
