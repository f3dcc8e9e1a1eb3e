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
//! - `endpoint`: an absolute `http://` or `https://` URL.
//! - `endpoints` (optional): more replicas of the same service, e.g.
//!   `["http://10.0.0.2:50051", "http://10.0.0.3:50051"]`: with
//!   `endpoint`, or instead of it (one of the two is required; no URL
//!   twice; all `http://` or all `https://`). Each call goes to one
//!   admitted replica; see `InterceptorBinding::remote_replicas` for
//!   balancing, ejection and the retry rule. Replicas must be stateless or
//!   share their state.
//! - `dns_refresh_ms` (optional, ≥ 100): re-resolve the endpoints' host
//!   names this often, one replica per address found (see
//!   `InterceptorBinding::resolve_every`).
//! - `multiplex_streams` (optional, 1–64): how many `Multiplex` streams
//!   the host keeps to each replica of a service that declares the stream
//!   (default: one per core of the host, at most 4); a session's
//!   emissions always take the same one (see
//!   `InterceptorBinding::multiplex_streams`).
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
//! - `callback` (optional, default `false`): `true` lets the service see
//!   the callback token a model gateway puts in its contexts
//!   (`extensions.hookwire.callback`), for a service whose own model calls
//!   go back through the gateway (an LLM judge); no other binding, no
//!   approval service and no approver receives it. See
//!   `InterceptorBinding::receives_callback`.
//! - `mutation` (optional): the `$target` paths the service may
//!   transform, e.g. `["$target.content"]` (prefix grants; `[]` makes it
//!   read-only). See `InterceptorBinding::may_transform`.
//! - `effects` (optional): the effect kinds the service may ask for in the
//!   `hookwire` namespace of its response extensions, e.g. `["route"]`;
//!   each one of `route`, `model_params`, `headers`, `credential`,
//!   `upstream_body` (`[]`: none). See `InterceptorBinding::may_effect`.
//!   A binding that states neither `mutation` nor `effects` may transform
//!   any path and ask for every effect; one that states either holds
//!   exactly what it states (`mutation` alone grants no effect, `effects`
//!   alone no transform path).
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
use crate::effect::Effect;
use crate::interceptor::{BoxError, interceptor_fn};
use crate::remote::{ClientIdentity, TlsConfig, metadata_entry};

/// The kind of an interceptor service over gRPC.
pub const GRPC_KIND: &str = "hookwire.grpc";

/// The kind of the allow-all passthrough.
pub const ALLOW_KIND: &str = "hookwire.allow";

const GRPC_MEMBERS: [&str; 10] = [
    "endpoint",
    "endpoints",
    "dns_refresh_ms",
    "multiplex_streams",
    "metadata",
    "tls",
    "visibility",
    "mutation",
    "effects",
    "callback",
];

/// The most `Multiplex` streams per replica a declaration may ask for.
const MAX_MULTIPLEX_STREAMS: u64 = 64;

