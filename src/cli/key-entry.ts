import { createKeyRecord } from '../auth/key-record.js';
import { environmentSchema, idSchema, labelSchema } from '../config/fields.js';
import { isoSeconds } from '../time.js';
import { EXIT_USAGE, fail } from './io.js';
import type { GenerateOptions } from './keys.js';
import { jsonText } from './output.js';

/**
 * `keys generate`: a new key made here, for the file store, and what to print: the key once, and
 * the entry for the key file (or all of it as JSON). The options are checked by the key file's own
 * rules, so the printed entry loads as is; exit 2 otherwise.
 */
export function generateKeyEntry(o: GenerateOptions): string {
  checkGenerateOptions(o);
  // No company yet: the operator places the entry under its company in the key file.
  const { key, record } = createKeyRecord({
    companyId: '',
    environment: o.environment,
    label: o.label ?? null,
    expiresAt: null,
    createdAt: isoSeconds(),
  });
  const entry = {
    id: o.id ?? record.id,
    hash: record.hash,
    prefix: record.prefix,
    environment: o.environment,
    ...(o.label ? { label: o.label } : {}),
    createdAt: record.createdAt,
  };
  if (o.json) return jsonText({ key, ...entry });
  // The label is free text (`#`, `: `, a leading `-` mean something in YAML): written quoted.
  const yaml = Object.entries(entry)
    .map(([k, v], i) => `${i === 0 ? '      - ' : '        '}${k}: ${k === 'label' ? JSON.stringify(v) : v}`)
    .join('\n');
  return (
    `${key}\n\nHand this key to the company now: it is not stored anywhere and not shown again.\n` +
    `Add this entry under the company's keys: in the key file:\n\n${yaml}\n`
  );
}

function checkGenerateOptions(o: GenerateOptions): void {
  // What the key file will accept (config/fields.ts, the admin API's rules): the printed entry
  // must load as is.
  for (const [flag, schema, v] of [
    ['--environment', environmentSchema, o.environment],
    ['--id', idSchema, o.id],
    ['--label', labelSchema, o.label],
  ] as const) {
    const r = v === undefined ? null : schema.safeParse(v);
    if (r && !r.success) fail(`${flag}: ${r.error.issues.map((i) => i.message).join('; ')}`, EXIT_USAGE);
  }
}
