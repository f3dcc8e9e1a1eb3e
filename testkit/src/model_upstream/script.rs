//! The one conversation every mock upstream scripts, shared by each
//! API's transcript shape: the user's question answered with two shell
//! calls, a rate-limit error, an answer carrying a key, or a greeting;
//! tool results answered with `done: ...`.

use serde_json::Value;

use super::serve::Reply;

/// The text the scripted conversation answers tool results with.
pub fn done(results: &[String]) -> Reply {
    Reply::Answer(format!("done: {}", results.join(" | ")))
}

/// The scripted conversation's answer to a user's text: two shell
/// commands for "List the files", a rate-limit error for "rate limit me"
/// (`error` is the API's own body for it), an answer carrying a key for
/// "secret", a greeting otherwise.
pub fn answer_user(text: &str, calls: [&'static str; 2], error: impl FnOnce() -> Value) -> Reply {
    if text.contains("List the files") {
        Reply::Calls(vec![
            (calls[0], "bash", serde_json::json!({"cmd": "ls"})),
            (calls[1], "bash", serde_json::json!({"cmd": "rm -rf /"})),
        ])
    } else if text.contains("rate limit me") {
        Reply::Error(429, error())
    } else if text.contains("secret") {
        Reply::Answer(SECRET_ANSWER.into())
    } else {
        Reply::Answer(GREETING.into())
    }
}

/// The scripted greeting.
pub const GREETING: &str = "Hello from upstream";

/// The scripted answer carrying a key (what an output guard withholds).
pub const SECRET_ANSWER: &str = "Hello from upstream. The key is AKIA0123456789 and more. Bye.";
