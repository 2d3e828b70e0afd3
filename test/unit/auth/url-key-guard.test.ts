import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey, parseApiKey } from '../../../src/auth/api-key.js';
import { createUrlKeyGuard, normaliseParamName } from '../../../src/auth/url-key-guard.js';
import { DEFAULT_URL_KEY_PARAMS } from '../../../src/config/schema.js';
import { propertyRuns, underMutation } from '../../helpers/mutation.js';

const check = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS);

describe('URL key guard', () => {
  test('key-like names in any case, separator or %-encoding', () => {
    for (const url of [
      '/a?api_key=1',
      '/a?API_KEY=1',
      '/a?Api-Key=1',
      '/a?apikey=1',
      '/a?api%5Fkey=1',
      '/a?%61pi_key=1',
      '/a?%2561pi_key=1',
      '/a?%252561pi_key=1',
      '/a?x-api-key=1',
      '/a?X_API_KEY=1',
      '/a?key',
      '/a?token=',
      '/a?x=1;api_key=2',
      '/a?access_key=1',
      '/a?api.key=1',
      '/a;api_key=1',
      '/a;v=1;API-KEY=1/b',
      '/a%3Bapi_key=1',
    ]) {
      assert.equal(check(url).found, true, url);
    }
  });

  test('key-shaped values anywhere: other params, path, names, double-encoded', () => {
    const k = generateApiKey('live');
    for (const url of [
      `/a?q=${k}`,
      `/a/${k}`,
      `/a?${k}`,
      `/a?q=${encodeURIComponent(encodeURIComponent(k))}`,
      `/a%2F${k}`,
      `/a?q=prefix${k}suffix`,
    ]) {
      const r = check(url);
      assert.equal(r.found, true, url);
      assert.ok(r.found && r.candidates.includes(k), url);
    }
  });

  test('ordinary URLs pass', () => {
    for (const url of [
      '/notify/v1/otps',
      '/notify/v1/otps?page=2&sort=desc',
      '/a?monkey=1',
      '/a?keys=1',
      '/a?nk_=1',
      '/a?identifier=nk_live_short',
    ]) {
      assert.equal(check(url).found, false, url);
    }
  });

  test('normalised names', () => {
    assert.equal(normaliseParamName('X-API_Key'), 'xapikey');
    assert.equal(normaliseParamName('%58-Api-Key'), 'xapikey');
  });

  test('property: never throws on arbitrary input, and a key placed anywhere in a query is found', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        check('/' + s);
        check('/a?' + s);
      }),
      { numRuns: propertyRuns(3000) },
    );
    const k = generateApiKey('test');
    fc.assert(
      fc.property(
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        (a, b) => {
          assert.equal(check(`/x?${a}=${b}&p=${k}`).found, true);
          assert.equal(check(`/x?${a}=${encodeURIComponent(k)}`).found, true);
        },
      ),
      { numRuns: propertyRuns(500) },
    );
  });
});

/**
 * The guard as it was before the linear rewrite (decodeURIComponent in try/catch, split by regex):
 * the oracle for "same detection". It differs only where decodeURIComponent threw on non-ASCII
 * escapes (it fell back to Latin-1 there; the new decoder follows WHATWG and gives U+FFFD).
 */
