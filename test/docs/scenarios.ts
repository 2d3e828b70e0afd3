/**
 * How the docs test runs a block that cannot run as written: a program that runs until stopped,
 * or TypeScript. A block names its scenario with `<!-- docs-test: run NAME -->`. Each scenario is
 * a bash script run alone in its own network namespace, from the project root; `$DOCS_BLOCK` holds
 * the block as written, so the doc's own code runs, never a copy of it.
 *
 * TypeScript blocks run as a user's project would: /tmp/app/block.ts beside a node_modules that
 * holds this package (`notify-gateway`) and the packages the block imports, run with tsx.
 */

/** The scenario a `ts` block runs in: a project with this package and $DOCS_DEPS installed. */
const TS_APP = String.raw`
mkdir -p /tmp/app/node_modules/.bin
ln -s "$PWD" /tmp/app/node_modules/notify-gateway
for dep in $DOCS_DEPS tsx; do
  mkdir -p "/tmp/app/node_modules/$(dirname "$dep")"
  ln -s "$PWD/node_modules/$dep" "/tmp/app/node_modules/$dep"
done
ln -s ../tsx/dist/cli.mjs /tmp/app/node_modules/.bin/tsx
printf '{ "type": "module" }\n' >/tmp/app/package.json   # the package is ESM only
export PATH="/tmp/app/node_modules/.bin:$PATH"
printf '%s\n' "$DOCS_BLOCK" >/tmp/app/block.ts
`;

