//! Where a remote binding's service runs, as the binding configured it.

use std::time::Duration;

/// Where a remote binding's service runs: its endpoints, and whether their
/// host names are re-resolved into one replica per address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceTarget {
    /// The endpoint URLs, one per replica (or per name to resolve).
    pub(crate) endpoints: Vec<String>,
    /// Re-resolve the endpoints' names this often (`None`: use them as
    /// given, one replica each).
    pub(crate) resolve_every: Option<Duration>,
    /// `Multiplex` streams per replica (`None`: one per core of the host,
    /// at most 4).
    pub(crate) streams: Option<usize>,
}
