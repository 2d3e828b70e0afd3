// Keys across companies: find one by its display prefix (a support person has the prefix from a
// customer or a log line, never the key), and one key's page with its limits and usage.
import { api, seg } from './api.js';
import { keyBadges } from './company.js';
import { field, fill, h, table, when } from './dom.js';
import { keyLimits } from './limits.js';
import { usageSection } from './usage.js';

/** The start of a display prefix, as the admin API takes it (src/admin/service.ts `findKeys`). */
const PREFIX_START =
  /^(?:n|nk|nk_[a-z0-9]{0,16}|nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{0,6}|(?!nk_)[\x21-\x2b\x2d-\x7e]{1,4})$/;

export async function renderKeySearch(main, params) {
  const prefix = params.get('prefix') ?? '';
  const input = h('input', {
    type: 'search',
    name: 'prefix',
    autocomplete: 'off',
    spellcheck: false,
    value: prefix,
    placeholder: 'nk_live_AbC123',
  });
  // A refusal below marks the field invalid; the next keystroke clears it (else no submit fires).
  input.addEventListener('input', () => input.setCustomValidity(''));
  const search = (e) => {
    e.preventDefault();
    const v = input.value.trim();
    // A whole key pasted here would go into the URL and the admin API's query: refuse it here.
    if (v && !PREFIX_START.test(v)) {
      input.value = '';
      input.setCustomValidity(
        'That is not a display prefix: enter nk_, the environment, _ and at most 6 characters (nk_live_AbC123), never the key.',
      );
      input.reportValidity();
      return;
    }
    input.setCustomValidity('');
    location.hash = `#/keys${v ? `?${new URLSearchParams({ prefix: v })}` : ''}`;
  };
  const results = prefix ? await api('GET', `/admin/v1/keys?${new URLSearchParams({ prefix })}`) : null;
  fill(
    main,
    h('h1', { tabIndex: -1 }, 'Find a key'),
    h(
      'form',
      { class: 'inline', role: 'search', 'aria-label': 'Find a key by prefix', onsubmit: search },
      field('Display prefix (or its start)', input),
      h('button', { type: 'submit', class: 'primary' }, 'Find'),
    ),
    h(
      'p',
      { class: 'muted' },
      'Searches every company. The prefix is the start of a key that the admin API and the logs show; never paste a whole key.',
    ),
    results === null
      ? null
      : table(
          `${results.length} ${results.length === 1 ? 'key' : 'keys'} whose prefix starts with ${prefix}${results.length === 50 ? ' (the first 50)' : ''}`,
          ['Prefix', 'Company', 'Label', 'Environment', 'Created', 'Last used', 'State'],
          results.map((k) => [
            h('a', { href: `#/keys/${encodeURIComponent(k.id)}` }, h('code', {}, k.prefix)),
            h('a', { href: `#/companies/${encodeURIComponent(k.companyId)}` }, k.companyId),
            k.label ?? '',
            k.environment ?? '',
            when(k.createdAt),
            when(k.lastUsedAt),
            keyBadges(k),
          ]),
          `No key's prefix starts with ${prefix}.`,
        ),
  );
}

export async function renderKey(main, id) {
  const k = await api('GET', `/admin/v1/keys/${seg(id)}`);
  const company = await api('GET', `/admin/v1/companies/${seg(k.companyId)}`);
  main.replaceChildren(
    h(
      'p',
      {},
      h('a', { href: `#/companies/${encodeURIComponent(k.companyId)}` }, `← ${company.name ?? company.id}`),
    ),
    h('h1', { tabIndex: -1 }, 'Key ', h('code', {}, k.prefix), k.label ? ` (${k.label})` : ''),
    h('p', {}, keyBadges(k)),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Company'),
      h('dd', {}, h('a', { href: `#/companies/${encodeURIComponent(k.companyId)}` }, k.companyId)),
      h('dt', {}, 'Environment'),
      h('dd', {}, k.environment ?? '—'),
      h('dt', {}, 'Created'),
      h('dd', {}, when(k.createdAt)),
      h('dt', {}, 'Last used'),
      h('dd', {}, when(k.lastUsedAt)),
      h('dt', {}, 'Expires'),
      h('dd', {}, when(k.expiresAt)),
      h('dt', {}, 'Limits and scopes'),
      h('dd', {}, keyLimits(k, company)),
    ),
    usageSection(`/admin/v1/keys/${seg(k.id)}/usage`, `key ${k.prefix}`),
  );
}
