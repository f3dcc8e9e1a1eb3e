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
    let text = std::fs::read_to_string(context)
        .map_err(|e| CliError::PolicyTests(format!("cannot read {}: {e}", context.display())))?;
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::PolicyTests(format!("{}: not JSON: {e}", context.display())))?;
    if let Value::Object(members) = &mut value {
        match members.get("interception_point").and_then(Value::as_str) {
            None => {
                members.insert("interception_point".into(), point.as_str().into());
            }
            Some(given) if given != point.as_str() => {
                return Err(CliError::PolicyTests(format!(
                    "{} is a {given} context, not {point}",
                    context.display()
                )));
            }
            Some(_) => {}
        }
    }
    let ctx = AgentContext::from_json(value).map_err(hookwire_policy::Error::from)?;
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
