//! Streams: the assembler over a realistic event sequence split at every
//! byte, its refusals, and the writer's events assembled again by the
//! assembler into exactly what settling the whole answer gives.

use bytes::Bytes;
use hookwire_client::ToolCall;
use serde_json::{Value, json};

use super::items::MAX_OUTPUT_ITEMS;
use super::*;
use crate::api::model::{ApiResponse, EventAssembler, EventWriter, Finish, Settled};
use crate::sse::{self, SseEvent, SseParser};

fn created() -> Value {
    json!({"id": "resp_s", "object": "response", "created_at": 1_700_000_001, "model": "gpt-4.1",
           "status": "in_progress", "output": [], "usage": null, "tools": []})
}

fn reasoning() -> Value {
    json!({"type": "reasoning", "id": "rs_s", "summary": []})
}

fn message(text: &str, status: &str) -> Value {
    json!({"type": "message", "id": "msg_s", "role": "assistant", "status": status,
           "content": [{"type": "output_text", "annotations": [], "text": text}]})
}

fn call(id: &str, name: &str, args: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name,
           "arguments": args, "status": "completed"})
}

/// The events an OpenAI upstream sends for reasoning, "Hello" and two
/// calls, in order, with their sequence numbers.
fn upstream_events() -> Vec<Value> {
    let mut done = created();
    done["status"] = "completed".into();
    done["output"] = json!([
        reasoning(),
        message("Hello", "completed"),
        call("c1", "ls", "{\"p\":1}"),
        call("c2", "rm", "{}")
    ]);
    done["usage"] = json!({"input_tokens": 3, "output_tokens": 4, "total_tokens": 7});
    let empty = json!({"type": "message", "id": "msg_s", "role": "assistant",
                       "status": "in_progress", "content": []});
    let part = json!({"type": "output_text", "annotations": [], "text": ""});
    let mut open_call = call("c1", "ls", "");
    open_call["status"] = "in_progress".into();
    let events = vec![
        json!({"type": "response.created", "response": created()}),
        json!({"type": "response.in_progress", "response": created()}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": reasoning()}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "hm"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning()}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": empty}),
        json!({"type": "response.content_part.added", "output_index": 1, "item_id": "msg_s",
               "content_index": 0, "part": part}),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_s",
               "content_index": 0, "delta": "Hel", "logprobs": []}),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_s",
               "content_index": 0, "delta": "lo", "logprobs": []}),
        json!({"type": "response.output_text.done", "output_index": 1, "item_id": "msg_s",
               "content_index": 0, "text": "Hello", "logprobs": []}),
        json!({"type": "response.content_part.done", "output_index": 1, "item_id": "msg_s",
               "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": "Hello"}}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": message("Hello", "completed")}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": open_call}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2,
               "item_id": "fc_c1", "delta": "{\"p\""}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2,
               "item_id": "fc_c1", "delta": ":1}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 2,
               "item_id": "fc_c1", "arguments": "{\"p\":1}"}),
        json!({"type": "response.output_item.done", "output_index": 2,
               "item": call("c1", "ls", "{\"p\":1}")}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": call("c2", "rm", "")}),
        json!({"type": "response.function_call_arguments.done", "output_index": 3,
               "item_id": "fc_c2", "arguments": "{}"}),
        json!({"type": "response.output_item.done", "output_index": 3, "item": call("c2", "rm", "{}")}),
        json!({"type": "response.completed", "response": done}),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e["sequence_number"] = i.into();
            e
        })
        .collect()
}

fn wire(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .flat_map(|e| sse::named(e["type"].as_str().unwrap(), e).to_vec())
        .collect()
}

/// Feeds `bytes` in pieces of `size`; the assembler and the text it
/// returned.
fn assemble(bytes: &[u8], size: usize) -> Result<(ResponsesAssembler, String), String> {
    let mut parser = SseParser::default();
    let mut a = ResponsesAssembler::default();
    let mut text = String::new();
    for piece in bytes.chunks(size) {
        for event in parser.feed(piece)? {
            text.push_str(&a.add(&event)?);
        }
    }
    Ok((a, text))
}

