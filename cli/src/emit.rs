//! `hookwire emit`: contexts a rule author wrote run through the real
//! host a declaration builds (the same one `gateway`, `hooks serve` and
//! `mcp` run, from `governed`): one session, `agent_startup` first, each
//! given context emitted in order, `agent_shutdown` last, and for every
//! emission one JSON line with its verdict and its record. The exit status
//! says how it went (`exit`): 0 when everything proceeded, 3 when a
//! verdict denied something, 4 when the host failed closed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_client::{Emission, ShutdownReason};
use serde_json::{Map, Value, json};

use crate::args::RegistryArgs;
use crate::audit::RecordsArgs;
use crate::error::CliError;
use crate::governed::{ChainArgs, HostOptions, governed_host};

/// The largest context or script file `emit` reads.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The most emissions one script may hold.
const MAX_EMISSIONS: usize = 10_000;
/// The members of a context the host fills itself; a context file may
/// carry them (files written for `policy eval` do) and they are ignored.
const HOST_MEMBERS: &[&str] = &[
    "spec",
    "interception_point",
    "timestamp",
    "sequence",
    "agent",
    "session",
    "host",
    "trace",
];

/// One emission of a script: its point and the context members the host
/// does not fill.
type Step = (InterceptionPoint, Map<String, Value>);

/// The options of `hookwire emit`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Each context is an AgentContext (the files of \
examples/policies/contexts/ do): the members the host fills (spec, timestamp, \
sequence, agent, session) are ignored, the point's own (`input`, `tool_call`, \
`messages`, `response`, `tool_result`, `output`, ...) are emitted. A script is a JSON array of contexts, each \
naming its `interception_point`.\n\n\
Example: a destructive command against the Rego policies, decided in process\n  \
hookwire emit --policy examples/policies --point pre_tool_call \
--context examples/policies/contexts/rm_rf.json\n\n\
The same against the served policies\n  \
hookwire policy serve examples/policies &\n  \
hookwire emit --declaration examples/declarations/policy.json \\\n    \
--point pre_tool_call --context examples/policies/contexts/rm_rf.json\n\n\
Exit status: 0 every emission proceeded, 3 a verdict denied one, 4 the host \
failed closed on one (host_error:*), 1 the command could not run.")]
pub(crate) struct EmitArgs {
    /// What decides: a declaration, or a policy directory in process.
    #[command(flatten)]
    chain: ChainArgs,
    /// The interception point of `--context` (else the context's own
    /// `interception_point`).
    #[arg(long, value_name = "POINT", requires = "context")]
    point: Option<InterceptionPoint>,
    /// One context to emit.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "script",
        required_unless_present = "script"
    )]
    context: Option<PathBuf>,
    /// A scripted session: a JSON array of contexts emitted in order.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// A tool registered at `agent_startup` (repeatable); without any,
    /// the tools the contexts' `tool_call`s name.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    /// The longest one emission may take, whatever the declaration's
    /// timeouts say (default 30 000; with approvals, the declaration's
    /// approval deadline plus 30 000, so a request a person may still
    /// decide is not withdrawn).
    #[arg(long, value_name = "MS")]
    emission_timeout_ms: Option<u64>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    records: RecordsArgs,
}

/// Runs the session and prints one JSON line per emission.
pub(crate) async fn run(args: EmitArgs) -> Result<(), CliError> {
    let steps = match (&args.context, &args.script) {
        (Some(path), _) => {
            let context = read_json(path)?;
            vec![step(&context, args.point, path)?]
        }
        (None, Some(path)) => script(&read_json(path)?, path)?,
        (None, None) => return Err(usage("give --context FILE or --script FILE")),
    };
    let tools = if args.tools.is_empty() {
        let named: std::collections::BTreeSet<&str> = steps
            .iter()
            .filter_map(|(_, m)| m.get("tool_call")?.get("name")?.as_str())
            .collect();
        named.into_iter().map(str::to_owned).collect()
    } else {
        args.tools.clone()
    };
    let (governed, _) = governed_host(
        HostOptions {
            agent_id: "hookwire-emit",
            chain: &args.chain,
            registry: &args.registry,
            records: &args.records,
            print: None,
            metrics_addr: None,
            amend: None,
        },
        |_| (),
    )
    .await?;
    let bound = emission_bound(args.emission_timeout_ms, governed.host.approval_wait());
    let session = governed.host.session("emit-1")?;
    let mut tally = Tally::default();
    let startup = within(bound, InterceptionPoint::AgentStartup, session.start(tools)).await?;
    tally.print(&startup);
    if startup.proceeds() {
        for (point, members) in steps {
            let emission = within(bound, point, session.emit(point, members)).await?;
            tally.print(&emission);
        }
    }
    let reason = if startup.proceeds() {
        ShutdownReason::Completed
    } else {
        ShutdownReason::Error
    };
    let point = InterceptionPoint::AgentShutdown;
    let shutdown = within(bound, point, session.shutdown(reason)).await?;
    tally.print(&shutdown);
    governed.signed.finish(crate::output::PrintTo::Stdout)?;
    tally.outcome()
}

/// What the emissions came to, for the exit status.
#[derive(Default)]
struct Tally {
    failed_closed: Option<String>,
    denied: Option<String>,
}

