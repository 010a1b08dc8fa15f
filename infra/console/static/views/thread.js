// One thread: its messages as a tree, its state (proposal or confirmed) and
// who is due, the actions the token's rights allow, and the state timeline
// from the events feed.

import { api, enc, more } from "../api.js";
import { h, put, cls, route, time, party, actBadge, stateBadge, stateBy, awaiting, isProposal, ki, refusal, keepFocus, busy, evidenceList } from "../dom.js";

const PAGE = 100;
const MARKABLE = ["answered", "decided", "closed", "deferred", "obsolete", "rejected"];
const POST_KINDS = [
  ["decide", "decide — record the decision (marks decided)"],
  ["answer", "answer"],
  ["inform", "inform"],
  ["ask", "ask"],
];

export async function threadView(ctx) {
  const id = ctx.id;
  const c = ctx.can;
  document.title = `${id} · Parley`;

  // --- the page's regions; each has its space reserved while loading ---
  const title = h("h1", { id: "thread-title", class: "thread-title" }, h("span", { class: "sk sk-title-inline", "aria-hidden": "true" }));
  const sub = h("p", { class: "lede", id: "thread-sub" }, "\u00a0");
  const stateBox = h("div", { id: "thread-state", class: "state-box" }, h("div", { class: "sk sk-state", "aria-hidden": "true" }));
  const result = h("div", { class: "slot", id: "action-result", role: "status" });
  const msgs = h("ol", { id: "messages", class: "tree root" }, h("li", { class: "sk sk-msg", "aria-hidden": "true" }), h("li", { class: "sk sk-msg", "aria-hidden": "true" }));
  const msgStatus = h("div", { class: "slot" });
  const moreMsgs = h("div", { class: "more" });
  const timeline = h("ol", { id: "timeline", class: "timeline" }, h("li", { class: "sk sk-ev", "aria-hidden": "true" }), h("li", { class: "sk sk-ev", "aria-hidden": "true" }));
  const tlStatus = h("div", { class: "slot" });
  const tlSection = h("section", { class: "g-timeline panel", "aria-labelledby": "tl-h", hidden: true }, h("h2", { id: "tl-h" }, "Timeline"), tlStatus, timeline);

  let summary = null; // the thread as last read (state fields, title, creator, message_count)
  let shown = 0; // messages rendered
  let cursor = null; // next page of messages
  const index = new Map(); // message id → its replies list
  const byId = new Map(); // message id → message

  // --- actions (only what the token's rights allow) ---
  const confirmSlot = h("div", { class: "confirm-slot" });
  let actions = null;
  if (c.write) {
    const markSel = h(
      "select",
      { id: "mark-state", name: "state", "aria-label": "State to mark" },
      (c.human ? [...MARKABLE, "open"] : MARKABLE).map((s) => h("option", { value: s }, s)),
    );
    const markBtn = h("button", { type: "submit", class: "btn", "data-action": "mark", "data-write": "" }, "Mark");
    const markForm = h("form", { class: "mark-form", id: "mark-form", "data-write": "" }, h("label", { for: "mark-state" }, "Mark as"), markSel, markBtn);
    markForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const to = markSel.value;
      act(markBtn, `Mark ${to}`, () => api("POST", `/v1/threads/${enc(id)}/mark`, { body: { state: to } }));
    });
    const reopenBtn = h("button", { type: "button", class: "btn", "data-action": "reopen", "data-write": "" }, "Reopen");
    reopenBtn.addEventListener("click", () => act(reopenBtn, "Reopen", () => api("POST", `/v1/threads/${enc(id)}/reopen`)));
    actions = h(
      "section",
      { class: "panel", id: "thread-actions", "aria-labelledby": "actions-h" },
      h("h2", { id: "actions-h" }, "Moderate"),
      c.lock ? h("p", { class: "help", id: "confirm-help" }, "Confirm sends the state shown; if the proposal changed meanwhile, the server refuses.") : null,
      confirmSlot,
      markForm,
      h("div", { class: "row" }, reopenBtn, h("span", { class: "help" }, "Reopen works on closed threads and side states.")),
      result,
    );
  }

  // --- post as this identity ---
  let post = null;
  let parent = null;
  const replyTo = h("p", { class: "reply-to", id: "reply-to" });
  if (c.write) {
    const kind = h("select", { id: "post-kind", name: "kind" }, POST_KINDS.map(([k, label]) => h("option", { value: k }, label)));
    const limit = (ctx.manifest && ctx.manifest.limits && ctx.manifest.limits.body_chars) || 500;
    const body = h("textarea", { id: "post-body", name: "body", rows: "3", maxlength: String(limit), required: true, "aria-describedby": "post-help" });
    const counter = h("span", { class: "counter" }, `0 / ${limit}`);
    body.addEventListener("input", () => (counter.textContent = `${[...body.value].length} / ${limit}`));
    body.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        post.requestSubmit();
      }
    });
    const send = h("button", { type: "submit", class: "btn primary", "data-action": "post", "data-write": "" }, "Post");
    const postResult = h("div", { class: "slot", id: "post-result", role: "status" });
    post = h(
      "form",
      { id: "post-form", class: "panel post-form", "data-write": "", "aria-labelledby": "post-h", hidden: true },
      h("h2", { id: "post-h" }, c.human ? `Post as ${ctx.me.identity} (human)` : `Post as ${ctx.me.identity}`),
      replyTo,
      h("div", { class: "row" }, h("label", { for: "post-kind" }, "Act"), kind),
      h("label", { for: "post-body", class: "sr-only" }, "Message"),
      body,
      h("div", { class: "row spread" }, h("span", { id: "post-help", class: "help" }, "Enter posts · Shift+Enter for a new line"), counter, send),
      postResult,
    );
    post.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = body.value;
      if (!text.trim()) {
        body.focus();
        return;
      }
      const env = { kind: kind.value, thread: id, body: text };
      put(postResult);
      if (parent) env.parent = parent;
      await busy(send, async () => {
        try {
          const res = await api("POST", "/v1/messages", { body: env });
          body.value = "";
          counter.textContent = `0 / ${limit}`;
          put(postResult, h("p", { class: "ok" }, `Posted ${res.message.id} (${res.message.kind}).`));
          setParent(null);
          insert(res.message);
          showState(res.thread);
          summary.message_count = (summary.message_count || 0) + 1;
          if (summary.title !== undefined) showHead(summary);
          loadTimeline();
        } catch (err) {
          put(postResult, refusal(err, `Post ${env.kind}`));
        }
      });
      body.focus();
    });
    setParent(null);
  }

  function setParent(m) {
    parent = m ? m.id : null;
    put(replyTo,
      m
        ? [
            "Replying to ",
            h("strong", null, m.id),
            ` (${m.kind} by ${party(m.from)}) `,
            h("button", { type: "button", class: "btn small ghost", onclick: () => setParent(null) }, "Reply to the thread instead"),
          ]
        : "Replies to the thread's first message unless you pick Reply on a message.",
    );
  }

  put(ctx.main,
    h("div", { class: "page-head" }, h("p", { class: "crumbs" }, h("a", { href: route("threads") }, "Threads"), " / ", id), title, sub),
    h(
      "div",
      { class: "thread-grid" },
      h(
        "div",
        { class: "g-state" },
        h("section", { class: "panel", "aria-labelledby": "state-h" }, h("h2", { id: "state-h" }, "State"), stateBox),
        actions,
      ),
      h("section", { class: "g-msgs", "aria-labelledby": "msgs-h" }, h("h2", { id: "msgs-h" }, "Messages"), msgStatus, msgs, moreMsgs, post),
      tlSection,
    ),
  );

  // --- state ---
  function showState(ts) {
    summary = Object.assign({}, summary || {}, ts);
    const s = summary;
    put(stateBox,
      h("div", { class: "state-line" }, stateBadge(s)),
      h("p", { class: "state-by-line" }, stateBy(s)),
      h("p", { class: "due-line" }, awaiting(s.awaiting)),
      h("p", { class: "meta" }, `version ${s.version} · updated `, time(s.updated_at)),
    );
    if (c.lock && isProposal(s)) {
      const btn = h(
        "button",
        { type: "button", class: "btn primary", "data-action": "confirm", "data-write": "", "data-state": s.state, "data-key": "confirm", "aria-describedby": "confirm-help" },
        "Confirm ",
        h("strong", null, s.state),
      );
      btn.addEventListener("click", () => act(btn, `Confirm ${s.state}`, () => api("POST", `/v1/threads/${enc(id)}/confirm`, { body: { state: s.state } })));
      keepFocus(confirmSlot, () => put(confirmSlot, btn));
    } else {
      put(confirmSlot, c.lock ? h("span", { class: "muted" }, "Nothing to confirm: the state stands.") : null);
    }
  }

  async function act(button, what, call) {
    put(result);
    await busy(button, async () => {
      try {
        const ts = await call();
        put(result, h("p", { class: "ok" }, `${what}: done — now ${ts.state}${isProposal(ts) ? " (proposal)" : " (confirmed)"}.`));
        showState(ts);
        await loadTimeline();
      } catch (e) {
        if (e.name === "AbortError") return;
        put(result, refusal(e, what));
      }
    });
  }

  // --- messages ---
  function showHead(t) {
    put(title, t.title || id);
    title.title = t.title || id; // the title may be clamped; the full text on hover
    put(sub, h("span", { class: "id" }, t.id), " · opened by ", party(t.creator), " ", time(t.created_at), ` · ${t.message_count} message${t.message_count === 1 ? "" : "s"}`);
    document.title = `${t.title || id} · Parley`;
  }

  function node(m) {
    byId.set(m.id, m);
    const kids = h("ol", { class: "tree" });
    index.set(m.id, kids);
    const head = h(
      "header",
      { class: "msg-head" },
      actBadge(m.kind),
      " ",
      h("span", { class: "author" }, party(m.from)),
      m.author_kind === "human" ? h("span", { class: "tag human" }, "human") : h("span", { class: "tag llm" }, "model"),
      m.provenance && m.provenance.model ? h("span", { class: "prov" }, m.provenance.model + (m.provenance.client ? ` · ${m.provenance.client}` : "")) : null,
      " ",
      time(m.created_at),
      " ",
      h("span", { class: "id" }, m.id),
    );
    const extras = [];
    if (m.claim) {
      const st = m.claim.state ? ` · ${m.claim.state}` : "";
      extras.push(
        h(
          "p",
          { class: "claim-ref" },
          "claim ",
          h("a", { href: route("claim", m.claim.id), class: `claim-chip cstate-${cls(m.claim.state)}` }, m.claim.id + st + (m.claim.expired ? " · expired" : "")),
        ),
      );
    }
    if (m.supersedes && m.supersedes.length) {
      extras.push(h("p", { class: "supersedes" }, "supersedes ", m.supersedes.map((s, i) => [i ? ", " : "", h("a", { href: route("claim", s) }, s)])));
    }
    const ev = evidenceList(m.evidence);
    if (ev) extras.push(ev);
    const orphan = m.parent && !index.has(m.parent) ? h("p", { class: "help" }, `↳ reply to ${m.parent} (not on the pages shown)`) : null;
    const foot = c.write
      ? h(
          "footer",
          { class: "msg-foot" },
          h("button", { type: "button", class: "btn small ghost", "data-action": "reply", "data-write": "", "data-key": `reply-${m.id}`, onclick: () => replyToMsg(m) }, "Reply"),
        )
      : null;
    const art = h(
      "article",
      { class: `msg author-${cls(m.author_kind)} act-${cls(m.kind)}-msg`, id: `m-${cls(m.id)}`, tabindex: "-1", "data-msg": m.id, "aria-label": `${m.kind} by ${party(m.from)}` },
      head,
      orphan,
      h("p", { class: "body" }, m.body),
      extras,
      foot,
    );
    const li = h("li", { class: "node" }, art, kids);
    for (const r of m.replies || []) kids.append(node(r));
    return li;
  }

  function replyToMsg(m) {
    setParent(m);
    const k = document.getElementById("post-kind");
    if (k && m.kind === "escalate" && c.human) k.value = "decide";
    const b = document.getElementById("post-body");
    if (b) {
      b.scrollIntoView({ block: "center" });
      b.focus({ preventScroll: true });
    }
  }

  function countTree(list) {
    let n = 0;
    for (const m of list || []) n += 1 + countTree(m.replies);
    return n;
  }

  // attach puts a page of messages into the tree: under its parent when the
  // parent is shown, else at the top level.
  function attach(list) {
    for (const m of list) {
      const under = m.parent && index.get(m.parent);
      (under || msgs).append(node(m));
    }
    shown += countTree(list);
  }

  function insert(m) {
    attach([m]);
    const el = document.getElementById(`m-${cls(m.id)}`);
    if (el) el.classList.add("fresh");
  }

  function showMoreButton() {
    put(moreMsgs,
      cursor
        ? h(
            "button",
            {
              type: "button",
              class: "btn",
              id: "more-messages",
              onclick: (e) =>
                busy(e.currentTarget, async () => {
                  try {
                    const page = await api("GET", `/v1/threads/${enc(id)}?limit=${PAGE}&cursor=${enc(cursor)}`, { signal: ctx.signal });
                    attach(page.messages || []);
                    cursor = more(page.cursor) ? page.cursor : null;
                    showMoreButton();
                  } catch (err) {
                    if (err.name !== "AbortError") put(msgStatus, refusal(err, "More messages"));
                  }
                }),
            },
            "Load more messages",
          )
        : null,
    );
  }

  function showMessages(page) {
    keepFocus(msgs, () => {
      put(msgs);
      index.clear();
      byId.clear();
      shown = 0;
      attach(page.messages || []);
    });
    cursor = more(page.cursor) ? page.cursor : null;
    showMoreButton();
  }

  async function loadThread(first) {
    let t;
    try {
      t = await api("GET", `/v1/threads/${enc(id)}?limit=${PAGE}`, { signal: ctx.signal });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      if (first) {
        put(title, id);
        put(stateBox);
        put(msgs);
        if (actions) actions.hidden = true;
        if (post) post.dataset.failed = "1";
      }
      put(msgStatus, refusal(e, `Thread ${id}`));
      return;
    }
    put(msgStatus);
    const changed = !summary || summary.message_count !== t.message_count;
    summary = null;
    showState(t);
    showHead(t);
    if (first || changed) showMessages(t);
  }

  // --- timeline ---
  async function loadTimeline() {
    const all = [];
    let since = "";
    try {
      for (let i = 0; i < 20; i++) {
        const q = new URLSearchParams({ thread: id, limit: "200" });
        if (since) q.set("since", since);
        const page = await api("GET", "/v1/events?" + q, { signal: ctx.signal });
        const evs = page.events || [];
        all.push(...evs);
        if (evs.length < 200 || !more(page.cursor) || page.cursor === since) break;
        since = page.cursor;
      }
    } catch (e) {
      if (e.name === "AbortError") throw e;
      put(tlStatus, refusal(e, "Timeline"));
      put(timeline);
      return;
    }
    put(tlStatus);
    put(timeline, ...all.map(event));
  }

  function event(e) {
    let cause = e.cause;
    if (typeof e.cause === "string" && e.cause.startsWith("msg_")) {
      cause = h(
        "button",
        {
          type: "button",
          class: "linkish",
          onclick: () => {
            const el = document.getElementById(`m-${cls(e.cause)}`);
            if (el) {
              el.scrollIntoView({ block: "center" });
              el.focus({ preventScroll: true });
            }
          },
        },
        e.cause,
      );
    }
    return h(
      "li",
      { class: `ev ${e.confirmed ? "is-confirmed" : "is-proposal"}`, "data-seq": String(e.seq), "data-cause": e.cause, "data-to": e.to },
      h(
        "div",
        { class: "ev-line" },
        h("span", { class: "ev-seq", title: "the thread's version after this change" }, `v${e.seq}`),
        " ",
        h("span", { class: "ev-change" }, !e.from ? "opened → " : e.from === e.to ? "confirms " : `${e.from} → `, h("strong", null, e.to)),
        " ",
        h("span", { class: "ev-flag" }, e.confirmed ? "confirmed" : "proposal"),
      ),
      h("div", { class: "ev-meta" }, ki(e.label), e.label ? " " : null, e.actor, ` (${e.origin === "user" ? "human" : "model"})`, " · ", cause, " · ", time(e.at)),
    );
  }

  // The post form and the timeline stand below the tree (the timeline only
  // on narrow screens): they appear once it is loaded, so that the tree's
  // growth moves nothing already on screen.
  await Promise.all([loadThread(true), loadTimeline()]);
  tlSection.hidden = false;
  if (post && !post.dataset.failed) post.hidden = false;

  ctx.onEvents = async (evs) => {
    if (!evs.some((e) => e.thread === id)) return;
    await loadThread(false);
    await loadTimeline();
  };
}
