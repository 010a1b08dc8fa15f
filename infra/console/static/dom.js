// The one way the console builds its page. Server data only ever becomes
// text nodes or attribute values: nothing is parsed as HTML, and a link to
// anywhere but this console is made only from an http(s) URL (safeURL).

// h creates an element. props: attributes; "on<event>" functions become
// listeners; class, value, checked and dataset are set as properties.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "value") el.value = v;
      else if (k === "checked") el.checked = !!v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  add(el, children);
  return el;
}

// put replaces an element's children; null, false and nested arrays are
// handled as h does (replaceChildren alone would print "null").
export function put(el, ...children) {
  el.replaceChildren();
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// cls turns a server value into a safe class-name fragment.
export function cls(s) {
  return String(s ?? "").toLowerCase().replace(/[^a-z0-9_-]/g, "") || "other";
}

// safeURL returns the URL when it is http or https, else null.
export function safeURL(s) {
  if (typeof s !== "string" || s.length > 2000) return null;
  let u;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
}

// route builds an in-console link target (#/name/id?query).
export function route(name, id, query) {
  let s = "#/" + name;
  if (id) s += "/" + encodeURIComponent(id);
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v) q.set(k, v);
  const qs = q.toString();
  return qs ? s + "?" + qs : s;
}

export function ago(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const s = (Date.now() - d.getTime()) / 1000;
  if (s < 45) return "just now";
  if (s < 90) return "1 min ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 5400) return "1 h ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

export function time(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const d = new Date(iso);
  return h("time", { datetime: iso, title: Number.isNaN(d.getTime()) ? iso : d.toLocaleString() }, ago(iso));
}

// party shows identity/extension.
export function party(p) {
  if (!p) return "";
  return p.extension ? `${p.identity}/${p.extension}` : p.identity;
}

export function actBadge(kind) {
  return h("span", { class: `act act-${cls(kind)}` }, kind);
}

export function isProposal(ts) {
  return ts.proposal === true || ts.state_confirmed_at == null;
}

// stateBadge shows a thread's state; a proposal looks (and reads) different
// from a confirmed state.
export function stateBadge(ts) {
  const p = isProposal(ts);
  return h(
    "span",
    { class: `state state-${cls(ts.state)} ${p ? "is-proposal" : "is-confirmed"}`, "data-state": cls(ts.state) },
    h("span", { class: "state-name" }, ts.state),
    h("span", { class: "state-flag" }, p ? "proposal" : "confirmed"),
  );
}

// ki renders a lock holder's label as the protocol shows it.
export function ki(label) {
  return label ? h("span", { class: "ki" }, `KI · ${label}`) : null;
}

// stateBy says who set the state and whether it stands.
export function stateBy(ts) {
  const who = ts.state_label ? [ki(ts.state_label), " ", h("span", { class: "who" }, ts.state_by)] : [h("span", { class: "who" }, ts.state_by)];
  if (isProposal(ts)) return h("span", { class: "state-by" }, "proposed by ", who, " — not confirmed");
  const origin = ts.state_origin === "user" ? "human" : "model";
  return h("span", { class: "state-by" }, `confirmed (${origin}) by `, who, " ", time(ts.state_confirmed_at));
}

// awaiting says who is due.
export function awaiting(a) {
  if (!a) return h("span", { class: "due due-none" }, "nobody is due");
  switch (a.scope) {
    case "party":
      return h("span", { class: "due" }, "due: ", h("strong", null, party(a)));
    case "any":
      return h("span", { class: "due" }, "due: anyone but ", h("strong", null, party(a.except)));
    case "human":
      return h("span", { class: "due due-human" }, "due: ", h("strong", null, "a human"));
  }
  return h("span", { class: "due" }, "due: ", a.scope);
}

// refusal shows a refused request: its reason, message and detail.
export function refusal(err, what) {
  const box = h(
    "div",
    { class: "refusal", role: "alert" },
    h(
      "p",
      { class: "refusal-head" },
      what ? `${what}: refused — ` : "Refused — ",
      h("code", { class: "refusal-reason" }, err.reason || "error"),
      err.status ? h("span", { class: "refusal-status" }, ` HTTP ${err.status}`) : null,
    ),
    h("p", { class: "refusal-message" }, err.message || String(err)),
  );
  const detail = Object.entries(err.detail || {});
  if (detail.length) {
    box.append(
      h("dl", { class: "refusal-detail" }, detail.map(([k, v]) => [h("dt", null, k), h("dd", null, typeof v === "string" ? v : JSON.stringify(v))])),
    );
  }
  return box;
}

// skeletons are placeholders with the size of what will come.
export function skeletons(n, kind = "card") {
  return Array.from({ length: n }, () => h("li", { class: `card sk sk-${kind}`, "aria-hidden": "true" }));
}

export function empty(text) {
  return h("li", { class: "card empty" }, text);
}

// keepFocus re-renders a region and puts the focus back on the element with
// the same data-key, so a live refresh does not throw the keyboard user out.
export function keepFocus(region, render) {
  const active = document.activeElement;
  const key = active && region.contains(active) ? active.dataset.key : null;
  render();
  if (key) {
    const again = region.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}

// busy disables a button while a request runs.
export async function busy(button, work) {
  const had = document.activeElement === button;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
    if (had && button.isConnected) button.focus();
  }
}

// evidenceList shows evidence items; only http(s) refs become links.
export function evidenceList(items) {
  if (!items || !items.length) return null;
  return h(
    "ul",
    { class: "evidence" },
    items.map((e) => {
      const url = safeURL(e.ref);
      const ref = url ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank", class: "ev-link" }, e.ref) : h("code", { class: "ev-ref" }, e.ref);
      return h("li", null, h("span", { class: "ev-kind" }, e.kind), " ", ref, e.note ? h("span", { class: "ev-note" }, " — ", e.note) : null);
    }),
  );
}
