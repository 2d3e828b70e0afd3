// Webhook deliveries: pending, delivered and dead letters (GET /admin/v1/webhooks/deliveries),
// and the retry of a dead letter (POST .../retry, admin role).
import { api, ApiError, seg } from './api.js';
import { badge, field, h, select, table, when } from './dom.js';
import { can } from './session.js';
import { announce, showError } from './ui.js';

const STATUSES = [
  ['dead', 'Dead letters'],
  ['pending', 'Pending'],
  ['delivered', 'Delivered'],
  ['', 'All'],
];

const KIND = { dead: 'bad', pending: 'warn', delivered: 'ok' };

export async function renderWebhooks(main, params) {
  const status = params.get('status') ?? 'dead';
  const pick = select({ name: 'status' }, STATUSES, status);
  pick.addEventListener('change', () => {
    location.hash = `#/webhooks?${new URLSearchParams({ status: pick.value })}`;
  });
  let deliveries;
  try {
    const q = new URLSearchParams({ limit: '200', ...(status ? { status } : {}) });
    deliveries = await api('GET', `/admin/v1/webhooks/deliveries?${q}`);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
    main.replaceChildren(
      h('h1', { tabIndex: -1 }, 'Webhook deliveries'),
      h('p', { class: 'empty' }, `Events are off on this gateway (${err.details}).`),
    );
    return;
  }
  const rows = deliveries.map((d) => [
    when(d.createdAt),
    d.type,
    d.companyId ?? h('span', { class: 'muted' }, 'gateway'),
    `${d.endpoint.scope} ${d.endpoint.id}`,
    badge(d.status, KIND[d.status] ?? 'info'),
    String(d.attempts),
    when(d.lastAttemptAt),
    d.lastError ?? (d.lastStatus ? `HTTP ${d.lastStatus}` : ''),
    d.status === 'dead' && can('admin')
      ? h(
          'button',
          {
            type: 'button',
            'aria-label': `Retry delivery ${d.id}`,
            onclick: (e) => retry(d, e.currentTarget, main, params),
          },
          'Retry',
        )
      : '',
  ]);
  main.replaceChildren(
    h('h1', { tabIndex: -1 }, 'Webhook deliveries'),
    h(
      'form',
      { class: 'inline', 'aria-label': 'Delivery filter', onsubmit: (e) => e.preventDefault() },
      field('Show', pick),
    ),
    table(
      `${deliveries.length} ${deliveries.length === 1 ? 'delivery' : 'deliveries'}, newest first`,
      [
        'Created',
        'Event',
        'Company',
        'Endpoint',
        'State',
        'Attempts',
        'Last attempt',
        'Last error',
        'Actions',
      ],
      rows,
      status === 'dead' ? 'No dead letters.' : 'No deliveries.',
    ),
  );
}

async function retry(d, button, main, params) {
  button.disabled = true;
  try {
    await api('POST', `/admin/v1/webhooks/deliveries/${seg(d.id)}/retry`);
    announce(`Delivery ${d.id} (${d.type}) is queued again.`);
    await renderWebhooks(main, params);
  } catch (err) {
    button.disabled = false;
    showError(err);
  }
}
