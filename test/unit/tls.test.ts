import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/observability/logger.js';
import { certificateExpiry, readTlsFiles, watchTlsFiles } from '../../src/tls.js';
import { eventually } from '../helpers/http.js';

const dir = mkdtempSync(join(tmpdir(), 'ng-tls-unit-'));

function selfSigned(cn: string, days = 1): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${cn}.crt`);
  const keyFile = join(dir, `${cn}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      String(days),
      '-subj',
      `/CN=${cn}`,
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

function replace(from: string, to: string): void {
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

const a = selfSigned('a');
const b = selfSigned('b');

describe('readTlsFiles', () => {
  test('reads a matching pair', () => {
    const m = readTlsFiles(a, 'server.tls');
    assert.equal(new X509Certificate(m.cert).subject, 'CN=a');
    assert.match(m.identity, /^\d+:\d+:\d+:[\d.]+:[\d.]+\|\d+:\d+:\d+:[\d.]+:[\d.]+$/);
  });

  test('a missing file names the config key and the code', () => {
    assert.throws(
      () => readTlsFiles({ certFile: a.certFile, keyFile: join(dir, 'none.key') }, 'admin.tls'),
      /^Error: admin\.tls\.keyFile: cannot read .*none\.key \(ENOENT\)$/,
    );
  });

  test('a key that does not match the certificate is refused', () => {
    assert.throws(
      () => readTlsFiles({ certFile: a.certFile, keyFile: b.keyFile }, 'server.tls'),
      /^Error: server\.tls: .* do not make a TLS pair/,
    );
  });
});

describe('certificateExpiry', () => {
  const notAfter = (file: string) => Date.parse(new X509Certificate(readFileSync(file)).validTo) / 1000;

  test("a certificate's notAfter in Unix seconds; the earliest of a chain", () => {
    const long = selfSigned('long', 30);
    assert.equal(certificateExpiry(readFileSync(long.certFile)), notAfter(long.certFile));
    const chain = Buffer.concat([readFileSync(long.certFile), readFileSync(a.certFile)]);
    assert.equal(certificateExpiry(chain), notAfter(a.certFile));
    assert.ok(notAfter(a.certFile) < notAfter(long.certFile));
  });

  test('null when nothing parses', () => {
    assert.equal(certificateExpiry(''), null);
    assert.equal(
      certificateExpiry('-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----'),
      null,
    );
  });
});

describe('watchTlsFiles', () => {
  test('installs a changed pair, skips a mismatched one, stops when asked', async () => {
    const live = { certFile: join(dir, 'live.crt'), keyFile: join(dir, 'live.key') };
    copyFileSync(a.certFile, live.certFile);
    copyFileSync(a.keyFile, live.keyFile);
    const installed: string[] = [];
    const server = {
      setSecureContext: (o: { cert: Buffer }) => void installed.push(new X509Certificate(o.cert).subject),
    };
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _e, cb) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          cb();
        },
      }),
    });
    const expiries: (number | null)[] = [];
    const stop = watchTlsFiles(server, live, {
      configKey: 'server.tls',
      logger,
      identity: readTlsFiles(live, 'server.tls').identity,
      intervalMs: 20,
      onInstalled: (cert) => expiries.push(certificateExpiry(cert)),
    });
    try {
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(installed, [], 'nothing changed, nothing installed');
      replace(b.keyFile, live.keyFile);
      await eventually(async () => lines.some((l) => l.level === 'error'), 2000, 20);
      assert.deepEqual(installed, [], 'a mismatched pair is not installed');
      replace(b.certFile, live.certFile);
      await eventually(async () => installed.length === 1, 2000, 20);
      assert.deepEqual(installed, ['CN=b']);
      assert.deepEqual(
        expiries,
        [certificateExpiry(readFileSync(b.certFile))],
        'the gauge follows the reload',
      );
      const ok = lines.find((l) => l.msg === 'TLS certificate reloaded');
      assert.equal(ok?.subject, 'CN=b');
      assert.match(String(ok?.fingerprint256), /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    } finally {
      stop();
    }
    replace(a.certFile, live.certFile);
    replace(a.keyFile, live.keyFile);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(installed.length, 1, 'no reload after stop()');
  });
});