function createPreviousGuard(paramNames: readonly string[]) {
  const KEY_LIKE = /nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{38}/g;
  const decode = (s: string): string => {
    let cur = s.includes('+') ? s.replace(/\+/g, ' ') : s;
    for (let i = 0; i < 4 && cur.includes('%'); i++) {
      let next: string;
      try {
        next = decodeURIComponent(cur);
      } catch {
        next = cur.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
      }
      if (next === cur) break;
      cur = next;
    }
    return cur;
  };
  const norm = (n: string) =>
    decode(n)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '');
  const names = new Set(paramNames.map(norm));
  const shaped = (t: string, out: string[]) => {
    if (t.includes('nk_')) for (const m of t.matchAll(KEY_LIKE)) out.push(m[0]);
  };
  const pairs = (params: string, out: string[]) => {
    for (const pair of params.split(/[&;]/)) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
      if (names.has(norm(rawName))) out.push(value);
      else shaped(value, out);
      shaped(decode(rawName), out);
    }
  };
  return (url: string) => {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const out: string[] = [];
    if (path.includes('nk_') || path.includes('%')) shaped(decode(path), out);
    if (path.includes(';') || path.includes('%')) {
      const d = decode(path);
      const semi = d.indexOf(';');
      if (semi !== -1) pairs(d.slice(semi + 1).replace(/\//g, ';'), out);
    }
    if (q !== -1) pairs(url.slice(q + 1), out);
    return out.length ? { found: true, candidates: out } : { found: false };
  };
}

describe('URL key guard: same detection, linear cost, caps', () => {
  const previous = createPreviousGuard(DEFAULT_URL_KEY_PARAMS);
  const k = generateApiKey('live');
  const piece = fc.constantFrom(
    'api_key',
    'API%5FKEY',
    '%2561pi_key',
    'Api-Key',
    'token',
    'tok',
    'x',
    'v',
    k,
    encodeURIComponent(k),
    `nk%5Flive%5F${k.slice(8)}`,
    'nk_',
    '%',
    '%25',
    '%2',
    '%zz',
    '=',
    '&',
    ';',
    '/',
    '+',
    '%3B',
    '%26',
    '%3D',
    '%2F',
    '%252F',
    '%C3%A9',
    '%FF',
    'é',
    '?',
  );
  const url = fc.array(piece, { maxLength: 16 }).map((ps) => '/' + ps.join(''));

  test('property: the same answer as the previous guard (same candidates wherever its decoding did not throw)', () => {
    fc.assert(
      fc.property(url, (u) => {
        const now = check(u);
        const before = previous(u);
        assert.equal(now.found, before.found, u);
        assert.equal(now.overLimit, undefined, u);
        // The same candidates, each once; more only where a checksum-valid key is found by its
        // bare body (inside a key-named value too).
        if (!u.includes('%C3') && !u.includes('%FF') && !u.includes('é')) {
          assert.deepEqual({ ...now, candidates: undefined }, { ...before, candidates: undefined }, u);
          const had = new Set(before.found ? before.candidates : []);
          const has = new Set(now.found ? now.candidates : []);
          for (const c of had) assert.ok(has.has(c), u);
          for (const c of has)
            if (!had.has(c)) assert.ok(parseApiKey(c, { maxLength: 256, acceptLegacy: false }).ok, u);
        }
      }),
      { numRuns: propertyRuns(20_000) },
    );
  });

  test('property: never throws, and the answer is bounded, on hostile input of any size', () => {
    const hostile = fc.array(fc.oneof(piece, fc.string({ unit: 'binary', maxLength: 4 })), {
      maxLength: 400,
    });
    fc.assert(
      fc.property(hostile, fc.boolean(), (ps, inQuery) => {
        const r = check((inQuery ? '/a?' : '/') + ps.join(''));
        if (r.found) assert.ok(r.candidates.length <= 2 * 256 + 1000);
      }),
      { numRuns: propertyRuns(2_000) },
    );
  });

  test('parameters past maxParams: overLimit, key-shaped values still found anywhere', () => {
    const small = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, { maxParams: 4, maxPathSegments: 3 });
    assert.deepEqual(small('/a?p=1&p=2&p=3&p=4'), { found: false });
    assert.deepEqual(small('/a?p=1&p=2&p=3&p=4&p=5'), { found: false, overLimit: true });
    // Empty pieces count: the scan stops after maxParams pieces whatever they hold.
    assert.deepEqual(small('/a?&&&&&'), { found: false, overLimit: true });
    assert.deepEqual(small('/a;x;y;z/b;c;d?q=1'), { found: false, overLimit: true });
    // A key-named parameter past the cap is not examined (the request is refused anyway)...
    assert.deepEqual(small('/a?p&p&p&p&api_key=legacy-key-value'), { found: false, overLimit: true });
    // ...but a plain key-shaped value is still found, in the query or the path, and so is its bare
    // body, base64 or hex as sent (a %-encoded one past the cap is not: the URL is refused and not
    // logged, it is just not flagged exposed).
    assert.deepEqual(small(`/a?p&p&p&p&q=${k}`), { found: true, candidates: [k], overLimit: true });
    assert.deepEqual(small(`/a?p&p&p&p&q=${encodeURIComponent(k.replace('_', '%5F'))}`), {
      found: true,
      candidates: [k],
      overLimit: true,
    });
    const pctAll = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16)).join('');
    assert.deepEqual(small(`/a?p&p&p&p&q=${pctAll(k)}`), { found: false, overLimit: true });
    // (The path scan finds it as well as the matrix scan: duplicates are harmless.)
    const m = small(`/a;p;p;p;p;${k}`);
    assert.ok(m.found && m.overLimit && m.candidates.every((c) => c === k));
  });

  test('path segments past maxPathSegments: overLimit, key-shaped values still found', () => {
    const small = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, { maxParams: 4, maxPathSegments: 3 });
    assert.deepEqual(small('/a/b/c'), { found: false });
    assert.deepEqual(small('/a/b/c?api_key=1'), { found: true, candidates: ['1'] });
    assert.deepEqual(small('/a/b/c/d'), { found: false, overLimit: true });
    assert.deepEqual(small(`/a/b/c/${k}`), { found: true, candidates: [k], overLimit: true });
    assert.deepEqual(small(`/a/b/c/d?q=${k}`), { found: true, candidates: [k], overLimit: true });
  });

  test('the default caps: 256 parameters, 128 segments', () => {
    assert.equal(check('/a?' + 'p=1&'.repeat(255) + 'p=1').overLimit, undefined);
    assert.equal(check('/a?' + 'p=1&'.repeat(256) + 'p=1').overLimit, true);
    assert.equal(check('/a'.repeat(128)).overLimit, undefined);
    assert.equal(check('/a'.repeat(129)).overLimit, true);
  });

  // Instrumented code is slower in some paths than in others: the comparison means nothing there.
  test(
    '16 KB of the worst shapes: each costs about as much as a benign URL of the same size',
    { skip: underMutation && 'CPU time of instrumented code' },
    () => {
      const size = 16_000;
      const fill = (prefix: string, unit: string) =>
        prefix + unit.repeat(Math.floor((size - prefix.length) / unit.length));
      const cost = (u: string) => {
        for (let i = 0; i < 20; i++) check(u);
        const runs: number[] = [];
        for (let r = 0; r < 7; r++) {
          const t = process.cpuUsage();
          for (let i = 0; i < 50; i++) check(u);
          const d = process.cpuUsage(t);
          runs.push(d.user + d.system);
        }
        return runs.sort((a, b) => a - b)[3]!;
      };
      // The benign reference is a plain path of the same size: the guard reads it with one native pass.
      const base = Math.max(cost(fill('/a?q=', 'a')), cost(fill('/a/', 'a')), 1000);
      for (const unit of [
        '%',
        '%&',
        '%25',
        '%25252541&',
        'k%252561=v&',
        ';',
        '&',
        '=',
        'a=&',
        'nk_live_&',
        '%C3%A9',
        '%FF%C3',
        'é',
      ])
        for (const prefix of ['/a?', '/a;', '/a/']) {
          const u = fill(prefix, unit);
          // Generous: the unit test runs on a shared machine; the integration test holds the 3× line.
          assert.ok(cost(u) < 40 * base, `${prefix}${unit}…: ${cost(u)} µs vs ${base} µs`);
        }
    },
  );
});

