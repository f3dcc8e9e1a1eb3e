//! hookwire-server's integration tests in one binary: a served
//! interceptor driven over real gRPC on 127.0.0.1:0 (routing, failures,
//! the Multiplex stream, lifecycle), with the wire-level fixtures of
//! `common`.

mod common;
mod failures;
mod lifecycle;
mod multiplex;
mod routing;
