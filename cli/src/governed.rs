//! The long-lived governed host the proxy commands share (`gateway`,
//! `hooks serve`, `mcp`): where the chain comes from (a declaration, or a
//! policy directory bound in this process: `--policy DIR`), the
//! declaration loaded against the registry
//! the options build, the signed record log, records printed when asked,
//! and the host's metrics in the registry a `--metrics-addr` endpoint
//! serves (bound before anything starts, so that a busy port fails the
//! start). One implementation, so that the three commands record, sign
//! and measure alike.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use hookwire::InterceptionRecord;
use hookwire_client::declaration::Declaration;
use hookwire_client::declaration::Registry as Kinds;
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{Host, HostMetrics, RecordSink};
use hookwire_server::metrics::SharedRegistry;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::args::RegistryArgs;
use crate::audit::{RecordsArgs, SignedRecords};
use crate::error::CliError;
use crate::metrics_endpoint;
use crate::output::PrintTo;

/// Prints each record as one JSON line: the §10.3 record, and beside its
/// members, when the host recorded any, the facts the signed log keeps
/// (`extensions`, e.g. `extensions.hookwire.approval.approver`), so that
/// the printed line says who approved as the signed line does.
pub(crate) struct PrintRecords(pub(crate) PrintTo);

/// The line `--print-records` prints for `record`.
pub(crate) fn printed(record: &InterceptionRecord) -> Value {
    let mut line = record.to_json();
    if !record.extensions.is_empty()
        && let Value::Object(members) = &mut line
    {
        members.insert(
            "extensions".into(),
            Value::Object(record.extensions.clone()),
        );
    }
    line
}

impl RecordSink for PrintRecords {
    fn record(&self, record: &InterceptionRecord) {
        let line = printed(record);
        match self.0 {
            PrintTo::Stdout => outln!("{line}"),
            PrintTo::Stderr => errln!("{line}"),
        }
    }
}

/// Where a governed command's chain comes from: exactly one of a host
/// declaration or a policy directory decided in this process.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct ChainArgs {
    /// The host declaration whose chain governs, e.g.
    /// `examples/declarations/policy.json`.
    #[arg(long, value_name = "FILE")]
    declaration: Option<PathBuf>,
    /// Govern with the Rego and Cedar policies of DIR decided in this
    /// process — no declaration, no policy service (the points no package
    /// decides at allow), e.g. `examples/policies`.
    #[arg(long, value_name = "DIR")]
    policy: Option<PathBuf>,
}

impl ChainArgs {
    /// What governs, in words for the command's start line.
    pub(crate) fn describe(&self) -> String {
        match (&self.declaration, &self.policy) {
            (Some(path), _) => path.display().to_string(),
            (None, Some(dir)) => format!("the policies of {} (in process)", dir.display()),
            (None, None) => "nothing".into(),
        }
    }

    /// The host declaration document: the file's, or the one-process
    /// document of the policy directory.
    fn document(&self) -> Result<Value, CliError> {
        match (&self.declaration, &self.policy) {
            (Some(path), _) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    hookwire_client::Error::Registry(format!("cannot read {}: {e}", path.display()))
                })?;
                Ok(hookwire::json::decode(&text).map_err(|e| {
                    hookwire_client::Error::Registry(format!("{}: {e}", path.display()))
                })?)
            }
            (None, Some(dir)) => Ok(hookwire_policy::embedded::one_process_declaration(dir)),
            (None, None) => Err(hookwire_client::Error::Registry(
                "give --declaration FILE or --policy DIR".into(),
            )
            .into()),
        }
    }

    /// The declaration file, when the chain comes from one.
    fn declaration_file(&self) -> Option<&Path> {
        self.declaration.as_deref()
    }
}

/// What a governed command needs to set its host up.
pub(crate) struct HostOptions<'a> {
    /// The contexts' `agent.id`.
    pub(crate) agent_id: &'a str,
    /// Where the chain comes from.
    pub(crate) chain: &'a ChainArgs,
    /// The approval resolver options.
    pub(crate) registry: &'a RegistryArgs,
    /// The signed record log options.
    pub(crate) records: &'a RecordsArgs,
    /// Where records are printed, when they are.
    pub(crate) print: Option<PrintTo>,
    /// The metrics endpoint's address, when metrics are served.
    pub(crate) metrics_addr: Option<SocketAddr>,
    /// What the command adds before the document loads: kinds of its
    /// own in the registry, bindings in the document.
    pub(crate) amend: Option<&'a Amend<'a>>,
}

