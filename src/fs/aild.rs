//! xfsaild: pushing the AIL's items home.
//!
//! A push pass walks items up to a target LSN and tries each: a buffer is written home
//! (CRC updated on the way, as part 1's write-back did), an inode is copied into its cluster
//! buffer and the cluster written. Items are only *tried*: a locked object is `LOCKED`, an
//! object whose newest change is not yet stable is `PINNED` (the pass then asks for a CIL
//! push: the `flush` stat), an inode whose cluster buffer is pinned or busy is `FLUSHING`.
//! The pusher works while less than a quarter of the log is free, reservations and the CIL
//! counted (XFS 6.11's `xfs_ail_calc_push_target`), up to a quarter of the log past the
//! tail; or the target is
//! the whole AIL when someone waits for it to empty (unmount, sync of metadata, memory
//! pressure in the buffer cache).
//!
//! The list itself is the log's ([`crate::fs::log::ail`]); pushing lives here, above the
//! log, because writing an item home reaches the buffer cache, the inode cache and the
//! inode encoder of the mount. The log only wakes the thread (`Log::wake_aild`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::fs::Fs;
use crate::fs::format::{BlockKind, INODE_SIZE};
use crate::fs::inode::{InodeWrite, iflags};
use crate::fs::log::ItemRef;
use crate::fs::stats::Stat;

/// What pushing one item did (XFS's `XFS_ITEM_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// Written home (or found already home / superseded): out of the AIL.
    Success,
    /// Its newest change is not yet stable on the log.
    Pinned,
    /// Someone holds its lock.
    Locked,
    /// Its cluster buffer is busy or pinned; it goes home with the cluster later.
    Flushing,
}

/// Items one pass looks at, at most (xfsaild stops after 1000 as well).
const PASS_ITEMS: usize = 1000;

impl Fs {
    /// One AIL push pass. With `all`, push everything in the AIL (unmount, memory
    /// pressure, a reservation waiting for space); otherwise only as far as keeps a quarter
    /// of the log free. Returns the items pushed home and whether any was pinned.
    pub(crate) fn ail_push_pass(&self, all: bool) -> (usize, bool) {
        let log = &self.log;
        let bb = u64::from(log.geometry().log_bb);
        if !all && !log.space_short() {
            return (0, false);
        }
        let items = {
            let ail = log.ail.lock();
            let (Some(min), Some(max)) = (ail.min_abs(), ail.max_abs()) else {
                return (0, false);
            };
            let target = if all { max } else { (min + bb / 4).min(max) };
            ail.collect(target, PASS_ITEMS)
        };
        if items.is_empty() {
            return (0, false);
        }
        self.stats.inc(Stat::PushAil);
        let stable = log.stable_seq();
        let mut pushed = 0;
        let mut pinned = false;
        for (abs, obj) in items {
            // Gone since the pass collected it (written home with its cluster): XFS's
            // cursor never meets a removed item.
            if !log.ail.lock().contains(obj.id()) {
                continue;
            }
            let outcome = match &obj {
                ItemRef::Buf(b) => self.push_buf_item(b, stable),
                ItemRef::Inode(ip) => self.push_inode_item(ip, stable),
            };
            let lsn = log.lsn(abs).0;
            let (ty, lip) = (obj.type_name(), obj.id() as u64);
            match outcome {
                Ok(PushOutcome::Success) => {
                    self.stats.inc(Stat::PushAilSuccess);
                    crate::trace::events::xfs_ail_push(log.dev_id, lip, lsn, ty, "IN_AIL");
                    log.ail.lock().delete_pushed(log, obj.id(), abs);
                    pushed += 1;
                }
                Ok(PushOutcome::Pinned) => {
                    self.stats.inc(Stat::PushAilPinned);
                    crate::trace::events::xfs_ail_pinned(log.dev_id, lip, lsn, ty, "IN_AIL");
                    pinned = true;
                }
                Ok(PushOutcome::Locked) => {
                    self.stats.inc(Stat::PushAilLocked);
                    crate::trace::events::xfs_ail_locked(log.dev_id, lip, lsn, ty, "IN_AIL");
                }
                Ok(PushOutcome::Flushing) => {
                    self.stats.inc(Stat::PushAilFlushing);
                    crate::trace::events::xfs_ail_flushing(
                        log.dev_id,
                        lip,
                        lsn,
                        ty,
                        "IN_AIL|FLUSHING",
                    );
                }
                Err(e) => {
                    self.shutdown(crate::fs::error::ShutdownReason::MetadataIo(Box::new(e)));
                    log.fail();
                    break;
                }
            }
        }
        if pushed > 0 {
            log.space_moved();
        }
        (pushed, pinned)
    }

