//! Steps 3 and 4: the document's contract version is one this loader
//! accepts, and its `spec`, when stated, is a wire version it implements.

use hookwire::SPEC_VERSION;
use serde_json::{Map, Value};

use crate::limits::SUPPORTED_DECLARATION_VERSIONS;
use crate::refusal::{Refusal, RefusalClass};

/// Step 3: `declaration` present, a string, and accepted.
pub(crate) fn check_version(doc: &Map<String, Value>) -> Result<(), Refusal> {
    let detail = match doc.get("declaration") {
        Some(Value::String(v)) if SUPPORTED_DECLARATION_VERSIONS.contains(&v.as_str()) => {
            return Ok(());
        }
        None => "the member is missing",
        Some(Value::String(_)) => "this loader does not accept that version",
        Some(_) => "must be a string",
    };
    Err(Refusal::one(
        RefusalClass::VersionUnsupported,
        "/declaration",
        format!(
            "{detail}; accepted: {}",
            SUPPORTED_DECLARATION_VERSIONS.join(", ")
        ),
    )
    .accepting(SUPPORTED_DECLARATION_VERSIONS))
}

/// `<prefix><major>.<minor>` with decimal parts of at most 9 digits.
pub(crate) fn parse_version(s: &str, prefix: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.strip_prefix(prefix)?.split_once('.')?;
    let part = |p: &str| {
        (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    Some((part(major)?, part(minor)?))
}

/// Step 4: `spec`, when present, has this loader's major and no higher
/// minor.
pub(crate) fn check_spec(doc: &Map<String, Value>) -> Result<(), Refusal> {
    let Some(spec) = doc.get("spec") else {
        return Ok(());
    };
    let ours = parse_version(SPEC_VERSION, "agent-hooks/").unwrap_or((0, 1));
    let detail = match spec.as_str().map(|s| parse_version(s, "agent-hooks/")) {
        Some(Some((major, minor))) if major == ours.0 && minor <= ours.1 => return Ok(()),
        Some(Some(_)) => format!("this loader implements {SPEC_VERSION}"),
        Some(None) => "must have the form agent-hooks/<major>.<minor>".to_owned(),
        None => "must be a string".to_owned(),
    };
    Err(Refusal::one(RefusalClass::SpecUnsupported, "/spec", detail))
}
