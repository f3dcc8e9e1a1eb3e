//! The runnable demo of hookwire (`cargo run --example demo`); this
//! library is empty, the example is the crate's content. The approval
//! service's examples are `hookwire-approvals`' (`approvals/examples/`),
//! and so is the doctest of the README's Rust snippets.
