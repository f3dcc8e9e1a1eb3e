//! `hookwire hooks install --gateway URL`: the agent's model traffic
//! routed through `hookwire gateway`, merged into the agent's own
//! configuration beside its hooks, so that a tool result the hook denied
//! is withheld from the model by the gateway (where the agent's hook
//! cannot withhold it).
//!
//! | agent | file | what is written |
//! |---|---|---|
//! | Claude Code | the hooks' `settings.json` | `env.ANTHROPIC_BASE_URL = URL` |
//! | Codex | `config.toml` beside the hooks' `hooks.json` | `model_provider = "hookwire"`, `[model_providers.hookwire]` (`base_url = URL/v1`, `wire_api = "responses"`, `env_key`), `[features] hooks = true` |
//!
//! Every other setting, comment and table is kept; installing twice
//! changes nothing. The other agents' model traffic cannot be routed
//! through the gateway, and asking for it is refused with the reason.

use serde_json::{Map, Value};

use crate::agents::Agent;
use crate::error::Error;

/// The name of the model provider written into Codex's `config.toml`.
pub const CODEX_PROVIDER: &str = "hookwire";

/// The gateway's root URL (`http[s]://HOST[:PORT]`, no path), from what
/// the user gave: a trailing `/` or `/v1` is dropped.
pub fn gateway_root(url: &str) -> Result<String, Error> {
    let bad = || {
        Error::Config(format!(
            "--gateway needs the gateway's URL, http://HOST:PORT (got {url:?})"
        ))
    };
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(bad)?;
    let authority = rest.trim_end_matches('/');
    let authority = authority.strip_suffix("/v1").unwrap_or(authority);
    if authority.is_empty()
        || authority
            .chars()
            .any(|c| matches!(c, '/' | '?' | '#' | '@' | '"' | '\\') || c.is_whitespace())
    {
        return Err(bad());
    }
    let scheme = &url[..url.len() - rest.len()];
    Ok(format!("{scheme}{authority}"))
}

/// Why `agent`'s model traffic cannot be routed through the gateway, or
/// `None` when it can.
pub fn unroutable(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::ClaudeCode | Agent::Codex => None,
        Agent::GeminiCli => Some(
            "Gemini CLI speaks Google's Gemini API, which hookwire gateway does not; \
             its AfterTool hook withholds a denied result itself",
        ),
        Agent::Cursor => Some(
            "Cursor reaches its models through Cursor's own service, which no local \
             setting points elsewhere; a denied tool result is quarantined, not withheld",
        ),
        Agent::Copilot => Some(
            "Copilot CLI reaches its models through GitHub's service, which no local \
             setting points elsewhere; a denied tool result is quarantined, not withheld",
        ),
    }
}

/// Claude Code's settings text `existing` (already holding the hooks, or
/// none) with `env.ANTHROPIC_BASE_URL` set to the gateway at `root`.
pub fn merge_claude_base_url(existing: Option<&str>, root: &str) -> Result<String, Error> {
    let mut settings = match existing.map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Error::Config(
                    "the settings file is not a JSON object".into(),
                ));
            }
            Err(e) => return Err(Error::Config(format!("the settings file is not JSON: {e}"))),
        },
    };
    let env = settings
        .entry("env")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(env) = env else {
        return Err(Error::Config("the settings' `env` is not an object".into()));
    };
    env.insert("ANTHROPIC_BASE_URL".into(), Value::from(root));
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| Error::Config(format!("cannot write the settings: {e}")))?;
    text.push('\n');
    Ok(text)
}

/// Codex's `config.toml` text `existing` (none: a new file) with the
/// gateway at `root` as its model provider (`key_env` names the variable
/// Codex reads the API key from) and its hooks enabled.
pub fn merge_codex_provider(
    existing: Option<&str>,
    root: &str,
    key_env: &str,
) -> Result<String, Error> {
    use toml_edit::{DocumentMut, Item, Table, value};
    if key_env.is_empty()
        || !key_env
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::Config(
            "the API key's environment variable must be a name of letters, digits and _".into(),
        ));
    }
    let mut doc: DocumentMut = existing
        .unwrap_or_default()
        .parse()
        .map_err(|e| Error::Config(format!("the config.toml is not TOML: {e}")))?;
    let not_table =
        |name: &str| Error::Config(format!("the config.toml's `{name}` is not a table"));
    doc["model_provider"] = value(CODEX_PROVIDER);
    let providers = doc
        .entry("model_providers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| not_table("model_providers"))?;
    let provider = providers
        .entry(CODEX_PROVIDER)
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| not_table("model_providers.hookwire"))?;
    provider.insert("name", value("hookwire gateway"));
    provider.insert("base_url", value(format!("{root}/v1")));
    provider.insert("env_key", value(key_env));
    provider.insert("wire_api", value("responses"));
    // Codex runs hooks only with the feature on.
    let features = doc
        .entry("features")
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| not_table("features"))?;
    features.insert("hooks", value(true));
    Ok(doc.to_string())
}
