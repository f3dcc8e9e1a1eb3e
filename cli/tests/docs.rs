//! The documentation as a test: every fenced block of `README.md`,
//! `docs/*.md`, the SDKs' READMEs and `examples/*/README.md` is either run
//! or tied to something the suite runs, so that a step that breaks fails
//! the suite.
//!
//! The rule for doc authors — each block is one of:
//!
//! - a ```` ```console ```` transcript (`$ hookwire ...` lines, `> ` for a
//!   continued line, `? N` for an exit status, then the expected output
//!   with `...` / `[..]` where it truly varies). trycmd runs it against
//!   the built `hookwire` binary in a scratch directory holding a link to
//!   `examples/`; no shell, so no pipes, `&`, `~` or `# comments`;
//! - marked on the line before it with an HTML comment:
//!   - `<!-- doc-test: file PATH -->`: the block is an exact excerpt of
//!     PATH, a file under `examples/` or `sdks/*/examples/` that a test or
//!     script of the suite names (and so runs, type-checks or loads);
//!   - `<!-- doc-test: doctest CRATE/src/lib.rs -->`: a Rust block (not
//!     `ignore`) of a page that crate includes as doctests;
//!   - `<!-- doc-test: covered-by PATH::TEST -->`: a scenario of several
//!     processes (servers in the background, real agents, a network) that
//!     the named test runs step for step; `covered-by PATH` names a script
//!     the suite runs;
//!   - `<!-- doc-test: declaration -->`: a complete host declaration, which
//!     `hookwire check` must load;
//!   - `<!-- doc-test: output -->`: output or a sample, not a step to run;
//!     a JSON one must parse (a fragment of members: inside `{}`).
//!
//! An unmarked or wrongly marked block fails with its `page:line` and what
//! to do.

#[path = "docs/blocks.rs"]
mod blocks;
#[path = "docs/scenarios.rs"]
mod scenarios;

use blocks::{Block, Marker, blocks, pages, root};
use std::path::Path;
use std::process::Command;

/// Every block of every page.
fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|p| blocks(p)).collect()
}

/// The sources of the suite's tests and scripts, to find the files they
/// name.
fn suite_sources() -> String {
    fn walk(dir: &Path, out: &mut String) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name == "node_modules" || name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if (["rs", "py", "ts", "js", "sh", "mjs"]
                .iter()
                .any(|ext| name.ends_with(&format!(".{ext}")))
                || !name.contains('.'))
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push_str(&text);
            }
        }
    }
    let root = root();
    let mut out = String::new();
    for dir in [
        "cli/tests",
        "tests",
        "examples/tests",
        "sdks/python/tests",
        "sdks/python/scripts",
        "sdks/typescript/test",
        "sdks/typescript/scripts",
        "scripts",
        ".ci",
    ] {
        walk(&root.join(dir), &mut out);
    }
    out
}

