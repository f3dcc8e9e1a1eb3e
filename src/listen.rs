//! Why a listening socket could not be bound, in words an operator can act
//! on. Every command and service of hookwire that listens (interceptor
//! services, the approval service and its page, the gateway, the hooks
//! daemon, the MCP proxy, metrics endpoints) reports a failed bind through
//! [`BindFailure`], so that a busy port reads "127.0.0.1:50061 is already
//! in use" everywhere instead of an OS error code.

use std::fmt;
use std::io;

/// Displays a failed bind of `addr`: the common causes (a busy port, an
/// address this machine does not have, a privileged port) in words, any
/// other with the OS's own message.
#[derive(Debug, Clone, Copy)]
pub struct BindFailure<'a, A: fmt::Display> {
    addr: &'a A,
    source: &'a io::Error,
}

impl<'a, A: fmt::Display> BindFailure<'a, A> {
    /// The failure of binding `addr` with `source`.
    pub fn new(addr: &'a A, source: &'a io::Error) -> Self {
        Self { addr, source }
    }
}

impl<A: fmt::Display> fmt::Display for BindFailure<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = self.addr;
        match self.source.kind() {
            io::ErrorKind::AddrInUse => write!(
                f,
                "{addr} is already in use (another process listens there: stop it or pick another address)"
            ),
            io::ErrorKind::AddrNotAvailable => write!(
                f,
                "{addr} is not an address of this machine (listen on one of its interfaces, e.g. 127.0.0.1)"
            ),
            io::ErrorKind::PermissionDenied => write!(
                f,
                "cannot listen on {addr}: permission denied (ports below 1024 need privileges; pick a higher port)"
            ),
            _ => write!(f, "cannot listen on {addr}: {}", self.source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn a_busy_port_reads_in_words() {
        let addr: SocketAddr = "127.0.0.1:50061".parse().unwrap();
        let e = io::Error::from(io::ErrorKind::AddrInUse);
        let text = BindFailure::new(&addr, &e).to_string();
        assert!(
            text.starts_with("127.0.0.1:50061 is already in use"),
            "{text}"
        );
        let e = io::Error::other("weird");
        assert_eq!(
            BindFailure::new(&addr, &e).to_string(),
            "cannot listen on 127.0.0.1:50061: weird"
        );
    }
}
