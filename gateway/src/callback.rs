//! Recursion protection: the callback tokens the gateway issues to its
//! interceptors.
//!
//! Every governed request gets one token, minted when the request arrives
//! and placed in the contexts of its emissions as
//! `extensions.hookwire.callback` (`{"token", "base_url", "header",
//! "depth", "expires_in_ms"}`). The host hands it only to the bindings
//! granted it, and each of those its own token derived from it
//! (`hookwire_client::callback_token_for`); only the derived tokens are
//! redeemable, each for its binding. An interceptor that wants the model
//! (an LLM judge, a summariser) calls the gateway at `base_url` with its
//! token in the `x-hookwire-callback` header: that nested request is
//! forwarded without interception, so the interceptor is not asked about
//! its own call, and the applied record names the binding. A token
//! - is 256 random bits; the table keys it by its SHA-256, never stores it;
//! - is good only while the request it was minted for is in flight (it is
//!   revoked when that request finishes), for at most `ttl`, and for at
//!   most `max_uses` nested requests;
//! - carries the nested depth (the issuing request's depth + 1); no token
//!   is minted at the depth bound, so nesting stops there.
//!
//! A token the table does not know is forged; one that was revoked, used
//! up or expired is replayed: both are refused (`401`,
//! `invalid_callback_token`). The table is bounded; the oldest entries go
//! first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hookwire_edge::token;

/// How many tokens (live or remembered as spent) the table holds at most.
pub const MAX_TOKENS: usize = 65_536;

/// The grant a redeemed token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The session the issuing request belonged to.
    pub(crate) session: String,
    /// The depth of the nested request.
    pub(crate) depth: u32,
    /// The binding the token was derived for.
    pub(crate) binding: String,
}

#[derive(Debug)]
struct Entry {
    grant: Grant,
    expires: Instant,
    uses_left: u32,
    revoked: bool,
}

type Digest32 = [u8; 32];

/// The token table; see the module docs.
#[derive(Debug)]
pub(crate) struct CallbackTokens {
    ttl: Duration,
    max_uses: u32,
    state: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<Digest32, Entry>,
    order: VecDeque<Digest32>,
}

/// A minted token: the text handed to interceptors, revoked on drop of
/// the request's guard.
#[derive(Debug)]
pub(crate) struct Minted {
    /// The request's token, for the contexts (the host derives each
    /// granted binding's own from it); not redeemable itself.
    pub(crate) token: String,
    pub(crate) depth: u32,
    digests: Vec<Digest32>,
}

impl CallbackTokens {
    pub(crate) fn new(ttl: Duration, max_uses: u32) -> Self {
        Self {
            ttl,
            max_uses: max_uses.max(1),
            state: Mutex::new(Table::default()),
        }
    }

    /// How long a token lives at most.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Mints a token for a request of `session` whose nested calls run at
    /// `depth`, redeemable as the token derived for each of `bindings`.
    /// `None` when no binding is granted one, or when the OS has no
    /// randomness to give (the request then carries no token: its
    /// interceptors cannot call back).
    pub(crate) fn mint(&self, session: &str, depth: u32, bindings: &[String]) -> Option<Minted> {
        if bindings.is_empty() {
            return None;
        }
        let token = format!("hwcb_{}", token::random_hex::<32>().ok()?);
        let mut t = self.table();
        let mut digests = Vec::with_capacity(bindings.len());
        for binding in bindings {
            let digest = token::sha256(&hookwire_client::callback_token_for(&token, binding));
            while t.order.len() >= MAX_TOKENS {
                if let Some(old) = t.order.pop_front() {
                    t.entries.remove(&old);
                }
            }
            t.entries.insert(
                digest,
                Entry {
                    grant: Grant {
                        session: session.to_owned(),
                        depth,
                        binding: binding.clone(),
                    },
                    expires: Instant::now() + self.ttl,
                    uses_left: self.max_uses,
                    revoked: false,
                },
            );
            t.order.push_back(digest);
            digests.push(digest);
        }
        Some(Minted {
            token,
            depth,
            digests,
        })
    }

