//! The inactivation queues of a mount (XFS's per-CPU inodegc lists): the unlinked inodes
//! waiting for the inodegc worker, one list per CPU, and what the worker, a flush and the
//! throttle need to hand batches over. It stands below the mount's struct, which holds one;
//! the work itself ([`crate::fs::inodegc`]) stands above the operations it calls.
//!
//! An inode goes on the list of the CPU its last release ran on, as `xfs_inodegc_queue`
//! takes `this_cpu_ptr(mp->m_inodegc)`; the throttle counts that list alone, and a batch is
//! one CPU's list. With two unlinking threads on two CPUs each thread's inodes are freed in
//! batches of their own, as the kernel frees them, instead of in batches that interleave the
//! two threads at the scheduler's whim (which shapes the free-space trees differently).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fs::error::FsError;
use crate::fs::inode::Inode;
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};

/// How long a CPU's list must go without a new inode before the worker takes what is queued,
/// however few: one jiffy at the common `HZ=1000` (the kernel queues its delayed work with a
/// delay of 1, re-armed by every inode queued, as `mod_delayed_work` does).
pub const QUEUE_DELAY: Duration = Duration::from_millis(1);

/// More inodes than this on one CPU's list make the queueing thread run that list itself
/// (XFS's `XFS_INODEGC_MAX_BACKLOG`, four inode chunks).
pub const MAX_BACKLOG: usize = 4 * 64;

/// One CPU's list.
#[derive(Default)]
struct CpuList {
    /// Inodes waiting, oldest first.
    inodes: Vec<Arc<Inode>>,
    /// When the newest of them was queued (the worker's timer for this list runs from there).
    last_queued: Option<Instant>,
}

/// The lists and the worker's progress, under one lock.
#[derive(Default)]
struct State {
    /// One list per CPU (see the module docs).
    lists: Vec<CpuList>,
    /// The worker thread (a throttle in it must not wait for its own batch).
    worker: Option<std::thread::ThreadId>,
    /// Run every list without waiting for its timer (free space is low).
    urgent: bool,
    /// The list whose batch the worker is inactivating now, if any.
    in_flight: Option<usize>,
    /// The worker leaves queued inodes alone (tests and benches: a worker that cannot keep up).
    held: bool,
    /// The worker should exit (unmount, or the mount dropped).
    stop: bool,
    /// The first error the worker met, reported by the next flush.
    error: Option<FsError>,
    /// Longest any one list has been.
    high_water: usize,
    /// Times a queueing thread ran its CPU's backlog itself.
    throttled: u64,
}

impl State {
    /// Inodes on every list.
    fn queued(&self) -> usize {
        self.lists.iter().map(|l| l.inodes.len()).sum()
    }

    /// The list a batch is due on now, or when the next one falls due (`Err`), or neither
    /// (`Err(None)`: every list is empty).
    fn due(&self, now: Instant) -> Result<usize, Option<Instant>> {
        let mut next: Option<Instant> = None;
        for (i, list) in self.lists.iter().enumerate() {
            if list.inodes.is_empty() {
                continue;
            }
            match list.last_queued {
                Some(last) if !self.urgent && now < last + QUEUE_DELAY => {
                    let at = last + QUEUE_DELAY;
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
                _ => return Ok(i),
            }
        }
        Err(next)
    }
}

/// The list of the CPU this thread runs on.
fn this_cpu(lists: usize) -> usize {
    crate::trace::sys::current_cpu() as usize % lists.max(1)
}

/// What the worker thread and the mount share.
struct Shared {
    state: OrderedMutex<State>,
    /// Wakes the worker: the first inode queued, low space, a release of the hold, a stop.
    work: parking_lot::Condvar,
    /// Wakes flushes waiting for the worker's batch.
    done: parking_lot::Condvar,
}

/// The mount's inactivation queue and its worker thread.
pub struct InodeGc {
    shared: Arc<Shared>,
    thread: OrderedMutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for InodeGc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InodeGc").finish_non_exhaustive()
    }
}

/// The lock-order identity of the queue.
const QUEUE: LockId = LockId::new(LockClass::List, 0);

impl Default for InodeGc {
    fn default() -> Self {
        InodeGc::new()
    }
}

impl InodeGc {
    /// Empty lists, one per CPU of the machine, and no worker yet (mount starts it).
    pub fn new() -> InodeGc {
        // Every CPU number the kernel may report gets its own list, whatever this process's
        // affinity (CPUs 2 and 6 of 8 must not share one).
        // SAFETY: sysconf reads a system constant; it returns -1 if it cannot.
        let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        let cpus = usize::try_from(configured)
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let state = State {
            lists: (0..cpus).map(|_| CpuList::default()).collect(),
            ..State::default()
        };
        InodeGc {
            shared: Arc::new(Shared {
                state: OrderedMutex::new(QUEUE, state),
                work: parking_lot::Condvar::new(),
                done: parking_lot::Condvar::new(),
            }),
            thread: OrderedMutex::new(QUEUE, None),
        }
    }

    /// Inodes queued now, on every CPU's list.
    pub fn queued(&self) -> usize {
        self.shared.state.lock().queued()
    }

    /// The longest any one CPU's list has been since the mount (the throttle bounds it).
    pub fn high_water(&self) -> usize {
        self.shared.state.lock().high_water
    }

    /// The longest CPU list now.
    pub fn longest(&self) -> usize {
        let st = self.shared.state.lock();
        st.lists.iter().map(|l| l.inodes.len()).max().unwrap_or(0)
    }

