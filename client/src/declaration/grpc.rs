//! hookwire's built-in binding kinds.
//!
//! `hookwire.grpc` binds an interceptor service reached over gRPC. Its
//! `config` is closed:
//!
//! ```json
//! {
//!   "endpoint": "http://127.0.0.1:50051",
//!   "metadata": {
//!     "authorization": {"env": "POLICY_TOKEN", "prefix": "Bearer "},
//!     "x-tenant": {"env": "TENANT_ID"}
//!   }
//! }
//! ```
//!
//! - `endpoint` (required): an absolute `http://` or `https://` URL.
//! - `tls` (optional, `https://` only): `{"ca_file": PATH, "domain_name":
//!   NAME}` — the PEM file of the authority that signs the service's
//!   certificate (read when the document loads; without it the public Web
//!   PKI roots verify the service) and the name its certificate must carry
//!   when it differs from the endpoint's host.
//! - `metadata` (optional): gRPC headers sent on every call, `Describe`
//!   included. A value is never written in the document: each names the
//!   environment variable holding it (`env`), with an optional literal
//!   `prefix`. An inline string is refused, so a secret never sits in a
//!   file that is logged, diffed and pushed; a variable that is not set
//!   refuses the load, naming the variable and never a value.
//! - The per-call bound is the binding's own `timeout_ms` (or the
//!   document's `configuration.timeouts.interceptor_ms`), sent to the
//!   service as `grpc-timeout` too.
//!
//! `hookwire.allow` is the explicit allow-all passthrough §7 lets a host
//! opt into (`config` absent or `{}`): bind it where a point needs an
//! interceptor but no control has anything to say.

use hookwire::{InterceptorResponse, Verdict};
use serde_json::{Map, Value};

use super::kind::BindingContext;
use crate::binding::InterceptorBinding;
use crate::interceptor::{BoxError, interceptor_fn};
use crate::remote::{TlsConfig, metadata_entry};

/// The kind of an interceptor service over gRPC.
pub const GRPC_KIND: &str = "hookwire.grpc";

/// The kind of the allow-all passthrough.
pub const ALLOW_KIND: &str = "hookwire.allow";

const GRPC_MEMBERS: [&str; 3] = ["endpoint", "metadata", "tls"];

/// Resolves a `hookwire.grpc` binding. Messages name members, header keys
/// and environment variable names, never a value.
pub(crate) fn resolve_grpc(
    config: &Value,
    ctx: &BindingContext<'_>,
) -> Result<InterceptorBinding, String> {
    let Some(config) = config.as_object() else {
        return Err("config must be an object".into());
    };
    if let Some(unknown) = config.keys().find(|k| !GRPC_MEMBERS.contains(&k.as_str())) {
        return Err(format!("config member {unknown:?} is unknown"));
    }
    let endpoint = match config.get("endpoint") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("config.endpoint must be a string".into()),
        None => return Err("config.endpoint is required".into()),
    };
    check_endpoint(endpoint)?;
    let mut binding = InterceptorBinding::remote(ctx.id, endpoint.as_str());
    if let Some(tls) = config.get("tls") {
        if !endpoint.starts_with("https://") {
            return Err("config.tls applies to https:// endpoints only".into());
        }
        binding = binding.tls(tls_config(tls)?);
    }
    match config.get("metadata") {
        None => {}
        Some(Value::Object(headers)) => {
            for (key, source) in headers {
                let value = header_value(key, source)?;
                metadata_entry(key, &value)
                    .map_err(|rule| format!("config.metadata.{key}: {rule}"))?;
                binding = binding.metadata(key.as_str(), value);
            }
        }
        Some(_) => return Err("config.metadata must be an object".into()),
    }
    Ok(binding)
}

/// `{"ca_file"?: PATH, "domain_name"?: NAME}`; findings never quote the
/// path or the name.
fn tls_config(tls: &Value) -> Result<TlsConfig, String> {
    let Some(tls) = tls.as_object() else {
        return Err("config.tls must be an object".into());
    };
    if let Some(unknown) = tls
        .keys()
        .find(|k| !["ca_file", "domain_name"].contains(&k.as_str()))
    {
        return Err(format!(
            "config.tls: member {unknown:?} is unknown (expected ca_file and domain_name)"
        ));
    }
    let ca_pem = match tls.get("ca_file") {
        None => None,
        Some(Value::String(path)) => Some(
            std::fs::read(path)
                .map_err(|e| format!("config.tls.ca_file cannot be read ({})", e.kind()))?,
        ),
        Some(_) => return Err("config.tls.ca_file must be a string".into()),
    };
    let domain_name = match tls.get("domain_name") {
        None => None,
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        Some(_) => return Err("config.tls.domain_name must be a non-empty string".into()),
    };
    Ok(TlsConfig {
        ca_pem,
        domain_name,
    })
}

/// An absolute `http://` or `https://` URL with a host; the reason never
/// quotes it.
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let Some(rest) = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
    else {
        return Err("config.endpoint must be an absolute http:// or https:// URL".into());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let valid = !authority.is_empty()
        && !authority.contains('@')
        && tonic::transport::Endpoint::from_shared(endpoint.to_owned()).is_ok();
    if !valid {
        return Err(
            "config.endpoint must be an absolute http(s):// URL with a host and no user info"
                .into(),
        );
    }
    Ok(())
}

/// One header's value from its `{"env": NAME, "prefix"?: text}` source.
fn header_value(key: &str, source: &Value) -> Result<String, String> {
    let at = format!("config.metadata.{key}");
    let Some(source) = source.as_object() else {
        return Err(format!(
            "{at}: inline values are refused; write {{\"env\": \"VARIABLE\"}} and set the variable"
        ));
    };
    if let Some(unknown) = source
        .keys()
        .find(|k| !["env", "prefix"].contains(&k.as_str()))
    {
        return Err(format!(
            "{at}: member {unknown:?} is unknown (expected env and prefix)"
        ));
    }
    let var = match source.get("env") {
        Some(Value::String(v)) if is_env_name(v) => v,
        Some(_) => {
            return Err(format!(
                "{at}.env must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
            ));
        }
        None => return Err(format!("{at}.env is required")),
    };
    let prefix = match source.get("prefix") {
        None => "",
        Some(Value::String(p)) => p,
        Some(_) => return Err(format!("{at}.prefix must be a string")),
    };
    match std::env::var(var) {
        Ok(v) => Ok(format!("{prefix}{v}")),
        Err(std::env::VarError::NotPresent) => {
            Err(format!("{at}: the environment variable {var} is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => Err(format!(
            "{at}: the environment variable {var} is not valid Unicode"
        )),
    }
}

fn is_env_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Resolves a `hookwire.allow` binding.
pub(crate) fn resolve_allow(
    config: &Value,
    ctx: &BindingContext<'_>,
) -> Result<InterceptorBinding, String> {
    if config.as_object().is_none_or(|m| !m.is_empty()) {
        return Err("config must be absent or {}".into());
    }
    let allow = interceptor_fn(|_ctx| async {
        Ok::<_, BoxError>(InterceptorResponse {
            verdict: Verdict::allow(),
            extensions: Map::new(),
        })
    });
    Ok(InterceptorBinding::local(ctx.id, allow))
}
