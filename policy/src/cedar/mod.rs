//! Cedar policies beside Rego: every `*.cedar` file of a policy directory
//! is one decision package, validated against the directory's schema at
//! load and decided by `cedar-policy`'s authorizer.
//!
//! A file decides at the points its policies' action scopes name
//! (`action == Hookwire::Action::"pre_tool_call"`, `action in [...]`; an
//! unconstrained action: every point the schema declares). Its answer is a
//! decision document in the Rego contract's shape (`deny`, `escalate`), so
//! Rego packages and Cedar files combine by the one contract
//! ([`crate::contract`]):
//!
//! - every satisfied `forbid` is an entry with its `@reason` (required) and
//!   `@message`; one annotated `@escalate` is an escalation (a deny the
//!   approval seam may lift), any other a deny;
//! - a file with a `permit` for a point is default-deny there, as Cedar
//!   itself is: when none of its permits is satisfied, a deny with the
//!   `@reason`/`@message` of its first permit for that point that has one
//!   (else [`NOT_PERMITTED`]). A file without permits for a point only
//!   denies there through its forbids.
//!
//! Any error the authorizer reports (a policy erroring on this request)
//! fails the decision closed, as do context conversions that do not fit
//! the schema (`request`) and a decision past the evaluation bound.
//!
//! - `schema`: the published schema and the context types.
//! - `request`: an agent context as a bounded Cedar request.
//! - `cases`: `*.cedartest.json` test cases.

mod cases;
mod request;
mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use cedar_policy::{
    ActionConstraint, Authorizer, Effect, PolicyId, PolicySet as CedarPolicies, ValidationMode,
    ValidationWarning, Validator,
};
use hookwire::{AgentContext, InterceptionPoint};
use serde_json::{Value, json};

pub(crate) use self::cases::{Case, run as run_case};
pub use self::schema::PUBLISHED as PUBLISHED_SCHEMA;
use self::schema::{CedarSchema, NAMESPACE};
use crate::error::Error;
use crate::load::Module;
use crate::report::DecisionPackage;

/// The reason of a default-deny when the file's permits name none.
pub const NOT_PERMITTED: &str = "policy:not_permitted";

/// Annotations a Cedar policy may carry (any other is refused, so that a
/// misspelt `@reason` is a load error rather than a missing reason).
const ANNOTATIONS: [&str; 5] = ["reason", "message", "escalate", "id", "description"];

/// The Cedar policies of a directory.
#[derive(Debug)]
pub(crate) struct CedarSet {
    schema: CedarSchema,
    files: Vec<CedarFile>,
    cases: Vec<Case>,
}

/// One `.cedar` file: a decision package.
#[derive(Debug)]
struct CedarFile {
    /// Its path relative to the directory: the package's name.
    name: String,
    policies: CedarPolicies,
    /// Each policy in file order.
    meta: Vec<PolicyMeta>,
    points: BTreeSet<InterceptionPoint>,
    /// The points it has permits for, with the deny given when none holds.
    default_deny: BTreeMap<InterceptionPoint, Value>,
}

/// What a policy's annotations say.
#[derive(Debug)]
struct PolicyMeta {
    id: PolicyId,
    effect: Effect,
    /// The entry it contributes when satisfied (a forbid) or when no permit
    /// holds (a permit's, if annotated).
    entry: Option<Value>,
    escalate: bool,
}

impl CedarSet {
    /// Parses, checks and validates the Cedar files of a directory
    /// (`dir`-relative labels name them).
    pub(crate) fn load(
        dir: &Path,
        policies: &[Module],
        schemas: &[Module],
        cases: &[Module],
    ) -> Result<Self, Error> {
        let label = |path: &Path| {
            path.strip_prefix(dir)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned()
        };
        let schema = match schemas {
            [] => CedarSchema::load(None)?,
            [one] => CedarSchema::load(Some((&one.path, &one.text, label(&one.path))))?,
            [first, second, ..] => {
                return Err(Error::Cedar {
                    path: second.path.clone(),
                    message: format!(
                        "a second Cedar schema (the first: {}); a directory has one",
                        first.path.display()
                    ),
                });
            }
        };
        let validator = Validator::new(schema.schema.clone());
        let mut files = Vec::with_capacity(policies.len());
        for module in policies {
            files.push(CedarFile::load(
                &module.path,
                label(&module.path),
                &module.text,
                &schema,
                &validator,
            )?);
        }
        let cases = cases::load(dir, cases)?;
        Ok(Self {
            schema,
            files,
            cases,
        })
    }

