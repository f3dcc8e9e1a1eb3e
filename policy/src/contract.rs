//! The decision contract: how the decision documents of the packages that
//! apply at a point become one verdict (the full §5 verdict: allow, deny
//! with reason, transform, warn, escalate, evidence, labels).
//!
//! A decision package (`package hookwire.<name>`) may define these rules;
//! an undefined rule contributes nothing. `docs/policies.md` is the
//! reference for authors; this module is its implementation.
//!
//! | rule | shape | effect |
//! | --- | --- | --- |
//! | `deny` | set of `reason` strings or `{reason, message?}` | deny |
//! | `escalate` | set of `reason` strings or `{reason, message?, approval?}` | deny with an approval block |
//! | `transform` | set of `{path, value}` | rewrite the target |
//! | `warn` | set of `reason` strings or `{reason?, message?}` | warnings on any decision |
//! | `labels` | set of strings | `result_labels` |
//! | `evidence` | object | `evidence` (objects of several packages merge) |
//!
//! Precedence follows the §5.1 order: any `deny` wins, then `escalate`,
//! then a `transform`, else `allow`. The first entry (packages by name,
//! entries in Rego's set order) gives `reason` and `message`; every further
//! `deny` or `escalate` entry is kept as a warning. Anything that does not
//! fit these shapes is [`Error::IllFormed`], never an allow.

use serde_json::{Map, Value};

use hookwire::Transform;
use hookwire::{InterceptionPoint, Verdict, Warning};

use crate::error::Error;

/// The decision rules of the contract, in the order they are read.
pub const DECISION_RULES: [&str; 6] = [
    "deny",
    "escalate",
    "transform",
    "warn",
    "labels",
    "evidence",
];

/// The load-time rule naming the points a package decides at.
pub const POINTS_RULE: &str = "points";

/// A reason an entry gave, with its message and (for escalations) approval.
#[derive(Debug)]
struct Entry {
    reason: String,
    message: Option<String>,
    approval: Option<Map<String, Value>>,
}

/// What all packages said at one point, gathered before combining.
#[derive(Debug, Default)]
struct Gathered {
    denies: Vec<Entry>,
    escalations: Vec<Entry>,
    transforms: Vec<(String, Transform)>,
    warnings: Vec<Warning>,
    labels: Vec<String>,
    evidence: Option<Map<String, Value>>,
}

/// Combines the decision documents of the packages that apply at `point`
/// (each `(package, {rule: value})`, `null` for an undefined rule) into one
/// verdict.
pub fn combine(point: InterceptionPoint, documents: &[(String, Value)]) -> Result<Verdict, Error> {
    let mut gathered = Gathered::default();
    for (package, document) in documents {
        let Value::Object(rules) = document else {
            return Err(ill(package, "*", "the decision document is not an object"));
        };
        gather(package, rules, &mut gathered)?;
    }
    decide(point, gathered)
}

fn gather(package: &str, rules: &Map<String, Value>, into: &mut Gathered) -> Result<(), Error> {
    for (rule, value) in rules {
        if value.is_null() {
            continue;
        }
        match rule.as_str() {
            "deny" => {
                for entry in entries(package, "deny", value)? {
                    into.denies
                        .push(reason_entry(package, "deny", entry, false)?);
                }
            }
            "escalate" => {
                for entry in entries(package, "escalate", value)? {
                    into.escalations
                        .push(reason_entry(package, "escalate", entry, true)?);
                }
            }
            "transform" => {
                for entry in entries(package, "transform", value)? {
                    into.transforms
                        .push((package.to_owned(), transform_entry(package, entry)?));
                }
            }
            "warn" => {
                for entry in entries(package, "warn", value)? {
                    into.warnings.push(warn_entry(package, entry)?);
                }
            }
            "labels" => {
                for entry in entries(package, "labels", value)? {
                    let Value::String(label) = entry else {
                        return Err(ill(package, "labels", "every label must be a string"));
                    };
                    into.labels.push(label.clone());
                }
            }
            "evidence" => {
                let Value::Object(evidence) = value else {
                    return Err(ill(package, "evidence", "evidence must be an object"));
                };
                let merged = into.evidence.get_or_insert_with(Map::new);
                for (key, v) in evidence {
                    match merged.get(key) {
                        Some(existing) if existing != v => {
                            return Err(ill(
                                package,
                                "evidence",
                                &format!(
                                    "member {key:?} conflicts with another package's evidence"
                                ),
                            ));
                        }
                        _ => {
                            merged.insert(key.clone(), v.clone());
                        }
                    }
                }
            }
            // The package name travels in the document; other members are
            // not produced by the generated query.
            _ => {}
        }
    }
    Ok(())
}

/// The elements of a set (or array) rule.
fn entries<'a>(package: &str, rule: &'static str, value: &'a Value) -> Result<&'a [Value], Error> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(ill(package, rule, "must be a set (or an array)")),
    }
}

fn reason_entry(
    package: &str,
    rule: &'static str,
    entry: &Value,
    approval_allowed: bool,
) -> Result<Entry, Error> {
    match entry {
        Value::String(reason) => Ok(Entry {
            reason: checked_reason(package, rule, reason)?,
            message: None,
            approval: None,
        }),
        Value::Object(members) => {
            let allowed: &[&str] = if approval_allowed {
                &["reason", "message", "approval"]
            } else {
                &["reason", "message"]
            };
            only_members(package, rule, members, allowed)?;
            let reason = match members.get("reason") {
                Some(Value::String(r)) => checked_reason(package, rule, r)?,
                _ => return Err(ill(package, rule, "an entry needs a string `reason`")),
            };
            let message = optional_string(package, rule, members, "message")?;
            let approval = match members.get("approval") {
                None | Some(Value::Null) => None,
                Some(Value::Object(a)) => Some(a.clone()),
                Some(_) => return Err(ill(package, rule, "`approval` must be an object")),
            };
            Ok(Entry {
                reason,
                message,
                approval,
            })
        }
        _ => Err(ill(
            package,
            rule,
            "an entry must be a reason string or an object",
        )),
    }
}

