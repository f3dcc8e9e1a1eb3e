//! `declaration`: bytes → the host declaration loader (§7.7): parsing and
//! the document checks ([`Declaration::from_json`]), resolution against a
//! registry ([`Declaration::resolve`]), and loading a sealed host, which
//! runs the built-in kind resolvers (`hookwire.grpc`, `hookwire.allow`).
//!
//! Input: the document text (non-UTF-8 inputs are skipped; the loader
//! refuses them before parsing). Properties: nothing panics; a loaded
//! document's value loads again to the same value; a resolved declaration
//! has a stable digest and canonical form.

use hookwire::{BoxError, InterceptorResponse, Verdict, interceptor_fn};
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{Host, InterceptorBinding};
use serde_json::Map;

/// The registry documents are resolved against: hookwire's built-in kinds
/// plus `ctk.scripted`, the kind the conformance vectors' documents bind
/// (an allow-all here), so that the seeds taken from the vectors resolve.
pub fn registry() -> Registry {
    Registry::standard()
        .for_conformance_kit()
        .kind("ctk.scripted", |_config, ctx| {
            let allow = interceptor_fn(|_ctx| async {
                Ok::<_, BoxError>(InterceptorResponse {
                    verdict: Verdict::allow(),
                    extensions: Map::new(),
                })
            });
            Ok(InterceptorBinding::local(ctx.id, allow))
        })
        .expect("ctk.scripted is a kind name the conformance registry takes")
}

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(declaration) = Declaration::from_json(text) else {
        return;
    };
    let value = declaration.to_value();
    let again = Declaration::from_value(&value).expect("a loaded document's value loads");
    assert_eq!(again.to_value(), value, "loading is idempotent");

    let registry = registry();
    let Ok(resolved) = declaration.resolve(&registry) else {
        return;
    };
    let canonical = resolved.canonical_json();
    assert_eq!(
        declaration
            .resolve(&registry)
            .expect("resolution is deterministic")
            .canonical_json(),
        canonical,
    );
    let _ = resolved.digest();

    // Loading runs the kind resolvers; a gRPC binding builds its (lazy)
    // channel inside a runtime.
    let rt = crate::runtime();
    let _guard = rt.enter();
    let _ = Host::declared("fuzz-agent", "hookwire").load(&declaration, &registry);
}
