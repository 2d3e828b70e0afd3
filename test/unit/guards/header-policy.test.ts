import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CLIENT_HEADER_POLICY, compilePolicy, tableName } from '../../../src/guards/header-policy.js';
import { createHeaderScrubber } from '../../../src/guards/header-scrub.js';
import { createKeyMatcher } from '../../../src/guards/key-material.js';

const words = (s: string) => s.trim().split(/\s+/);
const inTable = compilePolicy(CLIENT_HEADER_POLICY);
const scrub = createHeaderScrubber({
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
  requestId: 'x-request-id',
});
const noKey = createKeyMatcher('', 'default');
/** Whether the scrubber drops a header of this name from an untrusted peer (table, trusted names, look-alikes). */
const drops = (name: string) => !(name in scrub({ [name]: 'v' }, false, noKey));

/**
 * The client-address and identity headers CDNs, clouds and gateways set for their origin, from
 * their own documentation (the source of each family is the `reason` of its row).
 */
const PROVIDERS = words(`
  cf-connecting-ip cf-connecting-ipv6 cf-pseudo-ipv4 cf-ipcountry cf-visitor cf-worker
  cf-access-jwt-assertion cf-access-authenticated-user-email true-client-ip cdn-loop akamai-origin-hop
  x-akamai-edgescape fastly-client-ip fastly-client fastly-ssl fastly-ff cloudfront-viewer-address
  cloudfront-viewer-country cloudfront-forwarded-proto cloudfront-is-mobile-viewer x-amzn-oidc-identity
  x-amzn-oidc-data x-amzn-mtls-clientcert x-amzn-requestcontext x-amzn-vpce-id x-apigw-api-id
  x-azure-clientip x-azure-socketip x-azure-ref x-azure-requestchain x-azure-fdid x-fd-healthprobe
  x-original-host x-arr-clientcert x-arr-ssl x-ms-client-principal-name x-ms-token-aad-id-token
  x-goog-authenticated-user-email x-goog-iap-jwt-assertion x-google-apps-metadata x-gfe-ssl x-user-ip
  x-appengine-user-ip x-appengine-country x-appengine-city x-appengine-cron x-appengine-queuename
  x-serverless-authorization x-vercel-forwarded-for x-vercel-ip-country x-vercel-ip-city x-vercel-id
  x-real-ip x-nf-client-connection-ip x-nf-geo x-nf-account-id x-nf-request-id fly-client-ip
  fly-forwarded-port fly-region do-connecting-ip incap-client-ip x-sucuri-clientip x-sucuri-country
  ali-cdn-real-ip cdn-src-ip x-forward-port x-client-scheme wl-proxy-client-ip wl-proxy-ssl
  x-envoy-external-address x-envoy-internal x-envoy-original-path x-envoy-downstream-service-cluster
  x-envoy-force-trace x-client-trace-id x-consumer-id x-consumer-custom-id x-consumer-username
  x-credential-identifier x-anonymous-consumer x-authenticated-scope x-authenticated-userid
  x-original-forwarded-for x-client-ip
`);

