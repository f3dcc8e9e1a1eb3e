//! Where the tests find what lives outside their crate: the workspace's
//! root folder (fixtures, `.cache/`, the committed reports) and the
//! `hookwire` command built beside the test binary. One definition each,
//! so that a test moved between crates keeps finding the same files.

use std::path::{Path, PathBuf};

/// The workspace's root folder: where `scripts/setup.sh` leaves `.cache/`,
/// where the shared fixtures (`tests/fixtures/`) and the committed reports
/// (`CONFORMANCE.md`) live. Every crate's tests resolve workspace paths
/// from here rather than from their own `CARGO_MANIFEST_DIR`, so a test
/// reads the same file whichever crate it belongs to.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// The `hookwire` command, for the tests of a crate other than
/// `hookwire-cli` that need the real binary (the products' tests that run
/// the command as their users do): `HOOKWIRE_BIN` when set, otherwise the
/// one Cargo built beside this test binary, in `target/<profile>/`
/// (`cargo test --workspace` builds it; `cargo test -p <crate>` does
/// not). Panics, under CI or not, when it is absent: a test that needs the
/// command never passes without it. `hookwire-cli`'s own tests use
/// `env!("CARGO_BIN_EXE_hookwire")`, which Cargo guarantees is built.
pub fn hookwire_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("HOOKWIRE_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary> → target/<profile>/hookwire
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("hookwire"))
        .expect("the test binary is in target/<profile>/deps");
    assert!(
        bin.is_file(),
        "{} is missing: build it first (cargo build -p hookwire-cli --bin hookwire) \
         or set HOOKWIRE_BIN to a built `hookwire`",
        bin.display()
    );
    bin
}
