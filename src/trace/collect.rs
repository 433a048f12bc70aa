//! The firing side of a trace session: what happens between an event's enabled flag saying
//! yes and its record sitting in the firing thread's buffer.
//!
//! This module owns the process's active-session slot, each thread's buffer ([`ThreadBuf`]:
//! its ring, its per-event counts and its histograms) and [`emit`], which the events' cold
//! emitters call. The session module ([`super::session`]) decides what a session keeps and
//! reads the buffers out; the two are apart so that the catalogue, which must call [`emit`],
//! does not import the session's configuration, which looks events up in the catalogue.
//!
//! # Why per-thread rings and not a channel
//!
//! A channel to a writer thread has one shared queue that every firing thread contends on,
//! and it is either unbounded (memory grows with a slow writer) or bounded (firing threads
//! block, changing the timing being measured, or drop events). A per-thread ring is touched by
//! its own thread only, so its lock is uncontended except for the moment a drain reads it; its
//! memory is bounded by `ring_entries_per_thread` records; nothing ever blocks on I/O while
//! tracing; and per-thread order is free. What it loses when full is the oldest records, and
//! it says so: `entries-written` minus `entries-in-buffer` is exactly what was overwritten,
//! as in the kernel. Counts and histograms do not go through the rings at all, so they stay
//! exact however small the rings are. Records are never torn: each is a fixed-size `Copy`
//! value written and read under its ring's lock, and output lines are rendered at the end.
//!
//! Memory: a ring grows only as its thread fires (a record is at most 224 bytes), so the bound
//! is `threads that fired x min(events fired, ring_entries_per_thread) x 224` bytes.
//!
//! # Races with `finish`
//!
//! An event fired while `finish` runs is either recorded completely before its thread's
//! buffer is closed, or not at all (its thread finds the buffer closed or the session gone).
//! Every recorded event appears in the counts, histograms and, unless overwritten, output.
//! An event that cannot reach its thread's buffer while a session is active (fired during
//! thread-local teardown) is counted in [`TraceSummary::dropped`].
//!
//! Lock order: the active-session slot, then a session's thread list, then a thread buffer.
//!
//! [`TraceSummary::dropped`]: super::TraceSummary::dropped

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::hist::Log2Hist;
use super::ring::{Record, Ring, TaskInfo};
use super::schema::{EventDef, MAX_FIELDS, Value};
use super::sys;

/// Most fields one histogram can be grouped by.
pub const MAX_GROUP_FIELDS: usize = 4;

/// How one histogram spec reads an event's values.
#[derive(Debug, Clone, Copy)]
pub(super) struct HistPlan {
    pub(super) spec: usize,
    pub(super) field: usize,
    /// Indices of the group fields; the first `n_groups` entries are used.
    pub(super) groups: [usize; MAX_GROUP_FIELDS],
    pub(super) n_groups: usize,
}

/// The values of a record's group fields (unused slots stay [`Value::EMPTY`]), the key of
/// one histogram of a grouped spec. Fixed-size, so filing a record never allocates a key.
pub(super) type GroupKey = [Value; MAX_GROUP_FIELDS];

/// What to do with one event while the session runs.
#[derive(Debug, Default)]
pub(super) struct EventPlan {
    pub(super) record: bool,
    pub(super) hists: Vec<HistPlan>,
}

/// The part of a session that firing threads see.
///
/// The plans sit behind a read-write lock so a live session can change what it records and
/// which histograms it keeps ([`Session::set_recorded`], [`Session::add_histogram`]); a
/// firing thread takes it shared, after its event's enabled flag already said yes.
///
/// [`Session::set_recorded`]: super::Session::set_recorded
/// [`Session::add_histogram`]: super::Session::add_histogram
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) id: u64,
    pub(super) plans: RwLock<Vec<EventPlan>>,
    pub(super) ring_cap: usize,
    /// Number of declared events, the length of each thread's counts. The session fills it in
    /// from the registry, so this module needs no lookup over the catalogue.
    pub(super) n_events: usize,
    pub(super) threads: Mutex<Vec<Arc<ThreadBuf>>>,
    pub(super) dropped: AtomicU64,
}

