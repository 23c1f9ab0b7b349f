// Node clients reading agent_stream's wires over HTTP (run by conformance/run.py).
// Usage: node clients.mjs BASE_URL STREAM...   Prints one JSON line per (client, stream):
// {"client", "stream", "seen": {...what the client ends up with...}}.
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses,
         readUIMessageStream, streamText } from "ai";
import * as ai5 from "ai5";  // ai 5's own client, beside ai 6: both read /api/chat
import OpenAI from "openai";
import { from, lastValueFrom, toArray } from "rxjs";

const [base, ...streams] = process.argv.slice(2);
const errText = (e) => (e && (e.message || String(e))) || "error";

// openai npm: chat.completions.create({stream: true})
async function openaiClient(stream) {
  const client = new OpenAI({ baseURL: `${base}/openai/${stream}`, apiKey: "x", maxRetries: 0,
                              timeout: 30000 });
  const seen = { text: "", reasoning: "", tool_calls: [], finish_reason: null, usage: null,
                 error: null, deltas: [] };
  const calls = new Map();
  try {
    const s = await client.chat.completions.create({
      model: "agent-stream", messages: [{ role: "user", content: "hi" }], stream: true,
      stream_options: { include_usage: true } });
    for await (const chunk of s) {
      if (chunk.usage) seen.usage = chunk.usage;
      for (const ch of chunk.choices || []) {
        const d = ch.delta || {};
        if (d.content) { seen.text += d.content; seen.deltas.push(["c", d.content]); }
        if (d.reasoning_content) {
          seen.reasoning += d.reasoning_content;
          seen.deltas.push(["r", d.reasoning_content]);
        }
        for (const tc of d.tool_calls || []) {
          const c = calls.get(tc.index) || { id: null, name: null, arguments: "" };
          if (tc.id) c.id = tc.id;
          if (tc.function?.name) c.name = tc.function.name;
          if (tc.function?.arguments) c.arguments += tc.function.arguments;
          calls.set(tc.index, c);
        }
        if (ch.finish_reason) seen.finish_reason = ch.finish_reason;
      }
    }
  } catch (e) {
    seen.error = errText(e);
  }
  seen.tool_calls = [...calls.values()];
  return seen;
}

// ai + @ai-sdk/openai-compatible: streamText over the OpenAI wire, no tools declared
async function streamTextClient(stream) {
  const provider = createOpenAICompatible({ name: "agentstream", baseURL: `${base}/openai/${stream}`,
                                            includeUsage: true });
  const seen = { text: "", reasoning: "", tool_calls: [], finish_reason: null, usage: null,
                 error: null, tool_errors: [], deltas: [] };
  const result = streamText({ model: provider.chatModel("agent-stream"), prompt: "hi",
                              maxRetries: 0, onError: () => {},
                              abortSignal: AbortSignal.timeout(30000) });
  try {
    for await (const p of result.fullStream) {
      if (p.type === "text-delta") { seen.text += p.text; seen.deltas.push(["c", p.text]); }
      else if (p.type === "reasoning-delta") {
        seen.reasoning += p.text;
        seen.deltas.push(["r", p.text]);
      }
      else if (p.type === "tool-call") seen.tool_calls.push({ id: p.toolCallId, name: p.toolName,
                                                              input: p.input });
      else if (p.type === "tool-error") seen.tool_errors.push(errText(p.error));
      else if (p.type === "error") seen.error = errText(p.error);
      else if (p.type === "finish") {
        seen.finish_reason = p.finishReason;
        const u = p.totalUsage || {};
        if (u.inputTokens !== undefined || u.outputTokens !== undefined) {
          seen.usage = { prompt_tokens: u.inputTokens ?? null,
                         completion_tokens: u.outputTokens ?? null,
                         total_tokens: u.totalTokens ?? null };
        }
      }
    }
  } catch (e) {
    seen.error = seen.error || errText(e);
  }
  return seen;
}

