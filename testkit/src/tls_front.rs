//! A TLS front for a plain test upstream: it terminates TLS on
//! 127.0.0.1:0 with a certificate of a test [`Authority`], optionally
//! verifies client certificates against another authority (mutual TLS),
//! counts what it saw, and relays each connection's bytes to the plain
//! upstream behind it. Any fake upstream (a model API, an MCP server, a
//! webhook receiver) becomes an `https` one, so that a client's TLS
//! options are tested against a real handshake.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::tls::Authority;

/// The running front; stopped when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Seen {
    handshakes: AtomicUsize,
    failed: AtomicUsize,
    client_certificates: AtomicUsize,
}

impl TlsFront {
    /// Serves `localhost`/`127.0.0.1` certified by `server` and relays to
    /// `backend`; with `client_ca`, a client certificate is asked for and,
    /// when presented, must chain to it (a client without one is still
    /// served).
    pub fn start(server: &Authority, client_ca: Option<&Authority>, backend: SocketAddr) -> Self {
        let leaf = server.localhost();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots
                    .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).expect("CA PEM"))
                    .expect("a CA root");
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .allow_unauthenticated()
                .build()
                .expect("a client verifier");
                builder.with_client_cert_verifier(verifier)
            }
        };
        let chain = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("certificate PEM");
        let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).expect("key PEM");
        let config = builder
            .with_single_cert(chain, key)
            .expect("a server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("the front's address");
        let seen = Arc::new(Seen::default());
        let (stop, stopped) = oneshot::channel();
        let counts = seen.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(serve(listener, acceptor, backend, counts, stopped));
        });
        Self {
            addr,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Where the front listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Completed handshakes.
    pub fn handshakes(&self) -> usize {
        self.seen.handshakes.load(Ordering::SeqCst)
    }

    /// Handshakes that failed (e.g. the client did not trust the
    /// server's authority).
    pub fn failed_handshakes(&self) -> usize {
        self.seen.failed.load(Ordering::SeqCst)
    }

    /// Completed handshakes in which the client presented a certificate
    /// that chains to the client authority.
    pub fn client_certificates(&self) -> usize {
        self.seen.client_certificates.load(Ordering::SeqCst)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    acceptor: TlsAcceptor,
    backend: SocketAddr,
    seen: Arc<Seen>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let (tcp, _) = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        let (acceptor, seen) = (acceptor.clone(), seen.clone());
        tokio::spawn(async move {
            let mut tls = match acceptor.accept(tcp).await {
                Ok(t) => t,
                Err(_) => {
                    seen.failed.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            };
            if tls
                .get_ref()
                .1
                .peer_certificates()
                .is_some_and(|c| !c.is_empty())
            {
                seen.client_certificates.fetch_add(1, Ordering::SeqCst);
            }
            seen.handshakes.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await {
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            }
        });
    }
}
