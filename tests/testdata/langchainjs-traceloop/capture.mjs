// Capture LangGraph.js spans under @traceloop/instrumentation-langchain (the LangChain instrumentation
// of Traceloop's Node SDK) from real graph runs on a scripted chat model (no network). See README.md.
//
// The graph is the standard agent loop (agent node -> ToolNode -> agent), as the Python fixture
// tests/frameworks/langgraph_agent.py builds it, compiled with name "support_agent". The scenarios
// come from tests/scenarios.py (dumped by python3 at start). Each run is wrapped in a root span
// `eval <name>` carrying luckrate.output_ok = true. A scenario whose agent asks a question is two
// graph invocations (the second with the first's messages and the user's reply) under that root span.
// Content capture off is the instrumentation's `traceContent: false` (Traceloop's
// TRACELOOP_TRACE_CONTENT=false), set per process: `node capture.mjs --no-content`.
// `--class-tools` defines the tools as classes (`class LookupOrderTool extends StructuredTool`, in the
// styles listed at classTools) instead of with `tool()`; it runs itself again with `--no-content` too.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { DynamicStructuredTool, StructuredTool, tool } from '@langchain/core/tools';
import { MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { LangChainInstrumentation } from '@traceloop/instrumentation-langchain';
import { z } from 'zod';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
const CONTENT = !process.argv.includes('--no-content');
const CLASSES = process.argv.includes('--class-tools');
const PARAMS = {
  lookup_order: { order_id: z.string() }, issue_refund: { order_id: z.string(), amount: z.number() },
  fetch_webpage: { url: z.string() }, send_email: { to: z.string(), body: z.string() },
  delete_account: { user_id: z.string() }, escalate_to_human: { reason: z.string() },
  cancel_order: { order_id: z.string() },
};

function scenarios() {
  const code = 'import json, dataclasses; from tests.scenarios import SCENARIOS, POLICY_SCENARIOS, FAILING_LOOP; ' +
    'print(json.dumps([dataclasses.asdict(s) | {"expected": sorted(s.expected)} ' +
    'for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,)]))';
  return JSON.parse(execFileSync('python3', ['-c', code], { cwd: ROOT }).toString());
}

// OTel JS stamps a span's start with Date.now() (whole milliseconds) and its end from a per-span
// offset to performance.now(), so spans less than a millisecond apart cannot be ordered. A real
// model takes far longer; the scripted one and the tools wait a few milliseconds to keep order real.
const pause = (ms) => new Promise((done) => setTimeout(done, ms));

// The turn is the number of AI messages already in the conversation: the model keeps no state.
class ScriptedChatModel extends BaseChatModel {
  constructor(scenario) { super({}); this.scenario = scenario; }
  _llmType() { return 'scripted'; }
  bindTools() { return this; }
  async _generate(messages) {
    await pause(3);
    const turn = messages.filter((m) => m.getType() === 'ai').length;
    const turns = this.scenario.turns;
    const step = turns[turn];
    const message = turn >= turns.length ? new AIMessage({ content: this.scenario.answer })
      : !Array.isArray(step) ? new AIMessage({ content: step.text })  // a question: the user replies next
      : new AIMessage({ content: '', tool_calls: step.map((c, n) => ({ name: c.tool, args: c.args, id: `call_${turn}_${n}`, type: 'tool_call' })) });
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] };
  }
}

function tools(s) {
  const pending = {};
  for (const turn of s.turns) if (Array.isArray(turn)) for (const c of turn) (pending[c.tool] ??= []).push(c);
  return Object.entries(PARAMS).map(([name, schema]) => tool(async () => {
    await pause(2);
    const call = pending[name].shift();
    if (call.error !== null) throw new Error(call.error);
    return call.result ?? '';
  }, { name, description: name.replaceAll('_', ' '), schema: z.object(schema) }));
}

