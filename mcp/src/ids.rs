//! Random session ids: what the stdio and HTTP downstreams key their
//! sessions by, and what a parked session's `state` is.

use crate::error::Error;

/// 128 random bits as hex: session ids.
pub(crate) fn random_id() -> Result<String, Error> {
    hookwire_edge::token::random_hex::<16>().map_err(|e| Error::Config(e.to_string()))
}
