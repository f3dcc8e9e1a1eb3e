//! What both sides of every comparison share: the tool call and its context
//! at a given size, the interceptors (one implementation per SDK, doing the
//! same thing), and the hosts and emitters built from them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_hooks::{AgentContextBuilder, EnforcementMode, InterceptionEmitter};
use hookwire::wire::{PointRequest, context_to_request};
use hookwire::{AgentContext, Composition, Manifest, Profile, Verdict, manifest, pb};
use hookwire_client::{Host, InterceptorBinding, ToolCall};
use hookwire_server::async_trait;
use serde_json::{Value, json};

pub const AGENT: &str = "bench-agent";
pub const FRAMEWORK: &str = "hookwire";
pub const TOOL: &str = "bash";
pub const CALL_ID: &str = "call-1";

/// The rewritten command a transforming interceptor writes at `$target.cmd`.
pub const REWRITTEN: &str = "grep -rn TODO src/ --max-count=100";

/// Tool arguments whose `pre_tool_call` request is about `bytes` long on the
/// wire: a command, a few typed options (an integer, a float, a boolean)
/// and a list of file paths that grows with the size.
pub fn tool_args(bytes: usize) -> Value {
    let base = args_with(0);
    let base_len = request_len(&base);
    let one = request_len(&args_with(1)) - base_len;
    let n = bytes.saturating_sub(base_len) / one.max(1);
    args_with(n)
}

fn args_with(files: usize) -> Value {
    let files: Vec<String> = (0..files)
        .map(|i| format!("src/module_{:04}/file_{:04}.rs", i / 100, i % 100))
        .collect();
    json!({
        "cmd": "grep -rn TODO src/",
        "cwd": "/srv/app",
        "opts": {"max_depth": 12, "ratio": 0.25, "follow_links": false},
        "files": files,
    })
}

/// The `pre_tool_call` context hookwire's host builds for this call (fixed
/// timestamp and sequence: sizes and bytes only).
pub fn context(args: &Value) -> AgentContext {
    let v = json!({
        "spec": hookwire::SPEC_VERSION,
        "interception_point": "pre_tool_call",
        "timestamp": "2026-06-19T14:03:11.123Z",
        "sequence": 1,
        "agent": {"id": AGENT, "framework": FRAMEWORK},
        "session": {"id": "s-0"},
        "tool_call": {"id": CALL_ID, "name": TOOL, "args": args},
    });
    AgentContext::from_json(v).expect("a valid context")
}

/// The wire request for this call: what the transport floor carries.
pub fn floor_request(args: &Value) -> pb::PreToolCallRequest {
    match context_to_request(&context(args)).expect("encodes") {
        PointRequest::PreToolCall(r) => r,
        other => panic!("unexpected request kind {:?}", other.point()),
    }
}

/// Encoded length of the `pre_tool_call` request for `args`.
pub fn request_len(args: &Value) -> usize {
    use prost::Message;
    floor_request(args).encoded_len()
}

pub fn tool_call(args: &Value) -> ToolCall {
    ToolCall::new(CALL_ID, TOOL, args.clone())
}

/// Distinct call ids handed out so far, across every session of the run.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Digits of a renumbered call id after its leading `c`: five base-36
/// digits keep the id as long as [`CALL_ID`], so the context (and every
/// size and byte count the report gives) is unchanged.
const ID_DIGITS: u32 = 5;

/// Gives `call` the next distinct id, in place (its buffer is reused: no
/// allocation on the measured path). A session refuses a second
/// `pre_tool_call` for an id whose `post_tool_call` has not come
/// (§3.1 rule 5), and the load measures `pre_tool_call` alone, so every
/// emission needs an id of its own. Ids repeat only after 36^5 (about
/// 60 million) emissions in one run.
pub fn renumber(call: &mut ToolCall) {
    const BASE: u64 = 36;
    let mut n = CALLS.fetch_add(1, Ordering::Relaxed) % BASE.pow(ID_DIGITS);
    let mut digits = [b'0'; ID_DIGITS as usize];
    for d in digits.iter_mut().rev() {
        *d = b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % BASE) as usize];
        n /= BASE;
    }
    call.id.clear();
    call.id.push('c');
    call.id
        .push_str(std::str::from_utf8(&digits).expect("ascii digits"));
    debug_assert_eq!(call.id.len(), CALL_ID.len());
}

// ---------------------------------------------------------------------------
// hookwire interceptors (in-process)
// ---------------------------------------------------------------------------

