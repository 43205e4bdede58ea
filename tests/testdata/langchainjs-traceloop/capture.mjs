// Capture LangGraph.js spans under @traceloop/instrumentation-langchain (the LangChain instrumentation
// of Traceloop's Node SDK) from real graph runs on a scripted chat model (no network). See README.md.
//
// The graph, the scenarios and the scripted model are scripted.mjs's; the graph is compiled with name
// "support_agent". Each run is wrapped in a root span `eval <name>` carrying luckrate.output_ok = true.
// Content capture off is the instrumentation's `traceContent: false` (Traceloop's
// TRACELOOP_TRACE_CONTENT=false), set per process: `node capture.mjs --no-content`.
// `--class-tools` defines the tools as classes (`class LookupOrderTool extends StructuredTool`, in the
// styles listed at classTools) instead of with `tool()`; it runs itself again with `--no-content` too.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { HumanMessage } from '@langchain/core/messages';
import { DynamicStructuredTool, StructuredTool, tool } from '@langchain/core/tools';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { LangChainInstrumentation } from '@traceloop/instrumentation-langchain';
import { z } from 'zod';

import { HERE, PARAMS, agent as graph, answers, converse, scenarios, tools } from './scripted.mjs';

const CONTENT = !process.argv.includes('--no-content');
const CLASSES = process.argv.includes('--class-tools');

// The same tools as classes, one of each style LangChain.js users write: the instrumentation names a
// tool span after the class (LangChain's get_lc_unique_name: its `static lc_name()` if it defines one,
// else the constructor's name), not after the tool's `name`.
function classTools(s) {
  const answer = answers(s);
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
  return graph(s, name, ts);
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
    await converse(build(s), s);
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
