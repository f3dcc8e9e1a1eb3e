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
//! - `patterns`: the load-time compile of modules' literal `regex.*`
//!   patterns under the engine's compiled-size limit.
//! - `input`: the context as Rego `input`, converted only as far as the
//!   modules read it.
//! - `report`: [`PolicyOptions`] and what a set reports about itself
//!   ([`DecisionPackage`], [`TestRule`], [`TestOutcome`]).
//! - `set`: [`PolicySet`], a compiled set: decision packages, the points
//!   they decide at, bounded evaluation, the Rego test runner.
//! - `generated`: the module of per-point rules added to every set.
//! - [`contract`]: decision documents → [`hookwire::Verdict`].
//! - `reload`: [`Policies`], the serving set, atomically swapped on
//!   reload; [`Policies::watch`] reloads on file changes.
//! - `eval`: what keeps one evaluation bounded: caps on what a built-in
//!   call may build, the evaluation workers that answer at the bound, the
//!   load-time refusal of calls to built-ins regorus lacks.
//! - `service`: [`PolicyService`], the interceptor service.
//! - [`settings`]: [`Settings`], what the served service needs, validated
//!   from [`settings::RawSettings`]; `serve`: [`run`], the service served
//!   with its reloads, decision log, metrics and status until shut down
//!   (what `hookwire policy serve` runs), printing through `hookwire_server::announce`.
//! - [`embedded`]: the same service bound inside a host by a declaration
//!   (kinds `hookwire.rego`, `hookwire.cedar`), and the one-process
//!   declaration behind `--policy DIR`.
//! - `testing`: the Rego test runner and which lines the tests evaluated
//!   ([`Coverage`]).
//! - `cedar`: Cedar policies (`*.cedar`) beside Rego, as decision
//!   packages of the same contract; [`CEDAR_SCHEMA`] is the schema the
//!   service publishes.
//! - `error`: the crate's [`Error`].
//! - Operations, as OPA's: [`bundle`] (policy sets from signed `.tar.gz`
//!   bundles on disk or polled over HTTP with ETag), [`decision_log`] (one
//!   payload-free entry per decision, bounded), [`metrics`] (Prometheus
//!   series of decisions, evaluation time, reloads, bundles) and
//!   [`status`] (the JSON status document).
//!
//! Failure is never an allow: a set that does not load keeps the previous
//! one serving, and an evaluation error, an ill-formed decision document or
//! a policy running past its bound fails the call with an error status,
//! which the host records as a fail-closed deny.

pub mod bundle;
mod cedar;
pub mod contract;
pub mod decision_log;
pub mod embedded;
mod error;
mod eval;
mod generated;
mod input;
mod load;
pub mod metrics;
mod patterns;
mod reload;
mod report;
mod serve;
mod service;
mod set;
pub mod settings;
pub mod status;
mod testing;

pub use cedar::{NOT_PERMITTED, PUBLISHED_SCHEMA as CEDAR_SCHEMA};
pub use error::Error;
pub use eval::{
    BoundStatus, MAX_ASSEMBLED_BYTES, MAX_GENERATED_BYTES, MAX_GENERATED_ELEMENTS, MAX_WORKERS,
    QUEUE_CAPACITY, REGORUS_VERSION,
};
pub use reload::{Policies, RELOAD_DEBOUNCE, ReloadEvent, ReloadStatus, Watcher};
pub use report::{DecisionPackage, PolicyOptions, TestOutcome, TestRule, TestStatus};
pub use serve::run;
pub use service::{FailureReporter, PolicyService, SERVICE_NAME};
pub use set::PolicySet;
pub use settings::Settings;
pub use testing::{Coverage, FileCoverage};
