// The approval page's script: sign-in, the live pending set (Server-Sent
// Events), filters and search, the open request (approve, approve with
// edits after a diff, reject with a reason), keyboard shortcuts, and the
// history. Every value from the service is inserted as text, never HTML.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  let csrf = null; // the session's CSRF token, in memory only
  let events = null;
  const rows = new Map(); // request id -> {view, deadline, el}
  let openId = null;
  let selectedId = null;
  let wanted = (location.hash.match(/request=([A-Za-z0-9._-]+)/) || [])[1] || null;

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const json = (v) => (v === null || v === undefined ? "(none)" : JSON.stringify(v, null, 2));
  const reasonText = (v) => [v.reason, v.message].filter(Boolean).join(" — ") || "(no reason)";
  const fmtLeft = (ms) => {
    if (ms <= 0) return "expired";
    const s = Math.floor(ms / 1000), m = Math.floor(s / 60);
    return m > 0 ? `${m}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  };
  const fmtTime = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "—");

  function show(signedIn) {
    $("signin").hidden = signedIn;
    $("app").hidden = !signedIn;
    $("bar").hidden = !signedIn;
    if (!signedIn) $("token").focus();
  }

  async function api(method, path, body) {
    const headers = { "content-type": "application/json" };
    if (csrf) headers["x-csrf-token"] = csrf;
    const res = await fetch(path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = {};
    try { data = await res.json(); } catch (_) { /* 204 */ }
    if (res.status === 401 && path !== "/api/login") signedOut();
    return { ok: res.ok, code: res.status, data };
  }

  function signedIn(session) {
    csrf = session.csrf;
    $("who").textContent = session.approver;
    show(true);
    connect();
  }

  function signedOut() {
    csrf = null;
    if (events) { events.close(); events = null; }
    for (const r of rows.values()) r.el.remove();
    rows.clear();
    closeDetail();
    show(false);
  }

  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    const { ok, code } = await api("POST", "/api/login", { token }).catch(() => ({ ok: false, code: 0 }));
    if (!ok) {
      $("signin-error").textContent = code === 403 ? "This token may not approve." : "Sign-in refused.";
      return;
    }
    $("signin-error").textContent = "";
    const s = await api("GET", "/api/session");
    if (s.ok) signedIn(s.data);
  });
  $("signout").addEventListener("click", async () => {
    await api("POST", "/api/logout").catch(() => {});
    signedOut();
  });

  function tab(name) {
    $("view-pending").hidden = name !== "pending";
    $("view-history").hidden = name !== "history";
    for (const t of ["pending", "history"]) {
      if (t === name) $(`tab-${t}`).setAttribute("aria-current", "page");
      else $(`tab-${t}`).removeAttribute("aria-current");
    }
    if (name === "history") loadHistory();
  }
  $("tab-pending").addEventListener("click", () => tab("pending"));
  $("tab-history").addEventListener("click", () => tab("history"));

  // ---- the pending set -------------------------------------------------

  function makeCard(v) {
    const li = el("li");
    li.dataset.requestId = v.request_id;
    const head = el("div", "card-head");
    head.append(el("span", "tool", v.tool_name || v.point), el("span", "agent", v.agent || v.host));
    const meta = el("div", "meta");
    for (const [cls, label] of [["point", "point"], ["tenant", "tenant"], ["session", "session"],
      ["submitted", "submitted"], ["left", "left"], ["seen", "seen by"]]) {
      const s = el("span");
      s.append(`${label} `, el("strong", cls));
      meta.append(s);
    }
    const args = el("pre", "json args");
    args.id = `args-${v.request_id}`;
    const argsLabel = el("p", "args-label", "Arguments");
    const actions = el("p", "actions");
    for (const [action, label, cls] of [["open", "Open", ""], ["approve", "Approve", "approve"], ["reject", "Reject…", "reject"]]) {
      const b = el("button", cls, label);
      b.type = "button";
      b.dataset.action = action;
      b.setAttribute("aria-label", `${label.replace("…", "")} ${v.request_id} (${v.tool_name || v.point})`);
      b.addEventListener("click", () => {
        select(v.request_id);
        if (action === "approve") decide(v.request_id, "approve");
        else openDetail(v.request_id, action === "reject" ? "note" : "args");
      });
      actions.append(b);
    }
    li.append(head, meta, el("p", "reason"), argsLabel, args, actions);
    li.addEventListener("click", (e) => { if (e.target === li) select(v.request_id); });
    return li;
  }

  function fill(r) {
    const v = r.view, q = (c) => r.el.querySelector(`.${c}`);
    q("point").textContent = v.point;
    q("tenant").textContent = v.tenant || "—";
    q("session").textContent = v.session_id;
    q("submitted").textContent = fmtTime(v.submitted_at_ms);
    q("seen").textContent = v.seen_by.join(", ") || "—";
    q("reason").textContent = reasonText(v);
    q("args").textContent = json(v.target);
  }

  function render(list) {
    const now = Date.now();
    const ids = new Set(list.map((v) => v.request_id));
    for (const [id, r] of rows) {
      if (!ids.has(id)) {
        r.el.remove(); rows.delete(id);
        if (openId === id) closeDetail();
        if (selectedId === id) selectedId = null;
      }
    }
    for (const v of list) {
      let r = rows.get(v.request_id);
      if (!r) {
        r = { el: makeCard(v) };
        rows.set(v.request_id, r);
        $("pending").append(r.el);
      }
      r.view = v;
      r.deadline = now + v.remaining_ms;
      fill(r);
      if (openId === v.request_id) fillTrail(v);
    }
    refreshFilters();
    applyFilters();
    tick();
    if (wanted && rows.has(wanted)) { const id = wanted; wanted = null; select(id); openDetail(id, "args"); }
  }

  function tick() {
    const now = Date.now();
    for (const [id, r] of rows) {
      const left = r.deadline - now;
      const s = r.el.querySelector(".left");
      s.textContent = fmtLeft(left);
      s.classList.toggle("low", left < 30000);
      if (id === openId) $("detail-left").textContent = fmtLeft(left);
    }
  }
  setInterval(tick, 500);

  // ---- filters and search ----------------------------------------------

  const selects = ["f-agent", "f-tool", "f-tenant", "f-point"].map($);
  function refreshFilters() {
    for (const s of selects) {
      const key = s.dataset.key, current = s.value;
      const values = [...new Set([...rows.values()].map((r) => r.view[key]).filter(Boolean))].sort();
      if (current && !values.includes(current)) values.push(current);
      s.replaceChildren(el("option", "", "any"), ...values.map((v) => el("option", "", v)));
      s.options[0].value = "";
      s.value = current;
    }
  }

  function matches(r, now) {
    const v = r.view;
    for (const s of selects) if (s.value && v[s.dataset.key] !== s.value) return false;
    const age = Number($("f-age").value || 0);
    if (age && !(v.submitted_at_ms && now - v.submitted_at_ms >= age)) return false;
    const q = $("search").value.trim().toLowerCase();
    if (!q) return true;
    return [v.request_id, v.tool_name, v.agent, v.tenant, v.session_id, v.host, v.reason, v.message, v.point]
      .some((f) => f && String(f).toLowerCase().includes(q));
  }

  function applyFilters() {
    const now = Date.now();
    let shown = 0;
    for (const r of rows.values()) {
      r.el.hidden = !matches(r, now);
      if (!r.el.hidden) shown += 1;
    }
    $("count").textContent = rows.size ? `(${rows.size})` : "";
    $("empty").hidden = rows.size !== 0;
    $("filtered-empty").hidden = rows.size === 0 || shown !== 0;
  }
  $("filters").addEventListener("input", applyFilters);
  $("filters").addEventListener("change", applyFilters);
  $("filters").addEventListener("reset", () => setTimeout(applyFilters));
  $("filters").addEventListener("submit", (e) => e.preventDefault());

  // ---- selection, the open request ---------------------------------------

  function visibleIds() {
    return [...rows.entries()].filter(([, r]) => !r.el.hidden).map(([id]) => id);
  }
  function select(id) {
    selectedId = id;
    for (const [rid, r] of rows) r.el.classList.toggle("selected", rid === id);
    const r = rows.get(id);
    if (r) r.el.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    const ids = visibleIds();
    if (!ids.length) return;
    const i = ids.indexOf(selectedId);
    select(ids[i < 0 ? 0 : Math.min(ids.length - 1, Math.max(0, i + step))]);
  }

  function fillTrail(v) {
    const ol = $("detail-trail");
    ol.replaceChildren(...v.trail.map((t) => el("li", "",
      `${fmtTime(t.at_ms)} · ${t.point} · ${t.tool_name || "—"} · ${t.reason || "(no reason)"} · ${t.outcome} (${t.request_id})`)));
    $("detail-trail-empty").hidden = v.trail.length !== 0;
  }

  // "Seen" is sent when a person opens a request, not when it is listed.
  function openDetail(id, focus) {
    const r = rows.get(id);
    if (!r) return;
    openId = id;
    const v = r.view;
    $("detail-id").textContent = id;
    const facts = [["Agent", v.agent], ["Tenant", v.tenant], ["Session", v.session_id], ["Point", v.point],
      ["Tool", v.tool_name], ["Host", v.host], ["Submitted", fmtTime(v.submitted_at_ms)], ["Time left", ""]];
    $("detail-facts").replaceChildren(...facts.flatMap(([k, val]) => {
      const dd = el("dd", "", val || "—");
      if (k === "Time left") dd.id = "detail-left";
      return [el("dt", "", k), dd];
    }));
    $("detail-reason").textContent = reasonText(v);
    $("detail-approval").textContent = json(v.approval);
    $("detail-args").value = json(v.target);
    $("detail-args").removeAttribute("aria-invalid");
    $("detail-context").textContent = json(v.context);
    $("detail-context-box").open = false;
    $("detail-error").textContent = "";
    $("detail-note").value = "";
    fillTrail(v);
    $("detail").hidden = false;
    tick();
    (focus === "note" ? $("detail-note") : $("detail-args")).focus();
    api("POST", "/api/seen", { request_id: id }).catch(() => {});
  }
  function closeDetail() {
    openId = null;
    $("detail").hidden = true;
  }
  $("detail-close").addEventListener("click", closeDetail);

  // The edited arguments, or null after saying why they are not valid JSON.
  function editedArgs() {
    try {
      const v = JSON.parse($("detail-args").value);
      $("detail-error").textContent = "";
      $("detail-args").removeAttribute("aria-invalid");
      return { value: v };
    } catch (e) {
      $("detail-error").textContent = `Not valid JSON: ${e.message}`;
      $("detail-args").setAttribute("aria-invalid", "true");
      return null;
    }
  }
  $("detail-args").addEventListener("input", () => editedArgs());

  // What changed between `a` and `b`, as [kind, path, before, after].
  function diff(a, b, path = "$", out = []) {
    const obj = (x) => x !== null && typeof x === "object";
    if (obj(a) && obj(b) && Array.isArray(a) === Array.isArray(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const p = Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`;
        if (!(k in b)) out.push(["removed", p, a[k], undefined]);
        else if (!(k in a)) out.push(["added", p, undefined, b[k]]);
        else diff(a[k], b[k], p, out);
      }
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(["changed", path, a, b]);
    }
    return out;
  }
  function diffList(ul, changes) {
    const show = (x) => (x === undefined ? "" : JSON.stringify(x));
    ul.replaceChildren(...(changes.length ? changes.map(([kind, p, before, after]) => el("li", kind,
      kind === "added" ? `+ ${p}: ${show(after)}` : kind === "removed" ? `− ${p}: ${show(before)}`
        : `~ ${p}: ${show(before)} → ${show(after)}`)) : [el("li", "", "no change")]));
    ul.classList.add("diff");
  }

  $("detail-approve").addEventListener("click", () => {
    if (openId) decide(openId, "approve", undefined, $("detail-note").value);
  });
  $("detail-approve-edited").addEventListener("click", () => {
    if (!openId) return;
    const edited = editedArgs();
    if (!edited) { $("detail-args").focus(); return; }
    diffList($("confirm-diff"), diff(rows.get(openId).view.target, edited.value));
    $("confirm").dataset.requestId = openId;
    $("confirm").showModal();
    $("confirm-ok").focus();
  });
  $("confirm-ok").addEventListener("click", () => {
    const id = $("confirm").dataset.requestId;
    const edited = editedArgs();
    $("confirm").close();
    if (id && edited) decide(id, "approve", edited.value, $("detail-note").value);
  });
  $("confirm-cancel").addEventListener("click", () => $("confirm").close());
  $("detail-reject").addEventListener("click", () => {
    if (!openId) return;
    const reason = $("detail-note").value.trim();
    if (!reason) {
      $("detail-error").textContent = "Say why in the note: the agent is shown the reason.";
      $("detail-note").focus();
      return;
    }
    decide(openId, "reject", undefined, reason);
  });

  async function decide(id, outcome, args, message) {
    const r = rows.get(id);
    if (!r) return;
    r.el.querySelectorAll("button").forEach((b) => (b.disabled = true));
    const body = { request_id: id, outcome, context_identity: r.view.context_identity };
    if (args !== undefined) body.args = args;
    if (message) body.message = message;
    const { ok, data } = await api("POST", "/api/decide", body)
      .catch(() => ({ ok: false, data: { status: "network error" } }));
    const what = args !== undefined ? `${outcome} (edited)` : outcome;
    $("status").textContent = `${id}: ${what} ${ok ? "accepted" : "refused (" + data.status + ")"}`;
    if (!ok) r.el.querySelectorAll("button").forEach((b) => (b.disabled = false));
    else if (openId === id) closeDetail();
  }

  // ---- history -----------------------------------------------------------

  async function loadHistory() {
    const { ok, data } = await api("GET", "/api/history").catch(() => ({ ok: false }));
    if (!ok) return;
    const body = $("history").querySelector("tbody");
    body.replaceChildren();
    const labels = ["When", "Request", "Session", "Tool", "Approver", "Outcome", "Note", "Edits", "Status", "Instance"];
    for (const h of data) {
      const tr = el("tr");
      tr.dataset.requestId = h.request_id;
      const cells = [["when", new Date(h.decided_at_ms).toLocaleString()], ["request", h.request_id],
        ["session", h.session_id || "—"], ["tool", h.tool_name || "—"], ["approver", h.approver],
        ["outcome", h.outcome], ["note", h.note || "—"], ["edits", null], ["status", h.status],
        ["instance", h.instance]];
      cells.forEach(([cls, text], i) => {
        const td = el("td", cls, text === null ? undefined : text);
        td.dataset.label = labels[i];
        if (cls === "edits") {
          if (h.edited === null || h.edited === undefined) td.textContent = "—";
          else if (h.original !== null && h.original !== undefined) {
            const ul = el("ul");
            diffList(ul, diff(h.original, h.edited));
            td.append(ul);
          } else td.append(el("pre", "json", json(h.edited)));
        }
        tr.append(td);
      });
      body.append(tr);
    }
    $("history").hidden = data.length === 0;
    $("history-empty").hidden = data.length !== 0;
  }

  function log(text) {
    const li = el("li", "", `${new Date().toLocaleTimeString()} ${text}`);
    $("log").prepend(li);
    while ($("log").children.length > 50) $("log").lastChild.remove();
  }

  function connect() {
    if (events) events.close();
    events = new EventSource("/api/events");
    events.addEventListener("open", () => { $("conn").textContent = "live"; $("conn").className = "live"; });
    events.addEventListener("error", async () => {
      $("conn").textContent = "reconnecting…"; $("conn").className = "down";
      // A feed refused for want of a session means the session is over.
      const s = await api("GET", "/api/session").catch(() => ({ ok: true }));
      if (!s.ok) signedOut();
    });
    events.addEventListener("pending", (e) => render(JSON.parse(e.data)));
    events.addEventListener("notice", (e) => {
      const n = JSON.parse(e.data);
      log(`${n.request_id} ${n.text}`);
      if (!$("view-history").hidden) loadHistory();
    });
  }

  // ---- keyboard ----------------------------------------------------------

  const help = $("help");
  $("help-open").addEventListener("click", () => help.showModal());
  $("help-close").addEventListener("click", () => help.close());
  document.addEventListener("keydown", (e) => {
    if ($("app").hidden || e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (e.key === "Escape") {
      if (!$("detail").hidden && !$("confirm").open && !help.open) { closeDetail(); e.preventDefault(); }
      return;
    }
    if (typing || $("confirm").open || help.open) return;
    const id = selectedId && rows.has(selectedId) ? selectedId : null;
    const keys = {
      j: () => move(1), k: () => move(-1),
      o: () => id && openDetail(id, "args"), Enter: () => id && openDetail(id, "args"),
      a: () => id && decide(id, "approve"),
      e: () => id && openDetail(id, "args"), r: () => id && openDetail(id, "note"),
      "/": () => $("search").focus(),
      p: () => tab("pending"), h: () => tab("history"),
      "?": () => help.showModal(),
    };
    const run = keys[e.key];
    if (run && !(e.key === "Enter" && e.target.tagName === "BUTTON")) { e.preventDefault(); run(); }
  });

  api("GET", "/api/session")
    .then((s) => (s.ok ? signedIn(s.data) : show(false)))
    .catch(() => show(false));
})();
