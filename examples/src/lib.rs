//! Runnable examples of hookwire (`cargo run --example <name>`); this
//! library is empty, the examples are the crate's content.
