// The gateway's page: a conversation with an agent, each reply built live from the native
// Message stream. The turns are kept in localStorage (they survive a reload) and the earlier
// ones are sent with each question as its history, so the agent can answer follow-ups.
// Agent text reaches the DOM only as textContent, or as markdown rendered by marked and then
// sanitised by DOMPurify; the page's CSP also forbids inline script.
// Interactive cards (a `card` Message, or a question carrying one) show as buttons and forms;
// answering sends the card response to the reply that asked, in its session (`answers`).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // -- deltas (agent_stream's four actions on dotted paths) ------------------------------------
  const copy = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
  function appendValue(target, value) {
    if (target === undefined || target === null) return copy(value);
    if (typeof target === "string" && typeof value === "string") return target + value;
    if (Array.isArray(target)) return target.concat(Array.isArray(value) ? value : [value]);
    if (typeof target === "object" && value && typeof value === "object") {
      const out = { ...target };
      for (const [k, v] of Object.entries(value)) out[k] = appendValue(out[k], v);
      return out;
    }
    return copy(value);
  }
  function applyAt(props, path, fn) {
    const keys = path.split(".");
    const root = { ...props };
    let node = root;
    for (let i = 0; i < keys.length - 1; i++) {
      const k = Array.isArray(node) ? Number(keys[i]) : keys[i];
      node[k] = node[k] && typeof node[k] === "object" ? (Array.isArray(node[k]) ? [...node[k]] : { ...node[k] }) : {};
      node = node[k];
    }
    const last = Array.isArray(node) ? Number(keys[keys.length - 1]) : keys[keys.length - 1];
    node[last] = fn(node[last]);
    return root;
  }
  function applyDelta(old, msg) {
    const props = msg.props || {};
    if (!msg.delta) return copy(props);
    const action = msg.delta_action || "append";
    const path = msg.delta_path;
    if (path) {
      if (action === "append") return applyAt(old, path, (t) => appendValue(t, props.value ?? props));
      if (action === "merge") return applyAt(old, path, (t) => ({ ...(t || {}), ...(props) }));
      return applyAt(old, path, () => copy(props.value ?? props));
    }
    if (action === "append") return appendValue(old, props);
    if (action === "merge") return { ...old, ...copy(props) };
    return copy(props); // replace / set of everything
  }

  // -- interactive cards (uagents-core's: review, form, carousel, detail, custom) ----------------
  const obj = (v) => (v && typeof v === "object" && !Array.isArray(v) ? v : {});
  // A card's buttons in order, [label, selection] (as agent_stream.render.card_choices).
  function cardChoices(card) {
    const p = obj(card.payload);
    let ctas = [];
    if (card.kind === "review") ctas = [p.approve_cta, p.reject_cta];
    else if (card.kind === "carousel") {
      for (const item of Array.isArray(p.items) ? p.items : []) {
        const cta = obj(item).primary_cta;
        if (cta && typeof cta === "object") ctas.push({ ...cta, label: `${item.title || ""}: ${cta.label || ""}` });
      }
    } else if (card.kind === "detail") ctas = Array.isArray(p.ctas) ? p.ctas : [];
    return ctas.filter((c) => c && typeof c === "object").map((c) => [String(c.label || ""), obj(c.selection)]);
  }
  function cardTexts(node, out = [], depth = 0) {
    if (depth > 32 || !node || typeof node !== "object") return out;
    if (typeof node.text === "string") out.push(node.text);
    for (const child of Array.isArray(node.children) ? node.children : []) cardTexts(child, out, depth + 1);
    return out;
  }
  function fieldInput(f) {
    const name = String(f.name || "");
    let input;
    if (f.kind === "select") {
      input = el("select");
      for (const o of Array.isArray(f.options) ? f.options : []) {
        const opt = el("option", null, String(obj(o).label ?? obj(o).value ?? ""));
        opt.value = String(obj(o).value ?? "");
        input.appendChild(opt);
      }
    } else {
      input = el("input");
      input.type = { number: "number", email: "email", checkbox: "checkbox" }[f.kind] || "text";
      if (f.placeholder) input.placeholder = String(f.placeholder);
    }
    input.name = name;
    input.dataset.kind = String(f.kind || "text");
    if (f.required && f.kind !== "checkbox") input.required = true;
    return input;
  }
  function formValues(form) {
    const values = {};
    for (const input of form.querySelectorAll("input, select")) {
      const kind = input.dataset.kind;
      if (kind === "checkbox") values[input.name] = input.checked;
      else if (kind === "number") values[input.name] = input.value === "" ? null : Number(input.value);
      else values[input.name] = input.value;
    }
    return values;
  }
  // The card as DOM (text only: every string goes in as textContent); `answer(selection, label)`
  // is called when a button is pressed or the form submitted.
  function cardNode(card, answer) {
    const p = obj(card.payload);
    const box = el("div", "card");
    box.dataset.kind = String(card.kind || "");
    if (card.card_id) box.dataset.cardId = String(card.card_id);
    box.appendChild(el("div", "card-title", String(p.title || card.kind || "card")));
    if (p.subtitle) box.appendChild(el("div", "card-subtitle", String(p.subtitle)));
    if (p.description) box.appendChild(el("div", "card-description", String(p.description)));
    const rows = Array.isArray(p.summary_rows) ? p.summary_rows : [];
    if (rows.length) {
      const dl = el("dl", "card-rows");
      for (const r of rows) { dl.appendChild(el("dt", null, String(obj(r).label ?? ""))); dl.appendChild(el("dd", null, String(obj(r).value ?? ""))); }
      box.appendChild(dl);
    }
    if (card.kind === "custom") for (const t of cardTexts(p.root)) box.appendChild(el("p", "card-text", t));
    const choices = cardChoices(card);
    if (choices.length) {
      const actions = el("div", "card-actions");
      choices.forEach(([label, selection]) => {
        const b = el("button", "card-choice", label);
        b.type = "button";
        b.addEventListener("click", () => answer(selection, label, box));
        actions.appendChild(b);
      });
      box.appendChild(actions);
    }
    const fields = Array.isArray(p.fields) ? p.fields : [];
    if (card.kind === "form" && fields.length) {
      const form = el("form", "card-form");
      for (const f of fields) {
        const label = el("label", null, String(obj(f).label || obj(f).name || ""));
        label.appendChild(fieldInput(obj(f)));
        form.appendChild(label);
      }
      const cta = obj(p.submit_cta);
      const submit = el("button", "card-submit", String(cta.label || "Submit"));
      submit.type = "submit";
      form.appendChild(submit);
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        if (!form.reportValidity()) return;
        const values = { ...obj(cta.selection), ...formValues(form) };
        const shown = Object.values(formValues(form)).map(String).join(", ");
        answer(values, shown || String(cta.label || "Submit"), box);
      });
      box.appendChild(form);
    }
    return box;
  }
  function closeCard(box) {
    box.classList.add("answered");
    for (const c of box.querySelectorAll("button, input, select")) c.disabled = true;
  }

  // -- the reply view ---------------------------------------------------------------------------
  class View {
    constructor(root) {
      this.root = root;
      this.messages = new Map(); // thread|message -> {type, props, node}
      this.blocks = new Map();   // block id -> section, once something shows in it
      this.blockInfo = new Map(); // block id -> {threadId, type, label} from its block_start
      this.threads = new Map();  // thread id -> column
      this.calls = new Map();    // tool call id -> status line
      this.row = null;           // the row the next thread joins
      this.pending = new Set();  // markdown nodes to render at the next frame
      this.firstText = null;
      this.status = null;
      this.withheld = [];        // channels the agent said it kept (stream_end)
      this.replyId = null;       // the gateway's id of this reply (what an answer names)
      this.cards = [];           // the cards shown, [{card, node}], in order
    }
    // The card still waiting for an answer: the last one shown, unless it was answered.
    waitingCard() {
      const last = this.cards[this.cards.length - 1];
      return last && !last.node.classList.contains("answered") ? last : null;
    }
    // The reply's text as the asker was given it: its text messages, in order.
    answer() {
      const parts = [];
      for (const st of this.messages.values()) {
        if (st.type === "text" && typeof st.props.content === "string") parts.push(st.props.content);
      }
      return parts.join("");
    }
    container(threadId) {
      if (!threadId) { this.row = null; return this.root; } // main flow: the next threads start a new row
      let col = this.threads.get(threadId);
      if (!col) col = this.openThread(threadId, threadId);
      return col;
    }
    openThread(threadId, label) {
      // threads that start one after the other, with nothing in the main flow between them,
      // ran side by side: one row
      if (!this.row) {
        this.row = el("div", "threads");
        this.root.appendChild(this.row);
      }
      const col = el("div", "thread");
      col.dataset.threadId = threadId;
      col.appendChild(el("h4", null, label || threadId));
      this.row.appendChild(col);
      this.threads.set(threadId, col);
      return col;
    }
    // A block is drawn when its first visible message arrives: a block whose messages the agent
    // keeps to itself (its reasoning, when it shares none) leaves no empty box behind.
    block(blockId, threadId, type, label) {
      const info = this.blockInfo.get(blockId) || { threadId, type, label };
      if (label) info.label = label;
      if (type) info.type = type;
      this.blockInfo.set(blockId, info);
      const sec = this.blocks.get(blockId);
      if (sec && label) sec.querySelector("h3").textContent = label;
    }
    section(blockId, threadId) {
      let sec = this.blocks.get(blockId);
      if (!sec) {
        const info = this.blockInfo.get(blockId) || { threadId };
        sec = el("section", "block");
        sec.dataset.blockId = blockId;
        sec.dataset.type = info.type || "";
        sec.appendChild(el("h3", null, info.label || info.type || "block"));
        this.container(info.threadId ?? threadId).appendChild(sec);
        this.blocks.set(blockId, sec);
      }
      return sec;
    }
    where(msg) {
      if (msg.block_id) return this.section(msg.block_id, msg.thread_id);
      return this.container(msg.thread_id);
    }
    event(msg) {
      const p = msg.props || {};
      const d = p.data || {};
      switch (p.event) {
        case "block_start": this.block(d.block_id || msg.block_id, msg.thread_id, d.type, d.label); break;
        case "thread_start":
          if (!this.threads.has(d.thread_id || msg.thread_id)) this.openThread(d.thread_id || msg.thread_id, d.label);
          break;
        case "thread_end": {
          const col = this.threads.get(d.thread_id || msg.thread_id);
          if (col) col.classList.add("ended");
          break;
        }
        case "stream_end":
          this.status = d.status || "completed";
          if (Array.isArray(d.withheld)) this.withheld = d.withheld.map(String);
          if (d.error) notice(d.error);
          break;
        default: break;
      }
    }
    feed(msg) {
      if (msg.type === "event") return this.event(msg);
      const key = `${msg.thread_id || ""}|${msg.message_id || msg.chunk_id}`;
      let st = this.messages.get(key);
      if (!st) {
        st = { type: msg.type, props: {}, node: null };
        this.messages.set(key, st);
      }
      st.props = applyDelta(st.props, msg);
      if (st.type !== msg.type && st.node) { st.node.remove(); st.node = null; }
      st.type = msg.type;
      this.render(st, msg);
    }
    render(st, msg) {
      const p = st.props;
      switch (st.type) {
        case "text": case "refusal": {
          if (!st.node) { st.node = el("div", "text markdown"); this.where(msg).appendChild(st.node); }
          st.text = typeof p.content === "string" ? p.content : "";
          if (st.text && this.firstText === null) this.firstText = performance.now();
          this.pending.add(st);
          this.schedule();
          break;
        }
        case "thinking": {
          if (!st.node) {
            st.node = el("details", "reasoning");
            st.node.open = true;
            st.node.appendChild(el("summary", null, "Reasoning"));
            st.node.appendChild(el("div", "content"));
            this.where(msg).appendChild(st.node);
          }
          st.node.querySelector(".content").textContent = p.content || "";
          break;
        }
        case "tool_call": {
          if (!st.node) { st.node = el("div", "tool running"); this.where(msg).appendChild(st.node); }
          if (p.id) { this.calls.set(p.id, st); st.node.dataset.callId = p.id; }
          if (!st.done) st.node.textContent = `⚙ ${p.name || "tool"}(${p.arguments || ""}) …`;
          break;
        }
        case "tool_result": {
          // the result is a line of its own where it came (after the call's progress lines);
          // its call stops running
          const call = p.call_id ? this.calls.get(p.call_id) : null;
          const line = `✓ ${p.name || (call && call.props.name) || "tool"} → ${typeof p.content === "string" ? p.content : JSON.stringify(p.content)}`;
          if (call && call.node && !call.done) {
            call.done = true;
            call.node.className = "tool done";
            call.node.textContent = `⚙ ${call.props.name || "tool"}(${call.props.arguments || ""})`;
          }
          if (!st.node) { st.node = el("div", "tool done result"); this.where(msg).appendChild(st.node); }
          st.node.textContent = line;
          break;
        }
        case "loading": {
          if (!st.node) { st.node = el("div", "status running"); this.where(msg).appendChild(st.node); }
          st.node.className = p.done ? "status done" : "status running";
          st.node.textContent = `${p.done ? "✓" : "⏳"} ${p.message || ""}`;
          break;
        }
        case "card": case "user_input": {
          const card = st.type === "card" ? p : (p.card && typeof p.card === "object" ? p.card : null);
          if (!st.node) { st.node = el("div", st.type === "card" ? "card-message" : "question"); this.where(msg).appendChild(st.node); }
          if (msg.delta && st.type === "card") break; // drawn once whole
          st.node.textContent = "";
          if (st.type === "user_input" && (p.content || p.question)) st.node.appendChild(el("p", "question-text", String(p.content || p.question)));
          if (card && card.kind) {
            const node = cardNode(card, (selection, label, box) => answerCard(this, card, selection, label, box));
            st.node.appendChild(node);
            this.cards.push({ card, node });
          }
          break;
        }
        case "error": {
          if (!st.node) { st.node = el("div", "error"); this.where(msg).appendChild(st.node); }
          st.node.textContent = `Error${p.code ? ` (${p.code})` : ""}: ${p.message || ""}`;
          break;
        }
        default: {
          if (!st.node) { st.node = el("div", "other"); this.where(msg).appendChild(st.node); }
          st.node.textContent = `${st.type}: ${JSON.stringify(p)}`;
        }
      }
    }
    schedule() {
      if (this.frame) return;
      this.frame = requestAnimationFrame(() => { this.frame = null; this.flush(); });
    }
    flush() {
      for (const st of this.pending) {
        const html = window.marked.parse(st.text, { gfm: true, breaks: false });
        st.node.innerHTML = window.DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
        for (const code of st.node.querySelectorAll("pre code")) window.hljs.highlightElement(code);
      }
      this.pending.clear();
    }
  }

  // -- talking to the gateway -------------------------------------------------------------------
  function headers(extra) {
    const h = { ...extra };
    const key = $("api-key").value.trim();
    if (key) h.authorization = `Bearer ${key}`;
    return h;
  }
  function notice(text) { $("notice").textContent = text || ""; }

  async function loadAgents() {
    try {
      const r = await fetch("/v1/models", { headers: headers() });
      const body = await r.json();
      if (!r.ok) { notice(body.error?.message || `HTTP ${r.status}`); return; }
      const sel = $("agent");
      sel.textContent = "";
      for (const m of body.data) {
        const o = el("option", null, m.id);
        o.value = m.id;
        o.title = m.owned_by;
        sel.appendChild(o);
      }
      if (!body.data.length) notice("no agent is reachable: start one (agent-stream serve)");
    } catch (e) { notice(String(e)); }
  }

  let current = null;

  // -- the conversation, kept in the browser ---------------------------------------------------
  const STORE = "agent-stream:conversation";
  const MAX_KEPT_MESSAGES = 4000; // a turn with more is kept as its text only
  function loadConversation() {
    try {
      const c = JSON.parse(localStorage.getItem(STORE) || "null");
      if (c && Array.isArray(c.turns)) return c;
    } catch (e) { /* unreadable: start afresh */ }
    return { turns: [] };
  }
  let conversation = loadConversation();
  function saveConversation() {
    const data = () => JSON.stringify(conversation);
    try { localStorage.setItem(STORE, data()); return; } catch (e) { /* over quota */ }
    for (const t of conversation.turns) delete t.msgs; // keep the texts at least
    try { localStorage.setItem(STORE, data()); } catch (e) { notice("the conversation is too long to keep in this browser"); }
  }
  function historyOf(turns) {
    const h = [];
    for (const t of turns) {
      h.push({ role: "user", text: t.q });
      if (t.a) h.push({ role: "assistant", text: t.a });
    }
    return h;
  }
  function newTurn(question) {
    const turn = el("div", "turn");
    turn.appendChild(el("div", "user-turn", question));
    const body = el("div", "assistant-turn");
    turn.appendChild(body);
    $("reply").appendChild(turn);
    return body;
  }
  function hints(view, body) {
    if (view.withheld.includes("reasoning")) {
      body.appendChild(el("p", "hint withheld", "The agent does not share its reasoning (an agent shares it only when it allows it, e.g. serve --reasoning)."));
    }
  }
  function restoreConversation() {
    for (const t of conversation.turns) {
      const body = newTurn(t.q);
      const view = new View(body);
      view.replyId = t.id || null;
      if (Array.isArray(t.msgs)) {
        for (const m of t.msgs) view.feed(m);
      } else if (t.a) {
        const node = el("div", "text markdown");
        body.appendChild(node);
        view.pending.add({ node, text: t.a });
      }
      view.flush();
      hints(view, body);
      for (const c of view.cards.slice(0, -1)) closeCard(c.node);
      const card = view.waitingCard();
      if (waiting) closeCard(waiting.node); // only the last turn's card waits
      waiting = card ? { view, ...card } : null;
    }
  }
  function newConversation() {
    if (current) return;
    conversation = { turns: [] };
    waiting = null;
    saveConversation();
    $("reply").textContent = "";
    notice("");
    $("question").focus();
  }

  async function readSSE(response, onEvent) {
    const reader = response.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let id = null;
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("id:")) id = line.slice(3).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(id, JSON.parse(data.join("\n")));
      }
    }
  }

  // The reply whose card waits for an answer: the last turn's, unless answered.
  let waiting = null; // {view, card, node}
  function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || current) return;
    const extra = {};
    if (waiting && waiting.view.replyId) extra.answers = waiting.view.replyId; // typed: an answer too
    $("question").value = "";
    if (waiting) closeCard(waiting.node);
    send(question, extra);
  }
  function answerCard(view, card, selection, label, box) {
    if (current) return;
    if (!view.replyId) { notice("this card can no longer be answered"); return; }
    const response = { selection };
    if (card.card_id) response.card_id = String(card.card_id);
    closeCard(box);
    send(label, { answers: view.replyId, card_response: response });
  }

  async function send(question, extra) {
    notice("");
    const history = historyOf(conversation.turns);
    const root = newTurn(question);
    root.scrollIntoView({ block: "start" });
    waiting = null;
    const view = new View(root);
    const msgs = [];
    const started = performance.now();
    const run = { view, id: null, last: null, stopped: false };
    current = run;
    document.body.dataset.state = "streaming";
    $("ask").disabled = true;
    $("new").disabled = true;
    $("stop").disabled = false;
    $("f-status").textContent = "streaming";
    $("f-chat").textContent = "– ChatMessages";
    $("f-first").textContent = "first text –";
    $("f-total").textContent = "total –";
    const onEvent = (id, msg) => {
      run.last = id || run.last;
      view.feed(msg);
      if (msgs.length <= MAX_KEPT_MESSAGES) msgs.push(msg);
      if (view.firstText !== null && $("f-first").textContent === "first text –") {
        $("f-first").textContent = `first text ${((view.firstText - started) / 1000).toFixed(2)} s`;
      }
    };
    try {
      let response = await fetch("/v1/stream", {
        method: "POST", headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
        body: JSON.stringify({ agent: $("agent").value, question, history, ...extra }),
      });
      for (let attempt = 0; ; attempt++) {
        if (!response.ok) {
          const body = await response.json().catch(() => ({}));
          throw new Error(body.error?.message || `HTTP ${response.status}`);
        }
        run.id = response.headers.get("x-reply-id") || run.id;
        view.replyId = run.id;
        try {
          await readSSE(response, onEvent);
          break;
        } catch (e) {
          // the connection dropped: resume after the last event we have
          if (attempt >= 2 || !run.last || view.status) throw e;
          response = await fetch("/v1/stream", { headers: headers({ "last-event-id": run.last }) });
        }
      }
    } catch (e) {
      notice(String(e.message || e));
    } finally {
      view.flush();
      hints(view, root);
      conversation.turns.push({ q: question, a: view.answer(), status: view.status, id: run.id,
                                msgs: msgs.length <= MAX_KEPT_MESSAGES ? msgs : undefined });
      const card = view.waitingCard();
      waiting = card ? { view, ...card } : null;
      saveConversation();
      $("f-status").textContent = view.status || (run.stopped ? "cancelled" : "ended");
      $("f-total").textContent = `total ${((performance.now() - started) / 1000).toFixed(2)} s`;
      if (run.id) {
        try {
          const r = await fetch(`/v1/replies/${encodeURIComponent(run.id)}`, { headers: headers() });
          if (r.ok) $("f-chat").textContent = `${(await r.json()).chat_messages} ChatMessages`;
        } catch (e) { /* the footer stays without the count */ }
      }
      $("ask").disabled = false;
      $("stop").disabled = true;
      $("new").disabled = false;
      document.body.dataset.state = "done";
      current = null;
    }
  }

  async function stop() {
    const run = current;
    if (!run || !run.id) return;
    run.stopped = true;
    $("stop").disabled = true;
    try {
      await fetch(`/v1/replies/${encodeURIComponent(run.id)}`, { method: "DELETE", headers: headers() });
    } catch (e) { notice(String(e)); }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("ask-form").addEventListener("submit", ask);
    $("stop").addEventListener("click", stop);
    $("new").addEventListener("click", newConversation);
    $("api-key").addEventListener("change", loadAgents);
    $("question").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask-form").requestSubmit(); }
    });
    restoreConversation();
    loadAgents();
  });
})();
