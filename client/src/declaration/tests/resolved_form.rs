//! The resolved form: timeouts, normalisation, registries' names, refusal
//! codes and the two digests.

use super::*;

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
