//! What interceptors may ask of the gateway beyond a verdict: the
//! `hookwire` namespace of their response extensions (§5.5) at
//! `pre_model_call`, at no conformance vector. Every member is an effect
//! the host releases only in `enforce` mode, from a binding whose own
//! verdict permitted and which holds the effect's grant (`model_params`,
//! `headers`, `credential`, `upstream_body`; see `hookwire_client::Effect`);
//! the gateway reads only what was released
//! (`Emission::response_extensions`), never an emission's raw answers. It
//! reads two members:
//!
//! ```json
//! {"hookwire": {
//!   "model": {"temperature": 0.2, "top_p": 0.9, "max_tokens": 256,
//!             "model": "gpt-4o-mini",
//!             "system_prompt": {"mode": "prepend", "text": "Be brief."}},
//!   "upstream": {
//!     "before_credentials": {"clear_headers": ["x-debug"],
//!                            "set_headers": {"x-team": "blue"},
//!                            "credential": "env:TEAM_BLUE_KEY",
//!                            "body": {"...": "a whole replacement request"}},
//!     "after_credentials": {"clear_headers": [], "set_headers": {}}
//!   }
//! }}
//! ```
//!
//! Both are merged across the chain in chain order: a later interceptor
//! wins per key (each override scalar, each header name, the body,
//! the credential); header clears accumulate. Every member is checked and
//! bounded; a malformed request fails the request closed
//! ([`Error::InvalidExtension`]), naming the binding. The merged result
//! says which binding set what, for the gateway's record.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::Error;

/// The response-extension namespace the gateway reads.
pub const NAMESPACE: &str = "hookwire";
/// How many headers one stage may set or clear.
pub const MAX_HEADERS: usize = 32;
/// How long one header value may be.
pub const MAX_HEADER_VALUE: usize = 8192;
/// How long an overriding model name may be.
pub const MAX_MODEL_NAME: usize = 256;

/// Headers no interceptor may touch: they belong to the connection.
const RESERVED_HEADERS: [&str; 10] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
];

/// How an overriding system prompt combines with the request's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemPromptMode {
    /// Put before the request's first system message (or as a new first
    /// message when there is none).
    Prepend,
    /// Replace the request's first system message (or add one).
    Replace,
}

/// A value set by one binding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetBy<T> {
    /// The value.
    pub value: T,
    /// The binding that set it (the last one, when several did).
    pub by: String,
}

/// The merged model-parameter overrides of one `pre_model_call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelOverrides {
    /// `temperature` (0–2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<SetBy<f64>>,
    /// `top_p` (0–1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<SetBy<f64>>,
    /// `max_tokens` (or `max_completion_tokens` when the request uses it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<SetBy<u64>>,
    /// The model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<SetBy<String>>,
    /// The system prompt, prepended or replacing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<SetBy<(SystemPromptMode, String)>>,
}

impl ModelOverrides {
    /// Whether nothing was overridden.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Writes the members every wire API names alike — `model`,
    /// `temperature`, `top_p` — and the token limit under the name the API
    /// gives it (`max_tokens`, `max_completion_tokens`,
    /// `max_output_tokens`). The system prompt is each API's own.
    pub(crate) fn apply_common(&self, body: &mut Map<String, Value>, max_tokens_key: &str) {
        if let Some(t) = &self.temperature {
            body.insert("temperature".into(), Value::from(t.value));
        }
        if let Some(p) = &self.top_p {
            body.insert("top_p".into(), Value::from(p.value));
        }
        if let Some(m) = &self.max_tokens {
            body.insert(max_tokens_key.into(), Value::from(m.value));
        }
        if let Some(m) = &self.model {
            body.insert("model".into(), Value::from(m.value.clone()));
        }
    }

    /// Applies the overrides to a Chat Completions request body.
    pub(crate) fn apply(&self, body: &mut Map<String, Value>) {
        let max_tokens_key = if body.contains_key("max_completion_tokens") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        self.apply_common(body, max_tokens_key);
        if let Some(SetBy {
            value: (mode, text),
            ..
        }) = &self.system_prompt
            && let Some(Value::Array(messages)) = body.get_mut("messages")
        {
            let first_system = messages.iter().position(|m| {
                matches!(
                    m.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            });
            match (mode, first_system) {
                (SystemPromptMode::Replace, Some(i)) => {
                    messages[i]["content"] = Value::from(text.clone());
                }
                (SystemPromptMode::Prepend, Some(i)) if messages[i]["content"].is_string() => {
                    let old = messages[i]["content"].as_str().unwrap_or_default();
                    messages[i]["content"] = Value::from(format!("{text}\n\n{old}"));
                }
                _ => messages.insert(
                    0,
                    serde_json::json!({"role": "system", "content": text.clone()}),
                ),
            }
        }
    }
}

/// The merged request of one stage of upstream mutation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StageMutation {
    /// Header names to remove (lower case), applied first.
    pub(crate) clear_headers: Vec<String>,
    /// Header name (lower case) → value, applied after the clears.
    pub(crate) set_headers: BTreeMap<String, SetBy<String>>,
    /// A whole replacement body.
    pub(crate) body: Option<SetBy<Map<String, Value>>>,
}

