//! hookwire-demo: the scripted agent of the hookwire demo and its two
//! interceptor services, shared by the `hookwire demo` command and
//! `cargo run --example demo`. It depends on the host and the interceptor
//! SDK only, so the README's demo command builds none of the command's
//! integrations (policies, the gateway, signed records, telemetry, the
//! approval service).
//!
//! - [`Policy`] denies shell tool calls that run destructive commands
//!   (`rm -rf`, `mkfs`, `dd of=/dev/...`), under the shell tools of the
//!   agents it meets ([`shell`]: Claude Code's `Bash`, the Codex CLI's
//!   `exec_command`, Gemini CLI's `run_shell_command`, Cursor's `Shell`,
//!   Copilot's and the demo's `bash`, …);
//! - [`Redactor`] rewrites e-mail addresses and phone numbers in the input
//!   with a `transform` verdict on `$target.content`;
//! - [`run_agent`] drives one session through the points up to `output`
//!   with a mock model that asks for two shell commands, stopping where a
//!   verdict stops it (a denied `agent_startup` included);
//!   [`print_table`] prints one line per record; [`run_and_report`] runs
//!   one session, always ends it with `agent_shutdown`, and prints both;
//! - the streaming variant (`--stream`): [`run_stream_and_report`] runs
//!   the same request through the reference [`Agent`](hookwire_agent::Agent) with incremental
//!   output mediation (§12.1's exception), the model streaming its answer
//!   in chunks, one of which leaks an access key that [`SecretGuard`]
//!   (bound in-process at `post_model_call` by [`secret_guard`]) denies:
//!   the segments before it are printed as they are released, the rest is
//!   withheld.

use hookwire::InterceptionPoint;
use hookwire_client::{
    Emission, Error, Host, InputRole, ModelResponse, RecordLog, Session, ShutdownReason, ToolCall,
    ToolResult,
};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

/// Prints one line through a [`Print`].
macro_rules! say {
    ($print:expr, $($arg:tt)*) => {
        $print(format_args!($($arg)*))
    };
}

pub mod shell;
// After `say!`, which they use.
mod print;
mod report;
mod script;
mod stream;

pub use print::{Print, print_table};
pub use script::SESSION_ID;
use script::{REQUEST, mock_bash, mock_model};
pub use stream::{SecretGuard, contains_access_key, run_stream_and_report, secret_guard};

/// Denies destructive shell commands before they run.
pub struct Policy;

#[async_trait]
impl Interceptor for Policy {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest("demo-policy", env!("CARGO_PKG_VERSION"));
        m.points = vec![InterceptionPoint::PreToolCall];
        m.description = "denies destructive shell commands".into();
        m
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        let (Some(tool), Some(args)) = (ctx.tool_name(), ctx.target()) else {
            return Verdict::allow();
        };
        match shell::command_of(tool, args) {
            Some(command) if shell::is_destructive(&command) => {
                Verdict::deny("policy:destructive_command").with_message(format!(
                    "{tool} may not delete or overwrite files recursively"
                ))
            }
            _ => Verdict::allow(),
        }
    }
}

/// Rewrites personal data in the input before the model sees it.
pub struct Redactor;

#[async_trait]
impl Interceptor for Redactor {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest("demo-redactor", env!("CARGO_PKG_VERSION"));
        m.points = vec![InterceptionPoint::Input];
        m.description = "redacts e-mail addresses and phone numbers in the input".into();
        m
    }

    async fn input(&self, ctx: &AgentContext) -> Verdict {
        let Some(text) = ctx
            .target()
            .and_then(|t| t.get("content"))
            .and_then(Value::as_str)
        else {
            return Verdict::allow();
        };
        let redacted = redact(text);
        if redacted == text {
            return Verdict::allow();
        }
        Verdict::transform("$target.content", Value::String(redacted)).with_label("pii_redacted")
    }
}

