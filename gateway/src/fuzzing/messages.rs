//! The Messages adapter's fuzz entry points: request decoding and stream
//! assembly over arbitrary bytes, each asserting its properties.

use super::round_trip::{finish_as_answered, request_round_trips};
use crate::api::messages::{Messages, MessagesAssembler, MessagesResponse, MessagesWriter};
use crate::api::{
    Api, ApiRequest, ApiResponse, Entry, EventAssembler, EventWriter, Finish, Settled,
};
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};
use crate::sse::SseParser;

/// Messages request decoding. Never panics; a decoded request's body
/// decodes again to the same view; a rewrite of each entry's kind applies
/// and reads back from the body; other entries refuse rewrites; the
/// overrides keep the body decodable.
pub fn messages_request(data: &[u8]) {
    let Ok(req) = Messages::decode_request(data) else {
        return;
    };
    request_round_trips::<Messages>(&req);

    let mut overridden = req;
    let by = |v| SetBy {
        value: v,
        by: "fuzz".into(),
    };
    overridden.apply_overrides(&ModelOverrides {
        temperature: Some(by(0.5)),
        top_p: Some(by(0.5)),
        max_tokens: Some(SetBy {
            value: 7,
            by: "fuzz".into(),
        }),
        model: Some(SetBy {
            value: "fuzz-model".into(),
            by: "fuzz".into(),
        }),
        system_prompt: Some(SetBy {
            value: (SystemPromptMode::Prepend, "fuzz policy".into()),
            by: "fuzz".into(),
        }),
    });
    let body = serde_json::to_vec(&overridden.into_body()).expect("a body encodes");
    let again = Messages::decode_request(&body).expect("an overridden body decodes");
    assert_eq!(again.view().model, "fuzz-model");
    match again.view().entries.first() {
        Some(Entry::Instructions(t)) => assert!(t.text.starts_with("fuzz policy")),
        other => panic!("the system prompt is the first entry, not {other:?}"),
    }
}

/// Messages stream assembly. The first byte sets the read size, the rest
/// is the stream. Never panics; a stream that finishes reads as an answer,
/// and the events written for it (replayed whole, or written
/// incrementally) assemble again to the settled answer.
pub fn messages_stream(data: &[u8]) {
    let Some((size, stream)) = data.split_first() else {
        return;
    };
    let Some(seen) = assemble(stream, usize::from(*size % 64) + 1) else {
        return;
    };
    let Ok(response) = seen.finish() else {
        return;
    };
    let answer = response.answer().expect("an assembled answer reads");
    let settled = Settled {
        text: answer.content.as_str().unwrap_or_default().to_owned(),
        tool_calls: answer.tool_calls,
        finish: finish_as_answered(&answer.finish_reason),
        rewritten: false,
    };
    let withheld = Settled {
        text: "withheld".into(),
        tool_calls: Vec::new(),
        finish: Finish::Withheld,
        rewritten: false,
    };
    for settled in [settled, withheld] {
        let events: Vec<u8> = MessagesWriter::replay(&seen, &settled).concat();
        let again = assemble(&events, 4096).expect("the replayed events assemble");
        assert!(again.is_done(), "the replayed stream ends");
        let expected = response.clone().settle(&settled);
        let expected = MessagesResponse::from_message(
            expected
                .as_object()
                .expect("a message is an object")
                .clone(),
        )
        .expect("a settled answer is a message");
        assert_eq!(again.finish().expect("it finishes"), expected);

        let mut w = MessagesWriter::new(&seen);
        let mut events: Vec<u8> = w.opening().concat();
        if !settled.text.is_empty() {
            events.extend_from_slice(&w.text(&settled.text));
        }
        events.extend(w.closing(&seen, &settled).concat());
        let again = assemble(&events, 4096).expect("the written events assemble");
        assert!(again.is_done(), "the written stream ends");
        again.finish().expect("the written stream finishes");
    }
}

/// Feeds `stream` to a parser and an assembler `size` bytes at a time;
/// `None` at the first refusal.
fn assemble(stream: &[u8], size: usize) -> Option<MessagesAssembler> {
    let mut parser = SseParser::default();
    let mut a = MessagesAssembler::default();
    for piece in stream.chunks(size) {
        for event in parser.feed(piece).ok()? {
            a.add(&event).ok()?;
        }
    }
    Some(a)
}
