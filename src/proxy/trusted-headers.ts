import type { IncomingHttpHeaders } from 'node:http';
import { createKeyMaterialMatcher, type KeyMaterialMatcher } from './key-material.js';

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) and proxy-only ones a proxy must not forward in either
 * direction. A request's `transfer-encoding` stays: Node frames the streamed body with it.
 */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
  // Credentials and settings for this hop only: the gateway is not a forward proxy, and an
  // HTTP/1.1 upstream must not see an h2c upgrade's settings.
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-authentication-info',
  'http2-settings',
];
/** Headers that framing or routing needs; naming them in `Connection` does not remove them. */
const NEVER_DROPPED = new Set([
  'close',
  'keep-alive',
  'host',
  'content-length',
  'transfer-encoding',
  'content-type',
]);

/** Set by the gateway itself (forward step): a client's copy never passes, a trusted proxy's is read there. */
const SET_BY_GATEWAY = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

/**
 * Client-asserted identity, URL-override and method-override headers: dropped from every peer,
 * trusted proxies included. Frameworks act on them (IIS/Symfony/Laminas: `X-Original-URL`,
 * `X-Rewrite-URL`; Spring: `X-Forwarded-Prefix`; Rails/Rack: `X-HTTP-Method-Override`; many
 * loggers and allow-lists: the client-IP family), so passing them would let a client step outside
 * the route prefix, the method it was let through with, or the address the gateway saw.
 */
