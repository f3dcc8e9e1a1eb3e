//! In-process interceptors. The trait a policy implements is the root
//! crate's [`hookwire::Interceptor`], the same one `hookwire-server` serves
//! over gRPC, so one policy type binds in a host or runs as a service;
//! this module re-exports it with what writing one takes, and the boxed
//! future and error types the client's other object-safe traits use.
//!
//! An in-process interceptor that panics or returns an error fails closed
//! as `host_error:interceptor_failed`; the record names the binding and
//! says `call failed (panic)` or `call failed (error)`, never what the
//! error said.

pub use hookwire::{
    BoxError, BoxFuture, HookResponse, Interceptor, InterceptorFn, async_trait, interceptor_fn,
};
