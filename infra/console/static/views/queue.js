// The review queue: escalations and unconfirmed proposals, oldest first,
// each with the message that caused it. Reloaded when the events feed moves.

import { api, enc, more } from "../api.js";
import { h, put, route, time, party, actBadge, stateBadge, stateBy, awaiting, isProposal, refusal, skeletons, empty, keepFocus, busy } from "../dom.js";

const PAGE = 50;
const SAFETY_MS = 30000;

export async function queueView(ctx) {
  document.title = "Queue · Parley";
  const status = h("div", { class: "slot", id: "queue-status" });
  const list = h("ol", { id: "queue-list", class: "cards", "aria-live": "off" }, skeletons(3, "queue"));
  const moreSlot = h("div", { class: "more" });
  const count = h("span", { class: "count", id: "queue-count" }, "");
  put(ctx.main,
    h(
      "div",
      { class: "page-head" },
      h("h1", null, "Review queue ", count),
      h("p", { class: "lede" }, "Escalations and unconfirmed proposals, oldest first. It refreshes by itself when the event feed moves."),
    ),
    status,
    list,
    moreSlot,
  );

  let items = [];
  let cursor = null;
  let generation = 0; // the newest load wins
  let shown = null; // what is on screen, to leave it alone when nothing changed

  async function load(reset) {
    const mine = ++generation;
    const q = new URLSearchParams({ limit: String(reset ? Math.min(200, Math.max(PAGE, items.length)) : PAGE) });
    if (!reset && cursor) q.set("cursor", cursor);
    let page;
    try {
      page = await api("GET", "/v1/queue?" + q, { signal: ctx.signal });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      if (mine !== generation) return;
      put(status, refusal(e, "The review queue"));
      if (reset) put(list);
      shown = null;
      return;
    }
    if (mine !== generation) return;
    put(status);
    const got = page.threads || [];
    items = reset ? got : items.concat(got);
    cursor = more(page.cursor) ? page.cursor : null;
    const sig = JSON.stringify([items, cursor]);
    if (sig === shown) return;
    shown = sig;
    keepFocus(list, () => put(list, ...(items.length ? items.map((it) => item(ctx, it, () => load(true))) : [empty("Nothing to review: no escalations, no open proposals.")])));
    count.textContent = items.length ? `(${items.length}${cursor ? "+" : ""})` : "";
    put(moreSlot,
      cursor
        ? h("button", { type: "button", class: "btn", onclick: (e) => busy(e.currentTarget, () => load(false)) }, "Load more")
        : null,
    );
  }

  await load(true);
  ctx.onEvents = () => load(true).catch(() => {});
  // A safety net for what no feed this token follows announces (an
  // escalation, for a moderator that is not a human): a slow reload.
  const timer = setInterval(() => {
    if (!document.hidden) load(true).catch(() => {});
  }, SAFETY_MS);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
}

function item(ctx, t, reload) {
  const result = h("div", { class: "slot" });
  const actions = h("div", { class: "actions" });
  if (isProposal(t) && ctx.can.lock && ctx.can.write) {
    const btn = h(
      "button",
      { type: "button", class: "btn primary", "data-action": "confirm", "data-write": "", "data-key": `confirm-${t.id}` },
      "Confirm ",
      h("strong", null, t.state),
    );
    btn.addEventListener("click", () =>
      busy(btn, async () => {
        put(result);
        try {
          await api("POST", `/v1/threads/${enc(t.id)}/confirm`, { body: { state: t.state } });
          await reload();
        } catch (e) {
          put(result, refusal(e, `Confirm ${t.state}`));
        }
      }),
    );
    actions.append(btn);
  }
  actions.append(h("a", { class: "btn", href: route("thread", t.id), "data-key": `open-${t.id}` }, "Open thread"));

  const m = t.message;
  const cause = m
    ? h(
        "blockquote",
        { class: "cause" },
        h("div", { class: "msg-head" }, actBadge(m.kind), " ", h("span", { class: "author" }, party(m.from)), m.author_kind === "human" ? h("span", { class: "tag human" }, "human") : null, " ", time(m.created_at), " ", h("span", { class: "id" }, m.id)),
        h("p", { class: "body" }, m.body),
      )
    : h("p", { class: "cause none" }, "Marked directly (no message); the thread's timeline shows the mark.");

  return h(
    "li",
    { class: `card queue-item q-${t.why === "escalated" ? "escalated" : "proposal"}`, "data-thread": t.id, "data-why": t.why },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: `why why-${t.why === "escalated" ? "escalated" : "proposal"}` }, t.why === "escalated" ? "escalated" : "proposal"),
      h("a", { class: "title", href: route("thread", t.id) }, h("span", { class: "id" }, t.id), " ", t.title),
      stateBadge(t),
    ),
    h("p", { class: "meta" }, stateBy(t), " · ", awaiting(t.awaiting), " · opened by ", party(t.creator), " ", time(t.created_at)),
    cause,
    actions,
    result,
  );
}
