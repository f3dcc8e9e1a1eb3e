//! The `fanout` section: a `parallel/strictest` chain of four slow remote
//! interceptors against one.

use hookwire::Profile;

use crate::child::Endpoints;
use crate::measure::{Emit, interleaved};
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
