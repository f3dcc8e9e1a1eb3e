//! The `fanout` section: a `parallel/strictest` chain of four slow remote
//! interceptors against one, and a session's four parallel tool calls to
//! one slow interceptor (over the stream and unary) against one call.

use std::sync::Arc;

use hookwire::Profile;
use hookwire_client::{Session, ToolCall};

use crate::child::Endpoints;
use crate::measure::{Emit, Op, interleaved};
use crate::report::Headline;
use crate::{Plan, REMOTE_TIMEOUT, fixtures, serve, started};

/// `parallel/strictest` to four remote interceptors that each wait
/// [`serve::DELAY`], against one.
pub async fn fanout(
    plan: Plan,
    ep: &Endpoints,
    call_1k: &hookwire_client::ToolCall,
    headline: &mut Vec<Headline>,
) {
    eprintln!("parallel fan-out ...");
    let delay_ms = serve::DELAY.as_millis();
    let four = fixtures::remote_host(&ep.delay, 4, Profile::ParallelStrictest, REMOTE_TIMEOUT);
    let one = fixtures::remote_host(&ep.delay, 1, Profile::ParallelStrictest, REMOTE_TIMEOUT);
    let mut fan = Emit {
        session: started(&four, "s-fan4").await,
        call: call_1k.clone(),
    };
    let mut single = Emit {
        session: started(&one, "s-fan1").await,
        call: call_1k.clone(),
    };
    let (a, b) = interleaved(
        &mut fan,
        &mut single,
        20,
        plan.fanout_rounds,
        plan.fanout_per_round,
    )
    .await;
    headline.push(Headline::latency(
        format!("parallel/strictest, 4 remote interceptors ({delay_ms} ms each) vs 1"),
        &a,
        &b,
        "parallel4_vs_single",
        Some((1.2, false)),
    ));
}

/// Parallel `pre_tool_call`s a session makes at once (an agent's parallel
/// tool calls).
const PARALLEL_CALLS: usize = 4;

/// [`PARALLEL_CALLS`] `pre_tool_call` emissions of one session at once,
/// each with a call id of its own; done when all are decided.
struct ParallelCalls {
    session: Arc<Session>,
    calls: Vec<ToolCall>,
}

impl Op for ParallelCalls {
    async fn once(&mut self) {
        for call in &mut self.calls {
            fixtures::renumber(call);
        }
        let decided = futures::future::join_all(
            self.calls
                .iter()
                .map(|call| self.session.pre_tool_call(call)),
        )
        .await;
        for emission in decided {
            let emission = emission.expect("emits");
            assert!(
                emission.proceeds(),
                "unexpected verdict {:?}",
                emission.verdict()
            );
        }
    }
}

/// A session's [`PARALLEL_CALLS`] parallel tool calls to one interceptor
/// that waits [`serve::DELAY`], against one call, over the `Multiplex`
/// stream and over unary: the service must not serialize them.
pub async fn parallel_in_a_session(
    plan: Plan,
    ep: &Endpoints,
    call_1k: &ToolCall,
    headline: &mut Vec<Headline>,
) {
    eprintln!("parallel tool calls in one session ...");
    let delay_ms = serve::DELAY.as_millis();
    for (transport, endpoint, key) in [
        (
            "Multiplex stream",
            &ep.delay,
            "session_parallel4_stream_vs_one",
        ),
        ("unary", &ep.delay_unary, "session_parallel4_unary_vs_one"),
    ] {
        let host = fixtures::remote_host(endpoint, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let session = started(&host, "s-par").await;
        let mut parallel = ParallelCalls {
            session: session.clone(),
            calls: vec![call_1k.clone(); PARALLEL_CALLS],
        };
        let mut single = Emit {
            session,
            call: call_1k.clone(),
        };
        let (a, b) = interleaved(
            &mut parallel,
            &mut single,
            20,
            plan.fanout_rounds,
            plan.fanout_per_round,
        )
        .await;
        headline.push(Headline::latency(
            format!(
                "{PARALLEL_CALLS} parallel pre_tool_calls of one session, {transport} ({delay_ms} ms interceptor) vs 1"
            ),
            &a,
            &b,
            key,
            Some((1.2, false)),
        ));
    }
}
