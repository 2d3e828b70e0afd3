// Company registrations from the company dashboard: pending ones first, approve or reject (admin
// role). 404 from the admin API means the dashboard is off.
import { api, ApiError, seg } from './api.js';
import { badge, fill, h, table, when } from './dom.js';
import { can } from './session.js';
import { announce, showError } from './ui.js';

const STATE = { pending: 'warn', approved: 'ok', rejected: 'bad' };

export async function renderRegistrations(main) {
  let regs;
  try {
    regs = await api('GET', '/admin/v1/registrations');
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return fill(main, h('h1', { tabIndex: -1 }, 'Registrations'), h('p', { class: 'muted' }, err.details));
  }
  const decide = async (r, verb) => {
    try {
      await api('POST', `/admin/v1/registrations/${seg(r.id)}/${verb}`);
      await renderRegistrations(main);
      announce(`Registration of ${r.companyName} ${verb === 'approve' ? 'approved' : 'rejected'}.`);
    } catch (err) {
      showError(err);
    }
  };
  const ordered = [
    ...regs.filter((r) => r.status === 'pending'),
    ...regs.filter((r) => r.status !== 'pending'),
  ];
  fill(
    main,
    h('h1', { tabIndex: -1 }, 'Registrations'),
    h(
      'p',
      { class: 'muted' },
      'Companies that registered in the company dashboard. Approving makes the company active and mails its contact.',
    ),
    table(
      'Registrations, pending first',
      ['Company', 'Contact', 'Registered', 'State', 'Actions'],
      ordered.map((r) => [
        h('a', { href: `#/companies/${encodeURIComponent(r.id)}` }, r.companyName),
        r.email,
        when(r.createdAt),
        badge(r.status, STATE[r.status] ?? 'info'),
        r.status === 'pending' && can('admin')
          ? [
              h(
                'button',
                {
                  type: 'button',
                  class: 'primary',
                  'aria-label': `Approve ${r.companyName}`,
                  onclick: () => decide(r, 'approve'),
                },
                'Approve',
              ),
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Reject ${r.companyName}`,
                  onclick: () => decide(r, 'reject'),
                },
                'Reject',
              ),
            ]
          : '',
      ]),
      'No registrations yet.',
    ),
  );
}
