// The console's entry point: login, then a hash router over the views. The first screen (sign-in,
// or the companies' heading without a token) is in index.html, so it shows before this runs.
import { ApiError, hasToken, setToken } from './api.js';
import { renderAudit } from './audit.js';
import { renderCompanies } from './companies.js';
import { renderCompany } from './company.js';
import { h } from './dom.js';
import { renderKey, renderKeySearch } from './keys.js';
import { renderRegistrations } from './registrations.js';
import { loadIdentity, session } from './session.js';
import { loadSettings } from './settings.js';
import { clearMessages, showError } from './ui.js';
import { renderUpstreams } from './upstreams.js';
import { renderWebhooks } from './webhooks.js';

const main = document.getElementById('main');
// The static sign-in screen, kept to show again after a log out or a refused token.
const signin = document.getElementById('first-signin');
const tokenInput = document.getElementById('login-token');
let signedIn = false;

function setSignedIn(value) {
  signedIn = value;
  document.getElementById('logout').hidden = !value || !hasToken();
  const who = session.identity;
  document.getElementById('mode').textContent = !value
    ? ''
    : hasToken()
      ? `${who.name} (${who.role} role)`
      : 'loopback, no token';
}

function renderLogin() {
  main.replaceChildren(signin);
  tokenInput.focus();
}

async function signIn(e) {
  e.preventDefault();
  setToken(tokenInput.value.trim());
  tokenInput.value = '';
  try {
    if (await loadIdentity()) {
      clearMessages();
      setSignedIn(true);
      return route();
    }
    setToken(null);
    showError(new ApiError(401, 'Unauthorized', 'Missing or invalid admin token'));
  } catch (err) {
    setToken(null);
    showError(err);
  }
  tokenInput.focus();
}

/** The heading of a route, shown at once while its data loads. */
function headingOf(path) {
  if (path === '/audit') return 'Audit trail';
  if (path === '/webhooks') return 'Webhook deliveries';
  if (path === '/upstreams') return 'Upstreams';
  if (path === '/registrations') return 'Registrations';
  if (path.startsWith('/keys')) return path === '/keys' ? 'Find a key' : 'Key';
  return path.startsWith('/companies/') ? 'Company' : 'Companies';
}

async function route() {
  if (!signedIn) return renderLogin();
  const [path, query = ''] = (location.hash || '#/companies').slice(1).split('?');
  const params = new URLSearchParams(query);
  const m = /^\/companies\/([^/]+)$/.exec(path);
  const key = /^\/keys\/([^/]+)$/.exec(path);
  try {
    if (m) await renderCompany(main, decodeURIComponent(m[1]));
    else if (key) await renderKey(main, decodeURIComponent(key[1]));
    else if (path === '/keys') await renderKeySearch(main, params);
    else if (path === '/audit') await renderAudit(main, params);
    else if (path === '/webhooks') await renderWebhooks(main, params);
    else if (path === '/upstreams') await renderUpstreams(main);
    else if (path === '/registrations') await renderRegistrations(main);
    else await renderCompanies(main);
    main.querySelector('h1')?.focus({ preventScroll: true });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setToken(null);
      setSignedIn(false);
      renderLogin();
    } else {
      main.replaceChildren(
        h('h1', { tabIndex: -1 }, 'Could not load this page'),
        h('p', {}, h('a', { href: '#/companies' }, 'Back to the companies')),
      );
    }
    showError(err);
  }
}

async function start() {
  document.getElementById('login-form').addEventListener('submit', (e) => void signIn(e));
  document.getElementById('login-submit').disabled = false;
  // With a token kept from before (a reload), the page's heading shows at once, not the sign-in.
  if (hasToken()) {
    const path = (location.hash || '#/companies').slice(1).split('?')[0];
    main.replaceChildren(h('h1', { tabIndex: -1 }, headingOf(path)), h('p', { class: 'muted' }, 'Loading…'));
  }
  document.getElementById('logout').addEventListener('click', () => {
    setToken(null);
    setSignedIn(false);
    clearMessages();
    renderLogin();
  });
  window.addEventListener('hashchange', () => {
    clearMessages();
    void route();
  });
  try {
    // Both at once: the first screen waits for one round trip, not two.
    const [, known] = await Promise.all([loadSettings(), loadIdentity()]);
    setSignedIn(known);
    if (!signedIn && hasToken()) setToken(null);
  } catch (err) {
    showError(err);
  }
  await route();
}

void start();
