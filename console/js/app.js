// The console's entry point: login, then a hash router over the views.
import { api, ApiError, hasToken, setToken } from './api.js';
import { renderAudit } from './audit.js';
import { renderCompanies } from './companies.js';
import { renderCompany } from './company.js';
import { field, h } from './dom.js';
import { loadSettings } from './settings.js';
import { clearMessages, showError } from './ui.js';

const main = document.getElementById('main');
let signedIn = false;

/** Whether the admin API answers with the token held (or without one, in tokenless mode). */
async function probe() {
  try {
    await api('GET', '/admin/v1/companies');
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return false;
    throw err;
  }
}

function setSignedIn(value) {
  signedIn = value;
  document.getElementById('nav').hidden = !value;
  document.getElementById('logout').hidden = !value || !hasToken();
  document.getElementById('mode').textContent = value && !hasToken() ? 'loopback, no token' : '';
}

function renderLogin() {
  const token = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true });
  const form = h(
    'form',
    {
      'aria-labelledby': 'login-h',
      onsubmit: async (e) => {
        e.preventDefault();
        setToken(token.value.trim());
        token.value = '';
        try {
          if (await probe()) {
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
        token.focus();
      },
    },
    h('p', {}, 'Enter the admin token (ADMIN_TOKEN). It is kept for this browser tab only.'),
    h(
      'div',
      { class: 'row' },
      field('Admin token', token),
      h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    ),
  );
  main.replaceChildren(h('h1', { id: 'login-h', tabIndex: -1 }, 'Sign in'), form);
  token.focus();
}

async function route() {
  if (!signedIn) return renderLogin();
  const [path, query = ''] = (location.hash || '#/companies').slice(1).split('?');
  const params = new URLSearchParams(query);
  const m = /^\/companies\/([^/]+)$/.exec(path);
  try {
    if (m) await renderCompany(main, decodeURIComponent(m[1]));
    else if (path === '/audit') await renderAudit(main, params);
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
    await loadSettings();
    setSignedIn(await probe());
    if (!signedIn && hasToken()) setToken(null);
  } catch (err) {
    showError(err);
  }
  await route();
}

void start();
