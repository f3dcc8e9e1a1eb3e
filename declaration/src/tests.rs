//! Resolution against a catalog with no host behind it: the seam the
//! host's registry implements, exercised with a stub.

use std::collections::BTreeSet;

use serde_json::json;

use super::*;

/// A catalog of hookwire's surface with one kind and one approval
/// resolver registered.
struct Stub(HostSurface);

impl Catalog for Stub {
    fn surface(&self) -> &HostSurface {
        &self.0
    }
    fn has_identity_provider(&self, _: &str) -> bool {
        false
    }
    fn has_approval_resolver(&self, name: &str) -> bool {
        name == "desk"
    }
    fn has_approval_redactor(&self, _: &str) -> bool {
        false
    }
    fn has_kind(&self, kind: &str) -> bool {
        kind == "test.kind"
    }
}

fn document(kind: &str) -> Document {
    Document::from_value(&json!({
        "declaration": DECLARATION_VERSION,
        "bindings": [{"id": "one", "kind": kind}],
    }))
    .expect("a well-formed document")
}

#[test]
fn a_registered_kind_resolves_with_every_default_filled() {
    let stub = Stub(HostSurface::hookwire());
    let resolved = document("test.kind").resolve(&stub).unwrap();
    assert_eq!(resolved.bindings.len(), 1);
    assert_eq!(
        resolved.bindings[0].timeout_ms,
        Some(DEFAULT_INTERCEPTOR_MS)
    );
    assert_eq!(resolved.identity_provider.as_deref(), Some(JCS_SHA256));
    let points: BTreeSet<_> = resolved.surface.interception_points.clone();
    assert_eq!(resolved.bindings[0].at, points);
}

#[test]
fn names_the_catalog_lacks_are_refused_in_pipeline_order() {
    let stub = Stub(HostSurface::hookwire());
    let unknown = document("other.kind").resolve(&stub).unwrap_err();
    assert_eq!(unknown.class, RefusalClass::KindUnknown);
    assert_eq!(unknown.findings[0].pointer, "/bindings/0/kind");

    let mut value = document("other.kind").to_value();
    value["configuration"] = json!({"approval": {"resolver": "nobody"}});
    let unresolved = Document::from_value(&value)
        .unwrap()
        .resolve(&stub)
        .unwrap_err();
    assert_eq!(unresolved.class, RefusalClass::ReferenceUnresolved);
}
