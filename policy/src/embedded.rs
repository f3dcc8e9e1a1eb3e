//! Policies bound inside the host: the declaration kinds `hookwire.rego`
//! and `hookwire.cedar`, so that the gateway, `hookwire mcp`, `hooks
//! serve`, `emit` or an embedding Rust agent governs with a policy
//! directory and no second process.
//!
//! The binding is the same [`PolicyService`] `hookwire policy serve` puts
//! on the wire, bound with [`InterceptorBinding::local`]: the same
//! decisions, the same verdicts, the same records (the record names the
//! binding id either way). The evaluation bound holds in-process as when
//! served: decisions run on the set's evaluation workers, never on the
//! host's threads, and one running past `eval_limit_ms` is an error, which
//! the host records as a fail-closed `host_error:interceptor_failed` deny.
//!
//! [`one_process_declaration`] is the document behind `--policy DIR`: the
//! policies at every point they decide at, the explicit allow-all
//! passthrough at the rest.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hookwire::{AgentContext, Interceptor, Manifest, Verdict, async_trait};
use hookwire_client::InterceptorBinding;
use hookwire_client::declaration::{BindingContext, Registry};
use serde_json::{Map, Value, json};

use crate::reload::{Policies, Watcher};
use crate::report::PolicyOptions;
use crate::service::PolicyService;

/// The kind of a binding deciding with a directory's Rego modules (Cedar
/// files beside them are decided too).
pub const REGO_KIND: &str = "hookwire.rego";

/// The kind of a binding deciding with a directory's Cedar policies (Rego
/// modules beside them are decided too).
pub const CEDAR_KIND: &str = "hookwire.cedar";

/// The largest `eval_limit_ms` a binding may set: a decision that needs
/// longer belongs in a service with its own deadline, not in the host.
pub const MAX_EVAL_LIMIT_MS: u64 = 10_000;

/// The config members a binding of either kind reads.
const MEMBERS: [&str; 4] = ["path", "eval_limit_ms", "compiled", "watch"];

/// The most directory entries the language check walks: a policy
/// directory is small, and a walk must never be unbounded.
const MAX_WALKED_ENTRIES: usize = 10_000;

/// Adds [`REGO_KIND`] and [`CEDAR_KIND`] to `registry`.
pub fn register(registry: Registry) -> Result<Registry, hookwire_client::Error> {
    registry
        .kind(REGO_KIND, |config: &Value, ctx: &BindingContext<'_>| {
            resolve(config, ctx, "rego")
        })?
        .kind(CEDAR_KIND, |config: &Value, ctx: &BindingContext<'_>| {
            resolve(config, ctx, "cedar")
        })
}

/// The declaration document of a host governed by the policies of `dir`
/// alone: `enforce`, first deny wins, the policies bound as `policy` (at
/// the points their packages decide at) and `hookwire.allow` bound as
/// `passthrough` (so a point no package decides at allows instead of
/// failing closed with `host_error:no_interceptor`).
pub fn one_process_declaration(dir: &Path) -> Value {
    json!({
        "declaration": "agent-hooks-declaration/1.0",
        "spec": "agent-hooks/0.1",
        "id": "hookwire-one-process-policy",
        "configuration": {
            "mode": "enforce",
            "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
            "identity_provider": "jcs-sha256",
            "posture": {"tool_seam_host_error": "continue"}
        },
        "bindings": [
            {"id": "policy", "kind": REGO_KIND, "config": {"path": dir.to_string_lossy()}},
            {"id": "passthrough", "kind": "hookwire.allow"}
        ]
    })
}

/// The in-process binding: the policy service, and the watcher that keeps
/// it current when asked (dropped with the host).
struct Embedded {
    service: PolicyService,
    _watcher: Option<Watcher>,
}

#[async_trait]
impl Interceptor for Embedded {
    type Response = Result<Verdict, crate::Error>;

    fn manifest(&self) -> Manifest {
        self.service.manifest()
    }

    async fn intercept(&self, ctx: &AgentContext) -> Result<Verdict, crate::Error> {
        self.service.intercept(ctx).await
    }
}

/// One binding's config, read and checked (messages name members, never
/// values: a path may be private).
struct EmbeddedConfig {
    path: PathBuf,
    options: PolicyOptions,
    watch: bool,
}

