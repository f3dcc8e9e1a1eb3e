//! The pure core of the session table: which sessions are open under
//! which key, whose they are, when each was last used, and which places
//! are booked for a session still starting. No I/O, no clock, no lock:
//! the caller passes the time and holds the lock (module `sessions`), so
//! every rule is tested here over every case.
//!
//! Rules, one each:
//! - a session is bound to the owner that opened it: another owner's
//!   request for its key is refused ([`Error::SessionNotOwned`]);
//! - at most `max` places, at most `per_owner` of them one owner's; a
//!   booked place counts, so concurrent slow starts cannot overrun either
//!   bound;
//! - past a bound, [`WhenFull::Displace`] takes the place of the least
//!   recently used session nobody is using (the owner's own past its
//!   quota, anyone's past the table's bound), which the caller ends;
//!   [`WhenFull::Refuse`] refuses; a session in use is never displaced;
//! - a session idle for the idle time (or ended on its own) and not in
//!   use is taken out for its end; a booked place never is.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Error;

/// What a session must tell the table: whether a request is using it
/// right now (such a session is never displaced nor idled out), and
/// whether it ended on its own (taken out with the idle ones).
pub trait InUse {
    /// Whether a request holds the session at this moment.
    fn in_use(&self) -> bool {
        false
    }

    /// Whether the session ended by itself (its upstream went away): the
    /// reaper takes it out at once, as an idle one.
    fn ended(&self) -> bool {
        false
    }
}

/// What a new session does when it would pass a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Take the place of the least recently used session nobody uses
    /// (the gateway: nothing is lost, an evicted conversation's next
    /// request is governed whole).
    Displace,
    /// Refuse the new session (the MCP proxy's `503`, the hooks daemon's
    /// fail-closed block).
    Refuse,
}

/// A table's bounds and its policy past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most places (open and booked) at once.
    pub max: usize,
    /// The most places one owner may hold.
    pub per_owner: usize,
    /// What a new session past a bound does.
    pub when_full: WhenFull,
}

impl Bounds {
    /// At most `max` places, `per_owner` of them one owner's (both at
    /// least one), past them `when_full`.
    pub fn new(max: usize, per_owner: usize, when_full: WhenFull) -> Self {
        Self {
            max: max.max(1),
            per_owner: per_owner.max(1),
            when_full,
        }
    }
}

/// One place: a session, or a booking for one still starting.
struct Place<S, O> {
    session: Option<Arc<S>>,
    owner: O,
    last_active: Instant,
}

/// What a key names for an owner.
pub enum Found<S> {
    /// The open session, its last use now.
    Open(Arc<S>),
    /// A place booked for a session still starting.
    Starting,
    /// Nothing.
    Absent,
}

/// The table: sessions by key, each with its owner.
pub struct Table<S, O> {
    places: HashMap<String, Place<S, O>>,
    per_owner: HashMap<O, usize>,
    bounds: Bounds,
}

impl<S: InUse, O: Clone + Eq + Hash> Table<S, O> {
    /// An empty table within `bounds`.
    pub fn new(bounds: Bounds) -> Self {
        Self {
            places: HashMap::new(),
            per_owner: HashMap::new(),
            bounds,
        }
    }

    /// The table's bounds.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// How many places are taken (open and booked).
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether no place is taken.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// How many places `owner` holds.
    pub fn owned_by(&self, owner: &O) -> usize {
        self.per_owner.get(owner).copied().unwrap_or(0)
    }

    /// Whether `key` names a place (open or booked).
    pub fn contains(&self, key: &str) -> bool {
        self.places.contains_key(key)
    }

    /// The open session `key` (whoever's), without marking it used.
    pub fn peek(&self, key: &str) -> Option<&Arc<S>> {
        self.places.get(key)?.session.as_ref()
    }

    /// What `key` names for `owner` at `now` (an open one's last use is
    /// now); another owner's place is refused.
    pub fn find(&mut self, key: &str, owner: &O, now: Instant) -> Result<Found<S>, Error> {
        let Some(place) = self.places.get_mut(key) else {
            return Ok(Found::Absent);
        };
        if place.owner != *owner {
            return Err(Error::SessionNotOwned);
        }
        Ok(match &place.session {
            Some(s) => {
                place.last_active = now;
                Found::Open(s.clone())
            }
            None => Found::Starting,
        })
    }

    /// Marks session `key` used at `now`.
    pub fn touch(&mut self, key: &str, now: Instant) {
        if let Some(place) = self.places.get_mut(key) {
            place.last_active = now;
        }
    }

