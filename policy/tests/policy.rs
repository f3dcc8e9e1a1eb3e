//! hookwire-policy's integration tests in one binary: the decision
//! contract, Cedar beside Rego, the example library, and the policy served
//! to a real host.

mod cedar;
mod contract;
mod examples;
mod service;
