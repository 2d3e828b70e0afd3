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
  // Forwarding outside X-Forwarded-* (`Forwarded`, `X-Forwarded` alone) and the scheme under its
  // own name: the gateway states the scheme in X-Forwarded-Proto only.
  'forwarded',
  'x-forwarded',
  'forwarded-proto',
  'cf-visitor',
  'cf-ipcountry',
  'x-forwarded-by',
  'x-custom-ip-authorization',
  // Kong's identity headers (`X-Consumer-*`, `X-Credential-*` are prefixes below) and client-certificate
  // verdicts that TLS-terminating proxies hand on (nginx, HAProxy, IIS ARR).
  'x-anonymous-consumer',
  'x-client-verify',
  'x-client-dn',
  'x-client-s-dn',
  'x-client-i-dn',
  'x-arr-clientcert',
  // Role, permission and audience flags; AWS API Gateway's request context; Loki/Mimir tenant ids.
  'x-auth-audience',
  'x-permissions',
  'x-user-permissions',
  'x-superuser',
  'x-is-superuser',
  'x-amzn-requestcontext',
  'x-amzn-request-context',
  'x-scope-orgid',
  // URL overrides: Next.js router internals, Rack::Sendfile's request-side settings, SCRIPT_NAME.
  'x-now-route-matches',
  'x-sendfile-type',
  'x-accel-mapping',
  'x-script-name',
  // Acting as someone else: delegation, impersonation and run-as headers.
  'x-on-behalf-of',
  'on-behalf-of',
  'x-act-as',
  'x-acting-as',
  'x-run-as',
  'x-runas',
  'x-sudo',
  'x-service-account',
  'x-service-account-name',
  'x-serviceaccount',
  'x-switch-user',
  'x-as-user',
  'x-delegated-user',
];

/**
 * Word rules: the families below are grammars, not lists of their members. A name is read as its
 * letters and digits only (`squash`: `X-Company.Id`, `X-Company--Id`, `x_company_id`, `XCompanyId`
 * all read `xcompanyid`), and matched whole against patterns built from word lists, so every
 * spelling and separator of a member is dropped, and a name that only shares a word passes
 * (`X-User-Agent`, `X-Client-Version`, `X-Callback-Url`, `Host`, `Origin`).
 */
function squash(n: string): string {
  return n.replace(/[^a-z0-9]/g, '');
}
const oneOf = (words: readonly string[]) => `(?:${words.join('|')})`;

/**
 * Words no ordinary client header holds: a name holding one anywhere, as a word or squashed into
 * another (`X-CompanyName`, `Company-Slug`, `X-Gw-Company-Id`, `X-Companies`, `X-Company-Id-Override`),
 * is dropped. `compan` alone would drop `X-Companion`.
 */
const ALWAYS_WORDS = ['company', 'companies', 'tenant'];

/** Words that may lead the subject, at most two (`X-Auth-`, `X-Forwarded-`, `X-End-User-`, `X-Gw-`...). */
const LEAD_WORDS = [
  'auth',
  'authenticated',
  'authorized',
  'verified',
  'forwarded',
  'remote',
  'proxy',
  'api',
  'end',
  'enduser',
  'loggedin',
  'current',
  'real',
  'trusted',
  'upstream',
  'gateway',
  'gw',
  'iam',
  'sso',
  'oauth',
  'oauth2',
  'saml',
  'ldap',
  'token',
];
/**
 * Identity words (attack report 2, finding 8): `X-<lead>*<word>` (`X-Email`, `X-Auth-Login`,
 * `X-Forwarded-Principal`, `X-Proxy-Uid`, `X-Api-User`), the whole name only: `X-User-Agent` passes.
 */
