//! Bundle signatures in OPA's format: a `.signatures.json` file holding
//! `{"signatures": ["<JWS>"]}`, one compact JWS whose payload lists every
//! other file of the bundle with its hash:
//! `{"files": [{"name": "policy.rego", "hash": "<hex>", "algorithm": "SHA-256"}], "scope": "..."}`.
//!
//! Verifying checks the JWS with the operator's public key (RS256, ES256
//! or EdDSA, PEM), that the payload lists exactly the bundle's files, that
//! each hash matches, and the scope when one is configured. A JSON or YAML
//! file is hashed in its canonical form (members sorted, no whitespace), as
//! OPA does, so reformatting a data document does not break a signature.
//! [`sign_files`] writes the same format (tests; a release pipeline).

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::archive::Files;

/// The file holding a bundle's signature.
pub const SIGNATURES_FILE: &str = ".signatures.json";

/// The JWS algorithms accepted.
const ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// A public key that bundles must be signed with.
#[derive(Clone)]
pub struct Verification {
    key: DecodingKey,
    algorithm: Algorithm,
    scope: Option<String>,
}

impl std::fmt::Debug for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verification")
            .field("algorithm", &self.algorithm)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Verification {
    /// The PEM public key `pem` for `algorithm` (`RS256`, `ES256` or
    /// `EdDSA`); with `scope`, a signature's payload must carry it.
    pub fn from_pem(pem: &[u8], algorithm: &str, scope: Option<String>) -> Result<Self, String> {
        let algorithm = parse_algorithm(algorithm)?;
        let key = match algorithm {
            Algorithm::RS256 => DecodingKey::from_rsa_pem(pem),
            Algorithm::ES256 => DecodingKey::from_ec_pem(pem),
            _ => DecodingKey::from_ed_pem(pem),
        }
        .map_err(|e| format!("not a {algorithm:?} public key in PEM: {e}"))?;
        Ok(Self {
            key,
            algorithm,
            scope,
        })
    }

    /// Checks `signatures` (the `.signatures.json` text) against `files`
    /// (every other file of the bundle).
    pub(crate) fn verify(&self, signatures: &[u8], files: &Files) -> Result<(), String> {
        let document: SignaturesFile = serde_json::from_slice(signatures)
            .map_err(|e| format!("{SIGNATURES_FILE} is not valid: {e}"))?;
        let [token] = document.signatures.as_slice() else {
            return Err(format!(
                "{SIGNATURES_FILE} must hold exactly one signature, not {}",
                document.signatures.len()
            ));
        };
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("the signature's header is not valid: {e}"))?;
        if header.alg != self.algorithm {
            return Err(format!(
                "signed with {:?}, but the verification key is {:?}",
                header.alg, self.algorithm
            ));
        }
        let mut validation = Validation::new(self.algorithm);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let payload = jsonwebtoken::decode::<Payload>(token, &self.key, &validation)
            .map_err(|e| format!("the signature does not verify: {e}"))?
            .claims;
        if let Some(scope) = &self.scope
            && payload.scope.as_deref() != Some(scope.as_str())
        {
            return Err(format!("the signature's scope is not {scope:?}"));
        }
        let mut listed = BTreeSet::new();
        for file in &payload.files {
            let name = file.name.trim_start_matches('/').to_owned();
            let Some(bytes) = files.get(&name) else {
                return Err(format!(
                    "the signature lists {name}, which the bundle lacks"
                ));
            };
            let actual = file_hash(&name, bytes, &file.algorithm)?;
            if !actual.eq_ignore_ascii_case(&file.hash) {
                return Err(format!("{name}: its hash does not match the signature"));
            }
            if !listed.insert(name.clone()) {
                return Err(format!("the signature lists {name} twice"));
            }
        }
        if let Some(extra) = files.keys().find(|name| !listed.contains(*name)) {
            return Err(format!("{extra} is not covered by the signature"));
        }
        Ok(())
    }
}

fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    if !ALGORITHMS.contains(&name) {
        return Err(format!(
            "unsupported signing algorithm {name:?}; one of {}",
            ALGORITHMS.join(", ")
        ));
    }
    Algorithm::from_str(name).map_err(|e| format!("{name}: {e}"))
}

#[derive(Deserialize)]
struct SignaturesFile {
    signatures: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    files: Vec<FileHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct FileHash {
    name: String,
    hash: String,
    #[serde(default = "sha256_name")]
    algorithm: String,
}

fn sha256_name() -> String {
    "SHA-256".into()
}

/// The hex hash of one bundle file with `algorithm` (`SHA-256`, `SHA-384`
/// or `SHA-512`; the weak ones OPA also allows are refused): JSON and YAML
/// files in their canonical form, others byte for byte.
pub fn file_hash(name: &str, bytes: &[u8], algorithm: &str) -> Result<String, String> {
    let canonical;
    let input: &[u8] =
        if name.ends_with(".json") || name.ends_with(".yaml") || name.ends_with(".yml") {
            canonical = canonical_form(name, bytes)?;
            canonical.as_bytes()
        } else {
            bytes
        };
    Ok(match algorithm {
        "SHA-256" => hex::encode(Sha256::digest(input)),
        "SHA-384" => hex::encode(Sha384::digest(input)),
        "SHA-512" => hex::encode(Sha512::digest(input)),
        other => return Err(format!("{name}: hash algorithm {other:?} is not accepted")),
    })
}

/// A structured file as canonical JSON (RFC 8785: members sorted).
fn canonical_form(name: &str, bytes: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8"))?;
    let value: serde_json::Value = if name.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?
    } else {
        let rego =
            regorus::Value::from_yaml_str(text).map_err(|e| format!("{name}: not YAML: {e}"))?;
        serde_json::to_value(&rego).map_err(|e| format!("{name}: {e}"))?
    };
    hookwire::canonical::to_canonical_string(&value).map_err(|e| format!("{name}: {e}"))
}

/// Signs `files` (every file of a bundle but the signature) with the PEM
/// private key `pem` (PKCS#8 for ES256 and EdDSA) in OPA's format: the
/// text of `.signatures.json`.
pub fn sign_files(
    files: &BTreeMap<String, Vec<u8>>,
    pem: &[u8],
    algorithm: &str,
    scope: Option<String>,
) -> Result<String, String> {
    let algorithm = parse_algorithm(algorithm)?;
    let key = match algorithm {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pem),
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
        _ => EncodingKey::from_ed_pem(pem),
    }
    .map_err(|e| format!("not a {algorithm:?} private key in PEM: {e}"))?;
    let files = files
        .iter()
        .map(|(name, bytes)| {
            Ok(FileHash {
                name: name.clone(),
                hash: file_hash(name, bytes, "SHA-256")?,
                algorithm: sha256_name(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let token = jsonwebtoken::encode(&Header::new(algorithm), &Payload { files, scope }, &key)
        .map_err(|e| format!("signing failed: {e}"))?;
    Ok(serde_json::json!({ "signatures": [token] }).to_string())
}
