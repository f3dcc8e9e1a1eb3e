//! hookwire-policy: OPA Rego policies as an AGENT-HOOKS-0.1 interceptor,
//! evaluated with `regorus`, and Cedar policies beside them, decided with
//! `cedar-policy` under the same contract.
//!
//! Operators write policy, not services: a directory of `.rego` modules
//! (plus `data.json`/`data.yaml` documents) is served by `hookwire policy
//! serve DIR`. Each decision evaluates the spec-shaped agent context as
//! `input` (it carries `interception_point` and `target`), and the
//! packages' decision documents map onto the full verdict by a fixed
//! contract (see `docs/policies.md`).
//!
//! - `load`: the directory layout (modules, data documents).
//! - `input`: the context as Rego `input`, converted only as far as the
//!   modules read it.
//! - `report`: [`PolicyOptions`] and what a set reports about itself
//!   ([`DecisionPackage`], [`TestRule`], [`TestOutcome`]).
//! - `set`: [`PolicySet`], a compiled set: decision packages, the points
//!   they decide at, bounded evaluation, the Rego test runner.
//! - [`contract`]: decision documents → [`hookwire::Verdict`].
//! - `reload`: [`Policies`], the serving set, atomically swapped on
//!   reload; [`Policies::watch`] reloads on file changes.
//! - `service`: [`PolicyService`], the interceptor service.
//! - `cedar`: Cedar policies (`*.cedar`) beside Rego, as decision
//!   packages of the same contract; [`CEDAR_SCHEMA`] is the schema the
//!   service publishes.
//! - `error`: the crate's [`Error`].
//!
//! Failure is never an allow: a set that does not load keeps the previous
//! one serving, and an evaluation error, an ill-formed decision document or
//! a policy running past its bound fails the call with an error status,
//! which the host records as a fail-closed deny.

mod cedar;
pub mod contract;
mod error;
mod input;
mod load;
mod reload;
mod report;
mod service;
mod set;

pub use cedar::{NOT_PERMITTED, PUBLISHED_SCHEMA as CEDAR_SCHEMA};
pub use error::Error;
pub use reload::{Policies, RELOAD_DEBOUNCE, ReloadEvent, ReloadStatus, Watcher};
pub use report::{DecisionPackage, PolicyOptions, TestOutcome, TestRule, TestStatus};
pub use service::{FailureReporter, PolicyService, SERVICE_NAME};
pub use set::PolicySet;