    /// Redeems `token` for one nested request.
    pub(crate) fn redeem(&self, token: &str) -> Result<Grant, &'static str> {
        if token.len() != 69 || !token.starts_with("hwcb_") {
            return Err("not a token this gateway issued");
        }
        let now = Instant::now();
        let mut t = self.table();
        let Some(e) = t.entries.get_mut(&token::sha256(token)) else {
            return Err("not a token this gateway issued");
        };
        if e.revoked || e.uses_left == 0 || now >= e.expires {
            return Err(
                "the token was already spent (its request finished, it expired or it was used up)",
            );
        }
        e.uses_left -= 1;
        Ok(e.grant.clone())
    }

    /// Revokes a minted token: its request finished. The entry stays (as
    /// spent) so a replay is told apart from a forgery until it ages out.
    pub(crate) fn revoke(&self, minted: &Minted) {
        let mut t = self.table();
        for digest in &minted.digests {
            if let Some(e) = t.entries.get_mut(digest) {
                e.revoked = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge() -> Vec<String> {
        vec!["judge".to_owned()]
    }

    fn of(minted: &Minted, binding: &str) -> String {
        hookwire_client::callback_token_for(&minted.token, binding)
    }

    #[test]
    fn each_granted_binding_redeems_its_own_token_and_the_requests_is_none() {
        let tokens = CallbackTokens::new(Duration::from_secs(30), 2);
        assert!(tokens.mint("s1", 1, &[]).is_none(), "nobody to call back");
        let minted = tokens
            .mint("s1", 1, &["judge-a".to_owned(), "judge-b".to_owned()])
            .unwrap();
        assert_eq!(
            tokens.redeem(&of(&minted, "judge-a")).unwrap().binding,
            "judge-a"
        );
        assert_eq!(
            tokens.redeem(&of(&minted, "judge-b")).unwrap().binding,
            "judge-b"
        );
        assert!(tokens.redeem(&of(&minted, "bystander")).is_err());
        assert!(
            tokens.redeem(&minted.token).is_err(),
            "the request's own token is not redeemable"
        );
        tokens.revoke(&minted);
        assert!(tokens.redeem(&of(&minted, "judge-a")).is_err());
        assert!(tokens.redeem(&of(&minted, "judge-b")).is_err());
    }

    #[test]
    fn a_token_is_good_while_its_request_runs_and_never_after() {
        let tokens = CallbackTokens::new(Duration::from_secs(30), 2);
        let minted = tokens.mint("s1", 1, &judge()).unwrap();
        assert_eq!(minted.token.len(), 69);
        let grant = tokens.redeem(&of(&minted, "judge")).unwrap();
        assert_eq!(grant.session, "s1");
        assert_eq!(grant.depth, 1);
        tokens.revoke(&minted);
        let replay = tokens.redeem(&of(&minted, "judge")).unwrap_err();
        assert!(replay.contains("spent"), "{replay}");
        let mut forged = of(&minted, "judge");
        forged.replace_range(10..11, if &forged[10..11] == "0" { "1" } else { "0" });
        assert!(tokens.redeem(&forged).unwrap_err().contains("not a token"));
        assert!(tokens.redeem("sk-anything").is_err());
    }

    #[test]
    fn uses_and_lifetime_are_bounded() {
        let tokens = CallbackTokens::new(Duration::from_secs(30), 2);
        let m = tokens.mint("s", 1, &judge()).unwrap();
        let t = of(&m, "judge");
        tokens.redeem(&t).unwrap();
        tokens.redeem(&t).unwrap();
        assert!(tokens.redeem(&t).is_err(), "a third use");
        let short = CallbackTokens::new(Duration::from_millis(1), 5);
        let m = short.mint("s", 1, &judge()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(short.redeem(&of(&m, "judge")).is_err(), "expired");
    }
}
