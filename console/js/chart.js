// Usage as a bar chart: inline SVG built with DOM calls (no library, no markup parsed, no inline
// style: the CSP forbids it; colours come from style.css). The table beside it holds the numbers.

const SVG = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * A stacked bar per bucket (`series`: `[field, label, cssClass]`, drawn bottom up), a y axis with
 * its maximum, and the first and last bucket's start under the x axis. `label` names the chart for
 * screen readers, which read the table instead (the SVG is one image to them).
 */
export function barChart(buckets, series, label) {
  const width = 640;
  const height = 180;
  const pad = { left: 44, right: 8, top: 10, bottom: 26 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const totals = buckets.map((b) => series.reduce((n, [f]) => n + (b[f] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const svg = s('svg', {
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': label,
    class: 'chart',
  });
  svg.append(s('title', {}, label));
  svg.append(
    s('line', {
      x1: pad.left,
      y1: pad.top + plotH,
      x2: width - pad.right,
      y2: pad.top + plotH,
      class: 'axis',
    }),
  );
  svg.append(
    s('text', { x: pad.left - 6, y: pad.top + 10, 'text-anchor': 'end', class: 'tick' }, String(max)),
  );
  svg.append(s('text', { x: pad.left - 6, y: pad.top + plotH, 'text-anchor': 'end', class: 'tick' }, '0'));
  const step = plotW / Math.max(1, buckets.length);
  const barW = Math.max(1, step * 0.8);
  buckets.forEach((b, i) => {
    let y = pad.top + plotH;
    for (const [field, name, cls] of series) {
      const v = b[field] ?? 0;
      if (v <= 0) continue;
      const h = (v / max) * plotH;
      y -= h;
      const rect = s('rect', {
        x: pad.left + i * step + (step - barW) / 2,
        y,
        width: barW,
        height: h,
        class: cls,
      });
      rect.append(s('title', {}, `${b.start}: ${v} ${name}`));
      svg.append(rect);
    }
  });
  if (buckets.length) {
    const short = (ts) => ts.replace('T', ' ').replace(/:00Z$/, '');
    svg.append(s('text', { x: pad.left, y: height - 6, class: 'tick' }, short(buckets[0].start)));
    svg.append(
      s(
        'text',
        { x: width - pad.right, y: height - 6, 'text-anchor': 'end', class: 'tick' },
        short(buckets.at(-1).start),
      ),
    );
  }
  return svg;
}
