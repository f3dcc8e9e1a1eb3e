//! The mediation table: for every member of an API's request and answer,
//! what the gateway does with it. *Governed*: the content is in a context
//! the interceptors see, at a named point as a named member, and their
//! verdict applies to every copy of it. *Inert*: it carries nothing a
//! policy could care about (sampling, limits, echoes of the request).
//! *Refused*: no point sees it, so a request carrying it is refused with a
//! 400 naming it, and an answer carrying it loses it (the removal is in
//! the request's applied entry). A member the table does not know is
//! refused the same way; an operator may declare more members inert
//! ([`GatewayConfig::inert_members`](crate::GatewayConfig::inert_members)).
//!
//! Paths: a top-level member by name (`model`); `A[].B` a member of each
//! element of array `A`; `A.B` a member of object `A`; `A[type=T]` the
//! elements of array `A` whose `type` is `T`. The objects whose every
//! member is checked are the root and the table's `open` paths; a typed
//! array is checked element by element wherever the table lists one of
//! its types. The same walk, over the pinned SDKs' type definitions, is
//! what `gateway/tests/gateway/mediation_table.rs` compares the tables to.

use serde_json::Value;

use crate::error::Error;

/// What the gateway does with one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// In the context of `point` as `member`.
    Governed {
        /// The interception point(s) that see it.
        point: &'static str,
        /// The context member it is (or is part of).
        member: &'static str,
    },
    /// Carries no content a policy could care about.
    Inert,
    /// No point sees it: refused in a request, removed from an answer.
    Refused(&'static str),
}

/// One row of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The member's path (see the module docs).
    pub path: &'static str,
    /// What the gateway does with it.
    pub class: Class,
}

/// The table of one side (request or answer) of one API.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Paths of objects (besides the root) whose every member is checked.
    pub open: &'static [&'static str],
    /// The rows, each path once.
    pub members: &'static [Member],
}

/// The tables of one API.
#[derive(Debug, Clone, Copy)]
pub struct ApiTable {
    /// The API's name (`chat_completions`, `responses`, `messages`).
    pub api: &'static str,
    /// Its request's members.
    pub request: Table,
    /// Its answer's members (a whole answer; a stream's events are written
    /// by the gateway from the governed answer).
    pub answer: Table,
    /// The request's members governed by their type whose content is text
    /// no point is shown (a document of text, a file of text): the first
    /// found is refused like an ungoverned member.
    pub(crate) text_sources: fn(&Value) -> Option<Ungoverned>,
    /// The path an operator declares inert to let such text through
    /// (`messages[].content[type=document].text`; empty when none).
    pub text_source_path: &'static str,
}

/// The operator's extra inert paths for one side of one API, from
/// entries `API SIDE PATH` (`messages request context_management`).
fn inert_for(inert: &[String], api: &str, side: &str) -> Vec<String> {
    inert
        .iter()
        .filter_map(|e| {
            let mut it = e.split_whitespace();
            match (it.next(), it.next(), it.next()) {
                (Some(a), Some(s), Some(p)) if a == api && s == side => Some(p.to_owned()),
                _ => None,
            }
        })
        .collect()
}

/// Refuses a request carrying a member no point sees (400, naming it).
pub(crate) fn check_request(table: &ApiTable, body: &[u8], inert: &[String]) -> Result<(), Error> {
    let Ok(mut body) = serde_json::from_slice::<Value>(body) else {
        // The adapter's decoding refuses it in its own words.
        return Ok(());
    };
    let inert = inert_for(inert, table.api, "request");
    let texts_inert = inert.iter().any(|i| i == table.text_source_path);
    let found = table
        .request
        .walk(&mut body, &inert, false)
        .into_iter()
        .next()
        .or_else(|| {
            (!texts_inert)
                .then(|| (table.text_sources)(&body))
                .flatten()
        });
    match found {
        None => Ok(()),
        Some(u) => Err(Error::BadRequest(format!(
            "{} is not governed by the gateway: {}",
            u.at, u.why
        ))),
    }
}

/// Removes from a whole answer the members no point sees; their paths,
/// for the request's applied entry.
pub(crate) fn strip_answer(table: &ApiTable, answer: &mut Value, inert: &[String]) -> Vec<String> {
    let inert = inert_for(inert, table.api, "answer");
    table
        .answer
        .walk(answer, &inert, true)
        .into_iter()
        .map(|u| u.at)
        .collect()
}

/// A governed row.
pub(crate) const fn governed(
    path: &'static str,
    point: &'static str,
    member: &'static str,
) -> Member {
    Member {
        path,
        class: Class::Governed { point, member },
    }
}

/// An inert row.
pub(crate) const fn inert(path: &'static str) -> Member {
    Member {
        path,
        class: Class::Inert,
    }
}

/// A refused row.
pub(crate) const fn refused(path: &'static str, why: &'static str) -> Member {
    Member {
        path,
        class: Class::Refused(why),
    }
}

/// A member the walk found that no point sees: its path in the body (with
/// indexes), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ungoverned {
    /// Where it is (`messages[2].content[0](search_result)`, `prompt`).
    pub(crate) at: String,
    /// Why it is not governed.
    pub(crate) why: String,
}

