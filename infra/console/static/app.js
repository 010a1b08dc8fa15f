// The console's shell: sign-in, navigation (#/route/id?query), and the live
// feed that polls the events cursor and tells the current view.

import { api, session, Refusal } from "./api.js";
import { h, put, refusal } from "./dom.js";
import { queueView } from "./views/queue.js";
import { threadsView } from "./views/threads.js";
import { threadView } from "./views/thread.js";
import { claimsView, claimView } from "./views/claims.js";
import { tokensView } from "./views/tokens.js";

const views = { queue: queueView, threads: threadsView, thread: threadView, claims: claimsView, claim: claimView, tokens: tokensView };

const POLL_MS = 4000;
const EVENTS_PAGE = 200;

const app = {
  manifest: null,
  me: null,
  nav: null, // AbortController of the current view
  view: null, // the current view's context (onEvents)
  live: { cursor: {}, synced: {}, seen: new Set(), timer: 0, running: false, behind: false, stopped: false },
};

const $ = (id) => document.getElementById(id);

// can answers what the signed-in token may do.
function can() {
  const rights = new Set((app.me && app.me.rights) || []);
  const human = !!app.me && app.me.author_kind === "human";
  const dialectic = !!app.manifest && (app.manifest.profiles || []).some((p) => p.name === "dialectic");
  return { read: rights.has("read"), write: rights.has("write"), lock: rights.has("lock"), verify: rights.has("verify"), human, dialectic };
}

function parseHash() {
  const raw = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [p, q] = raw.split("?");
  const [name, id] = p.split("/").map((s) => {
    try {
      return decodeURIComponent(s || "");
    } catch {
      return "";
    }
  });
  return { name, id, params: new URLSearchParams(q || "") };
}

function home() {
  return can().lock ? "#/queue" : "#/threads";
}

async function boot() {
  $("signout").addEventListener("click", () => signOut());
  $("skip").addEventListener("click", (e) => {
    e.preventDefault();
    $("main").focus();
  });
  document.addEventListener("parley:unauthenticated", (e) => signOut(e.detail));
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && app.me) poll();
  });
  window.addEventListener("hashchange", () => render(true));
  try {
    app.manifest = await api("GET", "/v1/manifest", { token: "" });
  } catch {
    app.manifest = null; // the console still works; profiles are then unknown
  }
  if (session.token) {
    try {
      app.me = await api("GET", "/v1/whoami");
    } catch (e) {
      if (e.status !== 401) return showSignIn(e);
      app.me = null;
    }
  }
  render(false);
}

function render(userNavigated) {
  if (!app.me) return showSignIn();
  const { name, id, params } = parseHash();
  if (!views[name]) {
    location.replace(home());
    return;
  }
  if (app.nav) app.nav.abort();
  app.nav = new AbortController();
  const main = $("main");
  main.setAttribute("aria-busy", "true");
  main.dataset.view = id ? `${name}:${id}` : name;
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.route === name || (name === "thread" && a.dataset.route === "threads") || (name === "claim" && a.dataset.route === "claims")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const ctx = {
    main,
    id,
    params,
    me: app.me,
    manifest: app.manifest,
    can: can(),
    signal: app.nav.signal,
    onEvents: null,
  };
  app.view = ctx;
  Promise.resolve()
    .then(() => views[name](ctx))
    .catch((e) => {
      // A view the user has left may still fail; only the current one speaks.
      if ((e && e.name === "AbortError") || app.view !== ctx) return;
      put(main, h("div", { class: "page-head" }, h("h1", null, "Something went wrong")), refusal(e instanceof Refusal ? e : new Refusal(0, "error", String(e))));
    })
    .finally(() => {
      if (app.view !== ctx) return;
      main.setAttribute("aria-busy", "false");
      if (userNavigated) {
        const h1 = main.querySelector("h1");
        if (h1) {
          h1.setAttribute("tabindex", "-1");
          h1.focus({ preventScroll: true });
        }
      }
    });
}

function showSession() {
  const c = can();
  // Shown and hidden by visibility, so the header keeps its size.
  $("nav").classList.remove("is-off");
  $("session").classList.remove("is-off");
  for (const a of document.querySelectorAll("#nav a")) {
    const need = a.dataset.needs;
    a.hidden = !!need && !c[need];
  }
  const id = $("identity");
  put(id,
    h("span", { class: "who" }, app.me.identity),
    app.me.label ? h("span", { class: "ki" }, `KI · ${app.me.label}`) : null,
    h("span", { class: "rights" }, (app.me.rights || []).join(" · ")),
  );
  id.title = `token ${app.me.token_id}`;
}

