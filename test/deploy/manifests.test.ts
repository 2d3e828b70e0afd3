import { isLoopbackName } from '../../src/admin/router.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { ENV_OVERRIDES, loadConfig, validateConfig } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { parseKeyFile } from '../../src/store/file-store.js';

// Checks the deployment examples against the code they deploy: env names the gateway reads,
// configs the schema accepts, key files the file store accepts, probes on the right port. Docker
// and Kubernetes are not needed; everything is read as YAML/text.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = join(ROOT, 'deploy');
const KUBE = join(DEPLOY, 'kubernetes');

/** Every variable the gateway process reads; anything else set on it is a typo or dead config. */
const GATEWAY_ENV = new Set<string>([...Object.keys(ENV_OVERRIDES), 'GATEWAY_CONFIG', 'NODE_ENV']);

/** Stand-in for secrets the examples deliberately leave unset (compose `${X:?}`, placeholder Secrets). */
const TEST_SECRETS: Record<string, string> = { ADMIN_TOKEN: 'test-admin-token-0123456789abcdef' };

// ---- minimal shapes of what the manifests use (parsed YAML is cast to these, then checked)

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
  };
}
interface Probe {
  httpGet?: { path: string; port: number | string };
  exec?: { command: string[] };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: { secretRef?: { name: string }; configMapRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { runAsNonRoot?: boolean; readOnlyRootFilesystem?: boolean };
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
}
interface Volume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string };
}
interface PodSpec {
  containers: Container[];
  volumes?: Volume[];
  securityContext?: { runAsNonRoot?: boolean };
  terminationGracePeriodSeconds?: number;
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  resources?: string[];
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
    template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    ports?: { name?: string; port: number; targetPort?: number | string }[];
  };
}
interface ComposeService {
  image?: string;
  build?: string | { context: string };
  command?: string[];
  environment?: Record<string, string | number | null> | string[];
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] | string };
  depends_on?: string[] | Record<string, { condition?: string }>;
}
interface Compose {
  services: Record<string, ComposeService>;
}

// ---- helpers

function read(file: string): string {
  return readFileSync(file, 'utf8');
}

/** Every document of a YAML file; a syntax error fails with the file named. */
function readDocs(file: string): unknown[] {
  return parseAllDocuments(read(file)).flatMap((doc) => {
    assert.deepEqual(
      doc.errors.map((e) => e.message),
      [],
      `${relative(ROOT, file)} is not valid YAML`,
    );
    const js: unknown = doc.toJS();
    return js === null || js === undefined ? [] : [js];
  });
}

function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(dir, f))
    .sort();
}

function exampleDirs(): string[] {
  return readdirSync(KUBE)
    .map((d) => join(KUBE, d))
    .filter((d) => statSync(d).isDirectory())
    .sort();
}

/** The Kubernetes object files of an example (kustomization.yaml is kustomize's, not an object). */
function manifestFiles(dir: string): string[] {
  return yamlFilesUnder(dir).filter((f) => basename(f) !== 'kustomization.yaml');
}

function manifestsIn(dir: string): Manifest[] {
  return manifestFiles(dir).flatMap((f) => readDocs(f) as Manifest[]);
}

function podSpecs(manifests: Manifest[]): { workload: Manifest; pod: PodSpec }[] {
  return manifests
    .filter((m) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(m.kind) && m.spec?.template)
    .map((m) => ({ workload: m, pod: m.spec!.template!.spec }));
}

/** A container that runs the gateway (the image's ENTRYPOINT is the CLI; `serve` is its CMD). */
function isGatewayContainer(c: Container): boolean {
  const argv = [...(c.command ?? []), ...(c.args ?? [])];
  return /(^|\/)notify-gateway(:|@|$)/.test(c.image) && (argv.length === 0 || argv.includes('serve'));
}

function find(manifests: Manifest[], kind: string, name: string): Manifest {
  const m = manifests.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(m, `${kind} ${name} is referenced but not defined`);
  return m;
}

/** The value of one entry of a ConfigMap or Secret (`data` of a Secret is base64). */
function dataOf(m: Manifest, key: string): string | undefined {
  if (m.stringData?.[key] !== undefined) return m.stringData[key];
  const v = m.data?.[key];
  if (v === undefined) return undefined;
  return m.kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v;
}

function secretValue(manifests: Manifest[], ref: { name: string; key: string }): string {
  const v = dataOf(find(manifests, 'Secret', ref.name), ref.key);
  assert.ok(v !== undefined, `Secret ${ref.name} has no key ${ref.key}`);
  return v;
}