impl Table {
    fn row(&self, path: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.path == path)
    }

    /// Whether some row lies below `path` (`path.` or `path[`).
    fn below(&self, path: &str) -> bool {
        self.members.iter().any(|m| {
            m.path.len() > path.len()
                && m.path.starts_with(path)
                && matches!(m.path.as_bytes()[path.len()], b'.' | b'[')
        })
    }

    fn is_open(&self, path: &str) -> bool {
        path.is_empty() || self.open.contains(&path)
    }

    /// Whether `path` is refused: a refused row, or no row in an object
    /// the table checks whole; `inert` are the operator's extra inert
    /// paths.
    fn verdict(&self, path: &str, open: bool, inert: &[String]) -> Option<String> {
        if inert.iter().any(|i| i == path) {
            return None;
        }
        match self.row(path) {
            Some(Member {
                class: Class::Refused(why),
                ..
            }) => Some((*why).to_owned()),
            Some(_) => None,
            None if open => Some("the gateway's mediation table does not know it".to_owned()),
            None => None,
        }
    }

    /// The members of `body` no point sees. With `remove`, they are taken
    /// out of `body` (an answer); otherwise the walk stops at the first
    /// (a request).
    pub(crate) fn walk(&self, body: &mut Value, inert: &[String], remove: bool) -> Vec<Ungoverned> {
        let mut out = Vec::new();
        self.walk_at(body, "", "", inert, remove, &mut out);
        out
    }

    fn walk_at(
        &self,
        v: &mut Value,
        path: &str,
        shown: &str,
        inert: &[String],
        remove: bool,
        out: &mut Vec<Ungoverned>,
    ) {
        let join = |a: &str, k: &str| {
            if a.is_empty() {
                k.to_owned()
            } else {
                format!("{a}.{k}")
            }
        };
        match v {
            Value::Object(map) => {
                let open = self.is_open(path);
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if !remove && !out.is_empty() {
                        return;
                    }
                    let (p, s) = (join(path, &k), join(shown, &k));
                    if let Some(why) = self.verdict(&p, open, inert) {
                        out.push(Ungoverned { at: s, why });
                        if remove {
                            map.remove(&k);
                        }
                        continue;
                    }
                    if self.below(&p)
                        && let Some(child) = map.get_mut(&k)
                    {
                        self.walk_at(child, &p, &s, inert, remove, out);
                    }
                }
            }
            Value::Array(items) => {
                let each = format!("{path}[]");
                let typed = format!("{path}[type=");
                let has_typed = self.members.iter().any(|m| m.path.starts_with(&typed));
                let mut i = 0;
                let mut n = 0;
                while i < items.len() {
                    if !remove && !out.is_empty() {
                        return;
                    }
                    let s = format!("{shown}[{n}]");
                    n += 1;
                    if has_typed {
                        let t = items[i]
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned();
                        let p = format!("{typed}{t}]");
                        if let Some(why) = self.verdict(&p, true, inert) {
                            out.push(Ungoverned {
                                at: format!("{s}({t})"),
                                why,
                            });
                            if remove {
                                items.remove(i);
                                continue;
                            }
                        }
                    }
                    if self.below(&each) {
                        self.walk_at(&mut items[i], &each, &s, inert, remove, out);
                    }
                    i += 1;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const T: Table = Table {
        open: &["choices[].message"],
        members: &[
            governed("choices", "output", "output"),
            inert("choices[].index"),
            governed("choices[].message", "output", "output"),
            governed("choices[].message.content", "output", "output"),
            refused("choices[].message.function_call", "legacy"),
            inert("model"),
            governed("messages", "input", "input"),
            governed("messages[].content[type=text]", "input", "input"),
            refused(
                "messages[].content[type=search_result]",
                "its text is not shown",
            ),
        ],
    };

    #[test]
    fn a_request_is_refused_at_its_first_ungoverned_member() {
        let mut ok = json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi"}]}]});
        assert!(T.walk(&mut ok, &[], false).is_empty());
        let mut bad = json!({"model": "m", "messages": [{"role": "user", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "search_result", "content": []}]}]});
        assert_eq!(
            T.walk(&mut bad, &[], false),
            [Ungoverned {
                at: "messages[1].content[1](search_result)".into(),
                why: "its text is not shown".into()
            }]
        );
        let mut unknown = json!({"model": "m", "prompt": {"id": "p"}});
        let found = T.walk(&mut unknown, &[], false);
        assert_eq!(found[0].at, "prompt");
        // Declared inert by the operator, it passes.
        assert!(T.walk(&mut unknown, &["prompt".into()], false).is_empty());
    }

    #[test]
    fn an_answer_loses_its_ungoverned_members_and_names_them() {
        let mut answer = json!({"model": "m", "surprise": 1, "choices": [{"index": 0,
            "extra": true,
            "message": {"content": "hi", "function_call": {"name": "rm"}, "new": 1}}]});
        let mut removed: Vec<String> = T
            .walk(&mut answer, &[], true)
            .into_iter()
            .map(|u| u.at)
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            [
                "choices[0].message.function_call",
                "choices[0].message.new",
                "surprise"
            ]
        );
        // `choices[]` is not an open object: its other members are not
        // enumerated.
        assert_eq!(
            answer,
            json!({"model": "m", "choices": [{"index": 0, "extra": true,
                                              "message": {"content": "hi"}}]})
        );
    }
}
