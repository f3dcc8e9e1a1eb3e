//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): each
//! adapter's request decoding and stream-event assembly over arbitrary
//! bytes. Not an API: each entry point asserts its properties (what the
//! adapters' private types must satisfy), and the fuzz crate's targets
//! call them.

mod chat;
mod messages;
mod responses;

pub use chat::{chat_request, chat_stream};
pub use messages::{messages_request, messages_stream};
pub use responses::{responses_request, responses_stream};

use crate::api::Finish;

/// The neutral finish of an answer settled as the upstream gave it (its
/// calls all permitted): what the round-trip properties settle with.
fn finish_as_answered(reason: &str) -> Finish {
    match reason {
        "stop" => Finish::Stop,
        "tool_calls" => Finish::ToolCalls,
        "length" => Finish::Length,
        other => Finish::Upstream(other.to_owned()),
    }
}
