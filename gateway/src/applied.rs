//! The gateway's own record of what it did to each request beyond the
//! interception records the host writes: the overrides merged and who
//! set each, the headers set and cleared (names only, never values), a
//! replaced body, the credential chosen (its label, never the key), a
//! callback honoured or refused, and how the request ended. Each entry is
//! logged (`tracing` target `hookwire_gateway::applied`, INFO) and kept in
//! a bounded in-memory log ([`AppliedLog`]). Pushing an entry also hands
//! its facts to the request's access line and counts the upstream's status
//! class (`crate::access`, `crate::metrics`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::access::RequestLink;
use crate::extension::ModelOverrides;

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
