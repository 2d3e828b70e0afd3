// The company dashboard: sign-in by a mailed code, then Settings → API Keys, usage, members and
// activity of the member's own company. Every text goes in as text (shared/dom.js): nothing the API
// returns is parsed as HTML.
import { api, ApiError, seg } from './api.js';
import { badge, field, fill, h, select, table, when } from '../shared/dom.js';
import { barChart } from '../shared/chart.js';

const main = document.getElementById('main');
const errorBox = document.getElementById('error');
const statusBox = document.getElementById('status');
const nav = document.getElementById('nav');
const whoBox = document.getElementById('who');
const signOutButton = document.getElementById('sign-out');
const WEEK_MS = 7 * 86_400_000;
let me = null;

function showError(err) {
  errorBox.textContent =
    err instanceof ApiError ? `${err.error}: ${err.details}` : String(err?.message ?? err);
}
function announce(text) {
  statusBox.textContent = text;
}
function clearMessages() {
  errorBox.textContent = '';
  statusBox.textContent = '';
}

/** A screen: heading first (focused, for keyboard and screen-reader users), then its parts. */
function screen(title, ...parts) {
  const heading = h('h1', { tabindex: '-1' }, title);
  fill(main, heading, ...parts);
  heading.focus();
}

/** A form whose submit runs `action`; errors show in the alert region, the form stays usable. */
function form(label, children, action) {
  return h(
    'form',
    {
      'aria-label': label,
      onsubmit: async (e) => {
        e.preventDefault();
        clearMessages();
        try {
          await action(new FormData(e.target));
        } catch (err) {
          showError(err);
        }
      },
    },
    children,
  );
}

// ---- signed out

async function renderSignIn() {
  const settings = await api('GET', 'settings');
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true });
  const codeStep = h('div');
  screen(
    'Sign in',
    h('p', {}, 'Enter the address you registered with. We mail you a 6-digit code; no password needed.'),
    form(
      'Ask for a code',
      [
        h(
          'div',
          { class: 'row' },
          field('E-mail address', email),
          h('button', { type: 'submit', class: 'primary' }, 'Send code'),
        ),
      ],
      async (data) => {
        const r = await api('POST', 'sign-in/code', { email: data.get('email') });
        announce(r.message);
        showCodeStep(codeStep, String(data.get('email')));
      },
    ),
    codeStep,
    settings.registration === 'open'
      ? h('p', {}, 'New here? ', h('a', { href: '#/register' }, 'Register your company'))
      : h('p', { class: 'muted' }, 'Registration is by invitation: ask the operator.'),
  );
}

function showCodeStep(box, email) {
  const code = h('input', {
    name: 'code',
    inputMode: 'numeric',
    autocomplete: 'one-time-code',
    pattern: '[0-9]{6}',
    maxLength: 6,
    required: true,
    class: 'code-input',
  });
  fill(
    box,
    form(
      'Sign in with the code',
      [
        h(
          'div',
          { class: 'row' },
          field('Code from the mail', code),
          h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
        ),
      ],
      async (data) => {
        await api('POST', 'sign-in', { email, code: data.get('code') });
        await start('#/keys');
      },
    ),
  );
  code.focus();
}

function renderRegister() {
  const name = h('input', {
    name: 'companyName',
    autocomplete: 'organization',
    required: true,
    maxLength: 200,
  });
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true });
  screen(
    'Register your company',
    h(
      'p',
      {},
      'An operator reviews each registration. The contact address gets a mail when the company is approved; then sign in with it.',
    ),
    form(
      'Register',
      [
        field('Company name', name),
        field('Contact e-mail', email),
        h('button', { type: 'submit', class: 'primary' }, 'Register'),
      ],
      async (data) => {
        const r = await api('POST', 'register', {
          companyName: data.get('companyName'),
          email: data.get('email'),
        });
        fill(
          main,
          h('h1', { tabindex: '-1' }, 'Registration received'),
          h('p', {}, r.message),
          h('p', {}, h('a', { href: '#/sign-in' }, 'Back to sign-in')),
        );
        main.querySelector('h1').focus();
      },
    ),
  );
}

