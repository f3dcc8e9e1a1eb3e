//! The evaluation workers: decisions run on a fixed set of threads, and the
//! caller's answer arrives at the bound whatever the evaluation does.
//!
//! A caller hands its evaluation to the pool and waits for the result or
//! for its deadline (the evaluation bound from the moment it asked),
//! whichever comes first; at the deadline it answers
//! [`Error::Bounded`] and the evaluation's result, when it comes, is
//! discarded. An evaluation stuck inside one built-in keeps its worker
//! until it returns, so the pool stays bounded: a fixed number of workers
//! and a bounded queue. When every worker is past the deadline of the
//! evaluation it runs, or the queue is full, a new evaluation is refused at
//! once with [`Error::Saturated`] instead of waiting behind them; both
//! outcomes are counted ([`BoundStatus`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::Error;

/// Most evaluation workers a pool starts (one per core below that).
pub const MAX_WORKERS: usize = 16;

/// Evaluations that may wait for a worker; more are refused.
pub const QUEUE_CAPACITY: usize = 1024;

/// What the bound did since the pool started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoundStatus {
    /// The pool's workers.
    pub workers: usize,
    /// Workers now running an evaluation past its deadline (their result
    /// will be discarded).
    pub stuck: usize,
    /// Evaluations answered with [`Error::Bounded`]: cut off at their
    /// deadline, or finished past it.
    pub cut_off: u64,
    /// Evaluations refused with [`Error::Saturated`]: every worker stuck,
    /// or the queue full.
    pub refused: u64,
}

/// One evaluation handed to a worker.
struct Job {
    /// When the caller stops waiting (relative to the pool's epoch).
    deadline: Instant,
    run: Box<dyn FnOnce() + Send>,
}

/// A worker's state: the deadline of the evaluation it runs, in
/// nanoseconds since the pool's epoch, or 0 when idle.
#[derive(Default)]
struct Slot(AtomicU64);

struct Shared {
    epoch: Instant,
    slots: Vec<Slot>,
    cut_off: AtomicU64,
    refused: AtomicU64,
}

impl Shared {
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn stuck(&self, now: Instant) -> usize {
        let now = self.nanos(now);
        self.slots
            .iter()
            .filter(|slot| {
                let deadline = slot.0.load(Ordering::Acquire);
                deadline != 0 && deadline < now
            })
            .count()
    }
}

/// A fixed pool of evaluation threads with a bounded queue.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    jobs: SyncSender<Job>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.shared.slots.len())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Starts `workers` threads (at least one); they end when the pool is
    /// dropped and their current evaluation returns.
    pub(crate) fn start(workers: usize) -> Result<Self, Error> {
        let workers = workers.clamp(1, MAX_WORKERS);
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            slots: (0..workers).map(|_| Slot::default()).collect(),
            cut_off: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE_CAPACITY);
        let queue = Arc::new(Mutex::new(queue));
        for index in 0..workers {
            let shared = Arc::clone(&shared);
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("hookwire-policy-eval-{index}"))
                .spawn(move || work(&shared, index, &queue))
                .map_err(|e| {
                    Error::Evaluation(format!("cannot start an evaluation worker: {e}"))
                })?;
        }
        Ok(Self { shared, jobs })
    }

    /// One worker per core, up to [`MAX_WORKERS`].
    pub(crate) fn per_core() -> Result<Self, Error> {
        Self::start(thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// Runs `evaluate` on a worker and answers by `limit` from now: its
    /// result, [`Error::Bounded`] at the deadline (or when it finished past
    /// it), or [`Error::Saturated`] when no worker can take it.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        limit: Duration,
        evaluate: impl FnOnce() -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let now = Instant::now();
        let deadline = now + limit;
        let workers = self.shared.slots.len();
        if self.shared.stuck(now) == workers {
            return Err(self.refuse(Error::Saturated {
                workers,
                why: "every worker is still running an evaluation past its bound",
            }));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let run = Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(evaluate))
                .unwrap_or_else(|_| Err(Error::Evaluation("the policy engine panicked".into())));
            // Finished past the deadline: never a verdict.
            let result = if Instant::now() > deadline {
                Err(Error::Bounded { limit })
            } else {
                result
            };
            let _ = tx.send(result);
        });
        match self.jobs.try_send(Job { deadline, run }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(self.refuse(Error::Saturated {
                    workers,
                    why: "the evaluation queue is full",
                }));
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err(Error::Evaluation("the evaluation workers ended".into()));
            }
        }
        let answer = tokio::time::timeout_at(deadline.into(), rx).await;
        let result = match answer {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(Error::Bounded { limit }),
            Err(_) => Err(Error::Bounded { limit }),
        };
        if matches!(result, Err(Error::Bounded { .. })) {
            self.shared.cut_off.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn refuse(&self, error: Error) -> Error {
        self.shared.refused.fetch_add(1, Ordering::Relaxed);
        error
    }

    /// The counters and the workers stuck now.
    pub(crate) fn status(&self) -> BoundStatus {
        BoundStatus {
            workers: self.shared.slots.len(),
            stuck: self.shared.stuck(Instant::now()),
            cut_off: self.shared.cut_off.load(Ordering::Relaxed),
            refused: self.shared.refused.load(Ordering::Relaxed),
        }
    }
}

/// A worker: takes jobs until the pool is dropped; a job whose caller has
/// already given up is skipped.
fn work(shared: &Shared, index: usize, queue: &Mutex<Receiver<Job>>) {
    let Some(slot) = shared.slots.get(index) else {
        return;
    };
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else {
            return;
        };
        // The caller's timer already fired (it answered and counted it).
        if Instant::now() >= job.deadline {
            continue;
        }
        slot.0.store(shared.nanos(job.deadline), Ordering::Release);
        (job.run)();
        slot.0.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stuck_worker_is_answered_at_the_bound_then_refuses_until_it_returns() {
        let pool = Pool::start(1).unwrap();
        let (release, blocked) = mpsc::channel::<()>();
        let (finished, done) = mpsc::channel::<()>();
        let limit = Duration::from_millis(20);
        let err = pool
            .run(limit, move || {
                let _ = blocked.recv();
                let _ = finished.send(());
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Bounded { .. }), "{err}");
        // The one worker is still inside the first evaluation, past its
        // deadline: a new one is refused at once, not queued.
        let err = pool.run(limit, || Ok(())).await.unwrap_err();
        assert!(matches!(err, Error::Saturated { workers: 1, .. }), "{err}");
        assert_eq!(pool.status().stuck, 1);
        release.send(()).unwrap();
        done.recv_timeout(Duration::from_secs(10)).unwrap();
        // The worker clears its slot right after; a generous bound on
        // attempts, each yielding.
        let mut answered = None;
        for _ in 0..100_000 {
            match pool.run(Duration::from_secs(5), || Ok(7)).await {
                Ok(v) => {
                    answered = Some(v);
                    break;
                }
                Err(Error::Saturated { .. }) => tokio::task::yield_now().await,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(answered, Some(7));
        let status = pool.status();
        assert_eq!((status.cut_off, status.stuck), (1, 0));
        assert!(status.refused >= 1);
    }

    #[tokio::test]
    async fn a_panicking_evaluation_is_an_error() {
        let pool = Pool::start(1).unwrap();
        let err = pool
            .run(Duration::from_secs(5), || -> Result<(), Error> {
                panic!("inside the engine")
            })
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Evaluation(_)), "{err}");
    }
}
