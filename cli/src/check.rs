//! `hookwire check`: a declaration resolved and loaded exactly as a host
//! would load it, then every declared endpoint asked for its health and
//! its manifest (its `Describe` description shown: where `policy serve`
//! reports a rejected reload), every approval service named with
//! `--approval-endpoint` asked for a stream with the host's credentials,
//! and the effective chain printed point by point (a surface point no
//! binding covers is a finding in `enforce` mode: every emission there is
//! denied). Every finding is printed, not only the first; any finding
//! fails the command.

use std::path::Path;
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_client::Host;
use hookwire_client::declaration::{Declaration, DeclaredHostBuilder};

use crate::args::RegistryArgs;
use crate::error::CliError;

/// Runs the check; `Ok` only when the document loads, every endpoint
/// answers `Describe` and is serving (or serves no health at all, which is
/// a note: `Describe` is the contract, health a recommendation), and every
/// approval service named accepts the host's stream.
pub(crate) async fn run(path: &Path, timeout_ms: u64, args: &RegistryArgs) -> Result<(), CliError> {
    let timeout = Duration::from_millis(timeout_ms.max(1));
    let (document, approvals) = tokio::join!(
        check_document(path, timeout, args),
        probe_approvals(args, timeout)
    );
    let (mut findings, summary) = document;
    if !approvals.is_empty() {
        outln!("\napproval services:");
    }
    for (url, outcome) in approvals {
        match outcome {
            Ok(()) => outln!("  {url}: stream ready"),
            Err(why) => {
                findings += 1;
                outln!("  {url}: finding: {why}");
            }
        }
    }
    if findings > 0 {
        return Err(CliError::Findings(findings));
    }
    outln!("\nok: {summary}");
    Ok(())
}