// ---- signed in: Settings → API Keys

function keyBadges(k, now = Date.now()) {
  const out = [];
  if (k.status === 'revoked') out.push(badge('revoked', 'bad'));
  else if (k.status === 'revoking')
    out.push(badge(`stops working ${k.revokedAt.replace('T', ' ').replace(/Z$/, ' UTC')}`, 'warn'));
  else if (k.status === 'expired') out.push(badge('expired', 'bad'));
  else if (k.status === 'disabled') out.push(badge('disabled', 'bad'));
  else out.push(badge('active', 'ok'));
  if (k.exposedAt) out.push(badge('exposed', 'bad'));
  if (k.status === 'active' && k.expiresAt && Date.parse(k.expiresAt) - now < WEEK_MS)
    out.push(badge('expires within 7 days', 'warn'));
  if (k.rotationDue && k.status === 'active') out.push(badge('rotation due', 'warn'));
  return out;
}

const keyName = (k) => `${k.prefix}${k.label ? ` (${k.label})` : ''}`;

async function renderKeys(newKeyPanel) {
  const keys = await api('GET', 'keys');
  const label = h('input', { name: 'label', maxLength: 200, required: true });
  const env = select(
    { name: 'environment' },
    [
      ['live', 'live'],
      ['test', 'test'],
    ],
    'live',
  );
  // A key on its way out (rotated, `revoking`) no longer counts against the cap.
  const active = keys.filter((k) => k.status === 'active').length;
  const cap = me.policy.maxActiveKeys;
  screen(
    'Settings → API Keys',
    h(
      'p',
      { class: 'policy muted' },
      `Keep at most ${cap || 'a few'} active keys (a primary and a backup), one per environment and service. Rotate every ${me.policy.rotationAgeDays} days: generate the new key, deploy it, then the old one stops at the end of its grace period. Revoke a compromised key at once.`,
    ),
    newKeyPanel ?? null,
    h('h2', {}, 'Generate a key'),
    form(
      'Generate a key',
      [
        h(
          'div',
          { class: 'row' },
          field('Label', label),
          field('Environment', env),
          h('button', { type: 'submit', class: 'primary' }, 'Generate key'),
        ),
      ],
      async (data) => {
        const k = await api('POST', 'keys', {
          label: data.get('label'),
          environment: data.get('environment'),
        });
        await renderKeys(shownOnce(k, 'Your new key'));
      },
    ),
    h('h2', {}, `Keys (${active} active${cap ? ` of ${cap}` : ''})`),
    table(
      'Keys of your company',
      ['Prefix', 'Label', 'Environment', 'Created', 'Last used', 'Expires', 'State', 'Actions'],
      keys.map((k) => [
        h('code', {}, k.prefix),
        k.label ?? '—',
        k.environment ?? '—',
        when(k.createdAt),
        when(k.lastUsedAt),
        when(k.expiresAt),
        keyBadges(k),
        keyActions(k),
      ]),
      'No keys yet: generate one above.',
    ),
  );
  newKeyPanel?.querySelector('input')?.focus();
}

function keyActions(k) {
  if (k.status !== 'active' && k.status !== 'revoking') return '';
  return [
    k.status === 'active' && !k.rotatedTo
      ? h(
          'button',
          { type: 'button', 'aria-label': `Rotate key ${keyName(k)}`, onclick: () => rotate(k) },
          'Rotate',
        )
      : null,
    h(
      'button',
      { type: 'button', class: 'danger', 'aria-label': `Revoke key ${keyName(k)}`, onclick: () => revoke(k) },
      'Revoke',
    ),
  ];
}

