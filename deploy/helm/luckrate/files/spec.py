"""Example spec for a support agent that looks up orders, refunds, reads web pages and sends email.

Spec files are Python and therefore trusted configuration (they run when loaded); use a JSON spec
of the same shape where the channel that delivers it is not trusted.
"""

SPEC = {
    "tools": [
        "lookup_order",
        "issue_refund",
        "fetch_webpage",
        "send_email",
        "delete_account",
        "escalate_to_human",
        "cancel_order",
    ],
    "required": ["lookup_order"],
    "forbidden": ["delete_account"],
    "before": [
        # every issue_refund and cancel_order comes after a successful lookup_order of the same order
        {"first": "lookup_order", "then": ["issue_refund", "cancel_order"], "same": "order_id"},
    ],
    "confirm": ["cancel_order"],  # the user says yes after the agent's last message, before each cancel
    "max_steps": 8,
    "max_failures": 3,
    "max_duration": 60.0,
    "untrusted": ["fetch_webpage"],
    "privileged": ["send_email", "issue_refund"],
}
