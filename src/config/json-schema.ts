import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { PACKAGE_CONFIG_DIR } from './load.js';
import { configSchema } from './schema.js';

/** Where `npm run schema` writes the JSON Schema of the config file (shipped with the package). */
export const CONFIG_JSON_SCHEMA_FILE = resolve(PACKAGE_CONFIG_DIR, 'schema.json');

/**
 * The JSON Schema (draft-07) of the config file, generated from `configSchema`: what a file may
 * contain (the input side: every key optional, defaults shown), for editors' completion and
 * checks. The zod schema stays the one that validates; a test fails when `config/schema.json`
 * is not this text.
 */
export function configJsonSchemaText(): string {
  const schema = zodToJsonSchema(configSchema, {
    // The file is the input: transforms and coercions are applied after it is read.
    effectStrategy: 'input',
    pipeStrategy: 'input',
    $refStrategy: 'none',
  });
  const { $schema, ...body } = schema as Record<string, unknown>;
  const titled = {
    $schema,
    title: 'notify-gateway configuration',
    description:
      'Generated from src/config/schema.ts by `npm run schema`; do not edit. Environment variables override the file (README, Configuration).',
    ...body,
  };
  return JSON.stringify(titled, null, 2) + '\n';
}

/** Writes `configJsonSchemaText()` to `config/schema.json` (`npm run schema`). */
export function writeConfigJsonSchema(file = CONFIG_JSON_SCHEMA_FILE): void {
  writeFileSync(file, configJsonSchemaText());
}