// @ag-ui/client: HttpAgent.runAgent, and verifyEvents over every event it saw
async function aguiClient(stream) {
  const agent = new HttpAgent({ url: `${base}/agui/${stream}` });
  const events = [];
  const seen = { texts: [], reasoning: [], tool_calls: [], tool_results: {}, finish: null,
                 usage: null, error: null, verify_error: null, order: [], subagents: [] };
  try {
    await agent.runAgent({}, {
      onEvent: ({ event }) => { events.push(event); },
    });
  } catch (e) {
    seen.error = errText(e);
  }
  try {
    await lastValueFrom(from(events).pipe(verifyEvents(), toArray()), { defaultValue: [] });
  } catch (e) {
    seen.verify_error = errText(e);
  }
  const content = new Map();
  for (const m of agent.messages) {
    if (m.role === "assistant") {
      if (typeof m.content === "string" && m.content) {
        seen.texts.push(m.content);
        content.set(m.id, m.content);
      }
      for (const tc of m.toolCalls || []) {
        seen.tool_calls.push({ id: tc.id, name: tc.function.name,
                               arguments: tc.function.arguments });
      }
    } else if (m.role === "tool") {
      seen.tool_results[m.toolCallId] = m.content;
    } else if (m.role === "reasoning") {
      seen.reasoning.push(m.content);
      content.set(m.id, m.content);
    }
  }
  // The order a live UI shows things in (agent.messages puts each result right after its
  // call, whenever it came): a message where it starts, a tool call where it is complete
  // (TOOL_CALL_END), a result where it arrives.
  for (const e of events) {
    if (e.type === "TEXT_MESSAGE_START" && content.has(e.messageId)) {
      seen.order.push(["text", content.get(e.messageId)]);
    } else if (e.type === "REASONING_MESSAGE_START" && content.has(e.messageId)) {
      seen.order.push(["reasoning", content.get(e.messageId)]);
    } else if (e.type === "TOOL_CALL_END") seen.order.push(["tool", e.toolCallId]);
    else if (e.type === "TOOL_CALL_RESULT") seen.order.push(["result", e.toolCallId]);
  }
  // sub-agents as the client's onSubagent* callbacks see them: id, name, parent, how it ended
  const subagents = new Map();
  for (const e of events) {
    if (e.type === "SUBAGENT_STARTED") {
      subagents.set(e.subagentRunId, { id: e.subagentRunId, name: e.name,
                                       parent: e.parentSubagentRunId ?? null, end: null });
    } else if (e.type === "SUBAGENT_FINISHED" && subagents.has(e.subagentRunId)) {
      subagents.get(e.subagentRunId).end = "finished";
    } else if (e.type === "SUBAGENT_ERROR" && subagents.has(e.subagentRunId)) {
      subagents.get(e.subagentRunId).end = "error";
    }
  }
  seen.subagents = [...subagents.values()];
  for (const e of events) {
    if (e.type === "RUN_FINISHED") {
      seen.finish = e.outcome?.type === "cancelled" ? "cancelled" : "completed";
      if (e.usage?.length) seen.usage = e.usage[0];
    } else if (e.type === "RUN_ERROR") {
      seen.finish = "error";
      seen.error = e.message;
    }
  }
  return seen;
}

// @ag-ui/client, human in the loop: a run that ends with interrupts, a run the client itself
// refuses while they are unanswered, then the same HttpAgent (same thread) resuming each
// (resolved); and a fresh agent resuming an interrupt no run asked (the server's 400).
// Every run's events go through verifyEvents.
async function aguiResumeClient(stream) {
  const agent = new HttpAgent({ url: `${base}/agui/${stream}` });
  const seen = { runs: [], unanswered_refused: null, unknown_error: null };
  const once = async (params) => {
    const events = [];
    const run = { texts: [], tool_results: {}, finish: null, interrupts: [], pending: [],
                  error: null, verify_error: null };
    try {
      await agent.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
    } catch (e) {
      run.error = errText(e);
    }
    try {
      await lastValueFrom(from(events).pipe(verifyEvents(), toArray()), { defaultValue: [] });
    } catch (e) {
      run.verify_error = errText(e);
    }
    const texts = new Map();
    for (const e of events) {
      if (e.type === "TEXT_MESSAGE_START") texts.set(e.messageId, "");
      else if (e.type === "TEXT_MESSAGE_CONTENT") texts.set(e.messageId, texts.get(e.messageId) + e.delta);
      else if (e.type === "TOOL_CALL_RESULT") run.tool_results[e.toolCallId] = e.content;
      else if (e.type === "RUN_FINISHED") {
        run.finish = e.outcome?.type ?? "absent";
        run.interrupts = (e.outcome?.interrupts || []).map((i) => (
          { id: i.id, reason: i.reason, message: i.message ?? null,
            toolCallId: i.toolCallId ?? null }));
      } else if (e.type === "RUN_ERROR") run.finish = "error";
    }
    run.texts = [...texts.values()];
    run.pending = agent.pendingInterrupts.map((i) => i.id);
    seen.runs.push(run);
  };
  await once({});
  try {
    await agent.runAgent({});
    seen.unanswered_refused = false;
  } catch (e) {
    seen.unanswered_refused = errText(e).includes("pending interrupt");
  }
  await once({ resume: agent.pendingInterrupts.map((i) => ({ interruptId: i.id,
                                                              status: "resolved" })) });
  const stranger = new HttpAgent({ url: `${base}/agui/${stream}` });
  try {
    await stranger.runAgent({ resume: [{ interruptId: "nope", status: "resolved" }] });
  } catch (e) {
    seen.unknown_error = errText(e);
  }
  return seen;
}

