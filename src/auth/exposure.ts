import { isKeyActive, type KeyRecord, type KeyStore } from '../store/types.js';
import { hashApiKey, parseApiKey } from './api-key.js';

/** The request a key was seen in: client address, matched route, request id (never the URL). */
export interface ExposureSite {
  clientIp: string;
  route: string;
  requestId: string;
}

/** What the handler needs to record an exposure: `AdminService` fits. */
export interface ExposureRecorder {
  /** Flags the key as seen in a URL (and revokes it when `revoke` is true). */
  markExposed(key: KeyRecord, revoke: boolean, site?: ExposureSite): Promise<void>;
}

export interface ExposedKeyHandlerOptions {
  /** Read straight from the store, never through the verifier's cache (see below). */
  store: Pick<KeyStore, 'findKeyByHash'>;
  recorder: ExposureRecorder;
  /** The key format check the verifier applies (`keys.maxLength`, `keys.acceptLegacyFormat`). */
  keyFormat: { maxLength: number; acceptLegacy: boolean };
  /** `keys.exposedKeys === 'revoke'`: revoke an exposed key instead of only flagging it. */
  revoke: boolean;
  /** Receives any store or recorder failure; the handler itself never rejects. */
  onError: (err: unknown) => void;
  /** Clock in ms (tests). */
  now?: () => number;
}

/**
 * Builds the handler for API-key candidates found in a request URL (the URL key guard's
 * `onKeyInUrl`). The first non-empty candidate that passes the key format check is hashed and
 * looked up; an active key found that way is handed to `recorder.markExposed`. Format check and
 * choice happen synchronously; the lookup runs in the background. The returned promise always
 * resolves (failures go to `onError`), so request handlers need not await it. `site` (where the
 * key was seen) goes with the exposure to the audit trail and the `key.exposed` event.
 *
 * @example
 * const onKeyInUrl = createExposedKeyHandler({ store, recorder: service, keyFormat, revoke, onError });
 * createApp({ ..., onKeyInUrl: (candidates) => void onKeyInUrl(candidates) });
 */
export function createExposedKeyHandler(
  opts: ExposedKeyHandlerOptions,
): (candidates: readonly string[], site?: ExposureSite) => Promise<void> {
  const { store, recorder, keyFormat, revoke, onError } = opts;
  const now = opts.now ?? Date.now;
  return function onKeyInUrl(candidates, site) {
    // One store read for the first candidate that passes the format check, straight from the
    // store: a cache entry per URL-borne guess would let such requests push real keys out.
    const candidate = candidates.find((c) => c !== '' && parseApiKey(c, keyFormat).ok);
    if (candidate === undefined) return Promise.resolve();
    return (async () => {
      const rec = await store.findKeyByHash(hashApiKey(candidate));
      if (rec && isKeyActive(rec, now())) await recorder.markExposed(rec, revoke, site);
    })().catch(onError);
  };
}
