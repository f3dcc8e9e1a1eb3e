//! Who an agent session belongs to: the principal whose credential
//! opened it. Only the same principal's hook events may touch the
//! session, and only its model requests may join it in the gateway of the
//! same process (module `shared`). A leaf: the table, the core and the
//! routes all name it.

/// The principal an agent session is bound to: an opaque 32-byte
/// identity (the gateway's is a SHA-256 of a client's name or of a
/// credential), so that the hooks and the gateway compare owners without
/// either learning the other's credentials.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner([u8; 32]);

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == Self::TOKEN_HOLDER {
            f.write_str("Owner(token holder)")
        } else {
            f.write_str("Owner(..)")
        }
    }
}

impl Owner {
    /// The holder of the daemon's own token (or a Unix socket's owner):
    /// the one principal of a daemon that has no clients. No SHA-256 a
    /// caller can make is all zeros, so no other owner is ever this one.
    pub const TOKEN_HOLDER: Self = Self([0; 32]);

    /// The owner identified by `id` (a SHA-256 of the principal).
    pub const fn new(id: [u8; 32]) -> Self {
        Self(id)
    }

    /// Whether this is [`Owner::TOKEN_HOLDER`], a principal with no
    /// identity on the model route.
    pub fn is_token_holder(&self) -> bool {
        *self == Self::TOKEN_HOLDER
    }
}