/** The container's environment, references resolved; `secrets: 'test'` swaps in TEST_SECRETS. */
function containerEnv(
  manifests: Manifest[],
  c: Container,
  secrets: 'as-shipped' | 'test',
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const src = from.secretRef
      ? find(manifests, 'Secret', from.secretRef.name)
      : find(manifests, 'ConfigMap', from.configMapRef!.name);
    for (const key of [...Object.keys(src.data ?? {}), ...Object.keys(src.stringData ?? {})]) {
      env[key] =
        secrets === 'test' && from.secretRef && TEST_SECRETS[key] ? TEST_SECRETS[key] : dataOf(src, key)!;
    }
  }
  for (const e of c.env ?? []) {
    const ref = e.valueFrom;
    if (ref?.secretKeyRef) {
      const shipped = secretValue(manifests, ref.secretKeyRef);
      env[e.name] = secrets === 'test' ? (TEST_SECRETS[e.name] ?? shipped) : shipped;
    } else if (ref?.configMapKeyRef) {
      const v = dataOf(find(manifests, 'ConfigMap', ref.configMapKeyRef.name), ref.configMapKeyRef.key);
      assert.ok(
        v !== undefined,
        `ConfigMap ${ref.configMapKeyRef.name} has no key ${ref.configMapKeyRef.key}`,
      );
      env[e.name] = v;
    } else {
      env[e.name] = e.value ?? '';
    }
  }
  return env;
}

/**
 * The volume that provides `path` inside the container: a mount whose directory holds the file.
 * A subPath mount would freeze the file (no Secret/ConfigMap updates), so it is refused here.
 */
function mountedFile(
  pod: PodSpec,
  c: Container,
  path: string,
): { volume: Volume; key: string; mountPath: string } {
  const mounts = c.volumeMounts ?? [];
  const fileMount = mounts.find((m) => m.mountPath === path);
  assert.ok(!fileMount?.subPath, `${c.name}: ${path} is a subPath mount, which never receives updates`);
  const mount = mounts.find((m) => posix.dirname(path) === m.mountPath.replace(/\/+$/, ''));
  assert.ok(mount, `${c.name}: no volume is mounted at ${posix.dirname(path)} (for ${path})`);
  assert.equal(mount.subPath, undefined, `${c.name}: ${mount.mountPath} is a subPath mount (never updated)`);
  const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
  assert.ok(volume, `${c.name}: volume ${mount.name} is not defined`);
  return { volume, key: posix.basename(path), mountPath: mount.mountPath };
}

function fileFromVolume(manifests: Manifest[], volume: Volume, key: string): string {
  const src = volume.configMap
    ? find(manifests, 'ConfigMap', volume.configMap.name)
    : volume.secret
      ? find(manifests, 'Secret', volume.secret.secretName)
      : undefined;
  assert.ok(src, `volume ${volume.name} is neither a ConfigMap nor a Secret`);
  const text = dataOf(src, key);
  assert.ok(text !== undefined, `${src.kind} ${src.metadata.name} has no entry ${key}`);
  return text;
}

/** Loads a config text the way the gateway does (file + environment), from a scratch file. */
function loadConfigText(text: string, env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'deploy-manifests-'));
  try {
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, text);
    return loadConfig({ file, env });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function assertConfigOk(
  r: ReturnType<typeof validateConfig>,
  where: string,
): asserts r is Extract<ReturnType<typeof validateConfig>, { ok: true }> {
  assert.ok(r.ok, `${where} is not a valid gateway config:\n  ${r.ok ? '' : r.problems.join('\n  ')}`);
}

function assertAdminStartable(config: Readonly<GatewayConfig>, where: string): void {
  if (config.admin.enabled && !isLoopbackName(config.admin.host)) {
    assert.ok(
      config.admin.token,
      `${where}: admin.host ${config.admin.host} is not loopback, so ADMIN_TOKEN is required`,
    );
  }
}

function portNumber(c: Container, port: number | string): number | undefined {
  return typeof port === 'number' ? port : c.ports?.find((p) => p.name === port)?.containerPort;
}

function preStopSeconds(c: Container): number {
  const p = c.lifecycle?.preStop;
  if (p?.sleep) return p.sleep.seconds;
  const cmd = p?.exec?.command ?? [];
  return cmd[0] === 'sleep' ? Number(cmd[1]) : 0;
}

