//! What the core's steps share about an emission: its deny as the
//! request's error, and the `extensions.hookwire` members the gateway
//! adds to what it emits. A leaf: it imports nothing from the core.

use hookwire_client::Emission;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::extension::NAMESPACE;

/// The combined verdict's deny as the request's error.
pub(crate) fn denied(e: &Emission) -> Error {
    Error::Denied {
        point: e.record().interception_point,
        reason: e.reason().unwrap_or("denied").to_owned(),
        message: hookwire::notice_message(e.verdict().message.as_deref()),
    }
}

/// Sets `extensions.hookwire.NAME` in an emission's members.
pub(crate) fn hookwire_member(members: &mut Map<String, Value>, name: &str, value: Value) {
    let ext = members
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(ext) = ext.as_object_mut() {
        let ns = ext
            .entry(NAMESPACE)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(ns) = ns.as_object_mut() {
            ns.insert(name.into(), value);
        }
    }
}
