// The usage panel of a company or a key: a range and granularity form, a stacked bar chart (SVG)
// and the table behind it, from GET .../usage.
import { api, ApiError } from './api.js';
import { barChart } from './chart.js';
import { field, fill, h, select, table, when } from './dom.js';

const RANGES = [
  ['24', 'Last 24 hours'],
  ['168', 'Last 7 days'],
  ['720', 'Last 30 days'],
];

/** Bars, bottom up: what passed, then what the gateway refused. */
const SERIES = [
  ['allowed', 'allowed', 'bar-allowed'],
  ['rateLimited', 'rate limited', 'bar-limited'],
  ['scopeDenied', 'scope denied', 'bar-denied'],
  ['refused', 'refused', 'bar-refused'],
];

/**
 * A usage section for `path` (`/admin/v1/companies/:id/usage` or `/admin/v1/keys/:id/usage`);
 * `what` names the subject in headings and captions. Loads at once and on every submit.
 */
export function usageSection(path, what) {
  const range = select({ name: 'range' }, RANGES, '24');
  const gran = select(
    { name: 'granularity' },
    [
      ['hour', 'hour'],
      ['day', 'day'],
    ],
    'hour',
  );
  const out = h('div', { 'aria-live': 'polite' });
  const load = async (e) => {
    e?.preventDefault();
    const to = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000);
    const from = new Date(to.getTime() - Number(range.value) * 3_600_000);
    const iso = (d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const q = new URLSearchParams({ from: iso(from), to: iso(to), granularity: gran.value });
    out.replaceChildren(h('p', { class: 'muted' }, 'Loading usage…'));
    try {
      fill(out, usageView(await api('GET', `${path}?${q}`), what));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        out.replaceChildren(h('p', { class: 'empty' }, 'Usage not available on this gateway.'));
      } else {
        out.replaceChildren(
          h('p', { class: 'error' }, `${err.error ?? 'Error'}: ${err.details ?? err.message}`),
        );
      }
    }
  };
  void load();
  return h(
    'section',
    {},
    h('h2', { id: 'usage-h' }, 'Usage'),
    h(
      'form',
      { class: 'inline', 'aria-labelledby': 'usage-h', onsubmit: load },
      field('Range', range),
      field('Granularity', gran),
      h('button', { type: 'submit' }, 'Show usage'),
    ),
    out,
  );
}

/** The chart, its legend and the table of one usage answer. */
function usageView(u, what) {
  const buckets = Array.isArray(u?.buckets) ? u.buckets : [];
  const caption = `Requests of ${what} per ${u.granularity}, ${u.from} to ${u.to}`;
  const total = buckets.reduce((n, b) => n + SERIES.reduce((m, [f]) => m + (b[f] ?? 0), 0), 0);
  return [
    total
      ? h(
          'figure',
          { class: 'usage-chart' },
          barChart(buckets, SERIES, `Chart: ${total} requests of ${what}, by ${u.granularity}`),
          h(
            'figcaption',
            { class: 'legend' },
            SERIES.map(([, name, cls]) => h('span', {}, h('span', { class: `swatch ${cls}` }), name)),
          ),
        )
      : null,
    table(
      caption,
      [
        'Start',
        'Allowed',
        'Rate limited',
        'Scope denied',
        'Refused',
        'Upstream 2xx',
        'Upstream 4xx',
        'Upstream 5xx',
      ],
      buckets.map((b) => [
        when(b.start),
        String(b.allowed ?? 0),
        String(b.rateLimited ?? 0),
        String(b.scopeDenied ?? 0),
        String(b.refused ?? 0),
        String(b.upstream2xx ?? 0),
        String(b.upstream4xx ?? 0),
        String(b.upstream5xx ?? 0),
      ]),
      'No requests in this range.',
    ),
  ];
}
