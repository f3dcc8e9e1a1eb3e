//! What no point would see in a Chat answer or request: the copies of a
//! withheld or rewritten answer's text (logprobs, a refusal, an audio
//! transcript, annotations) go with it and are named as removed; a
//! refusal alone is the governed text; legacy function calling is
//! refused in the request and removed from the answer.

use serde_json::{Value, json};

use super::*;
use crate::api::model::{ApiResponse, EventAssembler, EventWriter, Finish, Settled};
use crate::sse::SseParser;

fn whole(message: Value, extra: Value) -> ChatResponse {
    let mut choice = json!({"index": 0, "message": message, "finish_reason": "stop"});
    for (k, v) in extra.as_object().unwrap() {
        choice[k] = v.clone();
    }
    let body = json!({"id": "x", "object": "chat.completion", "choices": [choice]});
    Chat::decode_response(body.to_string().as_bytes()).unwrap()
}

fn settled(text: &str, rewritten: bool, finish: Finish) -> Settled {
    Settled {
        text: text.into(),
        tool_calls: vec![],
        finish,
        rewritten,
    }
}

const SECRET: &str = "the key is AKIA123";

#[test]
fn a_withheld_or_rewritten_answer_leaves_no_copy_of_its_text() {
    let logprobs = json!({"content": [{"token": "AKIA123", "logprob": -0.1, "bytes": null,
                                        "top_logprobs": []}], "refusal": null});
    let r = whole(
        json!({"role": "assistant", "content": SECRET,
               "audio": {"id": "a1", "data": "UklGRg==", "expires_at": 1, "transcript": SECRET},
               "annotations": [{"type": "url_citation", "url_citation": {
                   "url": "https://example.com", "title": "t", "start_index": 0, "end_index": 3}}]}),
        json!({"logprobs": logprobs}),
    );
    for s in [
        settled(
            "[hookwire] the response was withheld: p",
            true,
            Finish::Withheld,
        ),
        settled("the key is [key]", true, Finish::Stop),
    ] {
        let mut removed = r.removed(&s);
        removed.sort();
        assert_eq!(
            removed,
            [
                "choices[0].logprobs",
                "choices[0].message.annotations",
                "choices[0].message.audio"
            ]
        );
        let out = r.clone().settle(&s);
        assert!(!out.to_string().contains("AKIA"), "{out}");
        assert_eq!(out["choices"][0]["message"]["content"], s.text.as_str());
    }
    // Released as written: everything stays.
    let same = settled(SECRET, false, Finish::Stop);
    assert!(r.removed(&same).is_empty());
    let out = r.clone().settle(&same);
    assert_eq!(out["choices"][0]["logprobs"], logprobs);
    assert_eq!(out["choices"][0]["message"]["audio"]["transcript"], SECRET);
}

#[test]
fn a_refusal_or_an_audio_transcript_alone_is_the_governed_text() {
    let refusal = whole(
        json!({"role": "assistant", "content": null, "refusal": SECRET}),
        json!({}),
    );
    assert_eq!(refusal.answer().unwrap().content, json!(SECRET));
    let kept = refusal
        .clone()
        .settle(&settled(SECRET, false, Finish::Stop));
    assert_eq!(kept["choices"][0]["message"]["refusal"], SECRET);
    assert_eq!(kept["choices"][0]["message"]["content"], Value::Null);
    let rewritten = refusal
        .clone()
        .settle(&settled("[key]", true, Finish::Stop));
    assert_eq!(rewritten["choices"][0]["message"]["content"], "[key]");
    assert!(rewritten["choices"][0]["message"].get("refusal").is_none());
    assert_eq!(
        refusal.removed(&settled("[key]", true, Finish::Stop)),
        ["choices[0].message.refusal"]
    );
    let audio = whole(
        json!({"role": "assistant", "content": null,
               "audio": {"id": "a", "data": "", "expires_at": 1, "transcript": SECRET}}),
        json!({}),
    );
    assert_eq!(audio.answer().unwrap().content, json!(SECRET));
}