const IDENTITY_WORDS = [
  'users?',
  'userid',
  'username',
  'useremail',
  'userinfo',
  'userroles?',
  'usergroups',
  'e?mail',
  'subject',
  'sub',
  'uid',
  'login',
  'principal',
  'principalname',
  'roles?',
  'groups?',
  'account',
  'accountid',
  'identity',
  'preferredusername',
  'name',
  'scopes?',
  'claims?',
  'idtoken',
  'accesstoken',
  'admin',
  'isadmin',
];
/**
 * Who a request is for or from, and what it may do (tenant, account, owner, tier, plan, trust):
 * dropped alone or with a suffix, with or without `X-` and lead words, plural too (`X-Org`,
 * `Org-Id`, `X-OrgId`, `X-Orgs`, `X-Owner-Id`, `X-Subscription-Tier`, `X-Auth-Org-Slug`, `X-Bypass`).
 */
const TENANT_WORDS = [
  'org',
  'organi[sz]ation',
  'account',
  'customer',
  'project',
  'workspace',
  'team',
  'merchant',
  'partner',
  'subscription',
  'realm',
  'namespace',
  'owner',
  'caller',
  'actor',
  'requester',
  'business',
  'vendor',
  'seller',
  'brand',
  'tier',
  'plan',
  'internal',
  'trusted',
  'bypass',
];
/** Words too generic alone (`X-App`, `X-Site`), dropped with a suffix only (`X-App-Id`, `X-Site-Name`). */
const TENANT_WITH_SUFFIX_WORDS = ['app', 'application', 'site', 'shop', 'store', 'domain'];
/**
 * Suffixes that make a tenant word an identifier (`-Id`, `-Name`, `-Slug`...). `client` takes the
 * id ones only: `X-Client-Name` is an SDK's name, an ordinary client header. `-Key` is not one:
 * `X-App-Key` is a credential a client may send its upstream, like `Authorization`.
 */
const TENANT_SUFFIXES = [
  'ids?',
  'names?',
  'slugs?',
  'domains?',
  'uu?ids?',
  'guids?',
  'codes?',
  'refs?',
  'tier',
  'plan',
];
/** Words for the client's side of a connection (`X-Real-`, `True-Client-`, `X-Cluster-Client-`, `X-Forwarder-`...). */
const ADDRESS_WORDS = [
  'clients?',
  'real',
  'true',
  'remote',
  'source',
  'src',
  'origin',
  'originating',
  'original',
  'user',
  'peer',
  'socket',
  'connecting',
  'connection',
  'viewer',
  'cluster',
  'forward(?:ed|er)?',
  'proxy',
  'end',
  'custom',
  'wap',
  'cdn',
  'visitor',
];
/** Words that make a URL, host or path an override (`Request-Uri`, `Base-Url`, `X-Backend-Host`...). */
const OVERRIDE_WORDS = [
  'original',
  'rewrite',
  'rewritten',
  'request',
  'base',
  'proxy',
  'destination',
  'real',
  'backend',
  'target',
  'upstream',
  'override',
  'full',
  'absolute',
  'raw',
  'forwarded',
  'matched',
  'replaced',
  'invoke',
];
const L = oneOf(LEAD_WORDS);
const A = oneOf(ADDRESS_WORDS);
const O = oneOf(OVERRIDE_WORDS);
const SUFFIX = oneOf(TENANT_SUFFIXES);
/** The word rules as one pattern over a squashed name; repetition is bounded, so backtracking is too. */
const ASSERTED_BY_WORDS = new RegExp(
  [
    // identity: X-User, X-Auth-Email, X-Forwarded-Principal...
    `x${L}{0,2}${oneOf(IDENTITY_WORDS)}`,
    // tenant, owner, tier, trust
    `x?${L}{0,2}(?:${oneOf(TENANT_WORDS)}s?${SUFFIX}?|${oneOf(TENANT_WITH_SUFFIX_WORDS)}s?${SUFFIX}|clients?(?:ids?|uu?ids?)?)`,
    // key ids: X-Key-Id, Key-Id, X-Access-Key-Id, X-Gateway-Key-Id, X-Api-KeyId
    `x?${L}{0,2}(?:access|api)?keys?(?:ids?|uu?ids?)`,
    // client address: X-Ip, Real-Ip, X-Cluster-Client-IP, Fly-Client-IP, X-Forwarder-For,
    // X-Client-Address; up to 24 characters of any vendor's name before the address words
    `x?ip(?:s|v4|v6|addr|address)?`,
    `[a-z0-9]{0,24}${A}{1,3}(?:ip(?:s|v4|v6|addr|address)?|addr|address|for)`,
    // method overrides: X-HTTP-Method-Override, X-Method, _method, X-Forwarded-Method, X-HTTP-Verb
    `x?(?:http)?${O}{0,2}(?:method|verb)(?:override)?`,
    // scheme: X-Scheme, X-Url-Scheme, Front-End-Https, X-ARR-SSL (X-Forwarded-Proto, -Scheme and
    // -Ssl are the X-Forwarded-* family's)
    `x(?:url|client|request|real|arr)?(?:scheme|proto|protocol|https?|ssl|tls)`,
    `frontendhttps`,
    // URL and host overrides: Url, Request-Uri, X-HTTP-DestinationURL, Proxy-Host, X-Host-Override
    `x?(?:http)?${O}{0,3}ur[il]s?(?:override)?`,
    `(?:x(?:http)?${O}{0,3}|(?:http)?${O}{1,3})(?:host|hostname|servername|path|prefix)(?:override)?`,
  ]
    .map((p) => `^${p}$`)
    .join('|'),
);
/** Whether a squashed name is a member of a family the word rules describe. */
function assertedByWords(s: string): boolean {
  for (const w of ALWAYS_WORDS) if (s.includes(w)) return true;
  return ASSERTED_BY_WORDS.test(s);
}
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
  // Attack report 3 (F3): the gateway's own namespace, and privilege flags (`X-Internal-Request`,
  // `X-Trusted-Client`, `X-Bypass-Auth`: the word alone is a tenant word below).
  'x-gateway-',
  'x-gw-',
  'x-internal-',
  'x-trusted-',
  'x-bypass-',
];

