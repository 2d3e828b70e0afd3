// The method-override body scanner on worst-case shapes: milliseconds per MiB, fed in 64 KiB
// chunks as a body streams (`node --import tsx bench/form-scan.ts`; docs/security.md quotes it).
import { DEFAULT_METHOD_OVERRIDE_PARAMS } from '../src/config/schema.js';
import { createOverrideScanner, OverrideNames, type FormKind } from '../src/guards/method-override.js';

const names = new OverrideNames(DEFAULT_METHOD_OVERRIDE_PARAMS);
const M = 1 << 20;
const SIZE = Number(process.env.FORM_SCAN_MIB ?? 8) * M;
const fill = (u: string) => Buffer.from(u.repeat(Math.ceil(SIZE / u.length)).slice(0, SIZE), 'latin1');
const shapes: [string, Buffer, FormKind][] = [
  ['benign urlencoded field=value&', fill('field=value&'), 'urlencoded'],
  [
    'benign multipart (64 KiB parts)',
    fill('--b\r\nContent-Disposition: form-data; name="field"\r\n\r\n' + 'x'.repeat(65536) + '\r\n'),
    'multipart',
  ],
  [
    'random bytes as multipart',
    Buffer.from(Array.from({ length: SIZE }, (_, i) => (i * 2654435761) >>> 24)),
    'multipart',
  ],
  ['&;=', fill('&;='), 'urlencoded'],
  ['%u005F', fill('%u005F'), 'urlencoded'],
  ['_metho&', fill('_metho&'), 'urlencoded'],
  ['._metho&', fill('._metho&'), 'urlencoded'],
  ['name= chains', fill('name='), 'multipart'],
  ['name="_metho";', fill('name="_metho";'), 'multipart'],
  ['name="=?utf-8?Q?=5Fmetho?= ', fill('name="=?utf-8?Q?=5Fmetho?= '), 'multipart'],
  ['name==?a?Q?=5F?= ', fill('name==?a?Q?=5F?= '), 'multipart'],
  ['content-id: repeated', fill('content-id:'), 'multipart'],
  ['Content-ID: _metho lines', fill('Content-ID: _metho\r\n'), 'multipart'],
  ['benign JSON', fill('{"id":12345,"text":"hello world"},'), 'json'],
  ['JSON quotes', fill('"'), 'json'],
  ['JSON "_metho": keys', fill('"_metho":1,'), 'json'],
  ['JSON "_method" values', fill('"_method",'), 'json'],
  ['JSON \\u-escaped "_metho":', fill('"\\u005f\\u006d\\u0065\\u0074\\u0068\\u006f":'), 'json'],
];
for (const [name, body, kind] of shapes) {
  let best = Infinity;
  let refused = false;
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    const s = createOverrideScanner(kind, names);
    let found = false;
    for (let at = 0; at < body.length && !found; at += 65536) found = s.write(body.subarray(at, at + 65536));
    found ||= s.end();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
    refused = found;
  }
  // A refused shape stops where the scanner decided (an override, or too many exotic values).
  console.log(
    `${(best / (body.length / M)).toFixed(1).padStart(7)} ms/MiB  ${name}${refused ? '  (refused)' : ''}`,
  );
}
