// The dashboard API client: same origin, the session cookie (HttpOnly: this script never sees it),
// JSON bodies on every write.

/** A refusal of the dashboard API, with its `{error, details}`. */
export class ApiError extends Error {
  constructor(status, error, details) {
    super(`${error}: ${details}`);
    this.status = status;
    this.error = error;
    this.details = details;
  }
}

/** Calls `/api/<path>`; returns the parsed answer, or throws an {@link ApiError}. */
export async function api(method, path, body) {
  const write = method !== 'GET';
  let res;
  try {
    res = await fetch(`/api/${path}`, {
      method,
      headers: write
        ? { 'Content-Type': 'application/json', Accept: 'application/json' }
        : { Accept: 'application/json' },
      body: write ? JSON.stringify(body ?? {}) : undefined,
      credentials: 'same-origin',
      cache: 'no-store',
      redirect: 'error',
    });
  } catch (err) {
    throw new ApiError(0, 'Network error', `The dashboard could not be reached (${err.message})`);
  }
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok)
    throw new ApiError(
      res.status,
      typeof parsed?.error === 'string' ? parsed.error : `HTTP ${res.status}`,
      typeof parsed?.details === 'string' ? parsed.details : '',
    );
  return parsed;
}

export const seg = (s) => encodeURIComponent(s);
