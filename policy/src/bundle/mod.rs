//! Policy sets from OPA bundles: a gzip-compressed tar archive in OPA's
//! layout (`.manifest` with `revision` and `roots`, `*.rego` modules and
//! `data.json`/`data.yaml` documents at their paths, `.signatures.json`
//! when signed), read from a file or downloaded from an HTTP(S) URL.
//!
//! [`Bundles`] activates the first bundle (the service does not start
//! without one) and then polls: a file is read again and activated when its
//! bytes changed, a URL is fetched with the last activated bundle's ETag. A
//! bundle that fails to download, unpack, verify or compile is refused and
//! the serving set keeps serving; [`Bundles::status`] says what happened
//! last (the status endpoint and the metrics show it). Everything is
//! bounded ([`BundleLimits`]): archive and unpacked size, entry count, path
//! traversal refused, each download's time.
//!
//! - `archive`: unpacking, bounded.
//! - [`sign`]: OPA's `.signatures.json` format, verified and written.
//! - `fetch`: the HTTP download with ETag.

mod archive;
mod fetch;
pub mod sign;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};
use time::OffsetDateTime;

pub use archive::BundleLimits;
pub use sign::{SIGNATURES_FILE, Verification, file_hash, sign_files};

use crate::error::Error;
use crate::load::{DataDocument, Module, Sources};
use crate::reload::{Policies, ReloadEvent};
use crate::report::PolicyOptions;
use crate::set::PolicySet;
use crate::status::BundleStatus;
use archive::Files;
use fetch::{Fetched, HttpSource};

/// The manifest file of a bundle.
pub const MANIFEST_FILE: &str = ".manifest";

/// How bundles are read and verified.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The key bundles must be signed with; without one a signed bundle is
    /// refused too (as OPA does).
    pub verification: Option<Verification>,
    /// Sizes and counts accepted.
    pub limits: BundleLimits,
    /// The bound of one download (or file read).
    pub timeout: Duration,
    /// PEM authority an `https` bundle server's certificate must chain
    /// to, instead of the public (webpki) roots.
    pub ca_pem: Option<Vec<u8>>,
    /// How the set evaluates.
    pub policy: PolicyOptions,
}

impl Default for BundleOptions {
    fn default() -> Self {
        Self {
            verification: None,
            limits: BundleLimits::default(),
            timeout: Duration::from_secs(30),
            ca_pem: None,
            policy: PolicyOptions::default(),
        }
    }
}

/// What one poll did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleEvent {
    /// A new bundle is serving.
    Activated {
        /// Its manifest's revision (empty when it has none).
        revision: String,
        /// The generation it serves as.
        generation: u64,
    },
    /// The bundle has not changed (an ETag `304`, or the same bytes).
    NotModified,
    /// The bundle was refused; the serving set keeps serving.
    Failed {
        /// Why.
        error: String,
    },
}

enum Location {
    File(PathBuf),
    Http(Box<HttpSource>),
}

/// One bundle source, its last activation, and its status.
pub struct Bundles {
    name: String,
    location: Location,
    options: BundleOptions,
    /// The ETag (HTTP) or content digest (file) of the active bundle.
    active_tag: Mutex<Option<String>>,
    status: Mutex<BundleStatus>,
}

