import { X509Certificate } from 'node:crypto';
import { readFileSync, stat, statSync, type Stats } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Logger } from './observability/logger.js';

/** A certificate chain and its private key, as files (PEM), named by the config keys that gave them. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** What `readTlsFiles` read: the PEM contents and the files' stat identity at read time. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  /** Device, inode, size and times of both files, taken before reading them. */
  identity: string;
}

/**
 * Reads a certificate and key pair and checks that they make a secure context (a key that does not
 * match the certificate, or a file that is not PEM, throws). Errors name the config key
 * (`server.tls.certFile`), not only the path. The stat identity is taken before reading: a file
 * replaced in between shows a newer identity at the next poll and is read again.
 *
 * @example
 * const { cert, key } = readTlsFiles(config.server.tls, 'server.tls');
 */
export function readTlsFiles(files: TlsFiles, configKey: string): TlsMaterial {
  const read = (field: 'certFile' | 'keyFile') => {
    try {
      return { st: statSync(files[field]), data: readFileSync(files[field]) };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new Error(`${configKey}.${field}: cannot read ${files[field]} (${e.code ?? e.message})`);
    }
  };
  const c = read('certFile');
  const k = read('keyFile');
  try {
    createSecureContext({ cert: c.data, key: k.data });
  } catch (err) {
    throw new Error(
      `${configKey}: ${files.certFile} and ${files.keyFile} do not make a TLS pair (${(err as Error).message})`,
    );
  }
  return { cert: c.data, key: k.data, identity: `${identityOf(c.st)}|${identityOf(k.st)}` };
}

/**
 * When a PEM certificate chain stops being valid: the earliest `notAfter` of its certificates, in
 * Unix seconds (an intermediate that expires first breaks the chain as surely as the leaf). Null
 * when it holds no certificate that parses.
 *
 * @example
 * metrics.tlsExpiry.labels('server').set(certificateExpiry(material.cert) ?? 0);
 */
export function certificateExpiry(pem: Buffer | string): number | null {
  let earliest: number | null = null;
  for (const block of String(pem).match(PEM_CERTIFICATE) ?? []) {
    let ms: number;
    try {
      ms = Date.parse(new X509Certificate(block).validTo);
    } catch {
      continue;
    }
    if (!Number.isNaN(ms) && (earliest === null || ms < earliest)) earliest = ms;
  }
  return earliest === null ? null : Math.floor(earliest / 1000);
}
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function identityOf(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** What `watchTlsFiles` needs: the server to update and how to report. */
export interface TlsWatchOptions {
  configKey: string;
  logger: Logger;
  /** The identity of the material the server started with (`readTlsFiles().identity`). */
  identity: string;
  /** Default 1000 ms. */
  intervalMs?: number;
  /** Called with each certificate chain installed by a reload (the expiry gauge). */
  onInstalled?: (cert: Buffer) => void;
}

/**
 * Reloads a TLS server's certificate without a restart: polls both files' stat (like the file
 * store: Kubernetes swaps Secret files through symlinks, which inotify on the old inode misses)
 * and, when either changed, reads the pair and calls `server.setSecureContext`. New connections
 * get the new certificate; open ones keep theirs. A pair that cannot be read or does not match
 * (cert-manager writing one file before the other) is logged and skipped: the server keeps the
 * last good certificate and retries at the next change. Returns the function that stops polling.
 *
 * @example
 * const stop = watchTlsFiles(server, config.server.tls, { configKey: 'server.tls', logger, identity });
 */
export function watchTlsFiles(
  server: { setSecureContext(options: { cert: Buffer; key: Buffer }): void },
  files: TlsFiles,
  opts: TlsWatchOptions,
): () => void {
  let seen = opts.identity;
  let polling = false;
  let stopped = false;
  const poll = () => {
    if (polling) return;
    polling = true;
    statBoth(files, (now) => {
      polling = false;
      // A stat in flight when the watcher stopped must not install what it finds afterwards.
      if (stopped || now === seen) return;
      seen = now;
      try {
        const m = readTlsFiles(files, opts.configKey);
        seen = m.identity;
        server.setSecureContext({ cert: m.cert, key: m.key });
        opts.onInstalled?.(m.cert);
        const x = new X509Certificate(m.cert);
        opts.logger.info(
          { tls: opts.configKey, subject: x.subject, validTo: x.validTo, fingerprint256: x.fingerprint256 },
          'TLS certificate reloaded',
        );
      } catch (err) {
        opts.logger.error(
          { tls: opts.configKey, error: (err as Error).message },
          'TLS files changed but cannot be used; keeping the current certificate',
        );
      }
    });
  };
  const timer = setInterval(poll, opts.intervalMs ?? 1000);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** Both files' identity, or a `missing:` marker (a vanished file is a change too). */
function statBoth(files: TlsFiles, done: (identity: string) => void): void {
  stat(files.certFile, (e1, c) => {
    stat(files.keyFile, (e2, k) => {
      const a = e1 ? `missing:${e1.code ?? ''}` : identityOf(c);
      const b = e2 ? `missing:${e2.code ?? ''}` : identityOf(k);
      done(`${a}|${b}`);
    });
  });
}
