//! Runnable examples of hookwire (`cargo run --example <name>`); this
//! library is empty, the examples are the crate's content.

/// The README's Rust snippets, compiled as doctests so that the front page
/// never shows an API that no longer exists.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeSnippets;