/**
 * Look-alikes of the trusted header names (`company-id`, `xcompanyid`, `X-Api-Key-Id2`,
 * `X-Company-Tier-Override` for `X-Company-Id`...): the squashed name without its `x` holds the
 * squashed trusted name, or, for a trusted name under 6 characters once squashed (`X-Org`), is it.
 */
function lookAlikeTest(trusted: readonly string[]): (squashed: string) => boolean {
  const words = trusted.map((t) => squash(normaliseHeaderName(t).replace(/^x-/, '')));
  return (s) => {
    const bare = s.startsWith('x') ? s.slice(1) : s;
    return words.some((w) => (w.length < 6 ? bare === w : s.includes(w)));
  };
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
 * - client-asserted identity, tenant, forwarding, scheme, URL- and method-override headers, trusted
 *   proxies included: the lists (`CLIENT_ASSERTED`, `CLIENT_ASSERTED_PREFIXES`, compared with
 *   separator runs folded to `-`), the word rules (`assertedByWords`) and look-alikes of the
 *   trusted names (`lookAlikeTest`), both on the squashed name;
 * - with `allowOnly` (`headers.allowFromClients`), every client header it does not list (names, or
 *   prefixes ending in `*`), except framing (`ALWAYS_ALLOWED`) and a trusted proxy's
 *   `X-Forwarded-For/-Proto/-Host`;
 * - from a peer that is not a trusted proxy, every `X-Forwarded-*`. From a trusted proxy,
 *   `X-Forwarded-For/-Proto/-Host` are kept for the caller to read (it replaces them) and the rest
 *   of the family passes.
 * Copies into a new object rather than deleting: cheaper, and the client's view stays intact.
 * `keyMatcher` defaults to one for the request's `X-API-Key` (pass it when already built).
 */
export function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
  allowOnly?: readonly string[],
): (
  headers: IncomingHttpHeaders,
  peerTrusted?: boolean,
  keyMatcher?: KeyMaterialMatcher,
) => IncomingHttpHeaders {
  const isDropped = nameMatcher([...CLIENT_ASSERTED, ...HOP_BY_HOP, ...extra], CLIENT_ASSERTED_PREFIXES);
  const trusted = [names.companyId, names.keyId, names.companyTier].map(normaliseHeaderName);
  const exact = new Set([...trusted, normaliseHeaderName(names.requestId), 'x-api-key']);
  const isLookAlike = lookAlikeTest(trusted);
  const isAllowed = allowOnly === undefined ? null : nameMatcher([...allowOnly, ...ALWAYS_ALLOWED], []);
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
      // Lists and prefixes are compared with every run of separators as one `-` (`X-Gw.Company`).
      if (exact.has(n) || isDropped(n.replace(/[^a-z0-9]+/g, '-')) || (named !== null && named.has(n)))
        continue;
      if (n.startsWith(FORWARDED_PREFIX) && !peerTrusted) continue;
      if (setByGateway.has(n)) {
        if (n !== name) continue; // only the canonical spelling is read
      } else {
        const s = squash(n);
        if (isLookAlike(s) || assertedByWords(s)) continue;
        if (isAllowed !== null && !isAllowed(n)) continue;
      }
      const value = withoutKey(n, name, headers[name], keyMatcher);
      if (value !== undefined) out[name] = value;
    }
    dropSplitCopies(out, keyMatcher);
    return out;
  };
}

