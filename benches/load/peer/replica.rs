//! What a replica switch costs. A gateway trusts no history from memory:
//! a replica that never served a conversation governs every entry of the
//! history the client replays (each user entry an `input`, each tool
//! result its call's `pre_tool_call` and `post_tool_call`), where the
//! replica that served it finds each entry in its memo. Measured on the
//! gateway with one remote allow interceptor, Chat Completions, whole: the
//! next turn of a conversation of [`TURNS`] turns, each with one tool call
//! and its result, sent to the instance that served it (a memo hit per
//! entry) against the same request in a conversation the instance never
//! saw (a fresh session id: what another replica, a restart or an idle-out
//! meets).

use std::time::Instant;

use bytes::Bytes;
use serde_json::{Value, json};

use super::apis::Api;
use super::load::{Http, Target, end_session, send_body};
use crate::Plan;
use crate::measure::Samples;
use crate::report::Headline;

/// The turns of the replayed history.
pub const TURNS: usize = 8;

/// The emissions a replica that never saw the conversation makes beyond
/// the one that served it: one `input` per earlier turn and two per tool
/// result.
pub const EXTRA_EMISSIONS: usize = TURNS + 2 * TURNS;

/// The request: [`TURNS`] turns of history (a user entry, a tool call, its
/// result, the model's answer), then the next user entry.
fn replayed() -> Bytes {
    let mut messages: Vec<Value> = Vec::new();
    for i in 0..TURNS {
        messages.push(json!({"role": "user", "content": format!("step {i}: list the files")}));
        messages.push(
            json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{i}"), "type": "function",
            "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}]}),
        );
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"),
                             "content": format!("file-{i}.txt")}));
        messages.push(json!({"role": "assistant", "content": format!("listed step {i}")}));
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    let body = json!({"model": "bench-model", "messages": messages,
        "tools": [{"type": "function", "function": {"name": "bash",
                   "parameters": {"type": "object"}}}]});
    Bytes::from(body.to_string())
}

async fn timed(http: &Http, gateway: &Target, session: &str, body: &Bytes) -> Result<f64, String> {
    let start = Instant::now();
    let (status, answer) = send_body(http, gateway, Api::Chat, session, body.clone()).await?;
    let took = start.elapsed().as_secs_f64() * 1e6;
    if status != 200 || !Api::Chat.complete(false, &answer) {
        let shown = String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned();
        return Err(format!("replica switch: status {status}, answer {shown:?}"));
    }
    Ok(took)
}

/// The headline row: the next turn on a replica that never saw the
/// conversation against the one that served it.
pub async fn measure(plan: Plan, http: &Http, gateway: &Target) -> Result<Headline, String> {
    eprintln!("gateway_peer: replica switch ...");
    let body = replayed();
    // Each unseen sample opens a conversation, ended after it (outside
    // the time taken), so the client's session quota is never reached.
    let per_round = (plan.remote_per_round / 10).max(5);
    let (mut served, mut unseen) = (Vec::new(), Vec::new());
    for round in 0..plan.rounds {
        // The conversation as its replica knows it: governed once whole.
        let known = format!("replica-served-{round}");
        timed(http, gateway, &known, &body).await?;
        for n in 0..per_round {
            let fresh = format!("replica-unseen-{round}-{n}");
            if (round + n) % 2 == 0 {
                served.push(timed(http, gateway, &known, &body).await?);
                unseen.push(timed(http, gateway, &fresh, &body).await?);
            } else {
                unseen.push(timed(http, gateway, &fresh, &body).await?);
                served.push(timed(http, gateway, &known, &body).await?);
            }
            end_session(http, gateway, &fresh).await?;
        }
        end_session(http, gateway, &known).await?;
    }
    Ok(Headline::latency(
        format!(
            "gateway replica switch: the next turn of a {TURNS}-turn conversation with {TURNS} \
             tool results on a replica that never saw it ({EXTRA_EMISSIONS} more emissions, one \
             remote allow interceptor) vs on the replica that served it"
        ),
        &Samples(unseen),
        &Samples(served),
        "gateway_replica_switch",
        None,
    ))
}
