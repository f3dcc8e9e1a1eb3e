use super::*;
use serde_json::json;

fn pre_tool() -> Value {
    json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "pre_tool_call",
        "timestamp": "2026-06-19T14:03:11.123Z",
        "sequence": 3,
        "agent": {"id": "a", "framework": "hookwire", "name": "optional"},
        "session": {"id": "s"},
        "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": "ls"}, "content_hash": "sha256:00"},
        "target": {"cmd": "ls"},
        "extensions": {"acme": {"k": 1}}
    })
}

#[test]
fn round_trips_and_exposes_the_target() {
    let mut ctx = AgentContext::from_json(pre_tool()).unwrap();
    assert_eq!(ctx.point(), InterceptionPoint::PreToolCall);
    assert_eq!(ctx.sequence(), 3);
    assert_eq!(ctx.to_json(), pre_tool());
    *ctx.target_mut().unwrap() = json!({"cmd": "pwd"});
    assert_eq!(ctx.get("tool_call").unwrap()["args"], json!({"cmd": "pwd"}));
    assert_eq!(ctx.to_json()["target"], json!({"cmd": "pwd"}));
}

#[test]
fn envelope_refusals() {
    let mut cases = Vec::new();
    for (k, v) in [
        ("spec", json!("agent-hooks/x")),
        ("interception_point", json!("pre_tool")),
        ("sequence", json!(-1)),
        ("sequence", json!(1.5)),
        ("agent", json!({"id": "a", "framework": "Bad"})),
        ("session", json!({})),
        ("tool_call", json!({"id": "c", "name": "n", "args": []})),
        ("target", json!({"cmd": "other"})),
        ("extensions", json!({"Bad": 1})),
    ] {
        let mut ctx = pre_tool();
        ctx[k] = v;
        cases.push(ctx);
    }
    let mut missing = pre_tool();
    missing.as_object_mut().unwrap().remove("tool_call");
    cases.push(missing);
    for c in cases {
        assert!(AgentContext::from_json(c.clone()).is_err(), "{c} accepted");
    }
}

#[test]
fn identity_ignores_optional_members_and_refuses_unsafe_integers() {
    let base = AgentContext::from_json(pre_tool()).unwrap();
    let limits = ContextLimits::default();
    let id = base.jcs_sha256_identity(&limits).unwrap();
    assert!(id.starts_with("sha256:") && id.len() == 71);
    let mut with_optional = pre_tool();
    with_optional["trace"] = json!({"trace_id": "ab"});
    with_optional["agent"]["version"] = json!("2");
    let other = AgentContext::from_json(with_optional).unwrap();
    assert_eq!(other.jcs_sha256_identity(&limits).unwrap(), id);
    let mut big = pre_tool();
    big["tool_call"]["args"] = json!({"n": 9_007_199_254_740_993u64});
    big["target"] = big["tool_call"]["args"].clone();
    let big = AgentContext::from_json(big).unwrap();
    assert!(matches!(
        big.jcs_sha256_identity(&limits),
        Err(InvalidContext::Domain(CanonicalError::UnsafeInteger(_)))
    ));
}

#[test]
fn limits_refuse_large_and_deep_contexts() {
    let ctx = AgentContext::from_json(pre_tool()).unwrap();
    let tight = ContextLimits {
        max_bytes: 64,
        max_depth: 128,
    };
    assert!(matches!(
        ctx.check_limits(&tight),
        Err(InvalidContext::TooLarge { .. })
    ));
    let mut deep = pre_tool();
    let mut v = json!(1);
    for _ in 0..200 {
        v = json!([v]);
    }
    deep["tool_call"]["args"] = json!({"v": v});
    deep.as_object_mut().unwrap().remove("target");
    let deep = AgentContext::from_json(deep).unwrap();
    assert!(matches!(
        deep.check_limits(&ContextLimits::default()),
        Err(InvalidContext::Domain(CanonicalError::TooDeep(128)))
    ));
    ctx.check_limits(&ContextLimits::default()).unwrap();
}