/// Allows everything.
pub struct Allow;

#[async_trait]
impl hookwire::Interceptor for Allow {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("allow", "0")
    }
}

/// Rewrites `$target.cmd` at `pre_tool_call`; allows elsewhere.
pub struct Rewrite;

#[async_trait]
impl hookwire::Interceptor for Rewrite {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("rewrite", "0")
    }
    async fn pre_tool_call(&self, _ctx: &AgentContext) -> Verdict {
        Verdict::transform("$target.cmd", json!(REWRITTEN))
    }
}

// ---------------------------------------------------------------------------
// canonical interceptors (in-process), the same two behaviours
// ---------------------------------------------------------------------------

pub struct CanonAllow;

#[async_trait]
impl agent_hooks::Interceptor for CanonAllow {
    async fn intercept(&self, _ctx: &agent_hooks::AgentContext) -> agent_hooks::Verdict {
        agent_hooks::Verdict::allow()
    }
}

pub struct CanonRewrite;

#[async_trait]
impl agent_hooks::Interceptor for CanonRewrite {
    async fn intercept(&self, ctx: &agent_hooks::AgentContext) -> agent_hooks::Verdict {
        if ctx.get("interception_point").and_then(Value::as_str) != Some("pre_tool_call") {
            return agent_hooks::Verdict::allow();
        }
        agent_hooks::Verdict {
            decision: agent_hooks::Decision::Transform,
            transform: Some(agent_hooks::Transform {
                path: "$target.cmd".into(),
                value: json!(REWRITTEN),
            }),
            ..agent_hooks::Verdict::allow()
        }
    }
}

/// An in-process chain: `allow` everywhere, with a rewrite at position
/// `transform_at` when given.
#[derive(Debug, Clone, Copy)]
pub struct Chain {
    pub len: usize,
    pub transform_at: Option<usize>,
}

impl Chain {
    pub const fn allow(len: usize) -> Self {
        Self {
            len,
            transform_at: None,
        }
    }
}

/// hookwire's host with the chain in-process, default configuration
/// (enforce, sequential/first_deny, jcs-sha256, 5000 ms timeouts).
pub fn local_host(chain: Chain) -> Host {
    local_host_bounded(chain, true)
}

/// [`local_host`], with the default 5000 ms timeouts (`bounded`) or none.
pub fn local_host_bounded(chain: Chain, bounded: bool) -> Host {
    let mut b = Host::builder(AGENT, FRAMEWORK);
    for i in 0..chain.len {
        let name = format!("i{i}");
        let binding = if chain.transform_at == Some(i) {
            InterceptorBinding::local(name, Rewrite)
        } else {
            InterceptorBinding::local(name, Allow)
        };
        b = b.bind(if bounded {
            binding
        } else {
            binding.unbounded()
        });
    }
    b.build().expect("host builds")
}

/// The canonical emitter with the same chain and configuration: enforce,
/// its default sequential/first_deny, jcs-sha256, and the same 5000 ms
/// per-interceptor timeout hookwire applies by default.
pub fn canon_emitter(chain: Chain) -> InterceptionEmitter {
    canon_emitter_bounded(chain, true)
}

/// [`canon_emitter`], with the 5000 ms per-interceptor timeout
/// (`bounded`) or the emitter's default of none.
pub fn canon_emitter_bounded(chain: Chain, bounded: bool) -> InterceptionEmitter {
    let mut e = InterceptionEmitter::new(EnforcementMode::Enforce, None);
    if bounded {
        e.set_timeout(hookwire_client::DEFAULT_TIMEOUT);
    }
    for i in 0..chain.len {
        if chain.transform_at == Some(i) {
            e.register(Box::new(CanonRewrite));
        } else {
            e.register(Box::new(CanonAllow));
        }
    }
    e
}

/// The canonical per-session context builder.
pub fn canon_builder(session: &str) -> AgentContextBuilder {
    AgentContextBuilder::new(AGENT, FRAMEWORK, session)
}

/// hookwire's host with `n` remote bindings to `endpoint` (one channel
/// each), under `composition`.
pub fn remote_host(endpoint: &str, n: usize, composition: Profile, timeout: Duration) -> Host {
    let mut b = Host::builder(AGENT, FRAMEWORK).composition(Composition::new(composition));
    for i in 0..n {
        b = b.bind(InterceptorBinding::remote(format!("r{i}"), endpoint).timeout(timeout));
    }
    b.build().expect("host builds")
}
