//! The documentation's fenced blocks and the `doc-test` marker before each:
//! which files are read, how a block and its marker are found, and the
//! marker's grammar. The checks themselves are in `docs.rs`.

use std::path::{Path, PathBuf};

/// The repository's root (the `cli` crate's parent).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every page a user reads for steps to follow: the README, `docs/`, the
/// SDKs' READMEs and the examples' READMEs, relative to the root.
pub fn pages() -> Vec<String> {
    let root = root();
    let mut pages = vec![
        "README.md".to_owned(),
        "sdks/python/README.md".to_owned(),
        "sdks/typescript/README.md".to_owned(),
    ];
    for (dir, nested) in [("docs", false), ("examples", true)] {
        let mut found: Vec<String> = std::fs::read_dir(root.join(dir))
            .expect("read the directory")
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                if nested {
                    let readme = e.path().join("README.md");
                    readme.is_file().then(|| format!("{dir}/{name}/README.md"))
                } else {
                    name.ends_with(".md").then(|| format!("{dir}/{name}"))
                }
            })
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// What the marker before a block says about it.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    /// A ```console transcript: trycmd runs it (no marker needed).
    Console,
    /// `file PATH`: the block is an exact excerpt of PATH, a file the suite
    /// builds, runs or tests.
    File(String),
    /// `doctest PATH`: a Rust block compiled as a doctest of the crate whose
    /// `lib.rs` is PATH (it includes the page with `include_str!`).
    Doctest(String),
    /// `covered-by PATH::NAME ...` (test functions) or `covered-by PATH` (a
    /// script the suite runs): a multi-process scenario run by those tests.
    CoveredBy(Vec<(String, Option<String>)>),
    /// `declaration`: a complete host declaration; `hookwire check` loads it.
    Declaration,
    /// `output`: output or a sample, not a step; JSON must parse.
    Output,
}

/// One fenced block of a page.
#[derive(Debug, Clone)]
pub struct Block {
    /// The page, relative to the root.
    pub page: String,
    /// The line of the opening fence (from 1).
    pub line: usize,
    /// The info string after the fence (`sh`, `rust,no_run`, ...).
    pub info: String,
    /// The block's text, each line ending in `\n`, indentation of the fence
    /// removed.
    pub text: String,
    /// The marker's text (after `doc-test:`), if a marker precedes the block.
    pub marker: Option<String>,
}

impl Block {
    /// `page:line`, as an editor opens it.
    pub fn at(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }

    /// The language: the info string's first word.
    pub fn lang(&self) -> &str {
        self.info
            .split([',', ' '])
            .next()
            .unwrap_or_default()
            .trim()
    }

    /// The marker, parsed; `Err` says what is wrong and what to do.
    pub fn parsed(&self) -> Result<Marker, String> {
        let lang = self.lang();
        if lang == "console" || lang == "trycmd" {
            return match &self.marker {
                None => Ok(Marker::Console),
                Some(m) => Err(format!(
                    "a ```{lang} block runs as a transcript; drop its marker `{m}`"
                )),
            };
        }
        let Some(marker) = &self.marker else {
            return Err(format!(
                "unmarked ```{} block: make it a ```console transcript, or mark it \
                 (`<!-- doc-test: file|doctest|covered-by|declaration|output ... -->`)",
                self.info
            ));
        };
        let (kind, arg) = match marker.split_once(' ') {
            Some((k, a)) => (k, a.trim()),
            None => (marker.as_str(), ""),
        };
        match (kind, arg.is_empty()) {
            ("file", false) => Ok(Marker::File(arg.to_owned())),
            ("doctest", false) => Ok(Marker::Doctest(arg.to_owned())),
            ("covered-by", false) => Ok(Marker::CoveredBy(
                arg.split_whitespace()
                    .map(|target| match target.split_once("::") {
                        Some((path, name)) => (path.to_owned(), Some(name.to_owned())),
                        None => (target.to_owned(), None),
                    })
                    .collect(),
            )),
            ("declaration", true) => Ok(Marker::Declaration),
            ("output", true) => Ok(Marker::Output),
            _ => Err(format!(
                "unknown marker `doc-test: {marker}`: one of `file PATH`, `doctest PATH`, \
                 `covered-by PATH::TEST`, `declaration`, `output`"
            )),
        }
    }
}

/// The marker on a line, if the line is one.
fn marker_of(line: &str) -> Option<String> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    Some(inner.strip_prefix("doc-test:")?.trim().to_owned())
}

/// Every fenced block of `page` (relative to the root).
pub fn blocks(page: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(page)).expect("read the page");
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    let mut previous: Option<&str> = None;
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence: String = trimmed.chars().take_while(|c| *c == '`').collect();
        if fence.len() < 3 {
            if !line.trim().is_empty() {
                previous = Some(line);
            }
            continue;
        }
        let info = trimmed[fence.len()..].trim().to_owned();
        let mut body = String::new();
        for (_, inner) in lines.by_ref() {
            if inner.trim_start().starts_with(&fence) && inner.trim().trim_matches('`').is_empty() {
                break;
            }
            let cut = inner
                .char_indices()
                .take_while(|(i, c)| *i < indent && *c == ' ')
                .count();
            body.push_str(&inner[cut..]);
            body.push('\n');
        }
        out.push(Block {
            page: page.to_owned(),
            line: n + 1,
            info,
            text: body,
            marker: previous.and_then(marker_of),
        });
        previous = None;
    }
    out
}