fn event(v: Value) -> SseEvent {
    SseEvent {
        name: v["type"].as_str().map(str::to_owned),
        data: v.to_string(),
    }
}

#[test]
fn a_stream_split_anywhere_assembles_to_its_final_response() {
    let bytes = wire(&upstream_events());
    let whole = upstream_events().last().unwrap()["response"].clone();
    for size in 1..=bytes.len().min(400) {
        let (a, text) = assemble(&bytes, size).unwrap();
        assert_eq!(text, "Hello", "split every {size} bytes");
        assert!(a.is_done());
        assert_eq!(a.finish().unwrap().to_value(), whole);
        assert_eq!(
            a.assembled_items(),
            whole["output"].as_array().unwrap().clone()
        );
    }
    let (a, _) = assemble(&bytes, bytes.len()).unwrap();
    let answer = a.finish().unwrap().answer().unwrap();
    assert_eq!(answer.content, json!("Hello"));
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall::new("c1", "ls", json!({"p": 1})),
            ToolCall::new("c2", "rm", json!({}))
        ]
    );
}

#[test]
fn without_a_final_output_the_items_are_the_answer() {
    let mut events = upstream_events();
    let last = events.last_mut().unwrap();
    last["response"]["output"] = json!([]);
    last["type"] = "response.incomplete".into();
    last["response"]["status"] = "incomplete".into();
    last["response"]["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let (a, _) = assemble(&wire(&events), 7).unwrap();
    let r = a.finish().unwrap();
    assert_eq!(r.output().len(), 4);
    assert_eq!(r.output()[2], call("c1", "ls", "{\"p\":1}"));
    assert_eq!(r.answer().unwrap().finish_reason, "tool_calls");
}

#[test]
fn broken_streams_are_errors() {
    let events = upstream_events();
    let (a, _) = assemble(&wire(&events[..events.len() - 1]), 64).unwrap();
    assert!(!a.is_done());
    assert!(
        a.finish()
            .unwrap_err()
            .contains("before response.completed")
    );

    let mut a = ResponsesAssembler::default();
    let failed = a.add(&event(json!({"type": "error", "code": "server_error",
                                     "message": "overloaded", "sequence_number": 3})));
    assert!(failed.unwrap_err().contains("overloaded"));
    let early = json!({"type": "response.output_text.delta", "output_index": 0,
                       "content_index": 0, "delta": "x"});
    assert!(
        a.add(&event(early))
            .unwrap_err()
            .contains("before it was added")
    );
    let far = json!({"type": "response.output_item.added", "output_index": MAX_OUTPUT_ITEMS,
                     "item": reasoning()});
    assert!(a.add(&event(far)).is_err());
    assert!(
        a.add(&SseEvent {
            name: None,
            data: "{".into()
        })
        .is_err()
    );
    assert!(
        a.add(&SseEvent {
            name: None,
            data: "{}".into()
        })
        .is_err()
    );
    let no_item = json!({"type": "response.output_item.added", "output_index": 0});
    assert!(a.add(&event(no_item)).is_err());
    for i in 0..crate::bounds::MAX_TOOL_CALLS {
        let added = json!({"type": "response.output_item.added", "output_index": i,
                           "item": call(&format!("c{i}"), "f", "")});
        a.add(&event(added)).unwrap();
    }
    let one_more = json!({"type": "response.output_item.added",
                          "output_index": crate::bounds::MAX_TOOL_CALLS, "item": call("x", "f", "")});
    assert!(
        a.add(&event(one_more))
            .unwrap_err()
            .contains("function calls")
    );
}

/// Reads a written stream back: its events in order (sequence numbers
/// checked) and the assembler over them.
fn read_back(written: &[Bytes]) -> (Vec<Value>, ResponsesAssembler) {
    let bytes: Vec<u8> = written.iter().flat_map(|b| b.to_vec()).collect();
    let mut parser = SseParser::default();
    let events = parser.feed(&bytes).unwrap();
    let mut a = ResponsesAssembler::default();
    let mut values = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let v = e.json().unwrap();
        assert_eq!(e.name.as_deref(), v["type"].as_str());
        assert_eq!(v["sequence_number"], i, "sequence numbers count up from 0");
        a.add(e).unwrap();
        values.push(v);
    }
    (values, a)
}

