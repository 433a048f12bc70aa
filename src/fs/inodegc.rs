//! Background inactivation (XFS's inodegc, Linux 5.15 on): an inode whose last link and last
//! open went away is queued here, and a worker thread frees its blocks and the inode later, in
//! batches, newest first.
//!
//! What the unlink leaves behind until then is an *orphan*: an allocated inode with no links
//! (the unlink's transaction is durable on its own). Its number is not free in the inode
//! B+trees, so nothing else can be given it, and the inode cache still finds it by number. A
//! crash before the worker reaches it leaves it on disk that way, and the mount after the
//! log replay frees it (`Fs::free_orphans`, docs/journal.md "Orphans"). After inactivation
//! the in-core inode stays cached, freed, until the cache's CLOCK reclaims it or a new inode
//! takes its number (XFS's reclaimable inodes and their recycling): `vnodes active` and
//! `ig reclaims` follow the in-core inode, as the kernel counts them.
//!
//! As the kernel's `xfs_inodegc_queue`:
//! - the worker runs [`QUEUE_DELAY`] after the first inode of a batch is queued (one jiffy,
//!   `mod_delayed_work(.., 1)`), or at once when more than [`QUEUE_NOW_ABOVE`] wait;
//! - it takes the whole queue and inactivates the newest first (`llist_del_all` hands over a
//!   LIFO list), so the blocks of files unlinked one after another are freed in the opposite
//!   order, which shapes the free-space trees;
//! - past [`MAX_BACKLOG`] queued inodes the unlinking thread does the work itself before it
//!   returns (the throttle: the kernel's frontend runs the queue, `xfs_inodegc_want_flush_work`),
//!   so an unlink storm cannot queue without bound;
//! - [`Fs::inodegc_flush`] empties the queue and waits for a batch in flight: unmount, freeze
//!   ([`Fs::quiesce`]), sync, and a create that ran out of space or inodes before it retries
//!   (XFS's `xfs_blockgc_free_space` flushes inodegc before giving up with ENOSPC).
//!
//! Locks: the queue's mutex is a list lock (the last rank) and is never held while an inode is
//! inactivated; inactivation itself (`Fs::inactivate`) reserves log space before it locks
//! the inode, so the worker, a throttled unlink and a flush all run it holding nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fs::Fs;
use crate::fs::error::{FsError, FsResult};
use crate::fs::inode::{Inode, InodeWrite, iflags};
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};
use crate::fs::stats::Stat;

/// How long the worker waits after the first inode of a batch is queued: one jiffy at the
/// common `HZ=1000` (the kernel queues its delayed work with a delay of 1).
pub const QUEUE_DELAY: Duration = Duration::from_millis(1);

/// More queued inodes than this start the worker at once: XFS's `inodes_per_cluster` (a
/// 16 KiB cluster of 512-byte inodes), its threshold in `xfs_inodegc_want_queue_work`.
pub const QUEUE_NOW_ABOVE: usize = 32;

/// More queued inodes than this make the queueing thread run the queue itself (XFS's
/// `XFS_INODEGC_MAX_BACKLOG`, four inode chunks).
pub const MAX_BACKLOG: usize = 4 * 64;

/// The queue and the worker's progress, under one list lock.
#[derive(Default)]
struct State {
    /// Inodes waiting, oldest first.
    queue: Vec<Arc<Inode>>,
    /// When the oldest of them was queued (the worker's timer runs from there).
    since: Option<Instant>,
    /// Run the queue without waiting for the timer (free space is low).
    urgent: bool,
    /// Batches the worker has taken; while `busy`, this one is in flight.
    taken: u64,
    /// Batches the worker has finished.
    finished: u64,
    /// The worker is inactivating a batch.
    busy: bool,
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

/// What the worker thread and the mount share.
struct Shared {
    state: OrderedMutex<State>,
    /// Wakes the worker: work queued, the queue went past [`QUEUE_NOW_ABOVE`], a flush, a stop.
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