/// What is wrong with `block` under its marker, if anything.
fn check(block: &Block, marker: &Marker, suite: &str) -> Result<(), String> {
    let root = root();
    match marker {
        Marker::Console | Marker::Declaration => Ok(()),
        Marker::File(path) => {
            if !(path.starts_with("examples/")
                || (path.starts_with("sdks/") && path.contains("/examples/")))
            {
                return Err(format!(
                    "`file {path}`: the file must be under examples/ or sdks/*/examples/"
                ));
            }
            let text = std::fs::read_to_string(root.join(path))
                .map_err(|e| format!("`file {path}`: {e}"))?;
            if !text.contains(&block.text) {
                return Err(format!(
                    "the block is not an exact excerpt of {path}: copy the file's lines into \
                     the block (or change the file and its test)"
                ));
            }
            let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or(path);
            if !suite.contains(path.as_str()) && !suite.contains(dir) {
                return Err(format!(
                    "no test or script of the suite names {path} (or {dir}/): add one that \
                     runs, type-checks or loads it"
                ));
            }
            Ok(())
        }
        Marker::Doctest(lib) => {
            if !block.lang().starts_with("rust") || block.info.contains("ignore") {
                return Err(format!(
                    "`doctest {lib}` on a ```{} block: doctests are ```rust (or rust,no_run), \
                     never ignore",
                    block.info
                ));
            }
            let text = std::fs::read_to_string(root.join(lib))
                .map_err(|e| format!("`doctest {lib}`: {e}"))?;
            // `include_str!` resolves from the library file's directory.
            let up = "../".repeat(lib.matches('/').count());
            let included = format!("include_str!(\"{up}{}\")", block.page);
            if !text.contains(&included) {
                return Err(format!(
                    "{lib} does not include {} as doctests (`#[doc = {included}]`)",
                    block.page
                ));
            }
            Ok(())
        }
        Marker::CoveredBy(targets) => {
            for (path, name) in targets {
                let text = std::fs::read_to_string(root.join(path))
                    .map_err(|e| format!("`covered-by {path}`: {e}"))?;
                let keyword = if path.ends_with(".py") { "def" } else { "fn" };
                match name {
                    Some(name) if !text.contains(&format!("{keyword} {name}(")) => {
                        return Err(format!(
                            "`covered-by`: {path} has no test `{keyword} {name}(`"
                        ));
                    }
                    None if path.ends_with(".rs") => {
                        return Err(format!(
                            "`covered-by {path}`: name the test function (`{path}::NAME`)"
                        ));
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        Marker::Output => {
            if block.lang() != "json" {
                return Ok(());
            }
            let parsed = serde_json::from_str::<serde_json::Value>(&block.text)
                .or_else(|_| serde_json::from_str(&format!("{{{}}}", block.text)));
            parsed.map(|_| ()).map_err(|e| {
                format!("a ```json output that is not JSON (nor members of an object): {e}")
            })
        }
    }
}

#[test]
fn every_block_is_marked_and_its_marker_holds() {
    let blocks = all_blocks();
    // The docs' own transcripts run too: a file they name is under test.
    let mut suite = suite_sources();
    for b in &blocks {
        if b.parsed() == Ok(Marker::Console) {
            suite.push_str(&b.text);
        }
    }
    assert!(blocks.len() > 50, "found only {} blocks", blocks.len());
    let problems: Vec<String> = blocks
        .iter()
        .filter_map(|b| {
            b.parsed()
                .and_then(|m| check(b, &m, &suite))
                .err()
                .map(|e| format!("{}: {e}", b.at()))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {} documentation blocks fail (cli/tests/docs.rs says how to mark a \
         block):\n{}",
        problems.len(),
        blocks.len(),
        problems.join("\n")
    );
}

/// A scratch directory for one transcript: `examples/` linked in, as the
/// docs' relative paths expect (run from the repository's root).
fn scratch(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
}

/// A transcript as trycmd reads it: trycmd drops the newline that ends
/// each step's expected output, so a blank line follows every step that
/// shows output (the docs end an output with its last line).
fn trycmd_text(text: &str) -> String {
    let mut out = String::new();
    let mut output = false;
    for line in text.lines() {
        if line.starts_with("$ ") && output {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
        output = !(line.starts_with("$ ") || line.starts_with("> ") || line.starts_with("? "));
    }
    if output {
        out.push('\n');
    }
    out
}

#[test]
fn the_console_transcripts_run_against_the_built_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("hookwire", Path::new(env!("CARGO_BIN_EXE_hookwire")))
        .env("HOME", home.to_string_lossy())
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(120));
    let mut count = 0;
    for block in all_blocks() {
        if block.parsed() != Ok(Marker::Console) {
            continue;
        }
        // The case's file name says where the block is, for trycmd's report.
        let name = format!("{}-L{}", block.page.replace('/', "_"), block.line);
        let case = tmp.path().join(format!("{name}.md"));
        std::fs::write(
            &case,
            format!("```console\n{}```\n", trycmd_text(&block.text)),
        )
        .unwrap();
        scratch(&tmp.path().join(format!("{name}.in")));
        cases.case(&case);
        count += 1;
    }
    assert!(count > 0, "no ```console transcript in the docs");
    cases.run();
}

#[test]
fn every_declaration_block_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for block in all_blocks() {
        if block.parsed() != Ok(Marker::Declaration) {
            continue;
        }
        let path = tmp.path().join(format!("L{}.json", block.line));
        std::fs::write(&path, &block.text).unwrap();
        // Nothing listens at the documents' endpoints here: the document
        // loads, and the probes are findings.
        let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .arg("check")
            .arg(&path)
            .args(["--timeout-ms", "200"])
            .env("POLICY_TOKEN", "example-token")
            .output()
            .expect("run hookwire check");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !stdout.contains("agent-hooks-declaration/1.0 loads") {
            problems.push(format!(
                "{}: `hookwire check` does not load it:\n{stdout}{}",
                block.at(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
