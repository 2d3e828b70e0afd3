import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONFIG_DESCRIPTIONS } from '../../../src/config/descriptions.js';
import {
  configJsonSchemaText,
  forEachConfigKey,
  type JsonSchemaNode,
} from '../../../src/config/json-schema.js';

const schema = JSON.parse(configJsonSchemaText()) as JsonSchemaNode;
const keys: string[] = [];
forEachConfigKey(schema, (path) => keys.push(path));

describe('CONFIG_DESCRIPTIONS', () => {
  test('every key of the config file has a description (add it to src/config/descriptions.ts)', () => {
    assert.ok(keys.length > 100, `only ${keys.length} keys found: the walk is broken`);
    assert.deepEqual(
      keys.filter((k) => !CONFIG_DESCRIPTIONS[k]?.trim()),
      [],
    );
  });

  test('describes no key the config file lacks (a renamed or removed key)', () => {
    assert.deepEqual(
      Object.keys(CONFIG_DESCRIPTIONS).filter((k) => !keys.includes(k)),
      [],
    );
  });

  test('each description reaches the JSON Schema, first in its node (editors show it on hover)', () => {
    forEachConfigKey(schema, (path, node) => {
      assert.equal(node.description, CONFIG_DESCRIPTIONS[path], path);
      assert.equal(Object.keys(node)[0], 'description', path);
    });
  });

  test('descriptions are sentences that do not restate the default (it is printed beside them)', () => {
    for (const [key, text] of Object.entries(CONFIG_DESCRIPTIONS)) {
      assert.match(text, /^[`A-Z"]/, `${key}: starts with a capital`);
      assert.match(text, /[.)]$/, `${key}: ends with a full stop`);
      assert.doesNotMatch(text, /\bdefaults? (?:is|to) /i, `${key}: states its default`);
    }
  });
});