    /// Whether the directory has no Cedar policy.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files as decision packages.
    pub(crate) fn packages(&self) -> impl Iterator<Item = DecisionPackage> + '_ {
        self.files.iter().map(|f| DecisionPackage {
            name: f.name.clone(),
            points: f.points.iter().copied().collect(),
            rules: vec!["deny", "escalate"],
        })
    }

    /// The points some file decides at.
    pub(crate) fn points(&self) -> BTreeSet<InterceptionPoint> {
        self.files
            .iter()
            .flat_map(|f| f.points.iter().copied())
            .collect()
    }

    /// The test cases of the directory's `*.cedartest.json` files.
    pub(crate) fn cases(&self) -> &[Case] {
        &self.cases
    }

    /// The decision document of every file deciding at `ctx`'s point,
    /// within `limit` (a decision finishing past it is an error, never a
    /// verdict).
    pub(crate) fn documents(
        &self,
        ctx: &AgentContext,
        limit: Duration,
    ) -> Result<Vec<(String, Value)>, Error> {
        let started = Instant::now();
        let point = ctx.point();
        let deciding: Vec<&CedarFile> = self
            .files
            .iter()
            .filter(|f| f.points.contains(&point))
            .collect();
        if deciding.is_empty() {
            return Ok(Vec::new());
        }
        let Some(built) = request::build(ctx, &self.schema)? else {
            return Ok(Vec::new());
        };
        let authorizer = Authorizer::new();
        let mut documents = Vec::with_capacity(deciding.len());
        for file in deciding {
            let response =
                authorizer.is_authorized(&built.request, &file.policies, &built.entities);
            if let Some(error) = response.diagnostics().errors().next() {
                // The error's own text may quote context values: only the
                // policy is named.
                let cedar_policy::AuthorizationError::PolicyEvaluationError(error) = error;
                return Err(Error::Evaluation(format!(
                    "{}: policy {} errored on this request (an overflow or an extension function refusing its argument; values not shown)",
                    file.name,
                    error.policy_id()
                )));
            }
            let satisfied: BTreeSet<&PolicyId> = response.diagnostics().reason().collect();
            let mut deny = Vec::new();
            let mut escalate = Vec::new();
            for meta in file
                .meta
                .iter()
                .filter(|m| m.effect == Effect::Forbid && satisfied.contains(&m.id))
            {
                let entry = meta.entry.clone().unwrap_or(Value::Null);
                if meta.escalate {
                    escalate.push(entry)
                } else {
                    deny.push(entry)
                }
            }
            let permitted = file
                .meta
                .iter()
                .any(|m| m.effect == Effect::Permit && satisfied.contains(&m.id));
            if deny.is_empty()
                && escalate.is_empty()
                && !permitted
                && let Some(entry) = file.default_deny.get(&point)
            {
                deny.push(entry.clone());
            }
            let list = |entries: Vec<Value>| {
                if entries.is_empty() {
                    Value::Null
                } else {
                    Value::Array(entries)
                }
            };
            documents.push((
                file.name.clone(),
                json!({"deny": list(deny), "escalate": list(escalate)}),
            ));
            if started.elapsed() > limit {
                return Err(Error::Bounded { limit });
            }
        }
        Ok(documents)
    }
}