    fn push_buf_item(
        &self,
        b: &Arc<crate::fs::buf::BufLock>,
        stable: u64,
    ) -> crate::fs::error::FsResult<PushOutcome> {
        let Some(mut g) = self.bufs.try_lock_item(b) else {
            return Ok(PushOutcome::Locked);
        };
        if g.pin_seq() > stable {
            return Ok(PushOutcome::Pinned);
        }
        // A freed block (cancelled) or one written home with an inode flush: nothing left.
        if !g.is_valid() || !g.is_dirty() {
            return Ok(PushOutcome::Success);
        }
        self.bufs.write_home(&mut g)?;
        Ok(PushOutcome::Success)
    }

    fn push_inode_item(
        &self,
        ip: &Arc<crate::fs::inode::Inode>,
        stable: u64,
    ) -> crate::fs::error::FsResult<PushOutcome> {
        let out = self.push_inode_locked(ip, stable)?;
        if out == PushOutcome::Success && ip.has_flag(iflags::FREED) {
            let mut pending = self.freed_pending.lock();
            if pending.get(&ip.ino).is_some_and(|p| Arc::ptr_eq(p, ip)) {
                pending.remove(&ip.ino);
            }
        }
        Ok(out)
    }

    fn push_inode_locked(
        &self,
        ip: &Arc<crate::fs::inode::Inode>,
        stable: u64,
    ) -> crate::fs::error::FsResult<PushOutcome> {
        let Some(mut w) = InodeWrite::try_lock(Arc::clone(ip)) else {
            return Ok(PushOutcome::Locked);
        };
        if w.log_seq > stable {
            return Ok(PushOutcome::Pinned);
        }
        if !ip.is_dirty() {
            return Ok(PushOutcome::Success);
        }
        if ip.has_flag(iflags::FREED) {
            // Stale: the chunk went (its blocks are free space) or a later freed owner of the
            // number supersedes this free image.
            if ip.has_flag(iflags::STALE) {
                return Ok(PushOutcome::Success);
            }
            // The number has a new owner: its log item, later than this one, carries the
            // slot from here once it is stable.
            if let Some(live) = self.icache.peek(ip.ino) {
                let Some(l) = InodeWrite::try_lock(live) else {
                    return Ok(PushOutcome::Locked);
                };
                return Ok(if l.log_seq > stable {
                    PushOutcome::Pinned
                } else {
                    PushOutcome::Success
                });
            }
        }
        let (daddr, off) = self.geo.ino_location(ip.ino);
        let Some(mut cg) = self.bufs.try_get(
            daddr,
            BlockKind::Inode,
            crate::fs::geo::INODE_CLUSTER_SIZE,
            crate::fs::buf::GetMode::Read,
        )?
        else {
            return Ok(PushOutcome::Flushing);
        };
        if cg.pin_seq() > stable {
            return Ok(PushOutcome::Flushing);
        }
        if !ip.has_flag(iflags::FREED) && self.freed_pending.lock().contains_key(&ip.ino) {
            // The slot's previous owner still has its free image to write: it goes first,
            // or it would land over this one.
            return Ok(PushOutcome::Flushing);
        }
        let image = self.encode_inode(&mut w, ip.ino);
        cg.bytes_mut()[off..off + INODE_SIZE].copy_from_slice(&image);
        w.set_dirty(false);
        // The cluster's other dirty inodes whose changes are stable go home in the same
        // write (XFS's xfs_iflush_cluster): one 16 KiB write for up to 32 inodes instead of
        // one each. Only tried: a locked, pinned or freed one waits for its own push.
        let first = ip.ino - (off / INODE_SIZE) as u64;
        let mut others = Vec::new();
        for ino in first..first + crate::fs::geo::INODES_PER_CLUSTER {
            if ino == ip.ino {
                continue;
            }
            let Some(o) = self.icache.peek_quiet(ino) else {
                continue;
            };
            let Some(mut ow) = InodeWrite::try_lock(o) else {
                continue;
            };
            if !ow.inode().is_dirty()
                || ow.log_seq > stable
                || self.freed_pending.lock().contains_key(&ino)
            {
                continue;
            }
            let at = (ino - first) as usize * INODE_SIZE;
            let image = self.encode_inode(&mut ow, ino);
            cg.bytes_mut()[at..at + INODE_SIZE].copy_from_slice(&image);
            ow.set_dirty(false);
            others.push(ow);
        }
        let had_item = cg.is_dirty();
        self.bufs.write_home(&mut cg)?;
        {
            // Written home: out of the AIL, as XFS's I/O completion takes a flushed
            // cluster's inode items out (the pushed one leaves through the caller).
            let mut ail = self.log.ail.lock();
            if had_item {
                let id = ItemRef::Buf(Arc::clone(crate::fs::buf::BufGuard::arc(&cg))).id();
                ail.delete(&self.log, id);
            }
            for ow in &others {
                ail.delete(&self.log, ItemRef::Inode(Arc::clone(ow.inode())).id());
            }
        }
        let flushed = 1 + others.len() as u32;
        self.stats.inc(Stat::IclusterFlushcnt);
        self.stats.add(Stat::IclusterFlushinode, flushed);
        self.stats.add(Stat::IflushCount, flushed);
        Ok(PushOutcome::Success)
    }

