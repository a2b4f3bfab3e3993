// Sieve playground: watch the search agent work, next to plain hybrid retrieval.
// Plain browser JavaScript, no build step and no network beyond this server: the agent's turns
// arrive as Server-Sent Events from POST /v1/search (read with fetch, since EventSource is GET-only).
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = {
  config: null,        // /playground/config
  abort: null,         // AbortController of the running search
  handles: new Map(),  // handle (c3) -> {id, title}
  chips: new Map(),    // chunk id -> [chip elements]
  pruned: new Set(),   // chunk ids pruned so far
  history: [],         // context tokens after each turn
  docsOffset: 0,
};
const DOCS_PAGE = 25;

// -- HTTP -------------------------------------------------------------------------------------
function apiKey() { return localStorage.getItem("sieve-api-key") || ""; }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (options.body) headers["Content-Type"] = "application/json";
  if (apiKey()) headers["Authorization"] = "Bearer " + apiKey();
  const res = await fetch(path, Object.assign({}, options, { headers }));
  if (res.status === 401) $("#key-box").hidden = false;
  if (!res.ok) throw new Error(await problemText(res));
  return res;
}

async function problemText(res) {
  try {
    const p = await res.json();
    return `${p.code || res.status}: ${p.detail || p.title || res.statusText}`;
  } catch (_) {
    return `${res.status} ${res.statusText}`;
  }
}

// Server-Sent Events over a fetch() body. Lines may end in \r\n (sse-starlette) or \n; a \r at
// the very end of a read may be half of a \r\n, so it waits for the next read.
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    const tail = buf.endsWith("\r") ? "\r" : "";
    let text = (tail ? buf.slice(0, -1) : buf).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = text.indexOf("\n\n")) >= 0) {
      const ev = parseEvent(text.slice(0, cut));
      text = text.slice(cut + 2);
      if (ev) yield ev;
    }
    buf = text + tail;
  }
}

function parseEvent(block) {
  let type = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;  // keep-alive comments
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "event") type = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try { return { type, data: JSON.parse(data.join("\n")) }; } catch (_) { return null; }
}

// -- small DOM helpers -----------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function shorten(text, n) {
  const t = String(text || "").replace(/\s+/g, " ").trim();
  return t.length <= n ? t : t.slice(0, n - 1) + "…";
}

function fmtScore(score) {
  return typeof score === "number" ? score.toFixed(Math.abs(score) >= 10 ? 2 : 4) : String(score);
}

function setStatus(text, kind = "") {
  const s = $("#status");
  s.textContent = text;
  s.className = "status " + kind;
}

function chip(chunkId, title, handle) {
  const node = el("button", {
    type: "button", class: "chunk-chip", title: `${chunkId} (open in Browse)`, dataset: { chunkId },
    onclick: () => openChunk(chunkId),
  }, handle ? el("span", { class: "handle" }, handle) : null, shorten(title || chunkId, 42));
  if (!state.chips.has(chunkId)) state.chips.set(chunkId, []);
  state.chips.get(chunkId).push(node);
  if (state.pruned.has(chunkId)) node.classList.add("pruned");
  return node;
}

function markPruned(chunkId) {
  state.pruned.add(chunkId);
  for (const c of state.chips.get(chunkId) || []) c.classList.add("pruned");
}

// -- the search run --------------------------------------------------------------------------------
function resetRun() {
  state.handles.clear();
  state.chips.clear();
  state.pruned.clear();
  state.history = [];
  for (const id of ["#tool-log", "#evidence", "#hybrid", "#chunks-kept", "#chunks-pruned"]) $(id).replaceChildren();
  $("#chunk-summary").textContent = "";
  $("#evidence-meta").textContent = "";
  $("#answer").hidden = true;
  drawBudget(0, Number($("#budget").value) || 0, "ok");
}

