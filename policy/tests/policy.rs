//! hookwire-policy's integration tests in one binary: the decision
//! contract, the example library, and the policy served to a real host.

mod bound;
mod contract;
mod examples;
mod service;
