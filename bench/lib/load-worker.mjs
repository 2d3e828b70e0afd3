// The load generator, in its own process (forked by lib/loader.mjs): runs autocannon on request and
// answers with a summary. Latency percentiles are computed here from autocannon's per-response
// timings (float ms), because autocannon's own histogram keeps whole milliseconds only.
import { createRequire } from 'node:module';
import process from 'node:process';
import autocannon from 'autocannon';

// Work around an autocannon 8 latency bug that only hits servers answering `Connection: close`
// (express-hpm-default does: http-proxy passes the upstream's `Connection: close` on to the client).
// On the server's FIN the client reconnects without dropping the request it had already queued on
// the dying socket, so every reconnect leaves a stale queue entry whose start time is charged to a
// later response: latencies then grow with the run (p50 of ~0.7 s at ~800 req/s over 50
// connections, which Little's law rules out). That request was never answered; drop it before
// the new connection queues its own. Request counts are unaffected either way.
const Client = createRequire(import.meta.url)('autocannon/lib/httpClient.js');
const connect = Client.prototype._connect;
Client.prototype._connect = function connectWithoutStaleRequests() {
  if (this.conn) this.pipelinedRequests.clear();
  return connect.call(this);
};

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function run(opts) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    // The answers the target admitted (2xx), apart: under overload the refusals are fast and would
    // hide how long admitted requests took.
    const admitted = [];
    const instance = autocannon(
      {
        url: opts.url,
        method: opts.method,
        headers: opts.headers,
        body: opts.body,
        connections: opts.connections,
        pipelining: opts.pipelining,
        duration: opts.duration,
        timeout: 10,
        ...(opts.overallRate && { overallRate: opts.overallRate }),
      },
      (err, r) => {
        if (err) return reject(err);
        const sorted = Float64Array.from(latencies).sort();
        const sorted2xx = Float64Array.from(admitted).sort();
        resolve({
          requests: r.requests.total,
          durationS: r.duration,
          rps: r.requests.total / r.duration,
          p50Ms: percentile(sorted, 50),
          p99Ms: percentile(sorted, 99),
          admitted: sorted2xx.length,
          admittedP50Ms: percentile(sorted2xx, 50),
          admittedP99Ms: percentile(sorted2xx, 99),
          autocannon: {
            rpsAverage: r.requests.average,
            p50: r.latency.p50,
            p99: r.latency.p99,
            max: r.latency.max,
          },
          non2xx: r.non2xx,
          errors: r.errors,
          timeouts: r.timeouts,
          statusCodeStats: r.statusCodeStats,
        });
      },
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      latencies.push(ms);
      if (status >= 200 && status < 300) admitted.push(ms);
    });
  });
}

process.on('message', (msg) => {
  if (msg?.type !== 'run') return;
  run(msg.opts).then(
    (result) => process.send({ type: 'result', id: msg.id, result }),
    (err) => process.send({ type: 'result', id: msg.id, error: String(err?.stack ?? err) }),
  );
});
process.send({ type: 'ready' });
