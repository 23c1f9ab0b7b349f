// An approval round trip with ai 6's own chat code: `node aisdk_approval.mjs URL AGENT QUESTION
// approve|deny` drives AbstractChat (what useChat is built on) over DefaultChatTransport with
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses. It sends the
// question, answers the tool part the reply asks approval for with addToolApprovalResponse (the
// chat then sends the follow-up by itself), and prints {"ok", "error", "asked", "requests",
// "parts", "status"}: what the client holds at the end.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(pathToFileURL(process.cwd() + "/"));
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } =
  await import(pathToFileURL(require.resolve("ai")).href);

const [url, agent, question, decision] = process.argv.slice(2);

class State {
  constructor() { this.messages = []; this.status = "ready"; this.error = undefined; }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  }
  snapshot(v) { return structuredClone(v); }
}

const out = { ok: true, error: null, asked: null, requests: 0, parts: [], status: null };
let requests = 0;
const counting = async (input, init) => { requests += 1; return fetch(input, init); };
const chat = new AbstractChat({
  id: "approval-chat",
  state: new State(),
  transport: new DefaultChatTransport({ api: url, body: { agent }, fetch: counting }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (e) => { out.ok = false; out.error = String(e?.message ?? e); },
});

const toolParts = () => (chat.lastMessage?.parts ?? []).filter(
  (p) => p.type === "dynamic-tool" || p.type.startsWith("tool-"));
const settled = async () => {
  for (let i = 0; i < 600 && (chat.status === "submitted" || chat.status === "streaming"); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
};

await chat.sendMessage({ text: question });
await settled();
const asking = toolParts().find((p) => p.state === "approval-requested");
out.asked = asking ? { toolCallId: asking.toolCallId, approvalId: asking.approval.id,
                       input: asking.input } : null;
if (asking) {
  await chat.addToolApprovalResponse({ id: asking.approval.id, approved: decision === "approve",
                                       reason: decision === "approve" ? undefined : "keep it" });
  // the automatic follow-up starts on its own: wait for it to begin, then to end
  for (let i = 0; i < 200 && requests < 2; i++) await new Promise((r) => setTimeout(r, 25));
  await settled();
}
out.requests = requests;
out.status = chat.status;
out.messages = chat.messages.length;
out.parts = (chat.lastMessage?.parts ?? []).map((p) => ({
  type: p.type, state: p.state, toolCallId: p.toolCallId, output: p.output, text: p.text,
  approval: p.approval }));
out.metadata = chat.lastMessage?.metadata ?? null;
process.stdout.write(JSON.stringify(out));
