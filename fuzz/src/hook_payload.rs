//! `hook_payload`: bytes → every coding agent's hook payload decoding
//! (`hookwire_hooks::Agent::decode`) and the encoding of each outcome in
//! the agent's output format.
//!
//! Input: a hook payload. Properties: decoding never panics; only the
//! six governed events decode (any other fails closed); every outcome
//! encodes to a JSON object; a block, an ask and a stop never encode to
//! `{}` (the agent would read it as "proceed"); a proceed always does;
//! the fail-closed answer stops the agent.

use hookwire_hooks::{Agent, Outcome};
use serde_json::{Value, json};

/// The only events a payload of `agent` may decode as.
fn governed(agent: Agent) -> [&'static str; 6] {
    match agent {
        Agent::GeminiCli => [
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "SessionEnd",
        ],
        _ => [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd",
        ],
    }
}

/// One fuzz input.
pub fn run(data: &[u8]) {
    for agent in Agent::ALL {
        let stopped = agent.fail_closed("hookwire: fuzz");
        assert_eq!(stopped["continue"], false, "{stopped}");
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
        for outcome in &outcomes {
            let out = agent.encode(&call.event, outcome);
            assert!(out.is_object(), "{out}");
            assert_ne!(
                out,
                json!({}),
                "{outcome:?} at {:?} encodes as proceed",
                call.event
            );
        }
        assert_eq!(
            agent.encode(&call.event, &Outcome::Proceed),
            Value::Object(Default::default())
        );
    }
}

/// The seed inputs: the golden payloads of `tests/fixtures/hooks/`
/// (`claude-code/`, `gemini-cli/`).
pub fn seeds() -> Vec<Vec<u8>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/hooks");
    let mut seeds: Vec<Vec<u8>> = ["claude-code", "gemini-cli"]
        .iter()
        .filter_map(|agent| std::fs::read_dir(format!("{root}/{agent}")).ok())
        .flat_map(|entries| entries.filter_map(Result::ok))
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .collect();
    seeds.sort();
    seeds
}
