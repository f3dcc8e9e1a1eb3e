//! The context as Rego `input`, converted only as far as the policies read
//! it.
//!
//! Converting the whole context (a 1 KiB tool call is dozens of strings)
//! into regorus values, and dropping them after, costs more than a small
//! policy's evaluation. At load, [`InputPaths::scan`] collects every
//! `input.a.b.c` reference in the modules' text; a decision then converts
//! only those paths (each path's value whole). `with input as ...` (as
//! Rego tests write) replaces `input` and reads none of it. Any other use
//! of `input` — `input[x]`, `object.get(input, ...)`, `x := input` — makes
//! the set convert everything, so a policy always sees what it asks for: a pruned
//! input differs from the full one only in members no module names.

use std::collections::BTreeMap;

use hookwire::AgentContext;
use regorus::Value as RegoValue;
use serde::Deserialize as _;
use serde_json::Value;

use crate::error::Error;

/// The `input` paths the policies read: a tree of member names, where a
/// leaf means "this value whole".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PathTree(BTreeMap<String, PathTree>);

/// What a decision converts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputPaths {
    /// The whole context (some module uses `input` other than by path).
    All,
    /// Only these paths.
    Paths(PathTree),
}

impl InputPaths {
    /// The paths `modules` (Rego source texts) read from `input`.
    pub(crate) fn scan<'a>(modules: impl IntoIterator<Item = &'a str>) -> Self {
        let mut tree = PathTree::default();
        for text in modules {
            let text = code_only(text);
            let bytes = text.as_bytes();
            let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
            let mut from = 0;
            while let Some(found) = text[from..].find("input") {
                let start = from + found;
                let mut end = start + "input".len();
                from = end;
                if start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b'.') {
                    continue; // `my_input`, `data.input`: not the root document
                }
                if end < bytes.len() && ident(bytes[end]) {
                    continue; // `input_pii`
                }
                let before = text[..start].trim_end();
                if before.ends_with("with")
                    && !before[..before.len() - 4]
                        .bytes()
                        .next_back()
                        .is_some_and(ident)
                {
                    continue; // `with input as {...}` replaces input, reads nothing
                }
                let mut path = Vec::new();
                while end < bytes.len() && bytes[end] == b'.' {
                    let name_end = bytes[end + 1..]
                        .iter()
                        .position(|b| !ident(*b))
                        .map_or(bytes.len(), |n| end + 1 + n);
                    if name_end == end + 1 {
                        break;
                    }
                    path.push(&text[end + 1..name_end]);
                    end = name_end;
                }
                if path.is_empty() {
                    return Self::All;
                }
                tree.insert(&path);
            }
        }
        Self::Paths(tree)
    }

    /// `ctx` as `input`: its spec JSON with `target`, pruned to the paths.
    pub(crate) fn convert(&self, ctx: &AgentContext) -> Result<RegoValue, Error> {
        let mut members: Vec<(&str, &Value)> =
            ctx.members().iter().map(|(k, v)| (k.as_str(), v)).collect();
        if let Some(target) = ctx.target() {
            members.push(("target", target));
        }
        let mut input = RegoValue::new_object();
        let map = input
            .as_object_mut()
            .map_err(|e| Error::Evaluation(format!("{e:#}")))?;
        for (key, value) in members {
            let converted = match self {
                Self::All => Some(whole(value)?),
                Self::Paths(tree) => match tree.0.get(key) {
                    Some(sub) => Some(pruned(value, sub)?),
                    None => None,
                },
            };
            if let Some(converted) = converted {
                map.insert(RegoValue::from(key), converted);
            }
        }
        Ok(input)
    }
}

