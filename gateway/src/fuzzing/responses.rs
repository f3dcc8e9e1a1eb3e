//! The Responses adapter's fuzz entry points: request decoding and
//! stream assembly over arbitrary bytes, each asserting its properties.

use serde_json::Value;

use super::round_trip::finish_as_answered;
use crate::api::responses::{Responses, ResponsesAssembler, ResponsesWriter};
use crate::api::{
    Api, ApiRequest, ApiResponse, Entry, EventAssembler, EventWriter, Rewrite, Settled,
};
use crate::bounds::MAX_MESSAGES;
use crate::sse::{MAX_EVENT_BYTES, SseParser};

/// A Responses request body: decoding never panics; a decoded request
/// is bounded, takes a rewrite of its kind at every entry, and its body
/// decodes again to the rewritten view.
pub fn responses_request(data: &[u8]) {
    let Ok(mut request) = Responses::decode_request(data) else {
        return;
    };
    let entries = request.view().entries.clone();
    assert!(entries.len() <= MAX_MESSAGES + 1, "the items are bounded");
    for (i, entry) in entries.iter().enumerate() {
        let rewrite = match entry {
            Entry::Other(_) => continue,
            Entry::ToolResult { .. } => Rewrite::ToolResult {
                text: "result".into(),
                is_error: false,
            },
            Entry::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                Rewrite::Text(String::new())
            }
            _ => Rewrite::Text("text".into()),
        };
        request
            .rewrite(i, rewrite)
            .expect("an entry takes a rewrite of its kind");
    }
    let view = request.view().clone();
    let body = Value::Object(request.into_body()).to_string();
    let again = Responses::decode_request(body.as_bytes()).expect("a rewritten request decodes");
    assert_eq!(again.view(), &view, "the body holds the rewritten view");
}

/// A Responses stream: the first byte sets the size of the reads (1-64
/// bytes), the rest is the stream. Splitting and assembly never panic; a
/// stream that is not done does not finish; one that finishes into an
/// answer, settled as released and written again, assembles into exactly
/// the settled response, with its events numbered from 0.
pub fn responses_stream(data: &[u8]) {
    let Some((&size, bytes)) = data.split_first() else {
        return;
    };
    let mut parser = SseParser::default();
    let mut seen = ResponsesAssembler::default();
    for piece in bytes.chunks(usize::from(size % 64) + 1) {
        let Ok(events) = parser.feed(piece) else {
            return;
        };
        for event in &events {
            if seen.add(event).is_err() {
                return;
            }
        }
    }
    if !seen.is_done() {
        assert!(seen.finish().is_err(), "an unfinished stream has no answer");
        return;
    }
    let Ok(response) = seen.finish() else {
        return;
    };
    let Ok(answer) = response.answer() else {
        return;
    };
    let settled = Settled {
        text: answer.content.as_str().unwrap_or_default().to_owned(),
        tool_calls: answer.tool_calls,
        finish: finish_as_answered(&answer.finish_reason),
        rewritten: false,
    };
    let expected = response.settle(&settled);
    let written = ResponsesWriter::replay(&seen, &settled);
    if written.iter().any(|e| e.len() > MAX_EVENT_BYTES) {
        return;
    }
    let mut parser = SseParser::default();
    let mut again = ResponsesAssembler::default();
    let mut count = 0u64;
    for chunk in &written {
        for event in parser.feed(chunk).expect("written events split") {
            let v = event.json().expect("a written event is JSON");
            assert_eq!(v["sequence_number"], count, "events are numbered in order");
            count += 1;
            again.add(&event).expect("a written event assembles");
        }
    }
    assert!(again.is_done(), "a written stream ends");
    let got = again
        .finish()
        .expect("a written stream finishes")
        .to_value();
    let expected: Value =
        serde_json::from_str(&expected.to_string()).expect("a settled response is JSON");
    assert_eq!(got, expected, "the written stream is the settled response");
    assert_eq!(
        Value::Array(again.assembled_items()),
        expected["output"],
        "the item events add up to the settled output"
    );
}
