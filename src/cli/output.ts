import { escapeRefusedText } from '../config/text.js';
import type { RateWindow, Scope } from '../store/types.js';

/**
 * Plain columns, two spaces apart, one row per line, `-` for an empty cell, `(none)` for no rows
 * (kept hand-written rather than cli-table3: docs/architecture.md, "CLI tables"). Control, bidi and
 * other invisible format characters in a cell are shown escaped (`\u001b`, `\u202e`): a company
 * name or label must not move the cursor, recolour the terminal, reorder text or forge a row.
 *
 * @example
 * table([{ id: 'acme', tier: 'free' }], ['id', 'tier']);
 * // 'id    tier\nacme  free\n'
 */
export function table(rows: readonly object[], cols: readonly string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = rows.map((r) => cols.map((c) => cellText(c, (r as Record<string, unknown>)[c])));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line([...cols]), ...cells.map(line)].join('\n') + '\n';
}

function cellText(col: string, v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (Array.isArray(v)) return formatList(col, v);
  // Controls (ESC starts terminal escapes; CR and LF could forge rows), bidi and other invisible
  // format characters, unpaired surrogates: escaped (stored before the rule, or by another store).
  return escapeRefusedText(String(v));
}

/** Scopes and windows in a table cell: `POST /notify/v1/otps, * /media` and `10/1s, 600/60s`. */
function formatList(col: string, v: unknown[]): string {
  if (v.length === 0) return '(none)';
  if (col === 'limits') return (v as RateWindow[]).map((w) => `${w.points}/${w.duration}s`).join(', ');
  return (v as Scope[])
    .map((s) => `${s.methods?.join('|') ?? '*'} ${s.paths?.join('|') ?? s.route}`)
    .join(', ');
}

/** `--json` output: indented, one trailing newline. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** The admin service names fields as the API does; the CLI user typed options and arguments. */
const CLI_WORDS: Readonly<Record<string, string>> = {
  id: '<id>',
  name: '--name',
  tier: '--tier',
  status: '--status',
  apiAccess: '--api-access',
  label: '--label',
  environment: '--environment',
  expiresAt: '--expires-at',
  gracePeriodSeconds: '--grace',
  // usage and audit through the admin API, which checks its query parameters
  from: '--from',
  to: '--to',
  granularity: '--granularity',
  limit: '--limit',
  companyId: '--company',
  event: '--event',
  before: '--before',
  after: '--after',
};

/**
 * A validation answer in the CLI's words: `expiresAt: must be ...; tier: ...` becomes
 * `--expires-at: must be ...; --tier: ...`. Fields the CLI has no option for keep their name.
 */
export function inCliWords(details: string): string {
  return details.replace(/(^|; )([A-Za-z]+):/g, (m, sep: string, field: string) =>
    CLI_WORDS[field] ? `${sep}${CLI_WORDS[field]}:` : m,
  );
}
