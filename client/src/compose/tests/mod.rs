//! Every profile × knob × verdict mix of §7, driven without a network.

mod invariants;
mod parallel;
mod sequential;

use hookwire::approval::Resolved;
use hookwire::{
    AgentContext, Composition, ContextLimits, Decision, HostError, InterceptionPoint, Mode,
    OnApproval, Profile, ResolvedBy, Synthesis, Verdict, Warning,
};
use serde_json::{Value, json};

use super::{Combined, Composer, Plan, Step};

fn ctx(point: InterceptionPoint) -> AgentContext {
    let (member, body) = match point {
        InterceptionPoint::AgentStartup => ("agent_init", json!({"tools_registered": []})),
        InterceptionPoint::AgentShutdown => ("summary", json!({"reason": "completed"})),
        _ => (
            "tool_call",
            json!({"id": "c1", "name": "http_get", "args": {"url": "a", "n": 1}}),
        ),
    };
    let point = if member == "tool_call" {
        InterceptionPoint::PreToolCall
    } else {
        point
    };
    AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1", "interception_point": point.as_str(),
        "timestamp": "2026-01-01T00:00:00Z", "sequence": 1,
        "agent": {"id": "a", "framework": "hookwire"}, "session": {"id": "s"},
        member: body,
    }))
    .unwrap()
}

/// What a scripted emission did.
struct Run {
    combined: Combined,
    dispatched: Vec<usize>,
    consulted: Vec<(Option<usize>, Verdict)>,
    target: Value,
}

fn run_at(
    point: InterceptionPoint,
    composition: Composition,
    mode: Mode,
    verdicts: Vec<Verdict>,
    resolutions: Vec<Resolved>,
) -> Run {
    let mut ctx = ctx(point);
    let plan = Plan {
        composition,
        mode,
        point: ctx.point(),
        interceptors: verdicts.len(),
        resolver: !resolutions.is_empty(),
        limits: ContextLimits::default(),
    };
    let mut composer = Composer::new(plan);
    let mut resolutions = resolutions.into_iter();
    let (mut dispatched, mut consulted) = (Vec::new(), Vec::new());
    let mut step = composer.start();
    let combined = loop {
        step = match step {
            Step::Dispatch(i) => {
                dispatched.push(i);
                composer.on_verdict(i, verdicts[i].clone(), &mut ctx)
            }
            Step::DispatchAll => {
                dispatched.extend(0..verdicts.len());
                composer.on_verdicts(verdicts.clone(), &mut ctx)
            }
            Step::Consult { index, verdict } => {
                consulted.push((index, verdict));
                let r = resolutions.next().expect("scripted resolution");
                composer.on_resolution(r, &mut ctx)
            }
            Step::Done(c) => break c,
        };
    };
    Run {
        combined,
        dispatched,
        consulted,
        target: ctx.target().cloned().unwrap(),
    }
}

fn run(c: Composition, verdicts: Vec<Verdict>, resolutions: Vec<Resolved>) -> Run {
    run_at(
        InterceptionPoint::PreToolCall,
        c,
        Mode::Enforce,
        verdicts,
        resolutions,
    )
}

fn reason(r: &Run) -> &str {
    r.combined.verdict.reason.as_deref().unwrap_or_default()
}

fn first_deny() -> Composition {
    Composition::new(Profile::SequentialFirstDeny)
}
fn run_all() -> Composition {
    Composition::new(Profile::SequentialRunAll)
}
fn strictest() -> Composition {
    Composition::new(Profile::ParallelStrictest)
}
fn unanimous() -> Composition {
    Composition::new(Profile::ParallelUnanimous)
}
fn t(path: &str, v: Value) -> Verdict {
    Verdict::transform(path, v)
}
fn lifted(v: Verdict) -> Resolved {
    Resolved::Lifted(v)
}
