//! Request decoding, the entry split, rewrites and overrides.

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use crate::api::messages::blocks::MAX_BLOCKS;
use crate::api::messages::request::MAX_TOOLS;
use crate::api::messages::{Messages, MessagesRequest};
use crate::api::model::{Api, ApiRequest, Entry, Rewrite, Text};
use crate::bounds::MAX_MESSAGES;
use crate::error::Error;
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};

fn decode(body: &Value) -> Result<MessagesRequest, Error> {
    Messages::decode_request(body.to_string().as_bytes())
}

fn text(t: &str, others: &[&str]) -> Text {
    Text {
        text: t.into(),
        other_parts: others.iter().map(|s| s.to_string()).collect(),
    }
}

fn refusal(body: &Value) -> String {
    match decode(body) {
        Err(Error::BadRequest(m)) => m,
        other => panic!("expected a bad request, got {other:?}"),
    }
}

fn base(messages: Value) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages})
}

#[test]
fn strings_decode_to_instructions_then_user() {
    let mut body = base(json!([{"role": "user", "content": "Hello"}]));
    body["system"] = json!("Be brief.");
    body["stream"] = json!(true);
    let req = decode(&body).unwrap();
    let view = req.view();
    assert_eq!(view.model, "claude-sonnet-4-5");
    assert!(view.stream);
    assert_eq!(view.continues, None);
    assert_eq!(
        view.entries,
        [
            Entry::Instructions(text("Be brief.", &[])),
            Entry::User(text("Hello", &[])),
        ]
    );
}

#[test]
fn system_blocks_are_one_instructions_entry() {
    let mut body = base(json!([{"role": "user", "content": "Hi"}]));
    body["system"] = json!([
        {"type": "text", "text": "You are "},
        {"type": "text", "text": "careful.", "cache_control": {"type": "ephemeral"}},
    ]);
    let req = decode(&body).unwrap();
    assert_eq!(
        req.view().entries[0],
        Entry::Instructions(text("You are careful.", &[]))
    );
}

