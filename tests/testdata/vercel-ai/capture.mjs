// Capture Vercel AI SDK (npm `ai`) telemetry spans from real generateText runs on the SDK's own
// scripted test model (MockLanguageModelV3 from `ai/test`); no network. See README.md.
//
// The scenarios come from tests/scenarios.py (dumped by python3 at start), so every framework
// replays the same calls. Each run is wrapped in a root span `eval <name>` carrying
// luckrate.output_ok = true, as a user's eval harness would set it; the SDK's spans nest under it.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
const PARAMS = {
  lookup_order: ['order_id'], issue_refund: ['order_id', 'amount'], fetch_webpage: ['url'],
  send_email: ['to', 'body'], delete_account: ['user_id'], escalate_to_human: ['reason'],
};

function scenarios() {
  const code = 'import json, dataclasses; from tests.scenarios import SCENARIOS; ' +
    'print(json.dumps([dataclasses.asdict(s) | {"expected": sorted(s.expected)} for s in SCENARIOS]))';
  return JSON.parse(execFileSync('python3', ['-c', code], { cwd: ROOT }).toString());
}

// OTel JS stamps a span's start with Date.now() (whole milliseconds) and its end from a per-span
// offset to performance.now(), so spans less than a millisecond apart cannot be ordered. A real
// model takes far longer; the scripted one and the tools wait a few milliseconds to keep order real.
const pause = (ms) => new Promise((done) => setTimeout(done, ms));

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

// The model's turns: each scenario turn's tool calls, then the answer text.
function scriptedModel(s) {
  const outputs = s.turns.map((turn, i) => ({
    content: turn.map((c, j) => ({
      type: 'tool-call', toolCallId: `call_${i}_${j}`, toolName: c.tool, input: JSON.stringify(c.args),
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
  }));
  outputs.push({ content: [{ type: 'text', text: s.answer }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });
  return new MockLanguageModelV3({
    modelId: 'scripted-chat',
    doGenerate: async () => { await pause(3); return outputs.shift(); },
  });
}

// Each tool answers with the scenario's scripted result, in order per tool (or throws its error).
function tools(s) {
  const pending = {};
  for (const turn of s.turns) for (const c of turn) (pending[c.tool] ??= []).push(c);
  return Object.fromEntries(Object.entries(PARAMS).map(([name, params]) => [name, tool({
    description: name.replaceAll('_', ' '),
    inputSchema: jsonSchema({
      type: 'object', properties: Object.fromEntries(params.map((p) => [p, {}])), required: params,
    }),
    execute: async () => {
      await pause(2);
      const call = pending[name].shift();
      if (call.error !== null) throw new Error(call.error);
      return call.result ?? '';
    },
  })]));
}

function support(s, capture, tracer, prompt) {
  return generateText({
    model: scriptedModel(s),
    system: 'You help customers with orders.',
    prompt,
    tools: tools(s),
    stopWhen: stepCountIs(s.turns.length + 1),
    experimental_telemetry: {
      isEnabled: true, functionId: 'support_agent', recordInputs: capture, recordOutputs: capture, tracer,
    },
  });
}

// The AI SDK's multi-agent pattern: a sub-agent is a tool whose execute calls generateText again.
function triage(s, capture, tracer) {
  const handoff = { tool: 'transfer_to_support_agent', args: { request: s.user } };
  return generateText({
    model: scriptedModel({ turns: [[handoff]], answer: s.answer }),
    system: 'Route the customer to the right agent.',
    prompt: s.user,
    tools: {
      transfer_to_support_agent: tool({
        description: 'Hand the request to the support agent.',
        inputSchema: jsonSchema({ type: 'object', properties: { request: {} }, required: ['request'] }),
        execute: async ({ request }) => (await support(s, capture, tracer, request)).text,
      }),
    },
    stopWhen: stepCountIs(2),
    experimental_telemetry: {
      isEnabled: true, functionId: 'triage_agent', recordInputs: capture, recordOutputs: capture, tracer,
    },
  });
}

async function run(s, capture, multiAgent = false) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('luckrate.capture');
  await tracer.startActiveSpan(`eval ${s.name}`, { attributes: { 'luckrate.output_ok': true } }, async (root) => {
    await (multiAgent ? triage(s, capture, tracer) : support(s, capture, tracer, s.user));
    root.end();
  });
  await provider.forceFlush();
  return exporter.getFinishedSpans();
}

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const forbidden = scenarios().find((s) => s.name === 'forbidden');
const handoff = await run(forbidden, true, true);
writeFileSync(join(HERE, 'handoff.vercel-ai.otlp'), ProtobufTraceSerializer.serializeRequest(handoff));
console.log(`handoff.vercel-ai.otlp: ${handoff.length} spans`);
for (const s of scenarios()) {
  for (const capture of [true, false]) {
    const spans = await run(s, capture);
    const stem = join(HERE, `${s.name}${capture ? '' : '.nocontent'}.vercel-ai`);
    writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
    if (capture) writeFileSync(`${stem}.otlp.json`, Buffer.from(JsonTraceSerializer.serializeRequest(spans)));
    console.log(`${stem}.otlp: ${spans.length} spans`);
  }
}
