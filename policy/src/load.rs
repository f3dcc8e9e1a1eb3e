//! Reading a policy directory from disk: its Rego modules and its data
//! documents, nothing evaluated yet.
//!
//! The layout follows OPA's bundles: every `*.rego` file below the
//! directory is a module; a file named `data.json`, `data.yaml` or
//! `data.yml` is a data document placed at the path of its folder (the
//! root's under `data`, `tools/data.json` under `data.tools`).
//! `*.cedar` files are Cedar policies, `*.cedarschema` (or
//! `*.cedarschema.json`) their schema, `*.cedartest.json` Cedar test
//! cases (see `cedar`). Other files
//! (example contexts, READMEs) are ignored, and so are hidden entries
//! (names starting with `.`), which keeps editors' swap files out.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// One `.rego` module: where it came from and its text.
#[derive(Debug, Clone)]
pub(crate) struct Module {
    /// The file.
    pub(crate) path: PathBuf,
    /// Its source text.
    pub(crate) text: String,
}

impl Module {
    /// The words of the module that look like test rule names
    /// (`test_...`); the engine then confirms which ones are declared
    /// rules.
    pub(crate) fn test_candidates(&self) -> BTreeSet<&str> {
        let text = self.text.as_str();
        let mut found = BTreeSet::new();
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut i = 0;
        while let Some(offset) = text[i..].find("test_") {
            let start = i + offset;
            let mut end = start + "test_".len();
            while end < bytes.len() && is_word(bytes[end]) {
                end += 1;
            }
            let preceded = start > 0 && (is_word(bytes[start - 1]) || bytes[start - 1] == b'.');
            if !preceded {
                found.insert(&text[start..end]);
            }
            i = end;
        }
        found
    }
}

/// One data document and where it goes under `data`.
#[derive(Debug, Clone)]
pub(crate) struct DataDocument {
    /// The file.
    pub(crate) path: PathBuf,
    /// Folder names from the policy directory to the document.
    pub(crate) at: Vec<String>,
    /// Its text.
    pub(crate) text: String,
    /// YAML (else JSON).
    pub(crate) yaml: bool,
}

/// Everything a policy directory holds, in a stable (sorted) order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    /// The Rego modules.
    pub(crate) modules: Vec<Module>,
    /// The data documents.
    pub(crate) data: Vec<DataDocument>,
    /// The Cedar policy files (`*.cedar`).
    pub(crate) cedar: Vec<Module>,
    /// The Cedar schema files (`*.cedarschema`, `*.cedarschema.json`).
    pub(crate) cedar_schemas: Vec<Module>,
    /// The Cedar test case files (`*.cedartest.json`).
    pub(crate) cedar_cases: Vec<Module>,
}

/// Reads `dir` recursively.
pub(crate) fn read_dir(dir: &Path) -> Result<Sources, Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let meta = fs::metadata(dir).map_err(io(dir))?;
    if !meta.is_dir() {
        return Err(Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let mut sources = Sources::default();
    let mut pending = vec![(dir.to_path_buf(), Vec::<String>::new())];
    while let Some((folder, at)) = pending.pop() {
        let mut entries = fs::read_dir(&folder)
            .map_err(io(&folder))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(io(&folder))?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(io(&path))?;
            let is_dir = if kind.is_symlink() {
                fs::metadata(&path).map_err(io(&path))?.is_dir()
            } else {
                kind.is_dir()
            };
            if is_dir {
                let mut below = at.clone();
                below.push(name);
                pending.push((path, below));
            } else if name.ends_with(".rego") {
                let text = fs::read_to_string(&path).map_err(io(&path))?;
                sources.modules.push(Module { path, text });
            } else if let Some(kind) = cedar_kind(&name) {
                let text = fs::read_to_string(&path).map_err(io(&path))?;
                kind.list(&mut sources).push(Module { path, text });
            } else if is_data(&name) {
                let text = fs::read_to_string(&path).map_err(io(&path))?;
                sources.data.push(DataDocument {
                    yaml: !name.ends_with(".json"),
                    path,
                    at: at.clone(),
                    text,
                });
            }
        }
    }
    sources.modules.sort_by(|a, b| a.path.cmp(&b.path));
    sources.data.sort_by(|a, b| a.path.cmp(&b.path));
    for list in [
        &mut sources.cedar,
        &mut sources.cedar_schemas,
        &mut sources.cedar_cases,
    ] {
        list.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(sources)
}

/// Whether a file named `name` is read into a set ([`read_dir`]): what a
/// change must touch for the watcher to reload. Every other file in the
/// directory (a decision log, notes, example contexts) is ignored.
pub(crate) fn is_source(name: &str) -> bool {
    !name.starts_with('.')
        && (name.ends_with(".rego") || is_data(name) || cedar_kind(name).is_some())
}

/// Whether a file named `name` is a data document.
fn is_data(name: &str) -> bool {
    matches!(name, "data.json" | "data.yaml" | "data.yml")
}

/// The Cedar files of a set, by kind.
#[derive(Clone, Copy)]
enum CedarFile {
    Policies,
    Schema,
    Cases,
}

impl CedarFile {
    /// The list of `sources` files of this kind go to.
    fn list(self, sources: &mut Sources) -> &mut Vec<Module> {
        match self {
            Self::Policies => &mut sources.cedar,
            Self::Schema => &mut sources.cedar_schemas,
            Self::Cases => &mut sources.cedar_cases,
        }
    }
}

/// Which kind of Cedar file one named `name` is, if any.
fn cedar_kind(name: &str) -> Option<CedarFile> {
    if name.ends_with(".cedar") {
        Some(CedarFile::Policies)
    } else if name.ends_with(".cedarschema") || name.ends_with(".cedarschema.json") {
        Some(CedarFile::Schema)
    } else if name.ends_with(".cedartest.json") {
        Some(CedarFile::Cases)
    } else {
        None
    }
}
