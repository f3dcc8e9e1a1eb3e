//! `transform`: transform verdicts applied to a context, by the pure §5.2
//! path functions ([`hookwire::path`]) and by a host that composes the
//! verdicts of in-process interceptors and writes the result back.
//!
//! Input: a JSON document (read leniently with serde_json, which is not
//! under test here):
//!
//! ```json
//! {"point": "pre_tool_call", "mode": "enforce", "profile": "parallel/strictest",
//!  "target": {"cmd": "ls"},
//!  "verdicts": [{"decision": "transform", "transform": {"path": "$target.cmd", "value": "pwd"}}]}
//! ```
//!
//! Each verdict is built field by field without validation, so invalid
//! ones reach the host as an interceptor could send them. Properties:
//! `path::check` succeeds exactly when `path::apply` does, and a refused
//! `apply` leaves the target unchanged; the host never panics; an emission
//! that proceeds in `enforce` carries a permit and a context that still
//! passes the §4 envelope; one that does not proceed is a deny, whose
//! `host_error:*` reason (if any) is one §11 reserves; `evaluate_only` never changes the target; a chain of plain
//! allows proceeds with the target untouched unless the host refused the
//! context itself (`host_error:context_invalid`).

use hookwire::path;
use hookwire::{
    AgentContext, Composition, Decision, HostError, InterceptionPoint, Mode, Profile, Transform,
    Verdict, Warning, interceptor_fn,
};
use hookwire_client::Host;
use serde_json::{Map, Value, json};

/// The points a session emits with `Session::emit` (the lifecycle points
/// have their own methods and permit no transform).
const POINTS: [InterceptionPoint; 6] = [
    InterceptionPoint::Input,
    InterceptionPoint::PreModelCall,
    InterceptionPoint::PostModelCall,
    InterceptionPoint::PreToolCall,
    InterceptionPoint::PostToolCall,
    InterceptionPoint::Output,
];

/// At most this many interceptors per input, to keep runs fast.
const MAX_INTERCEPTORS: usize = 4;

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let point = doc
        .get("point")
        .and_then(Value::as_str)
        .and_then(|p| POINTS.into_iter().find(|q| q.as_str() == p))
        .unwrap_or(InterceptionPoint::PreToolCall);
    let mode = match doc.get("mode").and_then(Value::as_str) {
        Some("evaluate_only") => Mode::EvaluateOnly,
        _ => Mode::Enforce,
    };
    let profile = doc
        .get("profile")
        .and_then(Value::as_str)
        .and_then(|p| p.parse::<Profile>().ok())
        .unwrap_or_default();
    let target = doc.get("target").cloned().unwrap_or_else(|| json!({}));
    let verdicts: Vec<Verdict> = doc
        .get("verdicts")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .take(MAX_INTERCEPTORS)
                .filter_map(verdict)
                .collect()
        })
        .unwrap_or_default();

    for v in &verdicts {
        if let Some(t) = &v.transform {
            paths(&target, t);
        }
    }
    emission(point, mode, profile, target, verdicts);
}

/// The pure path functions against one transform.
fn paths(target: &Value, t: &Transform) {
    let checked = path::check(target, &t.path);
    let mut applied = target.clone();
    match path::apply(&mut applied, &t.path, t.value.clone()) {
        Ok(()) => {
            assert!(checked.is_ok(), "check refuses a path apply takes");
            path::check(&applied, &t.path).expect("an applied path still resolves");
        }
        Err(e) => {
            assert_eq!(checked, Err(e), "check and apply refuse alike");
            assert_eq!(&applied, target, "a refused apply changes nothing");
        }
    }
}

