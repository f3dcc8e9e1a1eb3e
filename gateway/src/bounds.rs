//! The bounds every wire API's adapter puts on a request's conversation
//! and an answer's tool calls, shared so that each API refuses the same
//! size and the core can index a history below it.

/// How many messages (Chat Completions, Messages) or input items
/// (Responses) one request may carry.
pub const MAX_MESSAGES: usize = 4096;

/// How many tool calls one response may propose, and one assistant
/// message replay, whichever API carries them.
pub const MAX_TOOL_CALLS: usize = 128;