function labelsMatch(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
) {
  return !!selector && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** The gateway config of one Kubernetes gateway container, as it will be loaded in the pod. */
function kubeGatewayConfig(
  manifests: Manifest[],
  pod: PodSpec,
  c: Container,
  secrets: 'as-shipped' | 'test',
) {
  const env = containerEnv(manifests, c, secrets);
  assert.ok(
    env.GATEWAY_CONFIG,
    `${c.name}: GATEWAY_CONFIG is not set, so the image's default config would run`,
  );
  const { volume, key } = mountedFile(pod, c, env.GATEWAY_CONFIG);
  const text = fileFromVolume(manifests, volume, key);
  return { text, env, loaded: loadConfigText(text, env) };
}

// ---- compose

const composeFile = join(ROOT, 'docker-compose.yml');
const compose = (): Compose => {
  const docs = readDocs(composeFile);
  assert.equal(docs.length, 1, 'docker-compose.yml holds one document');
  return docs[0] as Compose;
};

/** Compose variable interpolation: `${X:-default}`, `${X:?error}` (a test secret), `$$`. */
function interpolate(value: string): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g,
    (all, name?: string, op?: string, arg?: string) => {
      if (all === '$$') return '$';
      if (op?.endsWith('-')) return arg ?? '';
      if (op?.endsWith('?')) {
        const v = TEST_SECRETS[name!];
        assert.ok(v, `compose requires \${${name}} but the test has no stand-in for it`);
        return v;
      }
      return '';
    },
  );
}

function composeEnv(s: ComposeService): Record<string, string> {
  const env: Record<string, string> = {};
  if (Array.isArray(s.environment)) {
    for (const line of s.environment) {
      const i = line.indexOf('=');
      env[i === -1 ? line : line.slice(0, i)] = i === -1 ? '' : interpolate(line.slice(i + 1));
    }
  } else {
    for (const [k, v] of Object.entries(s.environment ?? {})) env[k] = interpolate(String(v ?? ''));
  }
  return env;
}

function composeGateways(c: Compose): [string, ComposeService][] {
  return Object.entries(c.services).filter(
    ([, s]) => s.build !== undefined && (s.command === undefined || s.command.includes('serve')),
  );
}

function healthcheckText(s: ComposeService): string {
  const t = s.healthcheck?.test;
  return Array.isArray(t) ? t.join(' ') : (t ?? '');
}

// ---- tests

test('docker-compose.yml and every YAML file under deploy/ parse', () => {
  const files = [composeFile, ...yamlFilesUnder(DEPLOY)];
  assert.ok(files.length >= 8, `expected the compose file and the deploy examples, found ${files.length}`);
  for (const f of files) assert.ok(readDocs(f).length > 0, `${relative(ROOT, f)} is empty`);
});

test('every Kubernetes manifest names its kind, and each kustomization lists exactly its files', () => {
  const dirs = exampleDirs();
  assert.deepEqual(
    dirs.map((d) => basename(d)),
    ['shared', 'sidecar'],
  );
  for (const dir of dirs) {
    for (const f of manifestFiles(dir)) {
      for (const m of readDocs(f) as Manifest[]) {
        assert.ok(
          m.apiVersion && m.kind && m.metadata?.name,
          `${relative(ROOT, f)}: a document lacks apiVersion, kind or metadata.name`,
        );
      }
    }
    const kustomization = join(dir, 'kustomization.yaml');
    const listed = (readDocs(kustomization)[0] as Manifest).resources ?? [];
    const present = manifestFiles(dir).map((f) => relative(dir, f));
    assert.deepEqual([...listed].sort(), present, `${relative(ROOT, kustomization)} resources`);
  }
});

