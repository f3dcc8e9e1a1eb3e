//! Throwaway certificate authorities for the TLS and mutual-TLS tests:
//! an [`Authority`] made at run time, the leaf certificates it signs, and
//! the `localhost` certificate a loopback server presents.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    PublicKeyData as _,
};

/// Subject alternative names of a leaf, re-exported so that tests name
/// them without a dependency of their own.
pub use rcgen::SanType;

/// A certificate authority made for one test: its PEM certificate (what a
/// peer is told to trust) and what signs with it.
pub struct Authority {
    /// The authority's certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate an [`Authority`] signed, with its key.
pub struct Leaf {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    /// The key's SubjectPublicKeyInfo, DER (what a browser pins).
    pub spki_der: Vec<u8>,
}

impl Authority {
    /// A fresh self-signed authority named `common_name`.
    pub fn new(common_name: &str) -> Self {
        let key = KeyPair::generate().expect("a key pair");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params.self_signed(&key).expect("a self-signed CA");
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for `CN=<common_name>, O=Acme` with `sans`, signed
    /// by this authority: its PEM and its key's PEM.
    pub fn leaf(&self, common_name: &str, sans: Vec<SanType>) -> (String, String) {
        let leaf = self.sign(common_name, sans);
        (leaf.cert_pem, leaf.key_pem)
    }

    /// The certificate of a server on loopback: `localhost` and
    /// `127.0.0.1`.
    pub fn localhost(&self) -> Leaf {
        self.sign(
            "localhost",
            vec![
                SanType::DnsName("localhost".try_into().expect("a DNS name")),
                SanType::IpAddress([127, 0, 0, 1].into()),
            ],
        )
    }

    fn sign(&self, common_name: &str, sans: Vec<SanType>) -> Leaf {
        let key = KeyPair::generate().expect("a key pair");
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        dn.push(DnType::OrganizationName, "Acme");
        params.distinguished_name = dn;
        params.subject_alt_names = sans;
        let cert = params.signed_by(&key, &self.issuer).expect("a signed leaf");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            spki_der: key.subject_public_key_info(),
        }
    }
}