/// Replaces e-mail addresses with `[email]` and phone numbers (9 or more
/// digits, with spaces, dashes, dots or parentheses between them) with
/// `[phone]`.
pub fn redact(text: &str) -> String {
    let words = text.split(' ').map(|w| {
        let core = w.trim_end_matches(['.', ',', ';', '!', '?']);
        let tail = &w[core.len()..];
        match core.split_once('@') {
            Some((user, domain)) if !user.is_empty() && domain.contains('.') => {
                format!("[email]{tail}")
            }
            _ => w.to_owned(),
        }
    });
    let joined = words.collect::<Vec<_>>().join(" ");
    redact_phones(&joined)
}

fn redact_phones(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            || (chars[i] == '+' && chars.get(i + 1).is_some_and(char::is_ascii_digit));
        if starts {
            let mut j = i + 1;
            let mut digits = usize::from(chars[i].is_ascii_digit());
            while j < chars.len() && (chars[j].is_ascii_digit() || " -.()".contains(chars[j])) {
                digits += usize::from(chars[j].is_ascii_digit());
                j += 1;
            }
            while j > i && !chars[j - 1].is_ascii_digit() {
                j -= 1;
            }
            if digits >= 9 {
                out.push_str("[phone]");
                i = j;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// How a scripted run ended, before its `agent_shutdown`.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The output reached the caller (as the chain left it).
    Answered(Value),
    /// A verdict stopped the run at `point`, for `reason`.
    Blocked {
        /// Where the run stopped.
        point: InterceptionPoint,
        /// The verdict's reason, `-` when it gave none.
        reason: String,
    },
    /// The model kept asking for tools past the demo's turn limit.
    OutOfTurns,
}

impl Ending {
    fn blocked(point: InterceptionPoint, e: &Emission) -> Self {
        Self::Blocked {
            point,
            reason: e.reason().unwrap_or("-").to_owned(),
        }
    }
}

/// One scripted turn through the session, honouring every verdict: a
/// denied `agent_startup` ends the run at once (only `agent_shutdown` may
/// follow it), and so does any other verdict that stops the agent.
pub async fn run_agent(session: &Session) -> Result<Ending, Error> {
    let startup = session.start(["bash"]).await?;
    if !startup.proceeds() {
        return Ok(Ending::blocked(InterceptionPoint::AgentStartup, &startup));
    }
    let input = session.input(json!(REQUEST), InputRole::User).await?;
    if !input.proceeds() {
        return Ok(Ending::blocked(InterceptionPoint::Input, &input));
    }
    let user_text = input
        .target()
        .and_then(|t| t.get("content"))
        .cloned()
        .unwrap_or_default();
    let mut messages = vec![json!({"role": "user", "content": user_text})];
    for turn in 0..4 {
        let pre = session
            .pre_model_call("mock-model-1", Value::Array(messages.clone()))
            .await?;
        if !pre.proceeds() {
            return Ok(Ending::blocked(InterceptionPoint::PreModelCall, &pre));
        }
        let response = mock_model(turn, &messages);
        let post = session.post_model_call("mock-model-1", &response).await?;
        let Some(response) = post
            .target()
            .and_then(ModelResponse::from_target)
            .filter(|_| post.proceeds())
        else {
            return Ok(Ending::blocked(InterceptionPoint::PostModelCall, &post));
        };
        if response.tool_calls.is_empty() {
            // The answer is reachable only through a permitting verdict.
            return Ok(match session.output(response.content).await?.release() {
                Ok(answer) => Ending::Answered(answer),
                Err(withheld) => Ending::Blocked {
                    point: InterceptionPoint::Output,
                    reason: withheld
                        .verdict()
                        .reason
                        .as_deref()
                        .unwrap_or("-")
                        .to_owned(),
                },
            });
        }
        messages.push(json!({"role": "assistant", "content": response.content, "tool_calls": response.tool_calls}));
        for call in &response.tool_calls {
            let content = tool_step(session, call).await?;
            messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": content}));
        }
    }
    Ok(Ending::OutOfTurns)
}

/// `pre_tool_call` → tool → `post_tool_call`; a blocked call becomes a tool
/// error the model sees (§6.2).
async fn tool_step(session: &Session, call: &ToolCall) -> Result<Value, Error> {
    let pre: Emission = session.pre_tool_call(call).await?;
    if !pre.proceeds() {
        return Ok(json!({"error": format!("blocked: {}", pre.reason().unwrap_or("denied"))}));
    }
    let executed = ToolCall {
        args: pre.target().cloned().unwrap_or_default(),
        ..call.clone()
    };
    let result = ToolResult {
        value: mock_bash(&executed.args),
        is_error: false,
    };
    let post = session.post_tool_call(&executed, &result).await?;
    Ok(if post.proceeds() {
        post.into_target().unwrap_or_default()
    } else {
        json!({"error": "result withheld"})
    })
}

/// Runs the demo session `demo-session-1` on `host`, ends it with
/// `agent_shutdown` whatever happened (after a denied startup, a blocked
/// run or a failed emission alike), then prints its records (from
/// `records`, a sink of `host`) and how the run ended. A failed emission is
/// returned after the records are printed.
pub async fn run_and_report(
    host: &Host,
    records: &RecordLog,
    print: Print,
) -> Result<Ending, Error> {
    let session = host.session(SESSION_ID)?;
    let ending = run_agent(&session).await;
    // After a denied startup the host reports `error` whatever is asked.
    let reason = match &ending {
        Ok(_) => ShutdownReason::Completed,
        Err(_) => ShutdownReason::Error,
    };
    let shutdown = session.shutdown(reason).await;

    print_table(&records.session(session.id()), print);
    say!(print, "");
    match &ending {
        Ok(Ending::Answered(out)) => say!(
            print,
            "answer to the caller: {}",
            out.get("content").unwrap_or(out)
        ),
        Ok(Ending::Blocked { point, reason }) => {
            say!(
                print,
                "the session was blocked at {point} ({reason}) before an answer"
            );
        }
        Ok(Ending::OutOfTurns) => say!(print, "the model ran out of turns before an answer"),
        Err(e) => say!(print, "the session failed: {e}"),
    }
    let ending = ending?;
    shutdown?;
    Ok(ending)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre_tool(name: &str, args: Value) -> Verdict {
        let mut members = serde_json::Map::new();
        members.insert("interception_point".into(), json!("pre_tool_call"));
        members.insert(
            "tool_call".into(),
            json!({"id": "c1", "name": name, "args": args}),
        );
        let ctx = AgentContext::from_members_unchecked(InterceptionPoint::PreToolCall, members);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(Policy.pre_tool_call(&ctx))
    }

    /// Each agent's shell tool, as its hooks or its model requests name it.
    #[test]
    fn the_policy_denies_every_agents_rm_rf() {
        for (tool, args) in [
            (
                "Bash",
                json!({"command": "rm -rf build", "description": "x"}),
            ),
            ("exec_command", json!({"cmd": "rm -rf build"})),
            ("shell", json!({"command": ["bash", "-lc", "rm -rf build"]})),
            ("run_shell_command", json!({"command": "rm -rf build"})),
            ("Shell", json!({"command": "rm -rf build"})),
            ("bash", json!({"command": "rm -rf build"})),
            ("bash", json!({"cmd": "rm -rf /tmp/build"})),
        ] {
            let v = pre_tool(tool, args);
            assert_eq!(
                v.reason.as_deref(),
                Some("policy:destructive_command"),
                "{tool}"
            );
        }
        for (tool, args) in [
            ("Bash", json!({"command": "ls -la"})),
            ("exec_command", json!({"cmd": "touch marker"})),
            ("python", json!({"cmd": "rm -rf /"})),
        ] {
            assert_eq!(pre_tool(tool, args).reason, None, "{tool}");
        }
    }

    #[test]
    fn redacts_emails_and_phones_only() {
        assert_eq!(
            redact("mail jane.doe@example.com, or call +1 415-555-0100."),
            "mail [email], or call [phone]."
        );
        assert_eq!(redact("build 1.2G in 3 dirs"), "build 1.2G in 3 dirs");
    }
}
