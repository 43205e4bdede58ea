// What capture.mjs and capture_sdk.mjs share: the scenarios (tests/scenarios.py, dumped by python3), the scripted
// chat model, the tools answering from the scenario, and the graph. See README.md.
//
// The graph is the standard agent loop (agent node -> ToolNode -> agent), as the Python fixture
// tests/frameworks/langgraph_agent.py builds it. A scenario whose agent asks a question is two graph invocations
// (the second with the first's messages and the user's reply): `converse`.
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

export const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
export const PARAMS = {
  lookup_order: { order_id: z.string() }, issue_refund: { order_id: z.string(), amount: z.number() },
  fetch_webpage: { url: z.string() }, send_email: { to: z.string(), body: z.string() },
  delete_account: { user_id: z.string() }, escalate_to_human: { reason: z.string() },
  cancel_order: { order_id: z.string() },
};

export function scenarios() {
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

// The tool named `name` answers with the scenario's next call to it: its result, or its error thrown.
export function answers(s) {
  const pending = {};
  for (const turn of s.turns) if (Array.isArray(turn)) for (const c of turn) (pending[c.tool] ??= []).push(c);
  return async (name) => {
    await pause(2);
    const call = pending[name].shift();
    if (call.error !== null) throw new Error(call.error);
    return call.result ?? '';
  };
}

// The tools made with tool(): every span is named after its class, DynamicStructuredTool.
export function tools(s) {
  const answer = answers(s);
  return Object.entries(PARAMS).map(([name, schema]) => tool(async () => answer(name),
    { name, description: name.replaceAll('_', ' '), schema: z.object(schema) }));
}

export function agent(s, name, ts) {
  const model = new ScriptedChatModel(s).bindTools(ts);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(ts))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition)
    .addEdge('tools', 'agent')
    .compile({ name });
}

// The user's message, then a reply to each question the agent asks, each a graph invocation.
export async function converse(graph, s) {
  let messages = [new HumanMessage(s.user)];
  for (const turn of [...s.turns.filter((t) => !Array.isArray(t)), null]) {
    messages = (await graph.invoke({ messages })).messages;
    if (turn !== null) messages = [...messages, new HumanMessage(turn.reply)];
  }
}
