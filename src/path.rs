//! Transform paths (AGENT-HOOKS-0.1 §5.2): parsing the `$target` JSONPath
//! subset of `spec/schema/path-grammar.abnf` and replacing the addressed
//! value.
//!
//! ```text
//! path           = root *( segment )
//! root           = "$target" / "$policy_target"    ; deprecated alias
//! segment        = "." member-name / "[" 1*DIGIT "]" / "[" DQUOTE member-name DQUOTE "]"
//! member-name    = 1*( ALPHA / DIGIT / "_" / "-" )
//! ```
//!
//! A path replaces an existing location only: it never creates a member or
//! grows an array. A path that does not resolve is `transform_invalid`; a
//! path rooted anywhere but `$target` is `transform_target_forbidden`.

use serde_json::Value;

use crate::reason::HostError;

/// One step of a parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// `.name` or `["name"]`: an object member.
    Member(String),
    /// `[3]`: an array index.
    Index(usize),
}

/// Why a transform path was refused; maps onto the two reserved reasons.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidPath {
    /// Not rooted at `$target` (or `$policy_target`).
    #[error("transform path must be rooted at $target")]
    ForeignRoot,
    /// Malformed segment syntax after the root, at the given byte offset.
    #[error("transform path is malformed at byte {0}")]
    Malformed(usize),
    /// Well-formed, but the target has no such location.
    #[error("transform path does not resolve against the target")]
    Unresolved,
}

impl InvalidPath {
    /// The reserved reason this refusal becomes (§5.2, §11).
    pub fn host_error(&self) -> HostError {
        match self {
            Self::ForeignRoot => HostError::TransformTargetForbidden,
            Self::Malformed(_) | Self::Unresolved => HostError::TransformInvalid,
        }
    }
}

/// Parses a transform path into its segments (empty for the bare root).
pub fn parse(path: &str) -> Result<Vec<PathSegment>, InvalidPath> {
    let rest = ["$target", "$policy_target"]
        .into_iter()
        .find_map(|root| {
            path.strip_prefix(root)
                .filter(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
        .ok_or(InvalidPath::ForeignRoot)?;
    let offset = path.len() - rest.len();
    let bytes = rest.as_bytes();
    let mut segments = Vec::new();
    let mut i = 0;
    let member_len = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
            .count()
    };
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                let n = member_len(i + 1);
                if n == 0 {
                    return Err(InvalidPath::Malformed(offset + i));
                }
                segments.push(PathSegment::Member(rest[i + 1..i + 1 + n].to_owned()));
                i += 1 + n;
            }
            b'[' if bytes.get(i + 1) == Some(&b'"') => {
                let n = member_len(i + 2);
                let close = i + 2 + n;
                if n == 0 || bytes.get(close) != Some(&b'"') || bytes.get(close + 1) != Some(&b']')
                {
                    return Err(InvalidPath::Malformed(offset + i));
                }
                segments.push(PathSegment::Member(rest[i + 2..close].to_owned()));
                i = close + 2;
            }
            b'[' => {
                let n = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if n == 0 || bytes.get(i + 1 + n) != Some(&b']') {
                    return Err(InvalidPath::Malformed(offset + i));
                }
                let index = rest[i + 1..i + 1 + n]
                    .parse()
                    .map_err(|_| InvalidPath::Malformed(offset + i))?;
                segments.push(PathSegment::Index(index));
                i += n + 2;
            }
            _ => return Err(InvalidPath::Malformed(offset + i)),
        }
    }
    Ok(segments)
}

/// Replaces the location `path` addresses inside `target` with `value`.
/// On error `target` is left unchanged.
pub fn apply(target: &mut Value, path: &str, value: Value) -> Result<(), InvalidPath> {
    replace(target, path, value).map(drop)
}

/// [`apply`], returning the value it replaced: what a host puts back
/// (with the same path, which still resolves) when the transformed
/// target breaks a bound. On error `target` is left unchanged.
pub fn replace(target: &mut Value, path: &str, value: Value) -> Result<Value, InvalidPath> {
    let segments = parse(path)?;
    let slot = locate_mut(target, &segments)?;
    Ok(std::mem::replace(slot, value))
}

