// One company: its settings, its keys (create, rotate, revoke) and its usage.
import { api, seg } from './api.js';
import { companyBadges, STATUSES } from './companies.js';
import { confirmAction, modal, showNewKey } from './dialogs.js';
import { badge, field, fill, h, select, table, uid, when } from './dom.js';
import { companyLimits, keyLimits } from './limits.js';
import { can } from './session.js';
import { settings } from './settings.js';
import { announce, showError } from './ui.js';
import { usageSection } from './usage.js';

const WEEK_MS = 7 * 86_400_000;
export const GRACE_PRESETS = [
  ['0', 'None: the old key stops now'],
  ['3600', '1 hour'],
  ['86400', '24 hours'],
  ['604800', '7 days'],
];

export async function renderCompany(main, id) {
  const [company, keys] = await Promise.all([
    api('GET', `/admin/v1/companies/${seg(id)}`),
    api('GET', `/admin/v1/companies/${seg(id)}/keys`),
  ]);
  const refresh = () => renderCompany(main, id).catch(showError);
  fill(
    main,
    h('p', {}, h('a', { href: '#/companies' }, '← Companies')),
    h(
      'h1',
      { tabIndex: -1 },
      company.name ?? company.id,
      ' ',
      h('span', { class: 'muted mono' }, company.id),
    ),
    h('p', {}, companyBadges(company), badge(`tier ${company.tier}`)),
    companyLimits(company),
    can('admin') ? settingsForm(company, refresh) : null,
    keysSection(company, keys, refresh),
    usageSection(`/admin/v1/companies/${seg(company.id)}/usage`, company.id),
  );
}

function settingsForm(company, refresh) {
  const tiers = settings.tiers.includes(company.tier) ? settings.tiers : [company.tier, ...settings.tiers];
  const name = h('input', { name: 'name', value: company.name ?? '', autocomplete: 'off' });
  const tier = select(
    { name: 'tier' },
    tiers.map((t) => [t, t]),
    company.tier,
  );
  const status = select({ name: 'status' }, STATUSES, company.status);
  const access = h('input', { type: 'checkbox', name: 'apiAccess', checked: company.apiAccess });
  // A refused write shows the stored values again: the form never claims a change that did not happen.
  const restore = () => {
    name.value = company.name ?? '';
    tier.value = company.tier;
    status.value = company.status;
    access.checked = company.apiAccess;
  };
  const save = async (e) => {
    e.preventDefault();
    const patch = {};
    if (name.value.trim() && name.value.trim() !== (company.name ?? '')) patch.name = name.value.trim();
    if (tier.value !== company.tier) patch.tier = tier.value;
    if (status.value !== company.status) patch.status = status.value;
    if (access.checked !== company.apiAccess) patch.apiAccess = access.checked;
    if (Object.keys(patch).length === 0) return announce('Nothing changed.');
    const harm = [
      patch.status === 'suspended' ? 'suspend the company' : null,
      patch.apiAccess === false ? 'turn its API access off' : null,
    ].filter(Boolean);
    if (
      harm.length &&
      !(await confirmAction(
        `${harm.join(' and ')}?`.replace(/^./, (c) => c.toUpperCase()),
        `Every key of ${company.id} is refused (403) on every gateway within a second.`,
        harm.length === 2 ? 'Suspend and turn off' : patch.status ? 'Suspend' : 'Turn API access off',
      ))
    ) {
      return announce('Nothing changed.');
    }
    submit.disabled = true;
    try {
      await api('PATCH', `/admin/v1/companies/${seg(company.id)}`, patch);
      announce(`Saved: ${Object.keys(patch).join(', ')}.`);
      await refresh();
    } catch (err) {
      restore();
      showError(err);
    } finally {
      submit.disabled = false;
    }
  };
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Save changes');
  return h(
    'section',
    {},
    h('h2', { id: 'settings-h' }, 'Settings'),
    h(
      'form',
      { class: 'inline', 'aria-labelledby': 'settings-h', onsubmit: save },
      field('Name', name),
      field('Tier', tier),
      field('Status', status),
      field('API access', access, 'field check'),
      submit,
    ),
  );
}

/** The badges of a key: revoked or when it stops, expired, disabled, exposed, expiring soon, rotation due. */
export function keyBadges(k, now = Date.now()) {
  const out = [];
  if (k.status === 'revoked') out.push(badge('revoked', 'bad'));
  else if (k.status === 'revoking')
    out.push(badge(`stops working ${k.revokedAt.replace('T', ' ').replace(/Z$/, ' UTC')}`, 'warn'));
  else if (k.status === 'expired') out.push(badge('expired', 'bad'));
  else if (k.status === 'disabled') out.push(badge('disabled', 'bad'));
  else out.push(badge('active', 'ok'));
  if (k.exposedAt) out.push(badge('exposed', 'bad'));
  if (k.status === 'active' && k.expiresAt && Date.parse(k.expiresAt) - now < WEEK_MS) {
    out.push(badge('expires within 7 days', 'warn'));
  }
  if (k.rotationDue && k.status === 'active') out.push(badge('rotation due', 'warn'));
  return out;
}

