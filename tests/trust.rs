//! Trust boundaries between a host and the interceptors it binds:
//! per-binding visibility (what a binding is shown) and mutation guards
//! (what a binding may transform), in-process and over gRPC, in code and
//! in a declaration, under every composition profile.

use std::sync::{Arc, Mutex};

use hookwire::{AgentContext, Composition, InterceptionPoint, Profile, Verdict};
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{
    BoxError, Emission, Host, InputRole, Interceptor, InterceptorBinding, RecordLog, interceptor_fn,
};
use hookwire_testkit::{Scripted, host};
use serde_json::{Map, Value, json};

type Seen = Arc<Mutex<Vec<AgentContext>>>;

/// The optional members every session of these tests carries.
fn optional_members() -> Map<String, Value> {
    json!({
        "actor": {"id": "u-1", "kind": "human"},
        "tenant": {"id": "t-1"},
        "messages": [{"role": "user", "content": "earlier turn"}],
        "extensions": {"acme": {"ticket": 7}}
    })
    .as_object()
    .unwrap()
    .clone()
}

/// An in-process interceptor that allows and keeps what it was shown.
fn recorder(seen: &Seen) -> impl Interceptor {
    let keep = seen.clone();
    interceptor_fn(move |ctx: AgentContext| {
        keep.lock().unwrap().push(ctx);
        async { Ok::<_, BoxError>(Verdict::allow()) }
    })
}

/// The `output` member of an `output` emission.
fn output(content: &str) -> Map<String, Value> {
    json!({"output": {"content": content}})
        .as_object()
        .unwrap()
        .clone()
}

fn last(seen: &Seen) -> AgentContext {
    seen.lock()
        .unwrap()
        .last()
        .cloned()
        .expect("the binding ran")
}

fn sorted<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut names = names.to_vec();
    names.sort_unstable();
    names
}

/// The context's member names, sorted (the member map's own order
/// depends on serde_json's features in the build).
fn keys(ctx: &AgentContext) -> Vec<&str> {
    let mut names: Vec<&str> = ctx.members().keys().map(String::as_str).collect();
    names.sort_unstable();
    names
}

const CORE_AND_INPUT: [&str; 7] = [
    "spec",
    "interception_point",
    "timestamp",
    "sequence",
    "agent",
    "session",
    "input",
];

