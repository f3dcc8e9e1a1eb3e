//! Everything the command prints goes through here: standard output and
//! standard error written without panicking. `outln!` panics when its
//! stream is closed (`hookwire check … | head -3` ended with "failed
//! printing to stdout: Broken pipe", exit 101). Here a closed stream
//! (`EPIPE`) is the reader's choice: the rest of that stream's output is
//! dropped quietly while the command finishes its work and exits with its
//! own status. Any other write failure is said once on stderr.
//!
//! Restoring the default `SIGPIPE` action instead would also end the
//! process quietly, but it would kill it on any write to a closed pipe or
//! Unix socket, an MCP upstream's stdin or a hooks client's socket
//! included; the servers this command runs must survive those.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Which stream a command prints something on: `--print-records`' lines,
/// or what a command whose stdout carries records or a protocol says
/// beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrintTo {
    /// Standard output (log lines go to stderr).
    Stdout,
    /// Standard error, for a command whose stdout is a protocol channel.
    Stderr,
}

/// Set once standard output failed: nothing more is written to it.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// Set once standard error failed: nothing more is written to it.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `args` to standard output (with `print!`'s buffering, flushed).
pub(crate) fn stdout(args: fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            stderr(format_args!(
                "hookwire: cannot write to standard output ({e}); the rest of it is dropped\n"
            ));
        }
    }
}

/// Writes `args` to standard error; a closed or failing stderr is dropped
/// quietly (there is nowhere left to say so).
pub(crate) fn stderr(args: fmt::Arguments<'_>) {
    if STDERR_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut err = io::stderr().lock();
    if err.write_fmt(args).and_then(|()| err.flush()).is_err() {
        STDERR_GONE.store(true, Ordering::Relaxed);
    }
}

/// Prints one line to standard output: `outln!` that never panics.
macro_rules! outln {
    () => { $crate::output::stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Prints to standard output without a newline: `print!` that never panics.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::stdout(format_args!($($arg)*)) };
}

/// Prints one line to standard error: `errln!` that never panics.
macro_rules! errln {
    () => { $crate::output::stderr(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

/// A line printer for libraries that print through a function (the demo's
/// tables): [`stdout`] with a newline.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    stdout(format_args!("{args}\n"));
}
