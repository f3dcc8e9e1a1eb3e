//! The line a declared host logs once at load (§7.7.8): the contract
//! version, the document's id and the `jcs-sha256` digest of the document
//! as written, beside the resolved form's digest, each under its own name.

use hookwire_client::Host;
use hookwire_client::declaration::{Declaration, Registry};
use serde_json::json;

#[test]
fn a_declared_host_logs_the_documents_digest_and_the_resolved_forms_under_their_names() {
    let logs = hookwire_testkit::process_logs();
    let registry = Registry::standard();
    let document = Declaration::from_value(&json!({
        "declaration": "agent-hooks-declaration/1.0",
        "id": "digest-under-test",
        "configuration": {"mode": "enforce"},
        "bindings": [{"id": "pass", "kind": "hookwire.allow"}],
    }))
    .unwrap();
    let resolved = document.resolve(&registry).unwrap();
    assert_ne!(document.digest(), resolved.digest());
    let _host = Host::declared("agent", "hookwire")
        .load(&document, &registry)
        .unwrap();
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("host built from a declaration") && l.contains("digest-under-test"))
        .unwrap_or_else(|| panic!("no load line in:\n{text}"));
    assert!(
        line.contains(&format!("document_digest={}", document.digest())),
        "{line}"
    );
    assert!(
        line.contains(&format!("resolved_digest={}", resolved.digest())),
        "{line}"
    );
    assert!(
        line.contains("declaration=agent-hooks-declaration/1.0"),
        "{line}"
    );
}