function keysSection(company, keys, refresh) {
  const rows = keys.map((k) => {
    const name = `${k.prefix}${k.label ? ` (${k.label})` : ''}`;
    const actions =
      can('keys') && (k.status === 'active' || k.status === 'revoking')
        ? [
            k.status === 'active'
              ? h(
                  'button',
                  { type: 'button', 'aria-label': `Rotate key ${name}`, onclick: () => rotate(k, refresh) },
                  'Rotate',
                )
              : null,
            h(
              'button',
              { type: 'button', 'aria-label': `Revoke key ${name}`, onclick: () => revoke(k, refresh) },
              'Revoke',
            ),
          ]
        : [];
    return [
      h(
        'a',
        { href: `#/keys/${encodeURIComponent(k.id)}`, 'aria-label': `Key ${name}` },
        h('code', {}, k.prefix),
      ),
      k.label ?? '',
      k.environment ?? '',
      when(k.createdAt),
      when(k.lastUsedAt),
      when(k.expiresAt),
      keyBadges(k),
      keyLimits(k, company),
      actions,
    ];
  });
  return h(
    'section',
    {},
    h('h2', {}, 'API keys'),
    can('keys')
      ? h(
          'p',
          {},
          h(
            'button',
            { type: 'button', class: 'primary', onclick: () => createKey(company, refresh) },
            'Create key',
          ),
        )
      : null,
    table(
      `Keys of ${company.id} (the key itself is shown only once, when it is created)`,
      [
        'Prefix',
        'Label',
        'Environment',
        'Created',
        'Last used',
        'Expires',
        'State',
        'Limits and scopes',
        'Actions',
      ],
      rows,
      'No keys yet.',
    ),
  );
}

async function createKey(company, refresh) {
  const label = h('input', { name: 'label', autocomplete: 'off' });
  const env = select(
    { name: 'environment' },
    [
      ['live', 'live'],
      ['test', 'test'],
    ],
    'live',
  );
  const expires = h('input', { type: 'date', name: 'expiresAt' });
  let created = null;
  const ok = await modal({
    title: `New key for ${company.id}`,
    content: [
      field('Label', label),
      field('Environment', env),
      field('Expires on (optional, UTC midnight)', expires),
    ],
    buttons: [
      { label: 'Cancel', value: false },
      {
        label: 'Create key',
        value: true,
        kind: 'primary',
        onClick: async (fail) => {
          const body = { environment: env.value };
          if (label.value.trim()) body.label = label.value.trim();
          if (expires.value) body.expiresAt = `${expires.value}T00:00:00Z`;
          try {
            created = await api('POST', `/admin/v1/companies/${seg(company.id)}/keys`, body);
            return true;
          } catch (err) {
            fail(err);
            return false;
          }
        },
      },
    ],
    cancelValue: false,
    initialFocus: () => label,
  });
  if (!ok || !created) return;
  await showNewKey(created);
  announce(`Key ${created.prefix} created.`);
  await refresh();
}

async function rotate(k, refresh) {
  const name = `grace-${uid()}`;
  const radios = GRACE_PRESETS.map(([v, text]) => {
    const input = h('input', { type: 'radio', name, value: v, checked: v === '86400' });
    return field(text, input, 'field check');
  });
  const label = h('input', { name: 'label', autocomplete: 'off', value: k.label ?? '' });
  let rotated = null;
  const ok = await modal({
    title: `Rotate key ${k.prefix}`,
    content: [
      h('p', {}, 'A new key replaces this one. How long may the old key keep working?'),
      h('fieldset', {}, h('legend', {}, 'Grace period for the old key'), radios),
      field('Label of the new key', label),
    ],
    buttons: [
      { label: 'Cancel', value: false },
      {
        label: 'Rotate',
        value: true,
        kind: 'primary',
        onClick: async (fail) => {
          const grace = Number(document.querySelector(`input[name="${name}"]:checked`)?.value ?? '86400');
          const body = { gracePeriodSeconds: grace };
          if (label.value.trim()) body.label = label.value.trim();
          try {
            rotated = await api('POST', `/admin/v1/keys/${seg(k.id)}/rotate`, body);
            return true;
          } catch (err) {
            fail(err);
            return false;
          }
        },
      },
    ],
    cancelValue: false,
    initialFocus: (d) => d.querySelector('input:checked'),
  });
  if (!ok || !rotated) return;
  const stops = rotated.oldKeyRevokesAt
    ? `The old key ${k.prefix} stops working at ${rotated.oldKeyRevokesAt.replace('T', ' ').replace(/Z$/, ' UTC')}.`
    : `The old key ${k.prefix} keeps working until it is revoked.`;
  await showNewKey(rotated, [h('p', {}, stops)]);
  announce(`Key ${k.prefix} rotated. ${stops}`);
  await refresh();
}

async function revoke(k, refresh) {
  const name = `${k.prefix}${k.label ? ` (${k.label})` : ''}`;
  const yes = await confirmAction(
    `Revoke key ${name}?`,
    `Requests with key ${name} are refused on every gateway within a second. This cannot be undone.`,
    'Revoke key',
  );
  if (!yes) return announce('Nothing changed.');
  try {
    await api('DELETE', `/admin/v1/keys/${seg(k.id)}`);
    announce(`Key ${name} revoked.`);
    await refresh();
  } catch (err) {
    showError(err);
  }
}