    /// Start the worker for `fs` (mount, once the mount is assembled).
    pub(crate) fn start(fs: &Arc<Fs>) -> FsResult<()> {
        let shared = Arc::clone(&fs.inodegc.shared);
        let weak = Arc::downgrade(fs);
        let handle = crate::fs::log::ail::with_process_signals_blocked(|| {
            std::thread::Builder::new()
                .name("xfs-inodegc".into())
                .spawn(move || worker(&shared, &weak))
        })
        .map_err(|_| FsError::Invalid("could not start the inodegc worker thread"))?;
        *fs.inodegc.thread.lock() = Some(handle);
        Ok(())
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
        !st.queue.is_empty() || st.busy
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
}

impl Drop for InodeGc {
    fn drop(&mut self) {
        // A mount dropped without unmount (a test's crash): the worker must not outlive it.
        self.stop();
    }
}

/// The worker: wait for a batch to be due, take the whole queue, inactivate it newest first.
fn worker(shared: &Shared, fs: &std::sync::Weak<Fs>) {
    loop {
        let batch = {
            let mut st = shared.state.lock();
            loop {
                if st.stop {
                    return;
                }
                if st.queue.is_empty() || st.held {
                    st.wait(&shared.work);
                    continue;
                }
                if st.queue.len() <= QUEUE_NOW_ABOVE
                    && !st.urgent
                    && let Some(since) = st.since
                {
                    let due = since + QUEUE_DELAY;
                    let now = Instant::now();
                    if now < due {
                        st.wait_for(&shared.work, due - now);
                        continue;
                    }
                }
                break;
            }
            st.since = None;
            st.urgent = false;
            st.busy = true;
            st.taken += 1;
            std::mem::take(&mut st.queue)
        };
        // The mount is held only while the batch runs: the last reference may be dropped
        // here, and then the mount's drop stops this thread (which it does not join).
        let result = match fs.upgrade() {
            Some(fs) => fs.inactivate_batch(batch),
            None => Ok(()),
        };
        let mut st = shared.state.lock();
        st.busy = false;
        st.finished += 1;
        if let Err(e) = result {
            st.error.get_or_insert(e);
        }
        shared.done.notify_all();
    }
}

impl Fs {
    /// Queue `ip`, which has no links and no opens left, for inactivation (XFS's
    /// `xfs_inode_mark_reclaimable` reached from the last `iput` of an unlinked inode). Called
    /// holding no locks. Its page cache goes now, as the kernel's `evict` truncates it before
    /// the inode is queued; past [`MAX_BACKLOG`] this thread inactivates the queue itself.
    pub(crate) fn queue_inactive(&self, ip: Arc<Inode>) -> FsResult<()> {
        if !ip.set_flag(iflags::NEED_INACTIVE) {
            return Ok(());
        }
        {
            let mut w = InodeWrite::lock(Arc::clone(&ip));
            if let Some(ext) = w.ext.take() {
                crate::fs::data::drop_cache(self, &ext);
            }
        }
        // The VFS's destroy_inode (`rele`, `remove`) and XFS marking it reclaimable
        // (`reclaim`) happen at this point in the kernel; the in-core inode lives on.
        self.stats.inc(Stat::VnRele);
        self.stats.inc(Stat::VnRemove);
        self.stats.inc(Stat::VnReclaim);
        // Under 5% free, the worker runs at once: the space is wanted (as
        // xfs_inodegc_want_queue_work checks m_low_space[XFS_LOWSP_5_PCNT]).
        let low_space = self.fdblocks.load(std::sync::atomic::Ordering::Relaxed)
            < (self.geo.dblocks / 20) as i64;
        let shared = &self.inodegc.shared;
        let backlog = {
            let mut st = shared.state.lock();
            let items = st.queue.len();
            st.queue.push(ip);
            st.high_water = st.high_water.max(st.queue.len());
            if items == 0 {
                st.since = Some(Instant::now());
            }
            if low_space && !st.urgent {
                st.urgent = true;
                shared.work.notify_one();
            } else if items == 0 || items == QUEUE_NOW_ABOVE + 1 {
                shared.work.notify_one();
            }
            if items > MAX_BACKLOG {
                st.throttled += 1;
                st.since = None;
                Some(std::mem::take(&mut st.queue))
            } else {
                None
            }
        };
        backlog.map_or(Ok(()), |batch| self.inactivate_batch(batch))
    }

    /// Inactivate every queued inode now and wait for the worker's batch in flight, so every
    /// inode whose last link went before this call is freed when it returns. Reports the
    /// first error inactivation met since the last flush.
    pub fn inodegc_flush(&self) -> FsResult<()> {
        let shared = &self.inodegc.shared;
        let (batch, in_flight) = {
            let mut st = shared.state.lock();
            st.since = None;
            (std::mem::take(&mut st.queue), st.busy.then_some(st.taken))
        };
        let mine = self.inactivate_batch(batch);
        let mut st = shared.state.lock();
        if let Some(n) = in_flight {
            while st.finished < n {
                st.wait(&shared.done);
            }
        }
        let theirs = st.error.take();
        drop(st);
        mine?;
        theirs.map_or(Ok(()), Err)
    }

    /// Run `op`; if it runs out of space or inodes while inactivations are pending, flush
    /// them (they free blocks and inodes) and run it once more. `op` must hold no locks when
    /// it fails (a transaction dropped on the error path lets go of everything).
    pub(crate) fn retry_after_inodegc<T>(
        &self,
        mut op: impl FnMut() -> FsResult<T>,
    ) -> FsResult<T> {
        match op() {
            Err(FsError::NoSpace) if self.inodegc.pending() => {
                self.inodegc_flush()?;
                op()
            }
            r => r,
        }
    }

    /// Inactivate a batch taken from the queue, newest first; every inode is tried, the first
    /// error is returned.
    fn inactivate_batch(&self, batch: Vec<Arc<Inode>>) -> FsResult<()> {
        let mut first = Ok(());
        for ip in batch.into_iter().rev() {
            let r = self.inactivate(&ip);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
