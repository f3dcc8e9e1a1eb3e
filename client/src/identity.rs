//! Identity providers (§10.1): the function from a context to its
//! `context_identity`, declared once per host and named on every record.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use hookwire::{AgentContext, ContextLimits, InvalidContext};

use crate::error::Error;

/// The name of the default provider (§10.2), which a declaration names
/// too: `hookwire-declaration`'s.
pub use hookwire_declaration::JCS_SHA256;

/// A host-supplied identity function: returns the identity or a
/// value-free failure message.
pub type IdentityFn = dyn Fn(&AgentContext) -> Result<String, String> + Send + Sync;

/// The declared identity provider.
#[derive(Clone, Default)]
pub enum IdentityProvider {
    /// `jcs-sha256` (§10.2), the default.
    #[default]
    JcsSha256,
    /// `null`: no identity; records say so and approvals are unbound.
    Null,
    /// A named host-defined function (§10.1 name rules enforced).
    Custom {
        /// The provider's name, recorded on every record.
        name: String,
        /// The function.
        f: Arc<IdentityFn>,
    },
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().unwrap_or("null"))
    }
}

impl IdentityProvider {
    /// A custom provider, refusing names that break §10.1: not matching
    /// `^[a-z][a-z0-9_-]*$`, or starting with the reserved `jcs`.
    pub fn custom<F>(name: impl Into<String>, f: F) -> Result<Self, Error>
    where
        F: Fn(&AgentContext) -> Result<String, String> + Send + Sync + 'static,
    {
        let name = name.into();
        let mut bytes = name.bytes();
        let shape_ok = bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !shape_ok || name.starts_with("jcs") {
            return Err(Error::InvalidIdentityProviderName(name));
        }
        Ok(Self::Custom {
            name,
            f: Arc::new(f),
        })
    }

    /// The name recorded as `identity_provider` (`None` for `null`).
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::JcsSha256 => Some(JCS_SHA256),
            Self::Null => None,
            Self::Custom { name, .. } => Some(name),
        }
    }

    /// Computes the identity. A provider that fails or panics fails the
    /// emission closed as `host_error:context_invalid` (§10.1).
    pub fn compute(
        &self,
        ctx: &AgentContext,
        limits: &ContextLimits,
    ) -> Result<Option<String>, InvalidContext> {
        match self {
            Self::JcsSha256 => ctx.jcs_sha256_identity(limits).map(Some),
            Self::Null => Ok(None),
            Self::Custom { f, .. } => match std::panic::catch_unwind(AssertUnwindSafe(|| f(ctx))) {
                Ok(Ok(id)) => Ok(Some(id)),
                Ok(Err(_)) | Err(_) => Err(InvalidContext::IdentityProvider),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_names_follow_section_10_1() {
        for bad in ["", "Upper", "1x", "jcs-custom", "jcs", "a b"] {
            assert!(
                IdentityProvider::custom(bad, |_| Ok(String::new())).is_err(),
                "{bad}"
            );
        }
        for good in ["hmac-sha256-k1", "x", "a_b-9"] {
            assert!(
                IdentityProvider::custom(good, |_| Ok(String::new())).is_ok(),
                "{good}"
            );
        }
    }
}
