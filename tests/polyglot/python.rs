//! The scenarios against the Python policy (`examples/python/policy.py`
//! on the `hookwire` package), which declares the Multiplex stream.

crate::per_language!(Python:
    turn::policy_governs_a_full_turn,
    turn::policy_governs_a_full_turn_on_a_unix_socket,
    turn::escalation_is_lifted_by_the_resolver,
    wire::contexts_and_values_round_trip_exactly,
    wire::computed_integers,
    lifecycle::describe_binds_the_declared_points_only,
    lifecycle::failures_fail_closed,
    lifecycle::sigterm_stops_gracefully,
);
