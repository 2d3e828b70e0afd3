import { METHODS } from 'node:http';
import { z } from 'zod';
import { eventsConfigSchema } from './events.js';
import { tierNameSchema } from './fields.js';
import { MAX_WINDOW_SECONDS, pathPrefixSchema, windowListSchema } from './limits.js';

/** Header names are compared case-insensitively and `_`/`-` alike, so they are stored normalised. */
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be a header name of letters, digits and dashes')
  .transform((v) => v.toLowerCase());

const url = z
  .string()
  .url()
  .refine((v) => /^https?:\/\//.test(v), 'must be an http:// or https:// URL');

const redisUrl = z
  .string()
  .url()
  .refine((v) => /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL');

const ms = (def: number) => z.coerce.number().int().min(1).max(3_600_000).default(def);

/**
 * A rate-limit tier: a list of `windows` (each `points` per `duration` seconds, all enforced), or
 * the shorthand `points` + `duration` for one window. Parsed into `{ name, windows }`.
 */
export const tierSchema = z
  .object({
    name: tierNameSchema,
    /** Requests allowed per window (shorthand for one window). */
    points: z.coerce.number().int().min(1).optional(),
    /** Window length in seconds (shorthand for one window). */
    duration: z.coerce.number().int().min(1).max(MAX_WINDOW_SECONDS).optional(),
    windows: windowListSchema.optional(),
  })
  .strict()
  .superRefine((t, ctx) => {
    const short = t.points !== undefined || t.duration !== undefined;
    if (short && t.windows)
      ctx.addIssue({
        code: 'custom',
        path: ['windows'],
        message: 'give windows, or points and duration, not both',
      });
    else if (!t.windows && (t.points === undefined || t.duration === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['windows'],
        message: 'give windows, or both points and duration',
      });
  })
  .transform((t) => ({
    name: t.name,
    windows: t.windows ?? [{ points: t.points ?? 1, duration: t.duration ?? 1 }],
  }));

const methodName = z
  .string()
  .regex(/^[A-Z][A-Z-]*$/, 'must be an uppercase method name such as GET')
  .refine((m) => !['TRACE', 'TRACK', 'CONNECT'].includes(m), 'is always refused by the gateway')
  .refine((m) => METHODS.includes(m), 'is not a method Node.js accepts');

const optionalMs = z.coerce.number().int().min(1).max(3_600_000).optional();
const count = (min: number, max: number, def: number) =>
  z.coerce.number().int().min(min).max(max).default(def);

/** One target of a route's pool: a base URL and its share of the traffic. */
export const routeTargetSchema = z.object({ url, weight: count(1, 1000, 1) }).strict();

/** How a route's pool answers, balances, retries and ejects (docs/upstreams.md). */
const poolFields = {
  balancing: z.enum(['round-robin', 'least-requests', 'company-hash']).default('round-robin'),
  timeouts: z
    .object({ connect: ms(5_000), headers: optionalMs, idle: optionalMs, total: optionalMs })
    .strict()
    .default({}),
  retries: z
    .object({
      attempts: count(1, 10, 2),
      budget: z
        .object({
          ratio: z.coerce.number().min(0).max(1).default(0.2),
          minPerSecond: count(0, 10_000, 3),
        })
        .strict()
        .default({}),
      idempotentMethods: z
        .array(methodName.refine((m) => m !== 'POST' && m !== 'PATCH', 'is not idempotent'))
        .default(['GET', 'HEAD', 'OPTIONS']),
    })
    .strict()
    .default({}),
  outlier: z
    .object({
      consecutiveFailures: count(1, 1000, 5),
      baseEjectionMs: ms(30_000),
      maxEjectionMs: ms(300_000),
      maxEjectedPercent: count(0, 100, 50),
    })
    .strict()
    .default({}),
  whenNoneHealthy: z.enum(['panic', 'refuse']).default('panic'),
  healthCheck: z
    .object({
      path: z.string().regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@/?-]*$/, 'must be a path starting with /'),
      intervalMs: ms(10_000),
      timeoutMs: ms(2_000),
      expectedStatuses: z.array(z.coerce.number().int().min(100).max(599)).min(1).default([200]),
      healthyThreshold: count(1, 100, 2),
      unhealthyThreshold: count(1, 100, 3),
    })
    .strict()
    .optional(),
  maxInFlight: z
    .object({ perCompany: count(1, 1_000_000, 100), perKey: z.coerce.number().int().min(1).optional() })
    .strict()
    .optional(),
};

