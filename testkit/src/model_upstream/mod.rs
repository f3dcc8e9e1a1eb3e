//! Recording model upstreams, one per wire API the gateway speaks, each
//! faithful to its provider's shapes (bodies, stream events in their
//! documented order, error bodies), served on `127.0.0.1:0`, recording
//! every request it receives (path, headers, body); and the official
//! Python SDKs (pinned in examples/gateway/requirements.txt and
//! tests/gateway-requirements.txt, installed into .cache/venv by
//! scripts/setup.sh) run as child processes against a base URL.
//!
//! Each upstream answers from a script: a function of the request body
//! giving a [`Reply`]. [`chat::conversation`], [`responses::conversation`]
//! and [`messages::conversation`] are the one conversation the tests
//! script, written once per API's transcript shape. [`plain`] is a
//! standard-library one for tests of the built command that run no
//! async runtime. [`claude_code`] and [`codex`] are the scripts the real
//! coding-agent CLIs are answered with.

pub mod chat;
pub mod claude_code;
pub mod clients;
pub mod codex;
pub mod messages;
pub mod plain;
pub mod responses;
pub mod responses_stored;
mod script;
mod serve;

pub use script::{GREETING, SECRET_ANSWER, answer_user, done};
pub use serve::{
    Received, Recorder, Reply, Script, Upstream, event_stream, json_body, named, pieces,
};

use serde_json::Value;

/// One OpenAI upstream serving both Chat Completions and Responses (an
/// agent may speak either to one base URL), answering each from its own
/// scripted conversation.
pub async fn openai() -> Upstream {
    let script = |body: &Value| {
        if body.get("messages").is_some() {
            chat::conversation(body)
        } else {
            responses::conversation(body)
        }
    };
    Upstream::serve(script, |r| {
        chat::routes()
            .merge(responses::routes())
            .fallback(responses::unknown)
            .with_state(r)
    })
    .await
}
