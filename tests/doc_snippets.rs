//! The documentation pages' Rust blocks as doctests, so that a page never
//! shows an API that no longer exists: each page below is included, and
//! `cargo test` compiles every `rust` block of it (running those not
//! marked `no_run`). `cli/tests/docs.rs` checks that every Rust block of
//! these pages is one (the README's are `hookwire-approvals`' doctests).

/// docs/approvals-postgres.md
#[doc = include_str!("../docs/approvals-postgres.md")]
#[cfg(doctest)]
pub struct ApprovalsPostgres;

/// docs/approvals.md
#[doc = include_str!("../docs/approvals.md")]
#[cfg(doctest)]
pub struct Approvals;

/// docs/audit.md
#[doc = include_str!("../docs/audit.md")]
#[cfg(doctest)]
pub struct Audit;

/// docs/operating.md
#[doc = include_str!("../docs/operating.md")]
#[cfg(doctest)]
pub struct Operating;

/// docs/performance.md
#[doc = include_str!("../docs/performance.md")]
#[cfg(doctest)]
pub struct Performance;

/// docs/replicas.md
#[doc = include_str!("../docs/replicas.md")]
#[cfg(doctest)]
pub struct Replicas;

/// docs/trust.md
#[doc = include_str!("../docs/trust.md")]
#[cfg(doctest)]
pub struct Trust;
