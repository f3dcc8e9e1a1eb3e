//! The model events of agents that report them (Gemini CLI's
//! `BeforeModel` and `AfterModel`). A request is a `pre_model_call` over
//! its messages. Its response arrives in streamed chunks, each governed as
//! it arrives (before the agent shows it): each chunk is a
//! `post_model_call` segment of the request
//! (`Session::post_model_call_segment_with`, checked against it), with
//! `extensions.agent_hooks.chunk` numbering it; the chunk carrying a
//! finish reason, or a denied one, closes the request. A chunk with no
//! permitted request open is governed after a `pre_model_call` emitted for
//! it then (no messages: the request was not seen), both with
//! `extensions.agent_hooks.unpaired`; a deny there withholds the chunk.

use hookwire_client::ModelResponse;
use serde_json::{Value, json};

use super::answer::unapplied;
use super::turn::Turn;
use crate::error::Error;
use crate::event::Outcome;

impl Turn<'_> {
    /// `pre_model_call` over the request's `messages`.
    pub(super) async fn pre_model(&self, model: &str, messages: &Value) -> Result<Outcome, Error> {
        if let Some(blocked) = self.ensure_turn().await? {
            return Ok(blocked);
        }
        if let Some(blocked) = self.quarantined() {
            return Ok(blocked);
        }
        let e = self
            .session
            .pre_model_call_with(model, messages.clone(), self.extra(None))
            .await?;
        let caps = self.agent.capabilities();
        let outcome = self.settle(
            &e,
            "pre_model_call",
            messages,
            caps.rewrite_model_request,
            false,
        );
        self.entry.set_open_model(e.proceeds().then_some(0));
        Ok(outcome)
    }

    /// `post_model_call` over one response chunk's `text`.
    pub(super) async fn post_model(
        &self,
        model: &str,
        text: &str,
        finish_reason: Option<&str>,
    ) -> Result<Outcome, Error> {
        if let Some(blocked) = self.ensure_turn().await? {
            return Ok(blocked);
        }
        if let Some(blocked) = self.quarantined() {
            return Ok(blocked);
        }
        let response = ModelResponse {
            content: Value::String(text.to_owned()),
            tool_calls: Vec::new(),
            finish_reason: finish_reason.unwrap_or_default().to_owned(),
        };
        let original = json!({
            "content": response.content,
            "tool_calls": [],
            "finish_reason": response.finish_reason,
        });
        let last = finish_reason.is_some();
        let (n, marker) = match self.entry.open_model() {
            Some(n) => (n, ("chunk", n.into())),
            None => {
                // No permitted request is open for this chunk: its
                // request, unseen, is governed now, so that the chunk
                // follows its own pre (§3.1 rule 4); a deny withholds it.
                let marker = (
                    "unpaired",
                    "no permitted pre_model_call was open for this response: its pre_model_call is emitted now".into(),
                );
                let pre = self
                    .session
                    .pre_model_call_with(model, json!([]), self.extra(Some(marker.clone())))
                    .await?;
                if !pre.proceeds() {
                    return Ok(self.settle(&pre, "pre_model_call", &json!([]), false, false));
                }
                (0, marker)
            }
        };
        let e = self
            .session
            .post_model_call_segment_with(model, &response, self.extra(Some(marker)), last)
            .await?;
        let finished = last || !e.proceeds();
        self.entry.set_open_model((!finished).then_some(n + 1));
        let caps = self.agent.capabilities();
        Ok(
            match self.settle(
                &e,
                "post_model_call",
                &original,
                caps.rewrite_model_response,
                false,
            ) {
                Outcome::Rewrite(t) => match t.get("content") {
                    Some(Value::String(s)) if t.get("tool_calls") == original.get("tool_calls") => {
                        Outcome::Rewrite(Value::String(s.clone()))
                    }
                    _ => unapplied(self.agent, "post_model_call"),
                },
                other => other,
            },
        )
    }
}
