//! The daemon's socket: the owner's connection is accepted through the
//! server's listener (the binding rules are tested in `hookwire-edge`),
//! and a refusal keeps the daemon's error type.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use super::*;

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[tokio::test]
async fn a_refusal_is_the_daemons_socket_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    match UnixSocket::bind(&dir.path().join("hooks.sock")) {
        Err(e @ Error::Socket { .. }) => {
            assert!(e.to_string().contains("group- or world-writable"), "{e}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn the_owner_is_accepted() {
    use axum::serve::Listener as _;
    let dir = private_dir();
    let path = dir.path().join("hooks.sock");
    let mut socket = UnixSocket::bind(&path).unwrap();
    let client = tokio::spawn({
        let path = path.clone();
        async move { UnixStream::connect(&path).await.unwrap() }
    });
    let accepted = tokio::time::timeout(Duration::from_secs(30), socket.accept())
        .await
        .expect("the owner's connection is accepted");
    let _client = client.await.unwrap();
    assert_eq!(accepted.0.peer_cred().unwrap().uid(), socket.inner.owner());
}
