//! What a served hookwire service says on the terminal while it runs
//! (where it listens, its metrics endpoint, reloads, summaries): one line
//! at a time, written without panicking when the stream is closed. A
//! closed stream is the reader's choice (`… | head -1`); the service keeps
//! serving. Every product's `run` prints through here.

use std::fmt;
use std::io::{self, Write};

/// Writes one line to standard output, ignoring a closed stream.
pub fn out(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{args}").and_then(|()| out.flush());
}

/// Writes one line to standard error, ignoring a closed stream: for a
/// service whose standard output carries something else (records, the
/// MCP channel).
pub fn err(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{args}").and_then(|()| err.flush());
}
