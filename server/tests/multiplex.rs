//! The `Multiplex` stream as the SDK serves it, driven by a raw stream
//! client against a real server on 127.0.0.1:0: a session's emissions decided
//! in parallel, one
//! answer per id, cancellation and deadlines that stop the hook, refusals
//! of duplicate ids and empty messages, the end of the stream when the host
//! closes its side, and draining on shutdown.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::pb;
use hookwire::pb::multiplex_response::Outcome;
use hookwire::wire::PointRequest;
use hookwire_server::prelude::*;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

/// Allows after sleeping `args.sleep_ms`; logs `start:`, `end:` and
/// `dropped:` (a hook stopped before it answered) with the call id.
#[derive(Default)]
struct Timed {
    log: Mutex<Vec<String>>,
}

struct Dropped<'a>(&'a Timed, String, bool);

impl Drop for Dropped<'_> {
    fn drop(&mut self) {
        if !self.2 {
            self.0.note(format!("dropped:{}", self.1));
        }
    }
}

impl Timed {
    fn note(&self, event: String) {
        self.log.lock().unwrap().push(event);
    }

    fn events(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl Interceptor for Timed {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("timed", "0.1.0")
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        let call_of = ctx.get("tool_call");
        let call = call_of
            .and_then(|c| c.get("id"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let ms = call_of
            .and_then(|c| c.get("args"))
            .and_then(|a| a.get("sleep_ms"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        self.note(format!("start:{call}"));
        let mut guard = Dropped(self, call.clone(), false);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        guard.2 = true;
        self.note(format!("end:{call}"));
        Verdict::allow()
    }
}

/// A `pre_tool_call` emission of `session` as stream message `id`.
fn emission(
    id: u64,
    session: &str,
    call: &str,
    sleep_ms: u64,
    timeout_ms: u64,
) -> pb::MultiplexRequest {
    let mut request = common::pre_tool_call();
    request.core.as_mut().unwrap().session.as_mut().unwrap().id = session.into();
    let tool_call = request.tool_call.as_mut().unwrap();
    tool_call.id = call.into();
    tool_call.args = common::jv(json!({ "sleep_ms": sleep_ms }));
    let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
    PointRequest::PreToolCall(request).into_multiplex(id, timeout, HashMap::new())
}

/// Opens a stream to `endpoint`: the sender of the host's messages and
/// the service's answers.
async fn open(
    endpoint: String,
) -> (
    mpsc::Sender<pb::MultiplexRequest>,
    Streaming<pb::MultiplexResponse>,
) {
    let mut client = common::connect(endpoint).await;
    let (tx, rx) = mpsc::channel(16);
    let answers = client
        .multiplex(ReceiverStream::new(rx))
        .await
        .expect("the stream opens")
        .into_inner();
    (tx, answers)
}

/// The next answer, within 5 s.
async fn next(answers: &mut Streaming<pb::MultiplexResponse>) -> Option<pb::MultiplexResponse> {
    tokio::time::timeout(Duration::from_secs(5), answers.message())
        .await
        .expect("an answer or the end within 5 s")
        .expect("no transport error")
}

/// Waits (up to 5 s) until the policy logged `event`.
async fn eventually(policy: &Timed, event: &str) {
    let started = std::time::Instant::now();
    while !policy.events().iter().any(|e| e == event) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no {event} in {:?}",
            policy.events()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The decision of a response (`Allow`, ...), or the error outcome's code.
fn outcome(answer: &pb::MultiplexResponse) -> String {
    match answer.outcome.as_ref().expect("an outcome") {
        Outcome::Response(r) => format!("{:?}", common::decision(r)),
        Outcome::Error(e) => format!("{:?}", tonic::Code::from_i32(e.code)),
    }
}

#[tokio::test]
async fn parallel_within_a_session_one_answer_per_id_cancel_and_deadline_stop_the_hook() {
    let policy = Arc::new(Timed::default());
    let server = spawn_local(Arc::clone(&policy)).await.unwrap();
    let (tx, mut answers) = open(server.endpoint()).await;

    tx.send(emission(1, "a", "a1", 300, 0)).await.unwrap();
    tx.send(emission(2, "a", "a2", 0, 0)).await.unwrap();
    tx.send(emission(3, "b", "b1", 0, 0)).await.unwrap();
    tx.send(emission(4, "c", "c1", 10_000, 100)).await.unwrap();
    tx.send(emission(5, "d", "d1", 10_000, 0)).await.unwrap();
    // The same id again while 5 is in flight, and a message with no body.
    tx.send(emission(5, "e", "e1", 0, 0)).await.unwrap();
    tx.send(pb::MultiplexRequest {
        id: 6,
        ..Default::default()
    })
    .await
    .unwrap();

    let mut got: Vec<(u64, String)> = Vec::new();
    while got.len() < 6 {
        let answer = next(&mut answers).await.expect("the stream goes on");
        got.push((answer.id, outcome(&answer)));
    }
    // Cancel 5 once its hook runs.
    tx.send(PointRequest::multiplex_cancel(5)).await.unwrap();
    let answer = next(&mut answers).await.expect("the stream goes on");
    got.push((answer.id, outcome(&answer)));

    let at = |id: u64, what: &str| {
        got.iter()
            .position(|(i, o)| *i == id && o == what)
            .unwrap_or_else(|| panic!("no {what} for {id} in {got:?}"))
    };
    // a2 does not wait for a1 of the same session (300 ms): both run.
    assert!(at(3, "Allow") < at(1, "Allow"), "{got:?}");
    assert!(at(2, "Allow") < at(1, "Allow"), "{got:?}");
    at(4, "DeadlineExceeded");
    at(5, "AlreadyExists");
    at(6, "InvalidArgument");
    assert_eq!(got.last(), Some(&(5, "Cancelled".to_owned())), "{got:?}");
    assert_eq!(got.len(), 7);

    // The deadline and the cancellation stopped their hooks.
    eventually(&policy, "dropped:c1").await;
    eventually(&policy, "dropped:d1").await;
    let events = policy.events();
    let index = |e: &str| {
        events
            .iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("no {e} in {events:?}"))
    };
    assert!(index("start:a2") < index("end:a1"), "{events:?}");
    assert!(!events.iter().any(|e| e.contains("e1")), "{events:?}");

    // Nothing is answered twice.
    let more = tokio::time::timeout(Duration::from_millis(300), answers.message()).await;
    assert!(more.is_err(), "an answer too many: {more:?}");

    // The host closes its side: the stream ends, stopping what runs.
    tx.send(emission(7, "f", "f1", 10_000, 0)).await.unwrap();
    eventually(&policy, "start:f1").await;
    drop(tx);
    assert!(next(&mut answers).await.is_none(), "the stream ends");
    eventually(&policy, "dropped:f1").await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_answers_the_emissions_in_flight_then_ends_the_stream() {
    let policy = Arc::new(Timed::default());
    let server = spawn_local(Arc::clone(&policy)).await.unwrap();
    let (tx, mut answers) = open(server.endpoint()).await;
    tx.send(emission(1, "a", "a1", 300, 0)).await.unwrap();
    eventually(&policy, "start:a1").await;
    let stopping = tokio::spawn(server.shutdown());
    let answer = next(&mut answers).await.expect("the emission in flight");
    assert_eq!((answer.id, outcome(&answer)), (1, "Allow".to_owned()));
    assert!(next(&mut answers).await.is_none(), "then the stream ends");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("shutdown completes")
        .unwrap()
        .unwrap();
    assert!(policy.events().contains(&"end:a1".to_owned()));
}

#[tokio::test]
async fn at_most_multiplex_in_flight_run_cancels_are_read_at_the_bound_and_the_next_waits() {
    let policy = Arc::new(Timed::default());
    let server = spawn_local(Arc::clone(&policy)).await.unwrap();
    let (tx, mut answers) = open(server.endpoint()).await;
    let bound = hookwire_server::MULTIPLEX_IN_FLIGHT as u64;
    let started = |policy: &Timed| {
        policy
            .events()
            .iter()
            .filter(|e| e.starts_with("start:"))
            .count()
    };
    // Every emission in a session of its own, so none waits for another;
    // the first ends at its deadline, the others run until stopped.
    for id in 1..=bound {
        let name = format!("s{id}");
        let timeout = if id == 1 { 600 } else { 0 };
        tx.send(emission(id, &name, &name, 60_000, timeout))
            .await
            .unwrap();
    }
    eventually(&policy, &format!("start:s{bound}")).await;
    // At the bound, a cancellation is still read and frees room for one.
    tx.send(PointRequest::multiplex_cancel(2)).await.unwrap();
    let answer = next(&mut answers).await.expect("the stream goes on");
    assert_eq!((answer.id, outcome(&answer)), (2, "Cancelled".to_owned()));
    for id in [bound + 1, bound + 2] {
        let name = format!("s{id}");
        tx.send(emission(id, &name, &name, 60_000, 0))
            .await
            .unwrap();
    }
    eventually(&policy, &format!("start:s{}", bound + 1)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        started(&policy),
        bound as usize + 1,
        "one over the bound waits"
    );
    // The first one's deadline makes room for the last.
    let answer = next(&mut answers).await.expect("the stream goes on");
    assert_eq!(
        (answer.id, outcome(&answer)),
        (1, "DeadlineExceeded".to_owned())
    );
    eventually(&policy, &format!("start:s{}", bound + 2)).await;
    drop(tx);
    assert!(next(&mut answers).await.is_none(), "the stream ends");
    server.shutdown().await.unwrap();
}
