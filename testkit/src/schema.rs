//! The official AGENT-HOOKS JSON schemas as the test suite's oracle: the
//! §10.3 JSON of every record a testkit host produces is validated against
//! `interception-record.schema.json`, and every context a testkit service
//! receives against its point's `agent-context/<point>.schema.json` (the
//! kit's strict per-point schemas).
//!
//! The schemas come from the pinned conformance kit that
//! `scripts/setup.sh` unpacks into `.cache/ctk/schema/`; they are
//! registered by their `$id`, so nothing is fetched while validating.
//!
//! A violation ends the test process at once (exit code 101), after
//! printing what was invalid, where, and the offending JSON: a record sink
//! cannot fail an emission (the host catches a sink's panic and counts
//! it), and a service's panic only becomes a deny, so anything softer
//! could pass unnoticed. Counts are kept per process; each [`SchemaSink`]
//! prints the running totals when its host is dropped
//! (`schema: N records, M contexts validated, 0 violations`).

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use hookwire::{AgentContext, InterceptionPoint, InterceptionRecord, RecordSink};
use jsonschema::{Registry, Resource, Validator};
use serde_json::Value;

/// The record schema's file name in the kit.
const RECORD_SCHEMA: &str = "interception-record.schema.json";
/// The generic context schema, for a context whose point is unknown.
const CONTEXT_SCHEMA: &str = "agent-context.schema.json";
/// The folder of the per-point context schemas.
const CONTEXT_DIR: &str = "agent-context";

/// Where `scripts/setup.sh` leaves the official schemas:
/// `.cache/ctk/schema/` in the workspace.
pub fn schema_dir() -> PathBuf {
    crate::workspace::workspace_root().join(".cache/ctk/schema")
}

/// The compiled record and context schemas.
pub struct Schemas {
    record: Validator,
    contexts: HashMap<InterceptionPoint, Validator>,
    any_context: Validator,
}

impl fmt::Debug for Schemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schemas")
            .field("contexts", &self.contexts.len())
            .finish_non_exhaustive()
    }
}

impl Schemas {
    /// Reads and compiles the kit's schemas from `dir` (laid out as
    /// `scripts/fetch-ctk-vectors.sh` unpacks them). Formats (`date-time`)
    /// are checked, not only annotated.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let mut documents = Vec::new();
        for folder in [dir.to_owned(), dir.join(CONTEXT_DIR)] {
            let entries = std::fs::read_dir(&folder)
                .map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
            for entry in entries {
                let path = entry.map_err(|e| e.to_string())?.path();
                if path.to_string_lossy().ends_with(".schema.json") {
                    documents.push((path.clone(), read_json(&path)?));
                }
            }
        }
        let mut registry = Registry::new();
        for (path, schema) in &documents {
            let id = schema["$id"]
                .as_str()
                .ok_or_else(|| format!("{}: no $id", path.display()))?;
            registry = registry
                .add(id, Resource::from_contents(schema.clone()))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let registry = registry.prepare().map_err(|e| e.to_string())?;
        let compile = |path: &Path| -> Result<Validator, String> {
            let schema = documents
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, s)| s)
                .ok_or_else(|| format!("{} is missing", path.display()))?;
            jsonschema::options()
                .with_registry(&registry)
                .should_validate_formats(true)
                .build(schema)
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        let mut contexts = HashMap::new();
        for point in InterceptionPoint::ALL {
            let file = dir
                .join(CONTEXT_DIR)
                .join(format!("{}.schema.json", point.as_str()));
            contexts.insert(point, compile(&file)?);
        }
        Ok(Self {
            record: compile(&dir.join(RECORD_SCHEMA))?,
            any_context: compile(&dir.join(CONTEXT_SCHEMA))?,
            contexts,
        })
    }

    /// What is wrong with a record's §10.3 JSON, one line per violation
    /// (`<instance path>: <message>`, `/` for the whole value); empty when
    /// it is valid.
    pub fn record_violations(&self, record: &Value) -> Vec<String> {
        violations(&self.record, record)
    }

    /// What is wrong with a context's JSON under its point's schema (the
    /// generic context schema when the point is unknown); empty when it is
    /// valid.
    pub fn context_violations(&self, context: &Value) -> Vec<String> {
        let point = context["interception_point"]
            .as_str()
            .and_then(|p| p.parse::<InterceptionPoint>().ok());
        let validator = point
            .and_then(|p| self.contexts.get(&p))
            .unwrap_or(&self.any_context);
        violations(validator, context)
    }
}

fn violations(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/" } else { &at })
        })
        .collect()
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The schemas of this workspace's kit, compiled once per process. Panics
/// with a message naming `scripts/setup.sh` when they are missing.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Result<Schemas, String>> = OnceLock::new();
    let loaded = SCHEMAS.get_or_init(|| {
        let dir = schema_dir();
        if !dir.join(RECORD_SCHEMA).is_file() {
            return Err(format!(
                "the official AGENT-HOOKS JSON schemas are missing ({} has no {RECORD_SCHEMA}): \
                 run scripts/setup.sh, which unpacks the pinned conformance kit into .cache/ctk/",
                dir.display()
            ));
        }
        Schemas::load(&dir)
    });
    match loaded {
        Ok(schemas) => schemas,
        Err(e) => panic!("schema: {e}"),
    }
}

/// What this process validated so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Records validated.
    pub records: u64,
    /// Contexts validated.
    pub contexts: u64,
    /// Violations found (a violation ends the process, so 0 in any line a
    /// finished run prints).
    pub violations: u64,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "schema: {} records, {} contexts validated, {} violations",
            self.records, self.contexts, self.violations
        )
    }
}

