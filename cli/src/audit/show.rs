//! `hookwire audit show`: records as a person reads them — one row per
//! record (time, session, sequence, point, decision, reason, who decided,
//! the approver), filtered by session, point and decision — from a signed
//! record log (`--records`) or the JSON lines of `--print-records`. It
//! reads; `hookwire audit verify` checks signatures. Every line is
//! bounded, and a line that is no record is named, never skipped
//! silently.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use hookwire::InterceptionPoint;
use serde_json::{Map, Value};

use crate::error::CliError;

/// The longest line read (a record is bounded well below it).
const MAX_LINE: usize = 16 << 20;

/// `hookwire audit show` options.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// A signed record log or JSON lines of records; `-` reads stdin.
    file: PathBuf,
    /// Only this session's records.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only records at this point (repeatable).
    #[arg(long, value_name = "POINT")]
    point: Vec<InterceptionPoint>,
    /// Only records with this decision: allow, deny or transform
    /// (repeatable).
    #[arg(long, value_name = "DECISION", value_parser = ["allow", "deny", "transform"])]
    decision: Vec<String>,
    /// Print the matching records as JSON lines (the §10.3 record with
    /// hookwire's `extensions` beside its members) instead of a table.
    #[arg(long)]
    json: bool,
}

/// One record read from a line: the §10.3 record and hookwire's facts.
struct Row {
    record: Value,
    extensions: Map<String, Value>,
}

impl Row {
    /// A signed line's `record` and `extensions`, or a printed record
    /// with its `extensions` member.
    fn of(line: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
        let Value::Object(mut o) = v else {
            return Err("not a JSON object".into());
        };
        let (record, extensions) = if o.contains_key("sig") && o.contains_key("record") {
            let ext = o.remove("extensions");
            (o.remove("record").unwrap_or_default(), ext)
        } else {
            let ext = o.remove("extensions");
            (Value::Object(o), ext)
        };
        if record.get("interception_point").is_none() || record.get("verdict").is_none() {
            return Err("not an interception record (no interception_point or verdict)".into());
        }
        let extensions = match extensions {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Ok(Self { record, extensions })
    }

    fn text(&self, key: &str) -> &str {
        self.record.get(key).and_then(Value::as_str).unwrap_or("-")
    }

    fn decision(&self) -> &str {
        self.record["verdict"]["decision"].as_str().unwrap_or("-")
    }

    /// The name of the interceptor whose verdict decided, `-` when none
    /// did (a host error), `approval` for a lifted deny.
    fn decided_by(&self) -> String {
        let named = self.record["decided_by"].as_u64().and_then(|i| {
            self.record["verdicts"]
                .as_array()?
                .iter()
                .find(|v| v["index"].as_u64() == Some(i))?["name"]
                .as_str()
                .map(str::to_owned)
        });
        named.unwrap_or_else(|| "-".into())
    }

    fn approver(&self) -> &str {
        self.extensions
            .get("hookwire")
            .and_then(|h| h["approval"]["approver"].as_str())
            .unwrap_or("-")
    }

    fn keeps(&self, args: &ShowArgs) -> bool {
        args.session
            .as_deref()
            .is_none_or(|s| self.text("session_id") == s)
            && (args.point.is_empty()
                || args
                    .point
                    .iter()
                    .any(|p| self.text("interception_point") == p.as_str()))
            && (args.decision.is_empty() || args.decision.iter().any(|d| d == self.decision()))
    }

    fn json(&self) -> Value {
        let mut v = self.record.clone();
        if !self.extensions.is_empty()
            && let Some(o) = v.as_object_mut()
        {
            o.insert("extensions".into(), Value::Object(self.extensions.clone()));
        }
        v
    }
}

/// Prints the records of `args.file` that pass the filters; fails (after
/// printing what it could read) when a line is no record.
pub(crate) fn run(args: &ShowArgs) -> Result<(), CliError> {
    let reader: Box<dyn Read> = if args.file == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(&args.file).map_err(|e| {
            CliError::AuditShow(format!("cannot read {}: {e}", args.file.display()))
        })?)
    };
    let mut reader = BufReader::new(reader);
    let mut bad = Vec::new();
    let mut shown = 0usize;
    if !args.json {
        outln!(
            "{:<24} {:<20} {:>4}  {:<16} {:<9} {:<32} {:<14} approver",
            "time",
            "session",
            "seq",
            "point",
            "decision",
            "reason",
            "decided by"
        );
    }
    let mut n = 0usize;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| {
                CliError::AuditShow(format!("cannot read {}: {e}", args.file.display()))
            })?;
        if read == 0 {
            break;
        }
        n += 1;
        if line.len() > MAX_LINE {
            return Err(CliError::AuditShow(format!(
                "{}:{n}: a line longer than {MAX_LINE} bytes",
                args.file.display()
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let row = match Row::of(text) {
            Ok(r) => r,
            Err(why) => {
                bad.push(format!("{}:{n}: {why}", args.file.display()));
                continue;
            }
        };
        if !row.keeps(args) {
            continue;
        }
        shown += 1;
        if args.json {
            outln!("{}", row.json());
        } else {
            outln!(
                "{:<24} {:<20} {:>4}  {:<16} {:<9} {:<32} {:<14} {}",
                cut(row.text("timestamp"), 24),
                cut(row.text("session_id"), 20),
                row.record["sequence"].as_i64().unwrap_or(0),
                row.text("interception_point"),
                row.decision(),
                cut(row.record["verdict"]["reason"].as_str().unwrap_or("-"), 32),
                cut(&row.decided_by(), 14),
                row.approver()
            );
        }
    }
    if !args.json {
        errln!("{shown} records shown of {n} lines");
    }
    for b in bad.iter().take(20) {
        errln!("{b}");
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(CliError::AuditShow(format!(
            "{} lines are not interception records",
            bad.len()
        )))
    }
}

/// `s` cut to `n` characters (an ellipsis marks the cut).
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(n - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_and_printed_lines_read_the_same() {
        let record = r#"{"interception_point":"pre_tool_call","session_id":"s-1","sequence":3,"verdict":{"decision":"allow"},"decided_by":0,"verdicts":[{"index":0,"name":"policy"}]}"#;
        let signed = format!(
            r#"{{"seq":1,"prev":"00","record":{record},"extensions":{{"hookwire":{{"approval":{{"approver":"ann"}}}}}},"sig":"ab"}}"#
        );
        let printed = record.replacen(
            '{',
            r#"{"extensions":{"hookwire":{"approval":{"approver":"ann"}}},"#,
            1,
        );
        for line in [signed.as_str(), printed.as_str()] {
            let row = Row::of(line).unwrap();
            assert_eq!(row.text("session_id"), "s-1");
            assert_eq!(row.decided_by(), "policy");
            assert_eq!(row.approver(), "ann");
        }
        assert!(Row::of("{\"seq\":1}").is_err());
        assert!(Row::of("[]").is_err());
    }

    #[test]
    fn long_fields_are_cut_visibly() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
