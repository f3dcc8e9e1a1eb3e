//! One or more documents per refusal class and bound.

use super::*;

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