test('compose: the gateway sets only variables the gateway reads, and its config loads', () => {
  const c = compose();
  const gateways = composeGateways(c);
  assert.equal(gateways.length, 1, 'one gateway service in docker-compose.yml');
  for (const [name, s] of gateways) {
    const env = composeEnv(s);
    for (const k of Object.keys(env))
      assert.ok(GATEWAY_ENV.has(k), `compose ${name}: ${k} is not read by the gateway`);
    assert.ok(env.GATEWAY_CONFIG, `compose ${name}: GATEWAY_CONFIG is not set`);

    // The config file is bind-mounted from the repository: find its host side.
    const mount = (s.volumes ?? [])
      .map((v) => v.split(':'))
      .find(([, target]) => target === env.GATEWAY_CONFIG);
    assert.ok(mount, `compose ${name}: nothing is mounted at GATEWAY_CONFIG ${env.GATEWAY_CONFIG}`);
    assert.equal(mount[2], 'ro', `compose ${name}: the config should be mounted read-only`);
    const hostFile = resolve(ROOT, mount[0]!);

    // The file alone, as the schema sees it...
    assertConfigOk(
      validateConfig(parseYaml(read(hostFile)) as Record<string, unknown>, hostFile),
      relative(ROOT, hostFile),
    );
    // ...and with the environment applied, as `serve` loads it.
    const r = loadConfig({ file: hostFile, env });
    assertConfigOk(r, `${relative(ROOT, hostFile)} + compose environment`);
    assertAdminStartable(r.config, `compose ${name}`);
    assert.equal(r.config.store.type, 'redis', `compose ${name}: the compose stack shares Redis`);
    const redisHost = new URL(r.config.store.redis.url).hostname;
    assert.ok(c.services[redisHost], `compose ${name}: Redis host ${redisHost} is not a compose service`);
    for (const route of r.config.routes) {
      const host = new URL(route.targets[0]!.url).hostname;
      assert.ok(
        c.services[host],
        `compose ${name}: route ${route.prefix} targets ${host}, not a compose service`,
      );
    }

    const published = (s.ports ?? []).map((p) => Number(String(p).split(':').at(-1)));
    assert.ok(
      published.includes(r.config.server.port),
      `compose ${name}: gateway port ${r.config.server.port} not published`,
    );
    assert.ok(
      published.includes(r.config.admin.port),
      `compose ${name}: admin port ${r.config.admin.port} not published`,
    );
    assert.match(
      healthcheckText(s),
      new RegExp(`127\\.0\\.0\\.1:${r.config.server.port}/readyz\\b`),
      `compose ${name}: the healthcheck must ask /readyz on the gateway port`,
    );
  }
});

test('compose: Redis persists (appendonly), and every dependency has a healthcheck to wait for', () => {
  const c = compose();
  const redis = c.services.redis;
  assert.ok(redis, 'a redis service');
  const cmd = redis.command ?? [];
  assert.equal(cmd[cmd.indexOf('--appendonly') + 1], 'yes', 'redis runs with --appendonly yes');
  assert.ok(
    (redis.volumes ?? []).some((v) => v.endsWith(':/data')),
    'redis keeps /data on a volume',
  );
  for (const [name, s] of Object.entries(c.services)) {
    const deps = Array.isArray(s.depends_on) ? {} : (s.depends_on ?? {});
    for (const [dep, cond] of Object.entries(deps)) {
      assert.ok(c.services[dep], `${name} depends on unknown service ${dep}`);
      if (cond.condition === 'service_healthy')
        assert.ok(
          c.services[dep].healthcheck,
          `${name} waits for ${dep} to be healthy, but ${dep} has no healthcheck`,
        );
    }
  }
  assert.ok(
    Object.keys(c.services.gateway?.depends_on ?? {}).includes('redis'),
    'the gateway waits for redis',
  );
});

