//! `hookwire check`: a declaration resolved and loaded exactly as a host
//! would load it, then every declared endpoint asked for its health and
//! its manifest, and the effective chain printed point by point.

use std::path::Path;
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_client::Host;
use hookwire_client::declaration::{Declaration, DeclaredHostBuilder};

use crate::args::RegistryArgs;
use crate::error::CliError;

/// Runs the check; `Ok` only when the document loads and every endpoint
/// answers `Describe` and is serving (or serves no health at all, which is
/// a note: `Describe` is the contract, health a recommendation).
pub(crate) async fn run(path: &Path, timeout_ms: u64, args: &RegistryArgs) -> Result<(), CliError> {
    let registry = args.registry()?;
    let declaration = Declaration::from_path(path)?;
    let resolved = declaration.resolve(&registry)?;
    let host = declared().load(&declaration, &registry)?;
    println!(
        "{}: {} loads (id {}, document digest {}, resolved digest {})",
        path.display(),
        resolved.declaration,
        resolved.id.as_deref().unwrap_or("-"),
        declaration.digest(),
        resolved.digest()
    );
    let c = resolved.composition.to_json();
    println!(
        "mode {}, composition {}, identity provider {}, approval resolver {}, posture {}",
        resolved.mode.as_str(),
        c,
        resolved.identity_provider.as_deref().unwrap_or("null"),
        resolved.approval_resolver.as_deref().unwrap_or("none"),
        resolved.posture.as_str()
    );

    let timeout = Duration::from_millis(timeout_ms.max(1));
    let endpoints = host.remote_endpoints();
    let (health, manifests) =
        tokio::join!(host.health_remotes(timeout), host.describe_remotes(timeout));
    println!("\nbindings (dispatch order):");
    let mut failed = 0;
    for (i, b) in resolved.bindings.iter().enumerate() {
        let timeout = b
            .timeout_ms
            .map_or_else(|| "unbounded".to_owned(), |ms| format!("{ms} ms"));
        let at: Vec<&str> = b.at.iter().map(|p| p.as_str()).collect();
        println!(
            "  {i}. {} ({}) timeout {timeout}, at {}",
            b.id,
            b.kind,
            at.join(", ")
        );
        let Some((_, endpoint)) = endpoints.iter().find(|(n, _)| *n == b.id) else {
            println!("     in-process");
            continue;
        };
        let healthy = health.iter().find(|(n, _)| *n == b.id).map(|(_, r)| r);
        let manifest = manifests.iter().find(|(n, _)| *n == b.id).map(|(_, r)| r);
        let mut ok = true;
        match healthy {
            Some(Ok(status)) if status == "SERVING" => println!("     {endpoint}: health SERVING"),
            Some(Ok(status)) if status == hookwire_client::HEALTH_UNIMPLEMENTED => println!(
                "     {endpoint}: note: no grpc.health.v1 service (UNIMPLEMENTED); health is recommended, Describe is the contract"
            ),
            Some(Ok(status)) => {
                ok = false;
                println!("     {endpoint}: health {status}");
            }
            Some(Err(e)) => {
                ok = false;
                println!("     {endpoint}: health check failed: {}", reason(e));
            }
            None => {}
        }
        match manifest {
            Some(Ok(m)) => {
                let points: Vec<&str> = m.points.iter().map(|p| p.as_str()).collect();
                let handles = if points.is_empty() {
                    "every point".to_owned()
                } else {
                    points.join(", ")
                };
                println!(
                    "     Describe: {} {} (handles {handles})",
                    m.name, m.version
                );
                let idle: Vec<&str> =
                    b.at.iter()
                        .filter(|p| !m.points.is_empty() && !m.points.contains(p))
                        .map(|p| p.as_str())
                        .collect();
                if !idle.is_empty() {
                    println!(
                        "     note: bound at {} where its manifest declares nothing (a hookwire-server service answers allow there; one without a handler fails closed)",
                        idle.join(", ")
                    );
                }
            }
            Some(Err(e)) => {
                ok = false;
                println!("     Describe failed: {}", reason(e));
            }
            None => {}
        }
        failed += usize::from(!ok);
    }

    println!("\nchain per point:");
    for point in InterceptionPoint::ALL {
        if !resolved.surface.interception_points.contains(&point) {
            println!("  {:<16} (not in the surface)", point.as_str());
            continue;
        }
        let chain = host.chain(point);
        if chain.is_empty() {
            let outcome = match resolved.mode {
                hookwire::Mode::Enforce => "every emission denies host_error:no_interceptor",
                hookwire::Mode::EvaluateOnly => {
                    "recorded as host_error:no_interceptor, not enforced"
                }
            };
            println!("  {:<16} (no interceptor: {outcome})", point.as_str());
        } else {
            println!("  {:<16} {}", point.as_str(), chain.join(" -> "));
        }
    }
    if failed > 0 {
        return Err(CliError::Unhealthy(failed));
    }
    println!(
        "\nok: {} bindings, {} endpoints serving",
        resolved.bindings.len(),
        endpoints.len()
    );
    Ok(())
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