// The same tools as classes, one of each style LangChain.js users write: the instrumentation names a
// tool span after the class (LangChain's get_lc_unique_name: its `static lc_name()` if it defines one,
// else the constructor's name), not after the tool's `name`.
function classTools(s) {
  const pending = {};
  for (const turn of s.turns) if (Array.isArray(turn)) for (const c of turn) (pending[c.tool] ??= []).push(c);
  const answer = async (name) => {
    await pause(2);
    const call = pending[name].shift();
    if (call.error !== null) throw new Error(call.error);
    return call.result ?? '';
  };
  const fields = (name) => ({ name, description: name.replaceAll('_', ' '), schema: z.object(PARAMS[name]) });
  class ScriptedTool extends StructuredTool {  // an application's own base class
    constructor(name) { super(); Object.assign(this, fields(name)); }
    async _call() { return answer(this.name); }
  }
  class LookupOrderTool extends ScriptedTool { constructor() { super('lookup_order'); } }
  class IssueRefund extends ScriptedTool { constructor() { super('issue_refund'); } }  // no "Tool" suffix
  class FetchWebpageTool extends ScriptedTool {  // lc_name() kept under minification: its value names the span
    static lc_name() { return 'FetchWebpage'; }
    constructor() { super('fetch_webpage'); }
  }
  class SendEmailTool extends StructuredTool {  // fields declared on the class
    name = 'send_email';
    description = 'send email';
    schema = z.object(PARAMS.send_email);
    async _call() { return answer('send_email'); }
  }
  class DeleteAccountTool extends ScriptedTool { constructor() { super('delete_account'); } }
  class EscalateToHuman extends DynamicStructuredTool {  // a subclass of the class tool() makes
    constructor() { super({ ...fields('escalate_to_human'), func: async () => answer('escalate_to_human') }); }
  }
  class CancelOrderTool extends ScriptedTool { constructor() { super('cancel_order'); } }
  return [LookupOrderTool, IssueRefund, FetchWebpageTool, SendEmailTool, DeleteAccountTool, EscalateToHuman,
    CancelOrderTool].map((Class) => new Class());
}

function agent(s, name = 'support_agent', ts = (CLASSES ? classTools : tools)(s)) {
  const model = new ScriptedChatModel(s).bindTools(ts);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(ts))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition)
    .addEdge('tools', 'agent')
    .compile({ name });
}

// Multi-agent: the triage graph's tool runs the support graph (agents as tools).
function triage(s) {
  const support = agent(s);
  const transfer = tool(async ({ request }) => {
    const out = await support.invoke({ messages: [new HumanMessage(request)] });
    return out.messages.at(-1).content;
  }, { name: 'transfer_to_support_agent', description: 'Hand the request to the support agent.', schema: z.object({ request: z.string() }) });
  const script = { ...s, turns: [[{ tool: 'transfer_to_support_agent', args: { request: s.user } }]] };
  return agent(script, 'triage_agent', [transfer]);
}

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const instrumentation = new LangChainInstrumentation({ traceContent: CONTENT });
instrumentation.setTracerProvider(provider);
instrumentation.manuallyInstrument({ callbackManagerModule: CallbackManagerModule });
const tracer = provider.getTracer('luckrate.capture');

const runs = scenarios().map((s) => [s, s.name, agent]);
if (CONTENT && !CLASSES) runs.push([scenarios().find((s) => s.name === 'forbidden'), 'handoff', triage]);
for (const [s, name, build] of runs) {
  exporter.reset();
  await tracer.startActiveSpan(`eval ${s.name}`, { attributes: { 'luckrate.output_ok': true } }, async (root) => {
    const graph = build(s);
    let messages = [new HumanMessage(s.user)];
    for (const turn of [...s.turns.filter((t) => !Array.isArray(t)), null]) {
      messages = (await graph.invoke({ messages })).messages;
      if (turn !== null) messages = [...messages, new HumanMessage(turn.reply)];
    }
    root.end();
  });
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  const stem = join(HERE, `${name}${CLASSES ? '.classtools' : ''}${CONTENT ? '' : '.nocontent'}.langchainjs-traceloop`);
  writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
  if (CONTENT) writeFileSync(`${stem}.otlp.json`, Buffer.from(JsonTraceSerializer.serializeRequest(spans)));
  console.log(`${stem}.otlp: ${spans.length} spans`);
}
await provider.shutdown();
if (CONTENT) {
  const again = [fileURLToPath(import.meta.url), '--no-content', ...(CLASSES ? ['--class-tools'] : [])];
  execFileSync(process.execPath, again, { stdio: 'inherit' });
}