fn settled(text: &str, calls: Vec<ToolCall>, finish: Finish) -> Settled {
    Settled {
        text: text.into(),
        tool_calls: calls,
        finish,
        rewritten: false,
    }
}

#[test]
fn a_replayed_answer_reassembles_to_the_settled_response() {
    let (seen, _) = assemble(&wire(&upstream_events()), 4096).unwrap();
    let cases = [
        settled(
            "Hello",
            vec![ToolCall::new("c1", "ls", json!({"p": 2}))],
            Finish::ToolCalls,
        ),
        settled(
            "Hello\n[hookwire] tool call \"rm\" (c2) was blocked",
            vec![],
            Finish::Stop,
        ),
        settled(
            "[hookwire] the response was withheld: pii",
            vec![],
            Finish::Withheld,
        ),
        settled(
            "",
            vec![ToolCall::new("c2", "rm", json!({}))],
            Finish::ToolCalls,
        ),
    ];
    for s in cases {
        let expected = seen.finish().unwrap().settle(&s);
        let (events, again) = read_back(&ResponsesWriter::replay(&seen, &s));
        assert!(again.is_done());
        assert_eq!(again.finish().unwrap().to_value(), expected);
        assert_eq!(&Value::Array(again.assembled_items()), &expected["output"]);
        let end = events.last().unwrap();
        let want = if s.finish == Finish::Withheld {
            "response.incomplete"
        } else {
            "response.completed"
        };
        assert_eq!(end["type"], want);
        assert_eq!(events[0]["type"], "response.created");
        assert_eq!(events[0]["response"]["id"], "resp_s");
        assert_eq!(events[0]["response"]["status"], "in_progress");
        if s.drops_copies() {
            assert!(
                events.iter().all(|e| e["item"]["type"] != "reasoning"),
                "no reasoning repeats a withheld or rewritten answer"
            );
        } else {
            assert_eq!(
                events[2]["item"]["type"], "reasoning",
                "the leading item comes first"
            );
        }
        let text: String = events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(text, s.text);
    }
}

#[test]
fn a_writer_made_at_the_first_text_streams_then_settles_the_same() {
    let events = upstream_events();
    // The core makes the writer when the first text is released: the
    // upstream has sent everything up to the first delta.
    let (early, _) = assemble(&wire(&events[..8]), 4096).unwrap();
    let mut w = ResponsesWriter::new(&early);
    let mut out = w.opening();
    out.push(w.text("Hel"));
    out.push(w.text("lo"));
    let (seen, _) = assemble(&wire(&events), 4096).unwrap();
    let s = settled("Hello\n[hookwire] blocked", vec![], Finish::Stop);
    out.extend(w.closing(&seen, &s));
    let (written, again) = read_back(&out);
    assert_eq!(
        again.finish().unwrap().to_value(),
        seen.finish().unwrap().settle(&s)
    );
    let deltas: Vec<&str> = written
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hel", "lo", "\n[hookwire] blocked"]);
    assert!(
        written
            .iter()
            .all(|e| e["type"] != "response.function_call_arguments.delta")
    );
}