/// Fuzz finding (`chat_stream`): a refusal beside content is text no
/// point saw (the chain governs the content); the whole answer relayed
/// it while the streamed one did not. Both remove it now.
#[test]
fn a_refusal_or_audio_beside_content_is_removed_even_when_the_content_passes() {
    let r = whole(
        json!({"role": "assistant", "content": "hello", "refusal": SECRET,
               "audio": {"id": "a", "data": "UklGRg==", "expires_at": 1, "transcript": SECRET}}),
        json!({}),
    );
    assert_eq!(r.answer().unwrap().content, json!("hello"));
    // (The same text beside it is a copy, and stays: see above.)
    let passed = settled("hello", false, Finish::Stop);
    let out = r.clone().settle(&passed);
    let message = &out["choices"][0]["message"];
    assert_eq!(message["content"], "hello");
    assert!(message.get("refusal").is_none(), "{out}");
    assert!(message.get("audio").is_none(), "{out}");
    assert_eq!(
        r.removed(&passed),
        ["choices[0].message.refusal", "choices[0].message.audio"]
    );
    assert!(!out.to_string().contains(SECRET));
}

#[test]
fn legacy_function_calling_is_refused_naming_the_member() {
    let msg = json!([{"role": "user", "content": "hi"}]);
    let refused = |v: Value| match Chat::decode_request(v.to_string().as_bytes()) {
        Err(Error::BadRequest(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refused(json!({"model": "m", "messages": msg,
                           "functions": [{"name": "bash", "parameters": {}}]}));
    assert!(m.starts_with("functions is not governed"), "{m}");
    let m = refused(json!({"model": "m", "messages": msg, "function_call": "auto"}));
    assert!(m.starts_with("function_call is not governed"), "{m}");
    let m = refused(json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null,
         "function_call": {"name": "bash", "arguments": "{}"}},
        {"role": "function", "name": "bash", "content": "ok"}]}));
    assert!(m.starts_with("messages[1]: function_call"), "{m}");
    let m = refused(json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "function", "name": "bash", "content": "ok"}]}));
    assert!(m.starts_with("messages[1]: role \"function\""), "{m}");

    // One the upstream proposes anyway never reaches the client.
    let r = whole(
        json!({"role": "assistant", "content": null,
               "function_call": {"name": "bash", "arguments": "{\"cmd\":\"rm -rf /\"}"}}),
        json!({}),
    );
    let s = settled("", false, Finish::Stop);
    assert_eq!(r.removed(&s), ["choices[0].message.function_call"]);
    assert!(!r.settle(&s).to_string().contains("rm -rf"));
}

fn assemble(frames: &[Value]) -> ChatAssembler {
    let mut text = String::new();
    for f in frames {
        text.push_str(&format!("data: {f}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    let mut a = ChatAssembler::default();
    for e in SseParser::default().feed(text.as_bytes()).unwrap() {
        a.add(&e).unwrap();
    }
    a
}

#[test]
fn a_streamed_refusal_is_governed_and_logprobs_and_function_calls_never_relayed() {
    let a = assemble(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can"},
               "logprobs": {"content": null, "refusal": [{"token": "I", "logprob": 0}]}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"refusal": "not."}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"function_call": {"name": "bash"}}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]);
    let r = a.finish().unwrap();
    assert_eq!(r.answer().unwrap().content, json!("I cannot."));
    assert_eq!(
        a.dropped(),
        ["choices[0].logprobs", "choices[0].delta.function_call"]
    );
    let replayed = |s: &Settled| -> String {
        let bytes: Vec<u8> = ChatWriter::replay(&a, s).concat();
        String::from_utf8(bytes).unwrap()
    };
    let kept = replayed(&settled("I cannot.", false, Finish::Stop));
    assert!(kept.contains(r#""refusal":"I cannot.""#), "{kept}");
    let withheld = replayed(&settled("[hookwire] withheld", true, Finish::Withheld));
    assert!(
        withheld.contains(r#""content":"[hookwire] withheld""#),
        "{withheld}"
    );
    assert!(!withheld.contains("I can") && !withheld.contains("function_call"));
}

#[test]
fn a_notice_on_calls_without_content_becomes_the_content() {
    let r = whole(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({}),
    );
    let s = Settled {
        text: "[hookwire] tool call \"rm\" (b) was blocked: no".into(),
        tool_calls: vec![hookwire_client::ToolCall::new("a", "ls", json!({}))],
        finish: Finish::ToolCalls,
        rewritten: false,
    };
    let out = r.settle(&s);
    assert_eq!(out["choices"][0]["message"]["content"], s.text.as_str());
}
