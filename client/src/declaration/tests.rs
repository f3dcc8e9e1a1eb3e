//! Unit tests of the loader: one or more documents per refusal class and
//! bound, the equivalence of the load paths, secrets from the environment,
//! sealing and the record stamp.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hookwire::{InterceptionPoint as P, Mode, Profile, Verdict};
use serde_json::{Value, json};

use super::*;
use crate::binding::InterceptorBinding;
use crate::interceptor::{BoxError, interceptor_fn};
use crate::{Host, RecordLog, ShutdownReason, ToolCall};

const SECRET: &str = "s3cr3t-do-not-log";

/// A registry with the standard kinds and `test.verdict`, whose config
/// `{"deny": reason}` denies and `{}` allows.
fn registry() -> Registry {
    Registry::standard()
        .kind("test.verdict", |config, ctx| {
            let deny = match config.get("deny") {
                None => None,
                Some(Value::String(r)) => Some(r.clone()),
                Some(_) => return Err("config.deny must be a string".into()),
            };
            let f = interceptor_fn(move |_| {
                let v = deny.clone().map_or_else(Verdict::allow, Verdict::deny);
                async move { Ok::<_, BoxError>(v) }
            });
            Ok(InterceptorBinding::local(ctx.id, f))
        })
        .unwrap()
        .kind("test.panics", |_, _| panic!("resolver bug"))
        .unwrap()
        .identity_provider("hmac-k1", |_| Ok("k1:fixed".into()))
        .unwrap()
        .approval_redactor("strip", |ctx| ctx.clone())
        .unwrap()
}

fn doc(extra: Value) -> Value {
    let mut d = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "allow", "kind": "test.verdict"}],
    });
    for (k, v) in extra.as_object().unwrap() {
        d[k] = v.clone();
    }
    d
}

/// The refusal class of loading `value` as JSON text against `registry()`.
fn class_of(value: &Value) -> Option<RefusalClass> {
    class_of_text(&value.to_string())
}

fn class_of_text(text: &str) -> Option<RefusalClass> {
    let refused = Declaration::from_json(text)
        .and_then(|d| Host::declared("a", "hookwire").load(&d, &registry()));
    match refused {
        Ok(_) => None,
        Err(e) => {
            let r = e.refusal().expect("a refusal").clone();
            let shown = e.to_string();
            assert!(!shown.contains(SECRET), "finding echoes config: {shown}");
            assert!(
                r.findings
                    .iter()
                    .all(|f| f.detail.chars().count() <= MAX_DETAIL_CHARS)
            );
            Some(r.class)
        }
    }
}

#[track_caller]
fn refused(class: RefusalClass, docs: &[Value]) {
    for d in docs {
        assert_eq!(class_of(d), Some(class), "{d}");
    }
}

#[test]
fn accepts_the_minimal_document() {
    assert_eq!(class_of(&doc(json!({}))), None);
}