static RECORDS: AtomicU64 = AtomicU64::new(0);
static CONTEXTS: AtomicU64 = AtomicU64::new(0);
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

/// The running totals of this process.
pub fn tally() -> Tally {
    Tally {
        records: RECORDS.load(Ordering::Acquire),
        contexts: CONTEXTS.load(Ordering::Acquire),
        violations: VIOLATIONS.load(Ordering::Acquire),
    }
}

/// Validates a record's §10.3 JSON ([`InterceptionRecord::to_json`]) and
/// counts it; a violation ends the process.
pub fn check_record(record: &InterceptionRecord) {
    let json = record.to_json();
    let found = schemas().record_violations(&json);
    RECORDS.fetch_add(1, Ordering::AcqRel);
    if !found.is_empty() {
        violated("record", RECORD_SCHEMA, &found, &json);
    }
}

/// Validates a context an interceptor received against its point's schema
/// and counts it; a violation ends the process.
pub fn check_context(context: &AgentContext) {
    let json = context.to_json();
    let found = schemas().context_violations(&json);
    CONTEXTS.fetch_add(1, Ordering::AcqRel);
    if !found.is_empty() {
        violated(
            "context",
            "agent-context/<point>.schema.json",
            &found,
            &json,
        );
    }
}

/// Reports a violation on stderr (not captured by the test harness) and
/// ends the process.
fn violated(what: &str, schema: &str, found: &[String], json: &Value) -> ! {
    VIOLATIONS.fetch_add(1, Ordering::AcqRel);
    let thread = std::thread::current();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "schema: VIOLATION: a {what} does not validate against {schema} (thread {}):",
        thread.name().unwrap_or("unnamed")
    );
    for line in found {
        let _ = writeln!(err, "schema:   {line}");
    }
    let _ = writeln!(err, "schema:   the {what}: {json}");
    let _ = writeln!(err, "{}", tally());
    let _ = err.flush();
    std::process::exit(101);
}

/// A record sink that validates every record against the official record
/// schema ([`check_record`]). Cheap to clone; when the last clone is
/// dropped (normally with its host) it prints the process's running
/// [`Tally`] on stderr, unless made [`quiet`](Self::quiet).
#[derive(Debug, Clone)]
pub struct SchemaSink {
    _reporter: Arc<Reporter>,
}

#[derive(Debug)]
struct Reporter {
    report: bool,
}

impl Drop for Reporter {
    fn drop(&mut self) {
        if self.report {
            let _ = writeln!(std::io::stderr().lock(), "{}", tally());
        }
    }
}

impl SchemaSink {
    /// A sink that reports the running totals when dropped. Loads the
    /// schemas now, so that missing schemas fail the caller (with a message
    /// naming `scripts/setup.sh`), not an emission.
    pub fn new() -> Self {
        schemas();
        Self {
            _reporter: Arc::new(Reporter { report: true }),
        }
    }

    /// A sink that validates and counts without printing: for a run that
    /// prints [`tally`] once itself.
    pub fn quiet() -> Self {
        schemas();
        Self {
            _reporter: Arc::new(Reporter { report: false }),
        }
    }
}

impl Default for SchemaSink {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordSink for SchemaSink {
    fn record(&self, record: &InterceptionRecord) {
        check_record(record);
    }
}

#[cfg(test)]
mod tests {
    use hookwire::{BoxError, Verdict};
    use hookwire_client::{Host, InputRole, RecordLog, interceptor_fn};
    use serde_json::json;

    use super::*;

    #[test]
    fn every_fixture_context_validates_and_a_broken_one_does_not() {
        let s = schemas();
        for point in InterceptionPoint::ALL {
            let ctx = crate::context(point).to_json();
            assert_eq!(s.context_violations(&ctx), Vec::<String>::new(), "{point}");
        }
        let mut bad = crate::context_json(InterceptionPoint::PreToolCall);
        bad["tool_call"]["extra"] = json!(1);
        bad["timestamp"] = json!("yesterday");
        let found = s.context_violations(&Value::Object(bad));
        assert!(
            found.iter().any(|v| v.starts_with("/tool_call:")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|v| v.starts_with("/timestamp:")),
            "{found:?}"
        );
        let mut unknown = crate::context_json(InterceptionPoint::Input);
        unknown["interception_point"] = json!("pre_lunch");
        assert!(!s.context_violations(&Value::Object(unknown)).is_empty());
    }

    #[tokio::test]
    async fn a_hosts_records_validate_and_a_record_with_facts_inside_would_not() {
        let records = RecordLog::new();
        let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
        let host = Host::builder("agent", "hookwire")
            .interceptor("allow", allow)
            .record_sink(records.clone())
            .record_sink(SchemaSink::quiet())
            .build()
            .unwrap();
        let session = host.session("s").unwrap();
        session.start(["t"]).await.unwrap();
        session.input(json!("hi"), InputRole::User).await.unwrap();
        let s = schemas();
        let mut all = records.records();
        assert_eq!(all.len(), 2);
        for r in &all {
            assert_eq!(s.record_violations(&r.to_json()), Vec::<String>::new());
        }
        // The facts travel beside the record: inside it they would be the
        // member the closed schema refuses.
        let r = &mut all[0];
        r.extensions
            .insert("hookwire".into(), json!({"cancelled": true}));
        assert_eq!(s.record_violations(&r.to_json()), Vec::<String>::new());
        let mut inside = r.to_json();
        inside["extensions"] = Value::Object(r.extensions.clone());
        let found = s.record_violations(&inside);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("/: ") && found[0].contains("'extensions'"),
            "{found:?}"
        );
        assert!(tally().records >= 2);
    }
}