/// Claude Code sends more instructions as a `system` entry inside
/// `messages` (the API accepts it): governed as instructions where it
/// stands, and a rewrite lands in it.
#[test]
fn a_system_message_is_instructions_where_it_stands() {
    let mut body = base(json!([
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Mind the repo: sk-secret-1"},
        {"role": "assistant", "content": "Ok."},
        {"role": "system", "content": [
            {"type": "text", "text": "Be ", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "careful."}]},
        {"role": "user", "content": "Go"},
    ]));
    body["system"] = json!("You are Claude Code.");
    let mut req = decode(&body).unwrap();
    assert_eq!(
        req.view().entries,
        [
            Entry::Instructions(text("You are Claude Code.", &[])),
            Entry::User(text("Hi", &[])),
            Entry::Instructions(text("Mind the repo: sk-secret-1", &[])),
            Entry::Assistant {
                text: text("Ok.", &[]),
                tool_calls: Vec::new()
            },
            Entry::Instructions(text("Be careful.", &[])),
            Entry::User(text("Go", &[])),
        ]
    );
    req.rewrite(2, Rewrite::Text("Mind the repo: [KEY]".into()))
        .unwrap();
    req.rewrite(4, Rewrite::Text("Be kind.".into())).unwrap();
    let out = req.into_body();
    assert_eq!(out["messages"][1]["content"], "Mind the repo: [KEY]");
    assert_eq!(
        out["messages"][3]["content"],
        json!([{"type": "text", "text": "Be kind.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(out["system"], "You are Claude Code.");
}

#[test]
fn a_mixed_user_message_is_its_tool_results_then_its_text() {
    let body = base(json!([
        {"role": "user", "content": "List the files"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should list.", "signature": "sig"},
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
            {"type": "tool_use", "id": "toolu_2", "name": "cat", "input": {"path": "a"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
             "content": [{"type": "text", "text": "no such file"}]},
            {"type": "text", "text": "Now "},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
            {"type": "text", "text": "explain."},
        ]},
    ]));
    let req = decode(&body).unwrap();
    assert_eq!(
        req.view().entries,
        [
            Entry::User(text("List the files", &[])),
            Entry::Assistant {
                text: text("Listing.", &["thinking"]),
                tool_calls: vec![
                    ToolCall::new("toolu_1", "ls", json!({"path": "."})),
                    ToolCall::new("toolu_2", "cat", json!({"path": "a"})),
                ],
            },
            Entry::Other("server_tool_use".into()),
            Entry::Other("web_search_tool_result".into()),
            Entry::ToolResult {
                call_id: "toolu_1".into(),
                result: json!("a b"),
                is_error: false,
            },
            Entry::ToolResult {
                call_id: "toolu_2".into(),
                result: json!([{"type": "text", "text": "no such file"}]),
                is_error: true,
            },
            Entry::User(text("Now explain.", &["image"])),
        ]
    );
}

#[test]
fn a_user_message_of_tool_results_only_has_no_user_entry() {
    let body = base(json!([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1"},
    ]}]));
    let req = decode(&body).unwrap();
    assert_eq!(
        req.view().entries,
        [Entry::ToolResult {
            call_id: "toolu_1".into(),
            result: json!(""),
            is_error: false
        }]
    );
}

#[test]
fn only_the_tools_the_client_runs_are_registered() {
    let mut body = base(json!([{"role": "user", "content": "Hi"}]));
    body["tools"] = json!([
        {"name": "get_weather", "description": "d", "input_schema": {"type": "object"}},
        {"type": "custom", "name": "add", "input_schema": {"type": "object"}},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"name": "add", "input_schema": {"type": "object"}},
    ]);
    let req = decode(&body).unwrap();
    assert_eq!(req.view().tools, ["add", "bash", "get_weather"]);
}

#[test]
fn malformed_and_unbounded_requests_are_refused_with_a_reason() {
    let user = json!({"role": "user", "content": "Hi"});
    let ok = base(json!([user]));
    let with = |key: &str, v: Value| {
        let mut b = ok.clone();
        b[key] = v;
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!([1]), "JSON object"),
        (with("model", json!(3)), "model"),
        (
            json!({"model": "m", "messages": [user.clone()]}),
            "max_tokens is required",
        ),
        (with("max_tokens", json!(0)), "max_tokens"),
        (with("stream", json!("yes")), "stream must be a boolean"),
        (with("messages", json!([])), "must not be empty"),
        (
            with(
                "messages",
                Value::Array(vec![user.clone(); MAX_MESSAGES + 1]),
            ),
            "more than 4096 messages",
        ),
        (
            with("messages", json!([{"role": "tool", "content": "x"}])),
            "role must be",
        ),
        (
            with(
                "messages",
                json!([user.clone(), {"role": "system", "content": [
                    {"type": "image", "source": {"type": "url", "url": "http://x"}}]}]),
            ),
            "messages[1].content of a system message must be a string or an array of text blocks",
        ),
        (
            with("messages", json!([{"role": "user", "content": 5}])),
            "messages[0].content must be a string",
        ),
        (
            with("messages", json!([{"role": "user", "content": []}])),
            "must not be empty",
        ),
        (
            with(
                "messages",
                json!([{"role": "user", "content": vec![json!({"type": "text", "text": "a"}); MAX_BLOCKS + 1]}]),
            ),
            "more than 1024 blocks",
        ),
        (
            with(
                "messages",
                json!([{"role": "user", "content": [{"text": "a"}]}]),
            ),
            "messages[0].content[0] is not a block with a type",
        ),
        (
            with(
                "messages",
                json!([{"role": "user", "content": [{"type": "text"}]}]),
            ),
            "text block without text",
        ),
        (
            with(
                "messages",
                json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": "x"}]}]),
            ),
            "messages[0].content[0].input must be an object",
        ),
        (
            with(
                "messages",
                json!([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]),
            ),
            "tool_use_id",
        ),
        (
            with(
                "messages",
                json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "no"}]}]),
            ),
            "is_error must be a boolean",
        ),
        (with("system", json!([{"type": "image"}])), "system must be"),
        (with("tools", json!({})), "tools must be an array"),
        (
            with(
                "tools",
                Value::Array(vec![json!({"name": "t"}); MAX_TOOLS + 1]),
            ),
            "more than 1024 tools",
        ),
        (
            with("tools", json!([{"description": "x"}])),
            "tools[0].name",
        ),
    ];
    for (body, expected) in cases {
        let message = refusal(&body);
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }
}

#[test]
fn text_rewrites_keep_the_content_shape() {
    let mut body = base(json!([
        {"role": "user", "content": "my email is a@b.c"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            {"type": "text", "text": "call ", "cache_control": {"type": "ephemeral"},
             "citations": [{"type": "char_location"}]},
            {"type": "document", "source": {"type": "text", "data": "d"}},
            {"type": "text", "text": "555-0100"},
        ]},
    ]));
    body["system"] = json!([{"type": "text", "text": "secret 1"}, {"type": "text", "text": "2"}]);
    let mut req = decode(&body).unwrap();
    req.rewrite(0, Rewrite::Text("[system]".into())).unwrap();
    req.rewrite(1, Rewrite::Text("my email is [email]".into()))
        .unwrap();
    req.rewrite(3, Rewrite::Text("call [phone]".into()))
        .unwrap();
    assert_eq!(
        req.view().entries[3],
        Entry::User(text("call [phone]", &["image", "document"]))
    );
    let body = req.into_body();
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "[system]"}])
    );
    assert_eq!(body["messages"][0]["content"], "my email is [email]");
    assert_eq!(
        body["messages"][2]["content"],
        json!([
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            {"type": "text", "text": "call [phone]", "cache_control": {"type": "ephemeral"}},
            {"type": "document", "source": {"type": "text", "data": "d"}},
        ])
    );
}

#[test]
fn an_emptied_text_leaves_the_other_blocks_alone() {
    let body = base(json!([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
        {"type": "text", "text": "secret"},
        {"type": "image", "source": {"type": "url", "url": "https://x"}},
    ]}]));
    let mut req = decode(&body).unwrap();
    req.rewrite(1, Rewrite::Text(String::new())).unwrap();
    let body = req.into_body();
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
            {"type": "image", "source": {"type": "url", "url": "https://x"}},
        ])
    );
}