impl Tally {
    /// Prints `e`'s line and counts it.
    fn print(&mut self, e: &Emission) {
        let record = e.record();
        let at = format!(
            "{} ({})",
            record.interception_point.as_str(),
            e.reason().unwrap_or("-")
        );
        if crate::exit::failed_closed(record) {
            self.failed_closed.get_or_insert(at);
        } else if !e.proceeds() {
            self.denied.get_or_insert(at);
        }
        let line = json!({
            "point": record.interception_point.as_str(),
            "proceeds": e.proceeds(),
            "verdict": e.verdict().to_json(),
            "target": e.target(),
            "record": record.to_json(),
        });
        outln!("{line}");
    }

    /// The command's result: failed closed over denied over done.
    fn outcome(self) -> Result<(), CliError> {
        match (self.failed_closed, self.denied) {
            (Some(at), _) => Err(CliError::FailedClosed(at)),
            (None, Some(at)) => Err(CliError::Denied(at)),
            (None, None) => Ok(()),
        }
    }
}

/// How long an emission may take when the command line does not say:
/// 30 s, plus the approval deadline when the host has approvals.
const DEFAULT_EMISSION_BOUND: Duration = Duration::from_secs(30);

/// The bound of each emission: the flag's, else the default stretched by
/// the host's approval deadline.
fn emission_bound(flag_ms: Option<u64>, approval_wait: Option<Duration>) -> Duration {
    match (flag_ms, approval_wait) {
        (Some(ms), _) => Duration::from_millis(ms.max(1)),
        (None, Some(wait)) => wait.saturating_add(DEFAULT_EMISSION_BOUND),
        (None, None) => DEFAULT_EMISSION_BOUND,
    }
}

/// `emission` awaited up to `bound`.
async fn within(
    bound: Duration,
    point: InterceptionPoint,
    emission: impl Future<Output = Result<Emission, hookwire_client::Error>>,
) -> Result<Emission, CliError> {
    match tokio::time::timeout(bound, emission).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(usage(&format!(
            "the {point} emission did not finish within {} ms (--emission-timeout-ms)",
            bound.as_millis()
        ))),
    }
}

/// A script's steps: every element a context naming its point.
fn script(document: &Value, path: &Path) -> Result<Vec<Step>, CliError> {
    let Some(contexts) = document.as_array() else {
        return Err(usage(&format!(
            "{}: a script is a JSON array of contexts",
            path.display()
        )));
    };
    if contexts.len() > MAX_EMISSIONS {
        return Err(usage(&format!(
            "{}: {} emissions, more than {MAX_EMISSIONS}",
            path.display(),
            contexts.len()
        )));
    }
    contexts.iter().map(|c| step(c, None, path)).collect()
}

/// One emission: its point (`point`, else the context's own) and the
/// members the host does not fill.
fn step(context: &Value, point: Option<InterceptionPoint>, path: &Path) -> Result<Step, CliError> {
    let Some(object) = context.as_object() else {
        return Err(usage(&format!(
            "{}: a context is a JSON object",
            path.display()
        )));
    };
    let named = object.get("interception_point").and_then(Value::as_str);
    let point = match (point, named) {
        (Some(p), _) => p,
        (None, Some(name)) => name.parse().map_err(|_| {
            usage(&format!(
                "{}: unknown interception_point {name:?}",
                path.display()
            ))
        })?,
        (None, None) => {
            return Err(usage(&format!(
                "{}: the context names no interception_point (give --point)",
                path.display()
            )));
        }
    };
    if matches!(
        point,
        InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown
    ) {
        return Err(usage(&format!(
            "{}: {point} is emitted by the command itself (first and last; tools from --tool or the contexts' tool calls)",
            path.display()
        )));
    }
    let members = object
        .iter()
        .filter(|(k, _)| !HOST_MEMBERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok((point, members))
}

/// Reads a JSON file of at most [`MAX_FILE_BYTES`], exactly (duplicate
/// keys refused).
fn read_json(path: &Path) -> Result<Value, CliError> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|e| usage(&format!("cannot read {}: {e}", path.display())))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| usage(&format!("cannot read {}: {e}", path.display())))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(usage(&format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            path.display()
        )));
    }
    hookwire::json::decode(&text).map_err(|e| usage(&format!("{}: {e}", path.display())))
}

/// An unusable input of `emit`.
fn usage(message: &str) -> CliError {
    CliError::Emit(message.to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{DEFAULT_EMISSION_BOUND, emission_bound};

    #[test]
    fn the_bound_outlasts_the_approval_deadline_unless_the_flag_says() {
        let five_min = Duration::from_secs(300);
        assert_eq!(emission_bound(None, None), DEFAULT_EMISSION_BOUND);
        assert_eq!(
            emission_bound(None, Some(five_min)),
            five_min + DEFAULT_EMISSION_BOUND
        );
        assert_eq!(emission_bound(None, Some(Duration::MAX)), Duration::MAX);
        assert_eq!(
            emission_bound(Some(1500), Some(five_min)),
            Duration::from_millis(1500)
        );
        assert_eq!(emission_bound(Some(0), None), Duration::from_millis(1));
    }
}