#[test]
fn unreadable() {
    let dir = std::env::temp_dir().join(format!("hookwire-decl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let class = |p: &std::path::Path| {
        Declaration::from_path(p)
            .unwrap_err()
            .refusal()
            .unwrap()
            .class
    };
    assert_eq!(class(&dir), RefusalClass::Unreadable);
    assert_eq!(class(&dir.join("missing.json")), RefusalClass::Unreadable);
    let bom = dir.join("bom.json");
    std::fs::write(
        &bom,
        [
            b"\xEF\xBB\xBF".as_slice(),
            doc(json!({})).to_string().as_bytes(),
        ]
        .concat(),
    )
    .unwrap();
    assert_eq!(class(&bom), RefusalClass::Unreadable);
    let latin1 = dir.join("latin1.json");
    std::fs::write(&latin1, b"{\"id\": \"caf\xe9\"}").unwrap();
    assert_eq!(class(&latin1), RefusalClass::Unreadable);
    let big = dir.join("big.json");
    let padding = " ".repeat(MAX_DOCUMENT_BYTES);
    std::fs::write(&big, format!("{}{padding}", doc(json!({})))).unwrap();
    assert_eq!(class(&big), RefusalClass::Unreadable);
    let ok = dir.join("ok.json");
    std::fs::write(&ok, doc(json!({})).to_string()).unwrap();
    assert!(Declaration::from_path(&ok).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed() {
    for text in [
        "not json",
        "[]",
        r#"{"declaration": "agent-hooks-declaration/1.0", "bindings": [], "bindings": []}"#,
        r#"{"declaration": "agent-hooks-declaration/1.0", "bindings": []} {}"#,
    ] {
        assert_eq!(class_of_text(text), Some(RefusalClass::Malformed), "{text}");
    }
    let mut deep = json!({});
    for _ in 0..30 {
        deep = json!({ "x": deep });
    }
    // The root is level 1, extensions level 2, `deep` 31 more: level 33.
    assert_eq!(
        class_of(&doc(json!({"extensions": {"x": deep.clone()}}))),
        Some(RefusalClass::Malformed)
    );
    assert_eq!(
        class_of(&doc(json!({"extensions": {"x": deep["x"].clone()}}))),
        None
    );
    let long = format!("{}{}", doc(json!({})), " ".repeat(MAX_DOCUMENT_BYTES));
    assert_eq!(class_of_text(&long), Some(RefusalClass::Malformed));
}

/// Found by the `declaration` fuzz target: an invalid escape followed by
/// a multi-byte character put the error offset inside that character, and
/// reporting its line and column panicked instead of refusing.
#[test]
fn malformed_escape_before_a_multibyte_character() {
    for text in [
        "{\"\\\u{e9}\": 1}",
        "{\"bi.diclar(\\tlarr/o\\\u{10b8c1}lar\\to/oin\\t\\t\\tlar\\to/oin1",
    ] {
        assert_eq!(
            class_of_text(text),
            Some(RefusalClass::Malformed),
            "{text:?}"
        );
    }
}

#[test]
fn version_unsupported_lists_the_accepted_set() {
    for v in [
        json!("agent-hooks-declaration/0.1"),
        json!("agent-hooks-declaration/1.1"),
        json!("agent-hooks-declaration/2.0"),
        json!(1),
        Value::Null,
    ] {
        let d = doc(json!({"declaration": v}));
        assert_eq!(class_of(&d), Some(RefusalClass::VersionUnsupported), "{d}");
    }
    let mut missing = doc(json!({}));
    missing.as_object_mut().unwrap().remove("declaration");
    let e = Declaration::from_value(&missing).unwrap_err();
    let r = e.refusal().unwrap();
    assert_eq!(r.class, RefusalClass::VersionUnsupported);
    assert_eq!(r.accepted, [DECLARATION_VERSION]);
    // The version check runs before the unknown-member check.
    missing["policy"] = json!(true);
    assert_eq!(class_of(&missing), Some(RefusalClass::VersionUnsupported));
}

#[test]
fn spec_unsupported() {
    refused(
        RefusalClass::SpecUnsupported,
        &[
            doc(json!({"spec": "agent-hooks/9.0"})),
            doc(json!({"spec": "agent-hooks/0.2"})),
            doc(json!({"spec": "agent-hooks/1"})),
            doc(json!({"spec": 1})),
        ],
    );
    assert_eq!(class_of(&doc(json!({"spec": "agent-hooks/0.1"}))), None);
    assert_eq!(class_of(&doc(json!({"spec": "agent-hooks/0.0"}))), None);
}

#[test]
fn unknown_field_at_every_closed_level() {
    refused(
        RefusalClass::UnknownField,
        &[
            doc(json!({"policy": {"deny": true}})),
            doc(json!({"host": {"name": "x", "vendor": "y"}})),
            doc(
                json!({"configuration": {"composition": {"profile": "sequential/first_deny", "on_timeout": "deny"}}}),
            ),
            doc(json!({"configuration": {"timeouts": {"total_ms": 5}}})),
            doc(json!({"surface": {"profiles": {"parallel/fastest": {}}}})),
            doc(
                json!({"surface": {"profiles": {"sequential/run_all": {"on_approval": ["stop"]}}}}),
            ),
            doc(json!({"bindings": [{"id": "a", "kind": "test.verdict", "enabled": true}]})),
        ],
    );
    // config and extension values are open.
    assert_eq!(
        class_of(&doc(json!({"extensions": {"acme": {"anything": [1]}}}))),
        None
    );
    let e = Declaration::from_value(&doc(json!({"a": 1, "b": 2}))).unwrap_err();
    assert_eq!(
        e.refusal().unwrap().findings.len(),
        2,
        "every finding of the step"
    );
}

#[test]
fn invalid_field() {
    let b = |binding: Value| doc(json!({"bindings": [binding]}));
    refused(
        RefusalClass::InvalidField,
        &[
            doc(json!({"configuration": {"mode": "audit"}})),
            doc(json!({"configuration": {"composition": {"profile": "parallel/fastest"}}})),
            doc(json!({"configuration": {"identity_provider": "jcs-custom"}})),
            doc(json!({"configuration": {"identity_provider": "Upper"}})),
            doc(json!({"configuration": {"approval": {"resolver": "a.b"}}})),
            doc(json!({"configuration": {"posture": {"tool_seam_host_error": "abort"}}})),
            doc(json!({"configuration": {"timeouts": {"interceptor_ms": 0}}})),
            doc(json!({"configuration": {"timeouts": {"interceptor_ms": 3_600_001}}})),
            doc(json!({"configuration": {"timeouts": {"interceptor_ms": 5000.0}}})),
            doc(json!({"configuration": {"records": {"max_buffered": 9_007_199_254_740_992_u64}}})),
            doc(json!({"configuration": {"records": {"max_buffered": 0}}})),
            doc(json!({"id": "Has Spaces"})),
            doc(json!({"host": {"version": "1"}})),
            doc(json!({"surface": {"buffered_output": true, "exposure_bound": "x"}})),
            doc(json!({"surface": {"buffered_output": false}})),
            doc(json!({"surface": {"interception_points": ["agent_startup", "input", "output"]}})),
            doc(json!({"surface": {"declaration_versions": []}})),
            doc(json!({"extensions": {"Bad-Key": 1}})),
            doc(json!({"bindings": {}})),
            b(json!({"kind": "test.verdict"})),
            b(json!({"id": "a"})),
            b(json!({"id": "A", "kind": "test.verdict"})),
            b(json!({"id": "a".repeat(65), "kind": "test.verdict"})),
            b(json!({"id": "a", "kind": "nodot"})),
            b(json!({"id": "a", "kind": format!("a.{}", "b".repeat(127))})),
            b(json!({"id": "a", "kind": "test.verdict", "at": []})),
            b(json!({"id": "a", "kind": "test.verdict", "at": ["input", "input"]})),
            b(json!({"id": "a", "kind": "test.verdict", "at": ["pre_tool"]})),
            b(json!({"id": "a", "kind": "test.verdict", "timeout_ms": "5"})),
        ],
    );
    let too_many: Vec<Value> = (0..=MAX_BINDINGS)
        .map(|i| json!({"id": format!("b{i}"), "kind": "test.verdict"}))
        .collect();
    assert_eq!(
        class_of(&doc(json!({"bindings": too_many}))),
        Some(RefusalClass::InvalidField)
    );
    let at_bound: Vec<Value> = (0..MAX_BINDINGS)
        .map(|i| json!({"id": format!("b{i}"), "kind": "test.verdict"}))
        .collect();
    assert_eq!(class_of(&doc(json!({"bindings": at_bound}))), None);
    // Exponent and fraction forms of an integer are refused from text too.
    let text = doc(json!({})).to_string().replace(
        "\"bindings\"",
        "\"configuration\": {\"timeouts\": {\"interceptor_ms\": 5e3}}, \"bindings\"",
    );
    assert_eq!(class_of_text(&text), Some(RefusalClass::InvalidField));
}

#[test]
fn integers_beyond_two_to_the_53_are_refused_anywhere_without_echoing_config() {
    let text = doc(json!({})).to_string().replace(
        "\"kind\":\"test.verdict\"",
        &format!("\"kind\":\"test.verdict\",\"config\":{{\"{SECRET}\":9007199254740992}}"),
    );
    assert!(text.contains(SECRET));
    let e = Declaration::from_json(&text).unwrap_err();
    let r = e.refusal().unwrap();
    assert_eq!(r.class, RefusalClass::InvalidField);
    assert_eq!(r.findings[0].pointer, "/bindings/0/config");
    assert!(!e.to_string().contains(SECRET));
    let at_bound = text.replace("9007199254740992", "9007199254740991");
    assert!(Declaration::from_json(&at_bound).is_ok());
}

#[test]
fn inconsistent() {
    let points = |p: &[&str]| json!({"surface": {"interception_points": p}});
    refused(
        RefusalClass::Inconsistent,
        &[
            doc(
                json!({"configuration": {"composition": {"profile": "sequential/run_all", "on_approval": "resume"}}}),
            ),
            doc(
                json!({"configuration": {"composition": {"profile": "parallel/strictest", "on_disagreement": "deny"}}}),
            ),
            doc(points(&[
                "agent_startup",
                "input",
                "pre_model_call",
                "post_model_call",
                "pre_tool_call",
                "post_tool_call",
                "output",
            ])),
            doc(points(&[
                "agent_startup",
                "input",
                "pre_model_call",
                "output",
                "agent_shutdown",
            ])),
            doc(
                json!({"surface": {"interception_points": ["agent_startup", "input", "output", "agent_shutdown"], "capabilities": ["model_calls"]}}),
            ),
            doc(json!({"surface": {"capabilities": ["incremental_output"]}})),
            doc(json!({"surface": {"declaration_versions": ["agent-hooks-declaration/1.1"]}})),
            doc(json!({"surface": {"profiles": {"sequential/run_all": {}}}})),
            doc(
                json!({"configuration": {"composition": {"on_approval": "resume"}}, "surface": {"profiles": {"sequential/first_deny": {}}}}),
            ),
            doc(
                json!({"surface": {"interception_points": ["agent_startup", "input", "output", "agent_shutdown"]},
                       "bindings": [{"id": "a", "kind": "test.verdict", "at": ["pre_tool_call"]}]}),
            ),
            doc(
                json!({"bindings": [{"id": "a", "kind": "test.verdict"}, {"id": "a", "kind": "test.verdict"}]}),
            ),
        ],
    );
}

#[test]
fn inconsistent_against_the_filled_surface_says_it_was_filled() {
    let narrow = HostSurface {
        interception_points: FLOOR_POINTS.into_iter().collect(),
        capabilities: ["host_declaration".to_owned()].into_iter().collect(),
        ..HostSurface::hookwire()
    };
    let registry = Registry::with_surface(narrow).with_standard_kinds();
    let d = Declaration::from_value(&json!({
        "declaration": DECLARATION_VERSION,
        "bindings": [{"id": "a", "kind": "hookwire.allow", "at": ["pre_tool_call"]}],
    }))
    .unwrap();
    let e = d.resolve(&registry).unwrap_err();
    let r = e.refusal().unwrap();
    assert_eq!(r.class, RefusalClass::Inconsistent);
    assert!(r.findings[0].detail.contains("does not state"), "{e}");
}

#[test]
fn surface_unsupported() {
    refused(
        RefusalClass::SurfaceUnsupported,
        &[
            doc(
                json!({"surface": {"declaration_versions": ["agent-hooks-declaration/0.1", "agent-hooks-declaration/1.0"]}}),
            ),
            doc(json!({"surface": {"capabilities": ["model_calls", "tool_calls", "streaming"]}})),
            doc(json!({"surface": {"buffered_output": false, "exposure_bound": "one message"}})),
            doc(json!({"configuration": {"posture": {"tool_seam_host_error": "terminate"}}})),
        ],
    );
    // A host whose code implements less refuses a document asking more,
    // including through a filled default (the continue posture).
    let terminate = HostSurface {
        tool_seam_host_error: Posture::Terminate,
        ..HostSurface::hookwire()
    };
    let d = Declaration::from_value(&doc(json!({}))).unwrap();
    let e = d
        .resolve(&Registry::with_surface(terminate).with_standard_kinds())
        .unwrap_err();
    assert_eq!(e.refusal().unwrap().class, RefusalClass::SurfaceUnsupported);
    let mut first_deny_only = HostSurface::hookwire();
    first_deny_only
        .profiles
        .retain(|p, _| *p == Profile::SequentialFirstDeny);
    let d = Declaration::from_value(&doc(
        json!({"configuration": {"composition": {"profile": "parallel/strictest"}}}),
    ))
    .unwrap();
    let e = d
        .resolve(&Registry::with_surface(first_deny_only))
        .unwrap_err();
    assert_eq!(e.refusal().unwrap().class, RefusalClass::SurfaceUnsupported);
}

#[test]
fn reference_unresolved() {
    refused(
        RefusalClass::ReferenceUnresolved,
        &[
            doc(json!({"configuration": {"identity_provider": "hmac-sha256-k9"}})),
            doc(json!({"configuration": {"approval": {"resolver": "tickets"}}})),
            doc(json!({"configuration": {"approval": {"redactor": "nobody"}}})),
        ],
    );
    assert_eq!(
        class_of(&doc(
            json!({"configuration": {"identity_provider": "hmac-k1", "approval": {"redactor": "strip"}}})
        )),
        None
    );
    assert_eq!(
        class_of(&doc(json!({"configuration": {"identity_provider": null}}))),
        None
    );
}

#[test]
fn kind_unknown_lists_every_unknown_kind_before_any_resolver_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let registry = Registry::new()
        .kind("test.counted", move |_, ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(InterceptorBinding::local(
                ctx.id,
                interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
            ))
        })
        .unwrap();
    let d = Declaration::from_value(&doc(json!({"bindings": [
        {"id": "a", "kind": "test.counted"},
        {"id": "b", "kind": "acme.ghost"},
        {"id": "c", "kind": "acme.phantom"},
    ]})))
    .unwrap();
    let e = Host::declared("a", "hookwire")
        .load(&d, &registry)
        .unwrap_err();
    let r = e.refusal().unwrap();
    assert_eq!(r.class, RefusalClass::KindUnknown);
    assert_eq!(r.findings.len(), 2);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn binding_rejected_by_resolvers_without_echoing_config() {
    let grpc = |config: Value| {
        doc(json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": config}]}))
    };
    refused(
        RefusalClass::BindingRejected,
        &[
            doc(json!({"bindings": [{"id": "a", "kind": "test.verdict", "config": {"deny": 7}}]})),
            doc(json!({"bindings": [{"id": "a", "kind": "test.panics"}]})),
            doc(
                json!({"bindings": [{"id": "a", "kind": "hookwire.allow", "config": {"x": SECRET}}]}),
            ),
            grpc(json!({})),
            grpc(json!(SECRET)),
            grpc(json!({"endpoint": format!("ftp://{SECRET}")})),
            grpc(
                json!({"endpoint": "https://127.0.0.1:1", "tls": {"ca_file": format!("/{SECRET}.pem")}}),
            ),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": {"key": SECRET}})),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": {"domain_name": 7}})),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": SECRET})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "tls": {"ca_file": SECRET}})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "password": SECRET})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": SECRET}})),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": {"value": SECRET}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": {"env": "HOOKWIRE_TEST_SURELY_UNSET_VARIABLE"}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"grpc-timeout": {"env": "PATH"}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"x-key": {"env": "bad name"}}}),
            ),
        ],
    );
}

