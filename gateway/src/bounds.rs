//! The bound every wire API's adapter puts on a request's conversation,
//! shared so that each API refuses the same size and the core can index
//! a history below it.

/// How many messages (Chat Completions, Messages) or input items
/// (Responses) one request may carry.
pub const MAX_MESSAGES: usize = 4096;