export const SCENARIOS: Record<string, string> = {
  /** README's quick start: the demo runs until stopped; the curl lines it prints answer as announced. */
  demo: String.raw`
bash -c "$DOCS_BLOCK" >/tmp/demo.out 2>&1 &
until grep -q '^Press Ctrl+C to stop' /tmp/demo.out; do
  kill -0 $! 2>/dev/null || { cat /tmp/demo.out; echo 'the demo stopped'; exit 1; }
  sleep 0.2
done
cat /tmp/demo.out
grep -qF '  gateway   http://127.0.0.1:8080/notify/v1' /tmp/demo.out
grep -qF '  admin API http://127.0.0.1:8081/admin/v1' /tmp/demo.out
grep -qF '  console   http://127.0.0.1:8081/console/' /tmp/demo.out
# Each printed command under a "# NNN: ..." line answers NNN (the 429 loop: among its answers).
awk '/^# [0-9][0-9][0-9]:/ { code = substr($2, 1, 3); next } code && /^(curl|for) / { print code "\t" $0; code = "" }' \
  /tmp/demo.out >/tmp/demo.commands
test "$(wc -l </tmp/demo.commands)" -ge 7
while IFS=$'\t' read -r code command; do
  out=$(bash -c "$command")
  grep -qE "^(HTTP/[0-9.]+ )?$code( |\r?$)" <<<"$out" || { printf 'expected %s from: %s\n%s\n' "$code" "$command" "$out"; exit 1; }
done </tmp/demo.commands
test "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8081/console/)" = 200
`,

  /** docs/events.md: the receiver gets a real gateway's signed `key.revoked`, and refuses a forgery. */
  'webhook-receiver': String.raw`
${TS_APP}
redis-server --port 6379 --save '' --appendonly no >/dev/null &
export WEBHOOK_SECRET="whsec_$(openssl rand -base64 32)" ADMIN_TOKEN=$(openssl rand -hex 24)
cat >/tmp/gateway.yaml <<YAML
events:
  webhooks: [{ url: 'http://127.0.0.1:9000/hooks', secret: '$WEBHOOK_SECRET' }]
  delivery: { pollIntervalMs: 100 }
YAML
(cd /tmp/app && tsx block.ts >/tmp/receiver.log 2>&1 &)
until redis-cli ping >/dev/null 2>&1; do sleep 0.1; done
REDIS_URL=redis://127.0.0.1:6379 node dist/cli.js serve --config /tmp/gateway.yaml >/tmp/gateway.log &
until curl -sf http://127.0.0.1:8080/readyz >/dev/null; do sleep 0.2; done
until command curl -s -o /dev/null http://127.0.0.1:9000/; do sleep 0.2; done   # up: any answer
admin() { local path=$1; shift; curl -sf "http://127.0.0.1:8081/admin/v1$path" -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' "$@"; }
admin /companies -d '{"id": "acme", "name": "Acme", "tier": "standard"}' >/dev/null
KEY_ID=$(admin /companies/acme/keys -d '{"label": "primary"}' | jq -r .id)
admin "/keys/$KEY_ID" -X DELETE >/dev/null
until grep -q "^key.revoked" /tmp/receiver.log && grep -q "keyId: '$KEY_ID'" /tmp/receiver.log; do sleep 0.2; done
cat /tmp/receiver.log
forged=$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:9000/hooks -H 'webhook-id: evt_forged' \
  -H "webhook-timestamp: $(date +%s)" -H 'webhook-signature: v1,bm90IGEgc2lnbmF0dXJl' -d '{"type": "key.revoked"}')
test "$forged" = 401
`,

  /** docs/requests.md, "Signed identity": the upstream answers who the gateway vouched for, and refuses a request around it. */
  'signed-upstream': String.raw`
${TS_APP}
export GATEWAY_SIGNING_SECRET=$(openssl rand -hex 32)
mkdir -p /tmp/gw
GEN=$(node dist/cli.js keys generate --id acme-primary --json)
KEY=$(jq -r .key <<<"$GEN")
printf 'companies:\n  - { id: acme, tier: standard, keys: [{ id: acme-primary, hash: %s }] }\n' "$(jq -r .hash <<<"$GEN")" >/tmp/gw/keys.yaml
printf 'signing: { enabled: true, secret: %s }\n' "$GATEWAY_SIGNING_SECRET" >/tmp/gw/gateway.yaml
(cd /tmp/app && tsx block.ts >/tmp/upstream.log 2>&1 &)
node dist/cli.js serve --config /tmp/gw/gateway.yaml >/tmp/gateway.log &
until curl -sf http://127.0.0.1:8080/readyz >/dev/null; do sleep 0.2; done
until command curl -s -o /dev/null http://127.0.0.1:9090/; do sleep 0.2; done   # up: any answer
through=$(curl -s http://127.0.0.1:8080/notify/v1/whoami -H "X-API-Key: $KEY")
echo "$through"
test "$through" = '{"companyId":"acme"}'
around=$(curl -s -w ' %{http_code}' http://127.0.0.1:9090/notify/v1/whoami -H 'X-Company-Id: acme')
echo "$around"
test "$around" = '{"error":"Unauthorized","details":"Request did not come through the gateway"} 401'
`,

  /** docs/requests.md, "As a library": the gateway serves, then drains and exits on SIGTERM. */
  library: String.raw`
${TS_APP}
mkdir -p /tmp/lib
printf 'companies: []\n' >/tmp/lib/keys.yaml
printf 'routes: [{ prefix: /notify/v1, target: "http://127.0.0.1:9090" }]\n' >/tmp/lib/gateway.yaml
cd /tmp/app
GATEWAY_CONFIG=/tmp/lib/gateway.yaml tsx block.ts >/tmp/gateway.log 2>&1 &
pid=$!
until curl -sf http://127.0.0.1:8080/readyz >/dev/null; do kill -0 $pid; sleep 0.2; done
test "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/notify/v1/health)" = 401
kill -TERM $pid
wait $pid
`,

  /** docs/testing.md: the typical integration test passes, beside the real test/helpers. */
  'integration-test': String.raw`
mkdir -p /tmp/app/test/integration
ln -s "$PWD/test/helpers" /tmp/app/test/helpers
printf '%s\n' "$DOCS_BLOCK" >/tmp/app/test/integration/typical.test.ts
node --import tsx --test --test-force-exit --test-reporter=spec /tmp/app/test/integration/typical.test.ts
`,
};

/** The packages a block imports, besides node: built-ins and this package. */
export function importedPackages(block: string): string[] {
  const names = [...block.matchAll(/^import [^'"]*['"]([^'"]+)['"]/gm)]
    .map((m) => m[1]!)
    .filter((s) => !s.startsWith('node:') && !s.startsWith('.') && !s.startsWith('notify-gateway'))
    .map((s) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/'),
    );
  return [...new Set(names)];
}