/** Names the earlier word grammar and lists dropped (their tests, kept as the table's regression set). */
const DROPPED = words(`
  account-id akamai-client-ip akamai-origin-hop ali-cdn-real-ip api-key-id base-url cf-connecting-ip
  cf-connecting-ipv6 cf-visitor cdn-src-ip cf-access-authenticated-user-email cf-access-client-id
  cf-access-jwt-assertion cf-ipcountry cloudfront-forwarded-proto cloudfront-viewer-address
  cloudfront-viewer-country cluster-client-ip company company-id company-name company-slug
  company-tier company-uuid do-connecting-ip fastly-client-ip fly-client-ip fly-forwarded-port
  http-url impersonate-extra-scopes impersonate-group impersonate-uid impersonate-user
  incap-client-ip incap-proxy-1234 key-id oidc_claim_email oidc_claim_sub oidc_access_token
  oidc-claim-email on-behalf-of org-id proxy-host proxy-url real-ip remote-email remote-groups
  remote-name remote-user request-uri ssl-client-cert ssl-client-verify tenant tenant-id uri url
  x-arr-clientcert x-accel-mapping x-access-key-id x-account x-account-id x-accountid x-act-as
  x-acting-as x-actor x-actor-id x-admin x-akamai-edgescape x-ambassador-auth x-amzn-mtls-clientcert
  x-amzn-oidc-data x-amzn-oidc-identity x-anonymous-consumer x-api-key-id2 x-api-user
  x-apigateway-context x-apigateway-event x-app-id x-appengine-cron x-appengine-user-ip
  x-application-id x-auth-email x-auth-groups x-auth-request-access-token x-auth-request-email
  x-auth-request-groups x-auth-request-preferred-username x-auth-request-user x-auth-roles
  x-auth-subject x-auth-user x-auth-userid x-auth-username x-authenticated- x-authenticated-groups
  x-authenticated-scope x-authenticated-userid x-azure-clientip x-azure-fdid x-azure-socketip
  x-backend-host x-brand-id x-business-id x-bypass x-caller x-caller-id x-cdn-src-ip x-client-addr
  x-client-address x-client-cert x-client-cert-chain x-client-dn x-client-id x-client-real-ip
  x-client-verify x-companies x-company x-company--id x-company-code x-company-domain x-company-id
  x-company-id-override x-company-ids x-company-key x-company-name x-company-plan x-company-ref
  x-company-slug x-company-uuid x-company.id x-companyname x-companyid x-consumer-custom-id
  x-consumer-groups x-consumer-id x-consumer-username x-credential-identifier x-credential-username
  x-current-user x-custom-ip-authorization x-customer x-customer-id x-email x-end-user-
  x-endpoint-api-userinfo x-envoy-external-address x-envoy-original-path x-envoy-peer-metadata
  x-ext-authz-check-result x-forward-for x-forwarded- x-forwarded-access-token x-forwarded-client-ip
  x-forwarded-email x-forwarded-groups x-forwarded-method x-forwarded-user x-forwarder-for
  x-gateway-company x-gateway-key-id x-goog-authenticated-user-email x-goog-iap-jwt-assertion
  x-grafana-org-id x-grafana-user x-group x-groups x-gw-company-id x-http-destination-url
  x-http-destinationurl x-http-method x-http-verb x-hasura-admin-secret x-hasura-role
  x-hasura-user-id x-host-override x-https x-iap-email x-iap-user x-id-token x-identity x-impersonate
  x-impersonate-group x-impersonate-user x-impersonated-user x-internal x-internal-token
  x-invoke-path x-is-admin x-is-superuser x-istio-attributes x-jwt-assertion x-jwt-claim-sub
  x-jwt-payload x-key-id x-keyid x-kong-consumer-id x-kong-request-id x-login x-ms-client-principal
  x-ms-client-principal-name x-matched-path x-merchant-id x-method x-method-override
  x-middleware-subrequest x-ms-token-aad-access-token x-ms-token-aad-id-token x-namespace
  x-nf-account-id x-nf-client-connection-ip x-now-route-matches x-oidc-access-token
  x-oidc-claim-email x-oidc-claim-sub x-on-behalf-of x-org x-org-id x-org-slug x-orgid
  x-organisation-id x-organization x-organization-id x-original-method x-override-url x-owner
  x-owner-id x-partner-id x-permissions x-plan x-pomerium-claim-email x-pomerium-claim-groups
  x-pomerium-jwt-assertion x-principal x-project x-project-id x-proxy-host x-proxy-url x-proxy-user
  x-proxyuser-ip x-real-client-ip x-real-host x-realm x-remote- x-remote-user x-replaced-path
  x-request-method x-requester x-requester-id x-rewrite-path x-rewrite-url x-role x-roles x-run-as
  x-run-as-user x-ssl x-ssl-cert x-ssl-client-cert x-ssl-client-dn x-ssl-client-s-dn
  x-ssl-client-verify x-scope-orgid x-script-name x-seller-id x-sendfile-type x-server-name
  x-service-account x-service-account-name x-shopify-access-token x-shopify-shop-domain
  x-shopify-shop-id x-site-id x-source-ip x-subject x-subscription-id x-subscription-tier
  x-sucuri-clientip x-sucuri-country x-sudo x-sudo-user x-team-id x-tenant x-tenant-id x-tenant-name
  x-tier x-true-client-ip x-true-ip x-trusted x-tyk-api-key-id x-tyk-authorization x-uid x-user-email
  x-user-groups x-user-id x-user-info x-user-roles x-userid x-userinfo x-username x-vendor-id x-verb
  x-vercel-forwarded-for x-vercel-ip-country x-vouch-idp-claims-groups x-vouch-user x-webauth-email
  x-webauth-role x-webauth-user x-workspace x-workspace-id x-authentik-groups x-authentik-username
  xcompanyid account accountid actor brand business bypass caller cf-connecting-ip cf-ipcountry
  cf-visitor client client-id client-ip clients company company-x connection customer expect
  fastly-client-ip forwarded forwarded-for forwarded-host forwarded-proto front-end-https
  http2-settings internal ip keep-alive key-id merchant method namespace on-behalf-of org
  organisation organization owner partner plan plan-tier plantier project proxy-authenticate
  proxy-authentication-info proxy-authorization proxy-client-ip proxy-connection proxy-host-override
  realm remote-addr remote-user requester seller some-cdn-client-ip subscription te team tenant
  tenants tier trailer true-client-ip trusted upgrade uri url vendor wl-proxy-client-ip workspace
  x--hasura--role x-.sendfile_type x-accel-mapping x-access-key-id x-act-as x-acting-as
  x-amzn-request-context x-amzn-requestcontext x-anonymous-consumer x-api-key x-api-key-id
  x-arr-clientcert x-arr-ssl x-as-user x-auth-audience x-auth-user x-bypass-auth x-client
  x-client-addr x-client-dn x-client-i-dn x-client-ip x-client-s-dn x-client-scheme x-client-uid
  x-client-uuid x-client-verify x-clientids x-clients x-cluster-client-ip x-companies-list
  x-company-id x-company-tier x-custom-ip-authorization x-delegated-user x-forwarded
  x-forwarded-access-token x-forwarded-by x-forwarded-client-cert x-forwarded-email x-forwarded-for
  x-forwarded-groups x-forwarded-host x-forwarded-method x-forwarded-path x-forwarded-port
  x-forwarded-preferred-username x-forwarded-prefix x-forwarded-proto x-forwarded-scheme
  x-forwarded-server x-forwarded-ssl x-forwarded-uri x-forwarded-url x-forwarded-user
  x-gateway-anything x-gw-anything x-hasura.-role x-host x-hostname x-http x-http-host
  x-http-host-override x-http-method x-http-method-override x-http-verb x-https x-internal
  x-internal-request x-internal-token x-ip x-ip-address x-ipaddr x-ips x-ipv4 x-is-superuser x-key-id
  x-keyid x-method x-method-override x-mycompanyname x-now-route-matches x-on-behalf-of x-org
  x-original-forwarded-for x-original-url x-original-verb x-originating-ip x-path x-permissions
  x-plan-tier x-plantier x-prefix x-proxyuser-ip x-real-ip x-real-protocol x-remote-addr x-remote-ip
  x-request-id x-request-method-override x-request-proto x-rewrite-url x-run-as x-runas x-scheme
  x-scope-orgid x-script-name x-sendfile-type x-server-name x-service-account x-service-account-name
  x-serviceaccount x-ssl x-subtenant x-sudo x-superuser x-switch-user x-tls x-trusted-client
  x-url-override x-url-scheme x-urls x-user x-user-permissions x-verb xcompanyz xplantier
`);