// ai: the UI message stream through DefaultChatTransport, assembled by readUIMessageStream
// (each version validates every chunk against its own strict schema)
// (ai 5 says so in x-ai-sdk-version: the gateway's way to send it only what ai 5 reads)
async function uiStreamClient(stream, ai = { DefaultChatTransport, readUIMessageStream },
                              headers = undefined) {
  const transport = new ai.DefaultChatTransport({ api: `${base}/aisdk/${stream}`, headers });
  const seen = { texts: [], reasoning: [], tool_calls: [], finish: null, usage: null,
                 errors: [], header: null, data: [], files: [], order: [], sources: [] };
  const chunks = await transport.sendMessages({
    trigger: "submit-message", chatId: "c1", messageId: undefined, abortSignal: undefined,
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }] });
  const [forUi, forEnd] = chunks.tee();
  const ends = (async () => {
    for await (const c of forEnd) {
      if (c.type === "finish") seen.finish = c.finishReason;
      else if (c.type === "abort") seen.finish = "abort";
    }
  })();
  let last = null;
  try {
    for await (const msg of ai.readUIMessageStream({ stream: forUi,
                                                  onError: (e) => seen.errors.push(errText(e)) })) {
      last = msg;
    }
  } catch (e) {
    seen.errors.push(errText(e));
  }
  await ends;
  // the parts in the order the UI message holds them
  for (const p of last?.parts || []) {
    if (p.type === "text") { seen.texts.push(p.text); seen.order.push(["text", p.text]); }
    else if (p.type === "reasoning") {
      seen.reasoning.push(p.text);
      seen.order.push(["reasoning", p.text]);
    }
    else if (p.type === "dynamic-tool" || p.type.startsWith("tool-")) {
      seen.order.push(["tool", p.toolCallId]);
      seen.tool_calls.push({ id: p.toolCallId, name: p.toolName ?? p.type.slice(5),
                             state: p.state, input: p.input, output: p.output,
                             approval: p.approval,
                             providerExecuted: p.providerExecuted });
    } else if (p.type.startsWith("data-")) seen.data.push({ type: p.type, data: p.data });
    else if (p.type.startsWith("source-")) seen.sources.push(p.url ?? p.title);
    else if (p.type === "file") seen.files.push(p.url);
  }
  seen.usage = last?.metadata?.usage ?? null;
  return seen;
}

// ai 6's own chat (AbstractChat, what useChat is built on) through a pause for approval: the
// tool part waits (approval-requested), addToolApprovalResponse answers it, and
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses sends the
// follow-up, whose reply continues the same assistant message.
class ChatState {
  constructor() { this.messages = []; this.status = "ready"; this.error = undefined; }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  }
  snapshot(v) { return structuredClone(v); }
}

async function approvalRoundTrip(stream, approved) {
  const seen = { asked: null, requests: 0, errors: [], status: null, messages: 0, parts: [],
                 metadata: null };
  const counting = async (input, init) => { seen.requests += 1; return fetch(input, init); };
  const chat = new AbstractChat({
    id: "approval", state: new ChatState(),
    transport: new DefaultChatTransport({ api: `${base}/aisdk/${stream}`, fetch: counting }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => seen.errors.push(errText(e)) });
  const settled = async () => {
    for (let i = 0; i < 400 && (chat.status === "submitted" || chat.status === "streaming"); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  await chat.sendMessage({ text: "delete a" });
  await settled();
  const part = (chat.lastMessage?.parts ?? []).find((p) => p.state === "approval-requested");
  if (part) {
    seen.asked = { toolCallId: part.toolCallId, approvalId: part.approval.id };
    await chat.addToolApprovalResponse({ id: part.approval.id, approved });
    for (let i = 0; i < 200 && seen.requests < 2; i++) await new Promise((r) => setTimeout(r, 25));
    await settled();
  }
  seen.status = chat.status;
  seen.messages = chat.messages.length;
  seen.metadata = chat.lastMessage?.metadata ?? null;
  seen.parts = (chat.lastMessage?.parts ?? []).map((p) => ({
    type: p.type, state: p.state, toolCallId: p.toolCallId, output: p.output, text: p.text,
    url: p.url, title: p.title }));
  return seen;
}

const CLIENTS = { "node-openai": openaiClient, "node-ai-streamText": streamTextClient,
                  "node-ag-ui": aguiClient, "node-ai-ui-stream": uiStreamClient,
                  "node-ai5-ui-stream": (stream) => uiStreamClient(stream, ai5,
                                                                   { "x-ai-sdk-version": "5" }) };
// the round trips: a paused stream, answered (run once per stream and decision)
const ROUND_TRIPS = { "node-ai-approval-yes": (stream) => approvalRoundTrip(stream, true),
                      "node-ai-approval-no": (stream) => approvalRoundTrip(stream, false) };

// "hitl:NAME": a human-in-the-loop stream, read by the AG-UI resume client only
const HITL_CLIENTS = { "node-ag-ui-resume": aguiResumeClient };

for (const arg of streams) {
  const hitl = arg.startsWith("hitl:");
  const stream = hitl ? arg.slice(5) : arg;
  const trip = !hitl && stream.startsWith("approval_"); // a round trip's stream: its own clients too
  const clients = hitl ? HITL_CLIENTS : trip ? { ...CLIENTS, ...ROUND_TRIPS } : CLIENTS;
  for (const [name, run] of Object.entries(clients)) {
    if (trip && !name.includes("ui-stream") && !name.includes("approval")) continue;
    let line;
    try {
      line = { client: name, stream, seen: await run(stream) };
    } catch (e) {
      line = { client: name, stream, crash: `${e?.name}: ${errText(e)}` };
    }
    process.stdout.write(JSON.stringify(line) + "\n");
  }
}
