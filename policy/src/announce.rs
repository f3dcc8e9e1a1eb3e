//! What the served policy service says on the terminal while it runs (its
//! banner, reloads, refused bundles, the decision log's summary): lines on
//! standard output and standard error, written without panicking when a
//! stream is closed (a closed stream is the reader's choice; the service
//! keeps serving).

use std::fmt;
use std::io::{self, Write};

/// Writes one line to standard output, ignoring a closed stream.
pub(crate) fn out(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{args}").and_then(|()| out.flush());
}

/// Writes one line to standard error, ignoring a closed stream.
pub(crate) fn err(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{args}").and_then(|()| err.flush());
}
