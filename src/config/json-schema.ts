import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { PACKAGE_CONFIG_DIR } from './load.js';
import { CONFIG_DESCRIPTIONS } from './descriptions.js';
import { configSchema } from './schema.js';

/** Where `npm run schema` writes the JSON Schema of the config file (shipped with the package). */
export const CONFIG_JSON_SCHEMA_FILE = resolve(PACKAGE_CONFIG_DIR, 'schema.json');

/** A JSON Schema node, as far as the generators read it. */
export interface JsonSchemaNode {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  items?: JsonSchemaNode;
  [more: string]: unknown;
}

/**
 * Calls `visit` for every key of the file, depth first, with its path: `server.port`, and `[]`
 * for the items of a list (`routes[].prefix`).
 */
export function forEachConfigKey(
  schema: JsonSchemaNode,
  visit: (path: string, node: JsonSchemaNode) => void,
  at = '',
): void {
  for (const [name, node] of Object.entries(schema.properties ?? {})) {
    const path = at ? `${at}.${name}` : name;
    visit(path, node);
    forEachConfigKey(node, visit, path);
    if (node.items) forEachConfigKey(node.items, visit, `${path}[]`);
  }
}

/** Puts each key's line of `CONFIG_DESCRIPTIONS` first in its node (editors show it on hover). */
function describe(schema: JsonSchemaNode): void {
  forEachConfigKey(schema, (path, node) => {
    const text = CONFIG_DESCRIPTIONS[path];
    if (text === undefined) return;
    const rest = { ...node };
    delete rest.description;
    for (const k of Object.keys(node)) delete node[k];
    Object.assign(node, { description: text }, rest);
  });
}

/**
 * The JSON Schema (draft-07) of the config file, generated from `configSchema`: what a file may
 * contain (the input side: every key optional, defaults shown), with each key's description from
 * `CONFIG_DESCRIPTIONS`, for editors' completion, checks and hover text. The zod schema stays the
 * one that validates; a test fails when `config/schema.json` is not this text.
 */
export function configJsonSchemaText(): string {
  const schema = zodToJsonSchema(configSchema, {
    // The file is the input: transforms and coercions are applied after it is read.
    effectStrategy: 'input',
    pipeStrategy: 'input',
    $refStrategy: 'none',
  });
  describe(schema as JsonSchemaNode);
  const { $schema, ...body } = schema as Record<string, unknown>;
  const titled = {
    $schema,
    title: 'notify-gateway configuration',
    description:
      'Generated from src/config/schema.ts by `npm run schema`; do not edit. Environment variables override the file (docs/configuration.md).',
    ...body,
  };
  return JSON.stringify(titled, null, 2) + '\n';
}

/** Writes `configJsonSchemaText()` to `config/schema.json` (`npm run schema`). */
export function writeConfigJsonSchema(file = CONFIG_JSON_SCHEMA_FILE): void {
  writeFileSync(file, configJsonSchemaText());
}