/**
 * Client headers `headers.allowFromClients` cannot leave out: framing and routing (a body needs
 * its length or coding and its type; `Host` is the request's). They still pass every other rule.
 */
const ALWAYS_ALLOWED = ['host', 'content-length', 'transfer-encoding', 'content-type'];

/**
 * Whether a header name (normal form) is one of `list` (an entry ending in `*` is a prefix) or
 * starts with one of `prefixes`. Names are header tokens (letters, digits, `-`, `_`: the config
 * schema's rule), so they go into the pattern as they are; one anchored pattern, built once, is
 * cheaper per header than comparing with each prefix.
 */
function nameMatcher(list: readonly string[], prefixes: readonly string[]): (name: string) => boolean {
  const names = new Set(list.filter((n) => !n.endsWith('*')).map(normaliseHeaderName));
  const starts = [...prefixes, ...list.filter((n) => n.endsWith('*')).map((n) => n.slice(0, -1))];
  const re = starts.length === 0 ? null : new RegExp(`^(?:${starts.map(normaliseHeaderName).join('|')})`);
  return (name) => names.has(name) || (re !== null && re.test(name));
}

/**
 * The matcher for the key in `X-API-Key` (see `createKeyMaterialMatcher`); without one (or with
 * several), it still finds every valid gateway key.
 */
export function matcherFor(headers: IncomingHttpHeaders): KeyMaterialMatcher {
  const key = headers['x-api-key'];
  return createKeyMaterialMatcher(typeof key === 'string' ? key : '');
}

/**
 * Headers the gateway may remove after scrubbing (`Transfer-Encoding` once a form or JSON body has
 * been read whole, or by http-proxy on a DELETE without a length; `traceparent` and `tracestate`
 * when tracing continues the trace; an empty trusted `X-Forwarded-Host`): the split-key check also
 * reads the joins without them (final re-check: 17 + 7 characters around `Transfer-Encoding`).
 */
const REMOVED_AFTER_SCRUB: ReadonlySet<string> = new Set([
  'transfer-encoding',
  'traceparent',
  'tracestate',
  'x-forwarded-host',
]);

/** Characters of a stretch a piece must hold to be dropped with it (unless it lies wholly inside). */
const GRAZE_LIMIT = 4;

