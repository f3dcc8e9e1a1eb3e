//! Streamed answers. Buffered (the default, §12.1): the upstream's events
//! are read to their end (bounded in bytes and time) into the API's
//! assembler, governed as a whole answer, and written back as the API's
//! events. Incremental (§12.1's exception, `incremental_output`): the
//! events become the chunk stream `Session::mediate_stream` takes, each
//! segment the chain permits is written to the client as it is released,
//! a deny (or a broken stream) withholds the rest and ends the answer as
//! [`Finish::Withheld`]; a completed answer then goes through
//! `pre_tool_call` and `output` like a buffered one. Text already
//! released cannot be recalled, so an `output` deny or rewrite ends it
//! withheld, with a notice.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hookwire::InterceptionPoint;
use hookwire_client::{BoxError, ChunkStream, StreamEnd, StreamEvent};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::mpsc::Sender;

use super::conversation::ConvState;
use super::governed::Governed;
use super::settle::{self, withheld_notice};
use crate::api::{Api, ApiResponse, EventAssembler, EventWriter, Finish, Settled};
use crate::error::Error;
use crate::sse::SseParser;

/// Reads an upstream event stream to its end (bounded in bytes and time)
/// into the API's assembler.
pub(crate) async fn read_all<A: Api>(
    body: Incoming,
    limit: usize,
    timeout: Duration,
) -> Result<A::Assembler, Error> {
    let read = async {
        let mut body = body;
        let mut parser = SseParser::default();
        let mut assembled = A::Assembler::default();
        let mut total = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Error::Upstream(format!("the stream broke off: {e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            total += data.len();
            if total > limit {
                return Err(Error::UpstreamResponse(format!(
                    "the stream exceeds {limit} bytes"
                )));
            }
            for event in parser.feed(&data).map_err(Error::UpstreamResponse)? {
                assembled.add(&event).map_err(Error::UpstreamResponse)?;
                if assembled.is_done() {
                    return Ok(assembled);
                }
            }
        }
        Ok(assembled)
    };
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| Error::Upstream("the stream did not complete in time".into()))?
}

/// The whole answer an assembled stream amounts to.
pub(crate) fn finished<A: Api>(a: &A::Assembler) -> Result<A::Response, Error> {
    a.finish().map_err(Error::Upstream)
}

/// The assembler a mediated stream shares with the writer.
type Shared<A> = Arc<Mutex<<A as Api>::Assembler>>;

fn lock<A: Api>(shared: &Shared<A>) -> std::sync::MutexGuard<'_, A::Assembler> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The upstream's event stream as the chunk stream incremental mediation
/// takes: each text delta a chunk, the finish reason and tool calls once
/// the stream is done by the API's terms (or ends with its finish
/// reason); bounded in bytes per event and in all, and in time per read.
/// What it reads is assembled into `shared`.
fn chunks<A: Api>(
    body: Incoming,
    shared: Shared<A>,
    limit: usize,
    timeout: Duration,
) -> ChunkStream<'static> {
    struct Reading {
        body: Incoming,
        parser: SseParser,
        queue: VecDeque<Result<StreamEvent, BoxError>>,
        done: bool,
        total: usize,
    }
    fn end<A: Api>(a: &A::Assembler) -> Option<StreamEvent> {
        let answer = a.finish().ok()?.answer().ok()?;
        Some(StreamEvent::Finished {
            finish_reason: answer.finish_reason,
            tool_calls: answer.tool_calls,
        })
    }
    let start = Reading {
        body,
        parser: SseParser::default(),
        queue: VecDeque::new(),
        done: false,
        total: 0,
    };
    let stream = futures::stream::unfold(start, move |mut st| {
        let shared = shared.clone();
        async move {
            loop {
                if let Some(event) = st.queue.pop_front() {
                    return Some((event, st));
                }
                if st.done {
                    return None;
                }
                st.done = true;
                let frame = match tokio::time::timeout(timeout, st.body.frame()).await {
                    Err(_) => {
                        st.queue
                            .push_back(Err("the upstream stream stalled".into()));
                        continue;
                    }
                    Ok(None) => {
                        st.queue.extend(end::<A>(&lock::<A>(&shared)).map(Ok));
                        continue;
                    }
                    Ok(Some(Err(e))) => {
                        st.queue.push_back(Err(Box::new(e)));
                        continue;
                    }
                    Ok(Some(Ok(frame))) => frame,
                };
                st.done = false;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                st.total += data.len();
                if st.total > limit {
                    st.queue
                        .push_back(Err("the upstream stream exceeds its bound".into()));
                    st.done = true;
                    continue;
                }
                let events = match st.parser.feed(&data) {
                    Ok(events) => events,
                    Err(e) => {
                        st.queue.push_back(Err(e.into()));
                        st.done = true;
                        continue;
                    }
                };
                let mut a = lock::<A>(&shared);
                for event in events {
                    match a.add(&event) {
                        Err(e) => {
                            st.queue.push_back(Err(e.into()));
                            st.done = true;
                            break;
                        }
                        Ok(text) if !text.is_empty() => {
                            st.queue.push_back(Ok(StreamEvent::Chunk(text)));
                        }
                        Ok(_) => {}
                    }
                    if a.is_done() {
                        st.queue.extend(end::<A>(&a).map(Ok));
                        st.done = true;
                        break;
                    }
                }
            }
        }
    });
    Box::pin(stream)
}

