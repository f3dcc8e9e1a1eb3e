//! `hook_payload_{claude,gemini,cursor,copilot}`: bytes → one coding
//! agent's hook payload decoding (`hookwire_hooks::Agent::decode`; the
//! Claude target decodes as Claude Code and as Codex, which share the
//! format) and the encoding of each outcome in the agent's output format.
//!
//! Input: a hook payload. Properties: decoding never panics; only the
//! governed events decode (any other fails closed); every outcome
//! encodes to a JSON object; a block, an ask, a stop and a rewrite never
//! encode as the agent's "proceed" at that event, except where the agent
//! reads no answer at all (Copilot's prompt, tool result and session
//! events), which the core enforces by quarantine instead; a proceed
//! always encodes as it; the fail-closed answer blocks in the agent's
//! terms.

use hookwire_hooks::{Agent, Event, Outcome};
use serde_json::{Value, json};

/// The only events a payload of `agent` may decode as.
fn governed(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::ClaudeCode | Agent::Codex => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd",
        ],
        Agent::GeminiCli => &[
            "SessionStart",
            "BeforeAgent",
            "BeforeModel",
            "AfterModel",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "SessionEnd",
        ],
        Agent::Cursor => &[
            "sessionStart",
            "beforeSubmitPrompt",
            "preToolUse",
            "beforeShellExecution",
            "beforeMCPExecution",
            "beforeReadFile",
            "postToolUse",
            "stop",
            "sessionEnd",
        ],
        Agent::Copilot => &[
            "sessionStart",
            "userPromptSubmitted",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "agentStop",
            "sessionEnd",
        ],
    }
}

/// The agent's "proceed" at `event`.
fn proceed(agent: Agent, event: &Event) -> Value {
    match (agent, event) {
        (Agent::Cursor, Event::Prompt { .. }) => json!({"continue": true}),
        _ => json!({}),
    }
}

/// Whether the agent reads an answer to `event` at all.
fn answered(agent: Agent, event: &Event) -> bool {
    let caps = agent.capabilities();
    match event {
        Event::Prompt { .. } => caps.block_prompt,
        Event::PostTool { .. } => caps.block_post_tool,
        Event::SessionStart { .. } | Event::SessionEnd => agent != Agent::Copilot,
        _ => true,
    }
}

/// Whether `out` blocks in `agent`'s terms whatever the event.
fn blocks_everything(agent: Agent, out: &Value) -> bool {
    match agent {
        Agent::Cursor => out["permission"] == "deny" && out["continue"] == false,
        Agent::Copilot => out["permissionDecision"] == "deny" && out["decision"] == "block",
        _ => out["continue"] == false,
    }
}

/// One fuzz input, decoded as each of `agents`.
pub fn run(agents: &[Agent], data: &[u8]) {
    for &agent in agents {
        let stopped = agent.fail_closed("hookwire: fuzz");
        assert!(blocks_everything(agent, &stopped), "{stopped}");
        let Ok(call) = agent.decode(data) else {
            continue;
        };
        assert!(
            governed(agent).contains(&call.event_name.as_str()),
            "{}",
            call.event_name
        );
        let reason = "hookwire: denied".to_owned();
        let outcomes = [
            Outcome::Block {
                reason: reason.clone(),
            },
            Outcome::Ask {
                reason: reason.clone(),
            },
            Outcome::Stop { reason },
            Outcome::Rewrite(json!({"command": "true"})),
        ];
        let proceeds = proceed(agent, &call.event);
        for outcome in &outcomes {
            let out = agent.encode(&call.event, outcome);
            assert!(out.is_object(), "{out}");
            if answered(agent, &call.event) {
                assert_ne!(
                    out, proceeds,
                    "{outcome:?} at {:?} encodes as proceed",
                    call.event
                );
            }
        }
        assert_eq!(agent.encode(&call.event, &Outcome::Proceed), proceeds);
    }
}

/// The seed inputs of one agent: its golden payloads in
/// `tests/fixtures/hooks/DIR/` for each of `dirs`.
pub fn seeds(dirs: &[&str]) -> Vec<Vec<u8>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/hooks");
    let mut seeds: Vec<Vec<u8>> = dirs
        .iter()
        .filter_map(|dir| std::fs::read_dir(format!("{root}/{dir}")).ok())
        .flat_map(|entries| entries.filter_map(Result::ok))
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .collect();
    seeds.sort();
    seeds
}

/// Each hook payload target: its name, the agents it decodes as, the
/// fixture directories its seeds come from.
pub const TARGETS: [(&str, &[Agent], &[&str]); 4] = [
    (
        "hook_payload_claude",
        &[Agent::ClaudeCode, Agent::Codex],
        &["claude-code", "codex"],
    ),
    ("hook_payload_gemini", &[Agent::GeminiCli], &["gemini-cli"]),
    ("hook_payload_cursor", &[Agent::Cursor], &["cursor"]),
    ("hook_payload_copilot", &[Agent::Copilot], &["copilot"]),
];