for (const dir of exampleDirs()) {
  const example = relative(ROOT, dir);

  test(`${example}: gateway containers set only variables the gateway reads`, () => {
    const manifests = manifestsIn(dir);
    const gateways = podSpecs(manifests).flatMap(({ pod }) => pod.containers.filter(isGatewayContainer));
    assert.ok(gateways.length > 0, `${example}: no gateway container found`);
    for (const c of gateways) {
      for (const name of Object.keys(containerEnv(manifests, c, 'as-shipped'))) {
        assert.ok(GATEWAY_ENV.has(name), `${example} ${c.name}: ${name} is not read by the gateway`);
      }
    }
  });

  test(`${example}: the mounted gateway config is valid, probes and Service use the gateway port`, () => {
    const manifests = manifestsIn(dir);
    for (const { workload, pod } of podSpecs(manifests)) {
      for (const c of pod.containers.filter(isGatewayContainer)) {
        const where = `${example} ${workload.metadata.name}/${c.name}`;
        const { text, loaded } = kubeGatewayConfig(manifests, pod, c, 'test');
        assertConfigOk(
          validateConfig(parseYaml(text) as Record<string, unknown>),
          `${where} config (file alone)`,
        );
        assertConfigOk(loaded, `${where} config + environment`);
        const config = loaded.config;
        assertAdminStartable(config, where);

        assert.equal(c.readinessProbe?.httpGet?.path, '/readyz', `${where}: readiness probe path`);
        assert.equal(c.livenessProbe?.httpGet?.path, '/healthz', `${where}: liveness probe path`);
        for (const probe of [c.readinessProbe!, c.livenessProbe!]) {
          assert.equal(
            portNumber(c, probe.httpGet!.port),
            config.server.port,
            `${where}: probe port is not server.port`,
          );
        }

        // The Service selecting this pod exposes the gateway port and nothing else.
        const labels = workload.spec?.template?.metadata?.labels;
        const services = manifests.filter(
          (m) => m.kind === 'Service' && labelsMatch(m.spec?.selector as Record<string, string>, labels),
        );
        assert.ok(services.length > 0, `${where}: no Service selects the gateway pods`);
        for (const svc of services) {
          for (const p of svc.spec?.ports ?? []) {
            assert.equal(
              portNumber(c, p.targetPort ?? p.port),
              config.server.port,
              `${where}: Service ${svc.metadata.name} port ${p.port} does not lead to the gateway port`,
            );
          }
        }

        // The kubelet's SIGKILL must not cut the drain short.
        const graceMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000;
        const needMs = preStopSeconds(c) * 1000 + config.server.shutdownTimeoutMs;
        assert.ok(
          graceMs > needMs,
          `${where}: terminationGracePeriodSeconds ${graceMs / 1000}s must exceed preStop + shutdownTimeoutMs (${needMs / 1000}s)`,
        );
      }
    }
  });

  test(`${example}: containers run as non-root on a read-only root filesystem with resources`, () => {
    for (const { workload, pod } of podSpecs(manifestsIn(dir))) {
      for (const c of pod.containers) {
        const where = `${example} ${workload.metadata.name}/${c.name}`;
        const nonRoot = c.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot;
        assert.equal(nonRoot, true, `${where}: runAsNonRoot`);
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${where}: readOnlyRootFilesystem`);
        assert.ok(
          c.resources?.requests?.memory && c.resources.limits?.memory,
          `${where}: memory request and limit`,
        );
      }
    }
  });
}

test('sidecar: the file store reads the mounted Secret, whose keys.yaml the file store accepts', () => {
  const dir = join(KUBE, 'sidecar');
  const manifests = manifestsIn(dir);
  const [entry] = podSpecs(manifests);
  assert.ok(entry, 'a sidecar workload');
  const c = entry.pod.containers.find(isGatewayContainer)!;
  const { loaded } = kubeGatewayConfig(manifests, entry.pod, c, 'test');
  assertConfigOk(loaded, 'sidecar config');
  const config = loaded.config;
  assert.equal(config.store.type, 'file');
  assert.equal(config.admin.host, '127.0.0.1', 'the sidecar admin API stays on loopback');
  for (const r of config.routes)
    for (const t of r.targets)
      assert.equal(new URL(t.url).hostname, '127.0.0.1', `route ${r.prefix} leaves the pod`);

  const { volume, key } = mountedFile(entry.pod, c, config.store.file.path);
  assert.ok(volume.secret, 'keys.yaml comes from a Secret');
  const keys = parseKeyFile(
    fileFromVolume(manifests, volume, key),
    new Set(config.rateLimit.tiers.map((t) => t.name)),
  );
  assert.ok(keys.ok, `sidecar keys.yaml is rejected:\n  ${keys.ok ? '' : keys.problems.join('\n  ')}`);
  assert.ok(keys.companies.length > 0 && keys.keys.length > 0, 'the example holds a company and a key');

  // The app must not be reachable around the gateway through the pod IP.
  for (const app of entry.pod.containers.filter((x) => !isGatewayContainer(x))) {
    const args = app.args ?? [];
    assert.equal(args[args.indexOf('--host') + 1], '127.0.0.1', `${app.name} must bind loopback`);
  }
});

test('shared: Redis store, several routes, spread replicas with a disruption budget, persistent Redis', () => {
  const manifests = manifestsIn(join(KUBE, 'shared'));
  const [entry] = podSpecs(manifests).filter(({ pod }) => pod.containers.some(isGatewayContainer));
  assert.ok(entry, 'a shared gateway workload');
  const c = entry.pod.containers.find(isGatewayContainer)!;
  const { loaded } = kubeGatewayConfig(manifests, entry.pod, c, 'test');
  assertConfigOk(loaded, 'shared config');
  assert.equal(loaded.config.store.type, 'redis');
  assert.ok(loaded.config.routes.length >= 2, 'the shared gateway fronts several services');
  assert.ok((entry.workload.spec?.replicas ?? 1) >= 2, 'more than one replica');

  const labels = entry.workload.spec?.template?.metadata?.labels;
  const pdb = manifests.find(
    (m) =>
      m.kind === 'PodDisruptionBudget' &&
      labelsMatch((m.spec?.selector as { matchLabels?: Record<string, string> })?.matchLabels, labels),
  );
  assert.ok(pdb, 'a PodDisruptionBudget covers the gateway pods');

  // The Redis URL must name a Service of the example.
  const redisHost = new URL(loaded.config.store.redis.url).hostname.split('.')[0];
  find(manifests, 'Service', redisHost!);
  const redis = podSpecs(manifests)
    .flatMap(({ pod }) => pod.containers)
    .find((x) => x.image.startsWith('redis:'));
  assert.ok(redis, 'a Redis container');
  const args = [...(redis.command ?? []), ...(redis.args ?? [])];
  assert.equal(args[args.indexOf('--appendonly') + 1], 'yes', 'redis runs with --appendonly yes');
});

test('shared: the placeholder ADMIN_TOKEN is refused, so it cannot go live unchanged', () => {
  const manifests = manifestsIn(join(KUBE, 'shared'));
  const [entry] = podSpecs(manifests).filter(({ pod }) => pod.containers.some(isGatewayContainer));
  const c = entry!.pod.containers.find(isGatewayContainer)!;
  const { loaded } = kubeGatewayConfig(manifests, entry!.pod, c, 'as-shipped');
  assert.ok(!loaded.ok, 'the shipped Secret must not hold a usable admin token');
  assert.ok(
    loaded.problems.some((p) => p.includes('ADMIN_TOKEN')),
    loaded.problems.join('\n'),
  );
});

test('Dockerfile: multi-stage, non-root, healthcheck, CLI entrypoint, prod deps without scripts', () => {
  const lines = read(join(ROOT, 'Dockerfile'))
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const froms = lines.flatMap((l, i) => (/^FROM\s/i.test(l) ? [i] : []));
  assert.ok(froms.length >= 2, 'multi-stage: at least two FROM');
  const final = lines.slice(froms.at(-1));
  const instr = (name: string) => final.filter((l) => new RegExp(`^${name}\\s`, 'i').test(l));

  const stages = lines.flatMap((l) => /^FROM\s.*\sAS\s+(\S+)/i.exec(l)?.[1] ?? []);
  for (const l of lines) {
    const from = /--from=(\S+)/.exec(l)?.[1];
    if (from) assert.ok(stages.includes(from), `${l}: no stage named ${from}`);
  }
  // The runtime image holds the built code, prod dependencies, config and the console's static
  // files (admin.console), never sources or tooling.
  for (const l of instr('COPY')) {
    const sources = l
      .split(/\s+/)
      .slice(1, -1)
      .filter((t) => !t.startsWith('--'));
    for (const src of sources) {
      assert.ok(
        ['package.json', 'node_modules', 'dist', 'config', 'console'].includes(posix.basename(src)),
        `runtime stage copies ${src}`,
      );
    }
  }

  const user = instr('USER').at(-1);
  assert.ok(user, 'the runtime stage sets USER');
  assert.doesNotMatch(user, /^USER\s+(root|0)(:|\s|$)/i, 'the runtime user is not root');
  assert.equal(instr('HEALTHCHECK').length, 1, 'the runtime stage has a HEALTHCHECK');
  assert.match(instr('HEALTHCHECK')[0]!, /\/healthz/);
  assert.deepEqual(JSON.parse(instr('ENTRYPOINT')[0]!.replace(/^ENTRYPOINT\s+/i, '')), [
    'node',
    'dist/cli.js',
  ]);
  assert.deepEqual(JSON.parse(instr('CMD')[0]!.replace(/^CMD\s+/i, '')), ['serve']);
  assert.match(instr('ENV').join('\n'), /NODE_ENV=production/);
  const exposed = instr('EXPOSE').flatMap((l) => l.split(/\s+/).slice(1));
  assert.ok(exposed.includes('8080') && exposed.includes('8081'), 'EXPOSE 8080 8081');
  // `prepare` runs the build, which cannot work without src/ and the dev tools.
  for (const l of lines.filter((x) => /npm ci\b.*--omit=dev/.test(x))) assert.match(l, /--ignore-scripts/);

  const ignored = read(join(ROOT, '.dockerignore'))
    .split('\n')
    .map((l) => l.trim());
  for (const p of ['node_modules', 'dist', '.git'])
    assert.ok(ignored.includes(p), `.dockerignore lists ${p}`);
});
