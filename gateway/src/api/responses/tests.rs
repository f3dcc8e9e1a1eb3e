//! Requests: every input form, the rewrites, the overrides, the answers
//! to withheld calls, and the bounds.

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use super::check::MAX_ID;
use super::items::MAX_PARTS;
use super::tools::MAX_TOOLS;
use super::*;
use crate::api::model::{ApiRequest, Entry, Rewrite, Text};
use crate::bounds::MAX_MESSAGES;
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};

fn request(v: Value) -> Result<ResponsesRequest, Error> {
    Responses::decode_request(v.to_string().as_bytes())
}

fn text(t: &str) -> Text {
    Text {
        text: t.into(),
        other_parts: Vec::new(),
    }
}

fn refused(v: Value, needle: &str) {
    match request(v) {
        Err(Error::BadRequest(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
        other => panic!("expected a refusal naming {needle:?}, got {other:?}"),
    }
}

/// What the OpenAI Agents SDK sends on its second turn, with the other
/// item kinds a client replays.
fn agents_turn() -> Value {
    json!({
        "model": "gpt-4.1",
        "instructions": "You are terse.",
        "input": [
            {"role": "user", "content": "What is in /tmp?"},
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "Use tools."}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
             "arguments": "{\"path\":\"/tmp\"}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "function_call_output", "call_id": "call_2",
             "output": [{"type": "input_text", "text": "b"}, {"type": "input_image", "file_id": "f"}]},
            {"type": "item_reference", "id": "ws_1"},
            {"id": "rs_2"},
            {"type": "web_search_call", "id": "ws_2", "status": "completed"},
            {"role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                {"type": "input_text", "text": "and "},
                {"type": "input_text", "text": "this?"},
                {"type": "input_file", "file_id": "file_1"}]}
        ],
        "tools": [
            {"type": "function", "name": "ls", "parameters": {"type": "object"}, "strict": true},
            {"type": "web_search_preview"},
            {"type": "function", "name": "cat", "parameters": {}},
            {"type": "file_search", "vector_store_ids": ["vs_1"]},
            {"type": "function", "name": "ls", "parameters": {}}
        ],
        "stream": false,
        "store": true,
        "include": ["reasoning.encrypted_content"]
    })
}

#[test]
fn a_string_input_is_one_user_entry_after_the_instructions() {
    let r = request(
        json!({"model": "gpt-4o", "input": "hi", "instructions": "be brief",
                           "stream": true, "previous_response_id": "resp_1"}),
    )
    .unwrap();
    let view = r.view();
    assert_eq!(view.model, "gpt-4o");
    assert!(view.stream);
    assert_eq!(view.continues.as_deref(), Some("resp_1"));
    assert_eq!(
        view.entries,
        [
            Entry::Instructions(text("be brief")),
            Entry::User(text("hi"))
        ]
    );
    let none = request(json!({"model": "m", "previous_response_id": null})).unwrap();
    assert!(none.view().entries.is_empty() && none.view().continues.is_none());
}

#[test]
fn every_item_form_is_read_in_order() {
    let r = request(agents_turn()).unwrap();
    let view = r.view();
    assert_eq!(view.tools, ["cat", "ls"]);
    assert!(!view.stream);
    assert_eq!(
        view.entries,
        [
            Entry::Instructions(text("You are terse.")),
            Entry::User(text("What is in /tmp?")),
            Entry::Instructions(text("Use tools.")),
            Entry::Other("reasoning".into()),
            Entry::Assistant {
                text: text("Let me look."),
                tool_calls: vec![]
            },
            Entry::Assistant {
                text: Text::default(),
                tool_calls: vec![ToolCall::new("call_1", "ls", json!({"path": "/tmp"}))]
            },
            Entry::ToolResult {
                call_id: "call_1".into(),
                result: json!("a.txt"),
                is_error: false
            },
            Entry::ToolResult {
                call_id: "call_2".into(),
                result: json!([{"type": "input_text", "text": "b"},
                               {"type": "input_image", "file_id": "f"}]),
                is_error: false
            },
            Entry::Other("item_reference".into()),
            Entry::Other("item_reference".into()),
            Entry::Other("web_search_call".into()),
            Entry::User(Text {
                text: "and this?".into(),
                other_parts: vec!["input_image".into(), "input_file".into()]
            }),
        ]
    );
}

