import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { eventually } from './http.js';

/** One mail the test SMTP server received, parsed. */
export interface ReceivedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  /** The HTML part, if any (the dashboard sends none). */
  html: string | false;
}

export interface TestSmtp {
  url: string;
  mails: ReceivedMail[];
  /** The first mail to `to` whose subject matches, waiting for it to arrive; taken off `mails`. */
  waitFor(to: string, subject: RegExp): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** A real SMTP server (smtp-server) on 127.0.0.1:0 that parses (mailparser) and keeps every mail. */
export async function startSmtp(): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (m) => {
          const to = Array.isArray(m.to) ? m.to[0]?.text : m.to?.text;
          mails.push({
            to: to ?? '',
            from: m.from?.text ?? '',
            subject: m.subject ?? '',
            text: m.text ?? '',
            html: m.html ?? false,
          });
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async waitFor(to, subject) {
      let found: ReceivedMail | undefined;
      const before = mails.length;
      await eventually(async () => {
        const i = mails.findIndex((m) => m.to === to && subject.test(m.subject));
        if (i >= 0) found = mails.splice(i, 1)[0];
        return found !== undefined;
      }, 5000).catch(() => {
        throw new Error(`no mail to ${to} matching ${subject} (${before} mails so far)`);
      });
      return found!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
