import { safeMessage } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { hasPassed, type KeyRecord, type KeyStore } from '../store/types.js';
import { isoSeconds, parseInstant } from '../time.js';
import { GRACE_ENDING_LEAD_MS } from './bus.js';
import type { EventStore } from './store.js';
import type { EventSink } from './types.js';

const DAY_MS = 86_400_000;

/** `key.expiring` is sent this long before a key expires. */
export const EXPIRING_LEAD_MS = 7 * DAY_MS;

/** What the key scan needs. */
export interface KeyScannerOptions {
  keys: Pick<KeyStore, 'listCompanies' | 'listKeys'>;
  events: EventSink;
  /** For the scan lock: one process scans per interval. */
  eventStore: Pick<EventStore, 'claimOnce'>;
  /** Whether any endpoint exists (the gateway's or a company's): while none does, no scan and no lock. */
  listening: () => Promise<boolean>;
  intervalMs: number;
  rotationAgeDays: number;
  logger: Logger;
  now?: () => number;
}

/**
 * What a key's dates call for at `now`: `key.expiring` (expires within 7 days), `key.grace_ending`
 * (a rotated key's revocation within 24 hours), `key.revoked` (a rotated key whose grace period
 * ended within the last day: nobody revoked it by hand, so nobody else reports it) and
 * `key.rotation_due` (older than the rotation age, neither rotated nor being revoked). Pure.
 */
export function keyEventsDue(
  k: KeyRecord,
  now: number,
  rotationAgeDays: number,
  emit: EventSink['emit'],
): void {
  const ref = { companyId: k.companyId, keyId: k.id, keyPrefix: k.prefix };
  const revokesAt = k.revokedAt === null ? null : parseInstant(k.revokedAt);
  if (hasPassed(k.revokedAt, now)) {
    if (k.rotatedTo !== null && revokesAt !== null && now - revokesAt < DAY_MS)
      emit('key.revoked', {
        ...ref,
        revokedAt: k.revokedAt!,
        reason: 'grace period after a rotation ended',
        actor: 'gateway',
      });
    return;
  }
  if (hasPassed(k.expiresAt, now)) return;
  const expiresAt = k.expiresAt === null ? null : parseInstant(k.expiresAt);
  if (expiresAt !== null && expiresAt - now <= EXPIRING_LEAD_MS)
    emit('key.expiring', { ...ref, label: k.label, environment: k.environment, expiresAt: k.expiresAt! });
  if (revokesAt !== null && k.rotatedTo !== null && revokesAt - now <= GRACE_ENDING_LEAD_MS)
    emit('key.grace_ending', { ...ref, revokesAt: k.revokedAt!, replacedBy: k.rotatedTo });
  const created = parseInstant(k.createdAt);
  if (
    k.revokedAt === null &&
    k.rotatedTo === null &&
    created !== null &&
    now - created > rotationAgeDays * DAY_MS
  )
    emit('key.rotation_due', { ...ref, label: k.label, createdAt: k.createdAt, rotationAgeDays });
}

/**
 * The periodic key scan behind the time-driven events. Every process runs the timer; the one that
 * claims the interval's scan lock reads every company's keys and emits what `keyEventsDue` says.
 * A fact seen twice (by the next scan, or by two processes without a shared store) is dropped by
 * the bus's once-keys. Runs first shortly after start. Never throws; a failed scan is logged and
 * the next interval tries again.
 */
export class KeyScanner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: KeyScannerOptions) {
    this.now = opts.now ?? Date.now;
  }

  start(firstInMs = 1000): void {
    const tick = () => {
      this.running = this.scanIfLeader().finally(() => (this.running = null));
      this.timer = setTimeout(tick, this.opts.intervalMs);
      this.timer.unref();
    };
    this.timer = setTimeout(tick, firstInMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Scans when someone listens and this process wins the interval's lock (held 90 % of the
   * interval). A gateway without endpoints writes nothing: it leaves the store as it found it.
   */
  async scanIfLeader(): Promise<void> {
    try {
      if (!(await this.opts.listening())) return;
      const lockMs = Math.floor(this.opts.intervalMs * 0.9);
      if (!(await this.opts.eventStore.claimOnce('key-scan', lockMs))) return;
      await this.scan();
    } catch (err) {
      this.opts.logger.warn(
        { error: safeMessage(err) },
        'key scan for events failed; next interval tries again',
      );
    }
  }

  /** Reads every key once and emits what is due (no lock). */
  async scan(): Promise<number> {
    const now = this.now();
    let keys = 0;
    const emit: EventSink['emit'] = (type, data) => this.opts.events.emit(type, data);
    for (const c of await this.opts.keys.listCompanies()) {
      for (const k of await this.opts.keys.listKeys(c.id)) {
        keys++;
        keyEventsDue(k, now, this.opts.rotationAgeDays, emit);
      }
    }
    this.opts.logger.debug({ keys, at: isoSeconds(now) }, 'key scan for events done');
    return keys;
  }
}