#[tokio::test]
async fn a_missing_variable_is_named_and_a_present_one_is_sent_as_metadata() {
    let e = Declaration::from_value(&doc(json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": {
        "endpoint": "http://127.0.0.1:1",
        "metadata": {"authorization": {"env": "HOOKWIRE_TEST_SURELY_UNSET_VARIABLE", "prefix": SECRET}},
    }}]})))
    .and_then(|d| Host::declared("a", "hookwire").load(&d, &registry()))
    .unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("HOOKWIRE_TEST_SURELY_UNSET_VARIABLE") && shown.contains("not set"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET));

    // Any variable set for this process with a header-safe value.
    let (name, _) = std::env::vars()
        .find(|(k, v)| {
            k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && !v.is_empty()
                && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        })
        .expect("some environment variable");
    let d = Declaration::from_value(&doc(
        json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": {
            "endpoint": "http://127.0.0.1:1",
            "metadata": {"authorization": {"env": name, "prefix": "Bearer "}},
        }}]}),
    ))
    .unwrap();
    let host = Host::declared("a", "hookwire")
        .load(&d, &registry())
        .unwrap();
    assert_eq!(
        host.remote_endpoints(),
        [("p".to_owned(), "http://127.0.0.1:1".to_owned())]
    );
}

