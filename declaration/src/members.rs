//! Reading a document's members once its types are checked: an object
//! member, and a string array read as a set of strings or of points.

use std::collections::BTreeSet;

use hookwire::InterceptionPoint;
use serde_json::{Map, Value};

/// The object at `key`, if the member is one.
pub(crate) fn obj<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    m.get(key).and_then(Value::as_object)
}

/// The strings of the array `v`, as a set (other items skipped).
pub(crate) fn strings(v: Option<&Value>) -> Option<BTreeSet<String>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// The interception points named in the array `v`, as a set (unknown
/// names skipped).
pub(crate) fn points(v: Option<&Value>) -> Option<BTreeSet<InterceptionPoint>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|s| s.parse().ok())
            .collect(),
    )
}
