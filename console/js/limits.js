// What a company or a key may do: its effective rate-limit windows and scopes, in words. A
// company's windows are its own, else its tier's; a key adds its own windows on top of its
// company's and may only narrow its company's scopes (src/http/steps/scope-check.ts).
import { h } from './dom.js';
import { settings } from './settings.js';

/** `600 per minute`, `10000 per day`, `5 per 30 s`. */
export function windowText(w) {
  const units = [
    [86_400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
    [1, 'second'],
  ];
  for (const [sec, name] of units) {
    if (w.duration === sec) return `${w.points} per ${name}`;
    if (w.duration % sec === 0 && sec > 1) return `${w.points} per ${w.duration / sec} ${name}s`;
  }
  return `${w.points} per ${w.duration} s`;
}

/** One scope as text: `POST /notify/v1 (paths /notify/v1/otps)`. */
export function scopeText(s) {
  const methods = s.methods?.length ? `${s.methods.join(', ')} ` : 'any method on ';
  return `${methods}${s.route}${s.paths?.length ? ` (paths ${s.paths.join(', ')})` : ''}`;
}

/** A company's windows in force: `{windows, source}`. */
export function companyWindows(company) {
  if (company.limits?.length) return { windows: company.limits, source: 'its own' };
  const tier = settings.tierWindows?.[company.tier];
  return tier
    ? { windows: tier, source: `tier ${company.tier}` }
    : { windows: [], source: `tier ${company.tier}` };
}

/** A description list of a company's effective limits and scopes. */
export function companyLimits(company) {
  const { windows, source } = companyWindows(company);
  return h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'Rate limits'),
    h(
      'dd',
      {},
      windows.length
        ? `${windows.map(windowText).join(' and ')} (${source})`
        : `unknown: ${source} is not configured`,
    ),
    h('dt', {}, 'Scopes'),
    h(
      'dd',
      {},
      company.scopes === null ? 'every route' : company.scopes.map(scopeText).join('; ') || 'no route',
    ),
  );
}

/** A key's effective limits and scopes, as a cell of the key table. */
export function keyLimits(key, company) {
  const { windows } = companyWindows(company);
  const own = key.limits?.length ? key.limits.map(windowText).join(' and ') : null;
  const limits = own ? `${own} (its own), within the company's` : windows.length ? "the company's" : '—';
  const scopes =
    key.scopes === null
      ? company.scopes === null
        ? 'every route'
        : "the company's"
      : `${key.scopes.map(scopeText).join('; ')}${company.scopes === null ? '' : ", within the company's"}`;
  return h('span', { class: 'limits' }, `Limits: ${limits}. Scopes: ${scopes}.`);
}
