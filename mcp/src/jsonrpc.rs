//! JSON-RPC 2.0 as MCP carries it, from either side: one message per text
//! (a stdio line, an HTTP body), decoded exactly (`hookwire::json::decode`:
//! a duplicate member or an integer beyond 64 bits is refused rather than
//! read differently than the sender meant), bounded in size, and
//! classified into request, notification or response. The proxy relays
//! the messages it does not govern as the JSON they are, so this layer
//! keeps each one whole as a [`Value`] instead of rmcp's typed
//! `JsonRpcMessage` (whose closed request and notification enums would
//! have to refuse, or re-encode, a method this proxy does not know).

use serde_json::{Map, Value, json};

/// Parse error: not JSON, or not exactly representable.
pub const PARSE_ERROR: i64 = -32700;
/// Not a JSON-RPC 2.0 message, or not acceptable in the session's state.
pub const INVALID_REQUEST: i64 = -32600;
/// A request the proxy refuses to relay.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Parameters that do not have the shape the method needs.
pub const INVALID_PARAMS: i64 = -32602;
/// The upstream failed: unreachable, exited, broken, garbage.
pub const UPSTREAM_FAILED: i64 = -32000;
/// The upstream did not answer in time.
pub const UPSTREAM_TIMEOUT: i64 = -32001;
/// `agent_startup` denied the session.
pub const SESSION_DENIED: i64 = -32002;
/// A bound on sessions or requests in flight was reached.
pub const OVERLOADED: i64 = -32003;

/// A JSON-RPC id: a string or an integer (MCP forbids `null` ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// A numeric id (kept as its decimal text's value).
    Num(i64),
    /// A string id.
    Str(String),
}

impl Id {
    /// Reads an id member; `None` for anything but a string or an
    /// integer.
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::Str(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Num),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Num(n) => Value::from(*n),
            Self::Str(s) => Value::String(s.clone()),
        }
    }

    /// The id as `tool_call.id`: a string as it is, a number in decimal.
    pub fn as_call_id(&self) -> String {
        match self {
            Self::Num(n) => n.to_string(),
            Self::Str(s) => s.clone(),
        }
    }
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: it expects an answer with its id.
    Request {
        /// Its id.
        id: Id,
        /// Its method.
        method: String,
        /// Its parameters (`Null` when absent).
        params: Value,
    },
    /// A notification: no id, no answer.
    Notification {
        /// Its method.
        method: String,
        /// Its parameters (`Null` when absent).
        params: Value,
    },
    /// An answer to a request: `Ok(result)` or `Err(error object)`.
    Response {
        /// The id of the request it answers.
        id: Id,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
}

/// Why a message was not accepted. Never quotes its content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Longer than the bound.
    #[error("the message exceeds {0} bytes")]
    Oversized(usize),
    /// Not UTF-8, not JSON, or not exactly representable.
    #[error("not a JSON text hookwire can carry exactly: {0}")]
    Json(String),
    /// JSON, but not a JSON-RPC 2.0 message.
    #[error("not a JSON-RPC 2.0 message: {0}")]
    Shape(&'static str),
    /// A batch (an array), which MCP's current revision does not have.
    #[error("JSON-RPC batches are not accepted")]
    Batch,
}

impl Malformed {
    /// The JSON-RPC code an answer to it carries.
    pub fn code(&self) -> i64 {
        match self {
            Self::Json(_) => PARSE_ERROR,
            Self::Oversized(_) | Self::Shape(_) | Self::Batch => INVALID_REQUEST,
        }
    }
}

/// Decodes one message of at most `max_bytes`.
pub fn decode(bytes: &[u8], max_bytes: usize) -> Result<Message, Malformed> {
    if bytes.len() > max_bytes {
        return Err(Malformed::Oversized(max_bytes));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Malformed::Json("not UTF-8".into()))?;
    let value = hookwire::json::decode(text).map_err(|e| Malformed::Json(e.to_string()))?;
    classify(value)
}