describe('URL key guard: as wide as the forward step, method overrides, decoding budget', () => {
  const guard = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, {
    maxParams: 256,
    maxPathSegments: 128,
    methodOverrideParams: ['_method', 'x-http-method-override'],
  });
  const key = `nk_live_${'A1b2C3d4E5'.repeat(3)}abcdefgh`;
  /** `s` with its first character %-encoded `rounds` times. */
  const deep = (s: string, rounds: number) =>
    `%${'25'.repeat(rounds - 1)}${s.charCodeAt(0).toString(16)}${s.slice(1)}`;

  test('key shapes in any case; the shape needs nk_, an environment and 38 base62', () => {
    for (const k of [key, key.toUpperCase(), `Nk_LiVe_${key.slice(8)}`])
      assert.deepEqual(guard(`/a/${k}`), { found: true, candidates: [k] }, k);
    assert.deepEqual(guard(`/a/x${key}y_${key.toUpperCase()}`).found, true);
    for (const s of [
      key.slice(0, -1),
      key.replace('live', 'l'),
      key.replace('nk_', 'nx_'),
      `nk_${'a'.repeat(17)}_${key.slice(8)}`,
    ])
      assert.deepEqual(guard(`/a/${s}`), { found: false }, s);
  });

  test('up to 8 rounds of %-encoding are read; deeper is undecided and counts as found', () => {
    assert.deepEqual(guard(`/a/${deep(key, 8)}`), { found: true, candidates: [key] });
    assert.deepEqual(guard(`/a?q=${deep(key, 5)}`), { found: true, candidates: [key] });
    assert.deepEqual(guard(`/a/${deep(key, 9)}`), { found: true, candidates: [], undecided: true });
    assert.deepEqual(guard(`/a?q=${deep('hello', 8)}`), { found: false });
    assert.deepEqual(guard(`/a?q=${deep('hello', 9)}`).found, true);
  });

  test('a long URL of deep chains runs out of decoding budget: undecided', () => {
    const r = guard(`/a?${'q=%25252541&'.repeat(200)}`);
    assert.equal(r.found, true);
    assert.deepEqual(
      guard(`/a?${'q=%2541&'.repeat(200)}`),
      { found: false },
      'double encoding fits the budget',
    );
  });

  test('method-override parameters, compared like key names; a leading separator counts', () => {
    for (const u of [
      '/a?_method=DELETE',
      '/a;_METHOD=x',
      '/a?%255Fmethod=x',
      '/a?-Method',
      '/a?X.HTTP_Method-Override=PUT',
    ])
      assert.equal(guard(u).methodOverride, true, u);
    for (const u of ['/a?method=sms', '/a?my_method=x', '/a/_method', '/a?q=_method'])
      assert.equal(guard(u).methodOverride, undefined, u);
    assert.equal(check('/a?_method=DELETE').methodOverride, undefined, 'off without methodOverrideParams');
  });
});