/// §12.3 as it was first written: serialize to count, then walk the
/// members for depth. The measuring walk must agree with it exactly.
fn reference_limits(ctx: &AgentContext, limits: &ContextLimits) -> Result<(), InvalidContext> {
    let mut size = serde_json::to_string(ctx.members()).unwrap().len();
    if let Some(t) = ctx.target() {
        size += serde_json::to_string(t).unwrap().len();
    }
    if size > limits.max_bytes {
        return Err(InvalidContext::TooLarge {
            limit: limits.max_bytes,
        });
    }
    fn exceeds(v: &Value, budget: usize) -> bool {
        let mut stack = vec![(v, 0usize)];
        while let Some((v, d)) = stack.pop() {
            let children: Vec<&Value> = match v {
                Value::Array(a) => a.iter().collect(),
                Value::Object(o) => o.values().collect(),
                _ => continue,
            };
            if d >= budget {
                return true;
            }
            stack.extend(children.into_iter().map(|c| (c, d + 1)));
        }
        false
    }
    let budget = limits.max_depth.saturating_sub(1);
    if ctx.members().values().any(|v| exceeds(v, budget)) {
        return Err(CanonicalError::TooDeep(limits.max_depth).into());
    }
    Ok(())
}

mod properties {
    use super::*;
    use crate::canonical::tests::properties::json;
    use proptest::prelude::*;

    fn context_with(args: Value, extra: Option<Value>) -> AgentContext {
        let mut v = pre_tool();
        let args = match args {
            Value::Object(_) => args,
            other => json!({ "v": other }),
        };
        v["tool_call"]["args"] = args.clone();
        v["target"] = args;
        if let Some(extra) = extra {
            v["extensions"] = json!({ "bench": extra });
        }
        AgentContext::from_json(v).unwrap()
    }

    proptest! {
        #[test]
        fn limits_match_serialize_and_walk(
            args in json(),
            extra in proptest::option::of(json()),
            slack in -40i64..40,
            max_depth in 0usize..8,
        ) {
            let ctx = context_with(args, extra);
            let size = serde_json::to_string(ctx.members()).unwrap().len()
                + serde_json::to_string(ctx.target().unwrap()).unwrap().len();
            let limits = ContextLimits {
                max_bytes: (size as i64 + slack).max(0) as usize,
                max_depth,
            };
            prop_assert_eq!(ctx.check_limits(&limits), reference_limits(&ctx, &limits));
        }

        #[test]
        fn identity_is_the_hash_of_the_plain_preimage(args in json(), max_depth in 1usize..8) {
            // The preimage writes the target once and copies it; hashing
            // a preimage written without the copy gives the same result.
            let ctx = context_with(args, None);
            let limits = ContextLimits { max_bytes: usize::MAX, max_depth };
            const NULL: Value = Value::Null;
            let m = ctx.members();
            let get = |k: &str| m.get(k).unwrap_or(&NULL);
            let entries = [
                ("spec", View::Whole(get("spec"))),
                ("interception_point", View::Whole(get("interception_point"))),
                ("timestamp", View::Whole(get("timestamp"))),
                ("sequence", View::Whole(get("sequence"))),
                ("agent", View::Only(get("agent"), &["id", "framework"])),
                ("session", View::Only(get("session"), &["id"])),
                ("target", View::Whole(ctx.target().unwrap())),
                ("tool_call", View::Only(get("tool_call"), &["id", "name", "args"])),
            ];
            let mut plain = String::new();
            let expected = Canonicalizer::with_max_depth(max_depth)
                .write(View::Object(&entries), &mut plain)
                .map(|()| sha256_identity(plain.as_bytes()))
                .map_err(InvalidContext::from);
            prop_assert_eq!(ctx.jcs_sha256_identity(&limits), expected);
        }
    }
}
