//! The Messages `stop_reason`, to and from the neutral finish.

use crate::api::model::Finish;

/// The Messages `stop_reason` of a settled answer; `upstream` is the one
/// the upstream gave, kept when it said `stop_sequence` and the answer
/// still stops there.
pub(crate) fn stop_reason(finish: &Finish, upstream: Option<&str>) -> String {
    match finish {
        Finish::Stop if upstream == Some("stop_sequence") => "stop_sequence".into(),
        Finish::Stop => "end_turn".into(),
        Finish::ToolCalls => "tool_use".into(),
        Finish::Length => "max_tokens".into(),
        // The API's own stop reason when its classifiers intervene.
        Finish::Withheld => "refusal".into(),
        Finish::Upstream(word) => word.clone(),
    }
}

/// The neutral finish reason of an upstream `stop_reason`.
pub(crate) fn neutral_finish(stop_reason: &str) -> String {
    match stop_reason {
        "tool_use" => "tool_calls".into(),
        "max_tokens" => "length".into(),
        "end_turn" | "stop_sequence" => "stop".into(),
        other => other.to_owned(),
    }
}
