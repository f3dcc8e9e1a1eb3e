//! Streamed model output (§12.1, §12.1a).
//!
//! A model that streams hands the host a [`ChunkStream`] of
//! [`StreamEvent`]s. There are two conformant ways to take it:
//!
//! - **Buffered** (the default, `buffered_output: true`): [`assemble`] the
//!   whole response, then emit one ordinary `post_model_call`. A stream that
//!   dies before its finish reason is a [`Assembly::Truncated`] response,
//!   which the host must not settle clean: the reference agent emits it
//!   with `finish_reason: "stream_incomplete"` and its own deny
//!   `host_error:streaming_unsupported`, and incorporates none of it.
//! - **Incremental mediation** (§12.1's exception, `buffered_output:
//!   false`): [`Session::mediate_stream`] turns the chunk stream into an
//!   [`IncrementalOutput`] that yields only [`Released`] text. Each chunk
//!   boundary closes a segment, and the host emits one `post_model_call`
//!   over the **assembled prefix** through that segment
//!   (`finish_reason: "incremental"`, the model's own finish reason on the
//!   last one). The accounting discipline:
//!   1. a segment's text is released only once a verdict covering it
//!      permits: the exposure bound is **none**, release is
//!      watermark-gated (nothing reaches the caller ahead of its verdict);
//!   2. a deny terminates the stream and withholds everything not yet
//!      released ([`StreamEnd::Denied`]); no further chunk is consumed;
//!   3. a stream that ends without its finish reason (it broke, or the
//!      model errored mid-stream) leaves residue no emission evaluated: it
//!      is emitted once more over the whole delivered assembly with
//!      `finish_reason: "stream_incomplete"` and denied by the host itself,
//!      `host_error:streaming_unsupported`, never dispatched and never
//!      released ([`StreamEnd::Incomplete`]);
//!   4. durable incorporation follows release: only a
//!      [`StreamEnd::Completed`] response may be incorporated (the
//!      reference agent persists nothing of a terminated stream).
//!
//! [`Released`] can only be made here, after a permitting verdict: code
//! that forwards `Released` values to its caller cannot forward text the
//! chain has not covered. A transform that rewrites text already released
//! cannot be honoured (it cannot be retracted): the stream terminates
//! there, withholding the rest ([`StreamEnd::Rewritten`]).
//!
//! ```no_run
//! # async fn demo(session: &hookwire_client::Session,
//! #     chunks: hookwire_client::ChunkStream<'_>) -> Result<(), hookwire_client::Error> {
//! use hookwire_client::StreamEnd;
//! // Within a turn (after a permitting input), after a permitted
//! // pre_model_call:
//! let mut stream = session.mediate_stream("model-1", chunks);
//! while let Some(released) = stream.next().await? {
//!     print!("{released}"); // covered by a permitting verdict
//! }
//! match stream.into_end() {
//!     Some(StreamEnd::Completed { response, .. }) => { /* incorporate it */ let _ = response; }
//!     Some(end) => eprintln!("\n[withheld: {:?}]", end.record().verdict.reason),
//!     None => {}
//! }
//! # Ok(()) }
//! ```

use std::fmt;

use futures::StreamExt;
use futures::stream::BoxStream;
use hookwire::{HostError, InterceptionRecord};
use serde_json::{Map, Value, json};

use crate::emission::Emission;
use crate::error::Error;
use crate::interceptor::BoxError;
use crate::payload::{ModelResponse, ToolCall};
use crate::session::{PostModel, Session, post_model_members};

/// The `finish_reason` of a non-final segment's emission.
pub const INCREMENTAL: &str = "incremental";
/// The `finish_reason` of a response whose stream ended early (§12.1).
pub const STREAM_INCOMPLETE: &str = "stream_incomplete";

/// One event of a streamed model response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The next piece of text.
    Chunk(String),
    /// The model finished: its finish reason and the tool calls it
    /// requested. A stream that ends without this event is truncated.
    Finished {
        /// e.g. `stop` or `tool_calls`.
        finish_reason: String,
        /// The requested tool calls, empty when none.
        tool_calls: Vec<ToolCall>,
    },
}

/// A streamed model response, as a model hands it over. An `Err` item
/// breaks the stream (the rest is truncated).
pub type ChunkStream<'a> = BoxStream<'a, Result<StreamEvent, BoxError>>;

/// A stream read to its end by [`assemble`].
#[derive(Debug, Clone, PartialEq)]
pub enum Assembly {
    /// The whole response, with the model's finish reason.
    Complete(ModelResponse),
    /// The stream ended before its finish reason: what was delivered.
    Truncated(String),
}

