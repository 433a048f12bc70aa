//! The inactivation queue of a mount (XFS's per-CPU inodegc lists, one list here): the
//! unlinked inodes waiting for the inodegc worker, and what the worker, a flush and the
//! throttle need to hand batches over. It stands below the mount's struct, which holds one;
//! the work itself ([`crate::fs::inodegc`]) stands above the operations it calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fs::error::FsError;
use crate::fs::inode::Inode;
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};

/// How long the queue must go without a new inode before the worker takes what is queued,
/// however few: one jiffy at the common `HZ=1000` (the kernel queues its delayed work with a
/// delay of 1, re-armed by every inode queued, as `mod_delayed_work` does).
pub const QUEUE_DELAY: Duration = Duration::from_millis(1);

/// More queued inodes than this make the queueing thread run the queue itself (XFS's
/// `XFS_INODEGC_MAX_BACKLOG`, four inode chunks).
pub const MAX_BACKLOG: usize = 4 * 64;

/// The queue and the worker's progress, under one list lock.
#[derive(Default)]
struct State {
    /// Inodes waiting, oldest first.
    queue: Vec<Arc<Inode>>,
    /// When the newest of them was queued (the worker's timer runs from there).
    last_queued: Option<Instant>,
    /// The worker thread (a throttle in it must not wait for its own batch).
    worker: Option<std::thread::ThreadId>,
    /// Run the queue without waiting for the timer (free space is low).
    urgent: bool,
    /// Batches the worker has taken; while it has finished fewer, the last is in flight.
    taken: u64,
    /// Batches the worker has finished.
    finished: u64,
    /// The worker leaves queued inodes alone (tests and benches: a worker that cannot keep up).
    held: bool,
    /// The worker should exit (unmount, or the mount dropped).
    stop: bool,
    /// The first error the worker met, reported by the next flush.
    error: Option<FsError>,
    /// Most inodes ever queued at once.
    high_water: usize,
    /// Times a queueing thread ran the backlog itself.
    throttled: u64,
}

impl State {
    /// The worker is inactivating a batch (it has taken one it has not finished).
    fn busy(&self) -> bool {
        self.finished < self.taken
    }
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
    /// An empty queue with no worker yet (mount starts it).
    pub fn new() -> InodeGc {
        InodeGc {
            shared: Arc::new(Shared {
                state: OrderedMutex::new(QUEUE, State::default()),
                work: parking_lot::Condvar::new(),
                done: parking_lot::Condvar::new(),
            }),
            thread: OrderedMutex::new(QUEUE, None),
        }
    }

    /// Inodes queued now.
    pub fn queued(&self) -> usize {
        self.shared.state.lock().queue.len()
    }

    /// Most inodes queued at once since the mount.
    pub fn high_water(&self) -> usize {
        self.shared.state.lock().high_water
    }

    /// Times a queueing thread found more than [`MAX_BACKLOG`] queued and ran them itself
    /// (XFS's `xfs_inodegc_throttle` tracepoint).
    pub fn throttled(&self) -> u64 {
        self.shared.state.lock().throttled
    }

    /// Whether inodes are queued or being inactivated by the worker.
    pub fn pending(&self) -> bool {
        let st = self.shared.state.lock();
        !st.queue.is_empty() || st.busy()
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
    /// Add `ip` to the queue, waking the worker as XFS queues its delayed work: every inode
    /// re-arms its timer, low space makes it run now. Returns the whole queue for the caller
    /// to run itself when more than [`MAX_BACKLOG`] were waiting (the throttle), once the
    /// worker's batch in flight is done.
    pub(crate) fn push(&self, ip: Arc<Inode>, low_space: bool) -> Option<Vec<Arc<Inode>>> {
        let shared = &self.shared;
        let mut st = shared.state.lock();
        let items = st.queue.len();
        st.queue.push(ip);
        st.high_water = st.high_water.max(st.queue.len());
        st.last_queued = Some(Instant::now());
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
        st.last_queued = None;
        let backlog = std::mem::take(&mut st.queue);
        // The backlog is newer than the worker's batch in flight: its frees come after that
        // batch's, as the kernel's throttle waits for its worker to run the list.
        if st.worker != Some(std::thread::current().id()) {
            while st.busy() {
                st.wait(&shared.done);
            }
        }
        Some(backlog)
    }

    /// Take the whole queue for a flush once the worker's batch in flight (if any) is done,
    /// so the flush frees after it, as the queue's order says. Returns the first error the
    /// worker met since the last flush with it.
    pub(crate) fn take_all(&self) -> (Vec<Arc<Inode>>, Option<FsError>) {
        let mut st = self.shared.state.lock();
        while st.busy() {
            st.wait(&self.shared.done);
        }
        st.last_queued = None;
        let error = st.error.take();
        (std::mem::take(&mut st.queue), error)
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
    /// Wait for a batch to be due and take it: the whole queue, once no inode was queued for
    /// [`QUEUE_DELAY`] or at once when free space is low. `None` when the worker should exit.
    /// The timer runs from the newest inode, so during an unlink storm the worker leaves the
    /// queue to the throttle (see [`crate::fs::inodegc`] for why).
    pub(crate) fn next_batch(&self) -> Option<Vec<Arc<Inode>>> {
        let shared = &self.0;
        let mut st = shared.state.lock();
        loop {
            if st.stop {
                return None;
            }
            if st.queue.is_empty() || st.held {
                st.wait(&shared.work);
                continue;
            }
            if !st.urgent
                && let Some(last) = st.last_queued
            {
                let due = last + QUEUE_DELAY;
                let now = Instant::now();
                if now < due {
                    st.wait_for(&shared.work, due - now);
                    continue;
                }
            }
            break;
        }
        st.urgent = false;
        st.taken += 1;
        st.last_queued = None;
        Some(std::mem::take(&mut st.queue))
    }

    /// The batch taken last is done; keep its first error for the next flush.
    pub(crate) fn finish(&self, result: Result<(), FsError>) {
        let mut st = self.0.state.lock();
        st.finished += 1;
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