/** Ordinary client headers, and names that only share a word with a family: they pass. */
const PASSED = words(`
  accept utc x- x-api- x-auth- x-debug x-proxy- a-value-of-twenty-chars-or-more abcde abcdef abcdex
  absolute accept accept-encoding accept-language accesstoken admin akamai api api.example app
  application auth authenticated authorization authorized b3 backend baggage base cache-control cdn
  cf-ray chunked claim claims cluster code codes connecting content-encoding content-language
  content-length content-type cors createheaderscrubber current custom destination domain domains
  email en end enduser fastly-debug forged forward forwarder full gateway generalised group groups
  guid guids gw hex http https i-1 i-2 iam id idempotency-key identity ids idtoken if-match
  if-modified-since if-none-match invoke isadmin keep ldap live loggedin login mail matched name
  names no no-cache oauth oauth2 on origin original originating override peer plain prefer
  preferredusername principal principalname proxy raw real ref refs remote replaced reported request
  respond-async rewrite rewritten role roles saml scheme scope scopes scrubresponseheaders sdk
  sec-ch-ua sec-fetch-mode shop site slug slugs socket source src sso stays store stryker-was-here
  sub subject suffixes target tax-level token traceparent tracestate transfer-encoding true ts uid
  untrusted upstream user user-agent useremail usergroups userid userinfo username userrole userroles
  users uuid uuids verified viewer visitor wap x-a x-ab-cde x-abcde x-abcde-2 x-abcdef x-abcdef-2
  x-account-name-hint-is-not-a-family-member x-after x-amzn-trace-id x-api-key-hint-is-not-the-key
  x-api-version x-app x-app-build x-app-key x-app-version x-auth-token x-b x-b3-traceid x-before x-c
  x-callback-url x-client-name x-client-version x-cloud-trace-context x-companion x-correlation-id
  x-credential x-debug x-debug-2 x-debug-a x-debugger x-device-id x-extra-a x-extra_b
  x-idempotency-key x-k x-kid x-level x-level-id x-list x-locale x-membership x-methods x-multi
  x-my-abc-def x-note x-ok x-other x-p x-part-1 x-part-2 x-part-3 x-plain x-r x-request-id-client
  x-rid x-sdk-version x-site x-sslx x-stainless-lang x-taxlevel-2 x-timezone x-tooltip x-user-agent
  xabcde xabcdef yabcde zz
`);

