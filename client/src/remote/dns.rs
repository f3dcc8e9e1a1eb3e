//! Replicas from DNS: a binding whose endpoints are re-resolved
//! periodically (`InterceptorBinding::resolve_every`) gets one replica per
//! address each name resolves to, through the system resolver (tokio's
//! `lookup_host`, i.e. `getaddrinfo`: `/etc/hosts`, search domains and all).
//! An `https://` replica is still verified against the name, not the
//! address.
//!
//! Each resolution replaces the fleet's replica set ([`refresh`]): an
//! address still there keeps its replica (and its state), a new one gets a
//! replica and a monitor, a vanished one is retired. The periodic task
//! ([`spawn_every`]) ends with the fleet.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::endpoint::EndpointClient;
use super::fleet::{Fleet, Replica};
use super::monitor;

/// Re-resolves `fleet`'s names every `every`, until the fleet is dropped.
pub(super) fn spawn_every(fleet: &Arc<Fleet>, every: Duration) {
    let weak = Arc::downgrade(fleet);
    let mut stop = fleet.stop.subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                () = tokio::time::sleep(every) => {}
            }
            let Some(fleet) = weak.upgrade() else { return };
            refresh(&fleet).await;
        }
    });
}

/// Resolves the configured names and replaces the replica set: a
/// replica whose address is still there is kept (with its state), a
/// new address gets a new replica (and a monitor, once started), a
/// vanished one is retired. A failed resolution keeps the set.
pub(super) async fn refresh(fleet: &Arc<Fleet>) {
    let mut wanted = Vec::new();
    for endpoint in &fleet.target.endpoints {
        match replica_endpoints(endpoint).await {
            Ok(found) => wanted.extend(found),
            Err(reason) => {
                tracing::warn!(interceptor = %fleet.name, %reason, "DNS resolution failed; keeping the replicas");
                return;
            }
        }
    }
    let current = fleet.replicas.load_full();
    let mut next = Vec::with_capacity(wanted.len());
    for (url, domain) in wanted {
        if next
            .iter()
            .any(|r: &Arc<Replica>| r.client.endpoint() == url)
        {
            continue;
        }
        if let Some(kept) = current.iter().find(|r| r.client.endpoint() == url) {
            next.push(kept.clone());
            continue;
        }
        // The certificate is still checked against the name.
        let tls = url.starts_with("https://").then(|| {
            let mut tls = fleet.tls.clone().unwrap_or_default();
            tls.domain_name.get_or_insert(domain);
            tls
        });
        match EndpointClient::new(
            &fleet.name,
            &url,
            fleet.metadata.clone(),
            tls.as_ref(),
            fleet.target.streams,
        ) {
            Ok(client) => {
                let replica = Arc::new(Replica::new(client));
                if fleet.started.get().is_some() {
                    monitor::spawn(fleet, replica.clone());
                }
                next.push(replica);
            }
            Err(e) => {
                tracing::warn!(interceptor = %fleet.name, error = %e, "resolved address refused")
            }
        }
    }
    for old in current.iter() {
        if !next.iter().any(|r| Arc::ptr_eq(r, old)) {
            old.retired.store(true, Ordering::Relaxed);
            old.probe.notify_one();
        }
    }
    fleet.replicas.store(Arc::new(next));
}

/// The replica URLs an endpoint resolves to now, each with the host name
/// its certificate must carry. The reason of a failure never quotes the
/// resolver's answer.
async fn replica_endpoints(endpoint: &str) -> Result<Vec<(String, String)>, String> {
    let uri: tonic::codegen::http::Uri = endpoint
        .parse()
        .map_err(|_| "the endpoint is not a URL".to_owned())?;
    let scheme = uri.scheme_str().unwrap_or("http");
    let host = uri
        .host()
        .ok_or_else(|| "the endpoint has no host".to_owned())?;
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let name = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addrs = tokio::net::lookup_host((name.as_str(), port))
        .await
        .map_err(|e| format!("resolving the endpoint's host failed ({})", e.kind()))?;
    let mut found: Vec<(String, String)> = Vec::new();
    for addr in addrs {
        let url = format!("{scheme}://{}", authority(addr));
        if !found.iter().any(|(u, _)| *u == url) {
            found.push((url, name.clone()));
        }
    }
    if found.is_empty() {
        return Err("the endpoint's host resolved to no address".into());
    }
    Ok(found)
}

/// `ip:port`, with an IPv6 address bracketed.
fn authority(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.to_string(),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn localhost_resolves_to_its_loopback_addresses_with_the_name_kept() {
        let found = replica_endpoints("http://localhost:50051").await.unwrap();
        assert!(
            found.iter().any(|(u, _)| u == "http://127.0.0.1:50051"),
            "{found:?}"
        );
        assert!(found.iter().all(|(_, name)| name == "localhost"));
    }

    #[tokio::test]
    async fn an_address_resolves_to_itself() {
        let found = replica_endpoints("https://[::1]:8443").await.unwrap();
        assert_eq!(found, [("https://[::1]:8443".to_owned(), "::1".to_owned())]);
    }
}
