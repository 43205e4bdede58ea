"""An airline customer-service agent's policy, as a luckrate spec.

Written from the airline policy of the tau-bench benchmark (sierra-research/tau-bench,
tau_bench/envs/airline/wiki.md), rule by rule in our own words; the tools are that benchmark's.
POLICY.md beside this file gives each rule and the key that says it, and what the spec cannot say.
"""

USER_TOOLS = [
    "get_user_details",
    "get_reservation_details",
    "search_direct_flight",
    "search_onestop_flight",
    "list_all_airports",
    "calculate",
    "think",
]
WRITES = [
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
]
CHANGES = WRITES[1:]  # the writes on an existing reservation

SPEC = {
    "tools": USER_TOOLS + WRITES + ["send_certificate", "transfer_to_human_agents"],
    # 1. Any change to the booking database: state it, then get an explicit yes to the changes stated.
    "confirm": WRITES,
    # 2. One tool call at a time.
    "max_parallel": 1,
    # 3. A handover to a human agent ends the conversation for the agent.
    "terminal": ["transfer_to_human_agents"],
    "before": [
        # 4. A reservation is changed only after its details were read: the same reservation.
        {"first": "get_reservation_details", "then": CHANGES, "same": "reservation_id"},
        # 5. Bookings and certificates only for the user whose profile was read.
        {"first": "get_user_details", "then": ["book_reservation", "send_certificate"], "same": "user_id"},
    ],
    # 6. A reservation is cancelled once.
    "once_per": {"cancel_reservation": "reservation_id"},
    "args": {
        # 7. Payment methods must already be in the user's profile: the id comes from that profile.
        "update_reservation_flights": {
            "payment_id": {"from": ["tool:get_user_details"]},
            "cabin": {"in": ["basic_economy", "economy", "business"]},
        },
        "update_reservation_baggages": {"payment_id": {"from": ["tool:get_user_details"]}},
        # 8. A goodwill certificate is $50 or $100 per passenger, at most five passengers.
        "send_certificate": {"amount": {"min": 50, "max": 500}, "user_id": {"match": r"[a-z]+_[a-z]+_\d+"}},
        "cancel_reservation": {"reservation_id": {"match": r"[A-Z0-9]{6}"}},
    },
    "max_steps": 30,
}
