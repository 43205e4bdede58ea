// Capture Mastra's spans through its OpenTelemetry exporter (@mastra/otel-exporter) from real Agent runs
// on a scripted language model (no network). See README.md.
//
// The model is a plain AI SDK LanguageModelV2 object (the interface Mastra's agents call): each call
// answers with the scenario's next turn as tool calls (ids call_<turn>_<n>; the turn is the number of
// assistant tool-call messages in the prompt), then the answer text. The scenarios come from
// tests/scenarios.py (dumped by python3). Spans go to an InMemorySpanExporter handed to OtelExporter
// (its `exporter` option; the endpoint is never contacted) and are flushed after each run.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
const PARAMS = {
  lookup_order: { order_id: z.string() }, issue_refund: { order_id: z.string(), amount: z.number() },
  fetch_webpage: { url: z.string() }, send_email: { to: z.string(), body: z.string() },
  delete_account: { user_id: z.string() }, escalate_to_human: { reason: z.string() },
};

function scenarios() {
  const code = 'import json, dataclasses; from tests.scenarios import SCENARIOS; ' +
    'print(json.dumps([dataclasses.asdict(s) | {"expected": sorted(s.expected)} for s in SCENARIOS]))';
  return JSON.parse(execFileSync('python3', ['-c', code], { cwd: ROOT }).toString());
}

const pause = (ms) => new Promise((done) => setTimeout(done, ms));
const USAGE = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

function scriptedModel(s) {
  const reply = (prompt) => {
    const turn = prompt.filter((m) => m.role === 'assistant' && m.content.some((p) => p.type === 'tool-call')).length;
    if (turn >= s.turns.length) return { content: [{ type: 'text', text: s.answer }], finishReason: 'stop' };
    return {
      content: s.turns[turn].map((c, n) => ({ type: 'tool-call', toolCallId: `call_${turn}_${n}`, toolName: c.tool, input: JSON.stringify(c.args) })),
      finishReason: 'tool-calls',
    };
  };
  return {
    specificationVersion: 'v2', provider: 'scripted', modelId: 'scripted-chat', supportedUrls: {},
    async doGenerate({ prompt }) {
      await pause(3);
      return { ...reply(prompt), usage: USAGE, warnings: [] };
    },
    async doStream({ prompt }) {
      await pause(3);
      const { content, finishReason } = reply(prompt);
      const parts = [{ type: 'stream-start', warnings: [] }];
      for (const p of content) {
        if (p.type === 'text') parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: p.text }, { type: 'text-end', id: 't' });
        else parts.push(p);
      }
      parts.push({ type: 'finish', finishReason, usage: USAGE });
      return { stream: new ReadableStream({ start(c) { for (const p of parts) c.enqueue(p); c.close(); } }) };
    },
  };
}

function tools(s) {
  const pending = {};
  for (const turn of s.turns) for (const c of turn) (pending[c.tool] ??= []).push(c);
  return Object.fromEntries(Object.entries(PARAMS).map(([name, schema]) => [name, createTool({
    id: name, description: name.replaceAll('_', ' '), inputSchema: z.object(schema),
    execute: async () => {
      await pause(2);
      const call = pending[name].shift();
      if (call.error !== null) throw new Error(call.error);
      return call.result ?? '';
    },
  })]));
}

// Content off is Mastra's per-run tracing option: hideInput / hideOutput leave every span's input and
// output out (the agent run's, the model steps' and the tools').
const RUNS = scenarios().flatMap((s) => [[s, true], [s, false]]);

for (const [s, content] of RUNS) {
  const exporter = new InMemorySpanExporter();
  const otel = new OtelExporter({ provider: { custom: { endpoint: 'http://127.0.0.1:1/v1/traces' } }, exporter });
  const agent = new Agent({ id: 'support_agent', name: 'support_agent', instructions: 'You help customers with orders.',
    model: scriptedModel(s), tools: tools(s) });
  const mastra = new Mastra({ agents: { support_agent: agent }, logger: false,
    observability: new Observability({ configs: { otel: { serviceName: 'luckrate-capture', exporters: [otel] } } }) });
  const tracingOptions = content ? {} : { hideInput: true, hideOutput: true };
  await mastra.getAgent('support_agent').generate(s.user, { maxSteps: 8, tracingOptions });
  await pause(50);  // Mastra ends its spans asynchronously
  await otel.flush();
  const spans = exporter.getFinishedSpans();
  const stem = join(HERE, `${s.name}${content ? '' : '.nocontent'}.mastra`);
  writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
  console.log(`${stem}.otlp: ${spans.length} spans`);
}