export const routeSchema = z
  .object({
    prefix: pathPrefixSchema,
    /** The one-target form of `targets`. */
    target: url.optional(),
    targets: z.array(routeTargetSchema).min(1).max(256).optional(),
    /** Overrides `upstream.timeoutMs` for this route. */
    timeoutMs: z.coerce.number().int().min(1).max(3_600_000).optional(),
    /**
     * Methods this route forwards (uppercase; `GET` implies `HEAD`); any other answers 405 with
     * `Allow`. Default: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS.
     */
    methods: z
      .array(methodName)
      .min(1, 'list at least one method, or leave methods out')
      .refine((l) => new Set(l).size === l.length, 'lists a method twice')
      .optional(),
    ...poolFields,
  })
  .strict()
  .superRefine((r, ctx) => {
    if ((r.target === undefined) === (r.targets === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['targets'],
        message: 'give target or targets, not both or neither',
      });
    const o = r.outlier;
    if (o.maxEjectionMs < o.baseEjectionMs)
      ctx.addIssue({
        code: 'custom',
        path: ['outlier', 'maxEjectionMs'],
        message: 'must be at least baseEjectionMs',
      });
  })
  .transform(({ targets, ...r }) => ({
    ...r,
    /** Every target of the route (`target` is one with weight 1). */
    targets: targets ?? [{ url: r.target!, weight: 1 }],
  }));

export const DEFAULT_TIERS = [
  { name: 'free', points: 60, duration: 60 },
  { name: 'standard', points: 600, duration: 60 },
  { name: 'enterprise', points: 6000, duration: 60 },
];

/** How much of a URL the key guard examines before authentication (cost cap; docs/security.md). */
export const DEFAULT_URL_GUARD_LIMITS = { maxParams: 256, maxPathSegments: 128 } as const;
/**
 * Parameters that would override the method the gateway checked a route's and a key's methods
 * against (method-override's `_method`, Rails, Laravel, Symfony read them).
 */
export const DEFAULT_METHOD_OVERRIDE_PARAMS = [
  '_method',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
];
/** Names a client must not use for a key in the URL; compared after %-decoding, lowercasing and dropping `-`/`_`. */
export const DEFAULT_URL_KEY_PARAMS = [
  'api_key',
  'apikey',
  'x-api-key',
  'key',
  'api-token',
  'token',
  'access_key',
];

