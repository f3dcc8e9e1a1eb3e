//! What the entry points of every adapter assert alike: a decoded
//! request survives the trip to its upstream body and back, with and
//! without the chain's rewrites; and the neutral finish an answer settles
//! with when the chain lets it through as the upstream gave it.

use crate::api::{Api, ApiRequest, Entry, Finish, Rewrite};

/// What every adapter's request decoding keeps, over a request it
/// decoded: its upstream body decodes to the same view; a rewrite of each
/// entry's kind applies and reads back from the body; other entries, and
/// indexes past the last, refuse a rewrite.
pub(super) fn request_round_trips<A: Api>(req: &A::Request)
where
    A::Request: Clone,
{
    let view = req.view().clone();
    let body = serde_json::to_vec(&req.clone().into_body()).expect("a body encodes");
    let again = A::decode_request(&body).expect("the body that goes upstream decodes");
    assert_eq!(again.view(), &view, "the body decodes to the same view");

    let mut rewritten = req.clone();
    for (i, entry) in view.entries.iter().enumerate() {
        let rewrite = match entry {
            Entry::Instructions(_) | Entry::User(_) | Entry::Assistant { .. } => {
                Rewrite::Text(format!("text {i}"))
            }
            Entry::ToolResult { .. } => Rewrite::ToolResult {
                text: format!("result {i}"),
                is_error: i % 2 == 0,
            },
            Entry::Other(_) => {
                let refused = rewritten.rewrite(i, Rewrite::Text("x".into()));
                assert!(refused.is_err(), "an other entry takes no rewrite");
                continue;
            }
        };
        rewritten
            .rewrite(i, rewrite)
            .expect("a rewrite of the entry's kind applies");
    }
    let past = rewritten.rewrite(view.entries.len(), Rewrite::Text("x".into()));
    assert!(past.is_err(), "no entry past the last takes a rewrite");
    let expected = rewritten.view().clone();
    let body = serde_json::to_vec(&rewritten.into_body()).expect("a body encodes");
    let again = A::decode_request(&body).expect("a rewritten body decodes");
    assert_eq!(again.view(), &expected, "the rewrites read back");
}

/// The neutral finish of an answer settled as the upstream gave it (its
/// calls all permitted): what the round-trip properties settle with.
pub(super) fn finish_as_answered(reason: &str) -> Finish {
    match reason {
        "stop" => Finish::Stop,
        "tool_calls" => Finish::ToolCalls,
        "length" => Finish::Length,
        other => Finish::Upstream(other.to_owned()),
    }
}
