import { readFileSync } from 'node:fs';
import nodemailer, { type TransportOptions } from 'nodemailer';
import type { GatewayConfig } from '../config/schema.js';

/** One plain-text mail. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends the dashboard's mails; rejects when the mail could not be handed over. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * The mailer of `dashboard.mail`: nodemailer over SMTP (`url`, STARTTLS when offered or required,
 * the TLS options), or `log`, which hands each mail to `print` (the demo's terminal). Plain text
 * only: no HTML part, so nothing a company typed (its name) is ever rendered as markup in a mail.
 * The `log` transport is refused off loopback by `findStartupProblems`.
 *
 * @example const mailer = createMailer(config.dashboard.mail, (text) => process.stdout.write(text));
 */
export function createMailer(cfg: GatewayConfig['dashboard']['mail'], print: (text: string) => void): Mailer {
  if (cfg.transport === 'log') {
    return {
      async send(m) {
        print(
          `\n--- mail (dashboard.mail.transport: log) ---\nTo: ${m.to}\nSubject: ${m.subject}\n\n${m.text}\n---\n`,
        );
      },
      close() {},
    };
  }
  const transport = nodemailer.createTransport({
    url: cfg.url,
    requireTLS: cfg.tls.requireTls,
    tls: {
      rejectUnauthorized: cfg.tls.rejectUnauthorized,
      ...(cfg.tls.caFile ? { ca: readFileSync(cfg.tls.caFile) } : {}),
    },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  } as TransportOptions);
  return {
    async send(m) {
      await transport.sendMail({ from: cfg.from, to: m.to, subject: m.subject, text: m.text });
    },
    close() {
      transport.close();
    },
  };
}