impl CedarFile {
    fn load(
        path: &Path,
        name: String,
        text: &str,
        schema: &CedarSchema,
        validator: &Validator,
    ) -> Result<Self, Error> {
        let refuse = |message: String| Error::Cedar {
            path: path.to_path_buf(),
            message,
        };
        let parsed: CedarPolicies = text.parse().map_err(|e: cedar_policy::ParseErrors| {
            refuse(
                e.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        if parsed.templates().next().is_some() {
            return Err(refuse(
                "policy templates are not supported; write static policies".into(),
            ));
        }
        // The parser numbers policies `policy0`, `policy1`, ... in file order.
        let mut ordered: Vec<_> = parsed.policies().cloned().collect();
        ordered.sort_by_key(|p| {
            p.id()
                .to_string()
                .trim_start_matches("policy")
                .parse::<usize>()
                .unwrap_or(usize::MAX)
        });
        let mut policies = CedarPolicies::new();
        let mut meta = Vec::with_capacity(ordered.len());
        let mut points = BTreeSet::new();
        let mut default_deny = BTreeMap::new();
        for (index, policy) in ordered.into_iter().enumerate() {
            let id = PolicyId::new(
                policy
                    .annotation("id")
                    .map_or_else(|| format!("policy{index}"), str::to_owned),
            );
            let policy = policy.new_id(id.clone());
            let at = format!("policy {id}");
            if let Some((key, _)) = policy.annotations().find(|(k, _)| !ANNOTATIONS.contains(k)) {
                return Err(refuse(format!(
                    "{at}: unknown annotation @{key} (known: @{})",
                    ANNOTATIONS.join(", @")
                )));
            }
            let reason = policy
                .annotation("reason")
                .map(|r| checked_reason(r).map_err(|m| refuse(format!("{at}: {m}"))))
                .transpose()?;
            let message = policy.annotation("message");
            let escalate = policy.annotation("escalate").is_some();
            let effect = policy.effect();
            let applies = action_points(&policy.action_constraint(), schema)
                .map_err(|m| refuse(format!("{at}: {m}")))?;
            let entry = reason.as_ref().map(|r| match message {
                Some(m) => json!({"reason": r, "message": m}),
                None => json!({"reason": r}),
            });
            match effect {
                Effect::Forbid if entry.is_none() => {
                    return Err(refuse(format!(
                        "{at}: a forbid needs @reason(\"...\"), the reason of its deny"
                    )));
                }
                Effect::Permit if escalate => {
                    return Err(refuse(format!("{at}: @escalate belongs on a forbid")));
                }
                Effect::Permit => {
                    for point in &applies {
                        let slot = default_deny.entry(*point).or_insert(None);
                        if slot.is_none() {
                            slot.clone_from(&entry);
                        }
                    }
                }
                Effect::Forbid => {}
            }
            points.extend(applies);
            policies
                .add(policy)
                .map_err(|e| refuse(format!("{at}: {e}")))?;
            meta.push(PolicyMeta {
                id,
                effect,
                entry,
                escalate,
            });
        }
        let result = validator.validate(&policies, ValidationMode::Strict);
        // A policy the validator finds can never apply (it reads an
        // attribute the schema does not declare behind a `has`, say) would
        // silently never deny: refused with the errors, as are strings and
        // names hiding bidirectional control characters.
        let errors: Vec<String> = result
            .validation_errors()
            .map(|e| e.to_string())
            .chain(
                result
                    .validation_warnings()
                    .filter(|w| {
                        matches!(
                            w,
                            ValidationWarning::ImpossiblePolicy(_)
                                | ValidationWarning::BidiCharsInString(_)
                                | ValidationWarning::BidiCharsInIdentifier(_)
                        )
                    })
                    .map(|w| w.to_string()),
            )
            .collect();
        if !errors.is_empty() {
            let against = schema.file.as_deref().unwrap_or("the published schema");
            return Err(refuse(format!(
                "does not validate against {against}: {}",
                errors.join("; ")
            )));
        }
        let default_deny = default_deny
            .into_iter()
            .map(|(point, entry)| {
                (
                    point,
                    entry.unwrap_or_else(|| json!({"reason": NOT_PERMITTED})),
                )
            })
            .collect();
        Ok(Self {
            name,
            policies,
            meta,
            points,
            default_deny,
        })
    }
}

/// The points an action scope admits.
fn action_points(
    constraint: &ActionConstraint,
    schema: &CedarSchema,
) -> Result<BTreeSet<InterceptionPoint>, String> {
    let point = |uid: &cedar_policy::EntityUid| {
        let named = uid.type_name().to_string() == format!("{NAMESPACE}::Action");
        uid.id()
            .unescaped()
            .parse::<InterceptionPoint>()
            .ok()
            .filter(|_| named)
            .ok_or_else(|| format!("action {uid} is not an interception point ({NAMESPACE}::Action::\"pre_tool_call\", ...)"))
    };
    match constraint {
        ActionConstraint::Any => Ok(schema.contexts.keys().copied().collect()),
        ActionConstraint::Eq(uid) => Ok(BTreeSet::from([point(uid)?])),
        ActionConstraint::In(uids) => uids.iter().map(point).collect(),
    }
}

/// A reason as the contract accepts it.
fn checked_reason(reason: &str) -> Result<String, String> {
    if reason.is_empty() {
        return Err("@reason must not be empty".into());
    }
    if reason.starts_with(hookwire::HOST_ERROR_PREFIX) {
        return Err("reasons starting with host_error: are reserved to hosts".into());
    }
    Ok(reason.to_owned())
}