fn transform_entry(package: &str, entry: &Value) -> Result<Transform, Error> {
    let Value::Object(members) = entry else {
        return Err(ill(
            package,
            "transform",
            "an entry must be a {path, value} object",
        ));
    };
    only_members(package, "transform", members, &["path", "value"])?;
    let Some(Value::String(path)) = members.get("path") else {
        return Err(ill(package, "transform", "an entry needs a string `path`"));
    };
    if hookwire::path::parse(path).is_err() {
        return Err(ill(
            package,
            "transform",
            "`path` is not a transform path rooted at $target",
        ));
    }
    let Some(value) = members.get("value") else {
        return Err(ill(package, "transform", "an entry needs a `value`"));
    };
    Ok(Transform {
        path: path.clone(),
        value: value.clone(),
    })
}

fn warn_entry(package: &str, entry: &Value) -> Result<Warning, Error> {
    match entry {
        Value::String(reason) => Ok(Warning {
            reason: Some(checked_reason(package, "warn", reason)?),
            message: None,
        }),
        Value::Object(members) => {
            only_members(package, "warn", members, &["reason", "message"])?;
            let reason = optional_string(package, "warn", members, "reason")?
                .map(|r| checked_reason(package, "warn", &r))
                .transpose()?;
            let message = optional_string(package, "warn", members, "message")?;
            if reason.is_none() && message.is_none() {
                return Err(ill(
                    package,
                    "warn",
                    "an entry needs a `reason` or a `message`",
                ));
            }
            Ok(Warning { reason, message })
        }
        _ => Err(ill(
            package,
            "warn",
            "an entry must be a reason string or an object",
        )),
    }
}

fn checked_reason(package: &str, rule: &'static str, reason: &str) -> Result<String, Error> {
    if reason.is_empty() {
        return Err(ill(package, rule, "a reason must not be empty"));
    }
    if reason.starts_with(hookwire::HOST_ERROR_PREFIX) {
        return Err(ill(
            package,
            rule,
            "reasons starting with host_error: are reserved to hosts",
        ));
    }
    Ok(reason.to_owned())
}

fn optional_string(
    package: &str,
    rule: &'static str,
    members: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, Error> {
    match members.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ill(package, rule, &format!("`{key}` must be a string"))),
    }
}

fn only_members(
    package: &str,
    rule: &'static str,
    members: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), Error> {
    match members.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(unknown) => Err(ill(
            package,
            rule,
            &format!(
                "unknown member {unknown:?} (allowed: {})",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

fn decide(point: InterceptionPoint, g: Gathered) -> Result<Verdict, Error> {
    let Gathered {
        denies,
        escalations,
        mut transforms,
        warnings,
        mut labels,
        evidence,
    } = g;
    let mut demoted = Vec::new();
    let mut verdict = if !denies.is_empty() {
        let mut rest = denies.into_iter();
        let first = rest.next().map(entry_verdict);
        demoted.extend(rest.chain(escalations).map(Entry::into_warning));
        first
    } else if !escalations.is_empty() {
        let mut rest = escalations.into_iter();
        let first = rest.next().map(|mut e| {
            let approval = e.approval.take().unwrap_or_default();
            entry_verdict(e).with_approval(approval)
        });
        demoted.extend(rest.map(Entry::into_warning));
        first
    } else {
        transforms.dedup_by(|a, b| a.1 == b.1);
        if transforms.len() > 1 {
            let packages: Vec<&str> = transforms.iter().map(|(p, _)| p.as_str()).collect();
            return Err(ill(
                "*",
                "transform",
                &format!(
                    "{} different transforms at one point (from {}); a verdict carries one",
                    transforms.len(),
                    packages.join(", ")
                ),
            ));
        }
        match transforms.pop() {
            Some((package, _)) if !point.permits_transform() => {
                return Err(ill(
                    &package,
                    "transform",
                    &format!("transform is forbidden at {point}"),
                ));
            }
            Some((_, t)) => Some(Verdict::transform(t.path, t.value)),
            None => None,
        }
    }
    .unwrap_or_else(Verdict::allow);
    verdict.warnings = warnings.into_iter().chain(demoted).collect();
    labels.sort();
    labels.dedup();
    verdict.result_labels = labels;
    verdict.evidence = evidence;
    verdict
        .validate()
        .map_err(|e| ill("*", "verdict", &e.to_string()))?;
    Ok(verdict)
}

impl Entry {
    /// A further deny or escalation, kept as a warning.
    fn into_warning(self) -> Warning {
        Warning {
            reason: Some(self.reason),
            message: self.message,
        }
    }
}

fn entry_verdict(e: Entry) -> Verdict {
    let verdict = Verdict::deny(e.reason);
    match e.message {
        Some(m) => verdict.with_message(m),
        None => verdict,
    }
}

fn ill(package: &str, rule: &'static str, message: &str) -> Error {
    Error::IllFormed {
        package: package.to_owned(),
        rule,
        message: message.to_owned(),
    }
}
