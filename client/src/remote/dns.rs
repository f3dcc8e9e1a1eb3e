//! Replicas from DNS: a binding whose endpoints are re-resolved
//! periodically (`InterceptorBinding::resolve_every`) gets one replica per
//! address each name resolves to, through the system resolver (tokio's
//! `lookup_host`, i.e. `getaddrinfo`: `/etc/hosts`, search domains and all).
//! An `https://` replica is still verified against the name, not the
//! address.

use std::net::SocketAddr;

/// The replica URLs an endpoint resolves to now, each with the host name
/// its certificate must carry. The reason of a failure never quotes the
/// resolver's answer.
pub(super) async fn replica_endpoints(endpoint: &str) -> Result<Vec<(String, String)>, String> {
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
