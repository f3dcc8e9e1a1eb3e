//! One hook call governed in its session: the event's emission at its
//! point, the synthetic startup and turn an out-of-order event needs, and
//! the verdict settled into an [`Outcome`] within what the agent can
//! express. Where the agent cannot stop a step that has already happened
//! (a prompt or a tool result it cannot withhold), a deny is recorded and
//! quarantines the rest of the turn: every later tool and model event of
//! it is blocked until the stop or the user's next prompt.

use hookwire::Decision;
use hookwire_client::{Emission, InputRole, Session, ToolCall, ToolResult};
use serde_json::{Map, Value, json};

use super::answer::{NAMESPACE, denied, reason_of, unapplied};
use super::config::{HooksConfig, Liftable};
use super::table::{DecidedResult, Entry};
use crate::agents::Agent;
use crate::error::Error;
use crate::event::{Event, HookCall, Outcome};

/// One hook call being governed in its session (whose lock is held).
pub(super) struct Turn<'a> {
    /// The agent session's table entry (its turn state).
    pub(super) entry: &'a Entry,
    /// Its hookwire session.
    pub(super) session: &'a Session,
    /// The agent whose hook this is.
    pub(super) agent: Agent,
    /// The decoded hook call.
    pub(super) call: &'a HookCall,
    /// The core's settings.
    pub(super) config: &'a HooksConfig,
}

