import type { Command } from 'commander';
import type { CliContext } from './io.js';
import { parseLimitsOption, parseOnOff, parseScopesOption, parseStatus, type Settable } from './options.js';
import { table } from './output.js';
import { manage, type Output } from './session.js';

/** The columns of `companies` tables. */
export const COMPANY_COLUMNS = [
  'id',
  'name',
  'tier',
  'status',
  'apiAccess',
  'scopes',
  'limits',
  'createdAt',
  'updatedAt',
] as const;

/** What the CLI cannot see with the file store (printed on stderr with `get` and `list`). */
export const COMPANIES_FILE_NOTE =
  'the key file records no creation or update time of companies: createdAt/updatedAt are when ' +
  'this command read the file (the running gateway answers when it first loaded them)';

const SCOPES_HELP = 'routes its keys may call: all, or a JSON list of {route, methods?, paths?}';
const LIMITS_HELP = "its own windows, e.g. 10/1,600/60; tier = the tier's";

interface CompanyOptions {
  name?: string;
  tier?: string;
  status?: string;
  apiAccess?: boolean;
  scopes?: Settable;
  limits?: Settable;
  json?: boolean;
}

/** `companies create|get|list|update`. */
export function registerCompanyCommands(program: Command, ctx: CliContext): void {
  const companies = program.command('companies').description('manage companies');
  companies
    .command('create <id>')
    .option('--name <name>')
    .option('--tier <tier>', 'a tier of rateLimit.tiers', 'free')
    .option('--status <status>', 'active | pending | suspended', parseStatus, 'active')
    .option('--api-access <on|off>', 'API access', parseOnOff, true)
    .option('--scopes <all|json>', SCOPES_HELP, parseScopesOption)
    .option('--limits <tier|windows>', LIMITS_HELP, parseLimitsOption)
    .option('--json')
    .action((id: string, o: CompanyOptions) =>
      manage(ctx, (s) => s.companies.createCompany(newCompany(id, o), s.actor), companyOutput(o)),
    );
  companies
    .command('get <id>')
    .option('--json')
    .action((id: string, o: { json?: boolean }) =>
      manage(ctx, (s) => s.companies.getCompany(id), companyOutput(o, COMPANIES_FILE_NOTE)),
    );
  companies
    .command('list')
    .option('--json')
    .action((o: { json?: boolean }) =>
      manage(ctx, (s) => s.companies.listCompanies(), {
        json: !!o.json,
        text: (cs) => table(cs, COMPANY_COLUMNS),
        fileStoreNote: COMPANIES_FILE_NOTE,
      }),
    );
  companies
    .command('update <id>')
    .option('--name <name>')
    .option('--tier <tier>')
    .option('--status <status>', 'active | pending | suspended', parseStatus)
    .option('--api-access <on|off>', 'API access', parseOnOff)
    .option('--scopes <all|json>', SCOPES_HELP, parseScopesOption)
    .option('--limits <tier|windows>', LIMITS_HELP, parseLimitsOption)
    .option('--json')
    .action((id: string, o: CompanyOptions) =>
      manage(ctx, (s) => s.companies.updateCompany(id, companyFields(o), s.actor), companyOutput(o)),
    );
}

/** `companies create`: the defaults of the options, a name only when one is given. */
export function newCompany(id: string, o: CompanyOptions): Record<string, unknown> {
  return {
    id,
    tier: o.tier,
    status: o.status,
    apiAccess: o.apiAccess,
    ...(o.name ? { name: o.name } : {}),
    ...(o.scopes !== undefined ? { scopes: o.scopes.set } : {}),
    ...(o.limits !== undefined ? { limits: o.limits.set } : {}),
  };
}

/** `companies update`: the fields the options set; an option not given is not in the patch. */
export function companyFields(o: CompanyOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (o.scopes !== undefined) fields.scopes = o.scopes.set;
  if (o.limits !== undefined) fields.limits = o.limits.set;
  if (o.name !== undefined) fields.name = o.name;
  if (o.tier !== undefined) fields.tier = o.tier;
  if (o.status !== undefined) fields.status = o.status;
  if (o.apiAccess !== undefined) fields.apiAccess = o.apiAccess;
  return fields;
}

function companyOutput(o: { json?: boolean }, fileStoreNote?: string): Output<object> {
  return {
    json: !!o.json,
    text: (c) => table([c], COMPANY_COLUMNS),
    ...(fileStoreNote ? { fileStoreNote } : {}),
  };
}