    /// Books a place under `key` (absent) for `owner`'s session still
    /// starting, making room by the bounds' policy; the sessions
    /// displaced are returned for their end.
    pub fn book(&mut self, key: &str, owner: O, now: Instant) -> Result<Vec<Arc<S>>, Error> {
        debug_assert!(!self.places.contains_key(key), "booked over a place");
        let displaced = self.make_room(&owner)?;
        *self.per_owner.entry(owner.clone()).or_default() += 1;
        self.places.insert(
            key.to_owned(),
            Place {
                session: None,
                owner,
                last_active: now,
            },
        );
        Ok(displaced)
    }

    /// Puts the started `session` in the place booked under `key`;
    /// `false` (and the session not kept) when the booking is gone.
    pub fn fill(&mut self, key: &str, session: Arc<S>, now: Instant) -> bool {
        match self.places.get_mut(key) {
            Some(place) if place.session.is_none() => {
                place.session = Some(session);
                place.last_active = now;
                true
            }
            _ => false,
        }
    }

    /// Lets go of the place booked under `key` (its start failed).
    pub fn cancel(&mut self, key: &str) {
        if self.places.get(key).is_some_and(|p| p.session.is_none()) {
            self.take(key);
        }
    }

    /// Opens `session` under `key` (absent) for `owner` at once: a booking
    /// filled. The sessions displaced are returned for their end.
    pub fn insert(
        &mut self,
        key: &str,
        owner: O,
        session: Arc<S>,
        now: Instant,
    ) -> Result<Vec<Arc<S>>, Error> {
        let displaced = self.book(key, owner, now)?;
        self.fill(key, session, now);
        Ok(displaced)
    }

    /// Takes the place `key` out (open or booked); its session, if open.
    pub fn remove(&mut self, key: &str) -> Option<Arc<S>> {
        self.take(key).and_then(|p| p.session)
    }

    /// Takes session `key` out when `owner` holds it; another owner's is
    /// refused and stays.
    pub fn remove_owned(&mut self, key: &str, owner: &O) -> Result<Option<Arc<S>>, Error> {
        match self.places.get(key) {
            Some(p) if p.owner != *owner => Err(Error::SessionNotOwned),
            Some(_) => Ok(self.remove(key)),
            None => Ok(None),
        }
    }

    /// Takes session `key` out when it is still `session` (not replaced
    /// since); whether it was.
    pub fn remove_if_same(&mut self, key: &str, session: &Arc<S>) -> bool {
        let same = self
            .places
            .get(key)
            .and_then(|p| p.session.as_ref())
            .is_some_and(|s| Arc::ptr_eq(s, session));
        if same {
            self.take(key);
        }
        same
    }

    /// Takes out every open session idle for at least `idle` at `now`, or
    /// ended on its own, that nobody uses, for their end.
    pub fn take_idle(&mut self, now: Instant, idle: Duration) -> Vec<Arc<S>> {
        let keys: Vec<String> = self
            .places
            .iter()
            .filter(|(_, p)| {
                p.session.as_ref().is_some_and(|s| {
                    !s.in_use()
                        && (s.ended() || now.saturating_duration_since(p.last_active) >= idle)
                })
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| self.remove(k)).collect()
    }

    /// Takes out every place, for the sessions' end.
    pub fn take_all(&mut self) -> Vec<Arc<S>> {
        self.per_owner.clear();
        self.places.drain().filter_map(|(_, p)| p.session).collect()
    }

    fn take(&mut self, key: &str) -> Option<Place<S, O>> {
        let place = self.places.remove(key)?;
        if let Some(n) = self.per_owner.get_mut(&place.owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(&place.owner);
            }
        }
        Some(place)
    }

    /// Room for one more place of `owner`: displaced sessions, or why not.
    fn make_room(&mut self, owner: &O) -> Result<Vec<Arc<S>>, Error> {
        let mut displaced = Vec::new();
        if self.owned_by(owner) >= self.bounds.per_owner {
            let quota = Error::SessionQuota(self.bounds.per_owner);
            displaced.push(self.displace(Some(owner)).ok_or(quota)?);
        }
        if self.places.len() >= self.bounds.max {
            let full = Error::SessionsFull(self.bounds.max);
            displaced.push(self.displace(None).ok_or(full)?);
        }
        Ok(displaced)
    }

    /// Takes out the least recently used open session nobody uses (of
    /// `owner`'s, when given), when the policy displaces.
    fn displace(&mut self, owner: Option<&O>) -> Option<Arc<S>> {
        if self.bounds.when_full == WhenFull::Refuse {
            return None;
        }
        let key = self
            .places
            .iter()
            .filter(|(_, p)| {
                owner.is_none_or(|o| p.owner == *o)
                    && p.session.as_ref().is_some_and(|s| !s.in_use())
            })
            .min_by_key(|(_, p)| p.last_active)
            .map(|(k, _)| k.clone())?;
        self.remove(&key)
    }
}
