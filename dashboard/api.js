// SPDX-License-Identifier: Apache-2.0
// The HTTP/JSON API of docs/API.md, as the page uses it.  The token lives in
// sessionStorage (this tab only) and travels in the Authorization header of
// every request; requests never carry cookies (credentials: 'omit'), so
// another site cannot make the browser act with it.

const TOKEN_KEY = 'tenq.token';

// The directory the page was served from ("/" normally; "/prefix/" behind a
// proxy), so that the API is reached relative to it.
export const base = location.pathname.replace(/ui\/[^/]*$/, '').replace(/[^/]*$/, '');

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || null;
  }
}

export function hasSession() {
  try { return sessionStorage.getItem(TOKEN_KEY) !== null; } catch { return false; }
}
export function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

// Listeners for a refused token (401): the app goes back to the sign-in.
const onUnauth = [];
export function onUnauthenticated(fn) { onUnauth.push(fn); }

// token: by default the session's; one given here (the sign-in trying a
// token) does not sign the session out when refused.
export async function api(method, path, body, token) {
  const own = token === undefined;
  if (own) token = getToken();
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(base + path, init);
  } catch (e) {
    throw new ApiError(0, 'network', 'Cannot reach the server (' + e.message + ')');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!res.ok) {
    const e = (data && typeof data === 'object' && data.error) || {};
    const err = new ApiError(res.status, e.code || 'http_' + res.status,
      e.message || res.statusText || 'HTTP ' + res.status, e.field);
    if (res.status === 401 && own && hasSession()) onUnauth.forEach((fn) => fn(err));
    throw err;
  }
  return data;
}

// A query string from an object, leaving out empty values.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  }
  const s = u.toString();
  return s ? '?' + s : '';
}
