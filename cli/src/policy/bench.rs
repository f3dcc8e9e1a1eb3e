//! `hookwire policy bench`: decisions per second and latency, in-process,
//! for each context and for each package deciding at its point.
//!
//! A row times either the whole decision at the context's point (what
//! `policy serve` runs: every package there, one evaluation, on the VM when
//! the point compiles) or one package alone (its decision document on the
//! interpreter), for an equal share of `--duration`. Latencies are kept
//! up to [`MAX_SAMPLES`] per row.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookwire::{AgentContext, InterceptionPoint};
use hookwire_policy::{PolicyOptions, PolicySet};

use super::eval::read_context;
use crate::error::CliError;

/// Latency samples kept per row (the count of decisions is not capped).
pub(crate) const MAX_SAMPLES: usize = 200_000;

/// Most contexts one run takes from a `contexts/` folder.
const MAX_CONTEXTS: usize = 64;

/// One timed row.
struct Row {
    context: String,
    subject: String,
    decisions: u64,
    elapsed: Duration,
    samples: Vec<Duration>,
}

impl Row {
    fn quantile(&self, q: f64) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        let at = ((self.samples.len() - 1) as f64 * q).round() as usize;
        self.samples[at.min(self.samples.len() - 1)]
    }
}

/// Parses `500ms`, `2s` or a number of seconds.
pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, scale) = if let Some(ms) = s.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(secs) = s.strip_suffix('s') {
        (secs, 1.0)
    } else {
        (s, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: a duration such as 500ms or 2s"))?;
    let seconds = value * scale;
    if !(0.001..=3600.0).contains(&seconds) {
        return Err(format!("{s:?}: between 1ms and 1h"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The contexts to time: `context`, or every `*.json` of `DIR/contexts/`.
fn contexts(
    dir: &Path,
    point: Option<InterceptionPoint>,
    context: Option<&Path>,
) -> Result<Vec<(String, AgentContext)>, CliError> {
    let label = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    if let Some(path) = context {
        return Ok(vec![(label(path), read_context(path, point)?)]);
    }
    let folder = dir.join("contexts");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(|e| {
            CliError::PolicyTests(format!(
                "no context to time: give --context FILE (cannot read {}: {e})",
                folder.display()
            ))
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths.truncate(MAX_CONTEXTS);
    let found: Vec<(String, AgentContext)> = paths
        .iter()
        .map(|p| Ok((label(p), context_at_its_point(p, point)?)))
        .collect::<Result<_, CliError>>()?;
    let found: Vec<_> = found
        .into_iter()
        .filter(|(_, ctx)| point.is_none_or(|p| ctx.point() == p))
        .collect();
    if found.is_empty() {
        return Err(CliError::PolicyTests(format!(
            "no context to time in {}: give --context FILE",
            folder.display()
        )));
    }
    Ok(found)
}

/// The context in `path` at `point`, at the point it names, or else at the
/// one point whose context it is valid as (the example contexts leave the
/// point out: `policy eval` is told it).
fn context_at_its_point(
    path: &Path,
    point: Option<InterceptionPoint>,
) -> Result<AgentContext, CliError> {
    if let Ok(ctx) = read_context(path, point) {
        return Ok(ctx);
    }
    let valid: Vec<AgentContext> = InterceptionPoint::ALL
        .iter()
        .filter_map(|p| read_context(path, Some(*p)).ok())
        .collect();
    match <[AgentContext; 1]>::try_from(valid) {
        Ok([ctx]) => Ok(ctx),
        Err(valid) => {
            let points: Vec<String> = valid.iter().map(|c| c.point().to_string()).collect();
            Err(CliError::PolicyTests(format!(
                "{}: no interception_point, and it is a valid context at {} points ({}); give --point",
                path.display(),
                points.len(),
                points.join(", ")
            )))
        }
    }
}

/// Runs `decide` repeatedly for `share`; the row, or the first error.
fn time(
    context: &str,
    subject: String,
    share: Duration,
    mut decide: impl FnMut() -> Result<(), hookwire_policy::Error>,
) -> Result<Row, CliError> {
    let mut samples = Vec::new();
    let mut decisions = 0u64;
    let started = Instant::now();
    while decisions == 0 || started.elapsed() < share {
        let one = Instant::now();
        decide().map_err(|e| CliError::PolicyTests(format!("{context}, {subject}: {e}")))?;
        if samples.len() < MAX_SAMPLES {
            samples.push(one.elapsed());
        }
        decisions += 1;
    }
    let elapsed = started.elapsed();
    samples.sort_unstable();
    Ok(Row {
        context: context.to_owned(),
        subject,
        decisions,
        elapsed,
        samples,
    })
}

/// Times the policies of `dir` and prints one row per context and package.
pub(super) fn bench(
    dir: &Path,
    point: Option<InterceptionPoint>,
    context: Option<&Path>,
    duration: Duration,
    options: PolicyOptions,
) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let contexts = contexts(dir, point, context)?;
    let deciding = |ctx: &AgentContext| -> Vec<String> {
        set.packages()
            .iter()
            .filter(|p| p.points.contains(&ctx.point()))
            .map(|p| p.name.clone())
            .collect()
    };
    let rows_total: usize = contexts.iter().map(|(_, c)| 1 + deciding(c).len()).sum();
    let share = duration / u32::try_from(rows_total.max(1)).unwrap_or(u32::MAX);
    let compiled = set.compiled_points();
    let mut rows = Vec::with_capacity(rows_total);
    for (label, ctx) in &contexts {
        let packages = deciding(ctx);
        let how = if compiled.contains(&ctx.point()) {
            "vm"
        } else {
            "interpreter"
        };
        let subject = format!("{} (all {} packages, {how})", ctx.point(), packages.len());
        rows.push(time(label, subject, share, || set.decide(ctx).map(drop))?);
        for package in packages {
            rows.push(time(label, package.clone(), share, || {
                set.package_document(ctx, &package).map(drop)
            })?);
        }
    }
    let mut out = format!(
        "policy bench {}: {} contexts, {} rows, {:.1?} each\n{:<24} {:<44} {:>12} {:>10} {:>10}\n",
        dir.display(),
        contexts.len(),
        rows.len(),
        share,
        "context",
        "decision",
        "decisions/s",
        "p50",
        "p99"
    );
    for row in &rows {
        let rate = row.decisions as f64 / row.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        let _ = writeln!(
            out,
            "{:<24} {:<44} {:>12.0} {:>10.1?} {:>10.1?}",
            row.context,
            row.subject,
            rate,
            row.quantile(0.50),
            row.quantile(0.99)
        );
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| CliError::PolicyTests(format!("cannot write the report: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit_and_stay_bounded() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
