//! What one governed request carries through its emissions: the shared
//! state, its conversation, the model points' `request_id`, the callback
//! extension, and the gateway's record of the request.

use hookwire::InterceptionPoint;
use hookwire_client::LabelLedger;
use serde_json::{Map, Value};

use super::conversation::Conversation;
use super::state::Inner;
use crate::applied::Applied;

/// What one governed request carries through its emissions.
pub(crate) struct Governed<'a> {
    /// The shared state.
    pub(crate) inner: &'a Inner,
    /// The conversation.
    pub(crate) conv: &'a Conversation,
    /// Its key.
    pub(crate) key: String,
    /// `request_id` of the model points.
    pub(crate) request_id: String,
    /// The `extensions` member of the request's contexts (the callback).
    pub(crate) extensions: Option<Value>,
    /// The gateway's record of the request.
    pub(crate) applied: Applied,
}

impl Governed<'_> {
    /// The members the request adds to an emission at `point`: its
    /// `request_id` at the model points, the callback extension, and the
    /// labels persisted so far at the points that derive from them
    /// (`pre_model_call`, `pre_tool_call`, `output`; §5.4).
    pub(crate) fn extra(
        &self,
        labels: &LabelLedger,
        point: InterceptionPoint,
    ) -> Map<String, Value> {
        use InterceptionPoint as P;
        let mut m = Map::new();
        if matches!(point, P::PreModelCall | P::PostModelCall) {
            m.insert("request_id".into(), Value::from(self.request_id.clone()));
        }
        if let Some(ext) = &self.extensions {
            m.insert("extensions".into(), ext.clone());
        }
        if matches!(point, P::PreModelCall | P::PreToolCall | P::Output) {
            m = labels.resurface(m);
        }
        m
    }
}
