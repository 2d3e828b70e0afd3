// The admin API client. The admin token lives in memory and in sessionStorage (this tab only, gone
// when the tab closes); never in localStorage, a cookie or the URL.

const TOKEN_KEY = 'notify-gateway.admin-token';
let token = sessionStorage.getItem(TOKEN_KEY);

/** Keeps the token for this tab, or forgets it (`null`). */
export function setToken(value) {
  token = value || null;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function hasToken() {
  return token !== null;
}

/** An admin API refusal, with its `{error, details}` as the API wrote them. */
export class ApiError extends Error {
  constructor(status, error, details) {
    super(`${error}: ${details}`);
    this.status = status;
    this.error = error;
    this.details = details;
  }
}

/**
 * Calls the admin API (same origin) and returns the parsed JSON answer; a non-2xx answer throws an
 * {@link ApiError} holding the API's own `error` and `details`.
 */
export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch (err) {
    throw new ApiError(0, 'Network error', `The admin API could not be reached (${err.message})`);
  }
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const error = typeof parsed?.error === 'string' ? parsed.error : `HTTP ${res.status}`;
    const details = typeof parsed?.details === 'string' ? parsed.details : text.slice(0, 300);
    throw new ApiError(res.status, error, details);
  }
  return parsed;
}

/** `encodeURIComponent` for path segments. */
export const seg = (s) => encodeURIComponent(s);
