//! The Chat Completions adapter's fuzz entry points: request decoding and
//! stream assembly over arbitrary bytes, each asserting its properties.

use super::round_trip::{finish_as_answered, request_round_trips};
use crate::api::chat::{Chat, ChatAssembler, ChatWriter};
use crate::api::{
    Api, ApiRequest, ApiResponse, Entry, EventAssembler, EventWriter, Finish, Settled,
};
use crate::bounds::MAX_MESSAGES;
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};
use crate::sse::{MAX_EVENT_BYTES, SseParser};

/// Chat Completions request decoding. Never panics; a decoded request's
/// body decodes again to the same view; a rewrite of each entry's kind
/// applies and reads back from the body; other entries, and indexes past
/// the last message, refuse rewrites; the overrides (system prompt
/// prepended or replaced) keep the body decodable.
pub fn chat_request(data: &[u8]) {
    let Ok(req) = Chat::decode_request(data) else {
        return;
    };
    request_round_trips::<Chat>(&req);
    let view = req.view().clone();

    // A prepended system prompt may add a message: at the bound, the
    // body goes upstream one over what a client may send (by design).
    if view.entries.len() >= MAX_MESSAGES {
        return;
    }
    for mode in [SystemPromptMode::Prepend, SystemPromptMode::Replace] {
        let mut overridden = req.clone();
        overridden.apply_overrides(&overrides(mode));
        assert_eq!(overridden.view().model, "fuzz-model");
        let body = serde_json::to_vec(&overridden.into_body()).expect("a body encodes");
        let again = Chat::decode_request(&body).expect("an overridden body decodes");
        assert_eq!(again.view().model, "fuzz-model");
        let first = again
            .view()
            .entries
            .iter()
            .find(|e| matches!(e, Entry::Instructions(_)));
        match first {
            Some(Entry::Instructions(t)) => assert!(t.text.starts_with("fuzz policy")),
            other => panic!("the system prompt is the first instruction, not {other:?}"),
        }
    }
}

/// Every model override, with the system prompt set in `mode`.
fn overrides(mode: SystemPromptMode) -> ModelOverrides {
    let by = |v| SetBy {
        value: v,
        by: "fuzz".into(),
    };
    ModelOverrides {
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
            value: (mode, "fuzz policy".into()),
            by: "fuzz".into(),
        }),
    }
}

/// Chat Completions stream assembly. The first byte sets the read size
/// (1-64 bytes), the rest is the stream. Never panics; a stream that
/// finishes reads as an answer; the chunks written for it, as it came
/// and withheld, assemble again to exactly the settled answer, replayed
/// whole or written incrementally (the text in several deltas).
pub fn chat_stream(data: &[u8]) {
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
        let expected = response.clone().settle(&settled);
        let replayed = ChatWriter::replay(&seen, &settled);
        // One delta carries the whole settled text, which the stream may
        // have brought in many events each under the bound.
        if replayed.iter().any(|e| e.len() > MAX_EVENT_BYTES) {
            continue;
        }
        let again = assemble(&replayed.concat(), 4096).expect("the replayed chunks assemble");
        assert!(again.is_done(), "the replayed stream ends");
        let got = again.finish().expect("the replayed stream finishes");
        assert_eq!(
            got.to_value(),
            &expected,
            "the replay is the settled answer"
        );

        let mut w = ChatWriter::new(&seen);
        let mut events: Vec<u8> = w.opening().concat();
        for piece in pieces(&settled.text) {
            events.extend_from_slice(&w.text(piece));
        }
        events.extend(w.closing(&seen, &settled).concat());
        let again = assemble(&events, 4096).expect("the written chunks assemble");
        assert!(again.is_done(), "the written stream ends");
        let got = again.finish().expect("the written stream finishes");
        assert_eq!(got.to_value(), &expected, "the deltas add up to the answer");
    }
}

/// `text` cut at character boundaries into at most four non-empty pieces.
fn pieces(text: &str) -> Vec<&str> {
    let step = text.chars().count().div_ceil(4).max(1);
    let mut cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(step).collect();
    cuts.push(text.len());
    cuts.windows(2)
        .map(|w| &text[w[0]..w[1]])
        .filter(|p| !p.is_empty())
        .collect()
}

/// Feeds `stream` to a parser and an assembler `size` bytes at a time;
/// `None` at the first refusal.
fn assemble(stream: &[u8], size: usize) -> Option<ChatAssembler> {
    let mut parser = SseParser::default();
    let mut a = ChatAssembler::default();
    for piece in stream.chunks(size) {
        for event in parser.feed(piece).ok()? {
            a.add(&event).ok()?;
        }
    }
    Some(a)
}
