//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): each
//! adapter's request decoding and stream-event assembly over arbitrary
//! bytes. Not an API: each entry point asserts its properties (what the
//! adapters' private types must satisfy), and the fuzz crate's targets
//! call them. One file per adapter; what they assert alike is in
//! `round_trip`.

mod chat;
mod messages;
mod responses;
mod round_trip;

pub use chat::{chat_request, chat_stream};
pub use messages::{messages_request, messages_stream};
pub use responses::{responses_request, responses_stream};