/// One thread's share of a session.
#[derive(Debug)]
pub(super) struct ThreadBuf {
    pub(super) task: TaskInfo,
    pub(super) state: Mutex<ThreadState>,
}

/// One histogram spec's histograms, one per group key (a single all-empty key when ungrouped).
pub(super) type GroupedHists = HashMap<GroupKey, Log2Hist>;

/// What one thread has filed so far; the session reads it out under the buffer's lock.
#[derive(Debug)]
pub(super) struct ThreadState {
    pub(super) closed: bool,
    pub(super) ring: Ring<Record>,
    pub(super) written: u64,
    pub(super) consumed: u64,
    pub(super) counts: Vec<u64>,
    pub(super) hists: Vec<GroupedHists>,
}

impl ThreadBuf {
    fn new(shared: &Shared) -> Self {
        ThreadBuf {
            task: TaskInfo {
                comm: sys::comm(),
                tid: sys::gettid(),
            },
            state: Mutex::new(ThreadState {
                closed: false,
                ring: Ring::new(shared.ring_cap),
                written: 0,
                consumed: 0,
                counts: vec![0; shared.n_events],
                hists: Vec::new(),
            }),
        }
    }

    fn record(&self, shared: &Shared, rec: Record) {
        let plans = shared.plans.read();
        let Some(plan) = plans.get(rec.event.id()) else {
            return;
        };
        let mut st = self.state.lock();
        if st.closed {
            return;
        }
        st.counts[rec.event.id()] += 1;
        if plan.record {
            st.ring.push(rec);
            st.written += 1;
        }
        for h in &plan.hists {
            let Some(v) = rec.values[h.field].as_u64() else {
                continue;
            };
            if st.hists.len() <= h.spec {
                st.hists.resize_with(h.spec + 1, HashMap::new);
            }
            let mut key = [Value::EMPTY; MAX_GROUP_FIELDS];
            for (slot, &g) in key.iter_mut().zip(&h.groups[..h.n_groups]) {
                *slot = rec.values[g];
            }
            st.hists[h.spec].entry(key).or_default().record(v);
        }
    }
}

/// The process's one active session, installed by `start` and taken out by `close`.
pub(super) static ACTIVE: Mutex<Option<Arc<Shared>>> = Mutex::new(None);
/// The active session's id, 0 when none: the lock-free check a firing thread makes first.
pub(super) static ACTIVE_ID: AtomicU64 = AtomicU64::new(0);
/// The id the next session gets, so a thread can tell its buffer belongs to an older one.
pub(super) static NEXT_ID: AtomicU64 = AtomicU64::new(1);

struct Local {
    shared: Arc<Shared>,
    buf: Arc<ThreadBuf>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// File a fired event with the active session (called by the events' cold emitters).
#[cold]
#[inline(never)]
pub(crate) fn emit(event: &'static EventDef, values: [Value; MAX_FIELDS]) {
    let rec = Record {
        ts_ns: sys::monotonic_ns(),
        cpu: sys::current_cpu(),
        event,
        values,
    };
    let delivered = LOCAL
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut local) => {
                deliver(&mut local, rec);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !delivered && let Some(s) = ACTIVE.lock().as_ref() {
        s.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

fn deliver(local: &mut Option<Local>, rec: Record) {
    let id = ACTIVE_ID.load(Ordering::Acquire);
    if id == 0 {
        return;
    }
    if local.as_ref().is_none_or(|l| l.shared.id != id) {
        *local = register(id);
    }
    if let Some(l) = local.as_ref() {
        l.buf.record(&l.shared, rec);
    }
}

/// Give the calling thread a buffer in session `id`, if that session is still active.
fn register(id: u64) -> Option<Local> {
    let active = ACTIVE.lock();
    let shared = active.as_ref().filter(|s| s.id == id)?.clone();
    let buf = Arc::new(ThreadBuf::new(&shared));
    shared.threads.lock().push(Arc::clone(&buf));
    Some(Local { shared, buf })
}
