//! Transactions: the only way labfs changes metadata.
//!
//! A transaction gathers the objects an operation changes, holds them locked until it commits,
//! and records what changed:
//!
//! ```text
//! let mut tp = Trans::new(&fs);
//! let agi = tp.read_buf(daddr, BlockKind::Agi, 512)?;   // locked until commit
//! tp.buf_mut(agi)[16..20].copy_from_slice(..);          // change bytes ...
//! tp.log_buf(agi, 16, 19);                              // ... and say which
//! let dp = tp.lock_inode(dir)?;                         // ILOCK exclusive until commit
//! tp.ic_mut(dp).di.size += 1; tp.log_inode(dp);
//! tp.commit()?;
//! ```
//!
//! Part 1 (no journal): commit puts logged buffers on the buffer cache's delayed-write list and
//! logged inodes on the mount's dirty-inode list; write-back (sync, fsync, unmount) writes
//! them home. Part 2 inserts the journal at the same point: commit formats the logged byte
//! ranges and inode cores into the CIL and pins the objects. That is why every change must be
//! logged with its byte range even though part 1 only needs a dirty bit.
//!
//! Lock order (see `fs/mod.rs`): inodes in ascending inode number, then AGI buffers in
//! ascending AG, then AGF buffers in ascending AG, then tree and directory blocks top-down.
//!
//! A transaction dropped without commit after it changed something cannot be undone (the
//! bytes were changed in place, as in XFS): the filesystem shuts down rather than write back
//! half an operation.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::fs::Fs;
use crate::fs::btree::store::BufId;
use crate::fs::buf::{BufGuard, GetMode};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::inode::{Inode, InodeCore, InodeRead, InodeWrite};
use crate::fs::stats::Stat;

/// An inode joined to a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InodeId(u32);

struct TBuf {
    guard: BufGuard,
    /// Union of logged byte ranges (first, last), inclusive.
    logged: Option<(usize, usize)>,
    /// Invalidated (its block was freed): no longer the cache's buffer for its address, so a
    /// later get of the same address in this transaction must not find it.
    stale: bool,
}

enum TLock {
    Exclusive(InodeWrite),
    Shared(InodeRead),
}

struct TInode {
    lock: TLock,
    logged: bool,
}

/// A metadata transaction.
pub struct Trans<'a> {
    fs: &'a Fs,
    bufs: Vec<TBuf>,
    inodes: Vec<TInode>,
    sync: bool,
    done: bool,
    /// A read-only transaction (lookups): never logs, not counted in the `trans` stats.
    reader: bool,
    /// Blocks reserved up front and not yet allocated (XFS's `t_blk_res`).
    blk_res: u64,
    /// Allowed to allocate beyond its reservation, into the set-aside pool (removals and
    /// write-back, which must work on a full filesystem).
    may_dip: bool,
}