#[test]
fn arguments_that_are_not_json_stay_text() {
    let r = request(json!({"model": "m", "input": [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "not json"}]}))
    .unwrap();
    let Entry::Assistant { tool_calls, .. } = &r.view().entries[0] else {
        panic!("not an assistant entry")
    };
    assert_eq!(tool_calls[0].args, json!("not json"));
}

#[test]
fn malformed_and_unbounded_requests_are_refused() {
    refused(json!([1]), "not a JSON object");
    refused(json!({"input": "x"}), "model");
    refused(json!({"model": "m", "input": 3}), "input must be");
    refused(json!({"model": "m", "stream": "yes"}), "stream");
    refused(json!({"model": "m", "instructions": ["x"]}), "instructions");
    refused(json!({"model": "m", "background": true}), "background");
    refused(
        json!({"model": "m", "previous_response_id": "r".repeat(MAX_ID + 1)}),
        "previous_response_id",
    );
    let many: Vec<Value> = (0..=MAX_MESSAGES)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    refused(json!({"model": "m", "input": many}), "at most 4096");
    refused(json!({"model": "m", "input": [1]}), "not an object");
    refused(
        json!({"model": "m", "input": [{"content": "x"}]}),
        "neither a type nor a role",
    );
    refused(
        json!({"model": "m", "input": [{"type": "message", "content": "x"}]}),
        "needs a role",
    );
    refused(
        json!({"model": "m", "input": [{"role": "tool", "content": "x"}]}),
        "role must be",
    );
    refused(
        json!({"model": "m", "input": [{"role": "user", "content": 1}]}),
        "content must be",
    );
    refused(
        json!({"model": "m", "input": [{"role": "user", "content": [{"text": "x"}]}]}),
        "with a type",
    );
    refused(
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
        "text string",
    );
    let parts: Vec<Value> = (0..=MAX_PARTS)
        .map(|_| json!({"type": "input_text", "text": ""}))
        .collect();
    refused(
        json!({"model": "m", "input": [{"role": "user", "content": parts}]}),
        "content parts",
    );
    refused(
        json!({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
        "call_id",
    );
    refused(
        json!({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f",
                                        "arguments": {}}]}),
        "arguments must be a string",
    );
    refused(
        json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": 1}]}),
        "output must be",
    );
    refused(
        json!({"model": "m", "input": [{"type": 7}]}),
        "type must be a string",
    );
    refused(json!({"model": "m", "tools": {}}), "tools must be an array");
    refused(
        json!({"model": "m", "tools": [{"name": "f"}]}),
        "has no type",
    );
    refused(
        json!({"model": "m", "tools": [{"type": "function"}]}),
        "has no name",
    );
    for client_run in [
        "computer_use_preview",
        "local_shell",
        "shell",
        "apply_patch",
    ] {
        refused(
            json!({"model": "m", "tools": [{"type": client_run, "name": "x"}]}),
            "not governed",
        );
    }
    let tools: Vec<Value> = (0..=MAX_TOOLS)
        .map(|i| json!({"type": "function", "name": format!("f{i}")}))
        .collect();
    refused(json!({"model": "m", "tools": tools}), "at most 512 tools");
}

