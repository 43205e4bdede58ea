// Capture Vercel AI SDK (npm `ai`) runs exported through Traceloop's Node SDK span processor
// (@traceloop/node-server-sdk `createSpanProcessor`), which rewrites the AI SDK's spans as they end:
// `ai.toolCall` becomes `execute_tool <tool>` with gen_ai.* keys, and with content its input and output move
// to traceloop.entity.* (traceloop.span.kind = tool). The model is the SDK's own scripted test model
// (MockLanguageModelV3 from `ai/test`); no network. See README.md.
//
// The scenarios come from tests/scenarios.py (dumped by python3 at start). Each run is wrapped in a root
// span `eval <name>` carrying luckrate.output_ok = true (its tracer is allowed through the processor's
// instrumentation filter with `allowedInstrumentationLibraries`). Content off is the AI SDK's own setting
// (`recordInputs: false, recordOutputs: false`): Traceloop's `traceContent` governs its own
// instrumentations, not the AI SDK's spans.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { trace } from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { createSpanProcessor } from '@traceloop/node-server-sdk';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
const PARAMS = {
  lookup_order: ['order_id'], issue_refund: ['order_id', 'amount'], fetch_webpage: ['url'],
  send_email: ['to', 'body'], delete_account: ['user_id'], escalate_to_human: ['reason'],
  cancel_order: ['order_id'],
};

function scenarios() {
  const code = 'import json, dataclasses; from tests.scenarios import SCENARIOS, POLICY_SCENARIOS, FAILING_LOOP; ' +
    'print(json.dumps([dataclasses.asdict(s) | {"expected": sorted(s.expected)} ' +
    'for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,)]))';
  return JSON.parse(execFileSync('python3', ['-c', code], { cwd: ROOT }).toString());
}

const pause = (ms) => new Promise((done) => setTimeout(done, ms));
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

// One generateText call runs the scenario's tool turns up to its first question (an Ask: {text, reply}),
// then answers with the question's text; the user's reply is a second call with the history.
function segments(s) {
  const out = [[]];
  for (const turn of s.turns) {
    if (Array.isArray(turn)) out[out.length - 1].push(turn);
    else { out[out.length - 1].question = turn.text; out.push([]); out[out.length - 1].reply = turn.reply; }
  }
  return out;
}

function scriptedModel(turns, offset, answer) {
  const outputs = turns.map((turn, i) => ({
    content: turn.map((c, j) => ({
      type: 'tool-call', toolCallId: `call_${offset + i}_${j}`, toolName: c.tool, input: JSON.stringify(c.args),
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
  }));
  outputs.push({ content: [{ type: 'text', text: answer }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });
  return new MockLanguageModelV3({ modelId: 'scripted-chat', doGenerate: async () => { await pause(3); return outputs.shift(); } });
}

function tools(s) {
  const pending = {};
  for (const turn of s.turns) if (Array.isArray(turn)) for (const c of turn) (pending[c.tool] ??= []).push(c);
  return Object.fromEntries(Object.entries(PARAMS).map(([name, params]) => [name, tool({
    description: name.replaceAll('_', ' '),
    inputSchema: jsonSchema({ type: 'object', properties: Object.fromEntries(params.map((p) => [p, {}])), required: params }),
    execute: async () => {
      await pause(2);
      const call = pending[name].shift();
      if (call.error !== null) throw new Error(call.error);
      return call.result ?? '';
    },
  })]));
}

async function run(s, capture) {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    spanProcessors: [createSpanProcessor({ exporter, disableBatch: true, allowedInstrumentationLibraries: ['luckrate.capture'] })],
  });
  provider.register();
  const tracer = trace.getTracer('luckrate.capture');
  const ts = tools(s);
  await tracer.startActiveSpan(`eval ${s.name}`, { attributes: { 'luckrate.output_ok': true } }, async (root) => {
    let messages = [{ role: 'user', content: s.user }];
    let offset = 0;
    for (const seg of segments(s)) {
      if (seg.reply !== undefined) messages = [...messages, { role: 'user', content: seg.reply }];
      const result = await generateText({
        model: scriptedModel(seg, offset, seg.question ?? s.answer),
        system: 'You help customers with orders.',
        messages,
        tools: ts,
        stopWhen: stepCountIs(seg.length + 1),
        experimental_telemetry: { isEnabled: true, functionId: 'support_agent', recordInputs: capture, recordOutputs: capture },
      });
      messages = [...messages, ...result.response.messages];
      offset += seg.length + 1;
    }
    root.end();
  });
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  trace.disable();
  return spans;
}

for (const s of scenarios()) {
  for (const capture of [true, false]) {
    const spans = await run(s, capture);
    const stem = join(HERE, `${s.name}${capture ? '' : '.nocontent'}.vercel-ai-traceloop`);
    writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
    console.log(`${stem}.otlp: ${spans.length} spans`);
  }
}
