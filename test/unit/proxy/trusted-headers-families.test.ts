import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { createHeaderScrubber } from '../../../src/proxy/trusted-headers.js';

/**
 * Attack report F4: members of the client-IP, identity, tenant and method-override families that
 * reached the upstream from an untrusted peer, and more members of each family (docs/security.md,
 * "Headers a client may not assert").
 */

const NAMES = {
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
  requestId: 'x-request-id',
};

/** Exactly the names the report found forwarded. */
const REPORTED = [
  // client IP
  'Fly-Client-IP',
  'X-Vercel-Forwarded-For',
  'X-Nf-Client-Connection-Ip',
  'Incap-Client-IP',
  'X-Sucuri-ClientIP',
  'Do-Connecting-Ip',
  'Cdn-Src-Ip',
  'Ali-Cdn-Real-Ip',
  // identity
  'X-Webauth-User',
  'X-Webauth-Email',
  'X-authentik-username',
  'X-authentik-groups',
  'X-Pomerium-Jwt-Assertion',
  'X-Pomerium-Claim-Email',
  'Cf-Access-Jwt-Assertion',
  'Cf-Access-Authenticated-User-Email',
  'X-Vouch-User',
  'X-Endpoint-API-UserInfo',
  'X-Ms-Token-Aad-Id-Token',
  'X-Ms-Token-Aad-Access-Token',
  'X-Hasura-Role',
  'X-Hasura-User-Id',
  'X-Hasura-Admin-Secret',
  'OIDC_CLAIM_sub',
  'OIDC_CLAIM_email',
  'Oidc-Claim-Email',
  'Impersonate-User',
  'Impersonate-Group',
  'X-Impersonate-User',
  'X-Kong-Consumer-Id',
  'X-Tyk-Api-Key-Id',
  'X-Auth-Email',
  'X-Auth-Username',
  'X-Role',
  'X-Roles',
  'X-Groups',
  'X-Is-Admin',
  // tenant
  'X-Scope-OrgID',
  'X-Grafana-Org-Id',
  'X-Org-Id',
  'X-Organization-Id',
  'X-Account-Id',
  'X-Customer-Id',
  'X-Project-Id',
  'X-Workspace-Id',
  'X-Client-Id',
  // method
  'X-HTTP-Verb',
];

/** Further members of each family, beyond the report. */
const FAMILY = [
  // client IP and platform: CloudFront, Fly, Vercel, Netlify, Imperva, Sucuri, Akamai, Cloudflare
  'CloudFront-Viewer-Address',
  'CloudFront-Viewer-Country',
  'CloudFront-Forwarded-Proto',
  'Fly-Forwarded-Port',
  'X-Vercel-Ip-Country',
  'X-Nf-Account-Id',
  'Incap-Proxy-1234',
  'X-Sucuri-Country',
  'X-Akamai-Edgescape',
  'Cf-Ipcountry',
  'X-Forward-For',
  'X-Cdn-Src-Ip',
  'X-Client-Real-Ip',
  // identity from auth proxies
  'X-Auth-Request-Groups',
  'X-Auth-Request-Preferred-Username',
  'X-Forwarded-Access-Token',
  'Remote-Groups',
  'Remote-Email',
  'Remote-Name',
  'X-Webauth-Role',
  'X-Pomerium-Claim-Groups',
  'Cf-Access-Client-Id',
  'X-Vouch-Idp-Claims-Groups',
  'X-Jwt-Payload',
  'X-Jwt-Assertion',
  'X-Istio-Attributes',
  'X-Envoy-Peer-Metadata',
  'X-Ambassador-Auth',
  'X-Current-User',
  'X-Ext-Authz-Check-Result',
  'Impersonate-Uid',
  'Impersonate-Extra-Scopes',
  'X-Kong-Request-Id',
  'X-Tyk-Authorization',
  'X-Auth-Userid',
  'X-Auth-Subject',
  'X-Auth-Roles',
  'X-Auth-Groups',
  'X-User-Roles',
  'X-User-Groups',
  'X-Group',
  'X-Admin',
  'X-Is-Superuser',
  'X-Permissions',
  'X-Identity',
  'X-Principal',
  'X-Id-Token',
  'X-Amzn-Mtls-Clientcert',
  'OIDC_access_token',
  'X-Grafana-User',
  // tenant
  'X-Org',
  'X-OrgId',
  'Org-Id',
  'X-Organisation-Id',
  'X-Organization',
  'Tenant',
  'X-Account',
  'Account-Id',
  'X-AccountId',
  'X-Customer',
  'X-Project',
  'X-Workspace',
  'X-Team-Id',
  'X-Merchant-Id',
  'X-Partner-Id',
  'X-Subscription-Id',
  // method and URL overrides (Next.js, Rack::Sendfile, Traefik)
  'X-Verb',
  'X-Forwarded-Method',
  'X-Request-Method',
  'X-Middleware-Subrequest',
  'X-Invoke-Path',
  'X-Matched-Path',
  'X-Now-Route-Matches',
  'X-Sendfile-Type',
  'X-Accel-Mapping',
  'X-Replaced-Path',
  'X-Script-Name',
  'X-Https',
];

/** What a notification client legitimately sends: none of it may be dropped. */
const KEPT = [
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'content-encoding',
  'content-language',
  'idempotency-key',
  'x-idempotency-key',
  'x-request-id-client',
  'x-correlation-id',
  'traceparent',
  'tracestate',
  'baggage',
  'b3',
  'x-b3-traceid',
  'x-cloud-trace-context',
  'x-amzn-trace-id',
  'user-agent',
  'x-user-agent',
  'x-client-version',
  'x-client-name',
  'x-sdk-version',
  'x-stainless-lang',
  'authorization',
  'x-auth-token',
  'cf-ray',
  'if-match',
  'if-none-match',
  'prefer',
  'x-timezone',
  'x-account-name-hint-is-not-a-family-member',
];

describe('client-asserted header families (F4)', () => {
  const scrub = createHeaderScrubber(NAMES);

  for (const [label, list] of [
    ['reported', REPORTED],
    ['beyond the report', FAMILY],
  ] as const)
    test(`every ${label} name is dropped, in any case and \`_\` spelling, from untrusted and trusted peers`, () => {
      const passed: string[] = [];
      for (const name of list)
        for (const spelled of [name.toLowerCase(), name.toLowerCase().replace(/-/g, '_')])
          for (const trusted of [false, true]) {
            const out = scrub({ [spelled]: 'v', accept: 'a' }, trusted);
            if (Object.keys(out).length !== 1) passed.push(`${spelled}${trusted ? ' (trusted)' : ''}`);
          }
      assert.deepEqual(passed, []);
    });

  test('ordinary client headers still pass, all at once with every dropped one', () => {
    const h: IncomingHttpHeaders = {};
    for (const n of [...REPORTED, ...FAMILY, ...KEPT]) h[n.toLowerCase()] = 'v';
    assert.deepEqual(Object.keys(scrub(h, false)).sort(), [...KEPT].sort());
  });
});
