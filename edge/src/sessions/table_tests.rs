//! The session table over every case: its pure core (ownership, both
//! bounds under both policies, sessions in use, bookings, idle-out) and
//! the async layer (held from the moment a request enters, displaced and
//! idle sessions ended, a start that outlived its booking ended).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Bounds, EdgeSession, Ending, Found, InUse, Sessions, Table, WhenFull};
use crate::Error;

/// A session that says whether it is in use and records its end.
#[derive(Default)]
struct S {
    name: &'static str,
    busy: AtomicBool,
    gone: AtomicBool,
    ended: Mutex<Option<Ending>>,
}

impl InUse for S {
    fn in_use(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    fn ended(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }
}

impl EdgeSession for S {
    async fn end(self: Arc<Self>, why: Ending) {
        *self.ended.lock().unwrap() = Some(why);
    }
}

fn s(name: &'static str) -> Arc<S> {
    Arc::new(S {
        name,
        ..S::default()
    })
}

fn names(v: &[Arc<S>]) -> Vec<&'static str> {
    v.iter().map(|s| s.name).collect()
}

const A: u8 = 1;
const B: u8 = 2;

fn at(t0: Instant, ms: u64) -> Instant {
    t0 + Duration::from_millis(ms)
}

#[test]
fn a_key_is_its_owners_only() {
    let t0 = Instant::now();
    let mut t: Table<S, u8> = Table::new(Bounds::new(4, 4, WhenFull::Displace));
    t.insert("k", A, s("a"), t0).unwrap();
    assert!(matches!(t.find("k", &A, t0), Ok(Found::Open(x)) if x.name == "a"));
    assert!(matches!(t.find("k", &B, t0), Err(Error::SessionNotOwned)));
    assert!(matches!(t.find("other", &B, t0), Ok(Found::Absent)));
    assert!(matches!(
        t.remove_owned("k", &B),
        Err(Error::SessionNotOwned)
    ));
    assert!(t.contains("k"));
    assert_eq!(names(&[t.remove_owned("k", &A).unwrap().unwrap()]), ["a"]);
    assert!(t.remove_owned("k", &A).unwrap().is_none());
    assert!(t.is_empty() && t.owned_by(&A) == 0);
}

#[test]
fn past_its_quota_an_owner_displaces_its_least_recent_idle_session_or_is_refused() {
    let t0 = Instant::now();
    let mut t: Table<S, u8> = Table::new(Bounds::new(8, 2, WhenFull::Displace));
    t.insert("a1", A, s("a1"), at(t0, 0)).unwrap();
    t.insert("a2", A, s("a2"), at(t0, 1)).unwrap();
    t.insert("b1", B, s("b1"), at(t0, 0)).unwrap();
    // a1 used last: a2 is the least recent.
    t.touch("a1", at(t0, 5));
    let gone = t.insert("a3", A, s("a3"), at(t0, 6)).unwrap();
    assert_eq!(
        names(&gone),
        ["a2"],
        "only the owner's own, the least recent"
    );
    assert!(t.contains("b1") && t.owned_by(&A) == 2);
    // In use: never displaced; all in use: refused.
    t.peek("a1").unwrap().busy.store(true, Ordering::SeqCst);
    assert_eq!(
        names(&t.insert("a4", A, s("a4"), at(t0, 7)).unwrap()),
        ["a3"]
    );
    t.peek("a4").unwrap().busy.store(true, Ordering::SeqCst);
    assert!(matches!(
        t.insert("a5", A, s("a5"), at(t0, 8)),
        Err(Error::SessionQuota(2))
    ));
    assert!(t.contains("a1") && t.contains("a4") && !t.contains("a5"));

    let mut t: Table<S, u8> = Table::new(Bounds::new(8, 1, WhenFull::Refuse));
    t.insert("a1", A, s("a1"), t0).unwrap();
    assert!(matches!(
        t.insert("a2", A, s("a2"), t0),
        Err(Error::SessionQuota(1))
    ));
    assert!(t.insert("b1", B, s("b1"), t0).unwrap().is_empty());
}