function turnItem(turn) {
  let item = $(`#tool-log > li[data-turn="${turn}"]`);
  if (!item) {
    item = el("li", { class: "turn", dataset: { turn: String(turn) } },
      el("div", { class: "turn-head" }, `turn ${turn + 1}`), el("ol", { class: "calls" }));
    $("#tool-log").append(item);
    item.scrollIntoView({ block: "nearest" });
  }
  return item;
}

function describeParams(name, params) {
  if (params === null || typeof params !== "object") return shorten(params, 120);
  if (params.query) return `“${shorten(params.query, 110)}”`;
  if (params.pattern) return `/${shorten(params.pattern, 100)}/`;
  if (params.ids) return [].concat(params.ids).join(", ");
  if (params.id) return `${params.id}${params.window !== undefined ? ` ±${params.window}` : ""}`;
  if (params.answer) return `answer: ${shorten(params.answer, 100)}`;
  return shorten(JSON.stringify(params), 120);
}

// An LLM's reasoning before its calls: folded under the turn's head, opened on a click.
function onReasoning(ev) {
  const item = turnItem(ev.turn);
  const box = el("details", { class: "reasoning" }, el("summary", {}, "reasoning"), el("p", {}, ev.text));
  item.insertBefore(box, item.querySelector(".calls"));
}

// The answer as text, each cited handle ([c1]) a chip that opens its chunk.
function renderAnswer(answer, citations) {
  const byHandle = new Map((citations || []).map((c) => [c.handle.toLowerCase(), c]));
  const box = $("#answer");
  box.replaceChildren("answer: ");
  let last = 0;
  for (const m of answer.matchAll(/\[(c\d+(?:\s*[,;]\s*c\d+)*)\]/gi)) {
    box.append(answer.slice(last, m.index));
    const cited = m[1].split(/[,;]/).map((h) => byHandle.get(h.trim().toLowerCase()));
    if (cited.every(Boolean)) for (const c of cited) box.append(chip(c.chunk_id, c.title, c.handle));
    else box.append(m[0]);  // a handle that names no chunk seen stays as written
    last = m.index + m[0].length;
  }
  box.append(answer.slice(last));
  box.hidden = false;
}

function onAction(ev) {
  const calls = turnItem(ev.turn).querySelector(".calls");
  ev.tools.forEach((name, i) => {
    const params = (ev.params || [])[i];
    calls.append(el("li", { class: `tool-call tool-${name}`, dataset: { index: String(i) } },
      el("span", { class: "tool-name" }, name), " ",
      el("span", { class: "tool-args" }, describeParams(name, params)),
      el("div", { class: "tool-result pending" }, "…")));
    // A prune names handles; the chips of those chunks are struck through at once.
    if (name === "prune" && params && params.ids) {
      for (const h of [].concat(params.ids)) {
        const known = state.handles.get(String(h));
        if (known) markPruned(known.id);
      }
    }
  });
}

function onObservation(ev) {
  const calls = turnItem(ev.turn).querySelectorAll(".calls > .tool-call");
  ev.results.forEach((r, i) => {
    const call = calls[i];
    if (!call) return;
    const out = call.querySelector(".tool-result");
    out.className = "tool-result" + (r.error ? " error" : "");
    out.replaceChildren();
    const meta = el("span", { class: "meta" }, `${r.tokens ?? 0} tok · ${Math.round(r.ms ?? 0)} ms`);
    if (r.error) {
      out.append(el("span", {}, shorten(r.error, 240)), " ", meta);
      return;
    }
    const ids = r.chunk_ids || [];
    if (ids.length) {
      const chips = el("span", { class: "chips" });
      ids.forEach((cid, j) => {
        const handle = (r.handles || [])[j];
        const title = (r.titles || [])[j] || "";
        if (handle) state.handles.set(String(handle), { id: cid, title });
        chips.append(chip(cid, title, handle));
      });
      out.append(el("span", { class: "count" }, `${ids.length} new`), chips, meta);
    } else {
      out.append(el("span", { class: "summary" }, shorten(r.summary || "no new chunks", 240)), " ", meta);
    }
  });
}