/// Reads a stream to its end for a buffering host (§12.1).
pub async fn assemble(mut chunks: ChunkStream<'_>) -> Assembly {
    let mut content = String::new();
    while let Some(event) = chunks.next().await {
        match event {
            Ok(StreamEvent::Chunk(c)) => content.push_str(&c),
            Ok(StreamEvent::Finished {
                finish_reason,
                tool_calls,
            }) => {
                return Assembly::Complete(ModelResponse {
                    content: Value::String(content),
                    tool_calls,
                    finish_reason,
                });
            }
            Err(_) => break,
        }
    }
    Assembly::Truncated(content)
}

/// Text a verdict covering it permitted: the only thing an
/// [`IncrementalOutput`] yields, and the only thing to release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released(String);

impl Released {
    /// The released text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The released text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Released {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Released {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// How an incrementally mediated stream ended.
#[derive(Debug, Clone)]
pub enum StreamEnd {
    /// Every segment was permitted: the verdicted response (the whole
    /// assembly, the model's finish reason and tool calls), which may be
    /// incorporated.
    Completed {
        /// The response as the last verdict left it.
        response: ModelResponse,
        /// The record of the last emission.
        record: Box<InterceptionRecord>,
    },
    /// A segment was denied: the stream stopped there and everything not
    /// yet released is withheld (§12.1 exception item 2).
    Denied {
        /// The record of the denying emission.
        record: Box<InterceptionRecord>,
    },
    /// The stream ended without its finish reason: the residue was
    /// self-denied `host_error:streaming_unsupported` and withheld (item 3).
    Incomplete {
        /// The record of the host's own deny.
        record: Box<InterceptionRecord>,
    },
    /// A transform rewrote text already released, which cannot be
    /// retracted: the stream stopped there, the rest withheld.
    Rewritten {
        /// The record of the transforming emission.
        record: Box<InterceptionRecord>,
    },
}

impl StreamEnd {
    /// The record of the emission that ended the stream.
    pub fn record(&self) -> &InterceptionRecord {
        match self {
            Self::Completed { record, .. }
            | Self::Denied { record }
            | Self::Incomplete { record }
            | Self::Rewritten { record } => record,
        }
    }

    /// Whether the response may be incorporated (§12.1 exception item 4).
    pub fn is_completed(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }
}

/// A streamed model response under incremental mediation; see the module
/// docs. Made by [`Session::mediate_stream`].
pub struct IncrementalOutput<'s> {
    session: &'s Session,
    model_id: String,
    members: Map<String, Value>,
    chunks: ChunkStream<'s>,
    /// The assembled prefix, as the verdicts left it.
    assembled: String,
    /// How much of `assembled` has been released (a byte offset).
    watermark: usize,
    /// The chunk received but not yet evaluated.
    pending: Option<String>,
    end: Option<StreamEnd>,
}

impl Session {
    /// `post_model_call` for a stream a buffering host read to its end
    /// with [`assemble`] (§12.1): a complete response is emitted as
    /// [`Session::post_model_call`] does; a stream that broke before its
    /// finish reason is emitted `stream_incomplete` and denied by the host
    /// itself (`host_error:streaming_unsupported`), never dispatched, so
    /// nothing of it is incorporated.
    pub async fn post_model_call_assembled(
        &self,
        model_id: &str,
        assembly: Assembly,
    ) -> Result<Emission, Error> {
        let content = match assembly {
            Assembly::Complete(response) => {
                return self.post_model_call(model_id, &response).await;
            }
            Assembly::Truncated(content) => content,
        };
        let response = json!({
            "content": content,
            "tool_calls": [],
            "finish_reason": STREAM_INCOMPLETE,
        });
        let members = post_model_members(model_id, response);
        self.self_denied(
            hookwire::InterceptionPoint::PostModelCall,
            members,
            HostError::StreamingUnsupported,
        )
        .await
    }

    /// Mediates a streamed model response incrementally (§12.1's
    /// exception): call after a permitted `pre_model_call`, then pull
    /// [`IncrementalOutput::next`] for the text that may be released. A
    /// host that streams this way declares `buffered_output: false` with
    /// the exposure bound "none — release is watermark-gated".
    pub fn mediate_stream<'s>(
        &'s self,
        model_id: impl Into<String>,
        chunks: ChunkStream<'s>,
    ) -> IncrementalOutput<'s> {
        IncrementalOutput {
            session: self,
            model_id: model_id.into(),
            members: Map::new(),
            chunks,
            assembled: String::new(),
            watermark: 0,
            pending: None,
            end: None,
        }
    }
}

