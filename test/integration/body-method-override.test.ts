import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send, type Reply } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Method override in a form or JSON body (threat model: T2): Rails, Laravel, Symfony and Go's
 * gorilla/handlers run the method named by a `_method` form field, so a POST carrying one would get
 * past the route's `methods` and the key's scopes. Every refusal is checked
 * on the answer and on the recording upstream, which must have received nothing; every request let
 * through must reach the upstream byte for byte.
 */

const OVERRIDE_BODY = {
  error: 'Bad Request',
  details: 'Method overrides in a request body are not accepted',
};
const FORM = 'application/x-www-form-urlencoded';
const ERROR_415 = 'Form and JSON bodies are accepted uncompressed and in an ASCII-compatible charset only';
const LIMIT = 4096;

interface Gateway {
  t: TestGateway;
  key: string;
}

async function startWith(
  upstream: RecordingUpstream,
  urlKeyGuard: Record<string, unknown> = {},
): Promise<Gateway> {
  const t = await startTestGateway({
    server: { bodyLimitBytes: LIMIT },
    store: { type: 'memory' },
    routes: [{ prefix: '/media', target: `${upstream.url}/base`, methods: ['GET', 'POST'] }],
    rateLimit: { tiers: [{ name: 'big', points: 100_000, duration: 60 }] },
    urlKeyGuard,
    log: { level: 'warn' },
  });
  assert.ok((await t.gw.service.createCompany({ id: 'acme', tier: 'big' })).ok);
  const k = await t.gw.service.createKey('acme', {});
  assert.ok(k.ok);
  return { t, key: k.value.key };
}

function post(g: Gateway, body: string | Buffer, headers: Record<string, string>): Promise<Reply> {
  return send(g.t.port, '/media/item/1', {
    method: 'POST',
    headers: { 'X-API-Key': g.key, 'Content-Length': String(Buffer.byteLength(body)), ...headers },
    body,
  });
}

/** A POST whose body is sent chunked (no Content-Length), in the given pieces. */
function postChunked(g: Gateway, pieces: string[], headers: Record<string, string>): Promise<Reply> {
  return send(g.t.port, '/media/item/1', {
    method: 'POST',
    headers: { 'X-API-Key': g.key, 'Transfer-Encoding': 'chunked', ...headers },
    body: pieces.join(''),
  });
}

/**
 * A request written on a raw socket in several TCP writes, each after the gateway had time to read
 * the previous one (pacing, not an assertion); resolves with everything the gateway sent back.
 */
function sendInPieces(port: number, pieces: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = new Socket();
    const chunks: Buffer[] = [];
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      s.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      // One answer is all this test reads: stop at the end of its body.
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const len = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head));
      if (head !== -1 && len && text.length >= head + 4 + Number(len[1])) done();
    });
    s.on('error', (e) => (settled ? undefined : reject(e)));
    s.on('close', done);
    s.connect(port, '127.0.0.1', async () => {
      for (const p of pieces) {
        s.write(p);
        await new Promise((r) => setTimeout(r, 40));
      }
    });
  });
}

function multipart(boundary: string, parts: { disposition: string; content: string }[]): string {
  return (
    parts
      .map((p) => `--${boundary}\r\nContent-Disposition: ${p.disposition}\r\n\r\n${p.content}\r\n`)
      .join('') + `--${boundary}--\r\n`
  );
}