describe('URL key guard: edges of the caps and of decoding', () => {
  const k = generateApiKey('live');
  const small = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, { maxParams: 4, maxPathSegments: 3 });

  test('exactly maxParams matrix parameters are all examined; one more is over the limit', () => {
    assert.deepEqual(small('/a;p;p;p;p'), { found: false });
    assert.deepEqual(small('/a;p;p;p;api_key=x'), { found: true, candidates: ['x'] });
    assert.deepEqual(small('/a;p;p;p;p;p'), { found: false, overLimit: true });
  });

  test('a trailing separator leaves an empty piece, which counts like any other', () => {
    assert.deepEqual(small('/a?p&p&p&p'), { found: false });
    assert.deepEqual(small('/a?p&p&p&p&'), { found: false, overLimit: true });
  });

  test('over the cap, a key found in the examined part is reported once', () => {
    assert.deepEqual(small(`/a?q=${k}&p&p&p&p`), { found: true, candidates: [k], overLimit: true });
    assert.deepEqual(small(`/a?api_key=v&p&p&p&p`), { found: true, candidates: ['v'], overLimit: true });
  });

  test('past the segment cap the path is not decoded: only plain key-shaped values are found', () => {
    // Every character escaped: no plain key shape, no plain bare body.
    const encoded = [...k].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    assert.deepEqual(small(`/a/b/c/${encoded}`), { found: false, overLimit: true });
    assert.deepEqual(small(`/a/b/${encoded}`), { found: true, candidates: [k] });
  });

  test('a URL that is only a query (a separator right after the "?")', () => {
    assert.deepEqual(check('?&api_key=1'), { found: true, candidates: ['1'] });
    assert.deepEqual(check('?&&p=1&q=2'), { found: false });
  });

  test('in the query, "/" is part of a value (it separates only matrix parameters)', () => {
    assert.deepEqual(check('/a?api_key=a/b'), { found: true, candidates: ['a/b'] });
    assert.deepEqual(check('/a?next=/x/y&token=t/u'), { found: true, candidates: ['t/u'] });
    assert.deepEqual(check('/a;api_key=a/b'), { found: true, candidates: ['a'] });
  });

  test('"+" is a space in names and values', () => {
    assert.deepEqual(check('/a?api_key=a+b'), { found: true, candidates: ['a b'] });
    assert.deepEqual(check(`/a?q=${k}+more`), { found: true, candidates: [k] });
    assert.deepEqual(check('/a?api+key=1'), { found: true, candidates: ['1'] });
  });

  test('up to eight rounds of %-decoding, as the forward step; a ninth is undecided and counts as a key', () => {
    assert.equal(normaliseParamName('%2525252525252561pi_key'), 'apikey');
    assert.deepEqual(check('/a?%2525252525252561pi_key=1'), { found: true, candidates: ['1'] });
    assert.equal(normaliseParamName('%252525252525252561pi_key'), '61pikey');
    assert.deepEqual(check('/a?%252525252525252561pi_key=1'), {
      found: true,
      candidates: [],
      undecided: true,
    });
  });
});