#[tokio::test]
async fn a_restricted_binding_is_shown_only_its_grant_in_process_and_remote() {
    let pii_service = Scripted::allow_all("pii");
    let pii_seen = pii_service.seen.clone();
    let server = pii_service.serve().await;
    for profile in [Profile::SequentialFirstDeny, Profile::ParallelStrictest] {
        let (egress_seen, full_seen) = (Seen::default(), Seen::default());
        let (b, records) = host();
        let h = b
            .composition(Composition::new(profile))
            // A PII redactor over gRPC: the input and who sent it, not the
            // conversation, the tenant or the extensions.
            .bind(InterceptorBinding::remote("pii", server.endpoint()).visible(["actor"]))
            // An in-process filter shown no optional member at all.
            .bind(
                InterceptorBinding::local("egress", recorder(&egress_seen))
                    .visible(Vec::<String>::new()),
            )
            .bind(InterceptorBinding::local("full", recorder(&full_seen)))
            .build()
            .unwrap();
        let session = h.session_with("s-vis", optional_members()).unwrap();
        session.start(["bash"]).await.unwrap();
        let e = session
            .input(json!("hello"), InputRole::User)
            .await
            .unwrap();
        assert!(e.proceeds(), "{:?}", e.reason());

        let pii = pii_seen.lock().unwrap().last().cloned().unwrap();
        pii.validate().expect("still a valid §4 context");
        assert_eq!(
            pii.target(),
            Some(&json!({"content": "hello", "role": "user"}))
        );
        assert_eq!(
            pii.get("actor"),
            Some(&json!({"id": "u-1", "kind": "human"}))
        );
        for withheld in ["messages", "tenant", "extensions"] {
            assert!(
                pii.get(withheld).is_none(),
                "{profile:?}: {withheld} reached pii"
            );
        }
        let egress = last(&egress_seen);
        egress.validate().unwrap();
        assert_eq!(keys(&egress), sorted(&CORE_AND_INPUT));
        let full = last(&full_seen);
        for member in ["actor", "tenant", "messages", "extensions"] {
            assert!(
                full.get(member).is_some(),
                "an unrestricted binding sees {member}"
            );
        }

        let record = records.records()[1].to_envelope();
        assert_eq!(
            record["extensions"],
            json!({"hookwire": {"visibility": {
                "pii": ["extensions", "messages", "tenant"],
                "egress": ["actor", "extensions", "messages", "tenant"]
            }}}),
            "{profile:?}"
        );
        let text = record.to_string();
        for payload in ["u-1", "t-1", "earlier turn", "hello", "ticket"] {
            assert!(!text.contains(payload), "the record carries {payload}");
        }
        // The startup emission withheld the same members: one entry per
        // restricted binding, every emission.
        assert!(records.records()[0].fact("visibility").unwrap()["pii"].is_array());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_target_and_the_points_conditional_members_are_never_withheld() {
    let seen = Seen::default();
    let (b, records) = host();
    let h = b
        .bind(InterceptorBinding::local("narrow", recorder(&seen)).visible(["nothing_here"]))
        .build()
        .unwrap();
    let session = h.session_with("s-core", optional_members()).unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    // At pre_model_call `messages` is the target: it is sent whatever the
    // grant says; `model` is conditional there.
    session
        .pre_model_call("m-1", json!([{"role": "user", "content": "now"}]))
        .await
        .unwrap();
    let ctx = last(&seen);
    ctx.validate().unwrap();
    assert_eq!(
        ctx.target(),
        Some(&json!([{"role": "user", "content": "now"}]))
    );
    assert!(ctx.get("model").is_some());
    assert!(ctx.get("actor").is_none() && ctx.get("tenant").is_none());
    assert_eq!(
        records.records()[2].extensions["hookwire"]["visibility"]["narrow"],
        json!(["actor", "extensions", "tenant"])
    );
}

#[test]
fn grants_are_checked_when_the_host_is_built() {
    let allow = || interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    let (b, _) = host();
    let err = b
        .bind(InterceptorBinding::local("v", allow()).visible(["Not-A-Member"]))
        .build()
        .expect_err("a malformed member name");
    assert!(err.to_string().contains("visible member #0"), "{err}");
    let (b, _) = host();
    let err = b
        .bind(
            InterceptorBinding::local("m", allow()).may_transform(["$target.ok", "input.content"]),
        )
        .build()
        .expect_err("a grant outside $target");
    assert!(err.to_string().contains("transform grant #1"), "{err}");
}

/// One transformable point of the mutation-guard table: the members to
/// emit, the grant, a path inside it and a path outside it.
struct GuardCase {
    point: InterceptionPoint,
    members: Value,
    grant: &'static str,
    inside: &'static str,
    outside: &'static str,
}

fn guard_cases() -> Vec<GuardCase> {
    let call = json!({"id": "c-1", "name": "bash", "args": {"cmd": "ls", "cwd": "/tmp"}});
    vec![
        GuardCase {
            point: InterceptionPoint::Input,
            members: json!({"input": {"content": "hi", "role": "user"}}),
            grant: "$target.content",
            inside: "$target.content",
            outside: "$target.role",
        },
        GuardCase {
            point: InterceptionPoint::PreModelCall,
            members: json!({"model": {"id": "m"}, "messages": [{"role": "user", "content": "hi"}]}),
            grant: "$target[0].content",
            inside: "$target[0].content",
            outside: "$target[0].role",
        },
        GuardCase {
            point: InterceptionPoint::PostModelCall,
            members: json!({"model": {"id": "m"}, "response": {
                "content": {"text": "hi"}, "tool_calls": [], "finish_reason": "stop"}}),
            grant: "$target.content",
            // Below a granted path is granted too.
            inside: "$target.content.text",
            outside: "$target.finish_reason",
        },
        GuardCase {
            point: InterceptionPoint::PreToolCall,
            members: json!({"tool_call": call}),
            grant: "$target.cmd",
            inside: "$target.cmd",
            // Above a granted path is not.
            outside: "$target",
        },
        GuardCase {
            point: InterceptionPoint::PostToolCall,
            members: json!({"tool_call": call, "tool_result": {
                "value": {"stdout": "a.txt", "exit": 0}, "is_error": false}}),
            grant: "$target.stdout",
            inside: "$target[\"stdout\"]",
            outside: "$target.exit",
        },
        GuardCase {
            point: InterceptionPoint::Output,
            members: json!({"output": {"content": "done"}}),
            grant: "$target.content",
            inside: "$policy_target.content",
            // A sibling that shares the grant's prefix as text only.
            outside: "$target.content_type",
        },
    ]
}

/// The value every guarded transform writes; it must never reach a record.
const NEW_VALUE: &str = "REWRITTEN-BY-GUARDED";

/// The guarded policy: transforms at the path the session's
/// `extensions.test.path` names for the point.
fn transform_at_test_path(ctx: &AgentContext) -> Verdict {
    let path = ctx
        .get("extensions")
        .and_then(|e| e["test"][ctx.point().as_str()].as_str());
    match path {
        Some(path) => Verdict::transform(path, json!(NEW_VALUE)),
        // The session boundaries: nothing to transform.
        None => Verdict::allow(),
    }
}

fn paths(inside: bool) -> Map<String, Value> {
    let by_point: Map<String, Value> = guard_cases()
        .iter()
        .map(|c| {
            let path = if inside { c.inside } else { c.outside };
            (c.point.as_str().to_owned(), json!(path))
        })
        .collect();
    json!({"extensions": {"test": by_point}})
        .as_object()
        .unwrap()
        .clone()
}

/// Builds the target member of `members` after writing `NEW_VALUE` at
/// `path` (relative to the target).
fn expected_target(case: &GuardCase, path: &str) -> Value {
    let mut ctx = hookwire_testkit::context_json(case.point);
    ctx.extend(case.members.as_object().unwrap().clone());
    let ctx = AgentContext::from_json(Value::Object(ctx)).unwrap();
    let mut target = ctx.target().unwrap().clone();
    hookwire::path::apply(&mut target, path, json!(NEW_VALUE)).unwrap();
    target
}

#[tokio::test]
async fn a_transform_outside_its_grant_fails_closed_in_its_slot_everywhere() {
    let guarded_service = Scripted::new("guarded", transform_at_test_path);
    let server = guarded_service.serve().await;
    let profiles = [
        Profile::SequentialFirstDeny,
        Profile::SequentialRunAll,
        Profile::ParallelStrictest,
        Profile::ParallelUnanimous,
    ];
    let mut checked = 0;
    for remote in [false, true] {
        for profile in profiles {
            for inside in [true, false] {
                let grants: Vec<&str> = guard_cases().iter().map(|c| c.grant).collect();
                let guarded = if remote {
                    InterceptorBinding::remote("guarded", server.endpoint())
                } else {
                    InterceptorBinding::local(
                        "guarded",
                        interceptor_fn(|ctx: AgentContext| async move {
                            Ok::<_, BoxError>(transform_at_test_path(&ctx))
                        }),
                    )
                };
                let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
                let (b, records) = host();
                let h = b
                    .composition(Composition::new(profile))
                    .bind(guarded.may_transform(grants))
                    .bind(InterceptorBinding::local("allow", allow))
                    .build()
                    .unwrap();
                let session = h.session_with("s-guard", paths(inside)).unwrap();
                session.start(["bash"]).await.unwrap();
                for case in guard_cases() {
                    let members = case.members.as_object().unwrap().clone();
                    let e = session.emit(case.point, members).await.unwrap();
                    let at = format!(
                        "{} {} {} {}",
                        if remote { "remote" } else { "local" },
                        profile.as_str(),
                        case.point,
                        if inside { "inside" } else { "outside" }
                    );
                    check_guard(&e, &case, profile, inside, &at);
                    let json = e.record().to_json().to_string();
                    assert!(!json.contains(NEW_VALUE), "{at}: payload in the record");
                    checked += 1;
                }
                assert_eq!(records.records().len(), 1 + guard_cases().len());
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 2 * 6);
    server.shutdown().await.unwrap();
}

fn check_guard(e: &Emission, case: &GuardCase, profile: Profile, inside: bool, at: &str) {
    let record = e.record();
    let slot = &record.verdicts[0];
    let untouched = {
        let mut ctx = hookwire_testkit::context_json(case.point);
        ctx.extend(case.members.as_object().unwrap().clone());
        AgentContext::from_json(Value::Object(ctx))
            .unwrap()
            .target()
            .cloned()
    };
    if inside {
        assert_eq!(slot.decision, hookwire::Decision::Transform, "{at}");
        assert!(
            record.extensions.is_empty(),
            "{at}: {:?}",
            record.extensions
        );
        if profile == Profile::ParallelUnanimous {
            // A lone transform is a disagreement there: nothing applied.
            assert_eq!(
                e.reason(),
                Some("host_error:composition_disagreement"),
                "{at}"
            );
            assert_eq!(e.target(), untouched.as_ref(), "{at}");
        } else {
            assert!(
                e.proceeds(),
                "{at}: {:?} {:?}",
                e.reason(),
                e.verdict().message
            );
            assert_eq!(
                e.target(),
                Some(&expected_target(case, case.inside)),
                "{at}"
            );
        }
        return;
    }
    assert_eq!(slot.decision, hookwire::Decision::Deny, "{at}");
    assert_eq!(
        slot.reason.as_deref(),
        Some("host_error:verdict_invalid"),
        "{at}"
    );
    assert_eq!(
        record.extensions["hookwire"]["mutation_refused"],
        json!(["guarded"]),
        "{at}"
    );
    assert!(e.is_blocked(), "{at}");
    assert_eq!(e.target(), untouched.as_ref(), "{at}: nothing applied");
    if profile == Profile::ParallelUnanimous {
        assert_eq!(
            e.reason(),
            Some("host_error:composition_disagreement"),
            "{at}"
        );
        assert_eq!(record.decided_by, None, "{at}");
    } else {
        assert_eq!(e.reason(), Some("host_error:verdict_invalid"), "{at}");
        assert_eq!(
            record.decided_by,
            Some(0),
            "{at}: the guarded binding's slot"
        );
        let message = record.verdict.message.as_deref().unwrap_or_default();
        assert!(
            message.contains("outside the binding's mutation grant")
                && message.contains(case.grant),
            "{at}: {message}"
        );
    }
    if profile == Profile::SequentialFirstDeny {
        assert_eq!(record.fold_truncated, Some(true), "{at}");
    }
}

#[tokio::test]
async fn an_empty_grant_makes_a_binding_read_only() {
    // Rewrites everywhere, except at the startup of session `s-ro`.
    let rewrite = interceptor_fn(|ctx: AgentContext| async move {
        let startup = ctx.point() == InterceptionPoint::AgentStartup;
        Ok::<_, BoxError>(if startup && ctx.session_id() == "s-ro" {
            Verdict::allow()
        } else {
            Verdict::transform("$target.content", json!("x"))
        })
    });
    let (b, records) = host();
    let h = b
        .bind(InterceptorBinding::local("ro", rewrite).may_transform(Vec::<String>::new()))
        .build()
        .unwrap();
    let session = h.session("s-ro").unwrap();
    session.start(["bash"]).await.unwrap();
    let e = session
        .emit(InterceptionPoint::Output, output("done"))
        .await
        .unwrap();
    assert_eq!(e.reason(), Some("host_error:verdict_invalid"));
    assert!(e.verdict().message.as_deref().unwrap().contains("(none)"));
    assert_eq!(
        records.records()[1].extensions["hookwire"]["mutation_refused"],
        json!(["ro"])
    );
    // Where the point forbids transforms, its own reason speaks, not the
    // guard's.
    let boundary = h.session("s-boundary").unwrap();
    let e = boundary.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:transform_target_forbidden"));
    assert!(records.records()[2].extensions.is_empty());
}

#[tokio::test]
async fn a_declared_binding_carries_its_visibility_and_mutation_grants() {
    let service = Scripted::new("scanner", |ctx| {
        if ctx.point() == InterceptionPoint::Output {
            Verdict::transform("$target", json!({"content": "all of it"}))
        } else {
            Verdict::allow()
        }
    });
    let seen = service.seen.clone();
    let server = service.serve().await;
    let doc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{
            "id": "scanner",
            "kind": "hookwire.grpc",
            "config": {
                "endpoint": server.endpoint(),
                "visibility": ["tenant"],
                "mutation": ["$target.content"]
            }
        }]
    });
    let declaration = Declaration::from_value(&doc).unwrap();
    let records = RecordLog::new();
    let h = Host::declared("agent", "hookwire")
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .load(&declaration, &Registry::standard())
        .unwrap();
    let session = h.session_with("s-declared", optional_members()).unwrap();
    session.start(["bash"]).await.unwrap();
    let e = session
        .emit(InterceptionPoint::Output, output("done"))
        .await
        .unwrap();
    let shown = seen.lock().unwrap().last().cloned().unwrap();
    assert!(shown.get("tenant").is_some() && shown.get("actor").is_none());
    assert_eq!(e.reason(), Some("host_error:verdict_invalid"));
    assert_eq!(
        records.records()[1].to_envelope()["extensions"]["hookwire"],
        json!({
            "visibility": {"scanner": ["actor", "extensions", "messages"]},
            "mutation_refused": ["scanner"]
        })
    );
    server.shutdown().await.unwrap();

    for (config, finding) in [
        (
            json!({"visibility": "actor"}),
            "config.visibility must be an array of strings",
        ),
        (json!({"visibility": ["Actor"]}), "config.visibility[0]"),
        (
            json!({"mutation": ["$target.a", "tool_call.args"]}),
            "config.mutation[1]",
        ),
    ] {
        let mut config = config.as_object().unwrap().clone();
        config.insert("endpoint".into(), json!("http://127.0.0.1:1"));
        let doc = json!({
            "declaration": "agent-hooks-declaration/1.0",
            "bindings": [{"id": "p", "kind": "hookwire.grpc", "config": config}]
        });
        let err = Host::declared("agent", "hookwire")
            .load(
                &Declaration::from_value(&doc).unwrap(),
                &Registry::standard(),
            )
            .expect_err("refused");
        assert!(err.to_string().contains(finding), "{err}");
    }
}
