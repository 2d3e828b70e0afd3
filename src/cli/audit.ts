import type { Command } from 'commander';
import { ID_PATTERN } from '../store/types.js';
import { EXIT_USAGE, fail, type CliContext } from './io.js';
import { parsePositive } from './options.js';
import { table } from './output.js';
import { manage } from './session.js';

/** The columns of the `audit` table. */
export const AUDIT_COLUMNS = ['at', 'event', 'companyId', 'keyId', 'keyPrefix', 'actor', 'details'] as const;

/** Where the audit trail is with the file store (printed on stderr). */
export const AUDIT_FILE_NOTE =
  'the audit trail is stored in Redis (store.type: redis); with the file store each event is a log ' +
  'line (msg "audit ...") and sits in the running gateway\'s memory until it stops ' +
  '(GET /admin/v1/audit on its admin port)';

/** The filters `audit` passes on as typed; the admin API or the service checks them (exit 2, naming the option). */
const FILTERS = ['event', 'from', 'to', 'before', 'after'] as const;

type AuditOptions = { company?: string; limit: number; json?: boolean } & {
  [F in (typeof FILTERS)[number]]?: string;
};

/**
 * `audit [--company ID] [--event NAMES] [--from TIME] [--to TIME] [--before ID | --after ID]
 * [--limit N]`: the audit trail, newest first, with the admin API's filters (`GET /admin/v1/audit`).
 */
export function registerAuditCommand(program: Command, ctx: CliContext): void {
  program
    .command('audit')
    .description('show the audit trail, newest first')
    .option('--company <id>')
    .option('--event <names>', 'event names, comma-separated (key.revoked,key.exposed)')
    .option('--from <time>', 'entries at or after (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)')
    .option('--to <time>', 'entries before')
    .option('--before <id>', 'entries older than this entry id (the next page)')
    .option('--after <id>', 'entries newer than this entry id, oldest first')
    .option('--limit <n>', 'entries', parsePositive, 50)
    .option('--json')
    .action((o: AuditOptions) => {
      // An empty or malformed id is refused, not read as "every company" (as on the admin API).
      if (o.company !== undefined && !ID_PATTERN.test(o.company))
        fail('--company: must be a company id (1-64 letters, digits, ".", "_" or "-")', EXIT_USAGE);
      const query: Record<string, string> = o.company !== undefined ? { companyId: o.company } : {};
      for (const f of FILTERS) if (o[f] !== undefined) query[f] = o[f];
      return manage(ctx, (s) => s.audit.readAudit({ limit: o.limit, ...query }), {
        json: !!o.json,
        text: (es) =>
          table(
            es.map((e) => ({ ...e, details: e.details ? JSON.stringify(e.details) : null })),
            AUDIT_COLUMNS,
          ),
        fileStoreNote: AUDIT_FILE_NOTE,
      });
    });
}
