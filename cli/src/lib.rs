//! hookwire-cli's library target: the demo agent behind `hookwire demo`,
//! shared with `cargo run --example demo` so both run the same session
//! against the same two services. The command itself is the `hookwire`
//! binary (`src/main.rs`).

pub mod demo_agent;