/// The shortest DNS re-resolution period a declaration may ask for.
const MIN_DNS_REFRESH_MS: u64 = 100;

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
    let endpoints = endpoints(config)?;
    let https = scheme(&endpoints[0]) == "https";
    let unix = scheme(&endpoints[0]) == "unix";
    let mut binding = InterceptorBinding::remote_replicas(ctx.id, endpoints);
    match config.get("dns_refresh_ms") {
        None => {}
        Some(_) if unix => {
            return Err("config.dns_refresh_ms applies to http(s):// endpoints only".into());
        }
        Some(Value::Number(n)) if n.as_u64().is_some_and(|ms| ms >= MIN_DNS_REFRESH_MS) => {
            let ms = n.as_u64().unwrap_or(MIN_DNS_REFRESH_MS);
            binding = binding.resolve_every(std::time::Duration::from_millis(ms));
        }
        Some(_) => {
            return Err(format!(
                "config.dns_refresh_ms must be an integer of at least {MIN_DNS_REFRESH_MS}"
            ));
        }
    }
    match config.get("multiplex_streams") {
        None => {}
        Some(Value::Number(n))
            if n.as_u64()
                .is_some_and(|k| (1..=MAX_MULTIPLEX_STREAMS).contains(&k)) =>
        {
            let k = n.as_u64().unwrap_or(1);
            binding = binding.multiplex_streams(usize::try_from(k).unwrap_or(1));
        }
        Some(_) => {
            return Err(format!(
                "config.multiplex_streams must be an integer from 1 to {MAX_MULTIPLEX_STREAMS}"
            ));
        }
    }
    if let Some(tls) = config.get("tls") {
        if !https {
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
    match config.get("callback") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => binding = binding.receives_callback(),
        Some(_) => return Err("config.callback must be true or false".into()),
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
    if let Some(kinds) = config.get("effects") {
        let kinds = strings(kinds, "config.effects")?;
        let parsed = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                Effect::parse(k).ok_or_else(|| {
                    format!(
                        "config.effects[{i}] must be one of {}",
                        Effect::ALL.map(Effect::as_str).join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        binding = binding.may_effect(parsed);
    }
    Ok(binding)
}

/// `endpoint` and `endpoints` together: at least one URL, each valid,
/// none twice, one scheme for all. Findings name the member and index,
/// never a URL.
fn endpoints(config: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut all = Vec::new();
    match config.get("endpoint") {
        Some(Value::String(s)) => {
            check_endpoint(s, "config.endpoint")?;
            all.push(s.clone());
        }
        Some(_) => return Err("config.endpoint must be a string".into()),
        None => {}
    }
    if let Some(list) = config.get("endpoints") {
        let list = strings(list, "config.endpoints")?;
        if list.is_empty() {
            return Err("config.endpoints must list at least one URL".into());
        }
        for (i, url) in list.into_iter().enumerate() {
            check_endpoint(&url, &format!("config.endpoints[{i}]"))?;
            if all.contains(&url) {
                return Err(format!(
                    "config.endpoints[{i}] repeats an endpoint already given"
                ));
            }
            all.push(url);
        }
    }
    let Some(first) = all.first() else {
        return Err("config.endpoint (or config.endpoints) is required".into());
    };
    let kind = scheme(first);
    if all.iter().any(|u| scheme(u) != kind) {
        return Err(
            "config.endpoint and config.endpoints must all be http://, all https:// or all unix:"
                .into(),
        );
    }
    Ok(all)
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

/// An absolute `http://` or `https://` URL with a host, or a
/// `unix:/absolute/path` socket, at member `at`; the reason never quotes
/// it.
fn check_endpoint(endpoint: &str, at: &str) -> Result<(), String> {
    if let Some(path) = endpoint.strip_prefix(UNIX_SCHEME) {
        return check_socket_path(path, at);
    }
    let Some(rest) = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
    else {
        return Err(format!(
            "{at} must be an absolute http:// or https:// URL, or unix:/absolute/path"
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let valid = !authority.is_empty()
        && !authority.contains('@')
        && tonic::transport::Endpoint::from_shared(endpoint.to_owned()).is_ok();
    if !valid {
        return Err(format!(
            "{at} must be an absolute http(s):// URL with a host and no user info"
        ));
    }
    Ok(())
}

/// The prefix of an endpoint on a Unix socket: `unix:/run/x/policy.sock`.
const UNIX_SCHEME: &str = "unix:";

/// The longest socket path the kernel connects to (`sun_path` is 108
/// bytes with its terminating zero).
const MAX_UNIX_PATH_BYTES: usize = 107;

/// A socket path: absolute, not a directory, within the kernel's bound.
fn check_socket_path(path: &str, at: &str) -> Result<(), String> {
    if !path.starts_with('/') || path.starts_with("//") {
        return Err(format!(
            "{at} must name an absolute socket path: unix:/absolute/path"
        ));
    }
    if path.ends_with('/') || path.contains('\0') {
        return Err(format!("{at} must name a socket file, not a directory"));
    }
    if path.len() > MAX_UNIX_PATH_BYTES {
        return Err(format!(
            "{at}: a socket path is at most {MAX_UNIX_PATH_BYTES} bytes"
        ));
    }
    Ok(())
}

/// The kind of an endpoint: `https`, `http` or `unix`; one binding's
/// replicas all share one.
fn scheme(endpoint: &str) -> &'static str {
    if endpoint.starts_with("https://") {
        "https"
    } else if endpoint.starts_with(UNIX_SCHEME) {
        "unix"
    } else {
        "http"
    }
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

#[cfg(test)]
mod tests;
