// The page's one way to reach the daemon: fetch with the session cookie, the CSRF
// token on every change, and one clear state when the session is gone.

const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

let csrfToken = "";
const sessionListeners = new Set();

/** An error answer of the API ({"error": {"code", "message", "details"}}). */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Call `fn` once the session has ended (a 401 from any request). */
export function onSessionEnded(fn) {
  sessionListeners.add(fn);
}

let ended = false;
export function sessionEnded() {
  if (ended) return;
  ended = true;
  for (const fn of sessionListeners) fn();
}

/** Read the session (its CSRF token); throws ApiError(401) without one. */
export async function startSession() {
  const session = await request("GET", "/ui/session");
  csrfToken = session.csrf_token;
  return session;
}

/** One request; resolves to the parsed JSON body (null for an empty one). */
export async function request(method, path, body, { headers = {}, raw = false } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json", ...headers } };
  if (CHANGES.has(method)) init.headers["X-Heron-CSRF"] = csrfToken;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, "unreachable", "the daemon cannot be reached (is it running?)");
  }
  if (response.status === 401) {
    sessionEnded();
    throw new ApiError(401, "unauthorized", "the session has ended");
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code, err.message || String(data || response.statusText), err.details);
  }
  return raw ? { data, response } : data;
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body = {}) => request("POST", path, body);
export const patch = (path, body) => request("PATCH", path, body);

/** A query string from an object (arrays repeat the key; empty values are left out). */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(key, String(one));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Every page of a cursor-paged list (`heron-next-cursor` header, `after=`). */
export async function allPages(path, params = {}, limit = 500) {
  const items = [];
  let after;
  for (;;) {
    const { data, response } = await request("GET", path + query({ ...params, limit, after }), undefined, { raw: true });
    items.push(...data);
    after = response.headers.get("heron-next-cursor");
    if (!after) return items;
  }
}

/** Open an EventSource and notice when it is refused for want of a session. */
export function events(path, handlers, { onOpen, onGone } = {}) {
  const source = new EventSource(path);
  for (const [type, fn] of Object.entries(handlers)) {
    source.addEventListener(type, (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      fn(data, message);
    });
  }
  if (onOpen) source.addEventListener("open", onOpen);
  source.addEventListener("error", async () => {
    if (source.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
    // Closed for good: a refusal (401: the session ended) or the route said no.
    try {
      await get("/ui/session");
    } catch {
      return; // sessionEnded() ran if it was a 401
    }
    if (onGone) onGone();
  });
  return source;
}