impl Turn<'_> {
    /// The `extensions.agent_hooks` members of this call's emissions.
    pub(super) fn extra(&self, marker: Option<(&str, Value)>) -> Map<String, Value> {
        let mut ns = Map::new();
        ns.insert("agent".into(), self.agent.name().into());
        ns.insert("event".into(), self.call.event_name.clone().into());
        if let Some(cwd) = &self.call.cwd {
            ns.insert("cwd".into(), cwd.clone().into());
        }
        if let Some((name, cause)) = marker {
            ns.insert(name.into(), cause);
        }
        let mut ext = Map::new();
        ext.insert(NAMESPACE.into(), Value::Object(ns));
        let mut m = Map::new();
        m.insert("extensions".into(), Value::Object(ext));
        m
    }

    /// Governs the call: its emissions, in order, and the outcome.
    pub(super) async fn govern(&self) -> Result<Outcome, Error> {
        let caps = self.agent.capabilities();
        if let Event::SessionStart { .. } = &self.call.event {
            if !self.session.is_started() {
                let e = self.session.start(Vec::<String>::new()).await?;
                if !e.proceeds() {
                    return Ok(Outcome::Stop {
                        reason: reason_of(&e, "agent_startup"),
                    });
                }
            }
            // A resumed, cleared or compacted session keeps its hookwire
            // session: no second startup.
            return Ok(match self.session.startup_denial() {
                Some(r) => Outcome::Stop {
                    reason: format!("hookwire: agent_startup denied: {r}"),
                },
                None => Outcome::Proceed,
            });
        }
        if let Some(blocked) = self.ensure_started().await? {
            return Ok(blocked);
        }
        match &self.call.event {
            Event::Prompt { prompt } => {
                // A prompt while a turn is open: the earlier turn ended
                // without a stop event (interrupted).
                self.session.end_turn();
                self.entry.set_quarantine(None);
                let content = Value::String(prompt.clone());
                let e = self
                    .session
                    .input_with(content.clone(), InputRole::User, self.extra(None))
                    .await?;
                // The input point's target is `{content, role}`.
                let original = json!({"content": content, "role": InputRole::User});
                let outcome = match self.settle(&e, "input", &original, caps.rewrite_prompt, false)
                {
                    Outcome::Rewrite(t) => match t.get("content") {
                        Some(Value::String(p)) => Outcome::Rewrite(Value::String(p.clone())),
                        _ => unapplied(self.agent, "input"),
                    },
                    other => other,
                };
                Ok(self.quarantine_unless(caps.block_prompt, outcome))
            }
            Event::PreTool { id, name, input } => {
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                if let Some(blocked) = self.quarantined() {
                    return Ok(blocked);
                }
                let call = ToolCall::new(id.clone(), name.clone(), input.clone());
                let e = self
                    .session
                    .pre_tool_call_with(&call, self.extra(None))
                    .await?;
                Ok(self.settle(
                    &e,
                    "pre_tool_call",
                    input,
                    caps.rewrite_tool_input,
                    caps.ask,
                ))
            }
            Event::PostTool {
                id,
                name,
                input,
                response,
                is_error,
            } => {
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                let result = ToolResult {
                    value: response.clone(),
                    is_error: *is_error,
                };
                let (call, marker) = match self.session.open_tool_call(id) {
                    Some(call) => (call, None),
                    None => match self.unpaired_pre(id, name, input).await? {
                        Ok(call) => (call, Some(unpaired_marker())),
                        Err(withheld) => return Ok(withheld),
                    },
                };
                let e = self
                    .session
                    .post_tool_call_with(&call, &result, self.extra(marker))
                    .await?;
                let outcome = self.settle(
                    &e,
                    "post_tool_call",
                    response,
                    caps.rewrite_tool_output,
                    false,
                );
                self.entry.decided(id, decided_result(&e, &outcome));
                Ok(self.quarantine_unless(caps.block_post_tool, outcome))
            }
            Event::PreModel { model, messages } => self.pre_model(model, messages).await,
            Event::PostModel {
                model,
                text,
                finish_reason,
            } => self.post_model(model, text, finish_reason.as_deref()).await,
            Event::Stop { message } => {
                // The turn ends here: its quarantine with it.
                self.entry.set_quarantine(None);
                self.entry.set_open_model(None);
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                let d = self
                    .session
                    .output_with(message.clone(), self.extra(None))
                    .await?;
                let blocked = denied("output", d.verdict());
                let transformed = d.verdict().decision == Decision::Transform;
                Ok(match d.release() {
                    Ok(released) if released == *message => Outcome::Proceed,
                    // The answer has been written already: the stop hook
                    // cannot rewrite it.
                    Ok(_) => unapplied(self.agent, "output"),
                    Err(_) if transformed => unapplied(self.agent, "output"),
                    Err(_) => Outcome::Block { reason: blocked },
                })
            }
            Event::SessionStart { .. } | Event::SessionEnd => Ok(Outcome::Proceed),
        }
    }

    /// The `pre_tool_call` a tool result with no permitted pre open is
    /// governed after, as if the call were proposed now
    /// (`extensions.agent_hooks.unpaired`), so that its `post_tool_call`
    /// follows its own pre (§3.1 rule 5). `Err` is the result withheld: the
    /// pre was denied (a deny the agent cannot enforce quarantines the
    /// turn), or permitted only with other arguments than the tool ran
    /// with, whose pair is then closed with no result.
    async fn unpaired_pre(
        &self,
        id: &str,
        name: &str,
        input: &Value,
    ) -> Result<Result<ToolCall, Outcome>, Error> {
        let call = ToolCall::new(id.to_owned(), name.to_owned(), input.clone());
        let pre = self
            .session
            .pre_tool_call_with(&call, self.extra(Some(unpaired_marker())))
            .await?;
        let block_post = self.agent.capabilities().block_post_tool;
        if !pre.proceeds() {
            let outcome = self.settle(&pre, "pre_tool_call", input, false, false);
            self.entry.decided(id, decided_result(&pre, &outcome));
            return Ok(Err(self.quarantine_unless(block_post, outcome)));
        }
        if pre.target().is_some_and(|args| args != input) {
            self.session
                .post_tool_call_unavailable(
                    &call,
                    "the tool ran with other arguments than permitted",
                )
                .await?;
            let outcome = Outcome::Block {
                reason: "hookwire: pre_tool_call (unpaired) permitted other arguments than the tool ran with".into(),
            };
            self.entry.decided(
                id,
                DecidedResult::Withheld {
                    reason: "hookwire:tool_call_arguments_changed".into(),
                    message: None,
                },
            );
            return Ok(Err(self.quarantine_unless(block_post, outcome)));
        }
        Ok(Ok(call))
    }

    /// Emits the synthetic `agent_startup` of a session whose first event
    /// is not its start; `Some` block when the session cannot take events.
    pub(super) async fn ensure_started(&self) -> Result<Option<Outcome>, Error> {
        if !self.session.is_started() {
            let e = self.session.start(Vec::<String>::new()).await?;
            if !e.proceeds() {
                return Ok(Some(Outcome::Block {
                    reason: format!(
                        "hookwire: agent_startup (synthetic, {} came first) denied: {}",
                        self.call.event_name,
                        reason_of(&e, "agent_startup")
                    ),
                }));
            }
        }
        if let Some(r) = self.session.startup_denial() {
            return Ok(Some(Outcome::Block {
                reason: format!("hookwire: agent_startup denied: {r}"),
            }));
        }
        Ok(None)
    }

    /// Opens a turn with a synthetic `input` when none is open; `Some`
    /// block when that input is denied.
    pub(super) async fn ensure_turn(&self) -> Result<Option<Outcome>, Error> {
        if self.session.is_turn_open() {
            return Ok(None);
        }
        let cause = format!("{} arrived with no open turn", self.call.event_name);
        let content = Value::String(format!("hookwire: {cause}"));
        let e = self
            .session
            .input_with(
                content,
                InputRole::External,
                self.extra(Some(("synthetic", cause.into()))),
            )
            .await?;
        if e.proceeds() {
            return Ok(None);
        }
        Ok(Some(Outcome::Block {
            reason: format!(
                "hookwire: the synthetic input opening a turn for {} was denied: {}",
                self.call.event_name,
                reason_of(&e, "input")
            ),
        }))
    }

    /// `Some` block when an earlier deny the agent could not enforce
    /// quarantined this turn.
    pub(super) fn quarantined(&self) -> Option<Outcome> {
        self.entry.quarantine().map(|cause| Outcome::Block {
            reason: format!(
                "hookwire: {} blocked: this turn is quarantined since {cause}",
                self.call.event_name
            ),
        })
    }

    /// `outcome`, unchanged; when the agent cannot enforce it here
    /// (`enforceable` false) and it is not a permit, the rest of the turn
    /// is quarantined in its name.
    fn quarantine_unless(&self, enforceable: bool, outcome: Outcome) -> Outcome {
        if !enforceable && let Outcome::Block { reason } | Outcome::Ask { reason } = &outcome {
            tracing::warn!(agent = self.agent.name(), event = %self.call.event_name, "a deny the agent cannot enforce: the turn is quarantined");
            self.entry
                .set_quarantine(Some(format!("{}: {reason}", self.call.event_name)));
        }
        outcome
    }

    /// The outcome of a permit or deny at `point` whose target was
    /// `original`.
    pub(super) fn settle(
        &self,
        e: &Emission,
        point: &str,
        original: &Value,
        can_rewrite: bool,
        can_ask: bool,
    ) -> Outcome {
        if e.proceeds() {
            return match e.target() {
                Some(t) if t != original => {
                    if can_rewrite {
                        Outcome::Rewrite(t.clone())
                    } else {
                        unapplied(self.agent, point)
                    }
                }
                _ => Outcome::Proceed,
            };
        }
        let liftable = e.verdict().is_liftable();
        let reason = denied(point, e.verdict());
        if liftable && can_ask && self.config.liftable == Liftable::Ask {
            Outcome::Ask { reason }
        } else {
            Outcome::Block { reason }
        }
    }
}

/// What the gateway of the same process applies to a tool result whose
/// `post_tool_call` emission `e` settled as `outcome`: released only when
/// the agent was told to proceed with it unchanged; a deny withheld under
/// its reason; a rewrite the agent was not told to apply withheld too
/// (the gateway does not apply a hook's rewrite).
/// The `extensions.agent_hooks.unpaired` member of a tool result governed
/// with no permitted pre open, on the pre emitted for it and on its post.
fn unpaired_marker() -> (&'static str, Value) {
    (
        "unpaired",
        "no permitted pre_tool_call was open for this tool use: its pre_tool_call is emitted now"
            .into(),
    )
}

fn decided_result(e: &Emission, outcome: &Outcome) -> DecidedResult {
    match outcome {
        Outcome::Proceed => DecidedResult::Released,
        _ if !e.proceeds() => DecidedResult::Withheld {
            reason: e.reason().unwrap_or("denied").to_owned(),
            message: hookwire::notice_message(e.verdict().message.as_deref()),
        },
        _ => DecidedResult::Withheld {
            reason: "hookwire:tool_result_rewritten".to_owned(),
            message: None,
        },
    }
}