const CLIENT_ASSERTED = [
  'forwarded',
  'x-real-ip',
  'true-client-ip',
  'x-client-ip',
  'client-ip',
  'cf-connecting-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  'x-proxyuser-ip',
  'x-originating-ip',
  'wl-proxy-client-ip',
  'proxy-client-ip',
  'x-host',
  'x-http-host-override',
  'x-rewrite-url',
  'x-forwarded-prefix',
  'x-forwarded-uri',
  'x-forwarded-url',
  'x-forwarded-path',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  // Forwarding outside X-Forwarded-* (`X-Forwarded` alone, the non-standard `Forwarded-For`) and
  // the scheme under other names (Rack, nginx, Microsoft): the gateway states the scheme in
  // X-Forwarded-Proto only.
  'x-forwarded',
  'forwarded-for',
  'forwarded-host',
  'forwarded-proto',
  'x-scheme',
  'x-url-scheme',
  'x-client-scheme',
  'front-end-https',
  'x-arr-ssl',
  'x-ssl',
  // Authenticated identity, as auth proxies hand it on (Apache/CGI REMOTE_USER, oauth2-proxy,
  // Kong, Azure): the upstream's identity is the company the gateway sets, nothing else.
  'remote-user',
  'remote-addr',
  'x-user',
  'x-auth-user',
  'x-forwarded-user',
  'x-forwarded-email',
  'x-forwarded-groups',
  'x-forwarded-preferred-username',
  'x-forwarded-access-token',
  // Kong's identity headers (`X-Consumer-*`, `X-Credential-*` below) and client-certificate
  // verdicts that TLS-terminating proxies hand on (nginx, HAProxy, IIS ARR).
  'x-anonymous-consumer',
  'x-userinfo',
  'x-client-verify',
  'x-client-dn',
  'x-client-s-dn',
  'x-client-i-dn',
  'x-arr-clientcert',
  // Client address under more CDN and platform names (Cloudflare, Azure, App Engine, Akamai and
  // Fastly are prefixes below).
  'x-real-client-ip',
  'x-true-client-ip',
  'cf-visitor',
  // URL and method overrides under more names; `_method` (Laravel, Rails, Symfony) is `-method`
  // here, since `_` folds to `-`.
  'x-http-destination-url',
  'x-method',
  '_method',
  // Tenant and user identity under the names upstream frameworks read them by; look-alikes of the
  // trusted header names are added from the configured names (`lookAlikesOf`).
  'x-tenant',
  'x-tenant-id',
  'x-tenantid',
  'tenant-id',
  'tenant',
  'x-company',
  'x-company-name',
  'x-user-id',
  'x-userid',
  'x-user-email',
  'x-user-name',
  'x-username',
  // Client address under more CDN and platform names (attack report F4, and their siblings):
  // Fly.io, Vercel, Netlify, Imperva, Sucuri, DigitalOcean, Tencent/Baidu CDN (`Cdn-Src-Ip`),
  // Alibaba; the families with more members are prefixes below.
  'fly-client-ip',
  'do-connecting-ip',
  'cdn-src-ip',
  'cdn-real-ip',
  'x-cdn-src-ip',
  'x-cdn-real-ip',
  'ali-cdn-real-ip',
  'x-client-real-ip',
  'x-forward-for',
  'cf-ipcountry',
  // Identity as auth proxies hand it on: Grafana's auth proxy and Keycloak Gatekeeper
  // (`X-Auth-Email`, `-Userid`, `-Username`, `-Subject`, `-Roles`, `-Groups`; `X-Auth-Token` is
  // not dropped: like `Authorization`, a client may send its own credential for the upstream),
  // Envoy's ext_authz examples, role and admin flags.
  'x-auth-email',
  'x-auth-name',
  'x-auth-userid',
  'x-auth-user-id',
  'x-auth-username',
  'x-auth-subject',
  'x-auth-role',
  'x-auth-roles',
  'x-auth-groups',
  'x-auth-audience',
  'x-current-user',
  'x-identity',
  'x-principal',
  'x-id-token',
  'x-role',
  'x-roles',
  'x-user-role',
  'x-user-roles',
  'x-group',
  'x-groups',
  'x-user-groups',
  'x-permissions',
  'x-user-permissions',
  'x-admin',
  'x-is-admin',
  'x-superuser',
  'x-is-superuser',
  'x-amzn-requestcontext',
  'x-amzn-request-context',
  // Tenant ids: Loki/Mimir/Cortex `X-Scope-OrgID`, and `TENANT_WORDS` spelled out below.
  'x-scope-orgid',
  // Method overrides under more names (Traefik's forward auth sends X-Forwarded-Method: from a
  // trusted proxy too it may not differ from the method the gateway let through).
  'x-http-verb',
  'x-verb',
  'x-forwarded-method',
  'x-request-method',
  // URL overrides: Next.js middleware and router internals (CVE-2025-29927), Rack::Sendfile's
  // request-side settings, Traefik's ReplacePath, SCRIPT_NAME, and HTTPS as a header.
  'x-matched-path',
  'x-now-route-matches',
  'x-sendfile-type',
  'x-accel-mapping',
  'x-replaced-path',
  'x-script-name',
  'x-https',
  // Attack report 2, finding 8. Client address under more names: IP-based authorisation bypasses
  // (`X-Custom-IP-Authorization`), `X-True-IP`, `X-Client-Address` and their siblings.
  'x-custom-ip-authorization',
  'x-true-ip',
  'x-client-address',
  'x-client-addr',
  'x-real-address',
  'x-remote-address',
  'x-originating-address',
  'x-source-ip',
  'x-src-ip',
  'x-origin-ip',
  'x-ip',
  'x-client-ipv6',
  'x-forwarded-ip',
  'x-forwarded-client-ip',
  'x-forwarded-by',
  'x-wap-client-ip',
  // Acting as someone else: delegation, impersonation and run-as headers.
  'x-on-behalf-of',
  'on-behalf-of',
  'x-act-as',
  'x-acting-as',
  'x-run-as',
  'x-runas',
  'x-sudo',
  'x-sudo-user',
  'x-impersonate',
  'x-impersonated-user',
  'x-impersonation',
  'x-service-account',
  'x-service-account-name',
  'x-serviceaccount',
  'x-switch-user',
  'x-as-user',
  'x-delegated-user',
  'x-user-info',
  // Look-alikes of the gateway's own key-id header under shorter names.
  'x-key-id',
  'x-keyid',
  'key-id',
  'x-api-keyid',
  'x-apikey-id',
  'x-apikeyid',
  'x-credential-id',
  'x-access-key-id',
];

