// The thread list: newest first, filtered by state, paged by cursor. The
// filter and the cursor are in the address (#/threads?state=…&cursor=…), so
// Back returns to the previous page.

import { api, more } from "../api.js";
import { h, put, route, time, party, stateBadge, awaiting, refusal, skeletons, empty, keepFocus } from "../dom.js";

const PAGE = 25;
const STATES = ["open", "answered", "decided", "closed", "deferred", "obsolete", "rejected"];

export async function threadsView(ctx) {
  const state = ctx.params.get("state") || "";
  const cursor = ctx.params.get("cursor") || "";
  document.title = (state ? `Threads · ${state}` : "Threads") + " · Parley";
  const states = ctx.manifest && ctx.manifest.states ? ctx.manifest.states.map((s) => s.state) : STATES;

  const filters = h(
    "nav",
    { class: "filters", "aria-label": "Filter by state" },
    ["", ...states].map((s) =>
      h("a", { href: route("threads", "", { state: s }), class: "chip", "aria-current": s === state ? "true" : null, "data-filter": s || "all" }, s || "all"),
    ),
  );
  const status = h("div", { class: "slot" });
  const list = h("ol", { id: "thread-list", class: "cards rows" }, skeletons(6, "row"));
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });
  put(ctx.main, h("div", { class: "page-head" }, h("h1", null, "Threads"), filters), status, list, pager);

  let shown = null; // what is on screen, to leave it alone when nothing changed
  async function load() {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (state) q.set("state", state);
    if (cursor) q.set("cursor", cursor);
    let page;
    try {
      page = await api("GET", "/v1/threads?" + q, { signal: ctx.signal });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      put(status, refusal(e, "The thread list"));
      put(list);
      shown = null;
      return;
    }
    put(status);
    const threads = page.threads || [];
    const sig = JSON.stringify([threads, page.cursor]);
    if (sig === shown) return;
    shown = sig;
    keepFocus(list, () => put(list, ...(threads.length ? threads.map(row) : [empty(state ? `No ${state} threads.` : "No threads yet.")])));
    put(pager,
      cursor ? h("a", { class: "btn", href: route("threads", "", { state }) }, "« First page") : null,
      more(page.cursor) ? h("a", { class: "btn", href: route("threads", "", { state, cursor: page.cursor }), rel: "next" }, "Next page »") : null,
    );
  }
  await load();
  ctx.onEvents = () => load();
}

function row(t) {
  return h(
    "li",
    { class: "card row", "data-thread": t.id },
    h("a", { class: "title", href: route("thread", t.id), "data-key": `t-${t.id}` }, h("span", { class: "id" }, t.id), " ", t.title),
    h("span", { class: "row-state" }, stateBadge(t)),
    h(
      "span",
      { class: "meta" },
      awaiting(t.awaiting),
      " · ",
      `${t.message_count} message${t.message_count === 1 ? "" : "s"}`,
      " · by ",
      party(t.creator),
      " · updated ",
      time(t.updated_at),
    ),
  );
}
