// The same-origin HTTP API, and the session's token. The token lives in
// sessionStorage only: never in a URL, a cookie or persistent storage.

const KEY = "parley.token";

export const session = {
  get token() {
    try {
      return sessionStorage.getItem(KEY);
    } catch {
      return null;
    }
  },
  set(token) {
    sessionStorage.setItem(KEY, token);
  },
  clear() {
    try {
      sessionStorage.removeItem(KEY);
    } catch {
      /* storage unavailable: nothing kept */
    }
  },
};

// Refusal is the API's error object, {reason, message, detail}, with the
// HTTP status; a network failure is reason "network", status 0.
export class Refusal extends Error {
  constructor(status, reason, message, detail) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.detail = detail || {};
  }
}

// api calls one operation. opts: body (JSON), signal, token (overrides the
// session's; "" sends none).
export async function api(method, path, opts = {}) {
  const headers = { Accept: "application/json" };
  const token = opts.token !== undefined ? opts.token : session.token;
  if (token) headers.Authorization = "Bearer " + token;
  let body;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, signal: opts.signal, cache: "no-store", credentials: "omit", redirect: "error" });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new Refusal(0, "network", "the server could not be reached", {});
  }
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    if (e.name === "AbortError") throw e;
    data = null;
  }
  if (res.ok && (data === null || typeof data !== "object")) {
    throw new Refusal(res.status, "bad_response", "the server's answer was not a JSON object", {});
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new Refusal(res.status, e.reason || `http_${res.status}`, e.message || res.statusText || "request failed", e.detail);
    if (res.status === 401 && token && opts.token === undefined) {
      document.dispatchEvent(new CustomEvent("parley:unauthenticated", { detail: err }));
    }
    throw err;
  }
  return data;
}

// more reports whether a page's cursor continues ("" and null mean no more).
export function more(cursor) {
  return typeof cursor === "string" && cursor !== "";
}

export const enc = encodeURIComponent;
