// The leak guards' cost per request at each level (`npm run build && node bench/guards.mjs`; dist/,
// since tsx's transform adds a helper call per closure): the header
// scrub with the presented key's matcher, the URL key guard and the matcher's URL check, on typical
// header sets. Microseconds per call, median of 5 runs of 2 s; docs/security.md quotes it.
import { generateApiKey } from '../dist/auth/api-key.js';
import { DEFAULT_METHOD_OVERRIDE_PARAMS, DEFAULT_URL_KEY_PARAMS } from '../dist/config/schema.js';
import { createHeaderScrubber } from '../dist/guards/header-scrub.js';
import { createKeyMatcher } from '../dist/guards/key-material.js';
import { createUrlKeyGuard } from '../dist/guards/url-key-guard.js';

const key = generateApiKey('live');
const api = {
  host: 'gw.example.com',
  'x-api-key': key,
  'content-type': 'application/json',
  'content-length': '51',
  accept: 'application/json',
  'user-agent': 'notify-sdk/2.3.1 node/20.11.0',
  'x-request-id': 'f3b2c1d0-4e5f-6a7b-8c9d-0e1f2a3b4c5d',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};
const jwt = `eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.${Buffer.from(JSON.stringify({ sub: 'user-123', iat: 1700000000, scope: 'notify:send', aud: 'https://api.example.com' })).toString('base64url')}.${'s'.repeat(342)}`;
const browser = {
  ...api,
  authorization: `Bearer ${jwt}`,
  cookie: `session=${Buffer.from('x'.repeat(300)).toString('base64')}; _ga=GA1.2.1234567890.1700000000; theme=dark; csrftoken=${'a1'.repeat(32)}`,
  'accept-language': 'en-GB,en;q=0.9,de;q=0.8',
  'accept-encoding': 'gzip, deflate, br',
  referer: 'https://app.example.com/settings/notifications?tab=sms',
  origin: 'https://app.example.com',
};
const url = '/notify/v1/otps?channel=sms&template=login-code&locale=en-GB';
const names = {
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
  requestId: 'x-request-id',
};
const scrub = createHeaderScrubber(names);

function time(label, fn) {
  const runs = [];
  for (let r = 0; r < 5; r++) {
    let n = 0;
    const start = process.hrtime.bigint();
    const end = start + 2_000_000_000n;
    let now = start;
    while (now < end) {
      for (let i = 0; i < 200; i++) fn();
      n += 200;
      now = process.hrtime.bigint();
    }
    runs.push(Number(now - start) / 1000 / n);
  }
  runs.sort((a, b) => a - b);
  console.log(`${runs[2].toFixed(2).padStart(8)} µs  ${label}`);
}

for (const level of ['default', 'strict']) {
  const guard = createUrlKeyGuard({
    paramNames: DEFAULT_URL_KEY_PARAMS,
    overrideNames: DEFAULT_METHOD_OVERRIDE_PARAMS,
    maxParams: 256,
    maxPathSegments: 128,
    level,
  });
  time(`${level}: matcher built for the presented key`, () => createKeyMatcher(key, level));
  time(`${level}: URL key guard, a 61-character URL with a query`, () => guard(url));
  time(`${level}: presented key in that URL`, () => createKeyMatcher(key, level).holds(url));
  time(`${level}: header scrub, API client (8 headers)`, () =>
    scrub(api, false, createKeyMatcher(key, level)),
  );
  time(`${level}: header scrub, browser-like (14 headers, JWT, cookies)`, () =>
    scrub(browser, false, createKeyMatcher(key, level)),
  );
}