impl<'s> IncrementalOutput<'s> {
    /// Extra members every segment's context carries (`request_id`, which
    /// pairs the segments with their `pre_model_call`, or `extensions`).
    pub fn with_members(mut self, members: Map<String, Value>) -> Self {
        self.members = members;
        self
    }

    /// The next text a covering verdict permitted, `None` once the stream
    /// ended ([`IncrementalOutput::end`] tells how). Errors are the
    /// session's (out of order, closed): the stream stops with them.
    pub async fn next(&mut self) -> Result<Option<Released>, Error> {
        while self.end.is_none() {
            let event = self.chunks.next().await;
            let released = match event {
                Some(Ok(StreamEvent::Chunk(chunk))) => {
                    if chunk.is_empty() {
                        continue;
                    }
                    match self.pending.replace(chunk) {
                        // The next chunk arrived: the held one is not the last.
                        Some(segment) => self.segment(segment, None).await?,
                        None => continue,
                    }
                }
                Some(Ok(StreamEvent::Finished {
                    finish_reason,
                    tool_calls,
                })) => {
                    let segment = self.pending.take().unwrap_or_default();
                    self.segment(segment, Some((finish_reason, tool_calls)))
                        .await?
                }
                Some(Err(_)) | None => {
                    self.truncated().await?;
                    None
                }
            };
            if let Some(text) = released.filter(|t| !t.is_empty()) {
                return Ok(Some(Released(text)));
            }
        }
        Ok(None)
    }

    /// Everything released so far, in order.
    pub fn released(&self) -> &str {
        &self.assembled[..self.watermark]
    }

    /// How the stream ended; `None` while it runs.
    pub fn end(&self) -> Option<&StreamEnd> {
        self.end.as_ref()
    }

    /// Consumes it, returning how the stream ended (`None` if it has not).
    pub fn into_end(self) -> Option<StreamEnd> {
        self.end
    }

    /// Evaluates the prefix through `segment` (`last`: the model's finish
    /// reason and tool calls) and returns what it releases.
    async fn segment(
        &mut self,
        segment: String,
        last: Option<(String, Vec<ToolCall>)>,
    ) -> Result<Option<String>, Error> {
        self.assembled.push_str(&segment);
        let (finish_reason, tool_calls, pairing) = match &last {
            Some((reason, calls)) => (reason.as_str(), calls.clone(), PostModel::Closing),
            None => (INCREMENTAL, Vec::new(), PostModel::Segment),
        };
        let response = ModelResponse {
            content: Value::String(self.assembled.clone()),
            tool_calls,
            finish_reason: finish_reason.to_owned(),
        };
        let e = self
            .session
            .stream_segment(self.members_with(response.to_json()), pairing)
            .await?;
        if !e.proceeds() {
            self.close_pair(pairing);
            self.end = Some(StreamEnd::Denied {
                record: Box::new(e.record().clone()),
            });
            return Ok(None);
        }
        let Some(verdicted) = self.verdicted(&e) else {
            self.close_pair(pairing);
            self.end = Some(StreamEnd::Rewritten {
                record: Box::new(e.record().clone()),
            });
            return Ok(None);
        };
        self.assembled = verdicted
            .content
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        let released = self.assembled[self.watermark..].to_owned();
        self.watermark = self.assembled.len();
        if last.is_some() {
            self.end = Some(StreamEnd::Completed {
                response: verdicted,
                record: Box::new(e.record().clone()),
            });
        }
        Ok(Some(released))
    }

    /// The permitted response, when it keeps the released text as its
    /// prefix (a transform cannot retract what is out).
    fn verdicted(&self, e: &Emission) -> Option<ModelResponse> {
        let response = e.target().and_then(ModelResponse::from_target)?;
        let content = response.content.as_str()?;
        content
            .starts_with(&self.assembled[..self.watermark])
            .then_some(response)
    }

    /// The stream ended without its finish reason: the whole delivered
    /// assembly, self-denied (§12.1 exception item 3).
    async fn truncated(&mut self) -> Result<(), Error> {
        if let Some(rest) = self.pending.take() {
            self.assembled.push_str(&rest);
        }
        let response = json!({
            "content": self.assembled,
            "tool_calls": [],
            "finish_reason": STREAM_INCOMPLETE,
        });
        let e = self
            .session
            .self_denied(
                hookwire::InterceptionPoint::PostModelCall,
                self.members_with(response),
                HostError::StreamingUnsupported,
            )
            .await?;
        self.end = Some(StreamEnd::Incomplete {
            record: Box::new(e.record().clone()),
        });
        Ok(())
    }

    fn close_pair(&self, pairing: PostModel) {
        if pairing == PostModel::Segment {
            self.session.close_model_pair(&self.members);
        }
    }