function drawBudget(tokens, budget, status) {
  const frac = budget > 0 ? Math.min(1, tokens / budget) : 0;
  const fill = $("#budget-fill");
  fill.style.width = `${(frac * 100).toFixed(1)}%`;
  fill.className = `fill ${status || "ok"}`;
  $("#budget-text").textContent = budget ? `${tokens.toLocaleString()} / ${budget.toLocaleString()} tokens (${status})` : "–";
  const svg = $("#budget-history");
  svg.replaceChildren();
  if (!budget || !state.history.length) return;
  const pts = [[0, 0], ...state.history.map((t, i) => [i + 1, t])];
  const n = Math.max(pts.length - 1, 1);
  const coords = pts.map(([x, t]) => `${(x / n * 300).toFixed(1)},${(48 - Math.min(1, t / budget) * 46).toFixed(1)}`);
  const ns = "http://www.w3.org/2000/svg";
  const half = document.createElementNS(ns, "line");
  half.setAttribute("x1", "0"); half.setAttribute("x2", "300"); half.setAttribute("y1", "25"); half.setAttribute("y2", "25");
  half.setAttribute("class", "half-line");
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", coords.join(" "));
  line.setAttribute("class", "history-line");
  svg.append(half, line);
}

function onUsage(ev) {
  state.history.push(ev.context_tokens);
  drawBudget(ev.context_tokens, ev.budget, ev.state);
}

function resultItem(hit, otherRanks, listName) {
  const rankElsewhere = otherRanks.get(hit.id);
  const both = rankElsewhere !== undefined;
  return el("li", { class: `result ${listName}-item` + (both ? " overlap" : ""), dataset: { chunkId: hit.id } },
    el("div", { class: "result-head" },
      el("span", { class: "rank" }, `#${hit.rank}`),
      el("span", { class: "score", title: "score as the API returns it" }, fmtScore(hit.score)),
      el("button", { type: "button", class: "link", onclick: () => openChunk(hit.id) }, hit.title || hit.doc_id),
      both ? el("span", { class: "both", title: `also #${rankElsewhere} in the other list` }, `● also #${rankElsewhere}`) : null),
    el("div", { class: "chunk-id" }, hit.id),
    el("div", { class: "snippet" }, shorten(hit.text, 260)));
}

function renderComparison(agent, hybrid) {
  const agentRanks = new Map(agent.map((h) => [h.id, h.rank]));
  const hybridRanks = new Map(hybrid.map((h) => [h.id, h.rank]));
  $("#evidence").replaceChildren(...agent.map((h) => resultItem(h, hybridRanks, "evidence")));
  $("#hybrid").replaceChildren(...hybrid.map((h) => resultItem(h, agentRanks, "hybrid")));
}

function renderChunkSets(trace, returned) {
  if (!trace) return;
  const titles = new Map([...state.handles.values()].map((v) => [v.id, v.title]));
  for (const r of returned) titles.set(r.id, r.title);
  const pruned = new Set(trace.pruned_chunk_ids || []);
  for (const id of pruned) markPruned(id);
  const seen = trace.seen_chunk_ids || [];
  const kept = seen.filter((id) => !pruned.has(id));
  const returnedIds = new Set(returned.map((r) => r.id));
  const mk = (id) => { const c = chip(id, titles.get(id)); if (returnedIds.has(id)) c.classList.add("returned"); return c; };
  $("#chunks-kept").replaceChildren(...kept.map(mk));
  $("#chunks-pruned").replaceChildren(...[...pruned].map(mk));
  $("#chunk-summary").textContent =
    `${seen.length} seen · ${kept.length} kept · ${pruned.size} pruned · ${returned.length} returned`;
}