/**
 * Tenant and account words: each is dropped as `X-<w>`, `X-<w>-Id`, `X-<w>Id`, `<w>-Id` and
 * `<w>Id` (`X-Org-Id`, `X-OrgId`, `Org-Id`...); `company` comes from the trusted names' look-alikes.
 */
const TENANT_WORDS = [
  'tenant',
  'org',
  'organization',
  'organisation',
  'account',
  'customer',
  'project',
  'workspace',
  'team',
  'client',
  'merchant',
  'partner',
  'subscription',
];
/**
 * Words that name a tenant or app but do not stand alone in `TENANT_WORDS` (`X-App` and `X-Site`
 * are too generic to drop whole): each is dropped with the id and name suffixes below
 * (`X-App-Id`, `X-Application-Id`, `X-Site-Id`, `X-Realm-Name`...).
 */
const TENANT_ONLY_WITH_SUFFIX = [
  'app',
  'application',
  'site',
  'shop',
  'store',
  'realm',
  'namespace',
  'domain',
];
/**
 * Name suffixes for tenant words (attack report 2, finding 8: `X-Tenant-Name`, `X-Org-Slug`):
 * `X-<w>-<suffix>`, `X-<w><suffix>`, `<w>-<suffix>`. Not for `client`: `X-Client-Name` is an SDK's
 * name, an ordinary client header.
 */
const TENANT_SUFFIXES = ['id', 'name', 'slug', 'domain', 'uuid'];
const TENANT_NAMES = [
  ...TENANT_WORDS.flatMap((w) => [`x-${w}`, `x-${w}-id`, `x-${w}id`, `${w}-id`, `${w}id`]),
  ...[...TENANT_WORDS, ...TENANT_ONLY_WITH_SUFFIX]
    .filter((w) => w !== 'client')
    .flatMap((w) => TENANT_SUFFIXES.flatMap((x) => [`x-${w}-${x}`, `x-${w}${x}`, `${w}-${x}`])),
  // Tenant words standing alone that frameworks read (Kubernetes-style namespaces, Keycloak realms).
  'x-namespace',
  'x-realm',
];
/**
 * Identity words (attack report 2, finding 8: `X-Email`, `X-Subject`, `X-Uid`, `X-Login`,
 * `X-Proxy-User`, `X-Api-User`...): each is dropped behind every prefix in `IDENTITY_PREFIXES`
 * (`X-Email`, `X-Auth-Login`, `X-Forwarded-Principal`, `X-Proxy-Uid`, `X-Api-User`...), as an exact
 * name, never as a prefix of one: `X-User-Agent` passes.
 */
