//! The gateway's own record of what it did to each request beyond the
//! interception records the host writes: the overrides merged and who
//! set each, the headers set and cleared (names only, never values), a
//! replaced body, the credential chosen (its label, never the key), a
//! callback honoured or refused, and how the request ended. Each entry is
//! logged (`tracing` target `hookwire_gateway::applied`, INFO) and kept in
//! a bounded in-memory log ([`AppliedLog`]). Pushing an entry also hands
//! its facts to the request's access line and counts the upstream's status
//! class: the access layer (`crate::access`) scopes each request's
//! [`RequestFacts`] in [`CURRENT_REQUEST`], which an entry built there links
//! to ([`RequestLink`]), so this module needs nothing of the layer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::extension::ModelOverrides;

/// Where a pushed entry's facts go: the exchange of the HTTP request it
/// was built for (implemented by the access layer's exchange).
pub(crate) trait RequestFacts: Send + Sync {
    /// Takes `entry`'s facts for its request's line and metrics.
    fn pushed(&self, entry: &Applied);
    /// Notes the listed client the request was authenticated as.
    fn client(&self, name: &str);
}

/// Notes, for the access line of the request being handled on this task,
/// the listed client it acts for.
pub(crate) fn note_client(name: &str) {
    let _ = CURRENT_REQUEST.try_with(|r| r.client(name));
}

tokio::task_local! {
    /// The request being handled on this task, scoped by the access layer.
    pub(crate) static CURRENT_REQUEST: Arc<dyn RequestFacts>;
}

/// An [`Applied`] entry's link to the request it was built for (none
/// outside one). A clone is a copy of the entry's facts, not of its
/// request: it carries no link.
pub(crate) struct RequestLink(Option<Arc<dyn RequestFacts>>);

impl Default for RequestLink {
    /// The link to the request being handled on this task, if any.
    fn default() -> Self {
        Self(CURRENT_REQUEST.try_with(Arc::clone).ok())
    }
}

impl RequestLink {
    /// Takes the link out, leaving none.
    pub(crate) fn take(&mut self) -> Self {
        std::mem::replace(self, Self(None))
    }

    /// Whether the entry still reports to a request.
    pub(crate) fn is_linked(&self) -> bool {
        self.0.is_some()
    }

    /// Hands `entry`'s facts to its request and lets go of it.
    pub(crate) fn pushed(self, entry: &Applied) {
        if let Some(request) = self.0 {
            request.pushed(entry);
        }
    }
}

impl Clone for RequestLink {
    fn clone(&self) -> Self {
        Self(None)
    }
}

impl std::fmt::Debug for RequestLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_linked() {
            "RequestLink(linked)"
        } else {
            "RequestLink(none)"
        })
    }
}

/// What the gateway applied to one request.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    /// The session (conversation) id; empty for requests outside one.
    pub session: String,
    /// The gateway's id for the request (`request_id` in its contexts).
    pub request_id: String,
    /// The request's nesting depth (0 for a client's own request).
    pub depth: u32,
    /// Whether the request came with a callback token and passed without
    /// interception.
    pub callback: bool,
    /// The binding whose callback token the request carried (each granted
    /// binding gets its own).
    pub callback_binding: Option<String>,
    /// The model-parameter overrides applied, each with its binding.
    pub overrides: ModelOverrides,
    /// `(header, binding)` set before the credential was chosen.
    pub headers_set_before: Vec<(String, String)>,
    /// `(header, binding)` set after the credential was chosen.
    pub headers_set_after: Vec<(String, String)>,
    /// Headers cleared (either stage).
    pub headers_cleared: Vec<String>,
    /// The binding whose replacement body was sent, if any.
    pub body_replaced_by: Option<String>,
    /// The label of the pooled credential used, if any.
    pub credential: Option<String>,
    /// The upstream's status, when the request reached it.
    pub upstream_status: Option<u16>,
    /// How the request ended: `forwarded`, `denied:<point>`, `failed`, …
    pub outcome: String,
    /// The members of the upstream's answer the gateway removed because no
    /// point governs them once the answer was withheld or rewritten (or
    /// because its mediation table refuses them), as paths
    /// (`choices[0].logprobs`, `output[1](reasoning)`); names only, never
    /// their content.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// The HTTP request this entry was built for: `Applied::default()`
    /// inside a request's handling links to it, so that the entry, once
    /// pushed, completes that request's access line wherever it is pushed
    /// from.
    #[serde(skip)]
    pub(crate) link: RequestLink,
}

/// A bounded log of [`Applied`] entries (oldest dropped first). Cheap to
/// clone; clones share the log.
#[derive(Debug, Clone)]
pub struct AppliedLog {
    entries: Arc<Mutex<VecDeque<Applied>>>,
    capacity: usize,
}

impl AppliedLog {
    /// A log keeping the last `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Arc::default(),
            capacity: capacity.max(1),
        }
    }

    /// Logs and keeps one entry, and hands it to its request's access line.
    pub(crate) fn push(&self, mut entry: Applied) {
        entry.link.take().pushed(&entry);
        if let Ok(line) = serde_json::to_string(&entry) {
            tracing::info!(target: "hookwire_gateway::applied", "{line}");
        }
        let mut e = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if e.len() >= self.capacity {
            e.pop_front();
        }
        e.push_back(entry);
    }

    /// A copy of the entries, oldest first.
    pub fn entries(&self) -> Vec<Applied> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}