/// Loads the document and probes its endpoints; returns the findings and
/// a summary of what answered.
async fn check_document(path: &Path, timeout: Duration, args: &RegistryArgs) -> (usize, String) {
    let loaded = args.registry().and_then(|registry| {
        let declaration = Declaration::from_path(path)?;
        let resolved = declaration.resolve(&registry)?;
        let host = declared().load(&declaration, &registry)?;
        Ok((declaration, resolved, host))
    });
    let (declaration, resolved, host) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            crate::error::report(&e);
            return (e.findings(), String::new());
        }
    };
    outln!(
        "{}: {} loads (id {}, document digest {}, resolved digest {})",
        path.display(),
        resolved.declaration,
        resolved.id.as_deref().unwrap_or("-"),
        declaration.digest(),
        resolved.digest()
    );
    let c = resolved.composition.to_json();
    outln!(
        "mode {}, composition {}, identity provider {}, approval resolver {}, posture {}",
        resolved.mode.as_str(),
        c,
        resolved.identity_provider.as_deref().unwrap_or("null"),
        resolved.approval_resolver.as_deref().unwrap_or("none"),
        resolved.posture.as_str()
    );

    let endpoints = host.remote_endpoints();
    let (health, manifests) =
        tokio::join!(host.health_remotes(timeout), host.describe_remotes(timeout));
    outln!("\nbindings (dispatch order):");
    let mut findings = 0;
    for (i, b) in resolved.bindings.iter().enumerate() {
        let timeout = b
            .timeout_ms
            .map_or_else(|| "unbounded".to_owned(), |ms| format!("{ms} ms"));
        let at: Vec<&str> = b.at.iter().map(|p| p.as_str()).collect();
        outln!(
            "  {i}. {} ({}) timeout {timeout}, at {}",
            b.id,
            b.kind,
            at.join(", ")
        );
        let Some((_, endpoint)) = endpoints.iter().find(|(n, _)| *n == b.id) else {
            outln!("     in-process");
            continue;
        };
        let healthy = health.iter().find(|(n, _)| *n == b.id).map(|(_, r)| r);
        let manifest = manifests.iter().find(|(n, _)| *n == b.id).map(|(_, r)| r);
        match healthy {
            Some(Ok(status)) if status == "SERVING" => outln!("     {endpoint}: health SERVING"),
            Some(Ok(status)) if status == hookwire_client::HEALTH_UNIMPLEMENTED => outln!(
                "     {endpoint}: note: no grpc.health.v1 service (UNIMPLEMENTED); health is recommended, Describe is the contract"
            ),
            Some(Ok(status)) => {
                findings += 1;
                outln!("     {endpoint}: finding: health {status}");
            }
            Some(Err(e)) => {
                findings += 1;
                outln!(
                    "     {endpoint}: finding: health check failed: {}",
                    reason(e)
                );
            }
            None => {}
        }
        match manifest {
            Some(Ok(d)) => {
                let m = &d.manifest;
                let points: Vec<&str> = m.points.iter().map(|p| p.as_str()).collect();
                let handles = if points.is_empty() {
                    "every point".to_owned()
                } else {
                    points.join(", ")
                };
                outln!(
                    "     Describe: {} {} (handles {handles})",
                    m.name,
                    m.version
                );
                if !m.description.is_empty() {
                    outln!("     description: {}", m.description);
                }
                outln!(
                    "     transport: {} ({})",
                    d.transport.as_str(),
                    match d.transport {
                        hookwire_client::Transport::Multiplex =>
                            "the manifest declares the stream: every session's emissions on a few streams",
                        hookwire_client::Transport::Unary => "one call per emission",
                    }
                );
                let idle: Vec<&str> =
                    b.at.iter()
                        .filter(|p| !m.points.is_empty() && !m.points.contains(p))
                        .map(|p| p.as_str())
                        .collect();
                if !idle.is_empty() {
                    outln!(
                        "     note: bound at {} where its manifest declares nothing (a hookwire-server service answers allow there; one without a handler fails closed)",
                        idle.join(", ")
                    );
                }
            }
            Some(Err(e)) => {
                findings += 1;
                outln!("     finding: Describe failed: {}", reason(e));
            }
            None => {}
        }
    }

    outln!("\nchain per point:");
    for point in InterceptionPoint::ALL {
        if !resolved.surface.interception_points.contains(&point) {
            outln!("  {:<16} (not in the surface)", point.as_str());
            continue;
        }
        let chain = host.chain(point);
        if chain.is_empty() {
            // No posture lets an uncovered point pass (§7): in `enforce`
            // mode every emission there is denied, so a host loaded from
            // this document denies every conversation that reaches it.
            match resolved.mode {
                hookwire::Mode::Enforce => {
                    findings += 1;
                    outln!(
                        "  {:<16} finding: no interceptor: every emission denies host_error:no_interceptor (bind one here, e.g. a `hookwire.allow` binding)",
                        point.as_str()
                    );
                }
                hookwire::Mode::EvaluateOnly => outln!(
                    "  {:<16} (no interceptor: recorded as host_error:no_interceptor, not enforced)",
                    point.as_str()
                ),
            }
        } else {
            outln!("  {:<16} {}", point.as_str(), chain.join(" -> "));
        }
    }
    let summary = format!(
        "{} bindings, {} endpoints serving",
        resolved.bindings.len(),
        endpoints.len()
    );
    (findings, summary)
}

/// Asks every approval service named with `--approval-endpoint` for the
/// host's `Resolve` stream, with the host's credentials, and waits up to
/// `timeout` for its `ServiceReady`; what each answered, in order.
async fn probe_approvals(
    args: &RegistryArgs,
    timeout: Duration,
) -> Vec<(&str, Result<(), String>)> {
    let probes = args.approval_endpoints().iter().map(|url| async move {
        let resolver = args
            .approval_builder(url)
            .and_then(|b| b.build().map_err(CliError::from));
        let outcome = match resolver {
            Ok(r) if r.wait_connected(timeout).await => Ok(()),
            Ok(_) => Err(format!(
                "no stream within {} ms: the service is down or refused the host's credentials (RUST_LOG=hookwire_client=info says which)",
                timeout.as_millis()
            )),
            Err(e) => Err(e.to_string()),
        };
        (url.as_str(), outcome)
    });
    futures::future::join_all(probes).await
}

/// The host `check` builds: only loaded, never used for sessions.
fn declared() -> DeclaredHostBuilder {
    Host::declared("hookwire-check", "hookwire").record_sink(hookwire_client::RecordLog::bounded(0))
}

/// The reason of a failed call, without the binding name repeated.
fn reason(e: &hookwire_client::Error) -> String {
    match e {
        hookwire_client::Error::Describe { reason, .. }
        | hookwire_client::Error::Health { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}
