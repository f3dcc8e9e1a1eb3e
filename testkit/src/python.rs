//! The project's Python interpreter for tests that run Python children
//! (the official MCP, OpenAI and Anthropic SDKs, the Python package's
//! examples, fixture servers): the venv `scripts/setup.sh` installs into
//! `.cache/venv`, checked once per test binary for what the test names.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use crate::workspace::workspace_root;

/// Imports each requirement (`sys.argv[1:]`), and compares the installed
/// distribution's version for the pinned ones (`name==version`); prints
/// one line per failure and exits 1 when there is any.
const CHECK: &str = r#"
import importlib, importlib.metadata, sys
bad = []
for req in sys.argv[1:]:
    name, _, pin = req.partition("==")
    try:
        importlib.import_module(name)
    except Exception as e:
        bad.append(f"{req}: cannot import {name} ({e})")
        continue
    if pin:
        try:
            have = importlib.metadata.version(name.split(".")[0])
        except Exception as e:
            have = f"no distribution ({e})"
        if have != pin:
            bad.append(f"{req}: {have} installed")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"#;

/// The venv's interpreter (`.cache/venv/bin/python` under the workspace
/// root), once it is known to satisfy `requirements`: each an importable
/// module (`"openai"`, `"mcp.client.streamable_http"`) or a pinned
/// distribution (`"mcp==2.3.0"`: importable, and exactly that version
/// installed). An empty list asks only for the interpreter (a fixture
/// written against the standard library).
///
/// Panics, naming what is missing and telling to run `scripts/setup.sh`,
/// when the venv or a requirement is absent: under CI or not, a test that
/// needs Python never passes without it. Each distinct list is checked
/// once per test binary.
pub fn python_venv(requirements: &[&str]) -> PathBuf {
    static CHECKED: Mutex<Option<HashSet<Vec<String>>>> = Mutex::new(None);
    let python = workspace_root().join(".cache/venv/bin/python");
    let key: Vec<String> = requirements.iter().map(|r| (*r).to_owned()).collect();
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked.get_or_insert_with(HashSet::new).contains(&key) {
        return python;
    }
    let out = Command::new(&python)
        .args(["-c", CHECK])
        .args(requirements)
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "{} lacks what this test needs: {}; run scripts/setup.sh",
            python.display(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        Err(e) => panic!(
            "{} cannot run ({e}): run scripts/setup.sh to create the venv",
            python.display()
        ),
    }
    checked.get_or_insert_with(HashSet::new).insert(key);
    python
}
