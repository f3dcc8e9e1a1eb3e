//! The scenarios against the Node policy (`examples/node/policy.js` on the
//! `@hookwire/sdk` package), over the Multiplex stream it declares, and
//! once more with the stream left out (`--unary-only`) so the host calls
//! the unary RPCs.

crate::per_language!(Node:
    turn::policy_governs_a_full_turn,
    turn::policy_governs_a_full_turn_unary,
    turn::policy_governs_a_full_turn_on_a_unix_socket,
    turn::escalation_is_lifted_by_the_resolver,
    wire::contexts_and_values_round_trip_exactly,
    wire::computed_integers,
    lifecycle::describe_binds_the_declared_points_only,
    lifecycle::failures_fail_closed,
    lifecycle::sigterm_stops_gracefully,
);