#[test]
fn a_full_table_displaces_anyones_least_recent_idle_session_or_is_refused() {
    let t0 = Instant::now();
    let mut t: Table<S, u8> = Table::new(Bounds::new(2, 2, WhenFull::Displace));
    t.insert("a1", A, s("a1"), at(t0, 0)).unwrap();
    t.insert("b1", B, s("b1"), at(t0, 1)).unwrap();
    assert_eq!(
        names(&t.insert("c1", 3, s("c1"), at(t0, 2)).unwrap()),
        ["a1"]
    );
    assert_eq!(t.len(), 2);
    for k in ["b1", "c1"] {
        t.peek(k).unwrap().busy.store(true, Ordering::SeqCst);
    }
    assert!(matches!(
        t.insert("d1", 4, s("d1"), t0),
        Err(Error::SessionsFull(2))
    ));

    let mut t: Table<S, u8> = Table::new(Bounds::new(2, 2, WhenFull::Refuse));
    t.insert("a1", A, s("a1"), t0).unwrap();
    t.insert("b1", B, s("b1"), t0).unwrap();
    assert!(matches!(
        t.insert("c1", 3, s("c1"), t0),
        Err(Error::SessionsFull(2))
    ));
    // A place let go is room again.
    assert!(t.remove("a1").is_some());
    assert!(t.insert("c1", 3, s("c1"), t0).unwrap().is_empty());
}

#[test]
fn a_booked_place_counts_and_is_never_displaced_or_idled_out() {
    let t0 = Instant::now();
    let mut t: Table<S, u8> = Table::new(Bounds::new(2, 2, WhenFull::Refuse));
    // Two slow starts at once: the third is refused before it starts.
    t.book("x", A, t0).unwrap();
    t.book("y", B, t0).unwrap();
    assert!(matches!(t.book("z", 3, t0), Err(Error::SessionsFull(2))));
    assert!(matches!(t.find("x", &A, t0), Ok(Found::Starting)));
    assert!(matches!(t.find("x", &B, t0), Err(Error::SessionNotOwned)));
    // A failed start lets go of its place; a filled one is open.
    t.cancel("y");
    assert_eq!(t.len(), 1);
    assert!(t.fill("x", s("x"), t0));
    assert!(!t.fill("y", s("y"), t0), "no booking: not kept");
    assert!(!t.fill("x", s("x2"), t0), "filled already");
    assert_eq!(t.peek("x").unwrap().name, "x");
    t.cancel("x");
    assert!(t.contains("x"), "cancel lets go of bookings only");

    let mut t: Table<S, u8> = Table::new(Bounds::new(1, 1, WhenFull::Displace));
    t.book("x", A, t0).unwrap();
    assert!(matches!(t.book("y", A, t0), Err(Error::SessionQuota(1))));
    assert!(matches!(t.book("y", B, t0), Err(Error::SessionsFull(1))));
    assert!(
        t.take_idle(at(t0, 10_000), Duration::from_millis(1))
            .is_empty()
    );
    assert_eq!(t.len(), 1);
}

#[test]
fn idle_sessions_nobody_uses_are_taken_out_and_same_checks_identity() {
    let t0 = Instant::now();
    let mut t: Table<S, u8> = Table::new(Bounds::new(8, 8, WhenFull::Refuse));
    t.insert("old", A, s("old"), at(t0, 0)).unwrap();
    t.insert("busy", A, s("busy"), at(t0, 0)).unwrap();
    t.insert("new", A, s("new"), at(t0, 90)).unwrap();
    t.insert("gone", A, s("gone"), at(t0, 95)).unwrap();
    t.peek("busy").unwrap().busy.store(true, Ordering::SeqCst);
    t.peek("gone").unwrap().gone.store(true, Ordering::SeqCst);
    let mut idle = names(&t.take_idle(at(t0, 100), Duration::from_millis(50)));
    idle.sort_unstable();
    assert_eq!(idle, ["gone", "old"], "idle, or ended on its own");
    assert!(t.contains("busy") && t.contains("new") && t.owned_by(&A) == 2);
    let new = t.peek("new").unwrap().clone();
    assert!(!t.remove_if_same("new", &s("impostor")));
    assert!(t.remove_if_same("new", &new));
    assert_eq!(names(&t.take_all()), ["busy"]);
    assert_eq!(t.owned_by(&A), 0);
}