#[test]
fn a_text_is_added_to_a_message_without_one() {
    let body = base(json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://x"}},
    ]}]));
    let mut req = decode(&body).unwrap();
    req.rewrite(0, Rewrite::Text("[note]".into())).unwrap();
    assert_eq!(
        req.into_body()["messages"][0]["content"][1],
        json!({"type": "text", "text": "[note]"})
    );
}

#[test]
fn tool_result_rewrites_replace_the_content_and_set_is_error() {
    let body = base(json!([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "rm -rf"}],
         "cache_control": {"type": "ephemeral"}},
        {"type": "tool_result", "tool_use_id": "t2", "content": "fine", "is_error": true},
        {"type": "text", "text": "go on"},
    ]}]));
    let mut req = decode(&body).unwrap();
    let blocked = r#"{"error":"blocked"}"#;
    req.rewrite(
        0,
        Rewrite::ToolResult {
            text: blocked.into(),
            is_error: true,
        },
    )
    .unwrap();
    req.rewrite(
        1,
        Rewrite::ToolResult {
            text: "fine, redacted".into(),
            is_error: false,
        },
    )
    .unwrap();
    assert_eq!(
        req.view().entries[0],
        Entry::ToolResult {
            call_id: "t1".into(),
            result: json!(blocked),
            is_error: true
        }
    );
    let body = req.into_body();
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "t1", "content": blocked, "is_error": true,
             "cache_control": {"type": "ephemeral"}},
            {"type": "tool_result", "tool_use_id": "t2", "content": "fine, redacted", "is_error": false},
            {"type": "text", "text": "go on"},
        ])
    );
}

#[test]
fn a_rewrite_of_the_wrong_kind_or_place_is_refused() {
    let body = base(json!([
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
        ]},
    ]));
    let mut req = decode(&body).unwrap();
    assert!(req.rewrite(0, Rewrite::Text("x".into())).is_err());
    let result = Rewrite::ToolResult {
        text: "x".into(),
        is_error: false,
    };
    assert!(req.rewrite(1, result.clone()).is_err());
    assert!(req.rewrite(2, Rewrite::Text("x".into())).is_err());
    assert!(req.rewrite(9, result).is_err());
    assert_eq!(req.into_body(), decode(&body).unwrap().into_body());
}

fn overrides(mode: Option<SystemPromptMode>) -> ModelOverrides {
    let by = |v| SetBy {
        value: v,
        by: "b".into(),
    };
    ModelOverrides {
        temperature: Some(by(0.5)),
        top_p: Some(SetBy {
            value: 0.9,
            by: "b".into(),
        }),
        max_tokens: Some(SetBy {
            value: 256,
            by: "b".into(),
        }),
        model: Some(SetBy {
            value: "claude-haiku-4-5".into(),
            by: "b".into(),
        }),
        system_prompt: mode.map(|m| SetBy {
            value: (m, "Policy.".into()),
            by: "b".into(),
        }),
    }
}

#[test]
fn overrides_set_the_sampling_and_the_system_prompt() {
    let user = json!([{"role": "user", "content": "Hi"}]);
    let with_system = |system: Option<Value>| {
        let mut b = base(user.clone());
        b["metadata"] = json!({"user_id": "u1"});
        b["stop_sequences"] = json!(["END"]);
        b["tool_choice"] = json!({"type": "auto"});
        if let Some(s) = system {
            b["system"] = s;
        }
        decode(&b).unwrap()
    };
    let cases = [
        (None, Some(SystemPromptMode::Prepend), json!("Policy.")),
        (None, Some(SystemPromptMode::Replace), json!("Policy.")),
        (
            Some(json!("Be brief.")),
            Some(SystemPromptMode::Prepend),
            json!("Policy.\n\nBe brief."),
        ),
        (
            Some(json!("Be brief.")),
            Some(SystemPromptMode::Replace),
            json!("Policy."),
        ),
        (
            Some(
                json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]),
            ),
            Some(SystemPromptMode::Prepend),
            json!([
                {"type": "text", "text": "Policy."},
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
            ]),
        ),
        (
            Some(json!([{"type": "text", "text": "Be brief."}])),
            Some(SystemPromptMode::Replace),
            json!("Policy."),
        ),
        (Some(json!("Kept.")), None, json!("Kept.")),
    ];
    for (system, mode, expected) in cases {
        let mut req = with_system(system);
        req.apply_overrides(&overrides(mode));
        assert_eq!(req.view().model, "claude-haiku-4-5");
        let body = req.into_body();
        assert_eq!(body["system"], expected);
        assert_eq!(body["model"], "claude-haiku-4-5");
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(body["metadata"], json!({"user_id": "u1"}));
        assert_eq!(body["stop_sequences"], json!(["END"]));
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }
}

#[test]
fn an_untouched_request_goes_upstream_as_sent() {
    let mut body = base(json!([{"role": "user", "content": "Hi"}]));
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    let req = decode(&body).unwrap();
    assert_eq!(Value::Object(req.into_body()), body);
}