/// `text` with comments and string literals blanked out (so neither a
/// comment nor a string counts as a use of `input`).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' => {
                out.push(' ');
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                    out.push(' ');
                }
            }
            '"' | '`' => {
                out.push(' ');
                let mut escaped = false;
                for d in chars.by_ref() {
                    out.push(if d == '\n' { '\n' } else { ' ' });
                    if c == '"' && escaped {
                        escaped = false;
                    } else if c == '"' && d == '\\' {
                        escaped = true;
                    } else if d == c {
                        break;
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

impl PathTree {
    fn insert(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        // An existing leaf already converts the value whole.
        let existing = self.0.get(*first).map(|sub| sub.0.is_empty());
        match existing {
            Some(true) => {}
            Some(false) if rest.is_empty() => {
                self.0.insert((*first).to_owned(), Self::default());
            }
            _ => self.0.entry((*first).to_owned()).or_default().insert(rest),
        }
    }
}

fn whole(value: &Value) -> Result<RegoValue, Error> {
    RegoValue::deserialize(value)
        .map_err(|e| Error::Evaluation(format!("context does not convert to Rego: {e}")))
}

/// `value` restricted to `tree` (whole at a leaf, or when not an object).
fn pruned(value: &Value, tree: &PathTree) -> Result<RegoValue, Error> {
    let Value::Object(members) = value else {
        return whole(value);
    };
    if tree.0.is_empty() {
        return whole(value);
    }
    let mut out = RegoValue::new_object();
    let map = out
        .as_object_mut()
        .map_err(|e| Error::Evaluation(format!("{e:#}")))?;
    for (key, sub) in &tree.0 {
        if let Some(v) = members.get(key) {
            map.insert(RegoValue::from(key.as_str()), pruned(v, sub)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        fn walk(tree: &PathTree, prefix: &str, out: &mut Vec<String>) {
            for (k, sub) in &tree.0 {
                let p = format!("{prefix}.{k}");
                if sub.0.is_empty() {
                    out.push(p);
                } else {
                    walk(sub, &p, out);
                }
            }
        }
        match InputPaths::scan([text]) {
            InputPaths::All => vec!["*".into()],
            InputPaths::Paths(tree) => {
                let mut out = Vec::new();
                walk(&tree, "input", &mut out);
                out
            }
        }
    }

    #[test]
    fn paths_are_collected_and_a_shorter_path_wins() {
        assert_eq!(
            paths(
                "x := input.tool_call.args.cmd\ny if input.tool_call.name == \"a\"\nz := input.budgets"
            ),
            [
                "input.budgets",
                "input.tool_call.args.cmd",
                "input.tool_call.name"
            ]
        );
        assert_eq!(
            paths("a := input.tool_call.args.cmd\nb := input.tool_call"),
            ["input.tool_call"]
        );
        assert_eq!(paths("b := input.tool_call[\"args\"]"), ["input.tool_call"]);
        assert_eq!(
            paths("my_input.x\ninput_pii := 1\ndata.input.y"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn comments_and_strings_are_not_uses_of_input() {
        let text = r#"# the input is read
x := "input" # input
y := `input`
w := "a \"input\" b"
z := input.a"#;
        assert_eq!(paths(text), ["input.a"]);
    }

    #[test]
    fn with_input_as_reads_nothing_of_the_context() {
        assert_eq!(
            paths(
                "test_a if {\n  d.deny with input as {\"x\": 1}\n}\ny := input.b with input.c as 2"
            ),
            ["input.b"]
        );
        assert_eq!(paths("x := notwith input"), ["*"]);
    }

    #[test]
    fn the_example_library_with_its_tests_reads_paths_only() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/policies");
        let texts: Vec<String> = std::fs::read_dir(dir)
            .expect("the library")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "rego"))
            .map(|p| std::fs::read_to_string(p).expect("read"))
            .collect();
        assert!(texts.len() >= 12, "{} modules", texts.len());
        let scanned = InputPaths::scan(texts.iter().map(String::as_str));
        assert!(matches!(scanned, InputPaths::Paths(_)), "{scanned:?}");
    }

    #[test]
    fn any_other_use_of_input_converts_everything() {
        for text in [
            "x := input",
            "x := input[k]",
            "object.get(input, \"a\", 1)",
            "x := input .a",
        ] {
            assert_eq!(paths(text), ["*"], "{text}");
        }
    }
}