impl std::fmt::Debug for Bundles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundles")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Bundles {
    /// A source: an `http://` or `https://` URL, else a file path.
    pub fn new(location: &str, options: BundleOptions) -> Result<Arc<Self>, Error> {
        let located = if location.starts_with("http://") || location.starts_with("https://") {
            Location::Http(Box::new(
                HttpSource::new(
                    location,
                    options.timeout,
                    options.limits.max_archive_bytes,
                    options.ca_pem.as_deref(),
                )
                .map_err(|message| bundle_error(location, message))?,
            ))
        } else {
            Location::File(PathBuf::from(location))
        };
        Ok(Arc::new(Self {
            name: location.to_owned(),
            location: located,
            options,
            active_tag: Mutex::new(None),
            status: Mutex::new(BundleStatus::new(location)),
        }))
    }

    /// The bundle's path or URL.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened to the bundle last.
    pub fn status(&self) -> BundleStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Downloads and activates the first bundle: the policies to serve.
    pub async fn activate_first(&self) -> Result<Arc<Policies>, Error> {
        let fetched = self.download(None).await;
        let (bytes, tag) = match fetched {
            Ok(Some(got)) => got,
            Ok(None) => {
                return Err(self.failed("the server answered 304 to the first request".into()));
            }
            Err(message) => return Err(self.failed(message)),
        };
        match self.read(bytes).await {
            Ok((set, revision)) => {
                self.activated(&revision, tag);
                let revision = Some(revision).filter(|r| !r.is_empty());
                Policies::from_set(&self.name, set, revision)
            }
            Err(e) => Err(self.failed(e.to_string())),
        }
    }

    /// Downloads the bundle once and activates it into `policies` when it
    /// changed and is valid.
    pub async fn poll_once(&self, policies: &Policies) -> BundleEvent {
        let tag = self
            .active_tag
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let (bytes, tag) = match self.download(tag.as_deref()).await {
            Ok(Some(got)) => got,
            Ok(None) => {
                self.with_status(|s| s.not_modified(now()));
                return BundleEvent::NotModified;
            }
            Err(message) => {
                let _ = self.failed(message.clone());
                return BundleEvent::Failed { error: message };
            }
        };
        let read = self.read(bytes).await;
        let revision = read.as_ref().ok().map(|(_, r)| r.clone());
        match policies.replace(
            read.map(|(set, _)| set),
            revision.clone().filter(|r| !r.is_empty()),
        ) {
            ReloadEvent::Reloaded { generation, .. } => {
                let revision = revision.unwrap_or_default();
                self.activated(&revision, tag);
                BundleEvent::Activated {
                    revision,
                    generation,
                }
            }
            ReloadEvent::Rejected { error, .. } => {
                let _ = self.failed(error.clone());
                BundleEvent::Failed { error }
            }
        }
    }

    /// Polls every `every` until the returned handle is dropped (or
    /// aborted), giving each event to `on_event`. Needs a Tokio runtime.
    pub fn poll(
        self: &Arc<Self>,
        policies: Arc<Policies>,
        every: Duration,
        on_event: impl Fn(&BundleEvent) + Send + Sync + 'static,
    ) -> Poller {
        let bundles = Arc::clone(self);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every.max(Duration::from_millis(10)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let event = bundles.poll_once(&policies).await;
                on_event(&event);
            }
        });
        Poller { task }
    }

    /// The archive and its tag, `None` when unchanged since `tag`.
    async fn download(
        &self,
        tag: Option<&str>,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, String> {
        self.with_status(|s| s.requested(now()));
        let got = match &self.location {
            Location::Http(source) => match source.fetch(tag).await? {
                Fetched::NotModified => None,
                Fetched::Bundle { bytes, etag } => Some((bytes.to_vec(), etag)),
            },
            Location::File(path) => {
                let max = self.options.limits.max_archive_bytes;
                let path = path.clone();
                let bytes = tokio::task::spawn_blocking(move || read_bounded(&path, max))
                    .await
                    .map_err(|e| format!("the read did not finish: {e}"))??;
                let digest = hex::encode(Sha256::digest(&bytes));
                if tag == Some(digest.as_str()) {
                    None
                } else {
                    Some((bytes, Some(digest)))
                }
            }
        };
        self.with_status(|s| s.downloaded(now()));
        Ok(got)
    }

    /// Unpacks, verifies and compiles an archive off the async threads.
    async fn read(&self, bytes: Vec<u8>) -> Result<(PolicySet, String), Error> {
        let name = self.name.clone();
        let options = self.options.clone();
        tokio::task::spawn_blocking(move || read_bundle(&name, &bytes, &options))
            .await
            .map_err(|e| {
                bundle_error(
                    &self.name,
                    format!("the bundle's compilation did not finish: {e}"),
                )
            })?
    }

    fn activated(&self, revision: &str, tag: Option<String>) {
        *self
            .active_tag
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tag;
        self.with_status(|s| s.activated(revision, now()));
        tracing::info!(bundle = %self.name, revision, "bundle activated");
    }

    fn failed(&self, message: String) -> Error {
        tracing::error!(bundle = %self.name, error = %message, "bundle refused; the serving policies keep serving");
        self.with_status(|s| s.failed(&message, now()));
        bundle_error(&self.name, message)
    }

    fn with_status(&self, change: impl FnOnce(&mut BundleStatus)) {
        change(&mut self.status.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// Keeps a bundle polled; dropping it stops the polling.
#[derive(Debug)]
pub struct Poller {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

fn bundle_error(name: &str, message: String) -> Error {
    Error::Bundle {
        source_name: name.to_owned(),
        message,
    }
}

fn read_bounded(path: &std::path::Path, max: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() > max {
        return Err(format!(
            "{} is over the bound of {max} bytes",
            path.display()
        ));
    }
    Ok(bytes)
}

/// Reads one archive into a compiled set and its revision.
pub fn read_bundle(
    name: &str,
    archive: &[u8],
    options: &BundleOptions,
) -> Result<(PolicySet, String), Error> {
    let refuse = |message: String| bundle_error(name, message);
    let mut files = archive::unpack(archive, &options.limits).map_err(refuse)?;
    let signatures = files.remove(SIGNATURES_FILE);
    match (&options.verification, signatures) {
        (Some(key), Some(signatures)) => key.verify(&signatures, &files).map_err(refuse)?,
        (Some(_), None) => return Err(refuse(format!("unsigned: {SIGNATURES_FILE} is missing"))),
        (None, Some(_)) => {
            return Err(refuse(format!(
                "signed ({SIGNATURES_FILE}) but no verification key is configured"
            )));
        }
        (None, None) => {}
    }
    let manifest = Manifest::read(&files).map_err(refuse)?;
    let origin = PathBuf::from(name);
    let sources = sources(&origin, files, &manifest).map_err(refuse)?;
    let set = PolicySet::compile(&origin, &sources, options.policy)?;
    Ok((set, manifest.revision))
}

/// A bundle's `.manifest`.
#[derive(Debug, Default)]
struct Manifest {
    revision: String,
    /// `/`-separated paths under `data` the bundle owns (`""`: all).
    roots: Vec<String>,
}

impl Manifest {
    fn read(files: &Files) -> Result<Self, String> {
        let Some(bytes) = files.get(MANIFEST_FILE) else {
            return Ok(Self {
                revision: String::new(),
                roots: vec![String::new()],
            });
        };
        #[derive(serde::Deserialize)]
        struct Raw {
            #[serde(default)]
            revision: String,
            roots: Option<Vec<String>>,
        }
        let raw: Raw = serde_json::from_slice(bytes)
            .map_err(|e| format!("{MANIFEST_FILE} is not valid: {e}"))?;
        if raw.revision.len() > 256 {
            return Err(format!("{MANIFEST_FILE}: the revision is over 256 bytes"));
        }
        let roots = raw
            .roots
            .unwrap_or_else(|| vec![String::new()])
            .into_iter()
            .map(|r| r.trim_matches('/').to_owned())
            .collect();
        Ok(Self {
            revision: raw.revision,
            roots,
        })
    }

    /// Whether `path` (`/`-separated under `data`) lies under a root.
    fn owns(&self, path: &str) -> bool {
        self.roots.iter().any(|root| {
            root.is_empty()
                || path == root
                || path
                    .strip_prefix(root.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// The modules and data documents of the unpacked files, each checked to
/// lie under the manifest's roots.
fn sources(origin: &std::path::Path, files: Files, manifest: &Manifest) -> Result<Sources, String> {
    let mut sources = Sources::default();
    for (name, bytes) in files {
        let parts: Vec<&str> = name.split('/').collect();
        if parts.iter().any(|p| p.starts_with('.')) {
            continue;
        }
        let Some((file, folders)) = parts.split_last() else {
            continue;
        };
        let is_module = file.ends_with(".rego");
        let is_data = matches!(*file, "data.json" | "data.yaml" | "data.yml");
        if !is_module && !is_data {
            continue;
        }
        let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8"))?;
        let path = origin.join(&name);
        if is_module {
            let package =
                package_path(&text).ok_or_else(|| format!("{name}: no package declaration"))?;
            if !manifest.owns(&package) {
                return Err(format!(
                    "{name}: package {package} is outside the manifest's roots"
                ));
            }
            sources.modules.push(Module { path, text });
        } else {
            let at = folders.join("/");
            // A document owns everything below its folder: the folder must
            // lie under a root (a document at the bundle's root needs the
            // root "" itself).
            if !manifest.owns(&at) {
                return Err(format!(
                    "{name}: data at {} is outside the manifest's roots",
                    if at.is_empty() { "the root" } else { &at }
                ));
            }
            sources.data.push(DataDocument {
                yaml: !file.ends_with(".json"),
                path,
                at: folders.iter().map(|s| (*s).to_owned()).collect(),
                text,
            });
        }
    }
    Ok(sources)
}

/// The `/`-separated path of a module's `package` declaration (simple
/// dotted names; a quoted component is kept as written).
fn package_path(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("package")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let name = rest.split('#').next()?.trim();
        Some(name.replace('.', "/"))
    })
}
