//! The stateless revision (2026-07-28), without I/O: the per-request
//! envelope checked (`_meta`'s protocol version and client capabilities,
//! and over HTTP the routing headers that must agree with the body), the
//! envelope as forwarded (the capabilities the proxy refuses removed),
//! the proxy's `server/discover` answer made from the upstream's, the
//! `input_required` result of a call that is still waiting for its
//! verdict, and the digest that binds a `requestState` to its call.
//!
//! The revision has no handshake: every request says which version it
//! speaks, so a version nobody negotiated is refused per request with
//! the revision's `-32022`, listing what the proxy and its upstream both
//! speak.

use serde_json::{Map, Value, json};

use super::names::bounded_name;
use crate::jsonrpc::INVALID_PARAMS;
use crate::mediation::{Direction, HANDSHAKE_VERSIONS, Kind, STATELESS_VERSIONS};

/// The `_meta` key of a stateless request's protocol version.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a stateless request's client capabilities.
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// hookwire's `_meta` key naming a conversation, so that one credential
/// can hold several hookwire sessions (stripped before forwarding).
pub const CONVERSATION_META: &str = "dev.hookwire/conversation";
/// The longest conversation name accepted.
pub const MAX_CONVERSATION: usize = 128;

/// The revision's code of the unsupported-version error.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// The revision's code of routing headers that disagree with the body.
pub const HEADER_MISMATCH: i64 = -32020;

/// The client capabilities the proxy never offers the upstream: what the
/// server could ask the client for (sampling, elicitation, roots) is
/// refused, and an extension could bring methods the table does not know.
const REFUSED_CAPABILITIES: [&str; 5] = ["sampling", "elicitation", "roots", "tasks", "extensions"];

/// A stateless request's envelope, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The protocol version the request speaks.
    pub version: String,
    /// The conversation it names (`dev.hookwire/conversation`), if any.
    pub conversation: Option<String>,
}

/// The protocol version a stateless request declares, if it is one:
/// `server/discover`, or any request carrying the version in its
/// `_meta`.
pub fn stateless_version<'a>(method: &str, params: &'a Value) -> Option<&'a Value> {
    let declared = params
        .get("_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_META));
    match declared {
        Some(v) => Some(v),
        None if method == "server/discover" => Some(&NO_VERSION),
        None => None,
    }
}

static NO_VERSION: Value = Value::Null;

/// The data of an unsupported-version error: what may be spoken and
/// what was asked (bounded: a version is a short name).
pub fn unsupported_data(supported: &[&str], requested: &Value) -> Value {
    let requested = match requested {
        Value::String(v) => Value::String(bounded_name(v).to_owned()),
        _ => Value::Null,
    };
    json!({"supported": supported, "requested": requested})
}

/// The revision's unsupported-version error, listing `supported`.
pub fn unsupported_version(supported: &[&str], requested: &Value) -> Value {
    json!({
        "code": UNSUPPORTED_VERSION,
        "message": "Unsupported protocol version",
        "data": unsupported_data(supported, requested),
    })
}

/// The versions a client may speak to this proxy when the upstream
/// speaks `upstream_stateless` of the stateless ones: those, then the
/// handshake's (so that a dual-era client falls back to `initialize`).
pub fn speakable(upstream_stateless: &[String]) -> Vec<&'static str> {
    STATELESS_VERSIONS
        .iter()
        .copied()
        .filter(|v| upstream_stateless.iter().any(|u| u == v))
        .chain(HANDSHAKE_VERSIONS)
        .collect()
}

/// Checks a stateless request's envelope; `Err` is the error object.
pub fn envelope(params: &Value) -> Result<Envelope, Value> {
    let invalid = |m: &str| json!({"code": INVALID_PARAMS, "message": m});
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return Err(invalid(
            "params._meta must be an object carrying io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        ));
    };
    let version = match meta.get(PROTOCOL_VERSION_META) {
        Some(Value::String(v)) => v,
        Some(_) => {
            return Err(invalid(
                "the protocol version in params._meta must be a string",
            ));
        }
        None => {
            return Err(invalid(
                "params._meta lacks io.modelcontextprotocol/protocolVersion",
            ));
        }
    };
    if !meta
        .get(CLIENT_CAPABILITIES_META)
        .is_some_and(Value::is_object)
    {
        return Err(invalid(
            "params._meta lacks io.modelcontextprotocol/clientCapabilities (an object)",
        ));
    }
    let conversation = match meta.get(CONVERSATION_META) {
        None => None,
        Some(Value::String(c))
            if !c.is_empty()
                && c.len() <= MAX_CONVERSATION
                && c.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Some(c.clone())
        }
        Some(_) => {
            return Err(invalid(
                "dev.hookwire/conversation must be 1 to 128 visible ASCII characters",
            ));
        }
    };
    if !STATELESS_VERSIONS.contains(&version.as_str()) {
        return Err(unsupported_version(
            &speakable(&[]),
            &Value::String(version.clone()),
        ));
    }
    Ok(Envelope {
        version: version.clone(),
        conversation,
    })
}