const IDENTITY_WORDS = [
  'user',
  'users',
  'user-id',
  'userid',
  'user-name',
  'username',
  'user-email',
  'user-info',
  'userinfo',
  'user-role',
  'user-roles',
  'user-groups',
  'email',
  'mail',
  'subject',
  'sub',
  'uid',
  'login',
  'principal',
  'principal-name',
  'role',
  'roles',
  'group',
  'groups',
  'account',
  'account-id',
  'identity',
  'preferred-username',
  'name',
  'scope',
  'scopes',
  'claims',
  'claim',
  'id-token',
  'access-token',
  'admin',
  'is-admin',
];
const IDENTITY_PREFIXES = [
  'x-',
  'x-auth-',
  'x-authenticated-',
  'x-authorized-',
  'x-verified-',
  'x-forwarded-',
  'x-remote-',
  'x-proxy-',
  'x-api-',
  'x-end-',
  'x-end-user-',
  'x-logged-in-',
  'x-current-',
  'x-real-',
  'x-trusted-',
  'x-upstream-',
  'x-gateway-',
  'x-iam-',
  'x-sso-',
  'x-oauth-',
  'x-oauth2-',
  'x-saml-',
  'x-ldap-',
  'x-token-',
];
const IDENTITY_NAMES = IDENTITY_PREFIXES.flatMap((p) => IDENTITY_WORDS.map((w) => `${p}${w}`));
/**
 * `X-Original-URL`, `-Uri`, `-Host`, `-Forwarded-For`, `-Method`...: all overrides, like
 * `X-Rewrite-*` and `X-Override-*`. `X-Envoy-*`: Envoy's internal headers (`-External-Address`,
 * `-Original-Path`, `-Internal`...) that an Envoy behind the gateway would trust. Identity from
 * auth proxies and platforms: `X-Remote-*` (`-User`, `-Addr`, `-IP`, `-Group`), `X-Authenticated-*`
 * and `X-Consumer-*`/`X-Credential-*` (Kong), `X-Auth-Request-*` (oauth2-proxy),
 * `X-MS-Client-Principal*` (Azure), `X-Amzn-Oidc-*` (AWS ALB), `X-Apigateway-*` (AWS API Gateway
 * event and context), `X-Goog-Authenticated-*` and `X-Goog-IAP-*` (Google IAP), `X-Jwt-*` (claims,
 * payloads and assertions: Istio, WSO2).
 * Client certificates: `X-SSL-*` (`-Client-Cert`, `-Client-Verify`, `-Client-DN`...),
 * `SSL-Client-*`, `X-Client-Cert*`. Client address: `CF-Connecting-*` (`-IP`, `-IPv6`),
 * `X-Azure-*` (`-ClientIP`, `-SocketIP`, `-FDID`), `X-AppEngine-*` (`-User-IP`, `-Cron`...),
 * `Akamai-*`, `Fastly-Client*`.
 */
const CLIENT_ASSERTED_PREFIXES = [
  'x-original-',
  'x-rewrite-',
  'x-override-',
  'x-envoy-',
  'x-remote-',
  'x-authenticated-',
  'x-consumer-',
  'x-credential-',
  'x-auth-request-',
  'x-ms-client-principal',
  'x-amzn-oidc-',
  'x-apigateway-',
  'x-goog-authenticated-',
  'x-goog-iap-',
  'x-jwt-',
  'x-ssl-',
  'ssl-client-',
  'x-client-cert',
  'cf-connecting-',
  'x-azure-',
  'x-appengine-',
  'akamai-',
  'fastly-client',
  // More CDNs and platforms: CloudFront (`-Viewer-Address`, `-Forwarded-Proto`...), Fly.io,
  // Vercel, Netlify (`-Client-Connection-Ip`, `-Account-Id`...), Imperva, Sucuri, Akamai's X- form.
  'cloudfront-',
  'fly-forwarded-',
  'x-vercel-',
  'x-nf-',
  'incap-',
  'x-sucuri-',
  'x-akamai-',
  // Identity from more auth proxies and platforms: Authelia and CGI (`Remote-User`, `-Groups`,
  // `-Email`, `-Name`, `-Addr`), Grafana (`X-WEBAUTH-*`, `X-Grafana-*`), authentik, Pomerium,
  // Cloudflare Access, Vouch, Google ESP (`X-Endpoint-API-UserInfo`), Azure App Service tokens,
  // Hasura session variables, mod_auth_openidc (`OIDC_CLAIM_*`, `OIDC_access_token`), Kubernetes
  // impersonation, Kong and Tyk, Istio and Ambassador, Envoy ext_authz, AWS ALB mTLS.
  'remote-',
  'x-webauth-',
  'x-grafana-',
  'x-authentik-',
  'x-pomerium-',
  'cf-access-',
  'x-vouch-',
  'x-endpoint-api-',
  'x-ms-token-',
  'x-hasura-',
  'oidc-',
  'impersonate-',
  'x-impersonate-',
  'x-kong-',
  'x-tyk-',
  'x-istio-',
  'x-ambassador-',
  'x-ext-authz',
  'x-amzn-mtls-',
  // URL overrides: Next.js (`X-Middleware-Subrequest`, `X-Invoke-Path`...).
  'x-middleware-',
  'x-invoke-',
  // Attack report 2, finding 8: OIDC claims under an X- prefix (`X-Oidc-Claim-Sub`), Google IAP
  // without `Goog` (`X-Iap-User`), Shopify's shop identity (`X-Shopify-Shop-Domain`), and claim
  // and impersonation families (`X-Claim-*`, `X-Impersonate*`, `X-Sudo-*`, `X-Run-As-*`).
  'x-oidc-',
  'x-iap-',
  'x-shopify-',
  'x-claim-',
  'x-auth-claim',
  'x-impersonat',
  'x-sudo-',
  'x-run-as-',
  'x-act-as-',
  'x-on-behalf-of-',
];