/**
 * A key split over several headers, header names or cookie pairs (`X-A: nk_live_AbC…`, `X-B: …xYz`;
 * `X-<first half>: <second half>`; `a=<first half>; b=<second half>`): the names and values kept so
 * far, and each cookie pair on its own, are normalised and joined, each header's name before its
 * value. When stretches of 8 or more characters of the secret in the join, in any order and with
 * anything between them, together cover 24 of its characters (`piecesIn`), every header taking part
 * is dropped (from `Cookie`, the pairs), until no join shows one. Four joins are read: pieces
 * normalised with escapes undone (`normalise`) and as sent (`normaliseRaw`: an escape such as `&#9`
 * or `%6f` between two pieces would otherwise break a stretch that the raw text holds, final attack
 * pass F2), each with the headers in the order they came and in the reverse order: http-proxy copies
 * the headers onto the upstream request in reverse (`util._extend` walks the keys backwards), so
 * pieces sent in reverse order reach the upstream in the right one (final attack pass F1).
 * A piece that holds fewer than 4 characters of a stretch, at its edge, is kept. Each round drops
 * at least one piece, so this ends. Base64 or hex split over headers is not put back together.
 */
function dropSplitCopies(out: IncomingHttpHeaders, m: KeyMaterialMatcher): void {
  for (;;) {
    /** Per piece: its header, for a cookie pair its index in `pairs`, and its two normal forms. */
    const owners: string[] = [];
    const pairIndex: number[] = [];
    const forms: [decoded: string, raw: string][] = [];
    /** Where each header's pieces start, in `owners` order (for the reverse join). */
    const groups: number[] = [];
    /** Pieces of headers the gateway may still remove (REMOVED_AFTER_SCRUB). */
    const volatile: number[] = [];
    let pairs: string[] | null = null;
    const add = (text: string, name: string, pair: number) => {
      owners.push(name);
      pairIndex.push(pair);
      forms.push([m.normalise(text), m.normaliseRaw(text)]);
    };
    for (const name in out) {
      const v = out[name];
      if (v === undefined) continue;
      groups.push(owners.length);
      if (REMOVED_AFTER_SCRUB.has(name)) volatile.push(owners.length, owners.length + 1);
      add(name, name, -1);
      if (name === 'cookie' && typeof v === 'string') {
        pairs = v
          .split(';')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        pairs.forEach((p, i) => add(p, name, i));
      } else add(typeof v === 'string' ? v : v.join(','), name, -1);
    }
    const found = findSplitCopy(forms, groups, volatile, m);
    if (found === null) return;
    const { order, ends, spans } = found;
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
        const piece = order[i]!;
        if (pairIndex[piece]! >= 0) droppedPairs.add(pairIndex[piece]!);
        else delete out[owners[piece]!];
      }
    }
    if (pairs !== null && out.cookie !== undefined && droppedPairs.size > 0) {
      const kept = pairs.filter((_, i) => !droppedPairs.has(i));
      if (kept.length > 0) out.cookie = kept.join('; ');
      else delete out.cookie;
    }
  }
}

/**
 * The first of the four joins (decoded and raw forms; headers in order and reversed, each header's
 * pieces kept in order) in which `piecesIn` finds a split copy: the pieces' order in that join,
 * where each ends in it, and the stretches; null when none holds one.
 */
function findSplitCopy(
  forms: [string, string][],
  groups: number[],
  volatile: number[],
  m: KeyMaterialMatcher,
): { order: number[]; ends: number[]; spans: [number, number][] } | null {
  const forward = forms.map((_, i) => i);
  const reverse: number[] = [];
  for (let g = groups.length - 1; g >= 0; g--) {
    const to = g + 1 < groups.length ? groups[g + 1]! : forms.length;
    for (let i = groups[g]!; i < to; i++) reverse.push(i);
  }
  const orders = [forward, reverse];
  // Without the headers removed later, the pieces on either side of one become neighbours.
  if (volatile.length > 0) {
    const kept = (i: number) => !volatile.includes(i);
    orders.push(forward.filter(kept), reverse.filter(kept));
  }
  // Without escapes the raw join is the decoded one: read it once.
  const readRaw = forms.some(([decoded, raw]) => decoded !== raw);
  for (const form of readRaw ? ([0, 1] as const) : ([0] as const)) {
    for (const order of orders) {
      let joined = '';
      const ends: number[] = [];
      for (const i of order) {
        joined += forms[i]![form];
        ends.push(joined.length);
      }
      const spans = m.piecesIn(joined);
      if (spans !== null) return { order, ends, spans };
    }
  }
  return null;
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