function showSignIn(err) {
  stopLive();
  app.view = null;
  if (app.nav) app.nav.abort();
  $("nav").classList.add("is-off");
  $("session").classList.add("is-off");
  document.title = "Sign in · Parley";
  const main = $("main");
  main.dataset.view = "signin";
  const input = h("input", {
    id: "signin-token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "signin-help",
  });
  const status = h("div", { class: "slot", id: "signin-status" }, err ? refusal(err, "Sign in") : null);
  const submit = h("button", { type: "submit", class: "btn primary" }, "Sign in");
  const form = h(
    "form",
    { id: "signin", class: "panel signin", novalidate: true },
    h("h1", null, "Sign in"),
    h("label", { for: "signin-token" }, "Token"),
    input,
    h(
      "p",
      { id: "signin-help", class: "help" },
      "Paste a Parley token (pt_…). It is kept in this tab's session storage only and is gone when you sign out or close the tab.",
    ),
    h("div", { class: "row" }, submit),
    status,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    if (!token) {
      put(status, refusal(new Refusal(0, "unauthenticated", "paste a token first"), "Sign in"));
      input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const me = await api("GET", "/v1/whoami", { token });
      session.set(token);
      input.value = "";
      app.me = me;
      if (!location.hash.startsWith("#/") || parseHash().name === "") location.replace(home());
      startLive();
      render(true);
    } catch (e2) {
      put(status, refusal(e2, "Sign in"));
      input.focus();
      input.select();
    } finally {
      submit.disabled = false;
    }
  });
  put(main, form);
  main.setAttribute("aria-busy", "false");
  input.focus();
}

function signOut(err) {
  session.clear();
  app.me = null;
  showSignIn(err);
}

// --- live: poll the events feed; when events arrive, the view reloads ---

function setLive(ok, text) {
  const el = $("live");
  el.className = ok ? "live is-live" : "live is-offline";
  el.textContent = text;
}

function startLive() {
  showSession();
  app.live = { cursor: {}, synced: {}, seen: new Set(), timer: 0, running: false, behind: false, stopped: false };
  setLive(true, "connecting…");
  poll();
}

function stopLive() {
  clearTimeout(app.live.timer);
  app.live.timer = 0;
  app.live.stopped = true;
}

// The feeds the console follows: the events feed (state changes:
// proposals, confirmations, reopenings) for every token, and for humans
// their inbox, where escalations show (an escalate awaits a human but
// changes no state, so it makes no event).
function feeds() {
  const list = [{ name: "events", path: "/v1/events", items: (p) => p.events, key: (e) => `${e.thread}#${e.seq}`, thread: (e) => e.thread }];
  if (can().human) list.push({ name: "inbox", path: "/v1/inbox", items: (p) => p.threads, key: (t) => `${t.id}@${t.version}`, thread: (t) => t.id });
  return list;
}

// drain reads one feed from its cursor; what is new once the feed has been
// read up to now goes into fresh. A feed may repeat an item within its
// settle window, so items are told apart by key, not by position.
async function drain(live, feed, fresh) {
  for (let i = 0; i < 10; i++) {
    const cursor = live.cursor[feed.name];
    const q = new URLSearchParams({ limit: String(EVENTS_PAGE) });
    if (cursor) q.set("since", cursor);
    const page = await api("GET", `${feed.path}?${q}`);
    if (live.stopped) return;
    const items = feed.items(page) || [];
    if (page.cursor) live.cursor[feed.name] = page.cursor;
    for (const it of items) {
      const key = `${feed.name}:${feed.key(it)}`;
      if (live.seen.has(key)) continue;
      live.seen.add(key);
      if (live.synced[feed.name]) fresh.push({ feed: feed.name, thread: feed.thread(it), item: it });
    }
    if (items.length < EVENTS_PAGE || !page.cursor || page.cursor === cursor) {
      live.synced[feed.name] = true;
      return;
    }
  }
  live.behind = true; // more to read: the next round comes at once
}

async function poll() {
  const live = app.live;
  if (live.stopped || live.running || !app.me) return;
  clearTimeout(live.timer);
  if (document.hidden) {
    live.timer = setTimeout(poll, POLL_MS);
    return;
  }
  live.running = true;
  live.behind = false;
  const fresh = [];
  try {
    for (const feed of feeds()) await drain(live, feed, fresh);
    if (live.stopped) return;
    if (live.seen.size > 5000) live.seen = new Set([...live.seen].slice(-2500));
    const now = new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
    setLive(true, `live · ${now}`);
    if (fresh.length && app.view && app.view.onEvents) {
      try {
        await app.view.onEvents(fresh);
      } catch {
        /* a view's refresh failure shows in the view */
      }
    }
  } catch (e) {
    if (live.stopped) return;
    setLive(false, `offline · ${e.reason || "error"}`);
  } finally {
    live.running = false;
  }
  if (!live.stopped) live.timer = setTimeout(poll, live.behind ? 0 : POLL_MS);
}

boot().then(() => {
  if (app.me) startLive();
});
