//! How the demo prints: through a [`Print`] its caller gives, and the
//! table of a run's records.

use hookwire::InterceptionRecord;

/// Where the demo's lines go: a function given one line (without its
/// newline), so that the `hookwire` command prints them through its own
/// output (which survives a closed pipe) and the example with `println!`.
pub type Print = fn(std::fmt::Arguments<'_>);

/// Prints one line per record: sequence, point, decision, reason, and
/// which interceptor decided (`-` when none did, e.g. a host error).
pub fn print_table(records: &[InterceptionRecord], print: Print) {
    say!(
        print,
        "seq  point            decision   reason                         decided by"
    );
    say!(print, "{}", "-".repeat(78));
    for r in records {
        let decider = r
            .decided_by
            .and_then(|i| r.verdicts.iter().find(|v| v.index == i))
            .and_then(|v| v.name.clone())
            .unwrap_or_else(|| "-".into());
        let detail = r
            .verdict
            .transform
            .as_ref()
            .map(|t| format!(" ({})", t.path))
            .unwrap_or_default();
        say!(
            print,
            "{:>3}  {:<16} {:<10} {:<30} {decider}{detail}",
            r.sequence,
            r.interception_point.as_str(),
            r.verdict.decision.as_str(),
            r.verdict.reason.as_deref().unwrap_or("-"),
        );
    }
}