/**
 * Spellings an upstream could take for a trusted header: without the `x-` prefix, without
 * dashes, or both (`company-id`, `xcompanyid`, `x-companyid`, `companyid` for `X-Company-Id`).
 * Computed once when the scrubber is built.
 */
function lookAlikesOf(name: string): string[] {
  const n = normaliseHeaderName(name);
  const bare = n.startsWith('x-') ? n.slice(2) : n;
  const squashed = bare.replace(/-/g, '');
  return [bare, squashed, `x${squashed}`, `x-${squashed}`];
}
/**
 * The rest of the `X-Forwarded-*` family (`-Port`, `-Ssl`, `-Scheme`, `-Server`, ...) describes
 * the connection to a proxy: believed from a trusted proxy only, like `X-Forwarded-For`.
 */
const FORWARDED_PREFIX = 'x-forwarded-';

/** Normal form for comparing header names: lowercase, `_` as `-` (some servers treat them alike). */
export function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/_/g, '-');
}

export interface TrustedHeaderNames {
  companyId: string;
  keyId: string;
  companyTier: string;
  requestId: string;
}

/** Header values as Node gives them. */
type HeaderValue = string | string[] | undefined;

/**
 * Builds the function that makes the upstream's header set from the client's. Dropped, whatever
 * the case, `_` variant or count (Node joins repeated lines into one entry):
 * - `X-API-Key`, and every other header whose name or value holds key material (see
 *   `createKeyMaterialMatcher`: the presented key's secret in any known encoding, or any valid
 *   gateway key); in `Cookie`, only the pairs that hold it; then every value taking part in a copy
 *   of the secret split over several headers (`dropSplitCopies`);
 * - client-sent copies of the trusted headers and of `extra` names (an entry ending in `*` is a
 *   prefix: `X-Debug-*`);
 * - hop-by-hop headers and every header named in `Connection` (an attacker could otherwise make a
 *   next hop drop the gateway's own headers);
 * - client-asserted identity, forwarding, scheme, URL- and method-override headers
 *   (`CLIENT_ASSERTED`, `CLIENT_ASSERTED_PREFIXES`), trusted proxies included;
 * - from a peer that is not a trusted proxy, every `X-Forwarded-*`. From a trusted proxy,
 *   `X-Forwarded-For/-Proto/-Host` are kept for the caller to read (it replaces them) and the rest
 *   of the family passes.
 * Copies into a new object rather than deleting: cheaper, and the client's view stays intact.
 * `keyMatcher` defaults to one for the request's `X-API-Key` (pass it when already built).
 */
