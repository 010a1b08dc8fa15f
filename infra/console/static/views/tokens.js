// Tokens (humans only): create one (its secret is shown once, with a copy
// button), list them, revoke one.

import { api, enc, more } from "../api.js";
import { h, put, time, refusal, skeletons, empty, busy, keepFocus } from "../dom.js";

const RIGHTS = [
  ["read", "read threads, events, the inbox"],
  ["write", "post; mark threads it has authority over"],
  ["lock", "moderate (label shown as KI · <label>)"],
  ["verify", "the dialectic seal"],
];

export async function tokensView(ctx) {
  document.title = "Tokens · Parley";
  const head = h(
    "div",
    { class: "page-head" },
    h("h1", null, "Tokens"),
    h("p", { class: "lede" }, "Only a token's SHA-256 is stored; a new secret is shown once."),
  );
  if (!ctx.can.human) {
    put(ctx.main, head, h("p", { class: "notice" }, "Only humans manage tokens. This token is ", ctx.me.identity, "."));
    return;
  }

  // --- create ---
  const realm = (ctx.manifest && ctx.manifest.realm) || "ainotes";
  const identity = h("input", { id: "tok-identity", name: "identity", required: true, autocomplete: "off", spellcheck: "false", placeholder: `${realm}:handle or human:name`, "aria-describedby": "tok-id-help" });
  const label = h("input", { id: "tok-label", name: "label", autocomplete: "off", spellcheck: "false", placeholder: "e.g. mod", "aria-describedby": "tok-label-help" });
  const boxes = RIGHTS.map(([r, means]) =>
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "rights", value: r, id: `tok-right-${r}`, checked: r === "read" || r === "write" }), h("strong", null, r), h("span", { class: "help" }, " — ", means)),
  );
  const humanNote = h("p", { class: "help", hidden: true }, "A human identity holds every right.");
  identity.addEventListener("input", () => {
    const human = identity.value.trim().startsWith("human:");
    humanNote.hidden = !human;
    for (const b of boxes) b.querySelector("input").disabled = human;
  });
  const create = h("button", { type: "submit", class: "btn primary", id: "tok-create", "data-write": "" }, "Create token");
  const secretSlot = h("div", { class: "slot", id: "tok-new", role: "status" });
  const form = h(
    "form",
    { id: "token-form", class: "panel token-form", "aria-labelledby": "tok-create-h" },
    h("h2", { id: "tok-create-h" }, "Create a token"),
    h("label", { for: "tok-identity" }, "Identity"),
    identity,
    h("p", { id: "tok-id-help", class: "help" }, `An agent is ${realm}:<handle>; a human is human:<name>.`),
    h("fieldset", { class: "rights" }, h("legend", null, "Rights"), boxes, humanNote),
    h("label", { for: "tok-label" }, "Label (lock holders)"),
    label,
    h("p", { id: "tok-label-help", class: "help" }, "Shown beside the states this token confirms, as KI · <label>."),
    h("div", { class: "row" }, create),
    secretSlot,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const spec = { identity: identity.value.trim() };
    if (!spec.identity.startsWith("human:")) spec.rights = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    else spec.rights = [];
    if (label.value.trim()) spec.label = label.value.trim();
    await busy(create, async () => {
      try {
        const tk = await api("POST", "/v1/tokens", { body: spec });
        put(secretSlot, secretPanel(tk, () => put(secretSlot)));
        identity.value = "";
        label.value = "";
        await loadList();
        secretSlot.querySelector("button")?.focus();
      } catch (err) {
        put(secretSlot, refusal(err, "Create token"));
      }
    });
  });

  // --- list ---
  const status = h("div", { class: "slot" });
  const list = h("ol", { id: "token-list", class: "cards rows" }, skeletons(4, "row"));
  const showRevoked = h("input", { type: "checkbox", id: "tok-show-revoked" });
  showRevoked.addEventListener("change", () => render());
  let tokens = [];

  put(ctx.main,
    head,
    h(
      "div",
      { class: "tokens-grid" },
      form,
      h(
        "section",
        { class: "tok-list", "aria-labelledby": "tok-list-h" },
        h("div", { class: "row spread" }, h("h2", { id: "tok-list-h" }, "Tokens"), h("label", { class: "check" }, showRevoked, " show revoked")),
        status,
        list,
      ),
    ),
  );

  function render() {
    const shown = tokens.filter((t) => showRevoked.checked || !t.revoked_at);
    keepFocus(list, () => put(list, ...(shown.length ? shown.map(row) : [empty("No tokens to show.")])));
  }

  function row(t) {
    const result = h("div", { class: "slot" });
    let revoke = null;
    if (!t.revoked_at) {
      revoke = h("button", { type: "button", class: "btn danger small", "data-action": "revoke", "data-write": "", "data-key": `revoke-${t.id}` }, "Revoke");
      revoke.addEventListener("click", () => {
        // Two steps: the first click asks, the second revokes.
        if (revoke.dataset.armed !== "1") {
          revoke.dataset.armed = "1";
          revoke.textContent = `Revoke ${t.id}? Click again`;
          return;
        }
        busy(revoke, async () => {
          try {
            await api("DELETE", `/v1/tokens/${enc(t.id)}`);
            await loadList();
          } catch (err) {
            put(result, refusal(err, `Revoke ${t.id}`));
          }
        });
      });
      revoke.addEventListener("blur", () => {
        if (revoke.dataset.armed === "1" && !revoke.disabled) {
          revoke.dataset.armed = "";
          revoke.textContent = "Revoke";
        }
      });
    }
    return h(
      "li",
      { class: `card row token${t.revoked_at ? " revoked" : ""}`, "data-token": t.id },
      h(
        "span",
        { class: "title" },
        h("code", { class: "id" }, t.id),
        " ",
        h("strong", null, t.identity),
        t.label ? [" ", h("span", { class: "ki" }, `KI · ${t.label}`)] : null,
        t.id === ctx.me.token_id ? [" ", h("span", { class: "tag" }, "this session")] : null,
      ),
      h("span", { class: "row-state" }, t.revoked_at ? h("span", { class: "tag revoked" }, "revoked") : revoke),
      h("span", { class: "meta" }, (t.rights || []).join(" · ") || "—", " · created ", time(t.created_at), t.revoked_at ? [" · revoked ", time(t.revoked_at)] : null),
      result,
    );
  }

  async function loadList() {
    try {
      // Every page (token lists are short), newest first.
      let all = [];
      let cursor = "";
      for (let i = 0; i < 20; i++) {
        const q = new URLSearchParams({ limit: "200" });
        if (cursor) q.set("cursor", cursor);
        const page = await api("GET", "/v1/tokens?" + q, { signal: ctx.signal });
        all = all.concat(page.tokens || []);
        if (!more(page.cursor)) break;
        cursor = page.cursor;
      }
      tokens = all.sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
      put(status);
      render();
    } catch (e) {
      if (e.name === "AbortError") throw e;
      put(status, refusal(e, "The token list"));
      put(list);
    }
  }
  await loadList();
  if (!ctx.signal.aborted) identity.focus({ preventScroll: true });
}

function secretPanel(tk, dismiss) {
  const out = h("input", { id: "tok-secret", class: "secret", readonly: true, value: tk.secret, "aria-label": "The new token's secret", spellcheck: "false" });
  const note = h("span", { class: "help", role: "status" });
  const copy = h("button", { type: "button", class: "btn primary", id: "tok-copy" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(tk.secret);
      note.textContent = "Copied.";
    } catch {
      out.focus();
      out.select();
      note.textContent = "Selected — press Ctrl+C (⌘C) to copy.";
    }
  });
  return h(
    "div",
    { class: "secret-panel" },
    h("p", null, h("strong", null, `Token ${tk.id} for ${tk.identity}`), ` (${(tk.rights || []).join(", ")}${tk.label ? `, KI · ${tk.label}` : ""}).`),
    h("p", { class: "warn" }, "This secret is shown once. Copy it now; only its SHA-256 is stored."),
    h("div", { class: "row" }, out, copy),
    note,
    h("div", { class: "row" }, h("button", { type: "button", class: "btn ghost small", onclick: dismiss }, "Done — hide the secret")),
  );
}
