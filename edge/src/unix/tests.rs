//! The socket's checks, each refusal, its mode, stale-socket handling,
//! its removal and the owner's connection accepted.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::Duration;

use super::*;

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn refusal(result: Result<UnixSocket, Error>) -> String {
    match result {
        Err(e @ Error::Socket { .. }) => e.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn the_socket_is_0600_and_removed_when_dropped() {
    let dir = private_dir();
    let path = dir.path().join("svc.sock");
    let socket = UnixSocket::bind(&path).unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // Nothing else is left in the directory (the staging directory is gone).
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    drop(socket);
    assert!(!path.exists(), "the socket is removed on stop");
}

#[tokio::test]
async fn a_group_or_world_writable_directory_is_refused() {
    for mode in [0o777, 0o770, 0o1777] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        let why = refusal(UnixSocket::bind(&dir.path().join("svc.sock")));
        assert!(why.contains("group- or world-writable"), "{mode:o}: {why}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[tokio::test]
async fn an_existing_file_that_is_not_a_socket_is_refused_and_kept() {
    let dir = private_dir();
    let path = dir.path().join("svc.sock");
    std::fs::write(&path, "precious").unwrap();
    let why = refusal(UnixSocket::bind(&path));
    assert!(why.contains("is not a socket"), "{why}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    // A symbolic link is not followed either.
    let link = dir.path().join("link.sock");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(refusal(UnixSocket::bind(&link)).contains("is not a socket"));
}

#[tokio::test]
async fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let dir = private_dir();
    let path = dir.path().join("svc.sock");
    // A socket nobody listens on any more (its process died).
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_socket()
    );
    let live = UnixSocket::bind(&path).expect("a stale socket is replaced");
    let why = refusal(UnixSocket::bind(&path));
    assert!(why.contains("another process is listening"), "{why}");
    // The refused second process did not remove the live one's socket.
    assert!(path.exists());
    drop(live);
    assert!(!path.exists());
}

#[tokio::test]
async fn a_socket_replaced_by_someone_else_is_not_removed() {
    let dir = private_dir();
    let path = dir.path().join("svc.sock");
    let first = UnixSocket::bind(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "another's").unwrap();
    drop(first);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "another's");
}

#[tokio::test]
async fn a_path_too_long_or_without_a_directory_is_refused() {
    let dir = private_dir();
    let long = dir.path().join("s".repeat(MAX_SOCKET_PATH_BYTES));
    assert!(refusal(UnixSocket::bind(&long)).contains("longer than"));
    let missing = dir.path().join("nowhere/svc.sock");
    assert!(refusal(UnixSocket::bind(&missing)).contains("its directory"));
}

#[tokio::test]
async fn the_owner_is_accepted_and_a_refusal_hook_is_not_called() {
    let dir = private_dir();
    let path = dir.path().join("svc.sock");
    let mut socket = UnixSocket::bind(&path).unwrap();
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    socket.on_refused({
        let refused = refused.clone();
        move || {
            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let client = tokio::spawn({
        let path = path.clone();
        async move { UnixStream::connect(&path).await.unwrap() }
    });
    let accepted = tokio::time::timeout(Duration::from_secs(30), socket.accept())
        .await
        .expect("the owner's connection is accepted");
    let _client = client.await.unwrap();
    assert_eq!(accepted.peer_cred().unwrap().uid(), socket.owner());
    assert_eq!(refused.load(std::sync::atomic::Ordering::Relaxed), 0);
}
