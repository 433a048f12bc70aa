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
//! - an inode goes on the list of the CPU the releasing thread runs on (one list per CPU,
//!   [`crate::fs::inodegc_queue`]), so two unlinking threads on two CPUs fill lists of their
//!   own;
//! - the worker runs a list once no inode was queued on it for [`QUEUE_DELAY`] (one jiffy:
//!   every inode queued re-arms the kernel's `mod_delayed_work(.., 1)`), or at once when free
//!   space is low;
//! - it takes the whole list and inactivates the newest first (`llist_del_all` hands over a
//!   LIFO list), so the blocks of files unlinked one after another are freed in the opposite
//!   order, which shapes the free-space trees;
//! - past [`MAX_BACKLOG`] inodes on its CPU's list the unlinking thread inactivates that list
//!   before it returns (the throttle, `xfs_inodegc_want_flush_work`; the kernel's frontend
//!   waits for that CPU's worker to do it), after the worker's batch in flight from the same
//!   list, so an unlink storm cannot queue without bound and the frees keep the list's order;
//! - [`Fs::inodegc_flush`] waits for a batch in flight and empties every list: unmount,
//!   freeze ([`Fs::quiesce`]), sync, and a create that ran out of space or inodes before it
//!   retries (XFS's `xfs_blockgc_free_space` flushes inodegc before giving up with ENOSPC).
//!
//! One difference, on purpose: XFS also queues its worker at once when more than an inode
//! cluster's worth (32) wait (`xfs_inodegc_want_queue_work`). That work is bound to the
//! unlinking task's CPU, so it runs only when the scheduler switches to it there: during an
//! unlink storm the list grows far past 32 first, to a length set by the task's time slice
//! and capped by the throttle (the kernel fixtures' free-space inserts per file imply batches
//! of about 100 to 258 inodes). labfs's worker has a core of its own and would take the queue
//! at once, 33 inodes and whatever arrived while it woke: a batch length set by the
//! scheduler, different on every run. Which extents a batch frees together, and in what
//! order, decides how free-space records are made and merged (`abtb2`/`abtc2` inserts,
//! deletes and moves), so labfs leaves a storm's queue to the throttle: its batches end at a
//! count, where the kernel's end at their longest, and those counts follow the workload.
//! And one worker thread runs every CPU's list, one list at a time, where the kernel has a
//! worker per CPU: batches from two lists run one after the other, not at once.
//!
//! Locks: the queue's mutex is a list lock (the last rank) and is never held while an inode is
//! inactivated; inactivation itself (`Fs::inactivate`) reserves log space before it locks
//! the inode, so the worker, a throttled unlink and a flush all run it holding nothing.

use std::sync::Arc;

use crate::fs::Fs;
use crate::fs::error::{FsError, FsResult};
use crate::fs::inode::{Inode, InodeWrite, iflags};
use crate::fs::stats::Stat;

pub use crate::fs::inodegc_queue::{InodeGc, MAX_BACKLOG, QUEUE_DELAY};

/// Start the worker for `fs` (mount, once the mount is assembled).
pub(crate) fn start(fs: &Arc<Fs>) -> FsResult<()> {
    let side = fs.inodegc.worker_side();
    let weak = Arc::downgrade(fs);
    let handle = crate::fs::aild::with_process_signals_blocked(|| {
        std::thread::Builder::new()
            .name("xfs-inodegc".into())
            .spawn(move || {
                while let Some(batch) = side.next_batch() {
                    // The mount is held only while the batch runs: the last reference may be
                    // dropped here, and the mount's drop then stops this thread (without
                    // joining it).
                    let result = match weak.upgrade() {
                        Some(fs) => fs.inactivate_batch(&batch),
                        None => Ok(()),
                    };
                    side.finish(result);
                }
            })
    })
    .map_err(|_| FsError::Invalid("could not start the inodegc worker thread"))?;
    fs.inodegc.set_thread(handle);
    Ok(())
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
        let backlog = self.inodegc.push(ip, low_space);
        backlog.map_or(Ok(()), |batch| self.inactivate_batch(&batch))
    }

    /// Wait for the worker's batch in flight and inactivate every queued inode after it, so
    /// every inode whose last link went before this call is freed when it returns. Reports
    /// the first error inactivation met since the last flush.
    pub fn inodegc_flush(&self) -> FsResult<()> {
        let (batch, theirs) = self.inodegc.take_all();
        let mine = self.inactivate_batch(&batch);
        theirs.map_or(Ok(()), Err)?;
        mine
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
    fn inactivate_batch(&self, batch: &[Arc<Inode>]) -> FsResult<()> {
        let mut first = Ok(());
        for ip in batch.iter().rev() {
            let r = self.inactivate(ip);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