fn ended(s: &S) -> Option<Ending> {
    *s.ended.lock().unwrap()
}

#[tokio::test]
async fn a_session_is_held_from_the_moment_a_request_enters_it() {
    let t: Sessions<S, u8> = Sessions::new(
        Bounds::new(4, 1, WhenFull::Displace),
        Duration::from_secs(60),
    );
    // The hold is taken under the table's lock: marking it busy there
    // stands for an edge's owned guard.
    let hold = |s: &Arc<S>| {
        s.busy.store(true, Ordering::SeqCst);
        Some(s.clone())
    };
    let a1 = t
        .enter(
            "a1",
            A,
            || {
                Ok::<_, Error>(S {
                    name: "a1",
                    ..S::default()
                })
            },
            hold,
        )
        .await
        .unwrap();
    assert!(a1.opened && a1.held.is_some());
    let refused = t
        .enter("a2", A, || Ok::<_, Error>(S::default()), |_| None::<()>)
        .await;
    assert!(matches!(refused, Err(Error::SessionQuota(1))));
    // Let go: now a2 displaces a1, which is ended.
    a1.session.busy.store(false, Ordering::SeqCst);
    let a2 = t
        .enter(
            "a2",
            A,
            || {
                Ok::<_, Error>(S {
                    name: "a2",
                    ..S::default()
                })
            },
            |_| None::<()>,
        )
        .await
        .unwrap();
    assert_eq!(a2.displaced, 1);
    assert_eq!(ended(&a1.session), Some(Ending::Displaced));
    // Entering again finds it; another owner is refused.
    let again = t
        .enter("a2", A, || Err(Error::SessionsFull(0)), |_| None::<()>)
        .await
        .unwrap();
    assert!(!again.opened && Arc::ptr_eq(&again.session, &a2.session));
    assert!(matches!(
        t.enter("a2", B, || Ok::<_, Error>(S::default()), |_| None::<()>)
            .await,
        Err(Error::SessionNotOwned)
    ));
    // A failed open takes no place.
    assert!(
        t.enter("b1", B, || Err(Error::SessionsFull(0)), |_| None::<()>)
            .await
            .is_err()
    );
    assert_eq!(t.len(), 1);
}

#[tokio::test]
async fn the_reaper_ends_idle_sessions_and_a_start_outliving_its_booking_is_ended() {
    let t = Arc::new(Sessions::<S, u8>::new(
        Bounds::new(4, 4, WhenFull::Refuse),
        Duration::from_millis(20),
    ));
    assert_eq!(t.reap_period(), Duration::from_millis(10));
    let e = t
        .enter("a", A, || Ok::<_, Error>(S::default()), |_| None::<()>)
        .await
        .unwrap();
    let reaper = t.spawn_reaper();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ended(&e.session), Some(Ending::Idle));
    assert!(t.is_empty());
    reaper.abort();

    t.book("slow", A).await.unwrap();
    assert!(matches!(
        t.book("slow", A).await,
        Err(Error::SessionNotOwned)
    ));
    t.shutdown_all().await;
    let late = s("late");
    t.fill("slow", late.clone()).await;
    assert_eq!(ended(&late), Some(Ending::Shutdown));
    assert!(t.is_empty());
}

#[test]
fn an_owner_may_be_any_comparable_value() {
    // The MCP proxy's owners are client names.
    let t0 = Instant::now();
    let mut t: Table<S, String> = Table::new(Bounds::new(2, 1, WhenFull::Refuse));
    t.insert("k", "alice".to_owned(), s("k"), t0).unwrap();
    assert!(matches!(
        t.find("k", &"bob".to_owned(), t0),
        Err(Error::SessionNotOwned)
    ));
    assert!(matches!(
        t.insert("l", "alice".to_owned(), s("l"), t0),
        Err(Error::SessionQuota(1))
    ));
    assert_eq!(t.owned_by(&"alice".to_owned()), 1);
}
