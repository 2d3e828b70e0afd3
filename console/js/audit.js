// The audit trail, newest first, filtered by company (by the API) and event (here).
import { api } from './api.js';
import { field, h, select, table, when } from './dom.js';

export const EVENTS = [
  'company.created',
  'company.updated',
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.exposed',
];

export async function renderAudit(main, params) {
  const companyId = params.get('company') ?? '';
  const event = params.get('event') ?? '';
  const q = new URLSearchParams({ limit: '500' });
  if (companyId) q.set('companyId', companyId);
  const [entries, companies] = await Promise.all([
    api('GET', `/admin/v1/audit?${q}`),
    api('GET', '/admin/v1/companies'),
  ]);
  const company = select(
    { name: 'company' },
    [['', 'All companies'], ...companies.map((c) => [c.id, c.name ? `${c.id} (${c.name})` : c.id])],
    companyId,
  );
  const ev = select({ name: 'event' }, [['', 'All events'], ...EVENTS.map((e) => [e, e])], event);
  const apply = (e) => {
    e?.preventDefault();
    const p = new URLSearchParams();
    if (company.value) p.set('company', company.value);
    if (ev.value) p.set('event', ev.value);
    location.hash = `#/audit${p.size ? `?${p}` : ''}`;
  };
  company.addEventListener('change', apply);
  ev.addEventListener('change', apply);
  const shown = entries.filter((e) => !event || e.event === event);
  main.replaceChildren(
    h('h1', { tabIndex: -1 }, 'Audit trail'),
    h(
      'form',
      { class: 'inline', 'aria-label': 'Audit filters', onsubmit: apply },
      field('Company', company),
      field('Event', ev),
      h('button', { type: 'submit' }, 'Apply filters'),
    ),
    table(
      `${shown.length} ${shown.length === 1 ? 'entry' : 'entries'}, newest first`,
      ['Time', 'Event', 'Company', 'Key', 'Actor', 'Details'],
      shown.map((e) => [
        when(e.at),
        e.event,
        e.companyId ?? '',
        e.keyPrefix ? h('code', {}, e.keyPrefix) : '',
        e.actor ?? '',
        e.details ? h('code', {}, JSON.stringify(e.details)) : '',
      ]),
      'No audit entries match.',
    ),
  );
}
