//! The gateway's own HTTP headers, in a leaf of their own: the
//! configuration names them, and the modules that read a request (who
//! sent it, which conversation it continues, how deep it is nested) use
//! them without depending on the configuration.

/// The header naming the conversation a request belongs to.
pub const SESSION_HEADER: &str = "x-hookwire-session";
/// The header carrying a callback token (recursion protection).
pub const CALLBACK_HEADER: &str = "x-hookwire-callback";
/// The header carrying a request's nesting depth to the upstream (and
/// read from a client, so that chained gateways count hops).
pub const DEPTH_HEADER: &str = "x-hookwire-depth";
/// How long a session id may be.
pub const MAX_SESSION_ID: usize = 128;
