// Verify a stream with the real clients: `node verify_streams.mjs agui|aisdk` reads a JSON list
// (AG-UI events, or AI SDK UI message chunks) on stdin and prints {"ok", "error", "text", ...}.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(pathToFileURL(process.cwd() + "/"));
const kind = process.argv[2];
let input = "";
for await (const piece of process.stdin) input += piece;
const items = JSON.parse(input);
const out = { ok: true, error: null, text: "", reasoning: "" };

if (kind === "agui-resume") {
  // @ag-ui/client over HTTP: a run that ends with interrupts, then a run of the same HttpAgent
  // (same thread) resuming each with stdin's {"status", "payload"}; argv[3] the endpoint URL,
  // stdin {"question", "agent", "status", "payload"}. Each run's events go through verifyEvents.
  const url = process.argv[3];
  const { question, agent, status, payload } = items;
  const { HttpAgent, verifyEvents } = await import(pathToFileURL(require.resolve("@ag-ui/client")).href);
  const { from, lastValueFrom, toArray } = await import(pathToFileURL(require.resolve("rxjs")).href);
  const a = new HttpAgent({ url: `${url}?agent=${encodeURIComponent(agent)}`,
                            initialMessages: [{ id: "u1", role: "user", content: question }] });
  out.runs = [];
  const once = async (params) => {
    const events = [];
    const run = { events: [], error: null, verify_error: null };
    try {
      await a.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
    } catch (e) {
      run.error = String(e?.message ?? e);
    }
    try {
      await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()), { defaultValue: [] });
    } catch (e) {
      run.verify_error = String(e?.message ?? e);
    }
    run.events = events;
    run.pending = a.pendingInterrupts.map((i) => i.id);
    out.runs.push(run);
  };
  await once({});
  // a run that does not answer the pending interrupts is refused by the client itself
  try {
    await a.runAgent({});
    out.unanswered_refused = false;
  } catch (e) {
    out.unanswered_refused = String(e?.message ?? e).includes("pending interrupt");
  }
  const resume = a.pendingInterrupts.map((i) => ({ interruptId: i.id, status,
                                                   ...(payload === undefined ? {} : { payload }) }));
  await once({ resume });
  out.ok = out.runs.every((r) => r.error === null && r.verify_error === null);
} else if (kind === "agui-http" || kind === "aisdk-http") {
  // the real clients over HTTP against the gateway: argv[3] is the endpoint URL, stdin
  // {"question", "agent"}
  const url = process.argv[3];
  const { question, agent } = items;
  if (kind === "agui-http") {
    const { HttpAgent, verifyEvents } = await import(pathToFileURL(require.resolve("@ag-ui/client")).href);
    const { from, lastValueFrom, toArray } = await import(pathToFileURL(require.resolve("rxjs")).href);
    const a = new HttpAgent({ url: `${url}?agent=${encodeURIComponent(agent)}`,
                              initialMessages: [{ id: "u1", role: "user", content: question }] });
    const events = [];
    try {
      await a.runAgent({}, { onEvent: ({ event }) => { events.push(event); } });
      await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()), { defaultValue: [] });
    } catch (e) {
      out.ok = false;
      out.error = String(e?.message ?? e);
    }
    for (const m of a.messages) {
      if (m.role === "assistant" && typeof m.content === "string") out.text += m.content;
      if (m.role === "reasoning") out.reasoning += m.content;
    }
    out.events = events.length;
    out.last = events.length ? events[events.length - 1].type : null;
  } else {
    const { DefaultChatTransport, readUIMessageStream } = await import(pathToFileURL(require.resolve("ai")).href);
    const t = new DefaultChatTransport({ api: url, body: { agent } });
    try {
      const chunks = await t.sendMessages({
        trigger: "submit-message", chatId: "node-chat", messageId: undefined,
        abortSignal: undefined,
        messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: question }] }] });
      let last = null;
      for await (const m of readUIMessageStream({ stream: chunks, terminateOnError: true,
                                                  onError: (e) => { out.ok = false; out.error = String(e?.message ?? e); } })) {
        last = m;
      }
      for (const p of last?.parts || []) {
        if (p.type === "text") out.text += p.text;
        else if (p.type === "reasoning") out.reasoning += p.text;
      }
    } catch (e) {
      out.ok = false;
      out.error = String(e?.message ?? e);
    }
  }
} else if (kind === "agui") {
  const { verifyEvents } = await import(pathToFileURL(require.resolve("@ag-ui/client")).href);
  const { from, lastValueFrom, toArray } = await import(pathToFileURL(require.resolve("rxjs")).href);
  try {
    await lastValueFrom(from(items).pipe(verifyEvents(false), toArray()), { defaultValue: [] });
  } catch (e) {
    out.ok = false;
    out.error = String(e?.message ?? e);
  }
  out.text = items.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
} else {
  const { readUIMessageStream } = await import(pathToFileURL(require.resolve("ai")).href);
  const stream = new ReadableStream({
    start(c) { for (const i of items) c.enqueue(i); c.close(); },
  });
  let last = null;
  try {
    for await (const m of readUIMessageStream({ stream, terminateOnError: true,
                                                onError: (e) => { out.ok = false; out.error = String(e?.message ?? e); } })) {
      last = m;
    }
  } catch (e) {
    out.ok = false;
    out.error = String(e?.message ?? e);
  }
  for (const p of last?.parts || []) {
    if (p.type === "text") out.text += p.text;
    else if (p.type === "reasoning") out.reasoning += p.text;
  }
}
process.stdout.write(JSON.stringify(out));