/** The one zod schema of the config file (after env overrides), with every default. */
export const configSchema = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default('0.0.0.0'),
        port: z.coerce.number().int().min(0).max(65535).default(8080),
        /** Time allowed for a client to send all request headers (slowloris guard). */
        headersTimeoutMs: ms(10_000),
        /** Time allowed for a client to send the whole request, body included. 0 disables. */
        requestTimeoutMs: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
        keepAliveTimeoutMs: ms(5_000),
        maxHeaderSize: z.coerce.number().int().min(1024).max(1_048_576).default(16_384),
        /** 0 = no limit. */
        bodyLimitBytes: z.coerce.number().int().min(0).default(26_214_400),
        /** Addresses or CIDRs whose X-Forwarded-* headers are believed. */
        trustedProxies: z.array(z.string().min(1)).default([]),
        /** Refuse plain-HTTP requests (direct, or X-Forwarded-Proto from a trusted proxy) with 403. */
        requireHttps: z.boolean().default(false),
        tls: z.object({ certFile: z.string().min(1), keyFile: z.string().min(1) }).optional(),
        /** Grace period for in-flight requests on SIGTERM. */
        shutdownTimeoutMs: ms(10_000),
      })
      .strict()
      // Node refuses to start a server whose headers timeout outlasts its request timeout.
      .refine((s) => s.requestTimeoutMs === 0 || s.headersTimeoutMs <= s.requestTimeoutMs, {
        message: 'must not exceed server.requestTimeoutMs (unless that is 0)',
        path: ['headersTimeoutMs'],
      })
      .default({}),
    admin: z
      .object({
        enabled: z.boolean().default(true),
        host: z.string().min(1).default('127.0.0.1'),
        port: z.coerce.number().int().min(0).max(65535).default(8081),
        token: z.string().min(16, 'must be at least 16 characters').optional(),
        /** Serve the operator console at `/console/` on the admin listener. */
        console: z.boolean().default(false),
        /**
         * The origin the console is opened at, when not `http://<admin.host>:<admin port>` (a proxy,
         * another name). Only this origin (and, without a token, the loopback origins) may write.
         */
        consoleOrigin: z
          .string()
          .regex(/^https?:\/\/[^/?#@\s]+$/, 'must be an origin: http(s)://host[:port], no path')
          .optional(),
        /** More admin tokens, by SHA-256: `{name, role: read|keys|admin, sha256}` (src/admin/roles.ts). */
        tokens: z
          .array(
            z
              .object({
                name: z
                  .string()
                  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 letters, digits, ".", "_" or "-"'),
                role: z.enum(['read', 'keys', 'admin']),
                sha256: z
                  .string()
                  .transform((h) => h.replace(/^sha256:/, '').toLowerCase())
                  .pipe(z.string().regex(/^[0-9a-f]{64}$/, 'must be the 64-hex SHA-256 of the token')),
              })
              .strict(),
          )
          .default([]),
        /** Serve the admin API over HTTPS (certificate reloaded when the files change, like server.tls). */
        tls: z
          .object({ certFile: z.string().min(1), keyFile: z.string().min(1) })
          .strict()
          .optional(),
      })
      .strict()
      .superRefine((a, ctx) => {
        // Names are the audit trail's actors: two tokens must not pass for each other.
        const names = [...(a.token ? ['admin'] : []), ...a.tokens.map((t) => t.name)];
        names.forEach((n, i) => {
          if (names.indexOf(n) !== i)
            ctx.addIssue({
              code: 'custom',
              path: ['tokens'],
              message: `duplicate token name ${n} (admin.token is named admin)`,
            });
        });
      })
      .default({}),
    /** The company dashboard (src/dashboard/, docs/dashboard.md): its own listener, off by default. */
    dashboard: z
      .object({
        enabled: z.boolean().default(false),
        host: z.string().min(1).default('127.0.0.1'),
        port: z.coerce.number().int().min(0).max(65535).default(8082),
        publicOrigin: z
          .string()
          .regex(/^https?:\/\/[^/?#@\s]+$/, 'must be an origin: http(s)://host[:port], no path')
          .optional(),
        registration: z.enum(['open', 'closed']).default('open'),
        session: z
          .object({
            idleMinutes: z.coerce.number().int().min(1).max(1440).default(30),
            absoluteHours: z.coerce.number().int().min(1).max(720).default(12),
          })
          .strict()
          .default({}),
        signIn: z
          .object({
            resendCooldownSeconds: z.coerce.number().int().min(0).max(3600).default(60),
            perAddressPerHour: z.coerce.number().int().min(1).max(1000).default(5),
            perClientPerHour: z.coerce.number().int().min(1).max(100_000).default(30),
          })
          .strict()
          .default({}),
        mail: z
          .object({
            transport: z.enum(['smtp', 'log']).default('smtp'),
            url: z
              .string()
              .regex(/^smtps?:\/\/\S+$/, 'must be an smtp:// or smtps:// URL')
              .optional(),
            from: z.string().min(3).default('notify-gateway <no-reply@localhost>'),
            tls: z
              .object({
                rejectUnauthorized: z.boolean().default(true),
                caFile: z.string().min(1).optional(),
                requireTls: z.boolean().default(false),
              })
              .strict()
              .default({}),
          })
          .strict()
          .default({}),
      })
      .strict()
      .superRefine((d, ctx) => {
        if (d.enabled && d.mail.transport === 'smtp' && !d.mail.url)
          ctx.addIssue({
            code: 'custom',
            path: ['mail', 'url'],
            message: 'required when the dashboard is enabled with mail.transport smtp',
          });
      })
      .default({}),
    routes: z
      .array(routeSchema)
      .min(1, 'at least one route is needed')
      .default([{ prefix: '/notify/v1', target: 'http://127.0.0.1:9090' }]),
    upstream: z
      .object({
        timeoutMs: ms(30_000),
        maxSockets: z.coerce.number().int().min(1).default(512),
        keepAliveMs: ms(30_000),
        /** How often hostname targets are looked up again (0: never). */
        resolveIntervalMs: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
      })
      .strict()
      .default({}),
    overload: z
      .object({
        maxInFlight: z.coerce.number().int().min(0).max(1_000_000).default(1024),
        maxEventLoopDelayMs: z.coerce.number().int().min(0).max(60_000).default(500),
        retryAfterSeconds: z.coerce.number().int().min(1).max(3600).default(1),
      })
      .strict()
      .default({}),
    store: z
      .object({
        type: z.enum(['file', 'memory', 'redis']).default('file'),
        file: z
          .object({ path: z.string().min(1).default('keys.yaml') })
          .strict()
          .default({}),
        redis: z
          .object({
            url: redisUrl.default('redis://127.0.0.1:6379'),
            /** Sentinel or Cluster topologies, see docs/scaling.md. */
            sentinels: z.array(z.object({ host: z.string(), port: z.coerce.number().int() })).optional(),
            sentinelName: z.string().optional(),
            cluster: z.array(z.object({ host: z.string(), port: z.coerce.number().int() })).optional(),
            keyPrefix: z
              .string()
              .regex(/^[A-Za-z0-9:_-]{1,32}$/)
              .default('ng:'),
            /** Upper bound for one Redis command, so no request waits on a dead Redis. */
            commandTimeoutMs: ms(500),
            connectTimeoutMs: ms(2_000),
          })
          .strict()
          .default({}),
      })
      .strict()
      .default({}),
    cache: z
      .object({
        maxEntries: z.coerce.number().int().min(100).default(100_000),
        /** A cached valid key is re-read from the store after this long. */
        positiveTtlMs: ms(30_000),
        /** An unknown key is remembered as unknown this long (brute force costs no store lookup). */
        negativeTtlMs: ms(10_000),
        /** While the store is unreachable, a cached key keeps working up to this age. */
        staleIfErrorMs: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
      })
      .strict()
      .default({}),
    rateLimit: z
      .object({
        tiers: z.array(tierSchema).min(1).default(DEFAULT_TIERS),
        /**
         * What the limiter does while Redis fails. `insurance`: each process admits its share of
         * every window in memory, ⌊points / (instances × workers)⌋, counting what it admitted
         * through Redis in that window, and writes what it admitted to Redis once Redis answers
         * (then, for 2 s, still at most its share). The bound: with load spread evenly and every
         * process losing and regaining Redis within 2 s of the others, no window of a company or a
         * key admits more than its limit; uneven load before the outage, or one process cut off
         * alone, can add up to one share per other process (below 2 × the limit); see
         * docs/operations.md. `open`: no limit. `closed`: 503.
         */
        failurePolicy: z.enum(['insurance', 'open', 'closed']).default('insurance'),
        /**
         * Redis for the rate-limit counters only, when the key store is not Redis (file-store
         * sidecars): limits become exact across pods. Ignored with the redis store (it is shared).
         */
        redisUrl: redisUrl.optional(),
        /**
         * Shared limits take quota from Redis in leases spent locally: at most `maxSize` points and
         * at most 1/`divisor` of the quota left per lease (so leases shrink to 1 near the limit).
         * Never over the limit; under-admission at most (instances − 1) × min(maxSize,
         * max(1, floor(points / divisor))) per window. `maxSize: 1` = one Redis call per request, exact.
         */
        lease: z
          .object({
            maxSize: z.coerce.number().int().min(1).max(1_000_000).default(100),
            divisor: z.coerce.number().int().min(1).max(1_000_000).default(64),
          })
          .strict()
          .default({}),
        /**
         * Gateway instances (replicas) sharing the limits through Redis. While Redis fails, each
         * process's insurance admits floor(points / (instances × workers)) per window, so all of
         * them together never admit more than the limit. Set it to the largest replica count: a
         * smaller value multiplies what an outage can admit by that factor.
         */
        instances: z.coerce.number().int().min(1).max(10_000).default(1),
        /** Failed authentications allowed per client address before 429. */
        authFailures: z
          .object({
            enabled: z.boolean().default(true),
            points: z.coerce.number().int().min(1).default(30),
            duration: z.coerce.number().int().min(1).default(60),
          })
          .strict()
          .default({}),
      })
      .strict()
      .default({}),
    keys: z
      .object({
        /** Active keys per company; 0 = no cap. */
        maxActiveKeys: z.coerce.number().int().min(0).default(2),
        rotationAgeDays: z.coerce.number().int().min(1).default(90),
        /** Accept keys that do not follow the nk_ format (imported by hash). */
        acceptLegacyFormat: z.boolean().default(false),
        maxLength: z.coerce.number().int().min(32).max(1024).default(256),
        /** A valid key seen in a URL: flag it, or flag and revoke it. */
        exposedKeys: z.enum(['flag', 'revoke']).default('flag'),
        /** How often lastUsedAt may be written per key. */
        lastUsedIntervalMs: ms(60_000),
      })
      .strict()
      .default({}),
    headers: z
      .object({
        companyId: headerName.default('X-Company-Id'),
        keyId: headerName.default('X-Api-Key-Id'),
        companyTier: headerName.default('X-Company-Tier'),
        requestId: headerName.default('X-Request-Id'),
        /** Reuse a well-formed client X-Request-Id instead of generating one. */
        acceptClientRequestId: z.boolean().default(false),
        /**
         * More client headers never forwarded, from any peer (the built-in list covers hop-by-hop,
         * forwarding, client-IP and override headers). A trailing `*` makes a prefix: `X-Internal-*`.
         */
        stripFromClients: z
          .array(
            z
              .string()
              .regex(/^[A-Za-z0-9_-]{1,64}\*?$/, 'must be a header name, or a name prefix ending in *')
              .transform((v) => v.toLowerCase()),
          )
          .default([]),
        /**
         * Allow-list mode: when set, only these client headers are forwarded (same syntax as
         * stripFromClients), besides Host, Content-Length, Transfer-Encoding and Content-Type, and
         * a trusted proxy's X-Forwarded-For/-Proto/-Host. Every drop rule still applies on top.
         * Unset (the default): every header passes that no drop rule names.
         */
        allowFromClients: z
          .array(
            z
              .string()
              .regex(/^[A-Za-z0-9_-]{1,64}\*?$/, 'must be a header name, or a name prefix ending in *')
              .transform((v) => v.toLowerCase()),
          )
          .optional(),
      })
      .strict()
      .default({}),
    /**
     * How far the leak guards read (docs/security.md, "Levels"). `default`: the presented key as
     * sent, %-decoded until stable or in base64 (`Basic` too), and any key shape with a valid
     * checksum, in the URL, every header and cookies: a few native searches per value. `strict`:
     * also escapes of every kind,
     * Unicode folding, hex, base32, nesting, separators inside the secret, bare key bodies and a key
     * split over several headers or URL parts: several passes per value.
     */
    guards: z
      .object({ level: z.enum(['default', 'strict']).default('default') })
      .strict()
      .default({}),
    methodOverride: z
      .object({
        /** Parameters that override the method: in the URL refused 400 before authentication. */
        params: z.array(z.string().min(1)).default(DEFAULT_METHOD_OVERRIDE_PARAMS),
        /**
         * Where the route, the company's or the key's scope restricts methods: `refuse` checks form
         * and JSON bodies as they stream for one of `params` (400), and refuses those it cannot read
         * (415); `allow` never reads a body. Elsewhere bodies always stream unread.
         */
        inBody: z.enum(['refuse', 'allow']).default('refuse'),
        /** A checked body that ends within this many bytes reaches the upstream only after the check. */
        bodyScanLimitBytes: z.coerce.number().int().min(0).max(16_777_216).default(65_536),
      })
      .strict()
      .default({}),
    urlKeyGuard: z
      .object({
        paramNames: z.array(z.string().min(1)).default(DEFAULT_URL_KEY_PARAMS),
        /** Deprecated: `methodOverride.params` (when set, it takes that setting's place). */
        methodOverrideParams: z.array(z.string().min(1)).optional(),
        /** Deprecated: `methodOverride.inBody` (when set, it takes that setting's place). */
        methodOverrideInBody: z.enum(['refuse', 'allow']).optional(),
        /** Query and matrix parameters examined before a key is checked; a URL with more gets 400. */
        maxParams: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_URL_GUARD_LIMITS.maxParams),
        /** Path segments examined before a key is checked; a URL with more gets 400. */
        maxPathSegments: z.coerce
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(DEFAULT_URL_GUARD_LIMITS.maxPathSegments),
      })
      .strict()
      .default({}),
    securityHeaders: z
      .object({
        /**
         * The gateway's security headers on proxied answers: `fill` adds those the upstream did not
         * set, `override` replaces the upstream's, `off` adds none. Gateway-made answers always
         * carry them all (HSTS only over HTTPS).
         */
        proxied: z.enum(['fill', 'override', 'off']).default('fill'),
      })
      .strict()
      .default({}),
    browser: z
      .object({
        /** Refuse requests carrying browser markers (Origin, Sec-Fetch-Mode: cors) with 403. */
        refuseBrowserRequests: z.boolean().default(false),
      })
      .strict()
      .default({}),
    signing: z
      .object({
        enabled: z.boolean().default(false),
        secret: z.string().min(32, 'must be at least 32 characters').optional(),
        header: headerName.default('X-Gateway-Signature'),
      })
      .strict()
      .default({})
      .refine((s) => !s.enabled || s.secret, {
        message: 'signing.secret is required when signing is enabled',
      }),
    log: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        accessLog: z.boolean().default(true),
      })
      .strict()
      .default({}),
    /** Requests per company and hour (src/usage/): kept in Redis when there is one, else in memory. */
    usage: z
      .object({
        enabled: z.boolean().default(true),
        /** Days the hourly counts are kept (Redis EXPIREAT; memory: dropped). */
        retentionDays: z.coerce.number().int().min(1).max(400).default(35),
        /** How often the in-memory counts are written, in one pipeline. */
        flushIntervalMs: z.coerce.number().int().min(100).max(60_000).default(1000),
      })
      .strict()
      .default({}),
    /** Events and their webhooks (src/events/, docs/events.md). */
    events: eventsConfigSchema,
    metrics: z
      .object({
        /** Label rate-limit metrics with company ids (unbounded cardinality: off by default). */
        companyLabel: z.boolean().default(false),
      })
      .strict()
      .default({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.routes.forEach((r, i) => {
      if (seen.has(r.prefix)) {
        ctx.addIssue({
          code: 'custom',
          path: ['routes', i, 'prefix'],
          message: `duplicate route prefix ${r.prefix}`,
        });
      }
      seen.add(r.prefix);
    });
    const tiers = new Set<string>();
    c.rateLimit.tiers.forEach((t, i) => {
      if (tiers.has(t.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['rateLimit', 'tiers', i, 'name'],
          message: `duplicate tier ${t.name}`,
        });
      }
      tiers.add(t.name);
    });
    const names = [c.headers.companyId, c.headers.keyId, c.headers.companyTier, c.headers.requestId];
    if (new Set(names).size !== names.length) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'trusted header names must be distinct' });
    }
    if (names.includes('x-api-key')) {
      ctx.addIssue({
        code: 'custom',
        path: ['headers'],
        message: 'X-API-Key cannot be a trusted header name',
      });
    }
  })
  .transform(({ urlKeyGuard: { methodOverrideParams, methodOverrideInBody, ...urlKeyGuard }, ...c }) => ({
    ...c,
    urlKeyGuard,
    // The deprecated keys of earlier versions, when given.
    methodOverride: {
      ...c.methodOverride,
      ...(methodOverrideParams && { params: methodOverrideParams }),
      ...(methodOverrideInBody && { inBody: methodOverrideInBody }),
    },
  }));

/** A validated config, defaults filled in (what `loadConfig` returns, frozen). */
export type GatewayConfig = z.infer<typeof configSchema>;
/** What a config file may contain before defaults (for `validateConfig`). */
export type ConfigInput = z.input<typeof configSchema>;
/** A rate-limit tier: its windows, all enforced. */
export type Tier = z.infer<typeof tierSchema>;
/** A protected route: path prefix, upstream target and its options. */
export type Route = z.infer<typeof routeSchema>;