impl<'a> Trans<'a> {
    /// Start a transaction on `fs` with no block reservation: it may only allocate what it
    /// reserves with [`Trans::reserve`] (or, after [`Trans::allow_set_aside`], dip into the
    /// set-aside pool).
    pub fn new(fs: &'a Fs) -> Trans<'a> {
        Trans {
            fs,
            bufs: Vec::new(),
            inodes: Vec::new(),
            sync: false,
            done: false,
            reader: false,
            blk_res: 0,
            may_dip: false,
        }
    }

    /// A read-only transaction, for lookups: holds buffers and inode locks like any other but
    /// never changes anything and is not counted as a transaction.
    pub fn reader(fs: &'a Fs) -> Trans<'a> {
        let mut tp = Trans::new(fs);
        tp.reader = true;
        tp
    }

    /// Reserve `blocks` for allocations this transaction may make; `NoSpace` (before anything
    /// changed) when the filesystem cannot promise them. Unused blocks return at commit.
    pub fn reserve(&mut self, blocks: u64) -> FsResult<()> {
        self.fs.reserve_blocks(blocks)?;
        self.blk_res += blocks;
        Ok(())
    }

    /// Reserve `blocks` if possible; otherwise let allocations draw on the set-aside pool
    /// (removals free more than they use, and must work on a full filesystem).
    pub fn reserve_or_dip(&mut self, blocks: u64) {
        if self.reserve(blocks).is_err() {
            self.may_dip = true;
        }
    }

    /// Let allocations draw on the set-aside pool (write-back of already-reserved data).
    pub fn allow_set_aside(&mut self) {
        self.may_dip = true;
    }

    /// Account an allocation of `len` blocks not covered by a delayed-allocation reservation:
    /// from the reservation, else (if allowed) straight from the free-block counter.
    pub(crate) fn charge_blocks(&mut self, len: u64) -> FsResult<()> {
        if !self.can_charge(len) {
            return Err(FsError::NoSpace);
        }
        let from_res = len.min(self.blk_res);
        self.blk_res -= from_res;
        self.fs
            .fdblocks
            .fetch_sub((len - from_res) as i64, Ordering::AcqRel);
        Ok(())
    }

    /// Whether an allocation of `len` blocks could be charged (checked before any change).
    pub(crate) fn can_charge(&self, len: u64) -> bool {
        if len <= self.blk_res {
            return true;
        }
        let free = self.fs.fdblocks.load(Ordering::Acquire);
        let floor = if self.may_dip { 0 } else { self.fs.set_aside() };
        free - ((len - self.blk_res) as i64) >= floor
    }

    fn release_reservation(&mut self) {
        if self.blk_res > 0 {
            self.fs
                .fdblocks
                .fetch_add(self.blk_res as i64, Ordering::AcqRel);
            self.blk_res = 0;
        }
    }

    /// The filesystem.
    pub fn fs(&self) -> &'a Fs {
        self.fs
    }

    /// Make the commit synchronous: it returns only when the change is durable.
    pub fn set_sync(&mut self) {
        self.sync = true;
    }

    fn find_buf(&self, daddr: Daddr) -> Option<BufId> {
        self.bufs
            .iter()
            .position(|b| !b.stale && b.guard.daddr() == daddr)
            .map(|i| BufId(i as u32))
    }

    fn hold(&mut self, guard: BufGuard) -> BufId {
        self.bufs.push(TBuf {
            guard,
            logged: None,
            stale: false,
        });
        BufId((self.bufs.len() - 1) as u32)
    }

    /// Read (and verify) a metadata buffer and hold it locked until commit. Reading a buffer
    /// the transaction already holds returns the same id.
    pub fn read_buf(&mut self, daddr: Daddr, kind: BlockKind, len: usize) -> FsResult<BufId> {
        if let Some(id) = self.find_buf(daddr) {
            return Ok(id);
        }
        let g = self.fs.bufs.get(daddr, kind, len, GetMode::Read)?;
        Ok(self.hold(g))
    }

    /// Like [`Trans::read_buf`], but `Ok(None)` instead of waiting when another transaction
    /// holds the buffer (used to visit AGs out of lock order without deadlock).
    pub fn try_read_buf(
        &mut self,
        daddr: Daddr,
        kind: BlockKind,
        len: usize,
    ) -> FsResult<Option<BufId>> {
        if let Some(id) = self.find_buf(daddr) {
            return Ok(Some(id));
        }
        Ok(self
            .fs
            .bufs
            .try_get(daddr, kind, len, GetMode::Read)?
            .map(|g| self.hold(g)))
    }

    /// The highest AG whose header of `kind` this transaction holds.
    fn highest_ag_held(&self, kind: BlockKind) -> Option<u32> {
        let geo = &self.fs.geo;
        self.bufs
            .iter()
            .filter(|b| b.guard.kind() == kind)
            .map(|b| geo.agno_of(b.guard.daddr().0 / crate::fs::format::BB_PER_BLOCK))
            .max()
    }

    /// The highest AG whose AGF this transaction holds (AGFs are locked in ascending order).
    pub fn highest_agf_held(&self) -> Option<u32> {
        self.highest_ag_held(BlockKind::Agf)
    }

    /// The highest AG whose AGI this transaction holds.
    pub fn highest_agi_held(&self) -> Option<u32> {
        self.highest_ag_held(BlockKind::Agi)
    }

    /// Get a buffer for a block being initialised (zeroed, not read), held until commit.
    pub fn new_buf(&mut self, daddr: Daddr, kind: BlockKind, len: usize) -> FsResult<BufId> {
        if let Some(id) = self.find_buf(daddr) {
            self.bufs[id.0 as usize].guard.bytes_mut().fill(0);
            return Ok(id);
        }
        let g = self.fs.bufs.get(daddr, kind, len, GetMode::New)?;
        Ok(self.hold(g))
    }

    /// A held buffer's bytes.
    pub fn buf(&self, id: BufId) -> &[u8] {
        self.bufs[id.0 as usize].guard.bytes()
    }

    /// A held buffer's bytes, writable; log what you change with [`Trans::log_buf`].
    pub fn buf_mut(&mut self, id: BufId) -> &mut [u8] {
        self.bufs[id.0 as usize].guard.bytes_mut()
    }

    /// A held buffer's device address.
    pub fn buf_daddr(&self, id: BufId) -> Daddr {
        self.bufs[id.0 as usize].guard.daddr()
    }

    /// Record that bytes `first..=last` of a held buffer changed.
    pub fn log_buf(&mut self, id: BufId, first: usize, last: usize) {
        debug_assert!(first <= last && last < self.buf(id).len());
        let b = &mut self.bufs[id.0 as usize];
        b.logged = Some(match b.logged {
            None => (first, last),
            Some((f, l)) => (f.min(first), l.max(last)),
        });
    }

    /// The block behind a held buffer was freed: drop its contents from the cache so they are
    /// never written home (XFS's `xfs_trans_binval`).
    pub fn inval_buf(&mut self, id: BufId) {
        let b = &mut self.bufs[id.0 as usize];
        b.logged = None;
        b.stale = true;
        self.fs.bufs.invalidate(&mut b.guard);
    }

    fn join(&mut self, lock: TLock) -> InodeId {
        self.inodes.push(TInode {
            lock,
            logged: false,
        });
        InodeId((self.inodes.len() - 1) as u32)
    }

    /// Join an inode already locked exclusive; it stays locked until commit.
    pub fn join_locked(&mut self, ip: InodeWrite) -> InodeId {
        self.join(TLock::Exclusive(ip))
    }

    /// Lock an inode exclusive and join it.
    pub fn lock_inode(&mut self, ip: Arc<Inode>) -> InodeId {
        if let Some(id) = self.find_inode(ip.ino) {
            return id;
        }
        self.join(TLock::Exclusive(InodeWrite::lock(ip)))
    }

    /// Lock an inode shared and join it (for read-only work such as lookups).
    pub fn lock_inode_shared(&mut self, ip: Arc<Inode>) -> InodeId {
        if let Some(id) = self.find_inode(ip.ino) {
            return id;
        }
        self.join(TLock::Shared(InodeRead::lock(ip)))
    }

    /// The id of a joined inode, if joined.
    pub fn find_inode(&self, ino: u64) -> Option<InodeId> {
        self.inodes
            .iter()
            .position(|t| self.lock_ino(t) == ino)
            .map(|i| InodeId(i as u32))
    }

    fn lock_ino(&self, t: &TInode) -> u64 {
        match &t.lock {
            TLock::Exclusive(w) => w.inode().ino,
            TLock::Shared(r) => r.inode().ino,
        }
    }

    /// A joined inode's number.
    pub fn ino(&self, id: InodeId) -> u64 {
        self.lock_ino(&self.inodes[id.0 as usize])
    }

    /// A joined inode.
    pub fn inode(&self, id: InodeId) -> &Arc<Inode> {
        match &self.inodes[id.0 as usize].lock {
            TLock::Exclusive(w) => w.inode(),
            TLock::Shared(r) => r.inode(),
        }
    }

    /// A joined inode's core.
    pub fn ic(&self, id: InodeId) -> &InodeCore {
        match &self.inodes[id.0 as usize].lock {
            TLock::Exclusive(w) => w,
            TLock::Shared(r) => r,
        }
    }

    /// A joined inode's core, writable; log the change with [`Trans::log_inode`].
    ///
    /// Only inodes joined exclusive may be changed: calling this on a shared join is a bug in
    /// labfs, caught here.
    pub fn ic_mut(&mut self, id: InodeId) -> &mut InodeCore {
        match &mut self.inodes[id.0 as usize].lock {
            TLock::Exclusive(w) => w,
            TLock::Shared(r) => panic!("inode {} joined shared is being changed", r.inode().ino),
        }
    }

    /// Record that a joined inode's core or fork changed.
    pub fn log_inode(&mut self, id: InodeId) {
        self.inodes[id.0 as usize].logged = true;
    }

    /// Whether anything was logged.
    pub fn is_dirty(&self) -> bool {
        self.bufs.iter().any(|b| b.logged.is_some()) || self.inodes.iter().any(|i| i.logged)
    }

    /// Commit: logged buffers go on the delayed-write list, logged inodes on the dirty-inode
    /// list; every lock is released. A synchronous transaction then writes back everything
    /// and flushes the device before returning.
    pub fn commit(mut self) -> FsResult<()> {
        self.finish(None).map(drop)
    }

    /// Commit, but keep inode `keep` locked and hand its lock back (XFS joins an inode with
    /// lock flags 0 for this): a multi-transaction operation on one inode (write-back
    /// converting several extents) stays atomic with respect to other users of the inode.
    pub fn commit_keep(mut self, keep: InodeId) -> FsResult<InodeWrite> {
        match self.finish(Some(keep))? {
            Some(w) => Ok(w),
            None => Err(FsError::Invalid("kept inode was not joined exclusive")),
        }
    }

    /// Commit what this transaction changed so far and carry on as a new transaction that
    /// still holds every joined inode and the buffers in `keep`; every other buffer is
    /// released. This is XFS's `xfs_trans_roll` with the kept buffers held by
    /// `xfs_trans_bhold`: an operation made of several changes that are each complete (a new
    /// inode chunk, then the inode taken from it) commits them one by one, so no transaction
    /// holds more than one step needs, and locks the first step took late in the lock order
    /// (the chunk's cluster buffers) are not held while the next step waits for earlier ones.
    /// The block reservation carries over; `keep` is rewritten with the buffers' new ids.
    pub fn roll(&mut self, keep: &mut [&mut BufId]) -> FsResult<()> {
        if self.reader {
            return Err(FsError::Invalid("a read-only transaction cannot roll"));
        }
        self.count_commit();
        self.apply_logged();
        let mut old: Vec<Option<TBuf>> = std::mem::take(&mut self.bufs)
            .into_iter()
            .map(Some)
            .collect();
        for id in keep.iter_mut() {
            let Some(b) = old.get_mut(id.0 as usize).and_then(Option::take) else {
                return Err(FsError::Invalid(
                    "rolled a buffer the transaction does not hold",
                ));
            };
            self.bufs.push(b);
            **id = BufId((self.bufs.len() - 1) as u32);
        }
        // The others are released here, as their guards drop.
        Ok(())
    }

    /// Count a commit in the `trans` stats (read-only transactions are not counted).
    fn count_commit(&self) {
        if !self.reader {
            let stat = match (self.is_dirty(), self.sync) {
                (false, _) => Stat::TransEmpty,
                (true, true) => Stat::TransSync,
                (true, false) => Stat::TransAsync,
            };
            self.fs.stats.inc(stat);
        }
    }

    /// Hand everything logged to write-back: logged buffers go on the delayed-write list,
    /// logged inodes on the dirty-inode list; nothing stays logged.
    fn apply_logged(&mut self) {
        for b in &mut self.bufs {
            if b.logged.take().is_some() {
                self.fs.bufs.mark_dirty(&mut b.guard);
            }
        }
        for t in &mut self.inodes {
            if std::mem::take(&mut t.logged)
                && let TLock::Exclusive(w) = &mut t.lock
            {
                w.di.changecount += 1;
                w.dirty = true;
                self.fs.note_dirty_inode(w.inode());
            }
        }
    }

    fn finish(&mut self, keep: Option<InodeId>) -> FsResult<Option<InodeWrite>> {
        self.done = true;
        self.release_reservation();
        let dirty = self.is_dirty();
        debug_assert!(
            !(self.reader && dirty),
            "a read-only transaction logged a change"
        );
        self.count_commit();
        self.apply_logged();
        let kept = keep.and_then(|id| {
            let i = id.0 as usize;
            if i < self.inodes.len() && matches!(self.inodes[i].lock, TLock::Exclusive(_)) {
                match self.inodes.swap_remove(i).lock {
                    TLock::Exclusive(w) => Some(w),
                    TLock::Shared(_) => None,
                }
            } else {
                None
            }
        });
        let sync = self.sync && dirty;
        self.bufs.clear();
        self.inodes.clear();
        if sync {
            self.fs.sync_metadata()?;
        }
        Ok(kept)
    }
}

impl Drop for Trans<'_> {
    fn drop(&mut self) {
        self.release_reservation();
        if !self.done && self.is_dirty() {
            // Changes were made in place and cannot be rolled back: stop the filesystem from
            // writing anything else home (XFS shuts down on a dirty transaction cancel).
            self.fs
                .shutdown("a transaction was cancelled after changing metadata");
        }
    }
}
