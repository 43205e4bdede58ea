// Sends agent runs to luckrate with one of the OpenTelemetry JS SDK's OTLP trace exporters.
//
//   node send.js <http|proto|grpc> <url> <gzip|none> <runs.json>
//
// runs.json is a list of luckrate.demo.Run objects (dataclasses.asdict); each becomes one trace of GenAI
// spans built as luckrate/demo.py's emit() builds them: an invoke_agent root, a chat span per model turn,
// an execute_tool span per tool call. Spans go through a BasicTracerProvider and a BatchSpanProcessor;
// forceFlush and shutdown send them. Prints {"exports": [...result codes...], "spans": n} and exits 1
// when any export failed (the SDK itself only logs a failure).
"use strict";

const fs = require("fs");
const { context, trace, SpanKind, SpanStatusCode } = require("@opentelemetry/api");
const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");
const { resourceFromAttributes } = require("@opentelemetry/resources");

const EXPORTERS = {
  http: "@opentelemetry/exporter-trace-otlp-http",
  proto: "@opentelemetry/exporter-trace-otlp-proto",
  grpc: "@opentelemetry/exporter-trace-otlp-grpc",
};
const STEP_NS = 40000000n; // 40 ms per span, as in demo.py: runs are laid out in time, never slept through
const MODEL = "demo-model";
const PROVIDER = "luckrate.demo";

class Recording {
  // Wraps the real exporter to keep each export's result code.
  constructor(inner) {
    this.inner = inner;
    this.results = [];
    this.spans = 0;
  }
  export(spans, done) {
    this.inner.export(spans, (result) => {
      this.results.push({ code: result.code, error: result.error ? String(result.error) : undefined });
      if (result.code === 0) this.spans += spans.length;
      done(result);
    });
  }
  forceFlush() {
    return this.inner.forceFlush ? this.inner.forceFlush() : Promise.resolve();
  }
  shutdown() {
    return this.inner.shutdown();
  }
}

function hrTime(ns) {
  return [Number(ns / 1000000000n), Number(ns % 1000000000n)];
}

function messages(role, parts, finish) {
  const msg = { role, parts };
  if (finish) msg.finish_reason = finish;
  return msg;
}

const text = (content) => ({ type: "text", content });

function emit(tracer, run, startNs) {
  let now = startNs;
  const tick = () => (now += STEP_NS);
  const user = messages("user", [text(run.user)]);
  const attrs = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": run.agent,
    "gen_ai.provider.name": PROVIDER,
    "gen_ai.input.messages": JSON.stringify([user]),
    "gen_ai.output.messages": JSON.stringify([messages("assistant", [text(run.answer)], "stop")]),
  };
  if (run.output_ok !== null) attrs["luckrate.output_ok"] = run.output_ok;
  const root = tracer.startSpan(`invoke_agent ${run.agent}`, { kind: SpanKind.INTERNAL, attributes: attrs,
                                                             startTime: hrTime(now) });
  const ctx = trace.setSpan(context.active(), root);
  let history = [user];
  run.turns.forEach((turn, turnNo) => {
    history = chat(tracer, ctx, tick, history, turn, String(turnNo), "");
    turn.forEach((call, k) => history.push(tool(tracer, ctx, tick, call, `call_${turnNo}_${k}`)));
  });
  chat(tracer, ctx, tick, history, [], "", run.answer);
  root.end(hrTime(tick()));
}

function chat(tracer, ctx, tick, history, calls, runId, answer) {
  const parts = calls.length
    ? calls.map((c, k) => ({ type: "tool_call", id: `call_${runId}_${k}`, name: c.tool, arguments: c.args }))
    : [text(answer)];
  const out = messages("assistant", parts, calls.length ? "tool_call" : "stop");
  const span = tracer.startSpan(`chat ${MODEL}`, { kind: SpanKind.CLIENT, startTime: hrTime(tick()), attributes: {
    "gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER, "gen_ai.request.model": MODEL,
    "gen_ai.input.messages": JSON.stringify(history), "gen_ai.output.messages": JSON.stringify([out]),
    "gen_ai.response.finish_reasons": [calls.length ? "tool_calls" : "stop"],
  } }, ctx);
  span.end(hrTime(tick()));
  return [...history, out];
}

function tool(tracer, ctx, tick, call, callId) {
  const attrs = {
    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool, "gen_ai.tool.type": "function",
    "gen_ai.tool.call.id": callId, "gen_ai.tool.call.arguments": JSON.stringify(call.args),
  };
  if (call.error === null) attrs["gen_ai.tool.call.result"] = call.result || "";
  else attrs["error.type"] = "ToolError";
  const span = tracer.startSpan(`execute_tool ${call.tool}`, { kind: SpanKind.INTERNAL, startTime: hrTime(tick()),
                                                             attributes: attrs }, ctx);
  if (call.error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: call.error });
  span.end(hrTime(tick()));
  const response = call.error === null ? call.result : `error: ${call.error}`;
  return messages("tool", [{ type: "tool_call_response", id: callId, response }]);
}

async function main() {
  const [kind, url, compression, runsPath] = process.argv.slice(2);
  if (!EXPORTERS[kind] || !url || !["gzip", "none"].includes(compression) || !runsPath) {
    console.error("usage: node send.js <http|proto|grpc> <url> <gzip|none> <runs.json>");
    process.exit(2);
  }
  const { OTLPTraceExporter } = require(EXPORTERS[kind]);
  const exporter = new Recording(new OTLPTraceExporter({ url, compression, timeoutMillis: 10000 }));
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "luckrate-interop-js" }),
    spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 20, scheduledDelayMillis: 50 })],
  });
  const tracer = provider.getTracer("luckrate.interop");
  const runs = JSON.parse(fs.readFileSync(runsPath, "utf8"));
  let start = BigInt(Date.now()) * 1000000n;
  for (const run of runs) {
    emit(tracer, run, start);
    start += 100n * STEP_NS;
  }
  await provider.forceFlush();
  await provider.shutdown();
  console.log(JSON.stringify({ exports: exporter.results, spans: exporter.spans }));
  process.exit(exporter.results.length && exporter.results.every((r) => r.code === 0) ? 0 : 1);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