/// Everything the chain asked of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    /// The model-parameter overrides.
    pub(crate) model: ModelOverrides,
    /// Mutations applied before the credential is chosen.
    pub(crate) before: StageMutation,
    /// Mutations applied after the credential is set.
    pub(crate) after: StageMutation,
    /// The credential label asked for, and by whom.
    pub(crate) credential: Option<SetBy<String>>,
}

impl Asked {
    /// Merges the `hookwire` extensions the host released for an
    /// emission (`Emission::response_extensions`), in chain order.
    pub(crate) fn from_extensions(ext: &[(String, Map<String, Value>)]) -> Result<Self, Error> {
        let mut asked = Self::default();
        for (binding, namespaces) in ext {
            let Some(ours) = namespaces.get(NAMESPACE) else {
                continue;
            };
            let bad = |reason: String| Error::InvalidExtension {
                binding: binding.clone(),
                reason,
            };
            let ours = ours
                .as_object()
                .ok_or_else(|| bad(format!("extensions.{NAMESPACE} is not an object")))?;
            if let Some(model) = ours.get("model") {
                asked.merge_model(binding, model).map_err(bad)?;
            }
            if let Some(upstream) = ours.get("upstream") {
                let upstream = upstream
                    .as_object()
                    .ok_or_else(|| bad("upstream is not an object".into()))?;
                for (k, v) in upstream {
                    match k.as_str() {
                        "before_credentials" => {
                            let cred = merge_stage(&mut asked.before, binding, v, true)
                                .map_err(|r| bad(format!("{k}: {r}")))?;
                            if let Some(c) = cred {
                                asked.credential = Some(SetBy {
                                    value: c,
                                    by: binding.clone(),
                                });
                            }
                        }
                        "after_credentials" => {
                            merge_stage(&mut asked.after, binding, v, false)
                                .map_err(|r| bad(format!("{k}: {r}")))?;
                        }
                        other => return Err(bad(format!("unknown upstream stage {other:?}"))),
                    }
                }
            }
        }
        Ok(asked)
    }

    fn merge_model(&mut self, binding: &str, model: &Value) -> Result<(), String> {
        let model = model.as_object().ok_or("model is not an object")?;
        let by = || binding.to_owned();
        for (k, v) in model {
            match k.as_str() {
                "temperature" => {
                    let t =
                        number_in(v, 0.0, 2.0).ok_or("temperature must be a number in 0..=2")?;
                    self.model.temperature = Some(SetBy { value: t, by: by() });
                }
                "top_p" => {
                    let p = number_in(v, 0.0, 1.0).ok_or("top_p must be a number in 0..=1")?;
                    self.model.top_p = Some(SetBy { value: p, by: by() });
                }
                "max_tokens" => {
                    let m = v
                        .as_u64()
                        .filter(|m| (1..=1_000_000).contains(m))
                        .ok_or("max_tokens must be an integer in 1..=1000000")?;
                    self.model.max_tokens = Some(SetBy { value: m, by: by() });
                }
                "model" => {
                    let m = v
                        .as_str()
                        .filter(|m| !m.is_empty() && m.len() <= MAX_MODEL_NAME)
                        .ok_or("model must be a non-empty string of at most 256 bytes")?;
                    self.model.model = Some(SetBy {
                        value: m.to_owned(),
                        by: by(),
                    });
                }
                "system_prompt" => {
                    let mode = match v.get("mode").and_then(Value::as_str) {
                        Some("prepend") => SystemPromptMode::Prepend,
                        Some("replace") => SystemPromptMode::Replace,
                        _ => return Err("system_prompt.mode must be prepend or replace".into()),
                    };
                    let text = v
                        .get("text")
                        .and_then(Value::as_str)
                        .ok_or("system_prompt.text must be a string")?;
                    self.model.system_prompt = Some(SetBy {
                        value: (mode, text.to_owned()),
                        by: by(),
                    });
                }
                other => return Err(format!("unknown model override {other:?}")),
            }
        }
        Ok(())
    }
}

fn number_in(v: &Value, lo: f64, hi: f64) -> Option<f64> {
    v.as_f64()
        .filter(|x| x.is_finite() && (lo..=hi).contains(x))
}

