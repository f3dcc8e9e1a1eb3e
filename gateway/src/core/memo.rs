//! What a conversation's chain decided for each entry it governed,
//! content-addressed: the proof that lets a replayed entry skip its
//! point without trusting anything else the gateway remembers.
//!
//! An entry's address is a chain digest: the SHA-256 of the address of
//! the entry before it and the entry's own digest (`transcript::digest`,
//! the entry as the client sent it). The same text at another place, in
//! another history, or after a changed entry has another address, so a
//! hit proves that this exact entry, after this exact history, was
//! governed in this conversation — and says what came of it: released as
//! sent, rewritten (the rewrite goes upstream again), or denied (the
//! request is refused again). A miss proves nothing, and the entry is
//! governed now: after a restart, an idle-out, on another replica or for
//! a history the client made up, every entry misses.
//!
//! Bounded: at most [`MAX_MEMO`] decisions per conversation, the oldest
//! forgotten first (a forgotten entry is governed again, never trusted).

use std::collections::{HashMap, VecDeque};

use hookwire::InterceptionPoint;
use sha2::{Digest, Sha256};

use crate::api::Rewrite;

/// SHA-256 of an entry as the client sent it.
pub(crate) type EntryDigest = [u8; 32];

/// How many decisions one conversation remembers.
pub const MAX_MEMO: usize = 4096;

/// What the chain decided for one entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decided {
    /// Released as the client sent it.
    Released,
    /// Rewritten: this goes upstream instead.
    Rewritten(Rewrite),
    /// Denied: a request carrying the entry is refused.
    Denied {
        /// Where.
        point: InterceptionPoint,
        /// The combined verdict's machine reason.
        reason: String,
        /// Its message, bounded (`hookwire::notice_message`).
        message: Option<String>,
    },
}

/// The addresses of a request's entries (see the module docs): the chain
/// starts from `origin` (the answer id a request continues, or nothing).
pub(crate) fn addresses(origin: Option<&str>, digests: &[EntryDigest]) -> Vec<EntryDigest> {
    let mut prev: EntryDigest = match origin {
        Some(id) => Sha256::new()
            .chain_update(b"continues:")
            .chain_update(id.as_bytes())
            .finalize()
            .into(),
        None => [0; 32],
    };
    digests
        .iter()
        .map(|d| {
            prev = Sha256::new()
                .chain_update(prev)
                .chain_update(d)
                .finalize()
                .into();
            prev
        })
        .collect()
}

/// One conversation's decisions by address.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    by_address: HashMap<EntryDigest, Decided>,
    order: VecDeque<EntryDigest>,
}

impl Memo {
    /// What was decided for the entry at `address`, if remembered.
    pub(crate) fn get(&self, address: &EntryDigest) -> Option<&Decided> {
        self.by_address.get(address)
    }

    /// Remembers `decided` for the entry at `address` (replacing what a
    /// retry decided before; the oldest forgotten past [`MAX_MEMO`]).
    pub(crate) fn put(&mut self, address: EntryDigest, decided: Decided) {
        if self.by_address.insert(address, decided).is_some() {
            return;
        }
        self.order.push_back(address);
        if self.order.len() > MAX_MEMO
            && let Some(oldest) = self.order.pop_front()
        {
            self.by_address.remove(&oldest);
        }
    }

    /// How many decisions are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_address.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_depends_on_the_whole_history_before_it() {
        let a = [1; 32];
        let b = [2; 32];
        let ab = addresses(None, &[a, b]);
        assert_eq!(ab, addresses(None, &[a, b]));
        assert_eq!(ab[0], addresses(None, &[a])[0]);
        let cb = addresses(None, &[[3; 32], b]);
        assert_ne!(ab[1], cb[1], "the same entry after another history");
        let ba = addresses(None, &[b, a]);
        assert_ne!(ab[1], ba[0]);
        assert_ne!(ab[0], addresses(Some("resp_1"), &[a])[0]);
        assert_ne!(
            addresses(Some("resp_1"), &[a])[0],
            addresses(Some("resp_2"), &[a])[0]
        );
    }

    #[test]
    fn the_memo_is_bounded_oldest_first_and_a_retry_replaces() {
        let mut m = Memo::default();
        for i in 0..MAX_MEMO + 3 {
            let mut k = [0; 32];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            m.put(k, Decided::Released);
        }
        assert_eq!(m.len(), MAX_MEMO);
        assert_eq!(m.order.len(), MAX_MEMO);
        assert_eq!(m.get(&[0; 32]), None, "the oldest forgotten");
        let mut last = [0; 32];
        last[..8].copy_from_slice(&((MAX_MEMO + 2) as u64).to_le_bytes());
        m.put(last, Decided::Rewritten(Rewrite::Text("x".into())));
        assert_eq!(m.len(), MAX_MEMO);
        assert_eq!(
            m.get(&last),
            Some(&Decided::Rewritten(Rewrite::Text("x".into())))
        );
    }
}
