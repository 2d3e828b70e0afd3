import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_METHOD_OVERRIDE_PARAMS } from '../../../src/config/schema.js';
import {
  createFormOverrideScanner,
  formBodyKind,
  type FormKind,
} from '../../../src/proxy/method-override.js';
import { underMutation } from '../../helpers/mutation.js';

const scan = createFormOverrideScanner(DEFAULT_METHOD_OVERRIDE_PARAMS);
const form = (s: string | Buffer) => scan(Buffer.isBuffer(s) ? s : Buffer.from(s, 'latin1'), 'urlencoded');
const multi = (s: string) => scan(Buffer.from(s, 'latin1'), 'multipart');

describe('formBodyKind', () => {
  const body = { 'content-length': '10' };
  test('form media types in any case and with parameters; no Content-Type is a form (Rack)', () => {
    for (const ct of [
      'application/x-www-form-urlencoded',
      'APPLICATION/X-WWW-FORM-URLENCODED;charset=utf-8',
      '  application/x-www-form-urlencoded , text/plain',
      'application/x-www-form-urlencoded boundary',
      '',
      undefined,
    ])
      assert.equal(formBodyKind({ ...body, 'content-type': ct }), 'urlencoded', String(ct));
    assert.equal(formBodyKind({ ...body, 'content-type': 'Multipart/Form-Data; boundary=x' }), 'multipart');
  });
  test('every multipart/* subtype is multipart (Rack parses multipart/related and multipart/mixed)', () => {
    for (const ct of [
      'multipart/mixed; boundary=x',
      'multipart/related; boundary=x; type="text/xml"',
      'Multipart/Mixed; boundary=x',
      'MULTIPART/ALTERNATIVE;boundary=x',
      'multipart/x-anything',
    ])
      assert.equal(formBodyKind({ ...body, 'content-type': ct }), 'multipart', ct);
  });
  test('a Content-Type holding json is JSON: the media type, or /json or +json anywhere (Laravel)', () => {
    for (const ct of [
      'application/json',
      'Application/JSON; charset=UTF-8',
      'application/vnd.api+json',
      'application/merge-patch+JSON',
      'text/json',
      'application/x-ndjson',
      'text/plain; profile=/json',
      'application/octet-stream; x=+json',
    ])
      assert.equal(formBodyKind({ ...body, 'content-type': ct }), 'json', ct);
    assert.equal(
      formBodyKind({ ...body, 'content-type': 'application/x-www-form-urlencoded; x=/json' }),
      'urlencoded+json',
    );
    assert.equal(
      formBodyKind({ ...body, 'content-type': 'multipart/mixed; type=a/json; b=x' }),
      'multipart+json',
    );
    // `json` elsewhere in a parameter is not Laravel's test: a form stays a form, the rest streams.
    assert.equal(
      formBodyKind({ ...body, 'content-type': 'multipart/form-data; boundary=json' }),
      'multipart',
    );
    assert.equal(formBodyKind({ ...body, 'content-type': 'text/plain; charset=jsonish' }), 'none');
    assert.equal(formBodyKind({ 'content-type': 'application/json' }), 'none', 'no body');
    assert.equal(
      formBodyKind({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }),
      'json',
    );
  });
  test('other media types, and requests without a body, are not forms', () => {
    for (const ct of [
      'text/plain',
      'application/x-www-form',
      'application/x-www-form-urlencodedfoo',
      'multipartx/form-data',
      'application/octet-stream',
    ])
      assert.equal(formBodyKind({ ...body, 'content-type': ct }), 'none', ct);
    assert.equal(formBodyKind({ 'content-type': 'application/x-www-form-urlencoded' }), 'none');
    assert.equal(formBodyKind({ 'content-length': '0' }), 'none');
    assert.equal(formBodyKind({ 'transfer-encoding': 'chunked' }), 'urlencoded');
  });
  test('compressed, transfer-coded or non-ASCII charset forms and JSON are unreadable', () => {
    const f = { ...body, 'content-type': 'application/x-www-form-urlencoded' };
    assert.equal(formBodyKind({ ...f, 'content-encoding': 'gzip' }), 'unreadable');
    assert.equal(formBodyKind({ ...f, 'content-encoding': 'identity, br' }), 'unreadable');
    assert.equal(formBodyKind({ ...f, 'content-encoding': 'Identity' }), 'urlencoded');
    assert.equal(formBodyKind({ 'transfer-encoding': 'gzip, chunked' }), 'unreadable');
    for (const cs of ['utf-16', 'UTF-16LE', '"utf-32"', 'ibm037', 'cp500', 'utf-7'])
      assert.equal(
        formBodyKind({ ...f, 'content-type': `${f['content-type']}; charset=${cs}` }),
        'unreadable',
        cs,
      );
    // A `charset=` anywhere counts (Tomcat takes the first one in the header), and `charset*=`.
    for (const ct of ['; xcharset=IBM037', ';x-charset=utf-16', '; charset*=utf-16', '; a=1 charset=cp500'])
      assert.equal(formBodyKind({ ...f, 'content-type': `${f['content-type']}${ct}` }), 'unreadable', ct);
    for (const cs of ['utf-8', 'UTF8', '"iso-8859-1"', 'windows-1252', 'Shift_JIS', 'us-ascii'])
      assert.equal(
        formBodyKind({ ...f, 'content-type': `${f['content-type']}; charset=${cs}` }),
        'urlencoded',
        cs,
      );
    // JSON alike (body-parser inflates gzip and deflate JSON before method-override reads it).
    for (const extra of [
      { 'content-encoding': 'gzip' },
      { 'content-encoding': 'deflate' },
      { 'content-type': 'application/json; charset=utf-16le' },
      { 'content-type': 'application/vnd.x+json; charset="UTF-32"' },
    ])
      assert.equal(formBodyKind({ ...body, 'content-type': 'application/json', ...extra }), 'unreadable');
    assert.equal(
      formBodyKind({
        ...body,
        'content-type': 'application/json; charset=latin1',
        'content-encoding': 'identity',
      }),
      'json',
    );
    assert.equal(
      formBodyKind({ ...body, 'content-type': 'multipart/mixed; b=1', 'content-encoding': 'br' }),
      'unreadable',
    );
  });
});

