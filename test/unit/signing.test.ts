import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import {
  gatewaySignatureMiddleware,
  generateWebhookSecret,
  signGatewayRequest,
  signWebhook,
  verifyGatewaySignature,
  verifyWebhook,
  type SignedFields,
} from '../../src/signing.js';

const SECRET = 'unit-test-signing-secret-of-32-characters';
const NOW = 1_900_000_000;
const FIELDS: SignedFields = {
  method: 'POST',
  target: '/notify/v1/otps?channel=sms',
  companyId: 'acme',
  keyId: 'key_1',
  tier: 'standard',
};

/** The request an upstream sees when the gateway forwarded `f` signed at `t` with `secret`. */
function signedRequest(f: SignedFields = FIELDS, t = NOW, secret = SECRET) {
  const headers: IncomingHttpHeaders = {
    'x-gateway-signature': signGatewayRequest(secret, { ...f, timestamp: t }),
    'x-company-id': f.companyId,
    'x-api-key-id': f.keyId,
    'x-company-tier': f.tier,
  };
  return { method: f.method, url: f.target, headers };
}

describe('gateway signature', () => {
  test('round trip: what the gateway signs, the upstream accepts, with the identity it vouches for', () => {
    const r = verifyGatewaySignature(signedRequest(), { secret: SECRET, now: NOW });
    assert.deepEqual(r, { ok: true, companyId: 'acme', keyId: 'key_1', tier: 'standard', timestamp: NOW });
    // The header is the documented shape, and the MAC is HMAC-SHA256 over the documented lines.
    const sig = signGatewayRequest(SECRET, { ...FIELDS, timestamp: NOW });
    const mac = createHmac('sha256', SECRET)
      .update(`v1\nPOST\n/notify/v1/otps?channel=sms\nacme\nkey_1\nstandard\n${NOW}`)
      .digest('hex');
    assert.equal(sig, `t=${NOW},v1=${mac}`);
    // The method is case-insensitive on both sides (Node upper-cases it anyway).
    assert.equal(
      verifyGatewaySignature({ ...signedRequest(), method: 'post' }, { secret: SECRET, now: NOW }).ok,
      true,
    );
  });

  test('custom header names are honoured, case-insensitively', () => {
    const req = signedRequest();
    const headers: IncomingHttpHeaders = {
      'x-sig': req.headers['x-gateway-signature'],
      'x-tenant': 'acme',
      'x-key': 'key_1',
      'x-plan': 'standard',
    };
    const names = { signature: 'X-Sig', companyId: 'X-Tenant', keyId: 'X-Key', companyTier: 'X-Plan' };
    assert.equal(
      verifyGatewaySignature({ ...req, headers }, { secret: SECRET, now: NOW, headers: names }).ok,
      true,
    );
    assert.deepEqual(verifyGatewaySignature({ ...req, headers }, { secret: SECRET, now: NOW }), {
      ok: false,
      reason: 'missing',
    });
  });

  test('any change to method, path, query, company, key id, tier or timestamp is a mismatch', () => {
    const good = signedRequest();
    const tampered: [string, ReturnType<typeof signedRequest>][] = [
      ['method', { ...good, method: 'GET' }],
      ['path', { ...good, url: '/notify/v1/otpz?channel=sms' }],
      ['query', { ...good, url: '/notify/v1/otps?channel=email' }],
      ['company', { ...good, headers: { ...good.headers, 'x-company-id': 'evil' } }],
      ['key id', { ...good, headers: { ...good.headers, 'x-api-key-id': 'key_2' } }],
      ['tier', { ...good, headers: { ...good.headers, 'x-company-tier': 'enterprise' } }],
      [
        'timestamp',
        {
          ...good,
          headers: {
            ...good.headers,
            'x-gateway-signature': String(good.headers['x-gateway-signature']).replace(
              `t=${NOW}`,
              `t=${NOW + 1}`,
            ),
          },
        },
      ],
      ['secret', signedRequest(FIELDS, NOW, SECRET.replace('unit', 'evil'))],
    ];
    for (const [what, req] of tampered)
      assert.deepEqual(
        verifyGatewaySignature(req, { secret: SECRET, now: NOW }),
        { ok: false, reason: 'mismatch' },
        what,
      );
    // Fields cannot be shifted across the line boundaries of the signed payload.
    const shifted = signedRequest({ ...FIELDS, companyId: 'ac', keyId: 'mekey_1' });
    shifted.headers['x-company-id'] = 'acme';
    shifted.headers['x-api-key-id'] = 'key_1';
    assert.deepEqual(verifyGatewaySignature(shifted, { secret: SECRET, now: NOW }), {
      ok: false,
      reason: 'mismatch',
    });
  });

  test('a signature outside the tolerance window is expired, either side of now', () => {
    const req = signedRequest();
    assert.equal(verifyGatewaySignature(req, { secret: SECRET, now: NOW + 300 }).ok, true);
    assert.equal(verifyGatewaySignature(req, { secret: SECRET, now: NOW - 300 }).ok, true);
    for (const now of [NOW + 301, NOW - 301, NOW + 86_400])
      assert.deepEqual(verifyGatewaySignature(req, { secret: SECRET, now }), {
        ok: false,
        reason: 'expired',
      });
    assert.deepEqual(verifyGatewaySignature(req, { secret: SECRET, now: NOW + 31, toleranceSeconds: 30 }), {
      ok: false,
      reason: 'expired',
    });
  });

  test('missing or malformed signatures and identity headers are refused', () => {
    const good = signedRequest();
    const without = (name: string) => {
      const headers = { ...good.headers };
      delete headers[name];
      return { ...good, headers };
    };
    for (const h of ['x-gateway-signature', 'x-company-id', 'x-api-key-id', 'x-company-tier'])
      assert.deepEqual(verifyGatewaySignature(without(h), { secret: SECRET, now: NOW }), {
        ok: false,
        reason: 'missing',
      });
    const mac = String(good.headers['x-gateway-signature']).split('v1=')[1]!;
    for (const sig of [
      '',
      `v1=${mac}`,
      `t=${NOW}`,
      `t=${NOW},v1=${mac.toUpperCase()}`,
      `t=${NOW},v1=${mac.slice(1)}`,
      `t=${NOW},v1=${mac},v1=${mac}`,
      `t=-1,v1=${mac}`,
    ])
      assert.deepEqual(
        verifyGatewaySignature(
          { ...good, headers: { ...good.headers, 'x-gateway-signature': sig } },
          { secret: SECRET, now: NOW },
        ),
        { ok: false, reason: 'malformed' },
        sig,
      );
  });

  test('a header given as an array (a repeated line in Node) is malformed, even with one element', () => {
    const good = signedRequest();
    for (const h of ['x-gateway-signature', 'x-company-id', 'x-api-key-id', 'x-company-tier']) {
      const value = good.headers[h] as string;
      for (const repeated of [[value, value], [value]]) {
        const req = { ...good, headers: { ...good.headers, [h]: repeated } };
        assert.deepEqual(
          verifyGatewaySignature(req, { secret: SECRET, now: NOW }),
          {
            ok: false,
            reason: 'malformed',
          },
          `${h} × ${repeated.length}`,
        );
      }
    }
  });

  test('the signature header must be exactly the documented shape: nothing before t=', () => {
    const good = signedRequest();
    const sig = String(good.headers['x-gateway-signature']);
    for (const prefixed of [`x${sig}`, ` ${sig}`, `t=1,${sig}`])
      assert.deepEqual(
        verifyGatewaySignature(
          { ...good, headers: { ...good.headers, 'x-gateway-signature': prefixed } },
          { secret: SECRET, now: NOW },
        ),
        { ok: false, reason: 'malformed' },
        prefixed,
      );
  });

  test('without a timestamp or a clock, both sides use the current Unix time in seconds', () => {
    const before = Math.floor(Date.now() / 1000);
    const sig = signGatewayRequest(SECRET, FIELDS);
    const t = Number(/^t=(\d+),/.exec(sig)?.[1]);
    assert.ok(t >= before && t <= Math.floor(Date.now() / 1000), sig);
    const req = signedRequest(FIELDS, t);
    assert.equal(verifyGatewaySignature(req, { secret: SECRET }).ok, true);
  });

  test('a request without method or URL is checked as empty method and empty target', () => {
    const req = signedRequest({ ...FIELDS, method: '', target: '' });
    const bare = { headers: req.headers };
    assert.equal(verifyGatewaySignature(bare, { secret: SECRET, now: NOW }).ok, true);
    assert.deepEqual(verifyGatewaySignature({ ...bare, url: '/' }, { secret: SECRET, now: NOW }), {
      ok: false,
      reason: 'mismatch',
    });
  });

  test('a secret under 32 characters is refused by every function that takes one', () => {
    const req = signedRequest();
    for (const secret of ['', 'x', 'a'.repeat(31), undefined as unknown as string, 42 as unknown as string]) {
      const label = JSON.stringify(secret);
      assert.throws(
        () => signGatewayRequest(secret, { ...FIELDS, timestamp: NOW }),
        {
          name: 'TypeError',
          message: /^signGatewayRequest: secret must be a string of at least 32 characters/,
        },
        `sign ${label}`,
      );
      assert.throws(
        () => verifyGatewaySignature(req, { secret, now: NOW }),
        {
          name: 'TypeError',
          message: /^verifyGatewaySignature: secret must be a string of at least 32 characters/,
        },
        `verify ${label}`,
      );
      assert.throws(
        () => gatewaySignatureMiddleware({ secret }),
        {
          name: 'TypeError',
          message: /^gatewaySignatureMiddleware: secret must be a string of at least 32 characters/,
        },
        `middleware ${label}`,
      );
    }
    // The attack: an upstream whose secret is empty (unset env variable) must not accept a
    // signature anyone can compute with the same empty secret.
    const forged = signedRequest(FIELDS, NOW, 'a'.repeat(32));
    assert.throws(() => verifyGatewaySignature(forged, { secret: '', now: NOW }), TypeError);
    // Exactly 32 is enough.
    assert.equal(verifyGatewaySignature(forged, { secret: 'a'.repeat(32), now: NOW }).ok, true);
  });

  test('middleware: 401 in the spec shape without a valid signature, next() with one', () => {
    const guard = gatewaySignatureMiddleware({ secret: SECRET });
    const run = (req: ReturnType<typeof signedRequest>) => {
      const out = { statusCode: 200, headers: {} as Record<string, string>, body: '', next: false };
      guard(
        req,
        {
          set statusCode(s: number) {
            out.statusCode = s;
          },
          get statusCode() {
            return out.statusCode;
          },
          setHeader: (n: string, v: string) => (out.headers[n.toLowerCase()] = v),
          end: (b: string) => (out.body = b),
        },
        () => (out.next = true),
      );
      return out;
    };
    const ok = run(signedRequest(FIELDS, Math.floor(Date.now() / 1000)));
    assert.equal(ok.next, true);
    const bad = run(signedRequest(FIELDS, Math.floor(Date.now() / 1000) - 3600));
    assert.equal(bad.next, false);
    assert.equal(bad.statusCode, 401);
    assert.equal(bad.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(bad.body), {
      error: 'Unauthorized',
      details: 'Request did not come through the gateway',
    });
  });
});

