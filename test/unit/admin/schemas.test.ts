import assert from 'node:assert/strict';
import { parse } from 'node:querystring';
import { describe, test } from 'node:test';
import {
  ADMIN_OPERATIONS,
  auditQuerySchema,
  findQueryProblems,
  isQueryChecked,
} from '../../../src/admin/schemas.js';

describe('admin query strings', () => {
  const audit = ['limit', 'companyId'];
  // Express 5 parses query strings with node:querystring ("simple"): a repeat is an array, `a[]` a name.
  const problems = (q: string, declared = audit) => findQueryProblems(parse(q), declared);

  test('each declared parameter once, as name=value: no problem', () => {
    assert.deepEqual(problems(''), []);
    assert.deepEqual(problems('limit=5&companyId=acme'), []);
    assert.deepEqual(problems('limit='), [], 'the value is the operation’s to judge');
  });

  test('a repeated or bracketed parameter is refused naming it, never one value picked', () => {
    for (const q of [
      'companyId=a&companyId=b',
      'companyId[]=a',
      'companyId[x]=a',
      'companyId[]=a&companyId[]=b',
    ])
      assert.deepEqual(problems(q), ['companyId: must be given once, as companyId=value'], q);
    assert.deepEqual(problems('limit[]=5'), ['limit: must be given once, as limit=value']);
    // qs-style objects (another query parser) are refused too.
    assert.deepEqual(findQueryProblems({ limit: { x: '1' } }, audit), [
      'limit: must be given once, as limit=value',
    ]);
  });

  test('an unknown parameter is refused naming it and what the operation takes', () => {
    assert.deepEqual(problems('company=acme'), [
      'company: not a query parameter of this operation (it takes limit, companyId)',
    ]);
    assert.deepEqual(problems('x=1', []), ['x: not a query parameter of this operation (it takes none)']);
    assert.deepEqual(problems('a=1&b[]=2', []), [
      'a: not a query parameter of this operation (it takes none)',
      'b: not a query parameter of this operation (it takes none)',
    ]);
  });

  test('a name that looks like a key, or is not a plain name, is not echoed', () => {
    const key = `nk_live_${'A'.repeat(38)}`;
    for (const name of [key, 'a b', '<script>', 'x'.repeat(33), '']) {
      const [p] = findQueryProblems({ [name]: '1' }, audit);
      assert.equal(
        p,
        '(a name that is not shown): not a query parameter of this operation (it takes limit, companyId)',
      );
    }
  });

  test('every /admin/v1 operation checks its query and documents the 400; /metrics and the probes do not', () => {
    for (const op of ADMIN_OPERATIONS) {
      const v1 = op.path.startsWith('/admin/v1/');
      assert.equal(isQueryChecked(op), v1, op.path);
      if (v1) assert.ok(op.errors.includes('ADMIN_INVALID_REQUEST'), op.operationId);
    }
  });

  test('the audit companyId is a company id', () => {
    assert.equal(auditQuerySchema.safeParse({ companyId: 'acme' }).success, true);
    for (const id of ['', 'a b', '../x', '-x', 'x'.repeat(65)])
      assert.equal(auditQuerySchema.safeParse({ companyId: id }).success, false, id);
  });
});