describe('createFormOverrideScanner, urlencoded', () => {
  test('override names as the frameworks read them', () => {
    for (const b of [
      '_method=DELETE',
      'a=1&_method=PUT',
      'a=1;_method=PUT',
      '+_method=DELETE',
      '%20%09_method=DELETE',
      '.method=DELETE',
      ' .method=DELETE',
      '_METHOD=x',
      '_method[]=DELETE',
      '_method[a][b]=DELETE',
      '_method[=DELETE',
      // Rack's normalize_params drops leading `[`/`]` and ends a name at one; qs reads `[a]` as `a`.
      '[_method]=DELETE',
      '%5B_method%5D=DELETE',
      '_method]=DELETE',
      ']_method=DELETE',
      '[[_method]]=DELETE',
      '+[_method]=DELETE',
      'a=1&[_method]=DELETE',
      '%5Fmethod=DELETE',
      '%5fMETHOD=DELETE',
      '_method%00junk=DELETE',
      '_method',
      '%u005Fmethod=DELETE', // .NET's HttpUtility.UrlDecode reads %uXXXX
      '%U005fMETHOD=DELETE',
      'X%u002DHTTP%u002DMethod%u002DOverride=DELETE',
      '%u0020_method=DELETE',
      '_method%u005B%u005D=DELETE',
      'x-http-method-override=DELETE',
      'X_HTTP_METHOD_OVERRIDE=DELETE',
      'x.http.method=DELETE',
      'x+method+override=DELETE',
      'a=1&&&_method=D',
      // qs with allowDots reads a leading `.` like `[`: `._method` is `[_method]`, so `_method`.
      '._method=DELETE',
      '%2E_method=DELETE',
      '%2e_METHOD=DELETE',
      '._method.=DELETE',
      '._method.x=DELETE',
      'a=1&._method=DELETE',
      '..[_method]=DELETE',
      '+._method=DELETE',
      '.x-http-method-override=DELETE',
      '%u002E_method=DELETE',
      '_method.=DELETE',
    ])
      assert.equal(form(b), true, b);
  });
  test('UTF-16 bodies (NUL bytes between the letters)', () => {
    assert.equal(form(Buffer.from('a=1&_method=DELETE', 'utf16le')), true);
    assert.equal(form(Buffer.from('\u0000a=1&\u0000_method=DELETE', 'latin1')), true);
  });
  test('other names pass, whatever their values', () => {
    for (const b of [
      '',
      'method=DELETE',
      'a=_method',
      'name=_method&note=_method%3DDELETE',
      'x_method=DELETE',
      '_methods=DELETE',
      '_method_=DELETE',
      '_me%2Bthod=DELETE',
      '%255Fmethod=DELETE', // decoded once, as every framework does: `%5Fmethod`
      '__method=DELETE',
      'x-http-method-overrides=1',
      '=_method',
      '%uFF3Fmethod=DELETE', // fullwidth low line: not `_`
      '%u5Fmethod=DELETE', // not four hex digits: `%u5F` is not an escape
      '%u005Fmethods=DELETE',
      'a=%u005Fmethod',
      'x[_method]=DELETE', // a key inside x, not an override
      '[method]=DELETE',
      '[x]_method=DELETE',
      // `.` read as `_` (PHP) or as a bracket (qs allowDots): neither is an override name.
      'user.method=x',
      'a.b=1',
      'payment.method=card',
      'a._method=DELETE', // qs allowDots: a key inside a
      '_.method=DELETE',
      '.=DELETE',
      '._=DELETE',
      '._methods=DELETE',
      '.%5F.method=DELETE',
    ])
      assert.equal(form(b), false, b);
  });
  test('configured names are normalised the same way; no names, no scan', () => {
    const custom = createFormOverrideScanner(['My.Verb']);
    assert.equal(custom(Buffer.from('my_verb=PUT'), 'urlencoded'), true);
    assert.equal(custom(Buffer.from('_method=PUT'), 'urlencoded'), false);
    assert.equal(createFormOverrideScanner([])(Buffer.from('_method=PUT'), 'urlencoded'), false);
  });
});

describe('createFormOverrideScanner, multipart', () => {
  const part = (disposition: string) =>
    `--b\r\nContent-Disposition: ${disposition}\r\n\r\nDELETE\r\n--b--\r\n`;
  test('name parameters in every form', () => {
    for (const d of [
      'form-data; name="_method"',
      'form-data; name=_method',
      'form-data;name=_method;',
      'form-data; NAME="_METHOD"',
      'form-data; name = "_method"',
      'form-data; name="  _method"',
      'form-data; name="\\_me\\thod"',
      'form-data; name="_method[]"',
      'form-data; name="[_method]"',
      // PHP (Laravel, Symfony) joins a header line that starts with whitespace or has no `:` onto
      // the one before, and skips any isspace() before a value.
      'form-data; name=\r\n_method',
      'form-data; name=\r\n _method',
      'form-data; name=\r\n\t"_method"',
      'form-data; name=_me\r\nthod',
      'form-data; name="_metho\r\nd"',
      'form-data; na\r\nme="_method"',
      'form-data; name=\v_method',
      'form-data; name=\f_method',
      'form-data; name=\v"_method"',
      'form-data; name="_method]"',
      'form-data; name="%5Fmethod"',
      'form-data; name="x-http-method"',
      'form-data; name="._method"',
      'form-data; name=".X-HTTP-Method-Override"',
      "form-data; name*=utf-8''%5Fmethod",
      "form-data; name*=UTF-8'en'_method",
      'form-data; name*0="_me"; name*1="thod"',
      'form-data; name*1="thod"; name*0="_me"',
      "form-data; name*0*=utf-8''%5Fme; name*1=thod",
      'form-data; name*0=""; name*1="_method"',
      'form-data; x-name="_method"',
    ])
      assert.equal(multi(part(d)), true, d);
  });
  test("single-quoted names (PHP's php_ap_getword_conf) and other spellings parsers accept", () => {
    for (const d of [
      "form-data; name='_method'",
      "form-data; name = '_method'",
      "form-data; name='\\_me\\thod'",
      "form-data; name=' _method'",
      "form-data; name='_method[]'",
      "form-data; NAME='X-HTTP-Method-Override'",
      'form-data; name =  _method  ;',
      'form-data; name=\t_method\t',
      "form-data; name*0='_me'; name*1='thod'",
    ])
      assert.equal(multi(part(d)), true, d);
  });
  test('RFC 2047 encoded words (Commons FileUpload → MimeUtility.decodeText → Spring)', () => {
    for (const d of [
      'form-data; name="=?utf-8?B?X21ldGhvZA==?="',
      'form-data; name="=?utf-8?Q?=5Fmethod?="',
      'form-data; name="=?UTF-8?b?X21ldGhvZA==?="',
      'form-data; name="=?utf-8?q?=5fmethod?="',
      'form-data; name="=?iso-8859-1?Q?x_http_method?="', // Q's `_` is a space, read as `_`
      'form-data; name="=?windows-1252?Q?=5Fmethod?="',
      'form-data; name="=?x-anything?B?X21ldGhvZA?="', // any label; unpadded base64
      'form-data; name="=?utf-8*en?Q?=5Fmethod?="', // RFC 2231 language suffix
      'form-data; name="=?utf-8?B?X21l?= =?utf-8?B?dGhvZA==?="', // joined, space dropped
      'form-data; name="=?utf-8?Q?=5Fme?=\t =?utf-8?Q?thod?="',
      'form-data; name="=?utf-8?Q?=5Fme?==?utf-8?Q?thod?="',
      'form-data; name="_me=?utf-8?Q?thod?="', // an encoded word inside a word (JavaMail, lenient)
      "form-data; name='=?utf-8?B?X21ldGhvZA==?='",
      'form-data; name==?utf-8?B?X21ldGhvZA==?=',
      'form-data; name==?utf-8?Q?=5Fme?= =?utf-8?Q?thod?=', // a token up to `;` (Commons)
      'form-data; name="=?utf-8?B?WC1IVFRQLU1ldGhvZC1PdmVycmlkZQ==?="', // X-HTTP-Method-Override
      "form-data; name*=utf-8''%3D%3Futf-8%3FB%3FX21ldGhvZA%3D%3D%3F%3D",
      'form-data; name*0="=?utf-8?Q?=5F"; name*1="method?="', // a word across continuations
    ])
      assert.equal(multi(part(d)), true, d);
  });
  test('encoded words and quotes that do not name an override pass', () => {
    for (const d of [
      'form-data; name="=?utf-8?B?bWV0aG9k?="', // method
      'form-data; name="=?utf-8?Q?=5Fmethods?="',
      'form-data; name="=?utf-8?B?X21ldGhvZA==?=x"',
      'form-data; name="=?utf-8?Z?X21ldGhvZA==?="', // no such encoding
      'form-data; name="title"; filename="=?utf-8?B?X21ldGhvZA==?="',
      "form-data; name='title'; filename='_method'",
      'form-data; name="file"; filename="_method.txt"',
      "form-data; name=\"it's\"; filename='_method'",
    ])
      assert.equal(multi(part(d)), false, d);
  });
  test('other parameters and contents pass', () => {
    for (const d of [
      'form-data; name="title"',
      'form-data; name="file"; filename="_method"',
      'form-data; filename*=utf-8\'\'_method; name="f"',
      'form-data; name="method"',
      'form-data; name="_methods"',
      'form-data; username="_method"',
      'form-data; name*0="_me"; name*0="thod"',
    ])
      assert.equal(multi(part(d)), false, d);
    assert.equal(
      multi('--b\r\nContent-Disposition: form-data; name="t"\r\n\r\n_method=DELETE\r\n--b--'),
      false,
    );
  });
});

