//! The process's allocator: mimalloc, counted only while a memory
//! measurement runs.
//!
//! Why mimalloc: glibc's malloc serializes a free on the arena of the
//! thread that allocated the block, and an emission's context is built on
//! one worker and dropped on the other as often as not, so under load
//! both processes of this bench spent a tenth of their CPU waiting on
//! arena locks (`perf`: `_int_free` → `__lll_lock_wait_private` → futex).
//! Services that care about tail latency run a thread-caching allocator;
//! both sides of every comparison share this one. `--features
//! system-allocator` builds the bench on glibc's instead.
//!
//! Why counting is switched: counters shared by both worker threads,
//! written on every allocation and free, cost what no deployment pays, and
//! the more so the more an operation allocates. So counting is on only
//! inside a [`Counted`] measurement (the memory columns); every other row
//! pays one relaxed load per call. The counters are a few atomics rather
//! than `stats_alloc`, which can wrap only the system allocator in a
//! `static` on stable Rust.
#![allow(unsafe_code)] // a global allocator is an `unsafe` trait; it only delegates.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

#[cfg(not(feature = "system-allocator"))]
use mimalloc::MiMalloc as Inner;
#[cfg(feature = "system-allocator")]
use std::alloc::System as Inner;

/// The allocator's name, for the report.
#[cfg(not(feature = "system-allocator"))]
pub const NAME: &str = "mimalloc";
/// The allocator's name, for the report.
#[cfg(feature = "system-allocator")]
pub const NAME: &str = "glibc malloc";

/// How many [`Counted`] regions are open (they may nest).
static OPEN_REGIONS: AtomicUsize = AtomicUsize::new(0);

/// Running totals, written only while a region is open.
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static REALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static BYTES_ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static BYTES_DEALLOCATED: AtomicUsize = AtomicUsize::new(0);
static BYTES_REALLOCATED: AtomicIsize = AtomicIsize::new(0);

/// The process's allocator ([`Inner`]), counting while a region is open.
pub struct SwitchedCounting;

fn counting() -> bool {
    OPEN_REGIONS.load(Ordering::Relaxed) > 0
}

// SAFETY: every call is passed unchanged to `Inner`, whose own contract is
// that of `GlobalAlloc`; the counting around it touches no memory of the
// caller's.
unsafe impl GlobalAlloc for SwitchedCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES_ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { Inner.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            BYTES_DEALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { Inner.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES_ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { Inner.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            REALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            let growth = new_size as isize - layout.size() as isize;
            BYTES_REALLOCATED.fetch_add(growth, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { Inner.realloc(ptr, layout, new_size) }
    }
}

/// Totals of a [`Counted`] measurement.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Calls to `alloc` and `alloc_zeroed`.
    pub allocations: usize,
    /// Calls to `realloc`.
    pub reallocations: usize,
    /// Bytes asked for by `alloc` and `alloc_zeroed`.
    pub bytes_allocated: usize,
    /// Bytes given back by `dealloc`.
    pub bytes_deallocated: usize,
    /// Net growth of reallocated blocks (negative when they shrank).
    pub bytes_reallocated: isize,
}

impl Stats {
    fn now() -> Self {
        Stats {
            allocations: ALLOCATIONS.load(Ordering::SeqCst),
            reallocations: REALLOCATIONS.load(Ordering::SeqCst),
            bytes_allocated: BYTES_ALLOCATED.load(Ordering::SeqCst),
            bytes_deallocated: BYTES_DEALLOCATED.load(Ordering::SeqCst),
            bytes_reallocated: BYTES_REALLOCATED.load(Ordering::SeqCst),
        }
    }
}

/// A memory measurement: counts every allocation of the process (all
/// threads) from [`Counted::start`] until it is dropped.
pub struct Counted {
    start: Stats,
}

impl Counted {
    /// Switches counting on and starts the measurement.
    pub fn start() -> Self {
        OPEN_REGIONS.fetch_add(1, Ordering::SeqCst);
        Counted {
            start: Stats::now(),
        }
    }

    /// What was allocated and freed since [`Counted::start`].
    pub fn change(&self) -> Stats {
        let now = Stats::now();
        Stats {
            allocations: now.allocations - self.start.allocations,
            reallocations: now.reallocations - self.start.reallocations,
            bytes_allocated: now.bytes_allocated - self.start.bytes_allocated,
            bytes_deallocated: now.bytes_deallocated - self.start.bytes_deallocated,
            bytes_reallocated: now.bytes_reallocated - self.start.bytes_reallocated,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        OPEN_REGIONS.fetch_sub(1, Ordering::SeqCst);
    }
}
