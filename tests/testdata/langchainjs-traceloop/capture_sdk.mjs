// Capture LangGraph.js spans under Traceloop's Node SDK itself (`traceloop.initialize`, which installs
// @traceloop/instrumentation-langchain and its own span processor) with content off as its users turn it off,
// `traceContent: false` (TRACELOOP_TRACE_CONTENT=false), from the same graph runs as capture.mjs. The SDK is
// kept offline: no API key, `traceloopSyncEnabled: false` (no prompt registry fetch) and a loopback baseUrl;
// spans go to an InMemorySpanExporter given as its exporter. See README.md.
//
// The graph is the standard agent loop (agent node -> ToolNode -> agent), as the Python fixture
// tests/frameworks/langgraph_agent.py builds it, compiled with name "support_agent". The scenarios
// come from tests/scenarios.py (dumped by python3 at start). Each run is wrapped in a root span
// `eval <name>` carrying luckrate.output_ok = true. A scenario whose agent asks a question is two
// graph invocations (the second with the first's messages and the user's reply) under that root span.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import * as traceloop from '@traceloop/node-server-sdk';
import { z } from 'zod';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
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

function agent(s, name = 'support_agent', ts = tools(s)) {
  const model = new ScriptedChatModel(s).bindTools(ts);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(ts))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition)
    .addEdge('tools', 'agent')
    .compile({ name });
}

const exporter = new InMemorySpanExporter();
traceloop.initialize({
  appName: 'luckrate-capture', exporter, disableBatch: true, traceContent: false, silenceInitializationMessage: true,
  traceloopSyncEnabled: false, baseUrl: 'http://127.0.0.1:9',
  instrumentModules: { langchain: { callbackManagerModule: CallbackManagerModule } },
});
const tracer = traceloop.getTraceloopTracer();

for (const s of scenarios()) {
  exporter.reset();
  // The eval harness's own span: the SDK's processor keeps every instrumentation scope (initialize allows all).
  await tracer.startActiveSpan(`eval ${s.name}`, { attributes: { 'luckrate.output_ok': true } }, async (root) => {
    const graph = agent(s);
    let messages = [new HumanMessage(s.user)];
    for (const turn of [...s.turns.filter((t) => !Array.isArray(t)), null]) {
      messages = (await graph.invoke({ messages })).messages;
      if (turn !== null) messages = [...messages, new HumanMessage(turn.reply)];
    }
    root.end();
  });
  await traceloop.forceFlush();
  const spans = exporter.getFinishedSpans();
  const stem = join(HERE, `${s.name}.sdk-nocontent.langchainjs-traceloop`);
  writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
  console.log(`${stem}.otlp: ${spans.length} spans`);
}
process.exit(0);