describe('createFormOverrideScanner, multipart header lines joined the way PHP joins them', () => {
  test('a joined line in a part header, CRLF or LF line ends, is read joined', () => {
    for (const body of [
      '--b\r\nContent-Disposition: form-data; na\r\nme="_method"\r\n\r\nDELETE\r\n--b--\r\n',
      '--b\nContent-Disposition: form-data; na\nme="_method"\n\nDELETE\n--b--\n',
      '--b\r\nContent-Type: text/plain\r\nContent-Disposition: form-data;\r\n name="_metho\r\nd"\r\n\r\nx\r\n--b--\r\n',
    ])
      assert.equal(multi(body), true, JSON.stringify(body));
  });
  test('only part headers are joined: content lines, lines before any header, and folded benign names pass', () => {
    for (const body of [
      // The same two lines as content, after the empty line that ends the headers.
      '--b\r\nContent-Disposition: form-data; name="t"\r\n\r\nna\r\nme="_method"\r\n--b--\r\n',
      '--b\r\nContent-Disposition: form-data; name="t"\r\n\r\na\r\nX: -\r\nna\r\nme="_method"\r\n--b--\r\n',
      // No header before them: PHP skips a line without `:` there.
      '--b\r\nna\r\nme="_method"\r\nContent-Disposition: form-data; name="t"\r\n\r\nx\r\n--b--\r\n',
      // A folded header that names something else.
      '--b\r\nContent-Disposition: form-data;\r\n name="title"\r\n\r\nx\r\n--b--\r\n',
    ])
      assert.equal(multi(body), false, JSON.stringify(body));
  });
  test('a charset= must be a whole parameter name to count: charsetx= is not one', () => {
    const ct = 'application/x-www-form-urlencoded; charsetx=utf-16';
    assert.equal(formBodyKind({ 'content-type': ct, 'content-length': '3' }), 'urlencoded');
  });
});

describe('createFormOverrideScanner, multipart Content-ID (Rack names a part without name= by it)', () => {
  const related = (head: string) => `--b\r\nContent-Type: text/plain\r\n${head}\r\n\r\nDELETE\r\n--b--\r\n`;
  test('a Content-ID that is an override name, however spelt', () => {
    for (const h of [
      'Content-ID: _method',
      'content-id:_method',
      'CONTENT-ID:\t _METHOD',
      'Content-ID: %5Fmethod',
      'X-Content-ID: _method', // Rack's regex is not anchored
      'Content-ID: x-http-method-override',
      'Content-ID: _method[]',
      'Content-ID: [_method]',
    ])
      assert.equal(multi(related(h)), true, h);
    assert.equal(multi('Content-ID:\r\n _method\r\n'), true, 'whitespace after the colon spans lines (\\s*)');
  });
  test('other Content-IDs and headers pass', () => {
    for (const h of [
      'Content-ID: <_method>',
      'Content-ID: _method x',
      'Content-ID: part1',
      'Content-IDx: _method',
      'Content-Location: _method',
      'Content-ID : _method', // Rack wants the colon right after the name
      'Content-ID: part1 Content-ID: _method', // the first is the whole line
    ])
      assert.equal(multi(related(h)), false, h);
    assert.equal(multi(':_method'), false, 'a colon at the start');
    assert.equal(multi('ontent-id:_method'), false);
  });
});