/** The plaintext key, once: Copy, and "I have stored it" to put it away. */
function shownOnce(k, title, extra) {
  const value = h('input', { class: 'key-value', readOnly: true, value: k.key, 'aria-label': 'The new key' });
  const panel = h(
    'section',
    { class: 'panel new-key', 'aria-label': title },
    h('h2', {}, title),
    h(
      'p',
      {},
      'This is the only time the key is shown. Store it in your secret manager now; it cannot be shown again.',
    ),
    extra ?? null,
    value,
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(k.key);
              announce('Key copied to the clipboard.');
            } catch {
              value.select();
              announce('Copy was refused by the browser: the key is selected, press Ctrl+C.');
            }
          },
        },
        'Copy',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'primary',
          onclick: () => {
            panel.remove();
            announce('The key is no longer shown.');
          },
        },
        'I have stored it',
      ),
    ),
  );
  return panel;
}

function dialog(title, content, confirmLabel, danger) {
  return new Promise((resolve) => {
    const d = h('dialog', { 'aria-label': title });
    const ok = h(
      'button',
      {
        type: 'button',
        class: danger ? 'danger' : 'primary',
        onclick: () => {
          d.close();
          resolve(true);
        },
      },
      confirmLabel,
    );
    const cancel = h(
      'button',
      {
        type: 'button',
        onclick: () => {
          d.close();
          resolve(false);
        },
      },
      'Cancel',
    );
    d.addEventListener('cancel', () => resolve(false));
    d.addEventListener('close', () => d.remove());
    d.append(h('h2', {}, title), ...content, h('div', { class: 'actions' }, ok, cancel));
    document.body.append(d);
    d.showModal();
    cancel.focus();
  });
}

async function revoke(k) {
  clearMessages();
  const yes = await dialog(
    `Revoke key ${keyName(k)}?`,
    [
      h(
        'p',
        {},
        `Requests with ${k.prefix}… get 401 at once, on every gateway instance. This cannot be undone.`,
      ),
    ],
    `Revoke ${k.prefix}`,
    true,
  );
  if (!yes) return;
  try {
    await api('DELETE', `keys/${seg(k.id)}`);
    await renderKeys();
    announce(`Key ${k.prefix} revoked.`);
  } catch (err) {
    showError(err);
  }
}

async function rotate(k) {
  clearMessages();
  const grace = select(
    { name: 'grace' },
    [
      ['86400', '1 day'],
      ['604800', '7 days'],
      ['2592000', '30 days'],
      ['0', 'no grace: stop now'],
    ],
    '604800',
  );
  const yes = await dialog(
    `Rotate key ${keyName(k)}?`,
    [
      h(
        'p',
        {},
        'A new key is generated. The old key keeps working for the grace period, while you deploy the new one.',
      ),
      field('Grace period for the old key', grace),
    ],
    'Rotate',
  );
  if (!yes) return;
  try {
    const r = await api('POST', `keys/${seg(k.id)}/rotate`, { gracePeriodSeconds: Number(grace.value) });
    const stops = h('p', {}, `The old key ${k.prefix} stops working at `, when(r.oldKeyRevokesAt), '.');
    await renderKeys(shownOnce(r, 'Your new key (rotation)', stops));
  } catch (err) {
    showError(err);
  }
}

// ---- usage, members, activity

async function renderUsage() {
  const u = await api('GET', 'usage');
  const series = [
    ['allowed', 'allowed', 'bar-allowed'],
    ['rateLimited', 'rate-limited (429)', 'bar-limited'],
  ];
  screen(
    'Usage',
    h('p', { class: 'muted' }, 'Requests per day over the last 30 days, UTC.'),
    h(
      'figure',
      { class: 'usage-chart' },
      barChart(u.buckets, series, 'Requests per day: allowed and rate-limited (429)'),
      h(
        'figcaption',
        { class: 'legend' },
        h('span', { class: 'swatch bar-allowed' }),
        ' allowed ',
        h('span', { class: 'swatch bar-limited' }),
        ' rate-limited (429)',
      ),
    ),
    table(
      'Requests per day',
      ['Day', 'Allowed', 'Rate-limited (429)', 'Refused'],
      u.buckets
        .filter((b) => b.allowed + b.rateLimited + b.refused > 0)
        .map((b) => [b.start.slice(0, 10), String(b.allowed), String(b.rateLimited), String(b.refused)]),
      'No requests in the last 30 days.',
    ),
  );
}

