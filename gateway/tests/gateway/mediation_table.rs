//! Every member the pinned official SDKs type for a request or an answer
//! of an API the gateway speaks has a row in that API's mediation table:
//! tests/sdk/sdk_members.py (run in .cache/venv, where scripts/setup.sh
//! installs the pinned `openai` and `anthropic` packages) prints the
//! member paths from the SDKs' request TypedDicts and response models,
//! and each must be classified. A new API member in an SDK upgrade fails
//! here, not in a user's hands.

use std::collections::BTreeSet;

use hookwire_gateway::{Class, mediation_table};
use hookwire_testkit::{python_venv, workspace_root};

/// `API SIDE PATH` for every member the SDKs type.
fn sdk_members() -> Vec<(String, String, String)> {
    let python = python_venv(&["openai", "anthropic"]);
    let out = std::process::Command::new(&python)
        .arg(workspace_root().join("tests/sdk/sdk_members.py"))
        .output()
        .unwrap_or_else(|e| panic!("{} runs (scripts/setup.sh): {e}", python.display()));
    assert!(
        out.status.success(),
        "sdk_members.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let members: Vec<_> = text
        .lines()
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let (a, s, p) = (it.next(), it.next(), it.next());
            (
                a.unwrap().to_owned(),
                s.unwrap().to_owned(),
                p.unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        members.len() > 200,
        "the walk found the SDKs' members: {text}"
    );
    members
}

#[test]
fn every_member_the_pinned_sdks_type_is_classified() {
    let mut missing = BTreeSet::new();
    for (api, side, path) in sdk_members() {
        let table = mediation_table(&api).unwrap_or_else(|| panic!("a table for {api}"));
        let rows = if side == "request" {
            &table.request
        } else {
            &table.answer
        };
        if !rows.members.iter().any(|m| m.path == path) {
            missing.insert(format!("{api} {side} {path}"));
        }
    }
    assert!(
        missing.is_empty(),
        "members the mediation tables do not classify (govern, declare inert or refuse each): {missing:#?}"
    );
}

#[test]
fn each_table_lists_each_path_once_and_says_why_it_refuses() {
    for api in ["chat_completions", "responses", "messages"] {
        let table = mediation_table(api).unwrap();
        for rows in [&table.request, &table.answer] {
            let mut seen = BTreeSet::new();
            for m in rows.members {
                assert!(seen.insert(m.path), "{api}: {} twice", m.path);
                match m.class {
                    Class::Refused(why) => assert!(!why.is_empty(), "{api} {}", m.path),
                    Class::Governed { point, member } => {
                        assert!(!point.is_empty() && !member.is_empty(), "{api} {}", m.path)
                    }
                    Class::Inert => {}
                }
            }
        }
        let count = |rows: &hookwire_gateway::Table, f: fn(&Class) -> bool| {
            rows.members.iter().filter(|m| f(&m.class)).count()
        };
        for (side, rows) in [("request", &table.request), ("answer", &table.answer)] {
            // The sizes the docs state (docs/gateway*.md, "Mediation table").
            println!(
                "{api} {side}: governed {}, inert {}, refused {}",
                count(rows, |c| matches!(c, Class::Governed { .. })),
                count(rows, |c| matches!(c, Class::Inert)),
                count(rows, |c| matches!(c, Class::Refused(_))),
            );
        }
    }
}
