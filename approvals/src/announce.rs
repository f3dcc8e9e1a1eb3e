//! What the served approval service says on the terminal (where it
//! listens, its page, its queue and channels): lines on standard output,
//! written without panicking when the stream is closed (the service keeps
//! serving).

use std::fmt;
use std::io::{self, Write};

/// Writes one line to standard output, ignoring a closed stream.
pub(crate) fn out(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{args}").and_then(|()| out.flush());
}