describe('createFormOverrideScanner, JSON', () => {
  const json = (s: string | Buffer) => scan(Buffer.isBuffer(s) ? s : Buffer.from(s, 'utf8'), 'json');
  test('an object key that is a configured name, at any depth, after JSON unescaping', () => {
    for (const body of [
      '{"_method":"DELETE"}',
      '{"a":1,"_method":"DELETE"}',
      '{ "_method" : "DELETE" }',
      '{"_method"\r\n\t:"PUT"}',
      '{"\\u005fmethod":"DELETE"}',
      '{"\\u005Fmethod":"DELETE"}',
      '{"_\\u006dethod":"DELETE"}',
      '{"\\u005f\\u006d\\u0065\\u0074\\u0068\\u006f\\u0064":1}',
      '{"a":{"b":[1,{"_method":"DELETE"}]}}',
      '[{"_method":"DELETE"}]',
      '{"x-http-method-override":"DELETE"}',
      '{"x-method-override":"DELETE"}',
      '{"_method":["DELETE"]}',
      '{"a":"\\"", "_method":1}',
      '{"a":"\\\\","_method":1}',
      // Invalid JSON that still shows the key: refused (a lenient parser could read it).
      '{"_method":',
      '{"_method":"DELETE",}',
      'x"_method":1',
    ])
      assert.equal(json(body), true, body);
  });
  test('other keys, values and invalid escapes pass', () => {
    for (const body of [
      '{"method":"DELETE"}',
      '{"_METHOD":"DELETE"}', // JSON keys are compared exactly, as the frameworks look them up
      '{"_Method":"DELETE"}',
      '{"_method ":"DELETE"}',
      '{" _method":"DELETE"}',
      '{"_methods":"DELETE"}',
      '{"x_method":"DELETE"}',
      '{"a":"_method"}',
      '["_method"]',
      '{"a":"_method","b":1}',
      '{"_method"}',
      '{"_method" "x"}',
      '{"a":"{\\"_method\\":\\"DELETE\\"}"}', // escaped JSON inside a string value
      '{"\\_method":1}', // not a JSON escape
      '{"\\u005gmethod":1}',
      '{"\\u00005fmethod":1}',
      '{"_method\\u0000":1}',
      '{"\\u015fmethod":1}',
      '{"_metho',
      '{"_method',
      '{"\\u005',
      '{"_\\',
      '{"note":"use \\u0041 _method"}',
      "{'_method':1}",
      '{_method:1}',
      '',
    ])
      assert.equal(json(body), false, body);
  });
  test('a name holding a character with a short escape is found through that escape', () => {
    const odd = createFormOverrideScanner(['a/b', 'c"d', 'e\\f', 'g\th']);
    for (const body of ['{"a\\/b":1}', '{"c\\"d":1}', '{"e\\\\f":1}', '{"g\\th":1}', '{"a/b":1}'])
      assert.equal(odd(Buffer.from(body), 'json'), true, body);
    assert.equal(odd(Buffer.from('{"a\\\\/b":1}'), 'json'), false);
    const utf8 = createFormOverrideScanner(['_méthode']);
    assert.equal(utf8(Buffer.from('{"_méthode":1}'), 'json'), true);
    assert.equal(
      utf8(Buffer.from('{"_m\\u00e9thode":1}'), 'json'),
      false,
      'non-ASCII escapes are not decoded',
    );
  });
  test('a form whose Content-Type mentions json is read both ways', () => {
    assert.equal(scan(Buffer.from('{"_method":"DELETE"}'), 'urlencoded+json'), true);
    assert.equal(scan(Buffer.from('_method=DELETE'), 'urlencoded+json'), true);
    assert.equal(scan(Buffer.from('--b\r\nContent-ID: _method\r\n\r\nx'), 'multipart+json'), true);
    assert.equal(scan(Buffer.from('--b\r\n\r\n{"_method":1}'), 'multipart+json'), true);
    assert.equal(scan(Buffer.from('--b\r\n\r\n{"_method":1}'), 'multipart'), false);
    assert.equal(scan(Buffer.from('a=1&b={"x":1}'), 'urlencoded+json'), false);
    assert.equal(scan(Buffer.from('{"_method":1}'), 'urlencoded'), false);
  });
  test('no names: nothing is refused', () => {
    assert.equal(createFormOverrideScanner([])(Buffer.from('{"_method":1}'), 'json'), false);
    assert.equal(createFormOverrideScanner([''])(Buffer.from('{"":1}'), 'json'), false);
  });
});

describe('createFormOverrideScanner, cost', () => {
  /** Milliseconds of the fastest of 5 scans (the least disturbed by other processes). */
  function fastest(body: Buffer, kind: FormKind): number {
    let best = Infinity;
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      assert.equal(scan(body, kind), false);
      best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return best;
  }
  // Each worst shape at 256 KiB and at 1 MiB: a linear scan costs about 4× more for the larger, a
  // quadratic one 16×. Compared with the same shape, so the machine's load cancels out.
  // Skipped under mutation testing, like the URL guard's: instrumented code is unevenly slower, and
  // every mutant would rerun 2 × 35 scans of up to 1 MiB (`bench/form-scan.ts` holds the figures).
  test(
    'worst-case bodies cost linear time: 4× the size costs at most 8× the time',
    { skip: underMutation && 'CPU time of instrumented code' },
    () => {
      const shapes: [string, (size: number) => Buffer, FormKind][] = [
        ['benign form', (n) => fill('field=value&', n), 'urlencoded'],
        ['separators', (n) => fill('&;=', n), 'urlencoded'],
        ['leading spaces', (n) => Buffer.concat([fill('+', n), Buffer.from('x=1')]), 'urlencoded'],
        ['NULs', (n) => Buffer.concat([Buffer.from('_'), fill('\u0000', n)]), 'urlencoded'],
        ['lone %', (n) => fill('%', n), 'urlencoded'],
        ['name prefixes', (n) => fill('_metho&', n), 'urlencoded'],
        ['dotted name prefixes (read twice)', (n) => fill('._metho&', n), 'urlencoded'],
        ['leading dots', (n) => Buffer.concat([fill('.', n), Buffer.from('x=1')]), 'urlencoded'],
        ['name= chains', (n) => fill('name=', n), 'multipart'],
        ['name=" chains', (n) => fill('name="', n), 'multipart'],
        [
          'spaces before =',
          (n) => Buffer.concat([Buffer.from('name'), fill(' ', n), Buffer.from('=x')]),
          'multipart',
        ],
        [
          'digits',
          (n) => Buffer.concat([Buffer.from('name*'), fill('1', n), Buffer.from('=x')]),
          'multipart',
        ],
        ['continuations', (n) => fill('name*0="a"; name*1="b"; ', n), 'multipart'],
        ['quoted spaces', (n) => Buffer.concat([Buffer.from('name="'), fill(' ', n)]), 'multipart'],
        ['name="_metho"', (n) => fill('name="_metho";', n), 'multipart'],
        ["name='_metho'", (n) => fill("name='_metho';", n), 'multipart'],
        ['extended continuations', (n) => fill('name*0*=a;', n), 'multipart'],
        ['continuation pairs', (n) => fill('; name*0="a"; name*1="b"', n), 'multipart'],
        ['encoded words', (n) => fill('name="=?utf-8?Q?=5Fmetho?= ', n), 'multipart'],
        [
          'empty encoded words',
          (n) => Buffer.concat([Buffer.from('name="'), fill('=?a?Q??= ', n)]),
          'multipart',
        ],
        ['nested encoded words', (n) => fill('name==?a?Q?=5F?= ', n), 'multipart'],
        ['%u escapes', (n) => fill('%u005F', n), 'urlencoded'],
        ['content-id: chains', (n) => fill('content-id:', n), 'multipart'],
        ['colons', (n) => fill(':', n), 'multipart'],
        ['header lines joined (PHP)', (n) => fill('--\r\na:\r\nb\r\n', n), 'multipart'],
        ['folded header lines (PHP)', (n) => fill('--\r\n:\r\n\tb\r\nc\r\n', n), 'multipart'],
        ['blank lines', (n) => fill('\n', n), 'multipart'],
        ['Content-ID: _metho lines', (n) => fill('Content-ID: _metho\r\n', n), 'multipart'],
        [
          'Content-ID: then whitespace',
          (n) => Buffer.concat([Buffer.from('Content-ID:'), fill(' ', n)]),
          'multipart',
        ],
        ['benign JSON', (n) => fill('{"id":12345,"text":"hello world"},', n), 'json'],
        ['JSON quotes', (n) => fill('"', n), 'json'],
        ['JSON "_metho" keys', (n) => fill('"_metho":1,', n), 'json'],
        [
          'JSON \\u escaped prefixes',
          (n) => fill('"\\u005f\\u006d\\u0065\\u0074\\u0068\\u006f":', n),
          'json',
        ],
        ['JSON "_method" values', (n) => fill('"_method",', n), 'json'],
        [
          'JSON "_method" then spaces',
          (n) => Buffer.concat([Buffer.from('"_method"'), fill(' ', n)]),
          'json',
        ],
        ['JSON escaped quotes', (n) => fill('"\\"', n), 'json'],
      ];
      const floor = 2; // ms: below this, timer noise
      for (const [name, make, kind] of shapes) {
        const smallBody = make(1 << 18);
        const largeBody = make(1 << 20);
        // A loaded machine can stall any single measurement; a quadratic scan is 16× on every try,
        // so up to 8 tries (each the fastest of 5) only remove scheduling noise, not the test's power.
        let seen = '';
        let linear = false;
        for (let attempt = 0; attempt < 8 && !linear; attempt++) {
          const small = fastest(smallBody, kind);
          const large = fastest(largeBody, kind);
          linear = large <= 8 * Math.max(small, floor);
          seen += ` ${large.toFixed(1)}/${small.toFixed(1)} ms`;
        }
        assert.ok(linear, `${name}: large/small${seen}`);
      }
    },
  );
});

