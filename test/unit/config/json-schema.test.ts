import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { CONFIG_DESCRIPTIONS } from '../../../src/config/descriptions.js';
import { CONFIG_JSON_SCHEMA_FILE, configJsonSchemaText } from '../../../src/config/json-schema.js';
import { DEFAULT_CONFIG_FILE } from '../../../src/config/load.js';

const ROOT = resolve(import.meta.dirname, '../../..');
/** The config files users copy from; each references the schema for editor completion. */
const EXAMPLES = [DEFAULT_CONFIG_FILE, join(ROOT, 'deploy/compose/gateway.yaml')];

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
}

/** Every key of `value` is a property the schema declares, recursively (what an editor flags). */
function unknownKeys(value: unknown, schema: JsonSchema, at: string): string[] {
  if (Array.isArray(value) && schema.items)
    return value.flatMap((v, i) => unknownKeys(v, schema.items!, `${at}[${i}]`));
  if (value === null || typeof value !== 'object' || !schema.properties) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const sub = schema.properties![k];
    return sub ? unknownKeys(v, sub, `${at}.${k}`) : [`${at}.${k}`];
  });
}

describe('config/schema.json', () => {
  test('is up to date with src/config/schema.ts (run `npm run schema`)', () => {
    assert.equal(
      readFileSync(CONFIG_JSON_SCHEMA_FILE, 'utf8'),
      configJsonSchemaText(),
      'config/schema.json is stale: run `npm run schema` and commit it',
    );
  });

  test('describes the file: strict objects, types and defaults of the zod schema', () => {
    const s = JSON.parse(configJsonSchemaText()) as JsonSchema & Record<string, unknown>;
    assert.equal(s.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.equal(s.additionalProperties, false);
    const server = s.properties!.server!;
    assert.equal(server.additionalProperties, false);
    assert.deepEqual(server.properties!.port, {
      description: CONFIG_DESCRIPTIONS['server.port'],
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 8080,
    });
    assert.deepEqual((s.properties!.rateLimit!.properties!.failurePolicy as Record<string, unknown>).enum, [
      'insurance',
      'open',
      'closed',
    ]);
  });

  test('the example configs reference it and use only keys it declares', () => {
    const schema = JSON.parse(readFileSync(CONFIG_JSON_SCHEMA_FILE, 'utf8')) as JsonSchema;
    for (const file of EXAMPLES) {
      const text = readFileSync(file, 'utf8');
      const m = /^# yaml-language-server: \$schema=(\S+)$/m.exec(text.split('\n')[0] ?? '');
      assert.ok(m, `${file}: first line is not a yaml-language-server $schema comment`);
      assert.equal(resolve(dirname(file), m[1]!), CONFIG_JSON_SCHEMA_FILE, file);
      assert.deepEqual(unknownKeys(parse(text), schema, '(file)'), [], file);
    }
  });
});