/// A verdict as an interceptor could send it: every field of its spec
/// JSON shape as given, no validation. `None` only without a known
/// decision. (The seed generator builds wire verdicts with it too.)
pub fn verdict(v: &Value) -> Option<Verdict> {
    let o = v.as_object()?;
    let decision = Decision::parse(o.get("decision")?.as_str()?)?;
    let string = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    let object = |k: &str| o.get(k).and_then(Value::as_object).cloned();
    let strings = |k: &str| -> Vec<String> {
        o.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let transform = o
        .get("transform")
        .and_then(Value::as_object)
        .map(|t| Transform {
            path: t
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            value: t.get("value").cloned().unwrap_or(Value::Null),
        });
    let warnings = o
        .get("warnings")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|w| Warning {
                    reason: w.get("reason").and_then(Value::as_str).map(str::to_owned),
                    message: w.get("message").and_then(Value::as_str).map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Verdict {
        decision,
        reason: string("reason"),
        message: string("message"),
        warnings,
        approval: object("approval"),
        transform,
        evidence: object("evidence"),
        result_labels: strings("result_labels"),
    })
}

/// The members of a `point` emission whose target is `target`.
fn members(point: InterceptionPoint, target: Value) -> Map<String, Value> {
    let tool_call = |args: Value| json!({"id": "call-1", "name": "bash", "args": args});
    let model = json!({"id": "model-1"});
    let pairs = match point {
        InterceptionPoint::Input => vec![("input", target)],
        InterceptionPoint::PreModelCall => vec![("model", model), ("messages", target)],
        InterceptionPoint::PostModelCall => vec![("model", model), ("response", target)],
        InterceptionPoint::PreToolCall => vec![("tool_call", tool_call(target))],
        InterceptionPoint::PostToolCall => vec![
            ("tool_call", tool_call(json!({"cmd": "ls"}))),
            ("tool_result", json!({"value": target, "is_error": false})),
        ],
        _ => vec![("output", target)],
    };
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// One emission at `point` through a host whose interceptors answer
/// `verdicts` there (and allow at `agent_startup`).
fn emission(
    point: InterceptionPoint,
    mode: Mode,
    profile: Profile,
    target: Value,
    verdicts: Vec<Verdict>,
) {
    let plain_allows = !verdicts.is_empty() && verdicts.iter().all(|v| *v == Verdict::allow());
    let mut builder = Host::builder("fuzz-agent", "hookwire")
        .mode(mode)
        .composition(Composition::new(profile));
    for (i, v) in verdicts.into_iter().enumerate() {
        let answer = interceptor_fn(move |ctx: AgentContext| {
            let v = if ctx.point() == point {
                v.clone()
            } else {
                Verdict::allow()
            };
            async move { v }
        });
        builder = builder.interceptor(format!("i{i}"), answer);
    }
    let Ok(host) = builder.build() else {
        return;
    };
    let rt = crate::runtime();
    rt.block_on(async {
        let session = host.session("fuzz-session").expect("a session id");
        let started = session.start(["bash"]).await.expect("startup runs");
        if !started.proceeds() {
            return;
        }
        let members = members(point, target.clone());
        let Ok(e) = session.emit(point, members).await else {
            return;
        };
        if mode == Mode::EvaluateOnly {
            assert!(e.proceeds(), "evaluate_only never blocks");
            assert_eq!(e.target(), Some(&target), "evaluate_only changes nothing");
        } else if e.proceeds() {
            assert!(
                matches!(e.verdict().decision, Decision::Allow | Decision::Transform),
                "what proceeds is a permit"
            );
            e.context()
                .validate()
                .expect("a transformed context passes §4");
        } else {
            assert_eq!(
                e.verdict().decision,
                Decision::Deny,
                "what blocks is a deny"
            );
            if let Some(reason) = e.reason().filter(|r| r.starts_with("host_error:")) {
                assert!(
                    HostError::from_reason(reason).is_some(),
                    "a host_error reason is one §11 reserves"
                );
            }
        }
        let context_refused = e.reason() == Some("host_error:context_invalid");
        if plain_allows && mode == Mode::Enforce && !context_refused {
            assert!(e.proceeds(), "plain allows proceed");
            assert_eq!(e.target(), Some(&target), "plain allows change nothing");
        }
    });
}
