// Capture LangGraph.js spans under Traceloop's Node SDK itself (`traceloop.initialize`, which installs
// @traceloop/instrumentation-langchain and its own span processor) with content off as its users turn it off,
// `traceContent: false` (TRACELOOP_TRACE_CONTENT=false), from the same graph runs as capture.mjs. The SDK is
// kept offline: no API key, `traceloopSyncEnabled: false` (no prompt registry fetch) and a loopback baseUrl;
// spans go to an InMemorySpanExporter given as its exporter. See README.md.
//
// The graph, the scenarios and the scripted model are scripted.mjs's; the graph is compiled with name
// "support_agent". Each run is wrapped in a root span `eval <name>` carrying luckrate.output_ok = true.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import * as traceloop from '@traceloop/node-server-sdk';

import { HERE, agent, converse, scenarios, tools } from './scripted.mjs';

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
    await converse(agent(s, 'support_agent', tools(s)), s);
    root.end();
  });
  await traceloop.forceFlush();
  const spans = exporter.getFinishedSpans();
  const stem = join(HERE, `${s.name}.sdk-nocontent.langchainjs-traceloop`);
  writeFileSync(`${stem}.otlp`, ProtobufTraceSerializer.serializeRequest(spans));
  console.log(`${stem}.otlp: ${spans.length} spans`);
}
process.exit(0);
