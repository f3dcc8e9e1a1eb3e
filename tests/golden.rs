//! The spec's golden identity vectors (`tests/golden/identity.json`, the
//! upstream `conformance/golden/identity.json`) against hookwire's RFC 8785
//! canonicalizer and `jcs-sha256` identity (`src/canonical.rs`, §10.2).
//!
//! Each positive fixture is checked twice: the canonical text of its whole
//! `ctx` value must be exactly `expect.canonical_json`, and the identity of
//! the context (validated as a §4 context, then hashed over its §10.2
//! projection) must be exactly `expect.context_identity`, which is also
//! checked to be the SHA-256 of the projection's canonical bytes. A
//! negative fixture (`expect.error`, always `host_error:context_invalid`)
//! must be refused: as a context, or by the identity's input domain. The
//! file's SHA-256 is checked first, so a changed file cannot pass for the
//! pinned one. One expectation of the file is not RFC 8785's (see
//! [`ERRATA`]); it is corrected here, named in the output, and fails once
//! the file no longer has it. A plain binary: it prints one line per
//! fixture and a final `golden: N passed, M failed` line, and exits
//! non-zero on a failure.

use std::process::ExitCode;

use hookwire::canonical::{sha256_identity, to_canonical_string};
use hookwire::{AgentContext, ContextLimits};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The pinned file's SHA-256 (see `tests/golden/README.md`).
const GOLDEN_SHA256: &str = "160eb2f2886472e56bad59caa09b2431748c5b65c41fa99ef7930d7776255072";

/// An expectation of the pinned file that is not RFC 8785's, corrected
/// here rather than in the file (which stays byte-for-byte upstream's).
struct Erratum {
    id: &'static str,
    /// The number as the file's `canonical_json` writes it.
    upstream: &'static str,
    /// The number as RFC 8785 writes the double the input denotes.
    corrected: &'static str,
    /// SHA-256 of the corrected `canonical_json` (which, for a context
    /// without optional members, is also the identity's preimage).
    context_identity: &'static str,
    why: &'static str,
}

/// G-15's input `9.999999999999997e+22` is the double 0x44B52D02C7E14AF5,
/// which RFC 8785 (Appendix B lists this very value) and ECMAScript write
/// as `9.999999999999997e+22`; the file expects `9.999999999999996e+22`,
/// the text of its neighbour 0x44B52D02C7E14AF4, i.e. the generator's JSON
/// reader rounded the input one ulp off. The corrected identity is the
/// SHA-256 of the file's canonical text with that one number corrected.
const ERRATA: &[Erratum] = &[Erratum {
    id: "G-15-rfc8785-numbers",
    upstream: "9.999999999999996e+22",
    corrected: "9.999999999999997e+22",
    context_identity: "sha256:31bbcf009cf0bb7edd78eda0e8d38b1978e1b9f0c5bc07350a271136fb5299fe",
    why: "the input 9.999999999999997e+22 is 0x44B52D02C7E14AF5, which RFC 8785 writes 9.999999999999997e+22 (Appendix B); the file's 9.999999999999996e+22 is one ulp off",
}];

fn main() -> ExitCode {
    if skipped_by_cli_filter() {
        return ExitCode::SUCCESS;
    }
    let path = hookwire_testkit::workspace_root().join("tests/golden/identity.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("golden: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if digest != GOLDEN_SHA256 {
        eprintln!(
            "golden: {} has SHA-256 {digest}, not the pinned {GOLDEN_SHA256} (tests/golden/README.md)",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    let doc: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("golden: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let fixtures = doc["fixtures"].as_array().cloned().unwrap_or_default();
    let (mut passed, mut failed) = (0usize, 0usize);
    for f in &fixtures {
        let id = f["id"].as_str().unwrap_or("?");
        let failures = check(f);
        if failures.is_empty() {
            passed += 1;
            println!("{id}: pass");
        } else {
            failed += 1;
            println!("{id}: FAIL");
            for failure in failures {
                println!("    {failure}");
            }
        }
    }
    println!("golden: {passed} passed, {failed} failed");
    if failed > 0 || passed == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The fixture's expectation, with its erratum applied (and named on
/// stdout); an erratum that no longer matches the file fails the fixture,
/// so it is dropped once upstream corrects the file.
fn expectation(f: &Value) -> Result<Value, String> {
    let id = f["id"].as_str().unwrap_or_default();
    let mut expect = f["expect"].clone();
    let Some(e) = ERRATA.iter().find(|e| e.id == id) else {
        return Ok(expect);
    };
    let canonical = expect["canonical_json"].as_str().unwrap_or_default();
    if !canonical.contains(e.upstream) {
        return Err(format!(
            "erratum: the file no longer writes {}: drop the erratum",
            e.upstream
        ));
    }
    expect["canonical_json"] = canonical.replace(e.upstream, e.corrected).into();
    expect["context_identity"] = e.context_identity.into();
    println!("{id}: erratum applied: {}", e.why);
    Ok(expect)
}

/// What is wrong with hookwire's answer to fixture `f`.
fn check(f: &Value) -> Vec<String> {
    let ctx = &f["ctx"];
    let expect = match expectation(f) {
        Ok(expect) => expect,
        Err(e) => return vec![e],
    };
    let expect = &expect;
    let limits = ContextLimits::default();
    let mut failures = Vec::new();
    if let Some(error) = expect.get("error") {
        if error != "host_error:context_invalid" {
            failures.push(format!("unknown expected error {error}"));
        }
        let refused = AgentContext::from_json(ctx.clone())
            .and_then(|c| c.validate().map(|()| c))
            .and_then(|c| c.jcs_sha256_identity(&limits));
        if let Ok(identity) = refused {
            failures.push(format!("expected a refusal, got the identity {identity}"));
        }
        return failures;
    }
    // The canonical text of the whole value.
    match to_canonical_string(ctx) {
        Ok(text) if Some(text.as_str()) == expect["canonical_json"].as_str() => {}
        Ok(text) => failures.push(format!(
            "canonical_json: expected {}, got {text}",
            expect["canonical_json"]
        )),
        Err(e) => failures.push(format!("canonical_json: refused: {e}")),
    }
    // The context identity over the §10.2 projection.
    let context = match AgentContext::from_json(ctx.clone()).and_then(|c| c.validate().map(|()| c))
    {
        Ok(c) => c,
        Err(e) => {
            failures.push(format!("not a valid context: {e}"));
            return failures;
        }
    };
    let want = expect["context_identity"].as_str().unwrap_or_default();
    match context.jcs_sha256_identity(&limits) {
        Ok(got) if got == want => {}
        Ok(got) => failures.push(format!("context_identity: expected {want}, got {got}")),
        Err(e) => failures.push(format!("context_identity: refused: {e}")),
    }
    // input → canonical bytes → identity: the identity is the hash of the
    // projection's canonical bytes.
    let mut preimage = String::new();
    match context.write_identity_preimage(&limits, &mut preimage) {
        Ok(()) if sha256_identity(preimage.as_bytes()) == want => {}
        Ok(()) => failures.push(format!(
            "the SHA-256 of the canonical preimage {preimage} is not {want}"
        )),
        Err(e) => failures.push(format!("preimage: refused: {e}")),
    }
    failures
}

/// `cargo test` passes its filters and flags to every test binary: list
/// this one as the single test `golden`, and run it only when no filter
/// excludes it (and not for `--ignored`).
fn skipped_by_cli_filter() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("golden: test");
        return true;
    }
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    args.iter().any(|a| a == "--ignored")
        || (!names.is_empty() && !names.iter().any(|n| "golden".contains(n.as_str())))
}