/// Checks that `path` parses and resolves against `target` without changing
/// it: what `evaluate_only` mode does with a transform (§8).
pub fn check(target: &Value, path: &str) -> Result<(), InvalidPath> {
    let segments = parse(path)?;
    let mut cur = target;
    for seg in &segments {
        cur = match (cur, seg) {
            (Value::Object(m), PathSegment::Member(k)) => m.get(k),
            (Value::Array(a), PathSegment::Index(i)) => a.get(*i),
            _ => None,
        }
        .ok_or(InvalidPath::Unresolved)?;
    }
    Ok(())
}

fn locate_mut<'a>(
    target: &'a mut Value,
    segments: &[PathSegment],
) -> Result<&'a mut Value, InvalidPath> {
    let mut cur = target;
    for seg in segments {
        cur = match (cur, seg) {
            (Value::Object(m), PathSegment::Member(k)) => m.get_mut(k),
            (Value::Array(a), PathSegment::Index(i)) => a.get_mut(*i),
            _ => None,
        }
        .ok_or(InvalidPath::Unresolved)?;
    }
    Ok(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_segment_form_and_the_alias() {
        assert_eq!(parse("$target").unwrap(), vec![]);
        assert_eq!(
            parse("$policy_target.a[2][\"b-c\"]").unwrap(),
            vec![
                PathSegment::Member("a".into()),
                PathSegment::Index(2),
                PathSegment::Member("b-c".into())
            ]
        );
    }

    #[test]
    fn classifies_refusals() {
        assert_eq!(parse("$.a"), Err(InvalidPath::ForeignRoot));
        assert_eq!(parse("$targets.a"), Err(InvalidPath::ForeignRoot));
        assert_eq!(parse("$context.a"), Err(InvalidPath::ForeignRoot));
        assert!(matches!(parse("$target."), Err(InvalidPath::Malformed(_))));
        assert!(matches!(
            parse("$target[x]"),
            Err(InvalidPath::Malformed(_))
        ));
        assert!(matches!(
            parse("$target[\"a.b\"]"),
            Err(InvalidPath::Malformed(_))
        ));
        assert!(matches!(
            parse("$target.a b"),
            Err(InvalidPath::Malformed(_))
        ));
    }

    #[test]
    fn replaces_only_existing_locations() {
        let mut t = json!({"cmd": "rm -rf /", "list": [1, 2]});
        apply(&mut t, "$target.cmd", json!("ls")).unwrap();
        apply(&mut t, "$target.list[1]", json!(null)).unwrap();
        assert_eq!(t, json!({"cmd": "ls", "list": [1, null]}));
        assert_eq!(
            apply(&mut t, "$target.missing", json!(1)),
            Err(InvalidPath::Unresolved)
        );
        assert_eq!(
            apply(&mut t, "$target.list[5]", json!(1)),
            Err(InvalidPath::Unresolved)
        );
        assert_eq!(
            apply(&mut t, "$target.cmd.x", json!(1)),
            Err(InvalidPath::Unresolved)
        );
        assert_eq!(t, json!({"cmd": "ls", "list": [1, null]}));
        apply(&mut t, "$target", json!("whole")).unwrap();
        assert_eq!(t, json!("whole"));
    }

    #[test]
    fn replace_hands_back_what_it_replaced_and_putting_it_back_restores() {
        let before = json!({"cmd": "ls", "list": [1, {"a": true}]});
        let mut t = before.clone();
        let old = replace(&mut t, "$target.list[1]", json!("x")).unwrap();
        assert_eq!(old, json!({"a": true}));
        assert_eq!(t, json!({"cmd": "ls", "list": [1, "x"]}));
        assert_eq!(replace(&mut t, "$target.list[1]", old), Ok(json!("x")));
        assert_eq!(t, before);
        assert_eq!(
            replace(&mut t, "$target.nope", json!(1)),
            Err(InvalidPath::Unresolved)
        );
        assert_eq!(t, before);
    }
}
