//! The `output` gate (§12.1a): what [`Session::output`](crate::Session::output)
//! returns. Its content is reachable only through
//! [`OutputDecision::release`], which checks the verdict first, so code
//! using a session directly cannot hand the caller an answer the `output`
//! verdict denied, nor the content as it was before a transform.

use hookwire::{InterceptionRecord, Mode, Verdict};
use serde_json::Value;

use crate::emission::Emission;

/// The verdict at `output` over a buffered answer, holding the verdicted
/// content until [`OutputDecision::release`] is asked for it.
#[derive(Debug, Clone)]
pub struct OutputDecision {
    emission: Emission,
}

/// An answer the `output` verdict did not permit: only its record and
/// verdict remain; the content is gone with it.
#[derive(Debug, Clone)]
pub struct Withheld(Box<(Verdict, InterceptionRecord)>);

impl OutputDecision {
    pub(crate) fn new(emission: Emission) -> Self {
        Self { emission }
    }

    /// Whether the answer may be released (§6; always in `evaluate_only`).
    pub fn proceeds(&self) -> bool {
        self.emission.proceeds()
    }

    /// The combined verdict.
    pub fn verdict(&self) -> &Verdict {
        self.emission.verdict()
    }

    /// The combined verdict's reason, if any.
    pub fn reason(&self) -> Option<&str> {
        self.emission.reason()
    }

    /// The payload-free record of the emission.
    pub fn record(&self) -> &InterceptionRecord {
        self.emission.record()
    }

    /// The mode the emission ran in.
    pub fn mode(&self) -> Mode {
        self.emission.mode()
    }

    /// The verdicted content (transformed when the verdict was a
    /// transform), when the verdict permits its release; otherwise the
    /// record of the denial, and no content.
    pub fn release(self) -> Result<Value, Withheld> {
        if !self.emission.proceeds() {
            return Err(Withheld(Box::new((
                self.emission.verdict,
                self.emission.record,
            ))));
        }
        Ok(match self.emission.into_target() {
            Some(Value::Object(mut o)) if o.contains_key("content") => {
                o.remove("content").unwrap_or_default()
            }
            Some(other) => other,
            None => Value::Null,
        })
    }
}

impl Withheld {
    /// The denying verdict.
    pub fn verdict(&self) -> &Verdict {
        &self.0.0
    }

    /// The record of the denying emission.
    pub fn record(&self) -> &InterceptionRecord {
        &self.0.1
    }

    /// Consumes it, returning the record.
    pub fn into_record(self) -> InterceptionRecord {
        self.0.1
    }
}
