import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';

/**
 * Keeps one pub/sub subscription to the invalidation channel alive. `deliver` gets every message
 * text published on the channel; `resubscribed` is called after every re-subscription (not the
 * first), since messages published while no subscription was in place are lost.
 */
export interface InvalidationSubscriber {
  /** Subscribes and starts the PING heartbeat. Call once. */
  start(): void;
  /** Stops for good: no more deliveries, no reconnects, timers cleared. */
  stop(): void;
}

/** What both subscribers need besides their client. */
export interface InvalidationSubscriberOptions {
  channel: string;
  /** Called with the raw message text of every message on `channel`. */
  deliver: (text: string) => void;
  /** Called after each re-subscription (reconnect, failover, another Cluster node). */
  resubscribed: () => void;
  /** How often the subscription is checked with PING. */
  heartbeatMs: number;
}

/**
 * Picks the subscriber for the topology: {@link ClusterNodeSubscriber} for a Cluster subscriber
 * client, {@link SingleSubscriber} otherwise. `data` is the store's command client (its view of
 * the Cluster's nodes is the freshest). Not started.
 */
export function createInvalidationSubscriber(
  subscriber: RedisClient,
  data: RedisClient,
  opts: InvalidationSubscriberOptions,
): InvalidationSubscriber {
  return subscriber instanceof Cluster
    ? new ClusterNodeSubscriber(
        subscriber,
        data,
        opts.channel,
        opts.deliver,
        opts.resubscribed,
        opts.heartbeatMs,
      )
    : new SingleSubscriber(subscriber, opts.channel, opts.deliver, opts.resubscribed, opts.heartbeatMs);
}

/**
 * Single node and Sentinel: the subscriber client reconnects by itself (through the sentinels after
 * a failover) and ioredis re-subscribes; we subscribe again on every `ready` so we know when the
 * subscription is back, then invalidate everything. A PING heartbeat forces a reconnect when the
 * connection stays open but the server stopped answering.
 */
export class SingleSubscriber implements InvalidationSubscriber {
  private timer: NodeJS.Timeout | null = null;
  private subscribedOnce = false;
  private stopped = false;
  private readonly onReady = () => this.subscribe();
  private readonly onMessage = (channel: string, text: string) => {
    if (channel === this.channel) this.deliver(text);
  };

  constructor(
    private readonly client: Redis,
    private readonly channel: string,
    private readonly deliver: (text: string) => void,
    private readonly resubscribed: () => void,
    private readonly heartbeatMs: number,
  ) {}

  start(): void {
    // We subscribe again on every `ready` ourselves. ioredis's own re-subscription calls
    // subscribe() without a catch: when the connection drops right after `ready` (a Redis flap),
    // that is an unhandled rejection, which ends a Node process.
    this.client.options.autoResubscribe = false;
    this.client.on('message', this.onMessage);
    this.client.on('ready', this.onReady);
    if (this.client.status === 'ready') this.subscribe();
    this.timer = setInterval(() => this.heartbeat(), this.heartbeatMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.client.off('ready', this.onReady);
    this.client.off('message', this.onMessage);
  }

  private subscribe(): void {
    this.client.subscribe(this.channel).then(
      () => {
        if (this.stopped) return;
        if (this.subscribedOnce) this.resubscribed();
        this.subscribedOnce = true;
      },
      () => {
        // Not ready: the next `ready` calls us again. Ready but refused or timed out: start over,
        // rather than stay connected and unsubscribed.
        if (!this.stopped && this.client.status === 'ready') this.client.disconnect(true);
      },
    );
  }

  private heartbeat(): void {
    if (this.client.status !== 'ready') return;
    // commandTimeout bounds the PING; no answer means the server hangs or the path to it is gone.
    this.client.ping().catch(() => {
      if (!this.stopped && this.client.status === 'ready') this.client.disconnect(true);
    });
  }
}

/**
 * Cluster: PUBLISH reaches every node through the cluster bus, so one subscription on any node is
 * enough. ioredis's own Cluster subscriber moves to another node when its node fails but says
 * nothing about it, so messages published in between would be missed silently (and a subscriber
 * on a hung node misses everything). This one subscribes through a plain connection to one node at a
 * time (a replica when there is one), moves on when that node is lost or stops answering PING, and
 * invalidates everything after each move.
 */
export class ClusterNodeSubscriber implements InvalidationSubscriber {
  private conn: Redis | null = null;
  private timer: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private subscribedOnce = false;
  private failures = 0;
  private next = Math.floor(Math.random() * 1000);
  private lastFailed: string | null = null;
  private stopped = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly data: RedisClient,
    private readonly channel: string,
    private readonly deliver: (text: string) => void,
    private readonly resubscribed: () => void,
    private readonly heartbeatMs: number,
  ) {}

  start(): void {
    this.connect();
    this.timer = setInterval(() => this.heartbeat(), this.heartbeatMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.retry) clearTimeout(this.retry);
    this.conn?.disconnect();
    this.conn = null;
  }

  /**
   * Nodes known now, replicas first (delivering messages costs the node CPU; masters have the hot
   * path to serve): the data client's list (kept current by its traffic and slot refreshes), else
   * the subscriber client's.
   */
  private candidates(): Redis[] {
    for (const role of ['slave', 'all'] as const) {
      const seen = new Map<string, Redis>();
      const lists = [this.data instanceof Cluster ? this.data.nodes(role) : [], this.cluster.nodes(role)];
      for (const list of lists) for (const n of list) seen.set(nodeKey(n), n);
      if (seen.size) return [...seen.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, n]) => n);
    }
    return [];
  }

  private connect(): void {
    if (this.stopped) return;
    const all = this.candidates();
    // Not the node that just failed us, unless it is the only one known.
    const nodes = all.length > 1 ? all.filter((n) => nodeKey(n) !== this.lastFailed) : all;
    if (!nodes.length) return this.later();
    const node = nodes[this.next++ % nodes.length]!;
    // Same address, credentials, TLS and timeouts as the node's data connection; no reconnect of
    // its own: when it ends we pick a node again.
    const conn = node.duplicate({
      connectionName: `${node.options.connectionName ?? 'notify-gateway'}:invalidations`,
      lazyConnect: false,
      enableOfflineQueue: false,
      enableReadyCheck: true,
      readOnly: false,
      autoResubscribe: false,
      retryStrategy: null,
    });
    this.conn = conn;
    conn.on('error', () => undefined);
    conn.on('message', (channel: string, text: string) => {
      if (channel === this.channel) this.deliver(text);
    });
    conn.once('end', () => {
      if (this.conn !== conn) return;
      this.conn = null;
      this.lastFailed = nodeKey(node);
      this.later();
    });
    // Subscribe once connected (a queued SUBSCRIBE would run into commandTimeout on a slow connect).
    conn.once('ready', () => {
      conn.subscribe(this.channel).then(
        () => {
          if (this.stopped || this.conn !== conn) return;
          this.failures = 0;
          if (this.subscribedOnce) this.resubscribed();
          this.subscribedOnce = true;
        },
        () => conn.disconnect(),
      );
    });
  }

  private later(): void {
    if (this.stopped || this.retry) return;
    const delay = Math.min(50 * 2 ** Math.min(this.failures++, 5), 1000);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect();
    }, delay);
    this.retry.unref();
  }

  private heartbeat(): void {
    const conn = this.conn;
    if (!conn || conn.status !== 'ready') return;
    conn.ping().catch(() => {
      if (this.conn === conn) conn.disconnect();
    });
  }
}

function nodeKey(n: Redis): string {
  return `${n.options.host}:${n.options.port}`;
}