/// Merges one stage; returns the credential label it asked for, if any
/// (only `before_credentials` may ask).
fn merge_stage(
    stage: &mut StageMutation,
    binding: &str,
    v: &Value,
    before: bool,
) -> Result<Option<String>, String> {
    let o = v.as_object().ok_or("not an object")?;
    let mut credential = None;
    for (k, v) in o {
        match k.as_str() {
            "clear_headers" => {
                let names = v.as_array().ok_or("clear_headers is not an array")?;
                if names.len() > MAX_HEADERS {
                    return Err(format!("more than {MAX_HEADERS} headers to clear"));
                }
                for n in names {
                    let n = n.as_str().ok_or("a header name is not a string")?;
                    stage.clear_headers.push(header_name(n)?);
                }
                if stage.clear_headers.len() > MAX_HEADERS * 4 {
                    return Err("too many headers cleared across the chain".into());
                }
            }
            "set_headers" => {
                let set = v.as_object().ok_or("set_headers is not an object")?;
                if set.len() > MAX_HEADERS {
                    return Err(format!("more than {MAX_HEADERS} headers to set"));
                }
                for (n, value) in set {
                    let value = value.as_str().ok_or("a header value is not a string")?;
                    if value.len() > MAX_HEADER_VALUE
                        || axum::http::HeaderValue::from_str(value).is_err()
                    {
                        return Err(format!(
                            "the value of header {n:?} is not a valid header value"
                        ));
                    }
                    stage.set_headers.insert(
                        header_name(n)?,
                        SetBy {
                            value: value.to_owned(),
                            by: binding.to_owned(),
                        },
                    );
                }
                if stage.set_headers.len() > MAX_HEADERS * 4 {
                    return Err("too many headers set across the chain".into());
                }
            }
            "body" => {
                let body = v.as_object().ok_or("body must be a JSON object")?;
                if !body.is_empty() {
                    stage.body = Some(SetBy {
                        value: body.clone(),
                        by: binding.to_owned(),
                    });
                }
            }
            "credential" if before => {
                let label = v.as_str().ok_or("credential must be a label string")?;
                credential = Some(label.to_owned());
            }
            other => return Err(format!("unknown member {other:?}")),
        }
    }
    Ok(credential)
}

fn header_name(n: &str) -> Result<String, String> {
    let lower = n.to_ascii_lowercase();
    if axum::http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        return Err(format!("{n:?} is not a header name"));
    }
    if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-hookwire-") {
        return Err(format!("header {n:?} is reserved"));
    }
    Ok(lower)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ext(name: &str, v: Value) -> (String, Map<String, Value>) {
        let mut m = Map::new();
        m.insert(NAMESPACE.into(), v);
        (name.into(), m)
    }

    #[test]
    fn later_bindings_win_per_key_and_clears_accumulate() {
        let asked = Asked::from_extensions(&[
            ext(
                "a",
                json!({"model": {"temperature": 0.1, "max_tokens": 10},
                       "upstream": {"before_credentials": {"set_headers": {"X-Team": "a"},
                                                           "clear_headers": ["x-one"]}}}),
            ),
            ext(
                "b",
                json!({"model": {"temperature": 0.7, "top_p": 0.5},
                       "upstream": {"before_credentials": {"set_headers": {"x-team": "b"},
                                                           "clear_headers": ["x-two"],
                                                           "credential": "k2"}}}),
            ),
        ])
        .unwrap();
        let m = &asked.model;
        assert_eq!(
            m.temperature.as_ref().map(|t| (t.value, t.by.as_str())),
            Some((0.7, "b"))
        );
        assert_eq!(
            m.max_tokens.as_ref().map(|t| (t.value, t.by.as_str())),
            Some((10, "a"))
        );
        assert_eq!(m.top_p.as_ref().map(|t| t.value), Some(0.5));
        assert_eq!(asked.before.set_headers["x-team"].value, "b");
        assert_eq!(asked.before.clear_headers, ["x-one", "x-two"]);
        assert_eq!(asked.credential.unwrap().value, "k2");
    }

    #[test]
    fn malformed_or_reserved_requests_name_the_binding() {
        for bad in [
            json!({"model": {"temperature": 9}}),
            json!({"model": {"colour": "red"}}),
            json!({"upstream": {"before_credentials": {"set_headers": {"host": "evil"}}}}),
            json!({"upstream": {"after_credentials": {"credential": "k"}}}),
            json!({"upstream": {"during": {}}}),
            json!("not an object"),
        ] {
            let err = Asked::from_extensions(&[ext("p", bad.clone())]).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidExtension { binding, .. } if binding == "p"),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn the_system_prompt_is_prepended_or_replaced() {
        let mut body = json!({"messages": [{"role": "system", "content": "old"},
                                           {"role": "user", "content": "hi"}]});
        let mut o = ModelOverrides {
            system_prompt: Some(SetBy {
                value: (SystemPromptMode::Prepend, "new".into()),
                by: "p".into(),
            }),
            ..ModelOverrides::default()
        };
        o.apply(body.as_object_mut().unwrap());
        assert_eq!(body["messages"][0]["content"], "new\n\nold");
        o.system_prompt = Some(SetBy {
            value: (SystemPromptMode::Replace, "only".into()),
            by: "p".into(),
        });
        o.apply(body.as_object_mut().unwrap());
        assert_eq!(body["messages"][0]["content"], "only");
        let mut bare = json!({"messages": [{"role": "user", "content": "hi"}]});
        o.apply(bare.as_object_mut().unwrap());
        assert_eq!(
            bare["messages"][0],
            json!({"role": "system", "content": "only"})
        );
    }
}