async function runSearch(event) {
  event.preventDefault();
  const query = $("#question").value.trim();
  if (!query) return;
  const collection = $("#collection").value;
  const k = Number($("#k").value) || 5;
  resetRun();
  const controller = new AbortController();
  state.abort = controller;
  $("#ask").disabled = true;
  $("#stop").disabled = false;
  setStatus("searching…", "busy");
  const t0 = performance.now();
  const hybridP = api("/v1/retrieve", {
    method: "POST", signal: controller.signal,
    body: JSON.stringify({ query, collection, k, mode: "hybrid" }),
  }).then((r) => r.json()).then((d) => d.results).catch((e) => { setStatus(`hybrid: ${e.message}`, "error"); return []; });
  let result = null;
  try {
    const res = await api("/v1/search", {
      method: "POST", signal: controller.signal,
      body: JSON.stringify({
        query, collection, k, stream: true, include_trace: true, policy: $("#policy").value || undefined,
        budget_tokens: Number($("#budget").value) || undefined,
      }),
    });
    for await (const ev of readEvents(res)) {
      if (ev.type === "reasoning") onReasoning(ev.data);
      else if (ev.type === "action") onAction(ev.data);
      else if (ev.type === "observation") onObservation(ev.data);
      else if (ev.type === "usage") onUsage(ev.data);
      else if (ev.type === "result") result = ev.data;
      else if (ev.type === "error") throw new Error(`${ev.data.code}: ${ev.data.detail}`);
    }
    if (!result) throw new Error("the stream ended without a result");
    const hybrid = await hybridP;
    renderComparison(result.results, hybrid);
    renderChunkSets(result.trace, result.results);
    if (result.answer) renderAnswer(result.answer, result.citations);
    const u = result.usage || {};
    $("#evidence-meta").textContent =
      `${result.policy} · ${result.stop_reason} · ${u.turns} turns · ${u.tool_calls} tool calls · peak ${(u.peak_context_tokens || 0).toLocaleString()} tokens`;
    setStatus(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`, "done");
    document.body.dataset.run = "done";
  } catch (e) {
    if (e.name === "AbortError") setStatus("stopped", "error");
    else setStatus(e.message, "error");
    document.body.dataset.run = "error";
  } finally {
    $("#ask").disabled = false;
    $("#stop").disabled = true;
    state.abort = null;
  }
}

// -- browsing --------------------------------------------------------------------------------------
function showTab(name) {
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.tab === name);
  $("#panel-search").hidden = name !== "search";
  $("#panel-browse").hidden = name !== "browse";
  if (name === "browse" && !$("#docs-list").children.length) loadDocs(0);
}

async function loadDocs(offset) {
  const c = encodeURIComponent($("#collection").value);
  try {
    const page = await (await api(`/v1/collections/${c}/documents?offset=${offset}&limit=${DOCS_PAGE}`)).json();
    state.docsOffset = offset;
    $("#docs-total").textContent = `${page.total.toLocaleString()} in ${page.collection}`;
    $("#docs-list").replaceChildren(...page.documents.map((d) => el("li", {},
      el("button", { type: "button", class: "link", onclick: () => openChunk(`${d.id}#0`) }, d.title || d.id),
      el("span", { class: "doc-meta" }, ` ${d.id} · ${d.chunks} chunk${d.chunks === 1 ? "" : "s"}`))));
    const last = Math.min(offset + DOCS_PAGE, page.total);
    $("#docs-page").textContent = page.total ? `${offset + 1}–${last}` : "empty";
    $("#docs-prev").disabled = offset === 0;
    $("#docs-next").disabled = last >= page.total;
  } catch (e) {
    $("#docs-list").replaceChildren(el("li", { class: "error" }, e.message));
  }
}

