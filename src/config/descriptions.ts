/**
 * What each config key means, by its path in the file (`routes[].prefix`: `[]` stands for the items
 * of a list). `json-schema.ts` puts each line into `config/schema.json` as the key's `description`
 * (editors show it on hover), and `reference.ts` renders docs/configuration.md from that schema.
 * A key the schema has and this table lacks (or the other way round) fails
 * test/unit/config/descriptions.test.ts: add the line, then run `npm run schema`.
 *
 * Write what a key does and what happens at its limits; the type, bounds, default and
 * environment variable are printed next to it from the schema, so do not repeat them.
 */
export const CONFIG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  server: 'The public listener: the port clients call, its timeouts and limits.',
  'server.host': 'Address the gateway listens on.',
  'server.port': 'Port the gateway listens on; `0` picks a free port.',
  'server.headersTimeoutMs':
    'Time a client has to send all request headers (slowloris guard); past it the answer is 408 and the connection closes. At most `server.requestTimeoutMs` (unless that is `0`).',
  'server.requestTimeoutMs':
    'Time a client has to send the whole request, body included; past it 408. `0` = no limit.',
  'server.keepAliveTimeoutMs':
    'How long an idle client keep-alive connection stays open (announced as `Keep-Alive: timeout=N`); also how long, during a drain, a connection idle when it began may still bring one request (answered with `Connection: close`).',
  'server.maxHeaderSize': 'Bytes of request headers accepted; more is refused with 431.',
  'server.bodyLimitBytes':
    'Request body limit, whether declared (`Content-Length`) or counted as the body streams; over it 413. `0` = no limit.',
  'server.trustedProxies':
    'Addresses or CIDRs of the proxies in front of the gateway (load balancer, ingress). Only their `X-Forwarded-For`/`-Proto`/`-Host` are believed: for the client address, HTTPS detection and continued traces. URL-override headers are never believed.',
  'server.requireHttps':
    'Refuse plain HTTP with 403: a request must arrive over the gateway’s own TLS, or carry `X-Forwarded-Proto: https` from a trusted proxy.',
  'server.tls':
    'Serve HTTPS directly. The pair is checked at start and reloaded without a restart when either file changes (docs/operations.md, "TLS").',
  'server.tls.certFile': 'PEM certificate (chain) file.',
  'server.tls.keyFile': 'PEM private key file of the certificate.',
  'server.shutdownTimeoutMs':
    'On SIGTERM/SIGINT, how long in-flight requests may take to finish before they are cut.',

  overload:
    'Graceful overload, per process (each `--workers` worker on its own): past either bound a new request is answered 503 `OVERLOADED` with `Retry-After` at once, before its key is looked up, instead of queueing (docs/operations.md, "Overload"). `/healthz` and `/readyz` are never refused.',
  'overload.maxInFlight':
    'Requests served at once (admitted, not yet answered, whatever the upstream takes). Size it by Little’s law: the throughput wanted × the upstream’s slowest acceptable latency. `0` = no bound.',
  'overload.maxEventLoopDelayMs':
    'Event-loop delay past which new requests are refused: the process is busier than it can keep up with (sampled every 20 ms; two late samples in a row, so one pause refuses nothing). `0` = not watched.',
  'overload.retryAfterSeconds': '`Retry-After` of the 503 `OVERLOADED` answer.',

  admin: 'The admin API, `/metrics`, the admin probes and the console: their own listener.',
  'admin.enabled': 'Run the admin listener at all.',
  'admin.host':
    'Address of the admin listener. A non-loopback address needs a token (`admin.token` or `admin.tokens`), or the gateway refuses to start.',
  'admin.port': 'Port of the admin listener; `0` picks a free port.',
  'admin.token':
    'The bearer token of the admin API, role `admin`, named `admin` in the audit trail; at least 16 characters. Compared in constant time.',
  'admin.console': 'Serve the operator console at `/console/` on the admin listener.',
  'admin.consoleOrigin':
    'The origin the console is opened at, when it is not `http://<admin.host>:<admin port>` (a reverse proxy, another name), e.g. `https://admin.example.com`. Only this origin (and, without a token, the loopback origins) may call the admin API from a browser.',
  'admin.tokens':
    'More admin tokens, each with a name and a role, given by the SHA-256 of the token (never the token). Names must be unique (`admin` is taken when `admin.token` is set). The environment form is `name:role:sha256[,name:role:sha256...]`.',
  'admin.tokens[].name': 'The token’s name: the actor in the audit trail.',
  'admin.tokens[].role':
    '`read`: every GET; `keys`: also create, rotate and revoke keys; `admin`: everything (docs/admin.md, "Roles").',
  'admin.tokens[].sha256':
    'Hex SHA-256 of the token (`printf %s "$TOKEN" | sha256sum`), optionally prefixed `sha256:`.',
  'admin.tls':
    'Serve the admin API over HTTPS (may be the same files as `server.tls`; reloaded the same way). Without it, a token on a non-loopback address logs a warning at start.',
  'admin.tls.certFile': 'PEM certificate (chain) file.',
  'admin.tls.keyFile': 'PEM private key file of the certificate.',

  dashboard:
    'The company dashboard: companies sign in with a code sent by e-mail and manage their own keys, members and usage (docs/dashboard.md). Its own listener; needs the Redis or memory store.',
  'dashboard.enabled':
    'Run the dashboard listener. `config check` and `serve` refuse it with the file store.',
  'dashboard.host':
    'Address of the dashboard listener. A non-loopback address needs an `https://` `publicOrigin` (TLS ends in front of it).',
  'dashboard.port': 'Port of the dashboard listener; `0` picks a free port.',
  'dashboard.publicOrigin':
    'The origin members open the dashboard at, e.g. `https://dashboard.example.com`; default `http://<host>:<port>` (loopback only). Writes must come from it (`Origin` and `Sec-Fetch-Site`), and links in mails point to it.',
  'dashboard.registration':
    '`open`: anyone may register a company (it stays `pending` until an operator approves it); `closed`: operators invite instead.',
  'dashboard.session': 'Server-side sessions, kept in the store.',
  'dashboard.session.idleMinutes': 'A session unused this long ends.',
  'dashboard.session.absoluteHours': 'A session ends this long after sign-in, however active.',
  'dashboard.signIn': 'Sign-in codes: 6 digits, 10 minutes, 5 tries (fixed); these limits on sending them.',
  'dashboard.signIn.resendCooldownSeconds': 'A new code for the same address is sent at most this often.',
  'dashboard.signIn.perAddressPerHour':
    'Codes requested for one address per hour; past it the answer is 429.',
  'dashboard.signIn.perClientPerHour':
    'Sign-in requests (codes asked for and tried) from one client address per hour; past it 429.',
  'dashboard.mail': 'How sign-in codes and approvals are mailed (plain text).',
  'dashboard.mail.transport':
    '`smtp` (nodemailer, `mail.url`); `log` prints each mail to the log instead: for the demo only, refused unless the dashboard listens on loopback.',
  'dashboard.mail.url':
    '`smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://host:465`. The password is masked in every output.',
  'dashboard.mail.from': 'The `From` of every mail.',
  'dashboard.mail.tls': 'TLS towards the SMTP server.',
  'dashboard.mail.tls.rejectUnauthorized': 'Refuse a server certificate that does not verify.',
  'dashboard.mail.tls.caFile': 'PEM file of the CA that signed the SMTP server’s certificate (a private CA).',
  'dashboard.mail.tls.requireTls': 'On `smtp://`, refuse to send unless the server offers STARTTLS.',

  routes:
    'The protected routes: path prefix → upstream. The longest matching prefix wins, on segment boundaries; no match is 404. The path is forwarded unchanged (docs/routes-and-scopes.md).',
  'routes[].prefix':
    'Path prefix, e.g. `/notify/v1`: starts with `/`, plain URL path characters (no `%`, `\\` or `;`), no empty (`//`) or dot (`.`, `..`) segment; each prefix once.',
  'routes[].target':
    'The one-target form of `targets`. Upstream base URL (`http://` or `https://`). A path of its own is prepended to the request path: `http://b:9090/base` + `/notify/v1/x` → `/base/notify/v1/x`. `UPSTREAM_URL` sets it when the file has at most one route.',
  'routes[].targets':
    'The route’s upstream pool (docs/upstreams.md): a list of `{url, weight}`, instead of `target`. Each URL as in `target`; a hostname is re-resolved and each of its addresses is a target.',
  'routes[].targets[].url': 'Upstream base URL, as in `target`.',
  'routes[].targets[].weight': 'Share of the traffic relative to the other targets (1–1000).',
  'routes[].timeoutMs': 'This route’s `upstream.timeoutMs`.',
  'routes[].balancing':
    '`round-robin`: smooth weighted round-robin; `least-requests`: fewest requests in flight per weight, ties at random; `company-hash`: a company stays on one target (weighted rendezvous hash; only the companies of a target that leaves move).',
  'routes[].timeouts':
    'Timeouts of one attempt, each with its own answer and metric label (docs/upstreams.md).',
  'routes[].timeouts.connect':
    'Time to open a connection to a target; past it the attempt fails as not sent (retried elsewhere) or 504 `UPSTREAM_CONNECT_TIMEOUT`.',
  'routes[].timeouts.headers':
    'Time from forwarding to the response headers (default `timeoutMs`); past it 504 `UPSTREAM_TIMEOUT`.',
  'routes[].timeouts.idle':
    'Longest gap between bytes of the response (default `timeoutMs`); past it the client connection is cut.',
  'routes[].timeouts.total':
    'The whole request, every attempt and the response included; unset: no bound. Past it 504 `UPSTREAM_TOTAL_TIMEOUT`, or the client connection is cut once the answer has begun.',
  'routes[].retries': 'Retries on another target; a request whose body reached a target is never sent again.',
  'routes[].retries.attempts': 'Attempts per request, the first included (1 = no retry).',
  'routes[].retries.budget':
    'Bounds retries over the last 10 seconds to `ratio` × requests + `minPerSecond` × 10.',
  'routes[].retries.budget.ratio': 'Retries as a share of requests.',
  'routes[].retries.budget.minPerSecond':
    'Retries per second allowed whatever the traffic (so a quiet route can still retry).',
  'routes[].retries.idempotentMethods':
    'Methods also retried on 502, 503, 504 or a timeout before the response headers, when the request has no body. Add `PUT`, `DELETE` only when the upstream treats them as idempotent.',
  'routes[].outlier': 'Passive health checking: targets that fail in a row are ejected for a while.',
  'routes[].outlier.consecutiveFailures':
    'Failures in a row (connection failure, timeout, 502/503/504) that eject a target.',
  'routes[].outlier.baseEjectionMs': 'First ejection time; each further ejection doubles it.',
  'routes[].outlier.maxEjectionMs': 'The longest ejection.',
  'routes[].outlier.maxEjectedPercent':
    'Most targets ejected at once, in percent (at least one may be; 0: never eject).',
  'routes[].whenNoneHealthy':
    '`panic`: with no healthy target, try them all anyway; `refuse`: answer 503 `NO_HEALTHY_UPSTREAM`.',
  'routes[].healthCheck': 'Active health checks: a GET to each target on an interval. Off unless set.',
  'routes[].healthCheck.path': 'Path of the check request (not joined to the target’s base path).',
  'routes[].healthCheck.intervalMs': 'Time between two checks of a target.',
  'routes[].healthCheck.timeoutMs': 'A check without an answer in this time fails.',
  'routes[].healthCheck.expectedStatuses': 'Statuses that pass.',
  'routes[].healthCheck.healthyThreshold':
    'Passes in a row that make a target healthy again (also ending its ejection).',
  'routes[].healthCheck.unhealthyThreshold': 'Failures in a row that make a target unhealthy.',
  'routes[].maxInFlight':
    'The bulkhead: requests in flight on this route per company (and key); past it 503 `UPSTREAM_BUSY`.',
  'routes[].maxInFlight.perCompany': 'Requests in flight per company.',
  'routes[].maxInFlight.perKey': 'Requests in flight per key (unset: no cap of its own).',
  'routes[].methods':
    'Methods this route forwards, in upper case (`GET` implies `HEAD`); any other gets 405 with `Allow`, before the key is read. Default: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS. `TRACE`, `TRACK` and `CONNECT` are always refused.',

  upstream: 'How the gateway talks to upstreams.',
  'upstream.timeoutMs':
    'Time to the upstream’s response headers, and the longest idle gap after them; past it 504 (or the client connection is cut, once the answer has begun).',
  'upstream.maxSockets': 'Keep-alive connections per upstream.',
  'upstream.keepAliveMs': 'How long an idle upstream connection is kept.',
  'upstream.resolveIntervalMs':
    'How often a target given by hostname is looked up again; each of its addresses is a target of its own with the same weight (a Kubernetes headless Service), `Host` stays the name. 0: never (the name is resolved at each new connection).',

  store: 'Where companies and key records live (docs/keys.md, "Stores").',
  'store.type':
    '`file`: a declarative key file, read-only, reloaded on change (the embedded default, no server); `redis`: the shared store behind the admin API; `memory`: tests and the demo. `REDIS_URL` sets `redis`.',
  'store.file': 'The file store.',
  'store.file.path':
    'The key file, relative to the config file’s folder (so beside a custom config, not the shipped one).',
  'store.redis':
    'The Redis store: single node, Sentinel or Cluster (docs/scaling.md). Needs Redis 6.2 or later.',
  'store.redis.url':
    '`redis://` or `rediss://` (TLS); user and password in the URL. With `sentinels` or `cluster` only its credentials, TLS and database are used.',
  'store.redis.sentinels': 'Sentinel addresses (not the data nodes); with `sentinelName`.',
  'store.redis.sentinels[].host': 'Sentinel host.',
  'store.redis.sentinels[].port': 'Sentinel port.',
  'store.redis.sentinelName': 'The master name the sentinels monitor.',
  'store.redis.cluster': 'Redis Cluster seed nodes; the rest is discovered.',
  'store.redis.cluster[].host': 'Node host.',
  'store.redis.cluster[].port': 'Node port.',
  'store.redis.keyPrefix': 'Prefix of every Redis key and pub/sub channel the gateway uses.',
  'store.redis.commandTimeoutMs':
    'Upper bound of one Redis command: no request waits longer on a dead or hung Redis.',
  'store.redis.connectTimeoutMs': 'Connect timeout; start-up waits at most this long for Redis.',

  cache: 'Each instance’s in-process cache of key records and companies (positive and negative).',
  'cache.maxEntries': 'Key records cached per process (about 0.6 KB of heap each).',
  'cache.positiveTtlMs':
    'A valid key is re-read from the store after this long (invalidations usually drop it sooner).',
  'cache.negativeTtlMs':
    'An unknown key is remembered as unknown this long, so guessing costs no store lookup.',
  'cache.staleIfErrorMs':
    'While the store is unreachable, a cached valid key keeps working this much past its TTL.',

  rateLimit:
    'Limits per company and per key, by tier; shared by every instance through Redis (docs/rate-limits.md).',
  'rateLimit.tiers':
    'The tiers a company can be on, each a `name` and either `windows` or the one-window shorthand `points` + `duration`. A company’s own `limits` replace its tier’s windows; a key’s own `limits` add to them.',
  'rateLimit.tiers[].name': 'Tier name, lower case: what a company’s `tier` names.',
  'rateLimit.tiers[].points': 'Requests per window (shorthand for one window).',
  'rateLimit.tiers[].duration': 'Window length in seconds (shorthand for one window).',
  'rateLimit.tiers[].windows':
    'Windows, all enforced, no two of the same length. A request counts in all of them or, when one is full, in none.',
  'rateLimit.tiers[].windows[].points': 'Requests per window.',
  'rateLimit.tiers[].windows[].duration': 'Window length in seconds.',
  'rateLimit.failurePolicy':
    'While the limiter’s Redis fails: `insurance` admits each process’s share of every window, in memory, and writes what it admitted to Redis when Redis answers (with load spread evenly no window exceeds its limit: docs/rate-limits.md); `open` admits everything; `closed` answers 503 (and `/readyz` turns `not ready`).',
  'rateLimit.redisUrl':
    'A Redis for the rate-limit counters (and usage) only, when the store is not Redis: file-store sidecars then share exact limits. Ignored with the Redis store.',
  'rateLimit.lease':
    'Shared limits take quota from Redis in leases spent locally: never over the limit, under-admission bounded (docs/rate-limits.md, "Leases").',
  'rateLimit.lease.maxSize': 'Largest lease, in requests. `1` = one Redis call per request, exact.',
  'rateLimit.lease.divisor':
    'A lease takes at most 1/`divisor` of what is left of a window, so leases shrink to 1 near the limit.',
  'rateLimit.instances':
    'Gateway replicas sharing the limits (`--workers` is multiplied in). While Redis fails, each process admits ⌊points / (instances × workers)⌋ per window; set it to the largest replica count (a smaller value multiplies what an outage can admit by that factor).',
  'rateLimit.authFailures':
    'The failed-authentication budget per client address and process: missing or invalid keys and keys in the URL count; past it every request from the address gets 429 until the window ends.',
  'rateLimit.authFailures.enabled': 'Keep the budget at all.',
  'rateLimit.authFailures.points': 'Failures allowed per window.',
  'rateLimit.authFailures.duration': 'Window length in seconds.',

  keys: 'Key rules (docs/keys.md).',
  'keys.maxActiveKeys':
    'Active keys per company (the spec recommends two); over it, key creation answers 409. `0` = no cap.',
  'keys.rotationAgeDays': 'Keys older than this are listed with `rotationDue: true`.',
  'keys.acceptLegacyFormat':
    'Accept keys that do not follow the `nk_` format (imported from another system by hash).',
  'keys.maxLength': 'Longer `X-API-Key` values are refused unread (401).',
  'keys.exposedKeys':
    'A valid key seen in a URL: `flag` it (`exposedAt`, a `key.exposed` audit event), or also `revoke` it at once.',
  'keys.lastUsedIntervalMs': '`lastUsedAt` is written at most this often per key.',

  headers: 'Headers the gateway sets for the upstream, and which client headers it forwards.',
  'headers.companyId': 'Trusted header carrying the key’s company id.',
  'headers.keyId': 'Trusted header carrying the key’s id (never the key).',
  'headers.companyTier': 'Trusted header carrying the company’s tier.',
  'headers.requestId': 'Request id header, to the upstream and on every answer.',
  'headers.acceptClientRequestId':
    'Reuse a well-formed client request id (1–128 characters, no key material) instead of generating one.',
  'headers.stripFromClients':
    'More client headers never forwarded, from any peer; a trailing `*` makes a prefix (`X-Debug-*`).',
  'headers.allowFromClients':
    'Allow-list mode: only these client headers are forwarded (same syntax), besides `Host`, `Content-Length`, `Transfer-Encoding`, `Content-Type` and a trusted proxy’s `X-Forwarded-For`/`-Proto`/`-Host`. Every drop rule still applies to them. Unset: every header passes that no drop rule names (docs/security.md).',

  guards:
    'How far the leak guards read (docs/security.md, "Levels"); they serve the threat model’s lines on keys in URLs and headers.',
  'guards.level':
    '`default`: the presented key as sent, %-decoded or in base64 (`Basic` too), and any key shape with a valid checksum, in the URL, every header and cookies (a few native searches per value). `strict`: also every escape, Unicode folding, hex, base32, nesting, separators inside the secret, bare key bodies and a key split over headers or URL parts (several passes per value: about 30 µs more on an API request, up to 300 µs with cookies and tokens; docs/security.md, "Levels").',

  methodOverride:
    'Method overrides (`_method`, `X-HTTP-Method-Override`) that would run another method than the one a route or scope allowed.',
  'methodOverride.params':
    'Parameter names that override the method: in the URL refused 400 `METHOD_OVERRIDE_IN_URL` before authentication; looked for in bodies where methods are restricted.',
  'methodOverride.inBody':
    'Where the route, the company’s or the key’s scope restricts methods: `refuse` reads form and JSON bodies as they stream and answers 400 `METHOD_OVERRIDE_IN_BODY` (415 when it cannot read them); `allow` never reads a body. Elsewhere every body streams unread.',
  'methodOverride.bodyScanLimitBytes':
    'A checked body that ends within this many bytes reaches the upstream only after the check; a longer one streams one chunk behind the scanner, and an override found late cuts the upstream request (400).',

  urlKeyGuard: 'The check that refuses an API key sent in the URL, before authentication (docs/security.md).',
  'urlKeyGuard.paramNames':
    'Query parameter names refused as a key in the URL (401), compared without case, `-`, `_` and `.`. Key-shaped values are refused under any name.',
  'urlKeyGuard.methodOverrideParams': 'Deprecated: `methodOverride.params` (when set, it takes its place).',
  'urlKeyGuard.methodOverrideInBody': 'Deprecated: `methodOverride.inBody` (when set, it takes its place).',
  'urlKeyGuard.maxParams':
    'Query and matrix pieces read before authentication; a URL with more gets 400 (a cost cap).',
  'urlKeyGuard.maxPathSegments':
    'Path segments read before authentication; a URL with more gets 400 (a cost cap).',

  securityHeaders: 'Security headers (helmet’s set) on answers.',
  'securityHeaders.proxied':
    'Upstream answers: `fill` adds the headers the upstream did not set; `override` replaces the upstream’s; `off` adds none. The gateway’s own answers always carry the full set (HSTS over HTTPS only).',

  browser: 'API keys are for servers; browsers can be refused outright.',
  'browser.refuseBrowserRequests': 'Refuse requests carrying `Origin` or `Sec-Fetch-Mode: cors` with 403.',

  signing:
    'Sign the trusted headers for upstreams that can also be reached another way (docs/requests.md, "Signed identity").',
  'signing.enabled': 'Add the signature header to every forwarded request.',
  'signing.secret':
    'HMAC-SHA256 secret shared with the upstream; at least 32 characters; required when enabled.',
  'signing.header': 'Name of the signature header.',

  log: 'Logs: pino JSON on stdout (docs/operations.md, "Logs").',
  'log.level': 'Least level written.',
  'log.accessLog': 'Write one access line per request.',

  usage: 'Requests per company and UTC hour (docs/admin.md, "Usage").',
  'usage.enabled': 'Count usage at all.',
  'usage.retentionDays': 'Days hourly counts are kept in Redis.',
  'usage.flushIntervalMs': 'How often each instance writes its counts, in one pipeline.',

  metrics: 'Prometheus metrics on the admin port (docs/operations.md, "Metrics").',
  'metrics.companyLabel':
    'Label rate-limit metrics with company ids (unbounded cardinality: off by default).',

  events: 'Events and signed webhooks (docs/events.md).',
  'events.enabled': 'Emit events and deliver webhooks (per gateway and per company).',
  'events.webhooks': 'The gateway’s own endpoints: every event they ask for, of every company (at most 16).',
  'events.webhooks[].id':
    'Names the endpoint in deliveries, logs and metrics; default `gw-` + a hash of the URL.',
  'events.webhooks[].url':
    'An http(s) receiver; credentials in it are sent as Basic authentication and masked wherever it is shown.',
  'events.webhooks[].secret': 'Standard Webhooks secret: `whsec_` + base64 of 24–64 random bytes.',
  'events.webhooks[].events': 'Event types it receives (`key.*`, `*`); default every event.',
  'events.delivery': 'How deliveries are sent and retried.',
  'events.delivery.timeoutMs':
    'One attempt’s time limit, connection to status line (a late receiver counts as failed).',
  'events.delivery.maxAttempts': 'Attempts before a delivery becomes a dead letter (the first included).',
  'events.delivery.backoffMs': 'Delay before the second attempt; each further one doubles it, with jitter.',
  'events.delivery.maxBackoffMs':
    'The longest delay between two attempts (also caps a receiver’s Retry-After).',
  'events.delivery.concurrency': 'Deliveries in flight at once per gateway process.',
  'events.delivery.pollIntervalMs': 'How often each process looks for due deliveries.',
  'events.scanIntervalMs':
    'How often keys are scanned for expiring, rotation-due and grace-ending keys (one process per interval).',
};