export function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
): (
  headers: IncomingHttpHeaders,
  peerTrusted?: boolean,
  keyMatcher?: KeyMaterialMatcher,
) => IncomingHttpHeaders {
  const extraNames = extra.filter((n) => !n.endsWith('*'));
  const hasDroppedPrefix = createPrefixMatcher([
    ...CLIENT_ASSERTED_PREFIXES,
    ...extra.filter((n) => n.endsWith('*')).map((n) => normaliseHeaderName(n.slice(0, -1))),
  ]);
  const dropped = new Set(
    [
      names.companyId,
      names.keyId,
      names.companyTier,
      ...[names.companyId, names.keyId, names.companyTier].flatMap(lookAlikesOf),
      names.requestId,
      'x-api-key',
      ...CLIENT_ASSERTED,
      ...TENANT_NAMES,
      ...IDENTITY_NAMES,
      ...extraNames,
      ...HOP_BY_HOP,
    ].map(normaliseHeaderName),
  );
  const setByGateway = new Set(SET_BY_GATEWAY);
  return function scrubHeaders(
    headers: IncomingHttpHeaders,
    peerTrusted = false,
    keyMatcher: KeyMaterialMatcher = matcherFor(headers),
  ): IncomingHttpHeaders {
    const named = connectionTokens(headers.connection);
    const out: IncomingHttpHeaders = {};
    for (const name in headers) {
      // Node hands us lowercase names already; only `_` needs folding, and only when present.
      const n = name.includes('_') ? name.replace(/_/g, '-') : name;
      if (dropped.has(n) || (named !== null && named.has(n))) continue;
      if (n.startsWith(FORWARDED_PREFIX) && !peerTrusted) continue;
      if (hasDroppedPrefix(n)) continue;
      if (setByGateway.has(n) && n !== name) continue; // only the canonical spelling is read
      const value = withoutKey(n, name, headers[name], keyMatcher);
      if (value !== undefined) out[name] = value;
    }
    dropSplitCopies(out, keyMatcher);
    return out;
  };
}

/**
 * Whether a header name (normal form) starts with one of `prefixes`. Prefixes of three characters
 * or more are bucketed by their first and third character (`x-consumer-` under `x`+`c`), so a name
 * is compared with the few that could match, not with all of them: this runs for every header.
 */
function createPrefixMatcher(prefixes: readonly string[]): (name: string) => boolean {
  const short = prefixes.filter((p) => p.length < 3);
  const buckets = new Map<number, string[]>();
  const keyOf = (s: string) => s.charCodeAt(0) * 65536 + s.charCodeAt(2);
  for (const p of prefixes) {
    if (p.length < 3) continue;
    const list = buckets.get(keyOf(p));
    if (list) list.push(p);
    else buckets.set(keyOf(p), [p]);
  }
  return function hasPrefix(name) {
    const list = name.length < 3 ? undefined : buckets.get(keyOf(name));
    if (list !== undefined) for (const p of list) if (name.startsWith(p)) return true;
    for (const p of short) if (name.startsWith(p)) return true;
    return false;
  };
}

/**
 * The matcher for the key in `X-API-Key` (see `createKeyMaterialMatcher`); without one (or with
 * several), it still finds every valid gateway key.
 */
export function matcherFor(headers: IncomingHttpHeaders): KeyMaterialMatcher {
  const key = headers['x-api-key'];
  return createKeyMaterialMatcher(typeof key === 'string' ? key : '');
}

/** Characters of a stretch a piece must hold to be dropped with it (unless it lies wholly inside). */
const GRAZE_LIMIT = 4;

/**
 * A key split over several headers, header names or cookie pairs (`X-A: nk_live_AbC…`, `X-B: …xYz`;
 * `X-<first half>: <second half>`; `a=<first half>; b=<second half>`): the names and values kept so
 * far, and each cookie pair on its own, are normalised (escapes undone, Unicode folded, letters and
 * digits only) and joined in order. When stretches of 8 or more characters of the secret in the
 * join, in any order and with anything between them, together cover 24 of its characters
 * (`piecesIn`), every header taking part is dropped (from `Cookie`, the pairs), until none is left.
 * A piece that holds fewer than 4 characters of a stretch, at its edge, is kept. Each round drops
 * at least one piece, so this ends. Base64 or hex split
 * over headers is not put back together.
 */
