//! Cedar test cases: `*.cedartest.json` files, each a JSON array of
//! requests and the decisions they expect, run by `hookwire policy test`
//! beside the Rego tests.
//!
//! ```json
//! [{"name": "unlisted tool denied", "point": "pre_tool_call",
//!   "context": {"agent": {"id": "billing-agent"}, "tool_call": {"name": "bash", "args": {}}},
//!   "expect": "deny", "reason": "policy:tool_not_allowed"}]
//! ```
//!
//! `context` is an agent context, or the path of a context file relative
//! to the test file (inside the directory). Members it leaves out get
//! defaults ([`DEFAULTS`]); `interception_point` is the case's `point`.
//! `expect` is `allow`, `deny` (without an approval block), `escalate` (a
//! deny with one), `transform` or `error` (the decision fails, which a
//! host records as `deny host_error:interceptor_failed`); `reason`, when
//! given, must equal the verdict's. A case is decided by the whole
//! directory, Rego and Cedar, as the service decides.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hookwire::{AgentContext, Decision, InterceptionPoint, Verdict};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::load::Module;
use crate::report::{TestOutcome, TestRule, TestStatus};

/// Largest test or context file read.
const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Most cases one file may hold.
const MAX_CASES: usize = 1000;

/// Context members a case leaves out, with the value they get.
pub(crate) const DEFAULTS: &str = r#"{"spec": "agent-hooks/0.1", "timestamp": "2025-01-01T00:00:00Z", "sequence": 0, "agent": {"id": "test-agent", "framework": "test"}, "session": {"id": "test-session"}}"#;

/// What a case expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Expect {
    Allow,
    Deny,
    Escalate,
    Transform,
    Error,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    point: String,
    context: Value,
    expect: Expect,
    #[serde(default)]
    reason: Option<String>,
}

/// One loaded case.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    rule: TestRule,
    context: Value,
    expect: Expect,
    reason: Option<String>,
}

impl Case {
    /// The case as a test of the set.
    pub(crate) fn rule(&self) -> &TestRule {
        &self.rule
    }
}

/// Reads the cases of `files`.
pub(crate) fn load(dir: &Path, files: &[Module]) -> Result<Vec<Case>, Error> {
    let mut cases = Vec::new();
    for file in files {
        let refuse = |message: String| Error::Cedar {
            path: file.path.clone(),
            message,
        };
        if file.text.len() > MAX_FILE_BYTES {
            return Err(refuse(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        let raw: Vec<RawCase> = serde_json::from_str(&file.text)
            .map_err(|e| refuse(format!("not a list of test cases: {e}")))?;
        if raw.len() > MAX_CASES {
            return Err(refuse(format!("more than {MAX_CASES} cases")));
        }
        let label = file
            .path
            .strip_prefix(dir)
            .unwrap_or(&file.path)
            .to_string_lossy()
            .into_owned();
        for case in raw {
            let at = |m: String| refuse(format!("case {:?}: {m}", case.name));
            let point: InterceptionPoint = case
                .point
                .parse()
                .map_err(|_| at(format!("{:?} is not an interception point", case.point)))?;
            let given = match case.context {
                Value::String(relative) => read_context(dir, &file.path, &relative).map_err(at)?,
                Value::Object(members) => members,
                _ => return Err(at("`context` must be an object or a file path".into())),
            };
            let context = completed(given, point);
            AgentContext::from_json(context.clone())
                .map_err(|e| at(format!("not a valid agent context: {e}")))?;
            if case
                .reason
                .as_deref()
                .is_some_and(|_| case.expect == Expect::Error || case.expect == Expect::Allow)
            {
                return Err(at(
                    "a `reason` belongs to a deny, escalate or transform".into()
                ));
            }
            cases.push(Case {
                rule: TestRule {
                    package: label.clone(),
                    name: case.name,
                    file: label.clone(),
                    rule_path: String::new(),
                },
                context,
                expect: case.expect,
                reason: case.reason,
            });
        }
    }
    Ok(cases)
}

/// A context file named by a case, relative to its test file, inside `dir`.
fn read_context(
    dir: &Path,
    test_file: &Path,
    relative: &str,
) -> Result<Map<String, Value>, String> {
    let base = test_file.parent().unwrap_or(dir);
    let path: PathBuf = base.join(relative);
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let root = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !resolved.starts_with(&root) {
        return Err(format!("{relative} is outside the policy directory"));
    }
    let text =
        std::fs::read_to_string(&resolved).map_err(|e| format!("cannot read {relative}: {e}"))?;
    if text.len() > MAX_FILE_BYTES {
        return Err(format!("{relative} is larger than {MAX_FILE_BYTES} bytes"));
    }
    match serde_json::from_str(&text) {
        Ok(Value::Object(members)) => Ok(members),
        Ok(_) => Err(format!("{relative} is not a JSON object")),
        Err(e) => Err(format!("{relative} is not JSON: {e}")),
    }
}

/// `given` with the defaults for what it leaves out, at `point`.
fn completed(mut given: Map<String, Value>, point: InterceptionPoint) -> Value {
    if let Ok(Value::Object(defaults)) = serde_json::from_str::<Value>(DEFAULTS) {
        for (key, value) in defaults {
            match (given.get_mut(&key), value) {
                (None, value) => {
                    given.insert(key, value);
                }
                (Some(Value::Object(have)), Value::Object(default)) => {
                    for (k, v) in default {
                        have.entry(k).or_insert(v);
                    }
                }
                _ => {}
            }
        }
    }
    given.insert("interception_point".into(), point.as_str().into());
    Value::Object(given)
}

/// Runs `case` through `decide` (the whole set's decision).
pub(crate) fn run(
    case: &Case,
    decide: impl FnOnce(&AgentContext) -> Result<Verdict, Error>,
) -> TestOutcome {
    let started = Instant::now();
    let decided = AgentContext::from_json(case.context.clone())
        .map_err(Error::from)
        .and_then(|ctx| decide(&ctx));
    let status = match (&decided, case.expect) {
        (Err(_), Expect::Error) => TestStatus::Passed,
        (Err(e), _) => TestStatus::Error(e.to_string()),
        (Ok(verdict), expect) => {
            let got = outcome(verdict);
            let reason_ok =
                case.reason.is_none() || case.reason.as_deref() == verdict.reason.as_deref();
            if got == expect && reason_ok {
                TestStatus::Passed
            } else {
                TestStatus::Mismatch(format!(
                    "expected {}{}, got {}{}",
                    name(expect),
                    case.reason
                        .as_deref()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default(),
                    name(got),
                    verdict
                        .reason
                        .as_deref()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default(),
                ))
            }
        }
    };
    TestOutcome {
        test: case.rule.clone(),
        status,
        duration: started.elapsed(),
    }
}

fn outcome(verdict: &Verdict) -> Expect {
    match verdict.decision {
        Decision::Allow => Expect::Allow,
        Decision::Deny if verdict.approval.is_some() => Expect::Escalate,
        Decision::Deny => Expect::Deny,
        Decision::Transform => Expect::Transform,
    }
}

fn name(expect: Expect) -> &'static str {
    match expect {
        Expect::Allow => "allow",
        Expect::Deny => "deny",
        Expect::Escalate => "escalate",
        Expect::Transform => "transform",
        Expect::Error => "error",
    }
}
