//! `hookwire policy eval`: the verdict for one context, from the command line.

use std::path::Path;

use hookwire::{AgentContext, InterceptionPoint};
use hookwire_policy::{PolicyOptions, PolicySet};
use serde_json::Value;

use crate::error::CliError;

/// Prints the verdict the policies of `dir` give for the context in `context`.
pub(super) fn eval(
    dir: &Path,
    point: InterceptionPoint,
    context: &Path,
    explain: bool,
    options: PolicyOptions,
) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let ctx = read_context(context, Some(point))?;
    if explain {
        for (package, document) in set.decision_documents(&ctx)? {
            outln!("{package}: {document}");
        }
    }
    let verdict = set.decide(&ctx)?;
    outln!(
        "{}",
        serde_json::to_string_pretty(&verdict.to_json()).unwrap_or_default()
    );
    Ok(())
}

/// Reads the agent context in `path`; `point` fills in a missing
/// `interception_point` and must match a given one.
pub(super) fn read_context(
    path: &Path,
    point: Option<InterceptionPoint>,
) -> Result<AgentContext, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::PolicyTests(format!("cannot read {}: {e}", path.display())))?;
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::PolicyTests(format!("{}: not JSON: {e}", path.display())))?;
    if let (Value::Object(members), Some(point)) = (&mut value, point) {
        match members.get("interception_point").and_then(Value::as_str) {
            None => {
                members.insert("interception_point".into(), point.as_str().into());
            }
            Some(given) if given != point.as_str() => {
                return Err(CliError::PolicyTests(format!(
                    "{} is a {given} context, not {point}",
                    path.display()
                )));
            }
            Some(_) => {}
        }
    }
    Ok(AgentContext::from_json(value).map_err(hookwire_policy::Error::from)?)
}
