// Claims (the dialectic profile): the list by state, and one claim with its
// evidence, attestations, refutations, verification and supersession.

import { api, enc, more } from "../api.js";
import { h, put, cls, route, time, party, actBadge, refusal, skeletons, empty, evidenceList } from "../dom.js";

const PAGE = 25;
const STATES = ["unverified", "supported", "verified", "refuted", "superseded"];

function claimBadge(state, expired) {
  return h("span", { class: `cstate cstate-${cls(state)}` }, state, expired ? h("span", { class: "state-flag" }, "expired") : null);
}

function profileOff(ctx) {
  if (ctx.can.dialectic) return false;
  put(ctx.main,
    h("div", { class: "page-head" }, h("h1", null, "Claims")),
    h("p", { class: "notice" }, "This server runs without the dialectic profile: there are no claims."),
  );
  return true;
}

export async function claimsView(ctx) {
  document.title = "Claims · Parley";
  if (profileOff(ctx)) return;
  const state = ctx.params.get("state") || "";
  const cursor = ctx.params.get("cursor") || "";
  const profile = (ctx.manifest.profiles || []).find((p) => p.name === "dialectic") || {};
  const states = profile.claim_states || STATES;
  const filters = h(
    "nav",
    { class: "filters", "aria-label": "Filter by claim state" },
    ["", ...states].map((s) => h("a", { href: route("claims", "", { state: s }), class: "chip", "aria-current": s === state ? "true" : null }, s || "all")),
  );
  const status = h("div", { class: "slot" });
  const list = h("ol", { id: "claim-list", class: "cards rows" }, skeletons(5, "row"));
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });
  put(ctx.main, h("div", { class: "page-head" }, h("h1", null, "Claims"), filters), status, list, pager);

  const q = new URLSearchParams({ limit: String(PAGE) });
  if (state) q.set("state", state);
  if (cursor) q.set("cursor", cursor);
  let page;
  try {
    page = await api("GET", "/v1/claims?" + q, { signal: ctx.signal });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    put(status, refusal(e, "The claim list"));
    put(list);
    return;
  }
  const claims = page.claims || [];
  put(list,
    ...(claims.length
      ? claims.map((cl) =>
          h(
            "li",
            { class: "card row", "data-claim": cl.id },
            h("a", { class: "title", href: route("claim", cl.id) }, h("span", { class: "id" }, cl.id), " ", cl.body),
            h("span", { class: "row-state" }, claimBadge(cl.state, cl.expired)),
            h("span", { class: "meta" }, party(cl.author), " · ", `${(cl.evidence || []).length} evidence`, " · in ", h("a", { href: route("thread", cl.thread) }, cl.thread), " · updated ", time(cl.updated_at)),
          ),
        )
      : [empty(state ? `No ${state} claims.` : "No claims yet.")]),
  );
  put(pager,
    cursor ? h("a", { class: "btn", href: route("claims", "", { state }) }, "« First page") : null,
    more(page.cursor) ? h("a", { class: "btn", href: route("claims", "", { state, cursor: page.cursor }), rel: "next" }, "Next page »") : null,
  );
}

const VERB = { attest: "attested", refute: "refuted", verify: "verified", supersede: "superseded" };

export async function claimView(ctx) {
  const id = ctx.id;
  document.title = `${id} · Parley`;
  if (profileOff(ctx)) return;
  const body = h("div", { id: "claim", class: "claim" }, h("div", { class: "sk sk-card", "aria-hidden": "true" }), h("div", { class: "sk sk-card", "aria-hidden": "true" }));
  put(ctx.main, h("div", { class: "page-head" }, h("p", { class: "crumbs" }, h("a", { href: route("claims") }, "Claims"), " / ", id), h("h1", null, `Claim ${id}`)), body);
  let cl;
  try {
    cl = await api("GET", `/v1/claims/${enc(id)}`, { signal: ctx.signal });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    put(body, refusal(e, `Claim ${id}`));
    return;
  }
  const history = cl.history || [];
  const counts = {};
  for (const x of history) counts[x.kind] = (counts[x.kind] || 0) + 1;
  const summary = ["attest", "refute", "verify", "supersede"].filter((k) => counts[k]).map((k) => `${counts[k]} ${k === "attest" ? "attestation" : k === "refute" ? "refutation" : k === "verify" ? "verification" : "supersession"}${counts[k] > 1 ? "s" : ""}`);

  put(body,
    h(
      "section",
      { class: "panel", "aria-labelledby": "claim-h" },
      h("h2", { id: "claim-h", class: "sr-only" }, "The claim"),
      h("div", { class: "state-line" }, claimBadge(cl.state, cl.expired), " ", h("span", { class: "meta" }, `version ${cl.version}`)),
      h("blockquote", { class: "cause" }, h("p", { class: "body" }, cl.body)),
      h(
        "p",
        { class: "meta" },
        "asserted by ",
        h("strong", null, party(cl.author)),
        " ",
        time(cl.created_at),
        " in ",
        h("a", { href: route("thread", cl.thread) }, cl.thread),
        ` (${cl.message})`,
        cl.valid_until ? [" · valid until ", time(cl.valid_until), cl.expired ? " (expired)" : ""] : null,
      ),
      (cl.supersedes || []).length ? h("p", { class: "supersedes" }, "supersedes ", cl.supersedes.map((s, i) => [i ? ", " : "", h("a", { href: route("claim", s) }, s)])) : null,
      cl.superseded_by ? h("p", { class: "supersedes" }, "superseded by ", h("a", { href: route("claim", cl.superseded_by) }, cl.superseded_by)) : null,
      h("h3", null, "Evidence"),
      evidenceList(cl.evidence) || h("p", { class: "muted" }, "none"),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "hist-h" },
      h("h2", { id: "hist-h" }, "History"),
      h("p", { class: "meta" }, summary.length ? summary.join(" · ") : "No attestations, refutations, verification or supersession yet."),
      h(
        "ol",
        { class: "timeline", id: "claim-history" },
        history.map((x) =>
          h(
            "li",
            { class: `ev hist-${cls(x.kind)}` },
            h("div", { class: "ev-line" }, actBadge(x.kind), " ", x.from ? `${x.from} → ` : "", h("strong", null, x.to || VERB[x.kind] || "")),
            h("div", { class: "ev-meta" }, typeof x.actor === "string" ? x.actor : party(x.actor), x.message ? [" · ", x.message] : null, " · ", time(x.at)),
            evidenceList(x.evidence),
          ),
        ),
      ),
    ),
  );
}
