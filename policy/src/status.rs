//! The service's status, as OPA's status API reports it: the serving set
//! (generation, rejected reloads, last error), the bundle (active
//! revision, last request, download, successful and failed activation,
//! the current error) and the decision log's counts, as one JSON document
//! (`GET /status` on the metrics address).

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::decision_log::DecisionLog;
use crate::reload::Policies;

/// What happened to one bundle source last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleStatus {
    /// The bundle's path or URL.
    pub name: String,
    /// The revision of the active bundle (empty without a manifest
    /// revision), `None` before the first activation.
    pub active_revision: Option<String>,
    /// When the source was last asked for the bundle.
    pub last_request: Option<OffsetDateTime>,
    /// When a download (or a `304`) last succeeded.
    pub last_successful_download: Option<OffsetDateTime>,
    /// When a bundle was last activated.
    pub last_successful_activation: Option<OffsetDateTime>,
    /// When a bundle was last refused (download, verification, compile).
    pub last_failed_activation: Option<OffsetDateTime>,
    /// Why the last attempt failed; `None` once one succeeds (a `304`
    /// included).
    pub error: Option<String>,
    /// Bundles activated.
    pub activations: u64,
    /// Attempts that failed.
    pub failures: u64,
    /// Polls answered "not modified".
    pub not_modified: u64,
}

impl BundleStatus {
    /// Nothing yet for `name`.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            active_revision: None,
            last_request: None,
            last_successful_download: None,
            last_successful_activation: None,
            last_failed_activation: None,
            error: None,
            activations: 0,
            failures: 0,
            not_modified: 0,
        }
    }

    /// A request to the source started.
    pub(crate) fn requested(&mut self, at: OffsetDateTime) {
        self.last_request = Some(at);
    }

    /// A download (or a `304`) succeeded.
    pub(crate) fn downloaded(&mut self, at: OffsetDateTime) {
        self.last_successful_download = Some(at);
    }

    /// The source answered that the active bundle is current.
    pub(crate) fn not_modified(&mut self, _at: OffsetDateTime) {
        self.not_modified += 1;
        self.error = None;
    }

    /// A bundle was activated.
    pub(crate) fn activated(&mut self, revision: &str, at: OffsetDateTime) {
        self.active_revision = Some(revision.to_owned());
        self.last_successful_activation = Some(at);
        self.activations += 1;
        self.error = None;
    }

    /// A download or activation failed; the serving set keeps serving.
    pub(crate) fn failed(&mut self, error: &str, at: OffsetDateTime) {
        self.last_failed_activation = Some(at);
        self.failures += 1;
        self.error = Some(error.to_owned());
    }

    /// The status as JSON (times in RFC 3339).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "active_revision": self.active_revision,
            "last_request": time_text(self.last_request),
            "last_successful_download": time_text(self.last_successful_download),
            "last_successful_activation": time_text(self.last_successful_activation),
            "last_failed_activation": time_text(self.last_failed_activation),
            "error": self.error,
            "activations": self.activations,
            "failures": self.failures,
            "not_modified": self.not_modified,
        })
    }
}

fn time_text(at: Option<OffsetDateTime>) -> Value {
    at.and_then(|t| t.format(&Rfc3339).ok())
        .map_or(Value::Null, Value::String)
}

/// The status document: `{"policies": ..., "bundle": ..., "decision_log": ...}`
/// (`bundle` and `decision_log` `null` when not configured).
pub fn document(
    policies: &Policies,
    bundle: Option<&BundleStatus>,
    log: Option<&DecisionLog>,
) -> Value {
    let status = policies.status();
    let set = policies.current();
    json!({
        "policies": {
            "origin": set.dir().display().to_string(),
            "generation": status.generation,
            "revision": status.revision,
            "packages": set.packages().iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
            "rejected_reloads": status.rejected,
            "last_error": status.last_error,
        },
        "bundle": bundle.map(BundleStatus::to_json),
        "decision_log": log.map(|l| json!({"written": l.written(), "dropped": l.dropped()})),
    })
}