describe('Standard Webhooks signature (event deliveries)', () => {
  const KEY = randomBytes(32);
  const WHSEC = `whsec_${KEY.toString('base64')}`;
  const body = '{"id":"evt_1","type":"key.revoked","timestamp":"2030-03-17T17:46:40Z","data":{"keyId":"k1"}}';
  const headersAt = (t: number, id = 'evt_1', b = body, secret = WHSEC) => ({
    'webhook-id': id,
    'webhook-timestamp': String(t),
    'webhook-signature': signWebhook(secret, { id, timestamp: t, body: b }),
  });

  test('the signature is v1,base64(HMAC-SHA256(key, id.timestamp.body)) with the key decoded from whsec_', () => {
    const mac = createHmac('sha256', KEY).update(`evt_1.${NOW}.${body}`).digest('base64');
    assert.equal(signWebhook(WHSEC, { id: 'evt_1', timestamp: NOW, body }), `v1,${mac}`);
    assert.deepEqual(verifyWebhook(headersAt(NOW), body, { secret: WHSEC, now: NOW }), {
      ok: true,
      id: 'evt_1',
      timestamp: NOW,
    });
  });

  test('the reference implementation (standardwebhooks) and this one accept each other', () => {
    const now = Math.floor(Date.now() / 1000);
    const reference = new Webhook(WHSEC);
    // Ours signed, theirs verifies (it throws on a bad signature).
    assert.deepEqual(reference.verify(body, headersAt(now)), JSON.parse(body));
    // Theirs signed, ours verifies; on a Fetch Headers object too.
    const theirs = reference.sign('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', new Date(now * 1000), body);
    const h = new Headers({
      'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
      'webhook-timestamp': String(now),
      'webhook-signature': theirs,
    });
    assert.equal(verifyWebhook(h, body, { secret: WHSEC }).ok, true);
  });

  test('refuses a changed body, id or timestamp, another secret, an old or future timestamp', () => {
    const h = headersAt(NOW);
    const opts = { secret: WHSEC, now: NOW };
    assert.deepEqual(verifyWebhook(h, body.replace('k1', 'k2'), opts), { ok: false, reason: 'mismatch' });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-id': 'evt_2' }, body, opts), {
      ok: false,
      reason: 'mismatch',
    });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-timestamp': String(NOW + 1) }, body, opts), {
      ok: false,
      reason: 'mismatch',
    });
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    assert.deepEqual(verifyWebhook(h, body, { secret: other, now: NOW }), { ok: false, reason: 'mismatch' });
    assert.deepEqual(verifyWebhook(h, body, { secret: WHSEC, now: NOW + 301 }), {
      ok: false,
      reason: 'expired',
    });
    assert.deepEqual(verifyWebhook(h, body, { secret: WHSEC, now: NOW - 301 }), {
      ok: false,
      reason: 'expired',
    });
    assert.equal(verifyWebhook(h, body, { secret: WHSEC, now: NOW + 300 }).ok, true);
  });

  test('any one of several signatures and secrets matches (zero-downtime secret rotation)', () => {
    const old = `whsec_${randomBytes(24).toString('base64')}`;
    const both = `${signWebhook(old, { id: 'evt_1', timestamp: NOW, body })} v1a,AAAA ${headersAt(NOW)['webhook-signature']}`;
    const h = { ...headersAt(NOW), 'webhook-signature': both };
    assert.equal(verifyWebhook(h, body, { secret: WHSEC, now: NOW }).ok, true);
    assert.equal(
      verifyWebhook(headersAt(NOW, 'evt_1', body, old), body, { secret: [WHSEC, old], now: NOW }).ok,
      true,
    );
  });

  test('missing or malformed headers are refused, never thrown', () => {
    const h = headersAt(NOW);
    const opts = { secret: WHSEC, now: NOW };
    assert.deepEqual(verifyWebhook({ 'webhook-id': 'evt_1' }, body, opts), { ok: false, reason: 'missing' });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-timestamp': '1e9' }, body, opts), {
      ok: false,
      reason: 'malformed',
    });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-id': 'a.b' }, body, opts), {
      ok: false,
      reason: 'malformed',
    });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-signature': 'v1,short' }, body, opts), {
      ok: false,
      reason: 'malformed',
    });
    assert.deepEqual(verifyWebhook({ ...h, 'webhook-id': ['a', 'b'] }, body, opts), {
      ok: false,
      reason: 'malformed',
    });
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (id, ts, sig) => {
        const r = verifyWebhook(
          { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig },
          body,
          opts,
        );
        return r.ok === false;
      }),
    );
  });

  test('a short or malformed secret is a TypeError at the call, never a verdict', () => {
    const short = `whsec_${randomBytes(16).toString('base64')}`;
    assert.throws(() => signWebhook(short, { id: 'e', timestamp: NOW, body }), TypeError);
    assert.throws(() => verifyWebhook(headersAt(NOW), body, { secret: 'whsec_' }), TypeError);
    assert.throws(() => verifyWebhook(headersAt(NOW), body, { secret: 'whsec_not base64!' }), TypeError);
    assert.throws(() => verifyWebhook(headersAt(NOW), body, { secret: [] }), TypeError);
    assert.throws(() => signWebhook(WHSEC, { id: 'has.dot', timestamp: NOW, body }), TypeError);
  });

  test('generateWebhookSecret makes a whsec_ secret of 32 random bytes', () => {
    const s = generateWebhookSecret();
    assert.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(s.slice(6), 'base64').length, 32);
    assert.notEqual(generateWebhookSecret(), s);
  });
});