async function renderMembers() {
  const members = await api('GET', 'members');
  const owner = me.role === 'owner';
  const email = h('input', { type: 'email', name: 'email', required: true });
  const role = select(
    { name: 'role' },
    [
      ['developer', 'developer (keys)'],
      ['owner', 'owner (members, keys)'],
    ],
    'developer',
  );
  screen(
    'Members',
    table(
      'Members of your company',
      ['Address', 'Role', 'Added', 'Actions'],
      members.map((m) => [
        m.email,
        m.role,
        when(m.createdAt),
        owner && m.email !== me.email
          ? h(
              'button',
              {
                type: 'button',
                class: 'danger',
                'aria-label': `Remove ${m.email}`,
                onclick: () => removeMember(m),
              },
              'Remove',
            )
          : '',
      ]),
    ),
    owner
      ? [
          h('h2', {}, 'Invite a member'),
          form(
            'Invite a member',
            [
              h(
                'div',
                { class: 'row' },
                field('E-mail address', email),
                field('Role', role),
                h('button', { type: 'submit', class: 'primary' }, 'Invite'),
              ),
            ],
            async (data) => {
              await api('POST', 'members', { email: data.get('email'), role: data.get('role') });
              await renderMembers();
              announce('Member invited; they get a mail.');
            },
          ),
        ]
      : h('p', { class: 'muted' }, 'Only owners invite and remove members.'),
  );
}

async function removeMember(m) {
  clearMessages();
  if (
    !(await dialog(
      `Remove ${m.email}?`,
      [h('p', {}, 'Their sessions end at once.')],
      `Remove ${m.email}`,
      true,
    ))
  )
    return;
  try {
    await api('DELETE', `members/${seg(m.email)}`);
    await renderMembers();
    announce(`${m.email} removed.`);
  } catch (err) {
    showError(err);
  }
}

async function renderActivity() {
  const entries = await api('GET', 'activity');
  screen(
    'Activity',
    table(
      'What happened in your company, newest first',
      ['When', 'What', 'Who', 'Key'],
      entries.map((e) => [
        when(e.at),
        e.event,
        e.actor ?? '—',
        e.keyPrefix ? h('code', {}, e.keyPrefix) : '—',
      ]),
      'Nothing yet.',
    ),
  );
}

// ---- routing

const SCREENS = {
  '#/keys': () => renderKeys(),
  '#/usage': renderUsage,
  '#/members': renderMembers,
  '#/activity': renderActivity,
};

async function route() {
  clearMessages();
  try {
    if (!me) return location.hash === '#/register' ? renderRegister() : renderSignIn();
    await (SCREENS[location.hash] ?? SCREENS['#/keys'])();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return signedOut();
    showError(err);
  }
}

async function start(hash) {
  try {
    me = await api('GET', 'me');
  } catch {
    me = null;
  }
  nav.hidden = !me;
  signOutButton.hidden = !me;
  whoBox.textContent = me ? `${me.companyName} · ${me.email} (${me.role})` : '';
  if (hash && location.hash !== hash) location.hash = hash;
  else await route();
}

async function signedOut() {
  me = null;
  await start('#/sign-in');
  announce('Your session has ended; sign in again.');
}

signOutButton.addEventListener('click', async () => {
  await api('POST', 'sign-out').catch(() => undefined);
  me = null;
  await start('#/sign-in');
});
window.addEventListener('hashchange', () => void route());
void start();
