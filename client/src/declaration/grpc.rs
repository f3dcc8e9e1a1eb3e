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
//!   NAME, "cert_file": PATH, "key_file": PATH}` — the PEM file of the
//!   authority that signs the service's certificate (read when the
//!   document loads; without it the public Web PKI roots verify the
//!   service), the name its certificate must carry when it differs from
//!   the endpoint's host, and (both or neither) the PEM client certificate
//!   and private key the host presents to a service that requires mutual
//!   TLS. Files are read when the document loads; findings name the
//!   member and the I/O error kind, never a path or a byte of a file.
//! - `visibility` (optional): the optional top-level context members the
//!   service may see, e.g. `["actor"]`; every other optional member is
//!   withheld (the required core and the point's conditional members are
//!   always sent). See `InterceptorBinding::visible`.
//! - `mutation` (optional): the `$target` paths the service may
//!   transform, e.g. `["$target.content"]` (prefix grants; `[]` makes it
//!   read-only). See `InterceptorBinding::may_transform`.
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
use crate::remote::{ClientIdentity, TlsConfig, metadata_entry};

/// The kind of an interceptor service over gRPC.
pub const GRPC_KIND: &str = "hookwire.grpc";

/// The kind of the allow-all passthrough.
pub const ALLOW_KIND: &str = "hookwire.allow";

const GRPC_MEMBERS: [&str; 5] = ["endpoint", "metadata", "tls", "visibility", "mutation"];

const TLS_MEMBERS: [&str; 4] = ["ca_file", "domain_name", "cert_file", "key_file"];

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
    if let Some(members) = config.get("visibility") {
        let members = strings(members, "config.visibility")?;
        if let Some(i) = members.iter().position(|m| !hookwire::is_namespace(m)) {
            return Err(format!(
                "config.visibility[{i}] must be a top-level member name (^[a-z][a-z0-9_]*$)"
            ));
        }
        binding = binding.visible(members);
    }
    if let Some(paths) = config.get("mutation") {
        let paths = strings(paths, "config.mutation")?;
        for (i, path) in paths.iter().enumerate() {
            hookwire::path::parse(path)
                .map_err(|e| format!("config.mutation[{i}]: {e} (§5.2 grammar)"))?;
        }
        binding = binding.may_transform(paths);
    }
    Ok(binding)
}

/// An array of strings at `at`.
fn strings(value: &Value, at: &str) -> Result<Vec<String>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| format!("{at} must be an array of strings"))?;
    items
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{at} must be an array of strings"))
}

/// `{"ca_file"?: PATH, "domain_name"?: NAME, "cert_file"?: PATH,
/// "key_file"?: PATH}`; findings never quote a path, the name or a file's
/// content.
fn tls_config(tls: &Value) -> Result<TlsConfig, String> {
    let Some(tls) = tls.as_object() else {
        return Err("config.tls must be an object".into());
    };
    if let Some(unknown) = tls.keys().find(|k| !TLS_MEMBERS.contains(&k.as_str())) {
        return Err(format!(
            "config.tls: member {unknown:?} is unknown (expected ca_file, domain_name, cert_file and key_file)"
        ));
    }
    let ca_pem = read_file(tls, "ca_file")?;
    let client_identity = match (read_file(tls, "cert_file")?, read_file(tls, "key_file")?) {
        (None, None) => None,
        (Some(cert_pem), Some(key_pem)) => Some(ClientIdentity::from_pem(cert_pem, key_pem)),
        _ => return Err("config.tls.cert_file and config.tls.key_file go together".into()),
    };
    let domain_name = match tls.get("domain_name") {
        None => None,
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        Some(_) => return Err("config.tls.domain_name must be a non-empty string".into()),
    };
    Ok(TlsConfig {
        ca_pem,
        domain_name,
        client_identity,
    })
}

/// The bytes of the file named by `tls.<member>`, read now; the finding
/// names the member and the I/O error kind only.
fn read_file(tls: &Map<String, Value>, member: &str) -> Result<Option<Vec<u8>>, String> {
    match tls.get(member) {
        None => Ok(None),
        Some(Value::String(path)) => std::fs::read(path)
            .map(Some)
            .map_err(|e| format!("config.tls.{member} cannot be read ({})", e.kind())),
        Some(_) => Err(format!("config.tls.{member} must be a string")),
    }
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
