//! hookwire's integration tests in one binary (one link of the whole
//! graph instead of one per file): real servers on `127.0.0.1:0`, real
//! clients, across crates. Each module is one area; the two plain binaries
//! beside it are the conformance run and the network-namespace faults, and
//! `logged.rs` holds the tests that capture the process's logs.

mod agent_gateway;
mod approval_common;
mod approval_stream;
mod approval_web;
mod bounds;
mod declared_host;
mod effects;
mod hardening;
mod metrics;
mod mtls;
mod multiplex;
mod one_policy;
mod reflection;
mod remote_host;
mod replicas;
mod sdk_upstreams;
mod tls;
mod trace_export;
mod trust;
mod unix_socket;
mod wire_roundtrip;