/// Classifies a decoded JSON value.
pub fn classify(value: Value) -> Result<Message, Malformed> {
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => return Err(Malformed::Batch),
        _ => return Err(Malformed::Shape("not an object")),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Malformed::Shape("`jsonrpc` is not \"2.0\""));
    }
    let id = match obj.get("id") {
        None => None,
        Some(v) => Some(Id::from_value(v).ok_or(Malformed::Shape(
            "`id` is neither a string nor a 64-bit integer",
        ))?),
    };
    let params = obj.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Err(Malformed::Shape(
            "`params` is neither an object nor an array",
        ));
    }
    match (obj.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), _) => Err(Malformed::Shape("`method` is not a string")),
        (None, Some(id)) => {
            let outcome = match (obj.remove("result"), obj.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e @ Value::Object(_))) => Err(e),
                (None, Some(_)) => return Err(Malformed::Shape("`error` is not an object")),
                _ => {
                    return Err(Malformed::Shape(
                        "a response needs exactly one of `result` and `error`",
                    ));
                }
            };
            Ok(Message::Response { id, outcome })
        }
        (None, None) => Err(Malformed::Shape("neither `method` nor `id`")),
    }
}

impl Message {
    /// The message as JSON.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), "2.0".into());
        match self {
            Self::Request { id, method, params } => {
                m.insert("id".into(), id.to_value());
                m.insert("method".into(), method.clone().into());
                if !params.is_null() {
                    m.insert("params".into(), params.clone());
                }
            }
            Self::Notification { method, params } => {
                m.insert("method".into(), method.clone().into());
                if !params.is_null() {
                    m.insert("params".into(), params.clone());
                }
            }
            Self::Response { id, outcome } => {
                m.insert("id".into(), id.to_value());
                match outcome {
                    Ok(r) => m.insert("result".into(), r.clone()),
                    Err(e) => m.insert("error".into(), e.clone()),
                };
            }
        }
        Value::Object(m)
    }

    /// The message as one line of JSON text (no newline).
    pub fn encode(&self) -> String {
        hookwire::json::encode(&self.to_value())
    }

    /// What kind of message it is, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Request { .. } => "request",
            Self::Notification { .. } => "notification",
            Self::Response { .. } => "response",
        }
    }
}

/// A JSON-RPC error object.
pub fn error_object(code: i64, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// An error answer to `id` (`None`: the id could not be read).
pub fn error_response(id: Option<&Id>, code: i64, message: impl Into<String>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, Id::to_value),
        "error": error_object(code, message),
    })
}

/// A result answer to `id`.
pub fn result_response(id: &Id, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result})
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Result<Message, Malformed> {
        decode(s.as_bytes(), 1024)
    }

    #[test]
    fn the_three_kinds_are_told_apart() {
        assert!(matches!(
            d(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Ok(Message::Request { id: Id::Num(1), .. })
        ));
        assert!(matches!(
            d(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            d(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            d(r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#),
            Ok(Message::Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn every_malformed_shape_is_refused_with_its_code() {
        let cases = [
            ("not json", PARSE_ERROR),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
                PARSE_ERROR,
            ),
            (
                r#"{"jsonrpc":"2.0","id":123456789012345678901234,"method":"x"}"#,
                PARSE_ERROR,
            ),
            ("[]", INVALID_REQUEST),
            ("3", INVALID_REQUEST),
            (r#"{"id":1,"method":"x"}"#, INVALID_REQUEST),
            (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
                INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0"}"#, INVALID_REQUEST),
        ];
        for (text, code) in cases {
            let e = d(text).expect_err(text);
            assert_eq!(e.code(), code, "{text}: {e}");
        }
        assert_eq!(
            decode(&[b' '; 20], 10),
            Err(Malformed::Oversized(10)),
            "oversized before anything is read"
        );
        assert!(matches!(decode(&[0xff, 0xfe], 10), Err(Malformed::Json(_))));
    }

    #[test]
    fn a_message_round_trips() {
        for text in [
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":{"tools":[]}}"#,
            r#"{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"m"}}"#,
        ] {
            let m = d(text).unwrap();
            assert_eq!(d(&m.encode()).unwrap(), m);
            assert_eq!(m.to_value(), serde_json::from_str::<Value>(text).unwrap());
        }
    }

    #[test]
    fn call_ids_are_strings_or_decimals() {
        assert_eq!(Id::Num(-4).as_call_id(), "-4");
        assert_eq!(Id::Str("q".into()).as_call_id(), "q");
        assert_eq!(error_response(None, PARSE_ERROR, "m")["id"], Value::Null);
    }
}