/// What incremental mediation takes over.
pub(crate) struct Mediation {
    /// The upstream's event stream.
    pub(crate) body: Incoming,
    /// The model asked for.
    pub(crate) model: String,
}

/// How a mediated stream ended, for the gateway's record.
pub(crate) struct Ended {
    /// The outcome recorded (`streamed`, `withheld:<point>`).
    pub(crate) outcome: String,
    /// The answer id, when the API has one.
    pub(crate) id: Option<String>,
    /// The answer members the settled stream left out
    /// ([`ApiResponse::removed`]).
    pub(crate) removed: Vec<String>,
}

/// Mediates one streamed answer incrementally (see the module docs),
/// writing the client's events to `tx`.
pub(crate) async fn mediate<A: Api>(
    g: &Governed<'_>,
    state: &mut ConvState,
    job: Mediation,
    tx: &Sender<Bytes>,
) -> Result<Ended, Error> {
    let mut writer: Option<A::Writer> = None;
    let result = mediate_into::<A>(g, state, job, tx, &mut writer).await;
    if let Err(e) = &result {
        // The status is sent; the SDKs raise on an error event, numbered
        // after what was written where the API numbers its events.
        let event = match &mut writer {
            Some(w) => w.error_at(e),
            None => A::Writer::error(e),
        };
        let _ = tx.send(event).await;
    }
    result
}

/// [`mediate`], with the writer kept where the caller can write the
/// error event of a stream that fails.
async fn mediate_into<A: Api>(
    g: &Governed<'_>,
    state: &mut ConvState,
    job: Mediation,
    tx: &Sender<Bytes>,
    writer: &mut Option<A::Writer>,
) -> Result<Ended, Error> {
    let shared: Shared<A> = Arc::default();
    let config = &g.inner.config;
    let chunks = chunks::<A>(
        job.body,
        shared.clone(),
        config.max_upstream_bytes,
        config.upstream_timeout,
    );
    let members = g.extra(&state.labels, InterceptionPoint::PostModelCall);
    let send = |b: Bytes| async move { tx.send(b).await.is_ok() };
    let mut mediated = g
        .conv
        .session
        .mediate_stream(job.model.clone(), chunks)
        .with_members(members);
    loop {
        let next = mediated.next().await?;
        let w = match writer {
            Some(w) => w,
            None => {
                let mut w = A::Writer::new(&lock::<A>(&shared));
                for event in w.opening() {
                    send(event).await;
                }
                writer.insert(w)
            }
        };
        let Some(released) = next else { break };
        if !send(w.text(released.as_str())).await {
            // The client went away: stop reading the upstream.
            break;
        }
    }
    let Some(w) = writer.as_mut() else {
        return Err(Error::Upstream("the stream ended before it began".into()));
    };
    let released = mediated.released().to_owned();
    let mut removed = Vec::new();
    let (outcome, id) = match mediated.into_end() {
        Some(StreamEnd::Completed { response, .. }) => {
            let whole = finished::<A>(&lock::<A>(&shared))?;
            let id = whole.id();
            let upstream_text = settle::text_of(&whole.answer()?.content);
            let mut settled = settle::settle(g, state, response, &upstream_text).await?;
            // What the client holds in the end: the released text, then
            // the tail written here.
            let tail = if settled.finish == Finish::Withheld {
                format!("\n{}", settled.text)
            } else if let Some(extra) = settled.text.strip_prefix(released.as_str()) {
                extra.to_owned()
            } else {
                settled.finish = Finish::Withheld;
                "\n[hookwire] the response was rewritten after it was released".to_owned()
            };
            if !tail.is_empty() {
                send(w.text(&tail)).await;
            }
            settled.text = format!("{released}{tail}");
            removed = whole.removed(&settled);
            let closing = w.closing(&lock::<A>(&shared), &settled);
            for event in closing {
                send(event).await;
            }
            ("streamed".to_owned(), id)
        }
        Some(end) => {
            let reason = end.record().verdict.reason.clone();
            // The record is payload-free: a message survives there only
            // where the host keeps it.
            let message = end.record().verdict.message.clone();
            let tail = format!(
                "\n{}",
                withheld_notice(reason.as_deref(), message.as_deref())
            );
            send(w.text(&tail)).await;
            let settled = Settled {
                text: format!("{released}{tail}"),
                tool_calls: Vec::new(),
                finish: Finish::Withheld,
                rewritten: true,
            };
            if let Ok(whole) = finished::<A>(&lock::<A>(&shared)) {
                removed = whole.removed(&settled);
            }
            let closing = w.closing(&lock::<A>(&shared), &settled);
            for event in closing {
                send(event).await;
            }
            if g.conv.session.is_turn_open() {
                g.conv.session.end_turn();
            }
            (
                format!("withheld:{}", end.record().interception_point),
                None,
            )
        }
        None => return Err(Error::Upstream("the client left mid-stream".into())),
    };
    removed.extend(lock::<A>(&shared).dropped());
    Ok(Ended {
        outcome,
        id,
        removed,
    })
}
