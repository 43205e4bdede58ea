// The runs list: new runs appear without a reload. Polls /api/runs?after=<last seen> with the page's
// filters and prepends a row per run. Every value is set with textContent: span data is text, never markup.
"use strict";
(function () {
  const body = document.getElementById("runs");
  const form = document.getElementById("filters");
  if (!body || !form) return;
  const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
  const visible = (s) => String(s ?? "").replace(INVISIBLE, (c) => "<U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + ">");
  const cell = (tr, text) => { const td = document.createElement("td"); td.textContent = visible(text); tr.appendChild(td); return td; };
  const when = (t) => t ? new Date(t * 1000).toISOString().replace("T", " ") : "";
  const TAGS = { ok: ["ok", "ok"], bad: ["bad", "bad"], not_gradable: ["ng", "not gradable"] };

  function row(run) {
    const tr = document.createElement("tr");
    tr.className = "run fresh path-" + (TAGS[run.path] ? run.path : "ok");
    tr.dataset.seq = String(run.seq);
    cell(tr, when(run.graded_at));
    const link = document.createElement("a");
    link.className = "trace";
    // The trace id is 32 hex digits from the service, and checked again here before it goes into a URL.
    if (/^[0-9a-f]{32}$/.test(run.trace_id)) link.href = "/runs/" + run.trace_id;
    link.textContent = visible(run.trace_id);
    cell(tr, "").appendChild(link);
    cell(tr, run.agent || "");
    cell(tr, run.spec);
    cell(tr, run.output);
    const tag = document.createElement("span");
    const [cls, word] = TAGS[run.path] || TAGS.ok;
    tag.className = "tag " + cls;
    tag.textContent = word;
    cell(tr, "").appendChild(tag);
    cell(tr, (run.checks || []).join(", "));
    cell(tr, run.steps).className = "num";
    const template = body.dataset.traceUrl;  // from the service's config, never from span data
    if (template) {
      const open = document.createElement("a");
      open.className = "tracing";
      open.rel = "noreferrer noopener";
      if (/^[0-9a-f]{32}$/.test(run.trace_id)) open.href = template.split("{trace_id}").join(run.trace_id);
      open.textContent = "open";
      cell(tr, "").appendChild(open);
    }
    return tr;
  }

  async function poll() {
    const params = new URLSearchParams(new FormData(form));
    params.set("after", body.dataset.last || "0");
    try {
      const answer = await fetch("/api/runs?" + params.toString(), { credentials: "same-origin" });
      if (answer.ok) {
        const data = await answer.json();
        for (const run of data.runs.slice().reverse()) body.insertBefore(row(run), body.firstChild);
        body.dataset.last = String(data.last);
      }
    } catch (e) { /* the service is restarting; the next poll tries again */ }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
})();
