//! The streaming variant of the demo (`--stream`): a mock model that
//! streams its answer in chunks, one of which leaks an access key that
//! [`SecretGuard`] (bound in-process at `post_model_call`) denies, and
//! the run that prints each released segment as it is released.

use std::time::Duration;

use futures::StreamExt;
use hookwire_agent::{Agent, Model, Tools, TurnOutcome, tool_fn};
use hookwire_client::{
    BoxFuture, ChunkStream, Error, Host, InputRole, InterceptorBinding, ModelResponse, RecordLog,
    ShutdownReason, StreamEvent, ToolCall,
};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use crate::print::{Print, print_table};
use crate::script::{REQUEST, SESSION_ID, mock_bash, mock_model};

/// Denies a model response that contains something shaped like an AWS
/// access key id (`AKIA` and 16 upper-case letters or digits), so that a
/// leaked credential never reaches the caller.
pub struct SecretGuard;

#[async_trait]
impl Interceptor for SecretGuard {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest("demo-secret-guard", env!("CARGO_PKG_VERSION"));
        m.points = vec![InterceptionPoint::PostModelCall];
        m.description = "denies model output containing an access key".into();
        m
    }

    async fn post_model_call(&self, ctx: &AgentContext) -> Verdict {
        let content = ctx
            .get("response")
            .and_then(|r| r.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if contains_access_key(content) {
            return Verdict::deny("policy:secret_in_output")
                .with_message("the model's answer contains an access key");
        }
        Verdict::allow()
    }
}

/// Whether `text` holds `AKIA` followed by 16 upper-case letters or digits.
pub fn contains_access_key(text: &str) -> bool {
    text.match_indices("AKIA").any(|(at, _)| {
        let rest = &text.as_bytes()[at + 4..];
        rest.len() >= 16
            && rest[..16]
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    })
}

/// [`SecretGuard`] in-process, bound at `post_model_call` only: the extra
/// check of the streaming demo.
pub fn secret_guard() -> InterceptorBinding {
    InterceptorBinding::local("secret-guard", SecretGuard).at([InterceptionPoint::PostModelCall])
}

/// The streaming demo's answer, chunk by chunk: one chunk per tool
/// result, as the conversation tells it, then two that leak an access key
/// (the documented AWS example key, not a real one).
fn answer_chunks(messages: &[Value]) -> Vec<String> {
    let mut chunks = crate::report::tool_report(messages);
    chunks.push("To upload the report, use the key AKIAIOSFODNN7EXAMPLE ".into());
    chunks.push("with the team bucket.".into());
    chunks
}

/// How long the mock model takes for each streamed chunk, so that the
/// segments visibly arrive one by one.
const CHUNK_DELAY: Duration = Duration::from_millis(40);

/// The streaming demo's mock model: first asks for the same two shell
/// commands as [`run_agent`]'s model, then streams its answer in chunks.
struct StreamingModel;

impl StreamingModel {
    /// Whether the conversation already holds tool results (the answer is
    /// due), or the tools are still to be asked for.
    fn answer_due(messages: &[Value]) -> bool {
        messages.iter().any(|m| m["role"] == "tool")
    }

    fn tool_calls() -> Vec<ToolCall> {
        mock_model(0, &[]).tool_calls
    }
}

impl Model for StreamingModel {
    fn id(&self) -> &str {
        "mock-model-1"
    }

    /// The same answer in one piece (the agent prefers the stream).
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        let response = if Self::answer_due(messages) {
            ModelResponse {
                content: json!(answer_chunks(messages).concat()),
                tool_calls: vec![],
                finish_reason: "stop".into(),
            }
        } else {
            mock_model(0, messages)
        };
        Box::pin(async move { Ok(response) })
    }

    fn respond_stream<'a>(&'a self, messages: &'a [Value]) -> Option<ChunkStream<'a>> {
        let events: Vec<StreamEvent> = if Self::answer_due(messages) {
            answer_chunks(messages)
                .into_iter()
                .map(StreamEvent::Chunk)
                .chain([StreamEvent::Finished {
                    finish_reason: "stop".into(),
                    tool_calls: vec![],
                }])
                .collect()
        } else {
            vec![StreamEvent::Finished {
                finish_reason: "tool_calls".into(),
                tool_calls: Self::tool_calls(),
            }]
        };
        Some(
            futures::stream::iter(events)
                .then(|event| async move {
                    tokio::time::sleep(CHUNK_DELAY).await;
                    Ok(event)
                })
                .boxed(),
        )
    }
}

/// The streaming demo's tools: the mock `bash`.
fn streaming_tools() -> Tools {
    Tools::new().with(tool_fn("bash", |args: Value| async move {
        Ok(mock_bash(&args))
    }))
}

/// Runs the streaming demo session `demo-session-1` on `host` (which
/// should bind [`secret_guard`]): one turn through the reference [`Agent`]
/// with incremental output mediation, each released segment printed as it
/// is released, then `agent_shutdown` whatever happened, the records and
/// how the turn ended, which is returned. A failed emission is returned
/// after the records are printed.
pub async fn run_stream_and_report(
    host: &Host,
    records: &RecordLog,
    print: Print,
) -> Result<TurnOutcome, Error> {
    let session = host.session(SESSION_ID)?;
    let id = session.id().to_owned();
    let mut agent = Agent::new(session, StreamingModel, streaming_tools())
        .incremental_output(true)
        .on_release(move |segment| say!(print, "  released: {segment:?}"));
    say!(
        print,
        "streaming the answer, each segment printed as its verdict releases it:"
    );
    let turn = match agent.start().await {
        Ok(_) => agent.run_turn(json!(REQUEST), InputRole::User).await,
        Err(e) => Err(e),
    };
    let reason = match &turn {
        Ok(turn) => turn.shutdown_reason(),
        Err(_) => ShutdownReason::Error,
    };
    let shutdown = agent.shutdown(reason).await;

    say!(print, "");
    print_table(&records.session(&id), print);
    say!(print, "");
    match &turn {
        Ok(turn) => match &turn.outcome {
            TurnOutcome::Completed { output } => say!(
                print,
                "answer to the caller: {}",
                output.get("content").unwrap_or(output)
            ),
            TurnOutcome::Blocked { at, record } => say!(
                print,
                "the turn was blocked at {at} ({}): {} bytes were released before it, the rest was withheld",
                record.verdict.reason.as_deref().unwrap_or("-"),
                turn.released.len()
            ),
            TurnOutcome::Failed { error } => say!(print, "the turn failed: {error}"),
        },
        Err(e) => say!(print, "the session failed: {e}"),
    }
    let turn = turn?;
    shutdown?;
    Ok(turn.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spots_access_keys_only() {
        let chunks = answer_chunks(&[]);
        assert!(contains_access_key(&chunks[0]));
        assert!(contains_access_key("key=AKIAIOSFODNN7EXAMPLE"));
        assert!(!contains_access_key("AKIA is a prefix"));
        assert!(!contains_access_key("akiaiosfodnn7example"));
        let told = crate::report::tool_report(&[
            serde_json::json!({"role": "assistant", "tool_calls": [
                {"id": "c", "name": "bash", "args": {"cmd": "du -sh /tmp/build"}}]}),
            serde_json::json!({"role": "tool", "tool_call_id": "c",
                "content": {"stdout": "1.2G\t/tmp/build"}}),
        ]);
        assert!(!told.iter().any(|c| contains_access_key(c)));
    }
}