    /// Times a queueing thread found more than [`MAX_BACKLOG`] on its CPU's list and ran
    /// them itself (XFS's `xfs_inodegc_throttle` tracepoint).
    pub fn throttled(&self) -> u64 {
        self.shared.state.lock().throttled
    }

    /// Whether inodes are queued or being inactivated by the worker.
    pub fn pending(&self) -> bool {
        let st = self.shared.state.lock();
        st.queued() > 0 || st.in_flight.is_some()
    }

    /// Hold the worker (`true`: queued inodes stay queued until a flush or the throttle) or
    /// let it go again: how a test or a bench makes the worker fall behind on purpose.
    pub fn hold_worker(&self, held: bool) {
        self.shared.state.lock().held = held;
        self.shared.work.notify_one();
    }

    /// Stop the worker thread and wait for it (unmount, after the last flush).
    pub(crate) fn stop(&self) {
        self.shared.state.lock().stop = true;
        self.shared.work.notify_one();
        let handle = self.thread.lock().take();
        if let Some(h) = handle
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }

    /// Add `ip` to this CPU's list, waking the worker as XFS queues its delayed work: every
    /// inode re-arms the list's timer, low space makes it run now. Returns the whole list for
    /// the caller to run itself when more than [`MAX_BACKLOG`] were waiting on it (the
    /// throttle), once the worker's batch in flight from the same list is done.
    pub(crate) fn push(&self, ip: Arc<Inode>, low_space: bool) -> Option<Vec<Arc<Inode>>> {
        let shared = &self.shared;
        let mut st = shared.state.lock();
        let cpu = this_cpu(st.lists.len());
        let list = &mut st.lists[cpu];
        let items = list.inodes.len();
        list.inodes.push(ip);
        list.last_queued = Some(Instant::now());
        let len = list.inodes.len();
        st.high_water = st.high_water.max(len);
        if low_space && !st.urgent {
            st.urgent = true;
            shared.work.notify_one();
        } else if items == 0 {
            shared.work.notify_one();
        }
        if items <= MAX_BACKLOG {
            return None;
        }
        st.throttled += 1;
        let list = &mut st.lists[cpu];
        list.last_queued = None;
        let backlog = std::mem::take(&mut list.inodes);
        // The backlog is newer than the worker's batch in flight from this list: its frees
        // come after that batch's, as the kernel's throttle waits for this CPU's work item.
        if st.worker != Some(std::thread::current().id()) {
            while st.in_flight == Some(cpu) {
                st.wait(&shared.done);
            }
        }
        Some(backlog)
    }

    /// Take every list for a flush once the worker's batch in flight (if any) is done, so
    /// the flush frees after it, as the lists' order says: each list oldest first, one after
    /// another. Returns the first error the worker met since the last flush with it.
    pub(crate) fn take_all(&self) -> (Vec<Arc<Inode>>, Option<FsError>) {
        let mut st = self.shared.state.lock();
        while st.in_flight.is_some() {
            st.wait(&self.shared.done);
        }
        let error = st.error.take();
        let mut all = Vec::with_capacity(st.queued());
        for list in &mut st.lists {
            list.last_queued = None;
            all.append(&mut list.inodes);
        }
        (all, error)
    }

    /// The worker's side of the queue.
    pub(crate) fn worker_side(&self) -> WorkerSide {
        WorkerSide(Arc::clone(&self.shared))
    }

    /// Keep the worker thread's handle, to stop and join it.
    pub(crate) fn set_thread(&self, handle: std::thread::JoinHandle<()>) {
        self.shared.state.lock().worker = Some(handle.thread().id());
        *self.thread.lock() = Some(handle);
    }
}

/// What the worker thread holds of the queue (not the mount: it must not keep it alive).
pub(crate) struct WorkerSide(Arc<Shared>);

impl WorkerSide {
    /// Wait for a batch to be due and take it: one CPU's whole list, once no inode was queued
    /// on it for [`QUEUE_DELAY`], or at once when free space is low. `None` when the worker
    /// should exit. The timer runs from the list's newest inode, so during an unlink storm
    /// the worker leaves the list to the throttle (see [`crate::fs::inodegc`] for why).
    pub(crate) fn next_batch(&self) -> Option<Vec<Arc<Inode>>> {
        let shared = &self.0;
        let mut st = shared.state.lock();
        let cpu = loop {
            if st.stop {
                return None;
            }
            if st.held {
                st.wait(&shared.work);
                continue;
            }
            let now = Instant::now();
            match st.due(now) {
                Ok(cpu) => break cpu,
                Err(Some(at)) => {
                    st.wait_for(&shared.work, at - now);
                }
                Err(None) => {
                    st.urgent = false;
                    st.wait(&shared.work);
                }
            }
        };
        st.in_flight = Some(cpu);
        let list = &mut st.lists[cpu];
        list.last_queued = None;
        Some(std::mem::take(&mut list.inodes))
    }

    /// The batch taken last is done; keep its first error for the next flush.
    pub(crate) fn finish(&self, result: Result<(), FsError>) {
        let mut st = self.0.state.lock();
        st.in_flight = None;
        if let Err(e) = result {
            st.error.get_or_insert(e);
        }
        self.0.done.notify_all();
    }
}

impl Drop for InodeGc {
    fn drop(&mut self) {
        // A mount dropped without unmount (a test's crash): the worker must not outlive it.
        self.stop();
    }
}