#[test]
fn rewrites_go_back_where_the_text_was() {
    let mut r = request(agents_turn()).unwrap();
    r.rewrite(0, Rewrite::Text("Be terse.".into())).unwrap();
    r.rewrite(1, Rewrite::Text("What is in [PATH]?".into()))
        .unwrap();
    r.rewrite(2, Rewrite::Text("Use the tools.".into()))
        .unwrap();
    r.rewrite(4, Rewrite::Text("Looking.".into())).unwrap();
    r.rewrite(5, Rewrite::Text(String::new())).unwrap();
    let blocked = Rewrite::ToolResult {
        text: "{\"error\":\"blocked\"}".into(),
        is_error: true,
    };
    r.rewrite(6, blocked.clone()).unwrap();
    r.rewrite(
        7,
        Rewrite::ToolResult {
            text: "B".into(),
            is_error: false,
        },
    )
    .unwrap();
    r.rewrite(11, Rewrite::Text("and that?".into())).unwrap();
    assert_eq!(r.view().entries[1], Entry::User(text("What is in [PATH]?")));
    assert_eq!(
        r.view().entries[6],
        Entry::ToolResult {
            call_id: "call_1".into(),
            result: json!("{\"error\":\"blocked\"}"),
            is_error: true
        }
    );
    let body = r.into_body();
    assert_eq!(body["instructions"], "Be terse.");
    let input = &body["input"];
    assert_eq!(input[0]["content"], "What is in [PATH]?");
    assert_eq!(
        input[1]["content"],
        json!([{"type": "input_text", "text": "Use the tools."}])
    );
    assert_eq!(
        input[3]["content"],
        json!([{"type": "output_text", "text": "Looking.", "annotations": []}])
    );
    assert_eq!(input[4]["arguments"], "{\"path\":\"/tmp\"}");
    assert_eq!(input[5]["output"], "{\"error\":\"blocked\"}");
    assert_eq!(input[6]["output"], "B");
    assert_eq!(
        input[10]["content"],
        json!([{"type": "input_image", "image_url": "data:image/png;base64,AA"},
               {"type": "input_text", "text": "and that?"},
               {"type": "input_file", "file_id": "file_1"}])
    );
    assert_eq!(body["store"], true);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn a_string_input_stays_a_string_and_text_finds_a_place() {
    let mut r = request(json!({"model": "m", "input": "call 555-0100"})).unwrap();
    r.rewrite(0, Rewrite::Text("call [PHONE]".into())).unwrap();
    assert_eq!(r.into_body()["input"], "call [PHONE]");
    let mut r = request(json!({"model": "m", "input": [
        {"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]}))
    .unwrap();
    r.rewrite(0, Rewrite::Text("look".into())).unwrap();
    assert_eq!(
        r.into_body()["input"][0]["content"],
        json!([{"type": "input_text", "text": "look"}, {"type": "input_image", "file_id": "f"}])
    );
}

#[test]
fn a_rewrite_the_item_cannot_hold_is_refused() {
    let mut r = request(agents_turn()).unwrap();
    let result = Rewrite::ToolResult {
        text: "x".into(),
        is_error: false,
    };
    assert!(r.rewrite(1, result.clone()).is_err());
    assert!(r.rewrite(0, result).is_err());
    assert!(r.rewrite(5, Rewrite::Text("text".into())).is_err());
    assert!(r.rewrite(6, Rewrite::Text("text".into())).is_err());
    assert!(r.rewrite(3, Rewrite::Text("text".into())).is_err());
    assert!(r.rewrite(12, Rewrite::Text("text".into())).is_err());
    assert_eq!(r.view(), request(agents_turn()).unwrap().view());
}

fn set<T>(value: T) -> Option<SetBy<T>> {
    Some(SetBy {
        value,
        by: "b".into(),
    })
}

#[test]
fn overrides_are_written_in_responses_terms() {
    let mut r = request(agents_turn()).unwrap();
    r.apply_overrides(&ModelOverrides {
        temperature: set(0.2),
        top_p: set(0.9),
        max_tokens: set(256),
        model: set("gpt-4o-mini".to_owned()),
        system_prompt: set((SystemPromptMode::Prepend, "Be safe.".to_owned())),
    });
    let body = r.into_body();
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["max_output_tokens"], 256);
    assert!(!body.contains_key("max_tokens"));
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["instructions"], "Be safe.\n\nYou are terse.");

    let mut r = request(agents_turn()).unwrap();
    r.apply_overrides(&ModelOverrides {
        system_prompt: set((SystemPromptMode::Replace, "Only this.".to_owned())),
        ..ModelOverrides::default()
    });
    assert_eq!(r.into_body()["instructions"], "Only this.");
    let mut r = request(json!({"model": "m", "input": "x"})).unwrap();
    r.apply_overrides(&ModelOverrides {
        system_prompt: set((SystemPromptMode::Prepend, "First.".to_owned())),
        ..ModelOverrides::default()
    });
    assert_eq!(r.into_body()["instructions"], "First.");
}

#[test]
fn withheld_calls_are_answered_ahead_of_the_client_items() {
    let mut r = request(
        json!({"model": "m", "previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}),
    )
    .unwrap();
    let notice = "{\"error\":\"blocked\"}".to_owned();
    r.answer_withheld_calls(&[("c2".into(), notice.clone()), ("c1".into(), notice.clone())])
        .unwrap();
    assert_eq!(r.view().entries.len(), 1);
    let input = r.into_body()["input"].clone();
    assert_eq!(
        input,
        json!([{"type": "function_call_output", "call_id": "c2", "output": notice},
               {"type": "function_call_output", "call_id": "c1", "output": "ok"}])
    );
    let mut r = request(json!({"model": "m", "input": "next"})).unwrap();
    r.answer_withheld_calls(&[("c".into(), "no".into())])
        .unwrap();
    assert_eq!(
        r.into_body()["input"],
        json!([{"type": "function_call_output", "call_id": "c", "output": "no"},
               {"role": "user", "content": "next"}])
    );
}

#[test]
fn custom_tool_calls_are_tool_seams_with_a_text_input() {
    let mut r = request(json!({"model": "gpt-5", "tools": [
            {"type": "custom", "name": "apply_patch", "format": {"type": "text"}}],
        "input": [
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_p", "name": "apply_patch",
             "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done"}]}))
    .unwrap();
    assert_eq!(r.view().tools, ["apply_patch"]);
    assert_eq!(
        r.view().entries[0],
        Entry::Assistant {
            text: Text::default(),
            tool_calls: vec![ToolCall::new(
                "call_p",
                "apply_patch",
                json!({"input": "*** Begin Patch"})
            )]
        }
    );
    r.rewrite(
        1,
        Rewrite::ToolResult {
            text: "blocked".into(),
            is_error: true,
        },
    )
    .unwrap();
    assert_eq!(r.into_body()["input"][1]["output"], "blocked");
    refused(
        json!({"model": "m", "input": [{"type": "custom_tool_call", "call_id": "c", "name": "f"}]}),
        "input must be a string",
    );
}

/// The Codex CLI's tool list: function tools, a `namespace` grouping its
/// multi-agent tools, a hosted tool.
fn codex_tools() -> Value {
    json!([
        {"type": "function", "name": "exec_command", "strict": false,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
        {"type": "namespace", "name": "multi_agent_v1",
         "description": "Tools for spawning and managing sub-agents.",
         "tools": [
            {"type": "function", "name": "spawn_agent", "strict": false,
             "parameters": {"type": "object", "properties": {}}},
            {"type": "function", "name": "close_agent", "strict": false,
             "parameters": {"type": "object", "properties": {}}},
            {"type": "custom", "name": "note"}
         ]},
        {"type": "web_search", "external_web_access": true}
    ])
}

#[test]
fn a_namespace_tool_is_governed_as_the_tools_it_groups() {
    let r = request(json!({"model": "m", "input": "hi", "tools": codex_tools()})).unwrap();
    assert_eq!(
        r.view().tools,
        ["close_agent", "exec_command", "note", "spawn_agent"]
    );
    // The tools go upstream as sent.
    assert_eq!(r.into_body()["tools"], codex_tools());

    let with_member = |member: Value| {
        let mut tools = codex_tools();
        tools[1]["tools"].as_array_mut().unwrap().push(member);
        json!({"model": "m", "input": "hi", "tools": tools})
    };
    // Only function and custom tools inside a namespace.
    refused(
        with_member(json!({"type": "local_shell", "name": "sh"})),
        "member 3 of type \"local_shell\" is not governed",
    );
    refused(
        with_member(json!({"type": "namespace", "name": "n", "tools": []})),
        "is not governed",
    );
    refused(with_member(json!({"type": "function"})), "has no name");
    // A member named like another tool could not be told apart.
    refused(
        with_member(json!({"type": "function", "name": "exec_command"})),
        "\"exec_command\" is declared twice",
    );
    let mut twice = codex_tools();
    let copy = twice[1].clone();
    twice.as_array_mut().unwrap().push(copy);
    refused(
        json!({"model": "m", "input": "hi", "tools": twice}),
        "declared twice",
    );
    refused(
        json!({"model": "m", "input": "hi",
               "tools": [{"type": "namespace", "name": "n"}]}),
        "needs a tools array",
    );
    // Members count toward the bound.
    let members: Vec<Value> = (0..MAX_TOOLS)
        .map(|i| json!({"type": "function", "name": format!("f{i}")}))
        .collect();
    refused(
        json!({"model": "m", "input": "hi", "tools": [
            {"type": "function", "name": "g"},
            {"type": "namespace", "name": "n", "tools": members}]}),
        "at most 512 tools",
    );
}