/// A command's additions to the registry and the declaration document.
pub(crate) type Amend<'a> = dyn Fn(Kinds, Value) -> Result<(Kinds, Value), CliError> + 'a;

/// The host and what runs beside it.
pub(crate) struct Governed {
    /// The host the declaration built.
    pub(crate) host: Host,
    /// The signed record log (`finish` it when the command ends).
    pub(crate) signed: SignedRecords,
    /// The registry the metrics endpoint serves.
    pub(crate) metrics_registry: SharedRegistry,
    /// The metrics endpoint's bound listener, when asked for.
    pub(crate) metrics_listener: Option<TcpListener>,
}

/// Builds the host; `more_metrics` registers the command's own series in
/// the same registry when metrics are served, and returns its handle.
pub(crate) async fn governed_host<M>(
    o: HostOptions<'_>,
    more_metrics: impl FnOnce(&mut Registry) -> M,
) -> Result<(Governed, Option<M>), CliError> {
    let mut registry = o.registry.registry()?;
    let declaration = match (o.chain.declaration_file(), o.amend) {
        (Some(path), None) => Declaration::from_path(path)?,
        (_, amend) => {
            let mut document = o.chain.document()?;
            if let Some(amend) = amend {
                let (r, d) = amend(registry, document)?;
                registry = r;
                document = d;
            }
            Declaration::from_value(&document)?
        }
    };
    let signed = o.records.open()?;
    let mut builder = Host::declared(o.agent_id.to_owned(), "hookwire").record_sink(signed.clone());
    if let Some(to) = o.print {
        builder = builder.record_sink(PrintRecords(to));
    }
    let metrics_registry: SharedRegistry = Arc::default();
    let mut own = None;
    if o.metrics_addr.is_some() {
        let mut r = metrics_registry
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        builder = builder.metrics(HostMetrics::register(&mut r));
        own = Some(more_metrics(&mut r));
    }
    let metrics_listener = metrics_endpoint::bind(o.metrics_addr).await?;
    let host = builder.load(&declaration, &registry)?;
    Ok((
        Governed {
            host,
            signed,
            metrics_registry,
            metrics_listener,
        },
        own,
    ))
}

#[cfg(test)]
mod tests {
    use hookwire::{Composition, InterceptionPoint, InterceptionRecord, Mode, Verdict};
    use serde_json::json;

    use super::printed;

    fn record(extensions: serde_json::Value) -> InterceptionRecord {
        InterceptionRecord {
            interception_point: InterceptionPoint::PreToolCall,
            mode: Mode::Enforce,
            verdict: Verdict::allow(),
            input_identity: None,
            enforced_identity: None,
            identity_provider: None,
            session_id: "s".into(),
            sequence: 3,
            timestamp: None,
            trace: None,
            decided_by: Some(0),
            composition: Composition::default(),
            verdicts: Vec::new(),
            fold_truncated: None,
            resolved_by: Some(hookwire::ResolvedBy::Approval),
            interceptors_registered: 1,
            declaration: None,
            extensions: serde_json::from_value(extensions).unwrap(),
        }
    }

    #[test]
    fn a_printed_record_names_its_approver_as_the_signed_line_does() {
        let approved = record(json!({"hookwire": {"approval": {"approver": "alice"}}}));
        let line = printed(&approved);
        assert_eq!(
            line["extensions"]["hookwire"]["approval"]["approver"],
            "alice"
        );
        assert_eq!(line["resolved_by"], "approval");
        // The record's own members are exactly the §10.3 record's.
        let mut members = line.as_object().unwrap().clone();
        members.remove("extensions");
        assert_eq!(serde_json::Value::Object(members), approved.to_json());

        // Without facts: the §10.3 record alone.
        let plain = record(json!({}));
        assert_eq!(printed(&plain), plain.to_json());
    }
}