/// Checks the routing headers of a stateless HTTP request against its
/// body (`header` reads one by lowercase name); `Err` says which one
/// disagrees, for the revision's `-32020`.
pub fn routing_headers<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    method: &str,
    params: &Value,
    version: &str,
) -> Result<(), String> {
    if header("mcp-protocol-version") != Some(version) {
        return Err(
            "the mcp-protocol-version header does not match the request's protocol version".into(),
        );
    }
    if header("mcp-method") != Some(method) {
        return Err("the mcp-method header does not match the request's method".into());
    }
    if let Some(key) = name_key(method)
        && let Some(name) = params.get(key).and_then(Value::as_str)
        && header("mcp-name") != Some(name)
    {
        return Err(format!(
            "the mcp-name header does not match the request's {key}"
        ));
    }
    Ok(())
}

/// The parameter a request's `mcp-name` header mirrors.
pub fn name_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// The routing headers a stateless request sent upstream carries: made
/// from the body as forwarded (so a rewritten call's headers match what
/// the server receives), none for a request without the envelope.
/// A name that is not visible ASCII is not mirrored (the server reads
/// the body's).
pub fn upstream_headers(method: &str, params: &Value) -> Vec<(&'static str, String)> {
    let Some(version) = params
        .get("_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let mut h = vec![
        ("mcp-protocol-version", version.to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = name_key(method)
        .and_then(|k| params.get(k))
        .and_then(Value::as_str)
        .filter(|n| n.bytes().all(|b| b == b' ' || b.is_ascii_graphic()))
    {
        h.push(("mcp-name", name.to_owned()));
    }
    h
}

/// A request's parameters as forwarded: in its `_meta`, the client
/// capabilities without those the proxy refuses, hookwire's own keys
/// removed. Parameters without `_meta` are returned as they are.
pub fn forwarded_meta(mut params: Value) -> Value {
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.remove(CONVERSATION_META);
        if let Some(Value::Object(caps)) = meta.get_mut(CLIENT_CAPABILITIES_META) {
            for c in REFUSED_CAPABILITIES {
                caps.remove(c);
            }
        }
    }
    params
}

/// The envelope the proxy's own stateless requests upstream carry
/// (discover, its `tools/list` pages).
pub fn own_meta(version: &str) -> Value {
    json!({
        PROTOCOL_VERSION_META: version,
        CLIENT_CAPABILITIES_META: {},
        "io.modelcontextprotocol/clientInfo": {"name": "hookwire-mcp", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The stateless versions the upstream's `server/discover` result names
/// that the proxy speaks too; `Err` says what is wrong with the result.
pub fn discovered(result: &Value) -> Result<Vec<String>, String> {
    let Some(versions) = result.get("supportedVersions").and_then(Value::as_array) else {
        return Err("the upstream's server/discover result lists no supportedVersions".into());
    };
    Ok(versions
        .iter()
        .filter_map(Value::as_str)
        .filter(|v| STATELESS_VERSIONS.contains(v))
        .map(str::to_owned)
        .collect())
}

/// The client's `server/discover` answer, made from the upstream's: the
/// versions both speak (then the handshake's, which the proxy serves
/// itself), the capabilities without those the proxy removes, the rest
/// (instructions, caching hints, server info) as declared. A member the
/// mediation table does not list for the result is withheld: it could
/// carry what no point saw.
pub fn offered_discover(upstream: &Value, stateless: &[String]) -> Value {
    let listed = crate::mediation::members(
        Direction::ToServer,
        Kind::Request,
        "server/discover",
        "result",
    );
    let mut r: Map<String, Value> = upstream
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| listed.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    r.insert("supportedVersions".into(), json!(speakable(stateless)));
    if let Some(Value::Object(caps)) = r.get_mut("capabilities") {
        caps.remove("tasks");
        caps.remove("extensions");
        caps.remove("subscriptions");
    }
    r.insert("resultType".into(), "complete".into());
    Value::Object(r)
}

/// A stateless result without `resultType` is a complete one (what an
/// earlier revision's server sends); `Some` names any other kind.
pub fn incomplete_kind(result: &Value) -> Option<&str> {
    match result.get("resultType").and_then(Value::as_str) {
        None | Some("complete") => None,
        Some(other) => Some(bounded_name(other)),
    }
}

/// A result as a stateless client receives it: every result of the
/// revision says its kind, so one the proxy made (a deny's tool error)
/// or an earlier revision's server sent is marked complete.
pub fn complete(mut result: Value) -> Value {
    if let Value::Object(r) = &mut result {
        r.entry("resultType").or_insert_with(|| "complete".into());
    }
    result
}

/// The text of a call the upstream answered with `input_required`.
pub fn input_refused_text(kind: &str) -> String {
    format!(
        "hookwire: the server answered with {kind:?} (it asks the client for input, which hookwire mcp does not relay): the call has no result"
    )
}

/// The answer to a call still waiting for its verdict (an approval, a
/// slow interceptor or upstream): the revision's `input_required` with
/// only a `requestState`, which the client sends back with the same call
/// to collect the answer, however long the wait, without a held
/// connection.
pub fn parked_answer(state: &str) -> Value {
    json!({"resultType": "input_required", "requestState": state})
}

/// What binds a parked call to the retry that collects it: its tool and
/// its arguments (hex SHA-256 of their canonical JSON).
pub fn call_digest(name: &str, arguments: &Value) -> String {
    hookwire_edge::token::sha256_hex(&format!("{name}\0{}", hookwire::json::encode(arguments)))
}

/// The `requestState` of a retried call, if it carries one.
pub fn request_state(params: &Value) -> Option<&Value> {
    params.get("requestState")
}

#[cfg(test)]
mod tests;
