import type { Command } from 'commander';
import type { CreatedKey } from '../admin/service.js';
import { EXIT_USAGE, fail, type CliContext } from './io.js';
import { parseLimitsOption, parseNonNegative, parseScopesOption, type Settable } from './options.js';
import { table } from './output.js';
import { manage, type Output } from './session.js';

/** The columns of `keys` tables. */
export const KEY_COLUMNS = [
  'id',
  'prefix',
  'label',
  'environment',
  'status',
  'createdAt',
  'lastUsedAt',
  'expiresAt',
  'revokedAt',
  'exposedAt',
  'scopes',
  'limits',
  'rotationDue',
] as const;

/** What `keys list` cannot see with the file store (printed on stderr). */
export const KEYS_FILE_NOTE =
  "lastUsedAt is kept in the running gateway's memory, not in the key file: ask its admin API " +
  '(GET /admin/v1/companies/<id>/keys on the admin port); a key without createdAt in the file ' +
  'shows when it was first loaded';

/** `keys create|list|update|revoke|rotate` (on the store) and `keys generate|hash` (offline). */
export function registerKeyCommands(program: Command, ctx: CliContext): void {
  const keys = program.command('keys').description('manage API keys');
  registerStoreKeyCommands(keys, ctx);
  registerOfflineKeyCommands(keys, ctx);
}

function registerStoreKeyCommands(keys: Command, ctx: CliContext): void {
  keys
    .command('create <companyId>')
    .description('create a key; the key is printed once and never again')
    .option('--label <label>')
    .option('--environment <env>', 'key environment (live, test, ...)', 'live')
    .option('--expires-at <timestamp>', 'UTC YYYY-MM-DDTHH:MM:SSZ')
    .option('--json')
    .action(
      (companyId: string, o: { label?: string; environment: string; expiresAt?: string; json?: boolean }) =>
        manage(
          ctx,
          (s) =>
            s.keys.createKey(
              companyId,
              {
                environment: o.environment,
                ...(o.label ? { label: o.label } : {}),
                ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
              },
              s.actor,
            ),
          { json: !!o.json, text: createdKeyText },
        ),
    );
  keys
    .command('list <companyId>')
    .option('--json')
    .action((companyId: string, o: { json?: boolean }) =>
      manage(ctx, (s) => s.keys.listKeys(companyId), { ...keyTable(o), fileStoreNote: KEYS_FILE_NOTE }),
    );
  keys
    .command('update <keyId>')
    .description("narrow a key's scopes (never wider than its company's) or give it its own windows")
    .option(
      '--scopes <all|json>',
      "all (the company's), or a JSON list of {route, methods?, paths?}",
      parseScopesOption,
    )
    .option(
      '--limits <none|windows>',
      "its own windows on top of the company's, e.g. 5/1,100/60; none = no own windows",
      parseLimitsOption,
    )
    .option('--json')
    .action((keyId: string, o: { scopes?: Settable; limits?: Settable; json?: boolean }) =>
      manage(ctx, (s) => s.keys.updateKey(keyId, keyFields(o), s.actor), keyTable(o)),
    );
  keys
    .command('revoke <keyId>')
    .option('--json')
    .action((keyId: string, o: { json?: boolean }) =>
      manage(ctx, (s) => s.keys.revokeKey(keyId, s.actor), {
        json: !!o.json,
        text: (k) => `revoked ${k.id} (${k.prefix}) at ${k.revokedAt}\n`,
      }),
    );
  keys
    .command('rotate <keyId>')
    .description(
      'create a new key for the same company; the old key keeps working for the grace period (7 days), or until revoked',
    )
    .option(
      '--grace <seconds>',
      'the old key stops by itself after this many seconds (default 604800: 7 days; 0: at once)',
      parseNonNegative,
    )
    .option('--json')
    .action((keyId: string, o: { grace?: number; json?: boolean }) =>
      manage(
        ctx,
        (s) => s.keys.rotateKey(keyId, o.grace !== undefined ? { gracePeriodSeconds: o.grace } : {}, s.actor),
        { json: !!o.json, text: rotatedKeyText },
      ),
    );
}

/** `keys update`: the fields the options set. */
function keyFields(o: { scopes?: Settable; limits?: Settable }): Record<string, unknown> {
  return {
    ...(o.scopes !== undefined ? { scopes: o.scopes.set } : {}),
    ...(o.limits !== undefined ? { limits: o.limits.set } : {}),
  };
}

function keyTable(o: { json?: boolean }): Output<object | object[]> {
  return { json: !!o.json, text: (k) => table(Array.isArray(k) ? k : [k], KEY_COLUMNS) };
}

/** `keys create`: the key, once, between blank lines (easy to select), and what to do with it. */
export function createdKeyText(k: CreatedKey): string {
  return `key id:  ${k.id}\nprefix:  ${k.prefix}\ncompany: ${k.companyId}\n\n${k.key}\n\nStore this key now: it is not shown again.\n`;
}

/** `keys rotate`: the new key, once, and when the old one stops working. */
export function rotatedKeyText(k: CreatedKey & { replaces: string; oldKeyRevokesAt: string | null }): string {
  return (
    `new key id: ${k.id} (replaces ${k.replaces})\nprefix:     ${k.prefix}\n\n${k.key}\n\nStore this key now: it is not shown again.\n` +
    (k.oldKeyRevokesAt
      ? `The old key stops working at ${k.oldKeyRevokesAt}; to stop it sooner: notify-gateway keys revoke ${k.replaces}\n`
      : `The old key keeps working until you revoke it: notify-gateway keys revoke ${k.replaces}\n`)
  );
}

function registerOfflineKeyCommands(keys: Command, ctx: CliContext): void {
  keys
    .command('generate')
    .description(
      'make a new key offline for the file store: prints the key once, its hash and a keys.yaml entry',
    )
    .option('--environment <env>', 'key environment (live, test, ...)', 'live')
    .option('--id <keyId>', 'key id for the keys.yaml entry')
    .option('--label <label>')
    .option('--json')
    .action(async (o: GenerateOptions) => {
      const { generateKeyEntry } = await import('./key-entry.js');
      ctx.io.stdout(generateKeyEntry(o));
    });
  keys
    .command('hash')
    .description('read a key on stdin, print its SHA-256 record hash (for the file store)')
    .action(async () => {
      const chunks: Buffer[] = [];
      for await (const c of ctx.io.stdin) chunks.push(Buffer.from(c));
      const key = Buffer.concat(chunks).toString('utf8').trim();
      if (!key) fail('no key on stdin (e.g. printf %s "$KEY" | notify-gateway keys hash)', EXIT_USAGE);
      const { hashApiKey } = await import('../auth/api-key.js');
      ctx.io.stdout(hashApiKey(key) + '\n');
    });
}

/** The options of `keys generate`. */
export interface GenerateOptions {
  environment: string;
  id?: string;
  label?: string;
  json?: boolean;
}