#[test]
fn an_error_event_is_numbered_after_what_was_written() {
    let (seen, _) = assemble(&wire(&upstream_events()), 4096).unwrap();
    let mut w = ResponsesWriter::new(&seen);
    let opened = w.opening();
    let err = crate::error::Error::Upstream("connection reset".into());
    let bytes = w.error_at(&err);
    let e = SseParser::default().feed(&bytes).unwrap().remove(0);
    assert_eq!(e.name.as_deref(), Some("error"));
    let v = e.json().unwrap();
    assert_eq!(v["sequence_number"], opened.len());
    assert_eq!(v["code"], "upstream_unavailable");
    assert!(v["message"].as_str().unwrap().contains("connection reset"));
    let fresh = ResponsesWriter::error(&err);
    assert!(String::from_utf8_lossy(&fresh).starts_with("event: error\ndata: "));
}

#[test]
fn a_stream_of_bare_items_replays_in_its_order_and_status() {
    // Items only added, a final response with no output and no status:
    // what an upstream that skips the done events sends.
    let web = json!({"type": "web_search_call", "id": "ws_b", "status": "completed"});
    let mut end = created();
    end.as_object_mut().unwrap().remove("status");
    end["output"] = json!([]);
    let events = vec![
        json!({"type": "response.created", "response": created()}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": web}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": message("", "in_progress")}),
        json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0,
               "delta": "Hi"}),
        json!({"type": "response.failed", "response": end}),
    ];
    let (seen, text) = assemble(&wire(&events), 5).unwrap();
    assert_eq!(text, "Hi");
    let whole = seen.finish().unwrap();
    assert_eq!(whole.to_value()["status"], "failed");
    let answer = whole.answer().unwrap();
    assert_eq!(answer.finish_reason, "failed");
    let s = settled("Hi", vec![], Finish::Upstream("failed".into()));
    let expected = whole.settle(&s);
    assert_eq!(expected["output"][0], web);
    assert_eq!(expected["output"][1]["status"], "completed");
    let (written, again) = read_back(&ResponsesWriter::replay(&seen, &s));
    assert_eq!(again.finish().unwrap().to_value(), expected);
    assert_eq!(written.last().unwrap()["type"], "response.failed");
}

#[test]
fn a_custom_tool_call_streams_its_input_and_replays_governed() {
    let patch = json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "cp",
                       "name": "apply_patch", "input": "+a"});
    let mut end = created();
    end["status"] = "completed".into();
    end["output"] = json!([patch]);
    let mut opening = patch.clone();
    opening["input"] = "".into();
    let events = vec![
        json!({"type": "response.created", "response": created()}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": opening}),
        json!({"type": "response.custom_tool_call_input.delta", "output_index": 0,
               "item_id": "ctc_1", "delta": "+"}),
        json!({"type": "response.custom_tool_call_input.delta", "output_index": 0,
               "item_id": "ctc_1", "delta": "a"}),
        json!({"type": "response.custom_tool_call_input.done", "output_index": 0,
               "item_id": "ctc_1", "input": "+a"}),
        json!({"type": "response.completed", "response": end}),
    ];
    let (seen, _) = assemble(&wire(&events), 3).unwrap();
    assert_eq!(Value::Array(seen.assembled_items()), json!([patch]));
    let whole = seen.finish().unwrap();
    let answer = whole.answer().unwrap();
    assert_eq!(
        answer.tool_calls,
        [ToolCall::new("cp", "apply_patch", json!({"input": "+a"}))]
    );
    assert_eq!(answer.finish_reason, "tool_calls");
    let s = settled(
        "",
        vec![ToolCall::new("cp", "apply_patch", json!({"input": "+b"}))],
        Finish::ToolCalls,
    );
    let expected = whole.settle(&s);
    assert_eq!(expected["output"][0]["input"], "+b");
    assert!(expected["output"][0].get("arguments").is_none());
    let (written, again) = read_back(&ResponsesWriter::replay(&seen, &s));
    assert_eq!(again.finish().unwrap().to_value(), expected);
    assert_eq!(&Value::Array(again.assembled_items()), &expected["output"]);
    assert!(
        written
            .iter()
            .any(|e| e["type"] == "response.custom_tool_call_input.done")
    );
}