    fn members_with(&self, response: Value) -> Map<String, Value> {
        let mut m = post_model_members(&self.model_id, response);
        for (k, v) in &self.members {
            m.insert(k.clone(), v.clone());
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use hookwire::{AgentContext, InterceptionPoint, Verdict};
    use serde_json::json;

    use super::*;
    use crate::{BoxError, Host, InputRole, RecordLog, interceptor_fn};

    /// Denies any model response whose content mentions `SECRET`.
    fn host(records: &RecordLog) -> Host {
        let policy = interceptor_fn(|ctx: AgentContext| {
            let secret = ctx.point() == InterceptionPoint::PostModelCall
                && ctx
                    .get("response")
                    .and_then(|r| r.get("content"))
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains("SECRET"));
            async move {
                Ok::<_, BoxError>(if secret {
                    Verdict::deny("test:secret")
                } else {
                    Verdict::allow()
                })
            }
        });
        Host::builder("agent", "hookwire")
            .interceptor("policy", policy)
            .record_sink(records.clone())
            .build()
            .unwrap()
    }

    fn chunks(parts: &[&str], finished: bool) -> ChunkStream<'static> {
        let mut events: Vec<Result<StreamEvent, BoxError>> = parts
            .iter()
            .map(|p| Ok(StreamEvent::Chunk((*p).to_owned())))
            .collect();
        if finished {
            events.push(Ok(StreamEvent::Finished {
                finish_reason: "stop".into(),
                tool_calls: Vec::new(),
            }));
        } else {
            events.push(Err("broken".into()));
        }
        futures::stream::iter(events).boxed()
    }

    async fn drain(out: &mut IncrementalOutput<'_>) -> Vec<String> {
        let mut released = Vec::new();
        while let Some(r) = out.next().await.unwrap() {
            released.push(r.into_string());
        }
        released
    }

    #[tokio::test]
    async fn permitted_segments_are_released_one_by_one_under_their_verdicts() {
        let records = RecordLog::new();
        let session = host(&records).session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        session.pre_model_call("m", json!([])).await.unwrap();
        let mut out = session.mediate_stream("m", chunks(&["the quick ", "brown fox"], true));
        assert_eq!(drain(&mut out).await, ["the quick ", "brown fox"]);
        let Some(StreamEnd::Completed { response, .. }) = out.into_end() else {
            panic!("completed");
        };
        assert_eq!(response.content, json!("the quick brown fox"));
        let posts: Vec<_> = records
            .records()
            .into_iter()
            .filter(|r| r.interception_point == InterceptionPoint::PostModelCall)
            .collect();
        assert_eq!(posts.len(), 2, "one emission per segment");
        // The stream closed the pair: another post is out of order.
        let again = session.mediate_stream("m", chunks(&["x"], true));
        let mut again = again;
        assert!(matches!(
            again.next().await,
            Err(crate::Error::OutOfOrder { .. })
        ));
    }

    #[tokio::test]
    async fn a_deny_withholds_the_denied_segment_and_everything_behind_it() {
        let records = RecordLog::new();
        let session = host(&records).session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        session.pre_model_call("m", json!([])).await.unwrap();
        let stream = chunks(&["public, ", "SECRET", " harmless tail"], true);
        let mut out = session.mediate_stream("m", stream);
        assert_eq!(drain(&mut out).await, ["public, "]);
        assert_eq!(out.released(), "public, ");
        let end = out.into_end().unwrap();
        assert!(matches!(end, StreamEnd::Denied { .. }));
        assert_eq!(end.record().verdict.reason.as_deref(), Some("test:secret"));
    }

    #[tokio::test]
    async fn residue_of_a_broken_stream_is_self_denied_streaming_unsupported() {
        let records = RecordLog::new();
        let session = host(&records).session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        session.pre_model_call("m", json!([])).await.unwrap();
        let mut out = session.mediate_stream("m", chunks(&["clean, ", "partial"], false));
        assert_eq!(drain(&mut out).await, ["clean, "]);
        let end = out.into_end().unwrap();
        assert!(matches!(end, StreamEnd::Incomplete { .. }));
        let record = end.record();
        assert_eq!(
            record.verdict.reason.as_deref(),
            Some("host_error:streaming_unsupported")
        );
        assert_eq!(record.decided_by, None, "the host's own deny");
    }

    #[tokio::test]
    async fn a_buffering_host_assembles_or_reports_truncation() {
        let whole = assemble(chunks(&["a", "b"], true)).await;
        assert!(matches!(whole, Assembly::Complete(r) if r.content == json!("ab")));
        let cut = assemble(chunks(&["a", "b"], false)).await;
        assert_eq!(cut, Assembly::Truncated("ab".into()));
    }
}
