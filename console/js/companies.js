// Companies: the list with a filter, and the form that creates one.
import { api } from './api.js';
import { badge, field, fill, h, select, table } from './dom.js';
import { announceAfterNavigation, showError } from './ui.js';
import { can } from './session.js';
import { settings } from './settings.js';

export const STATUSES = [
  ['active', 'active'],
  ['pending', 'pending'],
  ['suspended', 'suspended'],
];

/** A company's state as badges. */
export function companyBadges(c) {
  return [
    badge(c.status, c.status === 'active' ? 'ok' : c.status === 'suspended' ? 'bad' : 'warn'),
    c.apiAccess ? null : badge('API access off', 'bad'),
  ];
}

export async function renderCompanies(main) {
  const companies = await api('GET', '/admin/v1/companies');
  const filter = h('input', {
    type: 'search',
    name: 'filter',
    autocomplete: 'off',
    placeholder: 'id, name, tier',
  });
  const list = h('div', {});
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = companies.filter((c) =>
      [c.id, c.name ?? '', c.tier, c.status].some((v) => v.toLowerCase().includes(q)),
    );
    list.replaceChildren(
      table(
        `${shown.length} of ${companies.length} companies`,
        ['ID', 'Name', 'Tier', 'Status'],
        shown.map((c) => [
          h('a', { href: `#/companies/${encodeURIComponent(c.id)}` }, c.id),
          c.name ?? '',
          c.tier,
          companyBadges(c),
        ]),
        companies.length ? 'No company matches the filter.' : 'No companies yet.',
      ),
    );
  };
  filter.addEventListener('input', draw);
  draw();
  fill(
    main,
    h('h1', { tabIndex: -1 }, 'Companies'),
    h('div', { class: 'row' }, field('Filter companies', filter)),
    list,
    can('admin') ? createCompanyForm() : null,
  );
}

function createCompanyForm() {
  const id = h('input', {
    name: 'id',
    required: true,
    autocomplete: 'off',
    pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}',
  });
  const name = h('input', { name: 'name', autocomplete: 'off' });
  const tier = select(
    { name: 'tier' },
    settings.tiers.map((t) => [t, t]),
    settings.tiers.includes('free') ? 'free' : undefined,
  );
  const status = select({ name: 'status' }, STATUSES, 'active');
  const access = h('input', { type: 'checkbox', name: 'apiAccess', checked: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create company');
  const form = h(
    'form',
    {
      class: 'inline',
      'aria-labelledby': 'new-company',
      onsubmit: async (e) => {
        e.preventDefault();
        const body = {
          id: id.value.trim(),
          tier: tier.value,
          status: status.value,
          apiAccess: access.checked,
        };
        if (name.value.trim()) body.name = name.value.trim();
        submit.disabled = true;
        try {
          const c = await api('POST', '/admin/v1/companies', body);
          announceAfterNavigation(`Company ${c.id} created.`);
          location.hash = `#/companies/${encodeURIComponent(c.id)}`;
        } catch (err) {
          // Refused: the form stays as it was typed, ready to correct and send again.
          showError(err);
          id.focus();
        } finally {
          submit.disabled = false;
        }
      },
    },
    field('Company ID', id),
    field('Name', name),
    field('Tier', tier),
    field('Status', status),
    field('API access', access, 'field check'),
    submit,
  );
  return h('section', {}, h('h2', { id: 'new-company' }, 'New company'), form);
}