describe('URL key guard: exact edges of names, key shapes and the decoding budget', () => {
  const body = `${'A1b2C3d4E5'.repeat(3)}abcdefgh`; // 38 base62
  const guard = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, {
    maxParams: 4,
    maxPathSegments: 3,
    methodOverrideParams: ['_method', 'x-http-method-override'],
  });

  test('a leading ".", "-" or "_" marks a method override; a separator before another name does not', () => {
    for (const u of ['/a?.method=PUT', '/a?-METHOD=PUT', '/a?_Method=PUT'])
      assert.equal(guard(u).methodOverride, true, u);
    for (const u of ['/a?_page=2', '/a?-=1', '/a?.x-http=1', '/a?_=DELETE'])
      assert.deepEqual(guard(u), { found: false }, u);
  });

  test('a name longer than every configured name never matches, even when it starts with one', () => {
    const one = createUrlKeyGuard(['api_key']);
    assert.deepEqual(one('/a?api_key=1'), { found: true, candidates: ['1'] });
    for (const u of ['/a?api_keys=1', '/a?apikeyx=1', '/a?api_key_id=1', '/a?API-KEY-2=1'])
      assert.deepEqual(one(u), { found: false }, u);
  });

  test('the two non-ASCII characters whose lowercase form is a letter: Kelvin sign and dotted capital I', () => {
    assert.equal(normaliseParamName('api_\u212Aey'), 'apikey');
    assert.equal(normaliseParamName('AP\u0130_KEY'), 'apikey');
    assert.deepEqual(check('/a?api_%E2%84%AAey=1'), { found: true, candidates: ['1'] });
    assert.deepEqual(check('/a?ap%C4%B0_key=1'), { found: true, candidates: ['1'] });
    assert.deepEqual(check('/a?ap%C3%8E_key=1'), { found: false }, 'another accented capital is dropped');
  });

  test('empty pieces name nothing, even with a configured name made only of separators', () => {
    const dashes = createUrlKeyGuard(['-']);
    for (const u of ['/a?p&&q', '/a?&', '/a;p;;q', '/a;/b']) assert.deepEqual(dashes(u), { found: false }, u);
  });

  test('key shapes at the edges of the environment: 2 and 16 characters, digits 0 and 9, Z', () => {
    for (const k of [
      `nk_ab_${body}`, // the shortest key shape: 44 characters, found as a whole value
      `nk_abcdefghijklmnop_${body}`, // the longest environment
      `nk_v09z_${body}`,
      `NK_V09Z_${body}`,
      `NK_ZZ_${body.toUpperCase()}`,
    ]) {
      assert.deepEqual(check(`/a?q=${k}`), { found: true, candidates: [k] }, k);
      assert.deepEqual(check(`/${k}`), { found: true, candidates: [k] }, k);
    }
  });

  test('not key shapes: an environment starting with a digit, anything but "_" after "nk"', () => {
    for (const s of [
      `nk_1abc_${body}`,
      `nk_9_${body}`,
      `nk-live_${body}`,
      `nk.live_${body}`,
      `nkXlive_${body}`,
    ])
      for (const u of [`/a?q=${s}`, `/${s}`]) assert.deepEqual(check(u), { found: false }, u);
  });

  test('over the matrix-parameter cap, a plain key in the path is reported once', () => {
    const k = generateApiKey('live');
    assert.deepEqual(guard(`/a/${k};p;p;p;p;p`), { found: true, candidates: [k], overLimit: true });
    assert.deepEqual(guard(`/a/${k};p;p;p;p;p?q=1`), { found: true, candidates: [k], overLimit: true });
  });

  test('the decoding budget: 2 characters per URL character plus 2048, each round charged its length plus 8', () => {
    // `/a?q=%252541` + p × `x`: the value takes 3 rounds, of 7 + p, 5 + p and 3 + p characters, so
    // it is charged 39 + 3p against a budget of 2 × (12 + p) + 2048: it fits exactly at p = 2033.
    const url = (p: number) => `/a?q=%252541${'x'.repeat(p)}`;
    assert.deepEqual(check(url(2033)), { found: false });
    assert.deepEqual(check(url(2034)), { found: true, candidates: [], undecided: true });
    // A key-named parameter past the budget: undecided, its value still reported as far as decoded.
    assert.equal(check(`/a?api_key=%252541${'x'.repeat(2034)}`).found, true);
  });
});