function fill(unit: string, size: number): Buffer {
  return Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), 'latin1');
}

describe('mutation edges, part 1 (lines < 450)', () => {
  const form1 = { 'content-length': '10', 'content-type': 'application/x-www-form-urlencoded' };
  const names =
    (...n: string[]) =>
    (body: string, kind: FormKind = 'urlencoded') =>
      createFormOverrideScanner(n)(Buffer.from(body, 'latin1'), kind);
  const cd = (d: string) => `--b\r\nContent-Disposition: ${d}\r\n\r\nDELETE\r\n--b--\r\n`;
  /** Every default name's character %-encoded: the longest one is 22 characters. */
  const encodeAll = (s: string) =>
    [...s].map((ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');
  const longest = 'x-http-method-override';
  // The bound on a value read for a name: the longest key, each character %-encoded, plus 1 and 8.
  const maxRaw = 3 * (longest.length + 1) + 8;

  test('ASCII-compatible charset labels, each spelling the list allows, are readable', () => {
    for (const cs of [
      'utf8',
      'utf-8',
      'ascii',
      'us-ascii',
      'iso8859-1',
      'iso-8859-1',
      'iso-8859-15',
      'latin1',
      'latin-9',
      'l1',
      'l9',
      'windows-1250',
      'cp1252',
      'cp-1251',
      'windows1259',
      'shift_jis',
      'sjis',
      'euc-jp',
      'euc-kr',
      'euc-cn',
      'gbk',
      'gb2312',
      'gb18030',
      'big5',
      'koi8-r',
      'koi8-u',
      'KOI8-R',
    ])
      assert.equal(
        formBodyKind({ ...form1, 'content-type': `${form1['content-type']}; charset=${cs}` }),
        'urlencoded',
        cs,
      );
  });
  test('labels that only contain or resemble an ASCII-compatible one are unreadable', () => {
    for (const cs of [
      'x-utf-8',
      'utf-8x',
      'xascii',
      'iso-8859-123',
      'iso-8859-x',
      'latin-x',
      'lx',
      'l12',
      'cp-12521',
      'windows-1260',
      'euc-tw',
      'koi8-x',
      'gb',
      'big5x',
      'utf-16be',
    ])
      assert.equal(
        formBodyKind({ ...form1, 'content-type': `${form1['content-type']}; charset=${cs}` }),
        'unreadable',
        cs,
      );
  });
  test('the charset parameter is found however it is spaced', () => {
    for (const ct of [
      'application/x-www-form-urlencoded;charset=utf-16',
      'application/x-www-form-urlencoded;  charset=utf-16',
      'application/x-www-form-urlencoded; charset = utf-16',
      'application/x-www-form-urlencoded; CHARSET="UTF-16"',
    ])
      assert.equal(formBodyKind({ ...form1, 'content-type': ct }), 'unreadable', ct);
  });
  test('media type after leading whitespace; empty and spaced coding tokens are identity', () => {
    assert.equal(
      formBodyKind({ ...form1, 'content-type': '  multipart/form-data; boundary=x' }),
      'multipart',
    );
    assert.equal(formBodyKind({ ...form1, 'content-type': '\tmultipart/mixed' }), 'multipart');
    for (const ce of ['', 'identity,', ' identity , identity ', ',identity'])
      assert.equal(formBodyKind({ ...form1, 'content-encoding': ce }), 'urlencoded', JSON.stringify(ce));
    assert.equal(formBodyKind({ 'transfer-encoding': ' chunked ,' }), 'urlencoded');
    assert.equal(formBodyKind({ 'transfer-encoding': 'chunked, gzip' }), 'unreadable');
  });

  test('configured names that normalise to nothing are no names: nothing is refused', () => {
    for (const n of [[''], [' '], ['[]'], ['] ['], ['\u0000']])
      for (const body of ['%20=1', '+=1', '%00=1', ' =1', '=1', '%5Bx=1', 'a=1&[=2'])
        assert.equal(names(...n)(body), false, `${JSON.stringify(n)} ${body}`);
    // With a real name alongside, a whitespace-only or empty form name still is none.
    for (const body of ['+=1', '%20=1', '%00=1', '[x]=1', '%5B=1', 'a=1&+&b=2'])
      assert.equal(names('_method', ' ')(body), false, body);
  });
  test('configured names are normalised like body names: leading whitespace, NUL, [, separators, case', () => {
    const cases: [string, string, boolean][] = [
      [' _method', '_method=1', true],
      ['\t_method', '_method=1', true],
      [' _method', '__method=1', false],
      ['\u0000 _method', '_method=1', true],
      ['_me\u0000thod', '_method=1', true],
      ['_method[x]', '_method=1', true],
      ['_method[x]', '_method[x=1', true],
      ['x method', 'x_method=1', true],
      ['x method', 'xmethod=1', false],
      ['x.method', 'x_method=1', true],
      ['x-method', 'x_method=1', true],
      ['ABZ', 'abz=1', true],
      ['abz', 'ABZ=1', true],
      ['Az', 'aZ=1', true],
      // A configured name is not %-decoded and `+` is not a space in it.
      ['%5Fx', '_x=1', false],
      ['%5Fx', '%255Fx=1', true],
      ['a+b', 'a_b=1', false],
      ['a+b', 'a%2Bb=1', true],
      ['a+b', 'a+b=1', false],
    ];
    for (const [name, body, expected] of cases)
      assert.equal(names(name)(body), expected, `${JSON.stringify(name)} ${body}`);
  });

  test('%XX and %uXXXX escapes: exactly hex digits, and the escape is consumed whole', () => {
    // A configured name spelt with a literal `%` is met by the same characters only when they are
    // not an escape (an escape is decoded first).
    const cases: [string, boolean][] = [
      ['%zz', true],
      ['%5z', true],
      ['%z5', true],
      ['%4v', true],
      ['%3q', true],
      ['%5g', true],
      ['%/0', true],
      ['%:0', true],
      ['%`1', true],
      ['%@1', true],
      ['%G1', true],
      ['%uz000', true],
      ['%u0z00', true],
      ['%u00z0', true],
      ['%u001z', true],
      ['%u006z', true],
      ['%u1234', false],
      ['%u0100', false],
      ['%u0015', false],
      ['%u0051', false],
      ['%u1000', false],
      ['%15', false],
      ['%51', false],
      ['%a1', false],
      ['%f1', false],
      ['%A1', false],
      ['%F1', false],
      ['%91', false],
      ['%01', false],
    ];
    for (const [name, literal] of cases) {
      const scanner = names(name);
      assert.equal(scanner(`${name}=1`), literal, name);
      assert.equal(scanner(`a=1&${name}=1&b=2`), literal, `${name} in the middle`);
    }
  });
  test('escapes decode to the character they encode, and nothing else', () => {
    const q = names('q');
    for (const b of ['%51=1', '%71=1', '%u0051=1', '%U0071=1', 'a&%51']) assert.equal(q(b), true, b);
    for (const b of ['%5v=1', '%3Q=1', '%4q=1', '%5!=1', '%u005v=1', '%u0151=1', '%u1051=1', '%5q'])
      assert.equal(q(b), false, b);
    for (const b of ['%0a_method=1', '%0A_method=1', '%0d%0C_method=1', '%u000a_method=1'])
      assert.equal(form(b), true, b);
    for (const b of [
      '%4vmethod=1',
      '%3?method=1',
      '%5?method=1',
      '%5005Fmethod=1',
      '%u006zmethod=1',
      '%u015Fmethod=1',
      '%u105Fmethod=1',
      '%u0?5Fmethod=1',
      '%01_method=1',
      '\u0001_method=1',
      '\u0008_method=1',
      '%u0001_method=1',
    ])
      assert.equal(form(b), false, b);
  });
  test('an escape cut short by the end of the name is no escape', () => {
    // `_method%5` is no `_method` (no framework drops a broken escape).
    for (const b of ['_method%', '_method%5', '_method%u', '_method%u00', '_method%u005', '%', '%5', '%u005'])
      for (const tail of ['', '=1', '&a=1']) assert.equal(form(b + tail), false, b + tail);
    // A literal-% name is met by a cut-short escape.
    assert.equal(names('a%5')('a%5=1'), true);
    assert.equal(names('a%u005')('a%u005'), true);
    // Past the name's end lie other bytes: they complete no escape. The first value leaves its
    // bytes in the buffer the next one is read into.
    for (const d of [
      'form-data; name="aaaaaaaa4"; name="_metho%6"',
      'form-data; name="aaaaaaaaaaa4"; name="_metho%u006"',
      'form-data; name="aaaaaaaaaF"; name="_method%5"',
    ])
      assert.equal(multi(cd(d)), false, d);
    assert.equal(multi('Content-ID: _metho%6\r\n4'), false);
    assert.equal(multi('Content-ID: _metho%u006\r\n4'), false);
  });

  test('urlencoded: every piece is read, not only the last; its name ends at its first =', () => {
    for (const b of [
      '_method=1&a=2',
      '_method&a=2',
      '_method;a',
      '%5Fmethod=1&a=2',
      '+_method=1&a=2',
      '_method=a=b&x=1',
      '_method=a=b',
      '_method==',
      'a&_method&b',
      'x-http-method-override=1;_=2',
    ])
      assert.equal(form(b), true, b);
    for (const b of ['a=_method&b=2', 'a=1=_method&b', '&=_method&', 'a=b=_method', '_method_=1&a=_method'])
      assert.equal(form(b), false, b);
  });

  test('multipart: a name spelt with a literal % or + is compared as sent as well as decoded', () => {
    const literal = names('%41b', 'a+b', 'a+%41');
    for (const d of [
      'form-data; name="%41b"',
      'form-data; name="a+%41"',
      'form-data; name="a+%62"',
      'form-data; name=%41b',
      'form-data; name="a+b"',
      'form-data; name*0="%4"; name*1="1b"',
      'form-data; name*0="a+"; name*1="b"',
    ])
      assert.equal(literal(cd(d), 'multipart'), true, d);
    for (const d of ['form-data; name="Ab"', 'form-data; name="a b"', 'form-data; name="a_b"'])
      assert.equal(literal(cd(d), 'multipart'), false, d);
  });

  test('multipart: the longest name fully %-encoded, in every spelling up to the bound, is read', () => {
    const enc = encodeAll(longest); // 66 characters
    for (const d of [
      `form-data; name="${enc}"`,
      `form-data; name*=utf-8''${enc}`,
      `form-data; name*=UTF-8'en'${enc}`,
      // Whitespace that is part of the value (not dropped before it) counts, up to maxRaw.
      `form-data; name="${'\u000b'.repeat(maxRaw - enc.length)}${enc}"`,
      `form-data; name*="${'\u000b'.repeat(maxRaw - longest.length)}${longest}"`,
      `form-data; name*0="${'\u000b'.repeat(maxRaw - longest.length)}"; name*1="${longest}"`,
      `form-data; name*0="${'\u000b'.repeat(maxRaw - longest.length - 1)}"; name*1="${longest}"`,
    ])
      assert.equal(multi(cd(d)), true, d);
  });

  test('multipart: RFC 2047 words are read up to one word per character of the longest name', () => {
    // One word per character, each with the longest label (64): (22 + 2) × (64 + 12) characters are
    // read after the `=`. The words are preceded by spaces (dropped) up to exactly that bound.
    const words = [...longest].map((ch) => `=?${'a'.repeat(64)}?Q?${ch}?=`).join('');
    const bound = (longest.length + 2) * (64 + 12);
    const value = `"${' '.repeat(bound - 1 - words.length)}${words}`;
    assert.equal(value.length, bound);
    assert.equal(multi(`form-data; name=${value}"`), true);
    assert.equal(multi(`form-data; name=${value}`), true, 'no closing quote: the word ends the body');
    // A token value whose word ends the body.
    for (const b of [
      'name==?utf-8?B?X21ldGhvZA==?=',
      'name= =?utf-8?Q?=5Fmethod?=',
      'name="=?utf-8?Q?=5Fmethod?=',
    ])
      assert.equal(multi(b), true, b);
  });

  test('multipart: RFC 2231 continuations, repeated indexes, gaps, empty and over-long pieces', () => {
    const long = 'x'.repeat(maxRaw);
    for (const d of [
      // A repeated index starts the next parameter, whose pieces are then joined.
      'form-data; name*0="x"; name*0="_me"; name*1="thod"',
      'form-data; name*0="a"; name*1="b"; name*0="_me"; name*1="thod"',
      'form-data; name*0="a"; name*1="b"; name*0="_me"; name*5="thod"',
      'form-data; name*0="a"; name*1="b"; name*2="c"; name*0="_me"; name*1="th"; name*2="od"',
      // Joined in index order, whatever the order sent.
      'form-data; name*1="th"; name*0="_me"; name*2="od"',
      'form-data; name*2="od"; name*0="_me"; name*1="th"',
      'form-data; name*2="od"; name*1="th"; name*0="_me"',
      'form-data; name*3="od"; name*1="me"; name*0="_"; name*2="th"',
      // An empty piece adds nothing, and is no index to repeat.
      'form-data; name*0="_me"; name*1=""; name*1="thod"',
      'form-data; name*0=""; name*0="_me"; name*1="thod"',
      // After an over-long parameter, the next one is read again.
      `form-data; name*0="a"; name*1="${long}"; name*0="_me"; name*1="thod"`,
    ])
      assert.equal(multi(cd(d)), true, d);
    for (const d of [
      // The over-long piece is part of the name: `_me` + 77 × x + `thod` is no override.
      `form-data; name*0="_me"; name*1="${long}"; name*2="thod"`,
      `form-data; name*0="_me"; name*1="${long}x"; name*2="thod"`,
      `form-data; name*0="${long}"; name*1="${long}"; name*2="${long}"; name*3="${long}"; name*4="_method"`,
      `form-data; name*0="${long}"; name*1="_method"`,
      // `=?` without a whole encoded word.
      'form-data; name*0="a=?"; name*1="b"',
      'form-data; name*0="=?utf-8?Q?=5Fmethod"; name*1="x"',
    ])
      assert.equal(multi(cd(d)), false, d);
  });
});

describe('mutation edges, part 2 (lines >= 450)', () => {
  const mp = (s: string) => scan(Buffer.from(s, 'latin1'), 'multipart');
  const js = (s: string | Buffer) => scan(Buffer.isBuffer(s) ? s : Buffer.from(s, 'latin1'), 'json');
  const check = (cases: [string, boolean][], run: (s: string) => boolean = mp) => {
    for (const [body, expected] of cases) assert.equal(run(body), expected, JSON.stringify(body));
  };
  const nul = (n: number) => '\u0000'.repeat(n);

  test('which parameters are name parameters: the four letters, the `*N` index, the letter before', () => {
    check([
      ['form-data; name\t="_method"', true], // whitespace before `=`: tabs too
      ['form-data; name*9="_method"', true], // a one-digit index, 9 included
      ['form-data; namex9="_method"', false], // digits not after `*`: another parameter
      ['name="_method"', true], // `name` at the body's first byte
      ['aname="_method"', false], // a letter before it, at the body's first byte
      ['form-data; 0name="_method"', false],
      ['form-data; zname="_method"', false],
      ['form-data; my_name="_method"', true], // `_` is not a letter or digit
      ['form-data; xame="_method"', false],
      ['form-data; nxme="_method"', false],
      ['form-data; naxe="_method"', false],
      ['form-data; namx="_method"', false],
      ['form-data; abcd="_method"', false],
      // A parameter that is not a name is no piece of one.
      ['form-data; name*0="_me"; name*1="th"; x="od"', false],
      ['form-data; name*0="_me"; name*1="th"; name*2="od"', true],
    ]);
  });

  test('continuations are joined in the numeric order of their indexes', () => {
    check([
      ['form-data; name*1="thod"; name*00="_me"', true], // 00 is 0, before 1
      ['form-data; name*0="_m"; name*10="thod"; name*2="e"', true], // 0, 2, 10
      ['form-data; name*0="_m"; name*10="e"; name*2="thod"', false],
    ]);
  });

  test('quoted and token values: where they end, and the bound on what is read', () => {
    check([
      [`form-data; name="${' '.repeat(100)}_method"`, true], // leading whitespace is not counted
      [`form-data; name="${'\t'.repeat(100)}_method"`, true],
      [`form-data; name="${'_method'.padEnd(160, '\u0000')}"`, true],
      // A piece is read up to maxRaw bytes (77 here): a longer one is cut there, not dropped.
      [`form-data; name*0="_method${nul(80)}"`, true],
      [`form-data; name*0=_method${nul(80)};`, true],
      ['form-data; name*0="_me"; name*1="thod', true], // unterminated at the body's end
      ['form-data; name*0=_me; name*1=thod', true],
      ['form-data; name="_method\rx"', true], // a quoted value ends at a line break
      ['form-data; name="_method\nx"', true],
      ['form-data; name="_method\\', false], // a trailing backslash escapes nothing
      ['form-data; name=_method,x', true], // a token ends at `,` and `"`
      ['form-data; name=_method"x', true],
    ]);
  });

  test("RFC 2231 values: charset'lang' prefix, %-decoding, invalid escapes", () => {
    check([
      ["form-data; name*=utf-8''_method%00'x", true], // only the first two quotes delimit
      ['form-data; name*=%5Fmethod', true], // no quotes: all of it is the value
      ["form-data; name*=x'_method", false], // one quote: no prefix, the quote is kept
      ['form-data; name*=%u005Fmethod', true], // `%u` is left for the %-decoding pass
      ['form-data; name*=%6zmethod', false], // `%6z` is no escape
      // The value is decoded within its own length, whatever an earlier value left behind.
      ['form-data; name="ssssssssssss"; name*=%5Fmethod', true],
      ['form-data; name="xxxxxxxx4"; name*=_metho%6', false],
      ['form-data; name="aaaaaaaaaaaaa\'"; name*=%5Fmethod%00\'', true],
    ]);
  });

  test('RFC 2047 words: where a value read for words starts and ends', () => {
    check([
      ['form-data; name= "=?utf-8?B?X21ldGhvZA==?="', true],
      ['form-data; name=\t"=?utf-8?B?X21ldGhvZA==?="', true],
      ['form-data; name==?utf-8?B?X21ldGhvZA==?=', true], // a token word at the body's end
      ['form-data; name="=?utf-8?Q?=5Fmethod?=\nx', true], // an unterminated quote ends at the line
      ['form-data; name==?utf-8?Q?=5Fmethod?=;x', true], // a token ends at `;`, `"` and `'`
      ['form-data; name==?utf-8?Q?=5Fmethod?="x', true],
      ["form-data; name==?utf-8?Q?=5Fmethod?='x", true],
      ['form-data; name="=?utf-8?Q?=5Fmethod?=;"', false], // a quoted value does not end at `;`
      ['form-data; name="\\_=?utf-8?Q?method?="', true], // `\` escapes in a quoted value
      ['form-data; name="_=?utf-8?Q?method?="', true],
      ['form-data; name="=?utf-8?Q?x?= http method"', true], // spaces between a word and text kept
      ['form-data; name="x =?utf-8?Q?http_method?="', true], // and between text and a word
      ['form-data; name="=?utf-8?Q?=5Fmetho?="', false], // a prefix of a name is no name
      // Only `=?` starts a word.
      ['form-data; name="x?ab?Q?=5Fmethod?=[=?"', false],
      ['form-data; name="=xab?Q?=5Fmethod?=[=?"', false],
    ]);
  });

  test('RFC 2047 words: the value window (maxRaw bytes) and the word window (maxWords bytes)', () => {
    // With the default names maxRaw is 77: a word must start inside the first 77 bytes read.
    check([
      [`form-data; name="${nul(75)}=?utf-8?Q?=5Fmethod?="`, true],
      [`form-data; name="${nul(76)}=?utf-8?Q?=5Fmethod?="`, false],
    ]);
    // maxWords is 1824: a `\` escape is not undone across it (the byte after it is not read).
    const head = 'name="=?utf-8?Q?=5Fmethod?=';
    let words = '';
    let rest = 4 + 1 + 1824 - 1 - head.length; // the `\` at the last byte of the window
    while (rest > 70) {
      words += '=?a?Q??='; // empty words add nothing to the name
      rest -= 8;
    }
    words += `=?${'a'.repeat(rest - 7)}?Q??=`;
    const body = `${head}${words}\\["`;
    assert.equal(body.indexOf('\\['), 4 + 1824);
    assert.equal(mp(body), false);
    assert.equal(mp(body.replace('\\[', '[')), true);
  });

  test('RFC 2047 words: labels, encodings, terminators', () => {
    const label = (n: number) => `form-data; name="=?${'a'.repeat(n)}?Q?=5Fmethod?="`;
    check([
      [label(64), true],
      [label(65), false], // longer than LABEL_MAX: no word
      ['form-data; name="=??Q?=5Fmethod?="', false], // an empty label
      ['form-data; name="=?utf-8!Q?=5Fmethod?="', false],
      ['form-data; name="=?utf-8?Q!=5Fmethod?="', false],
      ['form-data; name="=?x_y?Q?=5Fmethod?="', true], // label characters
      ['form-data; name="=?x.y?Q?=5Fmethod?="', true],
      ['form-data; name="=?x:y?Q?=5Fmethod?="', true],
      ['form-data; name="=?x+y?Q?=5Fmethod?="', true],
      ['form-data; name="=?utf-8?Q?=5Fm=65thod?="', true], // `=XX` anywhere in the text
      ['form-data; name==?utf-8?Q?=5Fmethodx', false], // no `?=` before the body ends
      // A word's text ends at `?=`; the quote, a line break or whitespace before it: no word.
      ['form-data; name="=?utf-8?Q?=5Fmethod["?="', false],
      ['form-data; name="=?utf-8?Q?=5Fmethod[\r?="', false],
      ['form-data; name="=?utf-8?Q?=5Fmethod[\n?="', false],
      ['form-data; name="=?utf-8?Q?=5Fmethod[ ?="', false],
      ['form-data; name="=?utf-8?Q?=5Fmethod[\t?="', false],
      // A value that is not a word is not read again from elsewhere.
      ['x_method\r\nform-data; name="=?a?Z?b?="', false],
      ['x_method\r\nform-data; name="=?"', false],
      ['x_method\r\nform-data; name="=?a?Q?b c?="', false],
      ['x_method\r\nform-data; name==?a?Q?bc', false],
    ]);
  });

  test('RFC 2047 Q and B decoding', () => {
    check([
      ['form-data; name="=?utf-8?Q?_=5Fmethod?="', true], // Q `_` is a space: leading, dropped
      ['form-data; name="=?utf-8?Q?.method?="', true],
      ['form-data; name="=?utf-8?Q?x-http-method-override?="', true], // `=` alone starts an escape
      ['form-data; name="=?utf-8?Q?=6xmethod?="', false], // `=6x` is no escape
      ['form-data; name="=?utf-8?Q?=5Fmethod[x]?="', true], // the name ends at `[`
      ['form-data; name="=?utf-8?Q?=5Fmethod=00?=x"', true], // PHP: the name ends at NUL
      ['form-data; name="=?utf-8?Q?=5F=00method?="', true], // UTF-16: NUL ignored
    ]);
    // After `X21ldGhvZA` (`_method` and 4 zero bits) a base64 digit of value 4 or more adds a
    // byte that is not NUL: another name.
    for (const digit of ['a', 'z', 'E', 'Z', '0', '9', '+', '-', '/', '_'])
      assert.equal(mp(`form-data; name="=?utf-8?B?X21ldGhvZA${digit}?="`), false, digit);
    // A digit below 4 adds a NUL (PHP ends the name there); anything else is skipped, as a
    // lenient decoder does.
    assert.equal(mp('form-data; name="=?utf-8?B?X21ldGhvZAA?="'), true);
    for (const junk of ['!', '{', '~', '.', '*'])
      assert.equal(mp(`form-data; name="=?utf-8?B?X21ldGhvZA${junk}?="`), true, junk);
    assert.equal(mp('form-data; name="=?utf-8?B?ICBfbWV0aG9k?="'), true); // "  _method"
    assert.equal(mp('form-data; name="=?utf-8?B?X01ldGhvZA==?="'), true); // "_Method"
    assert.equal(mp('form-data; name="=?utf-8?B?IF9tZXRob2Q=?="'), true); // " _method"
  });

  test('a stale byte of an earlier value does not start a word', () => {
    check([['form-data; name="x=?"; name=\u0000 =?utf-8?Q?=5Fmethod?=', false]]);
  });

  test('JSON: keys that are prefixes, empty keys and empty names', () => {
    check(
      [
        ['{"":1,"a":"_method"}', false],
        ['{"_metho":1,"a":"_method"}', false],
      ],
      js,
    );
    const withEmpty = createFormOverrideScanner(['', '_method']);
    assert.equal(withEmpty(Buffer.from('{"":1}'), 'json'), false);
    assert.equal(withEmpty(Buffer.from('{"_method":1}'), 'json'), true);
  });

  test('JSON: invalid and truncated escapes end the key, whatever came before', () => {
    check(
      [
        ['{"\\u005f":0,"\\xmethod":1}', false],
        ['{"\\u005f":0,"\\umethod":1}', false],
        ['{"a":"\\u0064","_metho\\u":1', false],
      ],
      js,
    );
  });

  test('JSON: names found through escapes (prefilter and \\u digits)', () => {
    const mixed = createFormOverrideScanner(['_method', 'a/b']);
    assert.equal(mixed(Buffer.from('{"a\\/b":1}'), 'json'), true);
    assert.equal(mixed(Buffer.from('{"\\u0061\\/b":1}'), 'json'), true);
    // A name made only of characters with short escapes: the body need not hold `\u`.
    const backspace = createFormOverrideScanner(['\b']);
    assert.equal(backspace(Buffer.from('{"\\b":1}'), 'json'), true);
    const control = createFormOverrideScanner(['a\u0010b']);
    assert.equal(control(Buffer.from('{"a\\u0010b":1}'), 'json'), true);
    // A \u escape at or above U+0080 is no byte of a UTF-8 name.
    const utf8 = createFormOverrideScanner(['_méthode', 'Ѐ']);
    assert.equal(utf8(Buffer.from('{"_m\\u00c3\\u00a9thode":1}'), 'json'), false);
    assert.equal(
      utf8(Buffer.concat([Buffer.from('{"'), Buffer.from([0xd0]), Buffer.from('\\u0080":1}')]), 'json'),
      false,
    );
    assert.equal(utf8(Buffer.from('{"Ѐ":1}'), 'json'), true);
  });

  test('Content-ID: the line ends at CR, LF or the body end; no + decoding', () => {
    check([
      ['--b\r\nContent-ID: _method', true],
      ['--b\r\nContent-ID: part1', false],
      ['--b\r\nContent-ID: _method\nX: 1\r\n', true],
      ['--b\r\nContent-ID: x+http+method\r\n', false],
    ]);
  });
});
