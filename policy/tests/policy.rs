//! hookwire-policy's integration tests in one binary: the decision
//! contract, Cedar beside Rego, the example library, the policy served to
//! a real host, and the operator surface (bundles, decision logs, metrics,
//! status).

mod bound;
mod bundle;
mod cedar;
mod contract;
mod decision_log;
mod embedded;
mod examples;
mod run;
mod service;