    /// Push until the AIL is empty, forcing the log when items are pinned (unmount, and
    /// `Fs::quiesce`).
    pub(crate) fn ail_push_all_sync(&self) -> crate::fs::error::FsResult<()> {
        let mut idle = 0;
        loop {
            if let Err(e) = self.check_live() {
                // A push that failed shut the filesystem down: report what failed.
                return Err(match self.shutdown_reason() {
                    Some(crate::fs::error::ShutdownReason::MetadataIo(io)) => *io,
                    _ => e,
                });
            }
            if self.log.ail.lock().is_empty() {
                return Ok(());
            }
            let (n, pinned) = self.ail_push_pass(true);
            if pinned {
                self.stats.inc(Stat::PushAilFlush);
                self.log.force_all("xfs_ail_push_all_sync")?;
            }
            if n == 0 {
                idle += 1;
                // Items locked by a running operation: give it a moment.
                std::thread::sleep(std::time::Duration::from_micros(if idle < 100 {
                    50
                } else {
                    1000
                }));
            } else {
                idle = 0;
            }
        }
    }
}

/// Run `spawn` with the signals a user sends to end a process blocked, so the thread it
/// starts has them blocked from its first instruction (a thread inherits its creator's
/// mask); the caller's mask is restored after. A process-wide signal goes to any thread
/// that does not block it: a program that takes them with `sigwait` in one thread (the
/// foreground `labfs mount`) blocks them before it spawns its own threads, but the mount's
/// xfsaild exists by then, and a signal delivered to it would take the default action and
/// kill the process with the log unwritten.
pub(crate) fn with_process_signals_blocked<T>(spawn: impl FnOnce() -> T) -> T {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        set.add(s);
    }
    let mut old = SigSet::empty();
    // Cannot fail with a valid `how` and set; if it did, the masks stay as they were.
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old)).is_ok();
    let out = spawn();
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
    out
}

/// xfsaild: the per-mount thread that pushes the AIL and runs background CIL pushes.
/// It holds the mount only while it works (weakly otherwise), so dropping the last
/// `Arc<Fs>` ends it, and it sleeps parked: `Log::wake_aild` unparks it.
pub fn spawn_aild(fs: &Arc<Fs>) -> crate::fs::error::FsResult<std::thread::JoinHandle<()>> {
    let weak = Arc::downgrade(fs);
    let spawned = with_process_signals_blocked(|| {
        std::thread::Builder::new()
            .name("xfsaild".into())
            .spawn(move || {
                loop {
                    let wait = {
                        let Some(fs) = weak.upgrade() else { return };
                        if fs.aild_stop.load(Ordering::Acquire) {
                            return;
                        }
                        if fs.log.want_push.swap(false, Ordering::AcqRel) {
                            let _ = fs.log.push_cil();
                            let _ = fs.log.force_background();
                        }
                        let (n, pinned) = fs.ail_push_pass(false);
                        // Checkpoint the CIL only when pinned items stalled the pass: items
                        // relogged all the time (the AGI, a big directory's leaves) are
                        // always pinned, and flushing whenever one was seen checkpointed
                        // every thousand items, relogging every dirty block each time (6.7
                        // log blocks per create at 3.2M files). XFS flushes when its scan
                        // restarts after pinned items held it up.
                        if pinned && n == 0 {
                            fs.stats.inc(Stat::PushAilFlush);
                            let _ = fs.log.push_cil();
                            let _ = fs.log.force_background();
                        }
                        if n > 0 {
                            std::time::Duration::ZERO
                        } else if pinned {
                            std::time::Duration::from_millis(20)
                        } else {
                            std::time::Duration::from_millis(50)
                        }
                    };
                    if !wait.is_zero() {
                        std::thread::park_timeout(wait);
                    }
                }
            })
    });
    let h = spawned
        .map_err(|_| crate::fs::error::FsError::Invalid("could not start the xfsaild thread"))?;
    fs.log.set_aild(h.thread().clone());
    Ok(h)
}
