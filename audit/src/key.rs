//! Signing keys and their files.
//!
//! A signing key file holds one line, `hookwire-audit-ed25519-secret <hex>`,
//! the 32-byte Ed25519 seed in lowercase hex; its public key file (by
//! convention the same path plus `.pub`) holds
//! `hookwire-audit-ed25519-public <hex>`, the 32-byte public key. The labels
//! keep one from being mistaken for the other. A signing key file must be
//! readable by its owner only (mode `0600`): loading refuses anything
//! looser, the way ssh does. Key material is never formatted by `Debug` or
//! `Display`; the seed is wiped from memory when the key is dropped.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use zeroize::Zeroizing;

use crate::error::AuditError;

const SECRET_LABEL: &str = "hookwire-audit-ed25519-secret";
const PUBLIC_LABEL: &str = "hookwire-audit-ed25519-public";

/// The Ed25519 key a [`SigningSink`](crate::SigningSink) signs every line
/// and checkpoint with.
pub struct AuditKey(SigningKey);

impl AuditKey {
    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Result<Self, AuditError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::getrandom(seed.as_mut()).map_err(|e| AuditError::Randomness(e.to_string()))?;
        Ok(Self::from_seed(*seed))
    }

    /// The key of a 32-byte seed (tests and key stores of your own).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self(SigningKey::from_bytes(&seed))
    }

    /// Reads a signing key file, refusing one that group or others may
    /// access.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        let path = path.as_ref();
        check_owner_only(path)?;
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(AuditError::io(path))?);
        let seed = Zeroizing::new(parse_labelled(path, &text, SECRET_LABEL)?);
        Ok(Self::from_seed(*seed))
    }

    /// Generates a key and writes it to `path` (mode `0600`) and its public
    /// key to `path.pub`. Refuses to overwrite either file.
    pub fn generate_to(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        let path = path.as_ref();
        let public_path = public_key_path(path);
        if public_path.exists() {
            return Err(AuditError::io(&public_path)(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "file exists",
            )));
        }
        let key = Self::generate()?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(AuditError::io(path))?;
        let line = Zeroizing::new(format!(
            "{SECRET_LABEL} {}\n",
            Zeroizing::new(hex::encode(key.0.as_bytes())).as_str()
        ));
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(AuditError::io(path))?;
        key.public().write_new(&public_path)?;
        Ok(key)
    }

    /// The public key that verifies this key's signatures.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditKey").finish_non_exhaustive()
    }
}

/// The Ed25519 public key a verifier checks a log and its checkpoints
/// against.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Reads a public key file (`KEYFILE.pub`).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(AuditError::io(path))?;
        let bytes = parse_labelled(path, &text, PUBLIC_LABEL)?;
        VerifyingKey::from_bytes(&bytes)
            .map(Self)
            .map_err(|_| AuditError::Key {
                path: path.to_owned(),
                detail: "not a valid Ed25519 public key".into(),
            })
    }

    /// Writes this key to a new file (refusing to overwrite one).
    pub fn write_new(&self, path: impl AsRef<Path>) -> Result<(), AuditError> {
        let path = path.as_ref();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(AuditError::io(path))?;
        writeln!(file, "{PUBLIC_LABEL} {}", hex::encode(self.0.as_bytes()))
            .and_then(|()| file.sync_all())
            .map_err(AuditError::io(path))
    }

    /// Whether `signature` is this key's signature over exactly `message`
    /// (strict verification: no malleable or small-order encodings).
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        self.0
            .verify_strict(message, &Signature::from_bytes(signature))
            .is_ok()
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", hex::encode(self.0.as_bytes()))
    }
}

/// Where [`AuditKey::generate_to`] puts the public key of `key_path`:
/// the same path with `.pub` appended.
pub fn public_key_path(key_path: &Path) -> PathBuf {
    let mut p = key_path.as_os_str().to_owned();
    p.push(".pub");
    PathBuf::from(p)
}

fn parse_labelled(path: &Path, text: &str, label: &str) -> Result<[u8; 32], AuditError> {
    let wrong = |detail: &str| AuditError::Key {
        path: path.to_owned(),
        detail: detail.to_owned(),
    };
    let (found, value) = text
        .trim_end()
        .split_once(' ')
        .ok_or_else(|| wrong("not a hookwire audit key file"))?;
    if found != label {
        let what = match found {
            SECRET_LABEL => "this is a signing key file, not a public key file",
            PUBLIC_LABEL => "this is a public key file, not a signing key file",
            _ => "not a hookwire audit key file",
        };
        return Err(wrong(what));
    }
    // One spelling per key: lowercase digits only (the `hex` crate alone
    // would also read uppercase).
    let mut key = [0u8; 32];
    if value.bytes().any(|b| b.is_ascii_uppercase())
        || hex::decode_to_slice(value, &mut key).is_err()
    {
        return Err(wrong("the key is not 64 hex digits"));
    }
    Ok(key)
}

#[cfg(unix)]
fn check_owner_only(path: &Path) -> Result<(), AuditError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(AuditError::io(path))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(AuditError::KeyPermissions {
            path: path.to_owned(),
            mode: mode & 0o777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_only(_path: &Path) -> Result<(), AuditError> {
    Ok(())
}