/// One session through every point, the same for every host.
async fn session_records(host: &Host) -> Vec<Value> {
    let s = host.session("s-1").unwrap();
    s.start(["bash"]).await.unwrap();
    s.input(json!("hi"), crate::InputRole::User).await.unwrap();
    s.pre_tool_call(&ToolCall::new("c1", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    s.shutdown(ShutdownReason::Completed).await.unwrap();
    let log = host.record_buffer().expect("no sink: buffered");
    log.session("s-1")
        .iter()
        .map(|r| {
            let mut v = r.to_json();
            v.as_object_mut().unwrap().remove("timestamp");
            v
        })
        .collect()
}

#[tokio::test]
async fn the_four_load_paths_yield_the_same_resolved_form_and_records() {
    let document = json!({
        "$schema": "https://example.invalid/host-declaration-1.0.schema.json",
        "declaration": DECLARATION_VERSION,
        "id": "equivalence",
        "configuration": {
            "composition": {"profile": "sequential/run_all"},
            "identity_provider": "hmac-k1",
            "timeouts": {"interceptor_ms": 2000},
        },
        "bindings": [
            {"id": "gate", "kind": "test.verdict", "config": {"deny": "policy:no_tools"}, "at": ["pre_tool_call"], "timeout_ms": 1000},
            {"id": "pass", "kind": "hookwire.allow"},
        ],
    });
    let path = std::env::temp_dir().join(format!("hookwire-equiv-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let built = Declaration::builder()
        .id("equivalence")
        .composition(hookwire::Composition::new(Profile::SequentialRunAll))
        .identity_provider(Some("hmac-k1"))
        .interceptor_timeout_ms(Some(2000))
        .bind(
            DeclaredBinding::new("gate", "test.verdict")
                .config(json!({"deny": "policy:no_tools"}))
                .at([P::PreToolCall])
                .timeout_ms(Some(1000)),
        )
        .bind(DeclaredBinding::new("pass", "hookwire.allow"))
        .build()
        .unwrap();
    let paths = [
        Declaration::from_path(&path).unwrap(),
        Declaration::from_json(&document.to_string()).unwrap(),
        Declaration::from_value(&document).unwrap(),
        built,
    ];
    std::fs::remove_file(&path).unwrap();
    let registry = registry();
    let canonical: Vec<String> = paths
        .iter()
        .map(|d| d.resolve(&registry).unwrap().canonical_json())
        .collect();
    assert!(
        canonical.iter().all(|c| *c == canonical[0]),
        "{canonical:#?}"
    );
    let mut records = Vec::new();
    for d in &paths {
        let host = Host::declared("agent", "hookwire")
            .load(d, &registry)
            .unwrap();
        records.push(session_records(&host).await);
    }
    assert_eq!(records[0].len(), 4);
    assert!(records.iter().all(|r| *r == records[0]));
    let tool = &records[0][2];
    assert_eq!(tool["declaration"], "agent-hooks-declaration/1.0");
    assert_eq!(tool["interceptors_registered"], 2);
    assert_eq!(tool["verdict"]["reason"], "policy:no_tools");
    assert_eq!(tool["verdicts"][0]["name"], "gate");
    assert_eq!(tool["identity_provider"], "hmac-k1");
    assert_eq!(
        records[0][1]["interceptors_registered"], 1,
        "gate runs at pre_tool_call only"
    );
}

#[tokio::test]
async fn declared_hosts_stamp_records_and_code_configured_hosts_do_not() {
    let log = RecordLog::new();
    let d =
        Declaration::from_value(&doc(json!({"configuration": {"mode": "evaluate_only"}}))).unwrap();
    let host = Host::declared("agent", "hookwire")
        .record_sink(log.clone())
        .load(&d, &registry())
        .unwrap();
    assert_eq!(host.declaration(), Some(DECLARATION_VERSION));
    assert_eq!(host.mode(), Mode::EvaluateOnly);
    assert!(host.record_buffer().is_none(), "a sink was attached");
    let s = host.session("s").unwrap();
    s.start(Vec::<String>::new()).await.unwrap();
    assert_eq!(
        log.records()[0].declaration.as_deref(),
        Some(DECLARATION_VERSION)
    );

    let plain = RecordLog::new();
    let host = Host::builder("agent", "hookwire")
        .record_sink(plain.clone())
        .build()
        .unwrap();
    assert_eq!(host.declaration(), None);
    host.session("s")
        .unwrap()
        .start(Vec::<String>::new())
        .await
        .unwrap();
    assert_eq!(plain.records()[0].declaration, None);
    assert!(plain.records()[0].to_json().get("declaration").is_none());
}

#[tokio::test]
async fn the_record_buffer_keeps_max_buffered_records() {
    let d = Declaration::from_value(&doc(
        json!({"configuration": {"records": {"max_buffered": 2}}}),
    ))
    .unwrap();
    let host = Host::declared("agent", "hookwire")
        .load(&d, &registry())
        .unwrap();
    let s = host.session("s").unwrap();
    s.start(Vec::<String>::new()).await.unwrap();
    s.input(json!("a"), crate::InputRole::User).await.unwrap();
    s.output(json!("b")).await.unwrap();
    let buffer = host.record_buffer().unwrap();
    assert_eq!(buffer.records().len(), 2);
    assert_eq!(buffer.dropped(), 1);
    assert_eq!(buffer.drain().len(), 2);
    assert!(buffer.records().is_empty());
}

#[test]
fn timeouts_resolve_from_the_binding_the_document_and_null() {
    let d = Declaration::from_value(&doc(json!({
        "configuration": {"timeouts": {"interceptor_ms": null}},
        "bindings": [
            {"id": "a", "kind": "hookwire.allow"},
            {"id": "b", "kind": "hookwire.allow", "timeout_ms": 250},
        ],
    })))
    .unwrap();
    let resolved = d.resolve(&registry()).unwrap();
    assert_eq!(
        resolved.approval_resolver_ms, None,
        "defaults to interceptor_ms"
    );
    let host = Host::declared("agent", "hookwire")
        .load(&d, &registry())
        .unwrap();
    assert_eq!(
        host.timeouts(P::Input),
        [None, Some(std::time::Duration::from_millis(250))]
    );
    let d = Declaration::from_value(&doc(json!({}))).unwrap();
    let resolved = d.resolve(&registry()).unwrap();
    assert_eq!(resolved.interceptor_ms, Some(DEFAULT_INTERCEPTOR_MS));
    assert_eq!(resolved.bindings[0].at.len(), 8);
    assert_eq!(
        resolved.composition.on_approval,
        Some(hookwire::OnApproval::Stop)
    );
    assert_eq!(resolved.identity_provider.as_deref(), Some("jcs-sha256"));
}

#[test]
fn the_resolved_form_drops_schema_and_sorts_sets() {
    let d = Declaration::from_value(&doc(json!({
        "$schema": "x",
        "surface": {"interception_points": ["output", "agent_shutdown", "input", "agent_startup"], "capabilities": ["host_declaration"]},
        "bindings": [{"id": "a", "kind": "hookwire.allow", "at": ["output", "input"]}],
    })))
    .unwrap();
    let v = d.resolve(&registry()).unwrap().to_json();
    assert!(v.get("$schema").is_none());
    assert_eq!(
        v["surface"]["interception_points"],
        json!(["agent_startup", "input", "output", "agent_shutdown"])
    );
    assert_eq!(v["bindings"][0]["at"], json!(["input", "output"]));
    assert_eq!(v["spec"], hookwire::SPEC_VERSION);
}

#[test]
fn registries_refuse_reserved_duplicate_and_malformed_names() {
    let allow = |_: &Value, ctx: &BindingContext<'_>| {
        Ok(InterceptorBinding::local(
            ctx.id,
            interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
        ))
    };
    assert!(Registry::new().kind("ctk.scripted", allow).is_err());
    assert!(Registry::new().kind("agent_hooks.x", allow).is_err());
    assert!(
        Registry::new()
            .for_conformance_kit()
            .kind("ctk.scripted", allow)
            .is_ok()
    );
    assert!(Registry::new().kind("nodot", allow).is_err());
    assert!(Registry::standard().kind("hookwire.grpc", allow).is_err());
    assert!(
        Registry::new()
            .identity_provider("jcs-mine", |_| Ok(String::new()))
            .is_err()
    );
    assert!(
        Registry::new()
            .approval_redactor("Bad", |c| c.clone())
            .is_err()
    );
}

#[test]
fn every_class_has_its_code() {
    let codes: Vec<String> = RefusalClass::ALL.iter().map(|c| c.code()).collect();
    assert_eq!(codes.len(), 11);
    assert!(codes.iter().all(|c| c.starts_with("declaration_error:")));
    assert_eq!(
        RefusalClass::UnknownField.to_string(),
        "declaration_error:unknown_field"
    );
}

#[test]
fn the_document_digest_is_of_the_document_and_the_resolved_digest_of_what_it_resolves_to() {
    let registry = registry();
    let bare = Declaration::from_json(
        r#"{"declaration": "agent-hooks-declaration/1.0",
            "bindings": [{"id": "allow", "kind": "test.verdict"}]}"#,
    )
    .unwrap();
    // The same document, its keys in another order and spaced otherwise.
    let reordered = Declaration::from_json(
        r#"{ "bindings":[ {"kind":"test.verdict","id":"allow"} ],"declaration":"agent-hooks-declaration/1.0" }"#,
    )
    .unwrap();
    // Another document that resolves to the same host: a default spelt out.
    let spelt =
        Declaration::from_value(&doc(json!({"configuration": {"mode": "enforce"}}))).unwrap();
    let digest = bare.digest();
    assert!(
        digest.strip_prefix("sha256:").is_some_and(|h| h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())),
        "{digest}"
    );
    assert_eq!(reordered.digest(), digest);
    assert_ne!(spelt.digest(), digest, "the document differs");
    let resolved = |d: &Declaration| d.resolve(&registry).unwrap().digest();
    assert_eq!(resolved(&spelt), resolved(&bare), "the host does not");
    assert_ne!(resolved(&bare), digest, "the two digests are of two things");
    // The document digest is of the canonical document text.
    let canonical = hookwire::canonical::to_canonical_string(&bare.to_value()).unwrap();
    assert_eq!(
        digest,
        hookwire::canonical::sha256_identity(canonical.as_bytes())
    );
}
