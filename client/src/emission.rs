//! The result of one emission: the combined verdict the host must honour,
//! the context as enforced (transforms applied), its record, and the
//! response extensions released to act.

use hookwire::{AgentContext, InterceptionRecord, Mode, Verdict};
use serde_json::{Map, Value};

/// What an emission decided (§6). Whether the guarded action may go ahead
/// is [`Emission::proceeds`]; what it must consume is [`Emission::target`].
#[derive(Debug, Clone)]
pub struct Emission {
    pub(crate) context: AgentContext,
    pub(crate) verdict: Verdict,
    pub(crate) record: InterceptionRecord,
    pub(crate) extensions: Vec<(String, Map<String, Value>)>,
}

impl Emission {
    /// Whether the guarded action proceeds: always in `evaluate_only`,
    /// otherwise iff the combined verdict is a permit (§6, §8).
    pub fn proceeds(&self) -> bool {
        self.record.proceeds()
    }

    /// Whether the combined verdict blocks the action in enforce mode.
    pub fn is_blocked(&self) -> bool {
        !self.proceeds()
    }

    /// The combined verdict, in full (the record holds its projection).
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// The payload-free record of this emission (§10.3).
    pub fn record(&self) -> &InterceptionRecord {
        &self.record
    }

    /// The mode the emission ran in.
    pub fn mode(&self) -> Mode {
        self.record.mode
    }

    /// The context as enforced: with every applied transform.
    pub fn context(&self) -> &AgentContext {
        &self.context
    }

    /// The target the guarded action must consume (§4.3): transformed when
    /// the combined verdict was a transform in enforce mode.
    pub fn target(&self) -> Option<&Value> {
        self.context.target()
    }

    /// Consumes the emission, returning the target.
    pub fn into_target(self) -> Option<Value> {
        let mut ctx = self.context;
        ctx.target_mut().map(std::mem::take)
    }

    /// The response extensions (§5.5) that may act, by interceptor name,
    /// in chain order: empty unless the emission ran in `enforce` mode
    /// and its combined verdict lets the action run, and then only those
    /// of bindings whose own verdict permitted (allow or transform). Each
    /// [`Effect`](crate::Effect) they ask for is within the binding's
    /// grant: an answer asking outside it was refused as
    /// `host_error:verdict_invalid`. What was withheld, and
    /// why, is in the record's `extensions.hookwire.effects`. A consumer
    /// that acts on an extension reads it here and nowhere else.
    pub fn response_extensions(&self) -> &[(String, Map<String, Value>)] {
        &self.extensions
    }

    /// The combined verdict's reason, if any.
    pub fn reason(&self) -> Option<&str> {
        self.verdict.reason.as_deref()
    }
}
