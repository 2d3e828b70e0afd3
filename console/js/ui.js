// The page's two live regions: errors (role=alert) and status messages (role=status).
import { ApiError } from './api.js';

const $ = (id) => document.getElementById(id);

/** Shows an error: an admin API refusal exactly as `error: details`, anything else by its message. */
export function showError(err) {
  const text =
    err instanceof ApiError ? `${err.error}: ${err.details}` : `Unexpected error: ${err?.message ?? err}`;
  $('error').textContent = text;
}

let pending = null;

/** Clears both regions; a message kept by {@link announceAfterNavigation} shows now. */
export function clearMessages() {
  $('error').textContent = '';
  $('status').textContent = pending ?? '';
  pending = null;
}

/** A status message for the page the console is about to show. */
export function announceAfterNavigation(text) {
  pending = text;
}

/** A polite status message (created, saved, copied). */
export function announce(text) {
  $('error').textContent = '';
  $('status').textContent = text;
}