function dropSplitCopies(out: IncomingHttpHeaders, m: KeyMaterialMatcher): void {
  for (;;) {
    /** Per piece: its header, and for a cookie pair its index in `pairs`. */
    const owners: string[] = [];
    const pairIndex: number[] = [];
    const ends: number[] = [];
    let pairs: string[] | null = null;
    let joined = '';
    const add = (text: string, name: string, pair: number) => {
      joined += text;
      owners.push(name);
      pairIndex.push(pair);
      ends.push(joined.length);
    };
    for (const name in out) {
      const v = out[name];
      if (v === undefined) continue;
      add(m.normalise(name), name, -1);
      if (name === 'cookie' && typeof v === 'string') {
        pairs = v
          .split(';')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        pairs.forEach((p, i) => add(m.normalise(p), name, i));
      } else add(m.normalise(typeof v === 'string' ? v : v.join(',')), name, -1);
    }
    const spans = m.piecesIn(joined);
    if (spans === null) return;
    const droppedPairs = new Set<number>();
    // A stretch is extended as far as the join goes on matching the secret, so the next header's
    // name or value can continue it by a character or two by chance (`…Kx` + `x-innocent`): such a
    // grazed piece is kept, and the next round checks what is left. A stretch holds 8 or more
    // characters, so a piece inside it or holding 4 of them is always there: each round drops one.
    for (const [from, to] of spans) {
      // The first piece ending after `from`, then every piece starting before `to`.
      let lo = 0;
      let hi = ends.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ends[mid]! > from) hi = mid;
        else lo = mid + 1;
      }
      for (let i = lo; i < ends.length && (i === 0 ? 0 : ends[i - 1]!) < to; i++) {
        const start = i === 0 ? 0 : ends[i - 1]!;
        const inside = Math.min(ends[i]!, to) - Math.max(start, from);
        if (inside < GRAZE_LIMIT && inside < ends[i]! - start) continue;
        if (pairIndex[i]! >= 0) droppedPairs.add(pairIndex[i]!);
        else delete out[owners[i]!];
      }
    }
    if (pairs !== null && out.cookie !== undefined && droppedPairs.size > 0) {
      const kept = pairs.filter((_, i) => !droppedPairs.has(i));
      if (kept.length > 0) out.cookie = kept.join('; ');
      else delete out.cookie;
    }
  }
}

/** The header names listed in a `Connection` value, in normal form, or null when none. */
function connectionTokens(connection: HeaderValue): Set<string> | null {
  if (connection === undefined) return null;
  let named: Set<string> | null = null;
  for (const line of Array.isArray(connection) ? connection : [connection]) {
    for (const token of line.split(',')) {
      const t = normaliseHeaderName(token.trim());
      if (t && !NEVER_DROPPED.has(t)) (named ??= new Set()).add(t);
    }
  }
  return named;
}

/** The header's value with the key removed: undefined drops the header; a cookie loses only the pairs holding it. */
function withoutKey(n: string, rawName: string, value: HeaderValue, m: KeyMaterialMatcher): HeaderValue {
  if (value === undefined || m.holds(rawName)) return undefined;
  if (n === 'cookie' && typeof value === 'string') {
    const kept = value
      .split(';')
      .map((p) => p.trim())
      .filter((p) => p !== '' && !m.holds(p));
    return kept.length > 0 ? kept.join('; ') : undefined;
  }
  if (typeof value === 'string') return m.holds(value) ? undefined : value;
  return value.some((v) => m.holds(v)) ? undefined : value;
}

/** Response headers that only the next hop may act on, beyond those named in `Connection`. */
const RESPONSE_HOP_BY_HOP = HOP_BY_HOP.filter((n) => n !== 'expect');

/**
 * Removes, in place, what an upstream's response must not pass on to the client (RFC 9110
 * §7.6.1): `Connection` and every header it names, `Keep-Alive`, `Proxy-*`, `TE`, `Trailer`
 * (trailers are not relayed), `Upgrade` (a 101 is never relayed either), and a plain
 * `Transfer-Encoding: chunked` (Node frames the client's response itself). A `Transfer-Encoding`
 * with other codings stays, since the body is still in them. Call it before the headers are
 * copied to the client's response; the caller sets its own `Connection`.
 */
export function scrubResponseHeaders(headers: IncomingHttpHeaders): void {
  const named = connectionTokens(headers.connection);
  if (named !== null) {
    for (const name in headers) if (named.has(normaliseHeaderName(name))) delete headers[name];
  }
  for (const n of RESPONSE_HOP_BY_HOP) delete headers[n];
  const te = headers['transfer-encoding'];
  if (typeof te === 'string' && te.trim().toLowerCase() === 'chunked') delete headers['transfer-encoding'];
}