fn read_config(config: &Value) -> Result<EmbeddedConfig, String> {
    let empty = Map::new();
    let members = match config {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => return Err("config must be an object".into()),
    };
    if let Some(unknown) = members.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(format!(
            "config member {unknown:?} is not read by this kind (members: {})",
            MEMBERS.join(", ")
        ));
    }
    let path = match members.get("path") {
        Some(Value::String(p)) if !p.is_empty() => PathBuf::from(p),
        Some(_) => return Err("config.path must be a non-empty string".into()),
        None => return Err("config.path (the policy directory) is required".into()),
    };
    let mut options = PolicyOptions::default();
    match members.get("eval_limit_ms") {
        None => {}
        Some(v) => match v.as_u64() {
            Some(ms) if (1..=MAX_EVAL_LIMIT_MS).contains(&ms) => {
                options.eval_limit = Duration::from_millis(ms);
            }
            _ => {
                return Err(format!(
                    "config.eval_limit_ms must be an integer from 1 to {MAX_EVAL_LIMIT_MS}"
                ));
            }
        },
    }
    let flag = |name: &str| match members.get(name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("config.{name} must be true or false")),
    };
    if let Some(compiled) = flag("compiled")? {
        options.compiled = compiled;
    }
    let watch = flag("watch")?.unwrap_or(false);
    Ok(EmbeddedConfig {
        path,
        options,
        watch,
    })
}

fn resolve(
    config: &Value,
    ctx: &BindingContext<'_>,
    extension: &str,
) -> Result<InterceptorBinding, String> {
    let EmbeddedConfig {
        path,
        options,
        watch,
    } = read_config(config)?;
    if let Some(bound) = ctx.timeout
        && bound <= options.eval_limit
    {
        return Err(format!(
            "config.eval_limit_ms must be below the binding's timeout ({} ms), so that a runaway \
             policy is reported as a policy error, not as a timeout",
            bound.as_millis()
        ));
    }
    if !holds_file_with_extension(&path, extension)? {
        return Err(format!(
            "config.path holds no .{extension} file (kind {}): name the directory of the \
             policies this binding decides with",
            ctx.kind
        ));
    }
    let policies = Policies::load(&path, options)
        .map_err(|e| format!("config.path does not load as a policy set: {e}"))?;
    let watcher = if watch {
        Some(
            policies
                .watch(|_| {})
                .map_err(|e| format!("config.watch: {e}"))?,
        )
    } else {
        None
    };
    let service = PolicyService::new(Arc::clone(&policies));
    Ok(InterceptorBinding::local(
        ctx.id,
        Embedded {
            service,
            _watcher: watcher,
        },
    ))
}

/// Whether `dir` holds a (visible) file ending in `.extension`, looked
/// for breadth-first within [`MAX_WALKED_ENTRIES`] entries.
fn holds_file_with_extension(dir: &Path, extension: &str) -> Result<bool, String> {
    if !dir.is_dir() {
        return Err("config.path is not a readable directory".into());
    }
    let mut pending = vec![dir.to_path_buf()];
    let mut walked = 0usize;
    while let Some(next) = pending.pop() {
        let entries =
            std::fs::read_dir(&next).map_err(|_| "config.path cannot be read".to_string())?;
        for entry in entries.flatten() {
            walked += 1;
            if walked > MAX_WALKED_ENTRIES {
                return Err(format!(
                    "config.path holds more than {MAX_WALKED_ENTRIES} entries; a policy \
                     directory holds policies, not a tree"
                ));
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_members_are_checked_by_name_without_quoting_values() {
        let err = |v: Value| read_config(&v).err().unwrap_or_default();
        assert!(err(json!({})).contains("config.path"));
        assert!(err(json!({"path": ""})).contains("non-empty"));
        assert!(err(json!({"path": "/p", "secret_dir": "/x"})).contains("\"secret_dir\""));
        assert!(!err(json!({"path": "/p", "secret_dir": "/x"})).contains("/x"));
        assert!(err(json!({"path": "/p", "eval_limit_ms": 0})).contains("eval_limit_ms"));
        assert!(err(json!({"path": "/p", "eval_limit_ms": 10_001})).contains("eval_limit_ms"));
        assert!(err(json!({"path": "/p", "watch": "yes"})).contains("config.watch"));
        assert!(err(json!([1])).contains("object"));
        let ok = read_config(&json!({"path": "/p", "eval_limit_ms": 20, "compiled": false}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.options.eval_limit, Duration::from_millis(20));
        assert!(!ok.options.compiled);
        assert!(!ok.watch);
    }

    #[test]
    fn the_language_check_finds_nested_files_and_skips_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join(".swap.rego"), "").unwrap();
        assert!(!holds_file_with_extension(dir.path(), "rego").unwrap());
        std::fs::write(dir.path().join("tools/p.rego"), "").unwrap();
        assert!(holds_file_with_extension(dir.path(), "rego").unwrap());
        assert!(!holds_file_with_extension(dir.path(), "cedar").unwrap());
        assert!(holds_file_with_extension(&dir.path().join("missing"), "rego").is_err());
    }
}
