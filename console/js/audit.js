// The audit trail, newest first, a page at a time: filters by company, event and time range (all
// applied by the admin API), older and newer pages by entry id (`before`, `after`).
import { api } from './api.js';
import { field, h, select, table, when } from './dom.js';
import { settings } from './settings.js';

const PAGE = 50;

/** The filters of the view, as the hash carries them. */
const FILTERS = ['company', 'event', 'from', 'to'];

export async function renderAudit(main, params) {
  const companyId = params.get('company') ?? '';
  const event = params.get('event') ?? '';
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (companyId) q.set('companyId', companyId);
  if (event) q.set('event', event);
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  const after = params.get('after');
  const before = params.get('before');
  if (after) q.set('after', after);
  else if (before) q.set('before', before);
  const [page, companies] = await Promise.all([
    api('GET', `/admin/v1/audit?${q}`),
    api('GET', '/admin/v1/companies'),
  ]);
  // `after` answers oldest first: the page before this one, shown newest first like the others.
  const entries = after ? page.reverse() : page;
  const company = select(
    { name: 'company' },
    [['', 'All companies'], ...companies.map((c) => [c.id, c.name ? `${c.id} (${c.name})` : c.id])],
    companyId,
  );
  const events = settings.auditEvents ?? [];
  const ev = select({ name: 'event' }, [['', 'All events'], ...events.map((e) => [e, e])], event);
  const fromIn = h('input', { type: 'date', name: 'from', value: from });
  const toIn = h('input', { type: 'date', name: 'to', value: to });
  const go = (extra = {}) => {
    const p = new URLSearchParams();
    const values = { company: company.value, event: ev.value, from: fromIn.value, to: toIn.value };
    for (const k of FILTERS) if (values[k]) p.set(k, values[k]);
    for (const [k, v] of Object.entries(extra)) p.set(k, v);
    location.hash = `#/audit${p.size ? `?${p}` : ''}`;
  };
  const apply = (e) => {
    e?.preventDefault();
    go();
  };
  company.addEventListener('change', apply);
  ev.addEventListener('change', apply);
  const paging = h(
    'nav',
    { 'aria-label': 'Audit pages', class: 'row' },
    before || after
      ? h(
          'button',
          { type: 'button', onclick: () => (entries.length ? go({ after: entries[0].id }) : go()) },
          'Newer entries',
        )
      : null,
    before || after ? h('button', { type: 'button', onclick: () => go() }, 'Newest') : null,
    entries.length === PAGE || (after && entries.length)
      ? h('button', { type: 'button', onclick: () => go({ before: entries.at(-1).id }) }, 'Older entries')
      : null,
  );
  main.replaceChildren(
    h('h1', { tabIndex: -1 }, 'Audit trail'),
    h(
      'form',
      { class: 'inline', 'aria-label': 'Audit filters', onsubmit: apply },
      field('Company', company),
      field('Event', ev),
      field('From (UTC date)', fromIn),
      field('Until (UTC date, not included)', toIn),
      h('button', { type: 'submit' }, 'Apply filters'),
    ),
    table(
      `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}, newest first`,
      ['Time', 'Event', 'Company', 'Key', 'Actor', 'Details'],
      entries.map((e) => [
        when(e.at),
        e.event,
        e.companyId ?? '',
        e.keyPrefix
          ? e.keyId
            ? h('a', { href: `#/keys/${encodeURIComponent(e.keyId)}` }, h('code', {}, e.keyPrefix))
            : h('code', {}, e.keyPrefix)
          : '',
        e.actor ?? '',
        e.details ? h('code', {}, JSON.stringify(e.details)) : '',
      ]),
      'No audit entries match.',
    ),
    paging,
  );
}
