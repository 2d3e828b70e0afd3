import { DEFAULT_METHOD_OVERRIDE_PARAMS } from '../src/config/schema.js';
import { createFormOverrideScanner, type FormKind } from '../src/proxy/method-override.js';
const scan = createFormOverrideScanner(DEFAULT_METHOD_OVERRIDE_PARAMS);
const fill = (u: string, n: number) => Buffer.from(u.repeat(Math.ceil(n / u.length)).slice(0, n), 'latin1');
const M = 1 << 20;
const shapes: [string, Buffer, FormKind][] = [
  ['benign urlencoded field=value&', fill('field=value&', 8 * M), 'urlencoded'],
  [
    'benign multipart (64 KiB parts)',
    fill('--b\r\nContent-Disposition: form-data; name="field"\r\n\r\n' + 'x'.repeat(65536) + '\r\n', 8 * M),
    'multipart',
  ],
  ['&;=', fill('&;=', 8 * M), 'urlencoded'],
  ['%u005F', fill('%u005F', 8 * M), 'urlencoded'],
  ['_metho&', fill('_metho&', 8 * M), 'urlencoded'],
  ['name*0*=a;', fill('name*0*=a;', 8 * M), 'multipart'],
  ['; name*0="a"; name*1="b"', fill('; name*0="a"; name*1="b"', 8 * M), 'multipart'],
  [
    'name*N="a"; distinct',
    Buffer.from(Array.from({ length: (8 * M) / 14 }, (_, i) => `name*${i % 70}="a";`).join(''), 'latin1'),
    'multipart',
  ],
  ['name= chains', fill('name=', 8 * M), 'multipart'],
  ['name="_metho";', fill('name="_metho";', 8 * M), 'multipart'],
  ["name='_metho';", fill("name='_metho';", 8 * M), 'multipart'],
  ['name="=?utf-8?Q?=5Fmetho?= ', fill('name="=?utf-8?Q?=5Fmetho?= ', 8 * M), 'multipart'],
  ['name==?a?Q?=5F?= ', fill('name==?a?Q?=5F?= ', 8 * M), 'multipart'],
  ['name=" + =?a?Q??= ', Buffer.concat([Buffer.from('name="'), fill('=?a?Q??= ', 8 * M)]), 'multipart'],
  [
    'name="=?<64>?Q?=5Fmetho',
    fill('name="=?' + 'a'.repeat(64) + '?Q?=5F=6D=65=74=68=6F ', 8 * M),
    'multipart',
  ],
  ['content-id: repeated', fill('content-id:', 8 * M), 'multipart'],
  ['Content-ID: _metho lines', fill('Content-ID: _metho\r\n', 8 * M), 'multipart'],
  ['benign JSON, no needle', fill('{"id":12345,"text":"hello world"},', 8 * M), 'json'],
  ['benign JSON with \\u escapes', fill('{"id":12345,"text":"h\\u00e9llo"},', 8 * M), 'json'],
  ['JSON quotes', fill('"', 8 * M), 'json'],
  ['JSON "_metho": keys', fill('"_metho":1,', 8 * M), 'json'],
  ['JSON "_method" values', fill('"_method",', 8 * M), 'json'],
  ['JSON \\u-escaped "_metho":', fill('"\\u005f\\u006d\\u0065\\u0074\\u0068\\u006f":', 8 * M), 'json'],
];
for (const [name, body, kind] of shapes) {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t0 = process.hrtime.bigint();
    if (scan(body, kind)) throw new Error(name + ' matched');
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(`${(best / (body.length / M)).toFixed(1).padStart(6)} ms/MiB  ${name}`);
}
