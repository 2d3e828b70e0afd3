// Each route's upstream targets and their health (GET /admin/v1/upstreams, read role).
import { api } from './api.js';
import { badge, h, table, when } from './dom.js';

const KIND = { healthy: 'ok', ejected: 'warn', unhealthy: 'bad' };

export async function renderUpstreams(main) {
  const routes = await api('GET', '/admin/v1/upstreams');
  main.replaceChildren(
    h('h1', { tabIndex: -1 }, 'Upstreams'),
    ...routes.map((r) =>
      h(
        'section',
        {},
        h('h2', {}, r.route),
        h('p', { class: 'muted' }, `${r.balancing}; with no healthy target: ${r.whenNoneHealthy}`),
        table(
          `Targets of ${r.route}`,
          ['Target', 'State', 'Weight', 'In flight', 'Ejections', 'Ejected until', 'Last error'],
          r.targets.map((t) => [
            t.url,
            badge(t.state, KIND[t.state] ?? 'info'),
            String(t.weight),
            String(t.inFlight),
            String(t.ejections),
            t.ejectedUntil ? when(t.ejectedUntil) : '',
            t.lastError ?? '',
          ]),
        ),
      ),
    ),
  );
}
