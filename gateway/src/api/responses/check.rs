//! Small leaf helpers the request, tool and stream checks share: the
//! bad-request error, the bound on an id or a type the gateway keeps,
//! and clipping a client- or upstream-chosen string before it goes into
//! a message.

use crate::error::Error;

/// How long an id the gateway keeps (`previous_response_id`, `call_id`)
/// and an item or part `type` it names in the context may be.
pub(crate) const MAX_ID: usize = 256;

/// A request the gateway refuses as malformed, with what is wrong.
pub(super) fn bad(message: impl Into<String>) -> Error {
    Error::BadRequest(message.into())
}

/// At most [`MAX_ID`] bytes of a name the client chose, for a message.
pub(super) fn clip(s: &str) -> &str {
    clip_to(s, MAX_ID)
}

/// At most `max` bytes of `s`, cut on a character boundary, so a string
/// someone else chose cannot make a message unbounded.
pub(super) fn clip_to(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