async function openChunk(chunkId) {
  showTab("browse");
  $("#chunk-id").value = chunkId;
  const view = $("#chunk-view");
  const c = encodeURIComponent($("#collection").value);
  try {
    const ctx = await (await api(`/v1/chunks/${encodeURIComponent(chunkId)}?collection=${c}&window=1`)).json();
    const focus = ctx.chunks.find((ch) => ch.id === ctx.id);
    const neighbour = (delta) => {
      const pos = focus.position + delta;
      return pos >= 0 && pos < ctx.n_chunks ? `${ctx.doc_id}#${pos}` : null;
    };
    const prev = neighbour(-1), next = neighbour(1);
    const meta = Object.keys(ctx.metadata || {}).length ? JSON.stringify(ctx.metadata) : "";
    view.replaceChildren(
      el("div", { class: "chunk-head" },
        el("strong", {}, ctx.title || ctx.doc_id), ` · ${ctx.doc_id} · chunk ${focus.position + 1} of ${ctx.n_chunks}`,
        ctx.source ? el("div", { class: "doc-meta" }, `source: ${ctx.source}`) : null,
        meta ? el("div", { class: "doc-meta" }, `metadata: ${meta}`) : null),
      el("div", { class: "pager" },
        el("button", { type: "button", disabled: !prev, onclick: () => prev && openChunk(prev) }, "‹ previous chunk"),
        el("button", { type: "button", disabled: !next, onclick: () => next && openChunk(next) }, "next chunk ›")),
      ...ctx.chunks.map((ch) => el("article", { class: "chunk" + (ch.id === ctx.id ? " focus" : ""), dataset: { chunkId: ch.id } },
        el("div", { class: "chunk-id" }, `${ch.id} · ${ch.n_tokens} tokens`),
        el("p", {}, ch.text))));
  } catch (e) {
    view.replaceChildren(el("p", { class: "error" }, e.message));
  }
}

// -- start-up --------------------------------------------------------------------------------------
async function loadConfig() {
  const cfg = await (await api("/playground/config")).json();
  state.config = cfg;
  const cols = (await (await api("/v1/collections")).json()).collections;
  const select = $("#collection");
  select.replaceChildren(...cols.map((c) => el("option", { value: c.name }, `${c.name} (${c.chunks.toLocaleString()} chunks)`)));
  if (!cols.length) {
    select.append(el("option", { value: cfg.collection }, `${cfg.collection} (not indexed yet)`));
    setStatus("No collections yet: run `sieve demo` or `sieve index PATH -c NAME`.", "error");
  }
  const wanted = new URLSearchParams(location.search).get("collection") || cfg.collection;
  if ([...select.options].some((o) => o.value === wanted)) select.value = wanted;
  $("#policy").replaceChildren(...cfg.policies.map((p) => el("option", { value: p }, p)));
  $("#policy").value = cfg.policy;
  $("#k").value = cfg.k;
  $("#budget").value = cfg.budget_tokens;
  $("#budget").max = cfg.max_budget_tokens;
  $("#k").max = cfg.max_k;
  const q = new URLSearchParams(location.search).get("q");
  $("#question").value = q || (select.value === "sample" ? cfg.demo_question : "");
  drawBudget(0, cfg.budget_tokens, "ok");
}

function init() {
  $("#api-key").value = apiKey();
  $("#key-box").addEventListener("submit", (e) => e.preventDefault());
  $("#api-key").addEventListener("change", (e) => {
    localStorage.setItem("sieve-api-key", e.target.value.trim());
    loadConfig().catch((err) => setStatus(err.message, "error"));
  });
  for (const t of document.querySelectorAll(".tab")) t.addEventListener("click", () => showTab(t.dataset.tab));
  $("#ask-form").addEventListener("submit", runSearch);
  $("#stop").addEventListener("click", () => state.abort && state.abort.abort());
  $("#lookup-form").addEventListener("submit", (e) => { e.preventDefault(); openChunk($("#chunk-id").value.trim()); });
  $("#docs-prev").addEventListener("click", () => loadDocs(Math.max(0, state.docsOffset - DOCS_PAGE)));
  $("#docs-next").addEventListener("click", () => loadDocs(state.docsOffset + DOCS_PAGE));
  $("#collection").addEventListener("change", () => { $("#docs-list").replaceChildren(); if (!$("#panel-browse").hidden) loadDocs(0); });
  loadConfig().then(() => { document.body.dataset.ready = "1"; }).catch((e) => setStatus(e.message, "error"));
}

document.addEventListener("DOMContentLoaded", init);