describe('method override in a form body', () => {
  let upstream: RecordingUpstream;
  let g: Gateway;

  before(async () => {
    upstream = await startUpstream();
    g = await startWith(upstream);
  });
  after(async () => {
    await g?.t.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('the route refuses DELETE itself (the method the override would smuggle)', async () => {
    const r = await send(g.t.port, '/media/item/1', { method: 'DELETE', headers: { 'X-API-Key': g.key } });
    assert.equal(r.status, 405);
    assert.equal(upstream.received.length, 0);
  });

  const urlencoded: Record<string, string> = {
    '_method=DELETE': '_method=DELETE',
    'after another field': 'a=1&_method=DELETE&b=2',
    'leading space (+)': '+_method=DELETE',
    'leading spaces (%20)': '%20%20_method=DELETE',
    'leading dot (PHP: . → _)': '.method=DELETE',
    'leading space then dot': '+.method=DELETE',
    'upper case': '_METHOD=DELETE',
    'array (_method[])': '_method[]=DELETE',
    'array with index': '_method[0]=DELETE',
    '%-encoded name': '%5Fmethod=PUT',
    'NUL after the name (PHP stops there)': '_method%00x=DELETE',
    'after a ; separator': 'a=1;_method=DELETE',
    'X-HTTP-Method-Override': 'X-HTTP-Method-Override=DELETE',
    'x_http_method (PHP-style name)': 'x_http_method=DELETE',
    'no value': '_method',
    '%u escape (.NET HttpUtility.UrlDecode)': '%u005Fmethod=DELETE',
    '%u escapes in X-HTTP-Method-Override': 'X%u002DHTTP%u002DMethod%u002DOverride=DELETE',
    // qs reads `[_method]` as `_method`, Rack's normalize_params also
    // `_method]`, `]_method` and `[[_method]]`.
    'in brackets (qs, Rack)': '[_method]=DELETE',
    'in %-encoded brackets': '%5B_method%5D=DELETE',
    'a closing bracket after (Rack)': '_method]=DELETE',
    'a closing bracket before (Rack)': ']_method=DELETE',
    'in double brackets (Rack)': 'a=1&[[_method]]=DELETE',
    // qs with allowDots reads `._method` (and `%2E_method`) as `_method`.
    'leading dot (qs allowDots)': 'a=1&%2E_method=DELETE',
  };
  for (const [name, body] of Object.entries(urlencoded)) {
    test(`urlencoded, ${name}: 400, nothing forwarded`, async () => {
      const r = await post(g, body, { 'Content-Type': FORM });
      assert.equal(r.status, 400, r.body);
      assert.deepEqual(r.json, OVERRIDE_BODY);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.equal(upstream.received.length, 0);
    });
  }

  test('Content-Type in any case, with parameters, or absent (Rack parses a POST without one as a form)', async () => {
    for (const type of [
      'Application/X-WWW-Form-URLEncoded; charset=UTF-8',
      'application/x-www-form-urlencoded ;charset="utf-8"',
      'MULTIPART/FORM-DATA; boundary=b',
      undefined,
    ]) {
      const body = type?.toLowerCase().startsWith('multipart')
        ? multipart('b', [{ disposition: 'form-data; name="_method"', content: 'DELETE' }])
        : '_method=DELETE';
      const r = await post(g, body, type === undefined ? {} : { 'Content-Type': type });
      assert.equal(r.status, 400, `${type}: ${r.body}`);
      assert.deepEqual(r.json, OVERRIDE_BODY);
    }
    assert.equal(upstream.received.length, 0);
  });

  const multiparts: Record<string, string> = {
    'name="_method"': 'form-data; name="_method"',
    'name=_method (token)': 'form-data; name=_method',
    'NAME = "_METHOD"': 'form-data; NAME = "_METHOD"',
    'quoted-pair': 'form-data; name="\\_method"',
    'array name': 'form-data; name="_method[]"',
    'leading space': 'form-data; name=" _method"',
    'RFC 2231 (name*)': "form-data; name*=utf-8''%5Fmethod",
    'RFC 2231 continuation (Go)': 'form-data; name*0="_me"; name*1="thod"',
    'continuation out of order': 'form-data; name*1="thod"; name*0="_me"',
    "single-quoted (PHP's php_ap_getword_conf)": "form-data; name='_method'",
    'RFC 2047 B word (Commons FileUpload → Spring)': 'form-data; name="=?utf-8?B?X21ldGhvZA==?="',
    'RFC 2047 Q word': 'form-data; name="=?utf-8?Q?=5Fmethod?="',
    'RFC 2047 words joined, other label and case': 'form-data; name="=?ISO-8859-1?b?X21l?= =?x-y?q?thod?="',
    // PHP joins a header line without `:` onto the one before, and skips \v or \f before a value.
    'a name folded onto the next line (PHP)': 'form-data; name="_metho\r\nd"',
    'a parameter split over two lines (PHP)': 'form-data; na\r\nme="_method"',
    'vertical tab before the value (PHP)': 'form-data; name=\v_method',
  };
  for (const [name, disposition] of Object.entries(multiparts)) {
    test(`multipart, ${name}: 400, nothing forwarded`, async () => {
      const body = multipart('XyZ', [
        { disposition: 'form-data; name="title"', content: 'hello' },
        { disposition, content: 'DELETE' },
      ]);
      const r = await post(g, body, { 'Content-Type': 'multipart/form-data; boundary=XyZ' });
      assert.equal(r.status, 400, r.body);
      assert.deepEqual(r.json, OVERRIDE_BODY);
      assert.equal(upstream.received.length, 0);
    });
  }

  const otherMultiparts: Record<string, string> = {
    'multipart/mixed': 'multipart/mixed; boundary=XyZb',
    'multipart/related': 'multipart/related; boundary=XyZb; type="text/plain"',
    'Multipart/Mixed': 'Multipart/Mixed; boundary=XyZb',
    'multipart/alternative': 'multipart/alternative; boundary=XyZb',
  };
  for (const [name, type] of Object.entries(otherMultiparts)) {
    test(`${name} naming _method: 400, nothing forwarded`, async () => {
      const body = multipart('XyZb', [{ disposition: 'form-data; name="_method"', content: 'DELETE' }]);
      const r = await post(g, body, { 'Content-Type': type });
      assert.equal(r.status, 400, r.body);
      assert.deepEqual(r.json, OVERRIDE_BODY);
      assert.equal(upstream.received.length, 0);
    });
  }

  test('multipart/related naming _method by Content-ID (Rack names the part by it): 400', async () => {
    const body = '--XyZb\r\nContent-Type: text/plain\r\nContent-ID: _method\r\n\r\nDELETE\r\n--XyZb--\r\n';
    const r = await post(g, body, { 'Content-Type': 'multipart/related; boundary=XyZb' });
    assert.equal(r.status, 400, r.body);
    assert.deepEqual(r.json, OVERRIDE_BODY);
    assert.equal(upstream.received.length, 0);
  });

  const jsons: Record<string, [string, string]> = {
    plain: ['application/json', '{"_method":"DELETE"}'],
    'after other keys': ['application/json; charset=utf-8', '{"to":"a@b.c","_method":"DELETE"}'],
    '\\u escape of _': ['application/json', '{"\\u005fmethod":"DELETE"}'],
    '\\u escape of m': ['application/json', '{"_\\u006dethod":"DELETE"}'],
    nested: ['application/json', '{"data":{"items":[{"_method":"DELETE"}]}}'],
    '+json': ['application/vnd.api+json', '{"_method":"DELETE"}'],
    'APPLICATION/JSON': ['APPLICATION/JSON', '{"_method":"DELETE"}'],
    'text/json': ['text/json', '{"_method":"DELETE"}'],
    '/json in a parameter (Laravel isJson)': ['text/plain; profile=/json', '{"_method":"DELETE"}'],
    'form type with +json in a parameter': [`${FORM}; x=+json`, '{"_method":"DELETE"}'],
    'X-HTTP-Method-Override key': ['application/json', '{"x-http-method-override":"DELETE"}'],
  };
  for (const [name, [type, body]] of Object.entries(jsons)) {
    test(`JSON, ${name}: 400, nothing forwarded`, async () => {
      const r = await post(g, body, { 'Content-Type': type });
      assert.equal(r.status, 400, r.body);
      assert.deepEqual(r.json, OVERRIDE_BODY);
      assert.equal(upstream.received.length, 0);
    });
  }

  test('chunked JSON with the key split across TCP writes: 400, nothing forwarded', async () => {
    const head = `POST /media/item/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${g.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const raw = await sendInPieces(g.t.port, [
      head,
      '8\r\n{"a":1,"\r\n',
      '4\r\n_met\r\n',
      'e\r\nhod":"DELETE"}\r\n',
      '0\r\n\r\n',
    ]);
    assert.match(raw, /^HTTP\/1\.1 400 /);
    assert.ok(raw.endsWith(JSON.stringify(OVERRIDE_BODY)), raw);
    const escaped = await sendInPieces(g.t.port, [
      head,
      '5\r\n{"\\u0\r\n',
      '11\r\n05fmethod":"PUT"}\r\n',
      '0\r\n\r\n',
    ]);
    assert.match(escaped, /^HTTP\/1\.1 400 /);
    assert.ok(escaped.endsWith(JSON.stringify(OVERRIDE_BODY)), escaped);
    assert.equal(upstream.received.length, 0);
  });

  test('compressed JSON, or JSON in UTF-16: 415 like a form (body-parser inflates gzip JSON), nothing forwarded', async () => {
    const gz = await post(g, gzipSync('{"_method":"DELETE"}'), {
      'Content-Type': 'application/json',
      'Content-Encoding': 'gzip',
    });
    assert.equal(gz.status, 415, gz.body);
    assert.equal((gz.json as { details: string }).details, ERROR_415);
    const utf16 = await post(g, Buffer.from('{"_method":"DELETE"}', 'utf16le'), {
      'Content-Type': 'application/json; charset=utf-16le',
    });
    assert.equal(utf16.status, 415, utf16.body);
    assert.equal(upstream.received.length, 0);
  });

  test('a JSON body over the limit: 413 whether declared or streamed, nothing forwarded', async () => {
    const big = `{"a":"${'x'.repeat(LIMIT)}"}`;
    const declared = await post(g, big, { 'Content-Type': 'application/json' });
    assert.equal(declared.status, 413);
    const streamed = await postChunked(g, [big], { 'Content-Type': 'application/json' });
    assert.equal(streamed.status, 413);
    assert.equal(upstream.received.length, 0);
  });

  test('ordinary JSON POSTs arrive byte for byte, with the same headers', async () => {
    const bodies: [string, string][] = [
      ['application/json', '{"to":"+15550100","text":"h\\u00e9llo \\"quoted\\" _method","n":[1,2.5,null]}'],
      ['application/json; charset=utf-8', '{"template":"welcome","vars":{"name":"Zoë"}}'],
      ['application/merge-patch+json', '{"a":null}'],
      ['application/json', '[]'],
    ];
    for (const [type, body] of bodies) {
      upstream.received.length = 0;
      const headers = { 'Content-Type': type, 'X-Trace': 'abc', Accept: 'application/json' };
      const r = await post(g, body, headers);
      assert.equal(r.status, 200, `${body}: ${r.body}`);
      assert.equal(upstream.received.length, 1);
      const got = upstream.received[0]!;
      assert.equal(got.method, 'POST');
      assert.deepEqual(got.body, Buffer.from(body));
      assert.equal(got.headers['content-type'], type);
      assert.equal(got.headers['content-length'], String(Buffer.byteLength(body)));
      assert.equal(got.headers['transfer-encoding'], undefined);
      assert.equal(got.headers['x-trace'], 'abc');
      assert.equal(got.headers.accept, 'application/json');
    }
  });

  test('the headers a JSON POST brings to the upstream are those a text/plain POST brings', async () => {
    const names = async (type: string) => {
      upstream.received.length = 0;
      assert.equal((await post(g, '{"a":1}', { 'Content-Type': type })).status, 200);
      const h = { ...upstream.received[0]!.headers };
      delete h['content-type'];
      // Per-request values (request id, signature) differ; the set of names must not.
      return Object.keys(h).sort();
    };
    assert.deepEqual(await names('application/json'), await names('text/plain'));
  });

  test('a chunked form body: 400, nothing forwarded', async () => {
    const r = await postChunked(g, ['a=1&', '_method=DELETE'], { 'Content-Type': FORM });
    assert.equal(r.status, 400, r.body);
    assert.deepEqual(r.json, OVERRIDE_BODY);
    assert.equal(upstream.received.length, 0);
  });

  test('a body split across TCP writes, the name spanning the split (Content-Length and chunked)', async () => {
    const head = (framing: string) =>
      `POST /media/item/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${g.key}\r\nContent-Type: ${FORM}\r\n${framing}\r\n`;
    const body = 'a=1&_method=DELETE';
    const withLength = await sendInPieces(g.t.port, [
      head(`Content-Length: ${body.length}\r\n`),
      'a=1&_me',
      'thod=DELETE',
    ]);
    assert.match(withLength, /^HTTP\/1\.1 400 /);
    assert.ok(withLength.endsWith(JSON.stringify(OVERRIDE_BODY)), withLength);
    const chunked = await sendInPieces(g.t.port, [
      head('Transfer-Encoding: chunked\r\n'),
      '7\r\na=1&_me\r\n',
      'b\r\nthod=DELETE\r\n',
      '0\r\n\r\n',
    ]);
    assert.match(chunked, /^HTTP\/1\.1 400 /);
    assert.ok(chunked.endsWith(JSON.stringify(OVERRIDE_BODY)), chunked);
    assert.equal(upstream.received.length, 0);
  });

  test('a compressed form body is refused 415 (the gateway cannot read it), nothing forwarded', async () => {
    for (const encoding of ['gzip', 'deflate, identity', 'br']) {
      const r = await post(g, gzipSync('_method=DELETE'), {
        'Content-Type': FORM,
        'Content-Encoding': encoding,
      });
      assert.equal(r.status, 415, `${encoding}: ${r.body}`);
      assert.equal((r.json as { error: string }).error, 'Unsupported Media Type');
    }
    assert.equal(upstream.received.length, 0);
  });

  test('a form body in a charset that is not ASCII-compatible is refused 415, nothing forwarded', async () => {
    for (const charset of ['utf-16le', 'UTF-16', '"utf-32"', 'ibm037', 'utf-7']) {
      const body = Buffer.from('_method=DELETE', 'utf16le');
      const r = await post(g, body, { 'Content-Type': `${FORM}; charset=${charset}` });
      assert.equal(r.status, 415, `${charset}: ${r.body}`);
    }
    // Tomcat takes the first `charset=` anywhere in the header.
    for (const params of ['; xcharset=IBM037', '; charset*=utf-16']) {
      const r = await post(g, 'a=1', { 'Content-Type': `${FORM}${params}` });
      assert.equal(r.status, 415, `${params}: ${r.body}`);
    }
    assert.equal(upstream.received.length, 0);
  });

  test('a form body over the limit: 413 whether declared or streamed, nothing forwarded', async () => {
    const big = `a=${'x'.repeat(LIMIT)}`;
    const declared = await post(g, big, { 'Content-Type': FORM });
    assert.equal(declared.status, 413);
    const streamed = await postChunked(g, [big], { 'Content-Type': FORM });
    assert.equal(streamed.status, 413);
    assert.equal((streamed.json as { error: string }).error, 'Payload Too Large');
    assert.equal(upstream.received.length, 0);
  });

  test('ordinary form bodies are forwarded byte for byte', async () => {
    const bodies: [string, string, Record<string, string>][] = [
      ['form', 'a=1&method=x&name=_method&note=_method%3DDELETE&x_method=y', { 'Content-Type': FORM }],
      [
        'multipart with a file that mentions _method',
        multipart('B0und', [
          { disposition: 'form-data; name="title"', content: '_method=DELETE' },
          {
            disposition: 'form-data; name="file"; filename="_method.txt"',
            content: 'bytes \u00e9 \u0000 here',
          },
          { disposition: "form-data; name='doc'; filename='_method'", content: 'x' },
          { disposition: 'form-data; name="=?utf-8?B?dGl0bGU=?="', content: 'encoded title' },
        ]),
        { 'Content-Type': 'multipart/form-data; boundary=B0und' },
      ],
      [
        'JSON with _method only in a value',
        '{"a":"_method","b":"{\\"_method\\":1}"}',
        { 'Content-Type': 'application/json' },
      ],
      ['JSON with _METHOD (keys are exact)', '{"_METHOD":"DELETE"}', { 'Content-Type': 'application/json' }],
      ['invalid JSON', '{"a":', { 'Content-Type': 'application/json' }],
      ['text/plain naming _method', '{"_method":"DELETE"}', { 'Content-Type': 'text/plain' }],
    ];
    for (const [name, body, headers] of bodies) {
      upstream.received.length = 0;
      const r = await post(g, body, headers);
      assert.equal(r.status, 200, `${name}: ${r.body}`);
      assert.equal(upstream.received.length, 1, name);
      const got = upstream.received[0]!;
      assert.equal(got.method, 'POST');
      assert.equal(got.url, '/base/media/item/1');
      assert.deepEqual(got.body, Buffer.from(body), name);
      assert.equal(got.headers['content-length'], String(Buffer.byteLength(body)), name);
      assert.equal(got.headers['content-type'], headers['Content-Type'], name);
    }
  });

  test('a chunked ordinary form body is forwarded whole, with its length', async () => {
    const r = await postChunked(g, ['a=1&', 'b=2&method=GET'], { 'Content-Type': FORM });
    assert.equal(r.status, 200, r.body);
    assert.equal(upstream.received.length, 1);
    assert.equal(upstream.received[0]!.body.toString(), 'a=1&b=2&method=GET');
    assert.equal(upstream.received[0]!.headers['content-length'], '18');
  });

  test('a form body after Expect: 100-continue is read and forwarded', async () => {
    const raw = await sendInPieces(g.t.port, [
      `POST /media/item/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${g.key}\r\nContent-Type: ${FORM}\r\n` +
        'Content-Length: 3\r\nExpect: 100-continue\r\n\r\n',
      'a=1',
    ]);
    assert.match(raw, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    assert.equal(upstream.received.length, 1);
    assert.equal(upstream.received[0]!.body.toString(), 'a=1');
  });

  test('an unauthenticated form body is not read: 401 first', async () => {
    const r = await send(g.t.port, '/media/item/1', {
      method: 'POST',
      headers: { 'Content-Type': FORM },
      body: '_method=DELETE',
    });
    assert.equal(r.status, 401);
    assert.equal(upstream.received.length, 0);
  });
});

describe('method override in a form body, urlKeyGuard.methodOverrideInBody: allow', () => {
  let upstream: RecordingUpstream;
  let g: Gateway;

  before(async () => {
    upstream = await startUpstream();
    g = await startWith(upstream, { methodOverrideInBody: 'allow' });
  });
  after(async () => {
    await g?.t.close();
    await upstream?.close();
  });

  test('the body is forwarded as it came, streamed', async () => {
    const bodies: [string, Record<string, string>][] = [
      ['_method=DELETE', { 'Content-Type': FORM }],
      [
        multipart('b', [{ disposition: 'form-data; name="_method"', content: 'DELETE' }]),
        { 'Content-Type': 'multipart/form-data; boundary=b' },
      ],
    ];
    for (const [body, headers] of bodies) {
      upstream.received.length = 0;
      const r = await post(g, body, headers);
      assert.equal(r.status, 200, r.body);
      assert.equal(upstream.received.length, 1);
      assert.equal(upstream.received[0]!.body.toString(), body);
    }
    upstream.received.length = 0;
    const json = await post(g, '{"_method":"DELETE"}', { 'Content-Type': 'application/json' });
    assert.equal(json.status, 200, json.body);
    assert.equal(upstream.received[0]!.body.toString(), '{"_method":"DELETE"}');
    upstream.received.length = 0;
    const gz = gzipSync('_method=DELETE');
    const r = await post(g, gz, { 'Content-Type': FORM, 'Content-Encoding': 'gzip' });
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(upstream.received[0]!.body, gz);
  });
});

describe('method override in a body: only where methods are restricted, and never held whole', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let key: string;
  let scopedKey: string;

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'memory' },
      routes: [
        { prefix: '/open', target: upstream.url },
        { prefix: '/media', target: upstream.url, methods: ['GET', 'POST'] },
      ],
      rateLimit: { tiers: [{ name: 'big', points: 100_000, duration: 60 }] },
      methodOverride: { bodyScanLimitBytes: 1024 },
      log: { level: 'warn' },
    });
    assert.ok((await t.gw.service.createCompany({ id: 'acme', tier: 'big' })).ok);
    const k = await t.gw.service.createKey('acme', {});
    assert.ok(k.ok);
    key = k.value.key;
    const s = await t.gw.service.createKey('acme', {});
    assert.ok(s.ok);
    assert.ok(
      (await t.gw.service.updateKey(s.value.id, { scopes: [{ route: '/open', methods: ['POST'] }] })).ok,
    );
    scopedKey = s.value.key;
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.received.length = 0;
  });

  const postTo = (path: string, k: string, body: string, type = FORM) =>
    send(t.port, path, {
      method: 'POST',
      headers: { 'X-API-Key': k, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)) },
      body,
    });

  test('a route that allows every method, with an unscoped key: the body streams untouched, _method and all', async () => {
    for (const [body, type] of [
      ['_method=DELETE', FORM],
      ['{"_method":"DELETE"}', 'application/json'],
      [
        multipart('b', [{ disposition: 'form-data; name="_method"', content: 'DELETE' }]),
        'multipart/form-data; boundary=b',
      ],
    ] as const) {
      upstream.received.length = 0;
      const r = await postTo('/open/x', key, body, type);
      assert.equal(r.status, 200, r.body);
      assert.equal(upstream.received[0]!.body.toString(), body);
    }
  });

  test('the same route with a key scoped to POST: the override is refused', async () => {
    const r = await postTo('/open/x', scopedKey, '_method=DELETE');
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, OVERRIDE_BODY);
    assert.equal(upstream.received.length, 0);
  });

  test('past methodOverride.bodyScanLimitBytes the body streams on and is still read: a late override cuts it', async () => {
    const clean = multipart('b', [
      { disposition: 'form-data; name="file"; filename="a.bin"', content: 'x'.repeat(200_000) },
      { disposition: 'form-data; name="title"', content: 'hello' },
    ]);
    const ok = await postTo('/media/x', key, clean, 'multipart/form-data; boundary=b');
    assert.equal(ok.status, 200, ok.body);
    assert.equal(upstream.received[0]!.body.length, Buffer.byteLength(clean));
    upstream.received.length = 0;
    const late = multipart('b', [
      { disposition: 'form-data; name="file"; filename="a.bin"', content: 'x'.repeat(200_000) },
      { disposition: 'form-data; name="_method"', content: 'DELETE' },
    ]);
    const r = await postTo('/media/x', key, late, 'multipart/form-data; boundary=b');
    assert.equal(r.status, 400, r.body);
    assert.deepEqual(r.json, OVERRIDE_BODY);
    // The upstream saw the start of a request, never a complete one: nothing was recorded.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(upstream.received.length, 0);
  });
});
