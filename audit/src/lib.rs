//! hookwire-audit: tamper-evident interception records.
//!
//! [`SigningSink`] is a record sink for the hookwire host that appends one
//! JSON line per interception record (the payload-free §10.3 projection,
//! with the host's facts beyond §10.3 beside it), each line carrying its
//! position (`seq`), the SHA-256 of the line before it (`prev`, a chain
//! from [`GENESIS`]) and an Ed25519 signature (`sig`) over exactly the
//! bytes of the line without the `sig` member. Next to the
//! log it keeps a signed checkpoint (`LOG.checkpoint`: how many lines, and
//! the hash of the last) that reveals a cut-off tail.
//!
//! [`verify_log`] checks a log under a [`PublicKey`], optionally against a
//! [`Checkpoint`], and names the first broken line: modified, deleted,
//! inserted, reordered, signed by another key, or missing. The format, the
//! trust model and the sync policies are in `docs/audit.md`.
//!
//! ```no_run
//! # fn demo() -> Result<(), hookwire_audit::AuditError> {
//! use hookwire_audit::{AuditKey, PublicKey, SigningSink, SinkOptions, verify_log};
//!
//! let key = AuditKey::generate_to("audit.key")?; // and audit.key.pub
//! let sink = SigningSink::open("records.jsonl", key, SinkOptions::default())?;
//! // Host::builder(..).record_sink(sink.clone()) ... run the agent ...
//! sink.sync()?;
//! let verified = verify_log("records.jsonl", &PublicKey::load("audit.key.pub")?, None)?;
//! println!("{} records verified", verified.records);
//! # Ok(()) }
//! ```

mod broken;
mod error;
mod key;
mod line;
mod sink;
mod verify;

pub use broken::{Broken, Problem};
pub use error::AuditError;
pub use key::{AuditKey, PublicKey, public_key_path};
pub use line::{GENESIS, Hash, LINE_FORMAT, line_hash};
pub use sink::{Delivery, Fsync, SigningSink, SinkOptions, SinkStatus};
pub use verify::{Checkpoint, Verified, checkpoint_path, verify_log};

#[cfg(test)]
mod tests;
