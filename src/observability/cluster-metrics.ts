import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, type Registry } from 'prom-client';

export type MetricsReader = () => Promise<{ contentType: string; text: string }>;

const REQUEST = 'notify-gateway:metrics-request';
const RESPONSE = 'notify-gateway:metrics-response';

/**
 * What `/metrics` answers. In a single process: this registry. In a `serve --workers N` worker:
 * the sum over all workers, gathered by the primary (prom-client's AggregatorRegistry), because a
 * scrape reaches one random worker through the shared port and must still see the whole process.
 */
export function createMetricsReader(registry: Registry): MetricsReader {
  if (!cluster.isWorker)
    return async () => ({ contentType: registry.contentType, text: await registry.metrics() });
  AggregatorRegistry.setRegistries([registry]);
  // prom-client installs the worker's reply listener only when an AggregatorRegistry is built.
  new AggregatorRegistry();
  return () =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        process.off('message', onMessage);
        reject(new Error('the primary did not answer the metrics request in time'));
      }, 5000);
      const onMessage = (msg: { type?: string; id?: string; text?: string; error?: string }) => {
        if (msg?.type !== RESPONSE || msg.id !== id) return;
        clearTimeout(timer);
        process.off('message', onMessage);
        if (msg.error) reject(new Error(msg.error));
        else resolve({ contentType: registry.contentType, text: msg.text ?? '' });
      };
      process.on('message', onMessage);
      process.send?.({ type: REQUEST, id });
    });
}

/** Primary side of `createMetricsReader`: answers workers' requests with the aggregated text. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, msg: { type?: string; id?: string }) => {
    if (msg?.type !== REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: RESPONSE, id: msg.id, text }),
      (err: Error) => worker.send({ type: RESPONSE, id: msg.id, error: err.message }),
    );
  });
}
