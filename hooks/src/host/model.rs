//! The model events of agents that report them (Gemini CLI's
//! `BeforeModel` and `AfterModel`). A request is a `pre_model_call` over
//! its messages. Its response arrives in streamed chunks, each governed as
//! it arrives (before the agent shows it): the first chunk is the
//! `post_model_call` paired with the request, each later one a further
//! `post_model_call` of the same request emitted on the raw path with
//! `extensions.agent_hooks.chunk` numbering it, and a chunk with no
//! permitted request open is emitted with `extensions.agent_hooks.unpaired`.
//! The chunk carrying a finish reason closes the request.

use hookwire::InterceptionPoint;
use hookwire_client::ModelResponse;
use serde_json::{Value, json};

use super::turn::Turn;
use super::unapplied;
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
        let open = self.entry.open_model();
        let e = match open {
            Some(0) => {
                self.session
                    .post_model_call_with(model, &response, self.extra(Some(("chunk", 0.into()))))
                    .await?
            }
            _ => {
                let marker = match open {
                    Some(n) => ("chunk", n.into()),
                    None => (
                        "unpaired",
                        "no permitted pre_model_call is open for this response".into(),
                    ),
                };
                let mut members = self.extra(Some(marker));
                members.insert("model".into(), json!({"id": model}));
                members.insert("response".into(), original.clone());
                self.session
                    .emit(InterceptionPoint::PostModelCall, members)
                    .await?
            }
        };
        let finished = finish_reason.is_some() || !e.proceeds();
        self.entry
            .set_open_model(if finished { None } else { open.map(|n| n + 1) });
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