describe('the client header table', () => {
  test('every row says why', () => {
    for (const row of CLIENT_HEADER_POLICY) assert.notEqual(row.reason.trim(), '', JSON.stringify(row.match));
  });

  test('every provider family from the providers\u2019 documentation is dropped, in any case and spelling', () => {
    for (const name of PROVIDERS) {
      assert.ok(inTable(name), `${name}: a row of the table`);
      for (const spelled of [name, name.replace(/-/g, '_'), name.replace(/-/g, '.')])
        assert.ok(drops(spelled), spelled);
    }
  });

  test('every name of the earlier lists and word rules is still dropped (table, trusted names and look-alikes)', () => {
    for (const name of DROPPED) assert.ok(drops(name), name);
  });

  test('ordinary client headers pass', () => {
    for (const name of PASSED) assert.equal(drops(name), false, name);
  });

  test('more names and prefixes (headers.stripFromClients) compile into the same test', () => {
    const more = compilePolicy([], ['X-Debug', 'X-Extra-*']);
    assert.ok(more('x-debug') && more('x-extra-a') && more(tableName('X_Extra_B')));
    assert.equal(more('x-debug-2'), false);
  });

  test('a name is read lowercase with every run of separators as one -', () => {
    assert.equal(tableName('X__Real..IP'), 'x-real-ip');
    assert.ok(inTable(tableName('X--Hasura--Role')) && inTable(tableName('X-.Sendfile_Type')));
  });
});
