//! Transactions: the only way labfs changes metadata.
//!
//! A transaction gathers the objects an operation changes, holds them locked until it commits,
//! and records what changed:
//!
//! ```text
//! let mut tp = Trans::new(&fs, Resv::Create);
//! let agi = tp.read_buf(daddr, BlockKind::Agi, 512)?;   // locked until commit
//! tp.buf_mut(agi)[16..20].copy_from_slice(..);          // change bytes ...
//! tp.log_buf(agi, 16, 19);                              // ... and say which
//! let dp = tp.lock_inode(dir)?;                         // ILOCK exclusive until commit
//! tp.ic_mut(dp).di.size += 1; tp.log_inode(dp);
//! tp.commit()?;
//! ```
//!
//! Commit formats the logged 128-byte chunks and inode images into the CIL and pins the
//! objects (docs/journal.md); the AIL writes them home once their checkpoint is stable.
//!
//! Lock order (see `fs/mod.rs`): inodes in ascending inode number, then AGI buffers in
//! ascending AG, then AGF buffers in ascending AG, then tree and directory blocks top-down.
//!
//! A transaction dropped without commit after it changed something cannot be undone (the
//! bytes were changed in place, as in XFS): the filesystem shuts down rather than write back
//! half an operation.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use smallvec::SmallVec;

use crate::fs::Fs;
use crate::fs::btree::store::BufId;
use crate::fs::buf::{BufGuard, GetMode};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::inode::{Inode, InodeCore, InodeRead, InodeWrite};
use crate::fs::log::item::{self, fields};
use crate::fs::log::{BufSource, CommitItem, CommitObj};
use crate::fs::stats::Stat;

/// A block logged over zeros must hold zeros in every chunk it does not log, or replay would
/// lose what was written there without a `log_buf` (the checking builds' guard on the
/// contract "every change is logged").
#[cfg(any(debug_assertions, feature = "lockcheck"))]
fn check_unlogged_zero(kind: BlockKind, daddr: u64, bytes: &[u8], map: item::ChunkMap) {
    use crate::fs::log::item::CHUNK;
    for (c, chunk) in bytes.chunks(CHUNK).enumerate() {
        if map & (1 << c) == 0 && chunk.iter().any(|&b| b != 0) {
            panic!("{kind} block at daddr {daddr} changed chunk {c} without logging it");
        }
    }
}

/// An inode joined to a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InodeId(u32);

struct TBuf {
    guard: BufGuard,
    /// 128-byte chunks this transaction changed (the buffer log item's map, XFS's
    /// `XFS_BLF_CHUNK` bitmap).
    logged: item::ChunkMap,
    /// Got with [`Trans::new_buf`]: the block starts as zeros, and its log items say so
    /// (replay must not lay changes over what the block held before).
    new: bool,
    /// Changed in memory for a change another item logs ([`Trans::pin_buf`]).
    pin_only: bool,
    /// Invalidated (its block was freed): no longer the cache's buffer for its address, so a
    /// later get of the same address in this transaction must not find it.
    stale: bool,
    /// An ordered buffer ([`Trans::log_icreate`]): its bytes are not logged, another item
    /// recreates them at recovery; it is pinned, dirty and in the AIL like a logged one.
    ordered: bool,
}

enum TLock {
    Exclusive(InodeWrite),
    Shared(InodeRead),
}

struct TInode {
    lock: TLock,
    /// Which fields changed ([`crate::fs::log::item::fields`]); 0 when none.
    logged: u8,
}

/// Blocks a transaction reserves for a change that may split or shrink a few trees besides
/// what it maps: a namespace change (link, rename, remove, inactivation), a batch of a
/// truncate's unmapping, the tree blocks of a preallocation.
pub const CHANGE_BLOCKS: u64 = 16;

/// What a transaction is for, and so how much log space it reserves up front (XFS's
/// `xfs_trans_resv`): enough for every block and inode it may log, in 128-byte chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resv {
    /// A new name and inode (create, mkdir, symlink, mknod): directory blocks, the inode,
    /// its cluster, the AGI and inode trees, and allocation for all of them.
    Create,
    /// A name removed (unlink, rmdir) and the inode freed.
    Remove,
    /// A name added to an existing inode (link).
    Link,
    /// Two directories and up to three inodes (rename).
    Rename,
    /// Mapping written data (delayed-allocation conversion, unwritten extents).
    Write,
    /// Freeing a file's blocks (truncate, punch, inactivation).
    Truncate,
    /// An inode's core alone (size, timestamps, attributes, open/close bookkeeping).
    Ichange,
    /// mkfs's AG set-up and superblock writes.
    Mkfs,
    /// A read-only transaction: reserves nothing.
    None,
}

impl Resv {
    /// Log bytes the kind reserves (before [`crate::fs::log::Log::unit_for`] scales it to
    /// small logs).
    pub fn bytes(self) -> u64 {
        const BLOCK: u64 = 4096 + 64;
        match self {
            Resv::Create | Resv::Rename => 24 * BLOCK,
            Resv::Remove | Resv::Link => 20 * BLOCK,
            Resv::Write | Resv::Truncate => 16 * BLOCK,
            Resv::Mkfs => 32 * BLOCK,
            Resv::Ichange => 2 * 1024,
            Resv::None => 0,
        }
    }
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
    /// Log space reserved (bytes), given back at commit.
    log_res: u64,
    /// The reservation this transaction started with, which each roll takes again (XFS's
    /// permanent reservation; 0 when it reserved nothing).
    log_unit: u64,
    /// Extents this transaction freed: busy until its checkpoint is stable.
    freed: Vec<(u64, u32)>,
    /// New inode chunks, each with the held buffer its icreate item is filed under.
    icreates: Vec<(usize, item::Icreate)>,
}

impl<'a> Trans<'a> {
    /// Start a transaction on `fs` with no block reservation: it may only allocate what it
    /// reserves with [`Trans::reserve`] (or, after [`Trans::allow_set_aside`], dip into the
    /// set-aside pool).
    ///
    /// Log space for `resv` is reserved first (waiting, and pushing the AIL, while the log
    /// is full), so call this before locking anything (XFS's `xfs_trans_alloc` comes before
    /// `xfs_ilock`; the lock-order checker panics on a reservation made holding an inode,
    /// AG header or buffer lock, see `Log::reserve`). An operation that changes an inode in
    /// several transactions keeps the first one and rolls it ([`Trans::roll`]), which takes
    /// the same reservation again without waiting for new space. If the log has failed, the
    /// transaction reserves nothing: its first read or commit reports the shutdown.
    pub fn new(fs: &'a Fs, resv: Resv) -> Trans<'a> {
        let want = fs.log.unit_for(resv.bytes());
        let log_res = if want > 0 {
            match fs.log.reserve(want, &|| {
                fs.ail_push_pass(true);
            }) {
                Ok(()) => want,
                Err(_) => 0,
            }
        } else {
            0
        };
        let spare = SPARE_VECS.try_with(std::cell::Cell::take).ok().flatten();
        let (bufs, inodes) = spare.unwrap_or_else(|| {
            // Room for a create's buffers and inodes, so pushes do not grow the vectors.
            (Vec::with_capacity(16), Vec::with_capacity(4))
        });
        Trans {
            fs,
            bufs,
            inodes,
            sync: false,
            done: false,
            reader: resv == Resv::None,
            blk_res: 0,
            may_dip: false,
            log_res,
            log_unit: log_res,
            freed: Vec::new(),
            icreates: Vec::new(),
        }
    }

    /// A read-only transaction, for lookups: holds buffers and inode locks like any other but
    /// never changes anything and is not counted as a transaction.
    pub fn reader(fs: &'a Fs) -> Trans<'a> {
        Trans::new(fs, Resv::None)
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

    /// [`Trans::reserve_or_dip`] up to `blocks` in all: a rolled transaction's unused
    /// reservation carries over, so each step of a chain tops it up rather than adding to it.
    pub fn reserve_or_dip_up_to(&mut self, blocks: u64) {
        self.reserve_or_dip(blocks.saturating_sub(self.blk_res));
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

    /// Blocks `fsblock..+len` were freed by this transaction: they are busy (no data may
    /// be written to them) until its checkpoint is stable (XFS's `xfs_extent_busy`).
    pub(crate) fn note_freed(&mut self, fsblock: u64, len: u32) {
        self.freed.push((fsblock, len));
    }

    /// `Shutdown` for a changing transaction once the filesystem has shut down.
    fn live(&self) -> FsResult<()> {
        if self.reader {
            Ok(())
        } else {
            self.fs.check_live()
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
            logged: 0,
            new: false,
            pin_only: false,
            stale: false,
            ordered: false,
        });
        BufId((self.bufs.len() - 1) as u32)
    }

    /// Read (and verify) a metadata buffer and hold it locked until commit. Reading a buffer
    /// the transaction already holds returns the same id.
    pub fn read_buf(&mut self, daddr: Daddr, kind: BlockKind, len: usize) -> FsResult<BufId> {
        // The one liveness check every changing transaction's metadata access goes through
        // (read-only ones, lookups and fsck, may still read a shut-down filesystem).
        self.live()?;
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
        self.live()?;
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
        self.live()?;
        if let Some(id) = self.find_buf(daddr) {
            let b = &mut self.bufs[id.0 as usize];
            b.guard.bytes_mut().fill(0);
            b.new = true;
            return Ok(id);
        }
        let g = self.fs.bufs.get(daddr, kind, len, GetMode::New)?;
        let id = self.hold(g);
        self.bufs[id.0 as usize].new = true;
        Ok(id)
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
        self.bufs[id.0 as usize].logged |= crate::fs::log::item::chunk_range(first, last);
    }

    /// A held buffer's bytes were changed for a change that another log item carries (a
    /// freed inode's slot, logged as the inode's item): nothing of the buffer is logged, but
    /// it is pinned with the transaction's checkpoint and kept in memory (dirty) so it goes
    /// home only after that item is stable.
    pub fn pin_buf(&mut self, id: BufId) {
        self.bufs[id.0 as usize].pin_only = true;
    }

    /// A new inode chunk at AG block `agbno` of AG `agno` was initialised in the held
    /// buffers `bufs` (its inode cluster buffers, in order) with generations from `seed`: log one
    /// icreate item instead of the blocks' bytes (XFS's `xfs_icreate_log` with ordered
    /// buffers). The buffers are pinned and go into the AIL with the checkpoint, so the log
    /// tail cannot pass the item before they are home; recovery writes them afresh from it.
    pub fn log_icreate(&mut self, agno: u32, agbno: u32, seed: u32, bufs: &[BufId]) {
        for id in bufs {
            let b = &mut self.bufs[id.0 as usize];
            b.new = false;
            b.logged = 0;
            b.ordered = true;
        }
        if let Some(first) = bufs.first() {
            self.icreates.push((
                first.0 as usize,
                item::Icreate {
                    agno,
                    agbno,
                    count: bufs.len() as u32 * crate::fs::geo::INODES_PER_CLUSTER as u32,
                    isize: crate::fs::format::INODE_SIZE as u32,
                    length: bufs.len() as u32 * crate::fs::geo::BLOCKS_PER_CLUSTER,
                    seed,
                },
            ));
        }
    }

    /// The block behind a held buffer was freed: drop its contents from the cache so they are
    /// never written home (XFS's `xfs_trans_binval`).
    pub fn inval_buf(&mut self, id: BufId) {
        let b = &mut self.bufs[id.0 as usize];
        b.logged = 0;
        b.new = false;
        b.stale = true;
        self.fs.bufs.invalidate(&mut b.guard);
    }

    fn join(&mut self, lock: TLock) -> InodeId {
        self.inodes.push(TInode { lock, logged: 0 });
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
        self.log_inode_fields(id, fields::CORE | fields::DATA);
    }

    /// Record that only some of a joined inode's fields changed (e.g. timestamps only, which
    /// fdatasync need not make durable).
    pub fn log_inode_fields(&mut self, id: InodeId, f: u8) {
        self.inodes[id.0 as usize].logged |= f;
    }

    /// Whether anything was logged.
    pub fn is_dirty(&self) -> bool {
        self.bufs
            .iter()
            .any(|b| b.logged != 0 || b.new || b.stale || b.pin_only || b.ordered)
            || self.inodes.iter().any(|i| i.logged != 0)
    }

    /// Commit: everything logged goes into the CIL, pinned; every lock is released. A
    /// synchronous transaction then forces the log up to its checkpoint before returning.
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
    /// inode chunk, then the inode taken from it; a batch of extents freed, then the next)
    /// commits them one by one, so no transaction holds more than one step needs, and locks
    /// a step took late in the lock order (the chunk's cluster buffers, a batch's AGFs) are
    /// not held while the next step waits for earlier ones.
    ///
    /// The rolled transaction keeps its log reservation: it takes the same amount again
    /// without waiting for new space (XFS's permanent reservation, `xfs_log_regrant`), so it
    /// never waits for log space holding its locks, which a new [`Trans::new`] would. What
    /// it holds is relogged in the commit (every joined inode and kept buffer with changes
    /// not yet home, XFS's `xfs_trans_roll_inode`), so a long chain of rolls never pins the
    /// log's tail with an old item of its own: each checkpoint moves them forward.
    /// The block reservation carries over; `keep` is rewritten with the buffers' new ids.
    pub fn roll(&mut self, keep: &mut [&mut BufId]) -> FsResult<()> {
        if self.reader {
            return Err(FsError::Invalid("a read-only transaction cannot roll"));
        }
        self.live()?;
        self.relog_held(keep);
        self.count_commit();
        self.commit_logged();
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
        // The buffers not kept are released here, BEFORE the regrant below may wait for log
        // space: a thread holding an inode at the AIL's tail can be waiting for one of them,
        // and the tail (so the space) cannot move until that thread commits. Only what the
        // chain kept (and relogged above, so none of it pins the tail) stays held across the
        // wait, as XFS holds only bjoin'ed and bhold'ed objects across xfs_trans_roll.
        drop(old);
        if self.log_res == 0 && self.log_unit > 0 {
            let fs = self.fs;
            fs.log.regrant(self.log_unit, &|| {
                fs.ail_push_pass(true);
            })?;
            self.log_res = self.log_unit;
        }
        Ok(())
    }

    /// [`Trans::roll`], then hand joined inode `keep` back out of the transaction, still
    /// locked, while the transaction keeps its reservation for a later step: a step that
    /// must run between two transactions with the inode locked (write-back's data I/O
    /// between allocating blocks and marking them written) runs without a transaction's
    /// buffers, and the next step joins the inode again ([`Trans::join_locked`]).
    pub fn roll_keep(&mut self, keep: InodeId) -> FsResult<InodeWrite> {
        self.roll(&mut [])?;
        let i = keep.0 as usize;
        if i < self.inodes.len()
            && matches!(self.inodes[i].lock, TLock::Exclusive(_))
            && let TLock::Exclusive(w) = self.inodes.swap_remove(i).lock
        {
            return Ok(w);
        }
        Err(FsError::Invalid("kept inode was not joined exclusive"))
    }

    /// Before a roll commits: relog what the transaction holds and did not change itself,
    /// so none of it stays at an old place in the AIL while the chain goes on (an old item
    /// the chain keeps locked is one the AIL cannot write home, and the tail could not move
    /// past it).
    fn relog_held(&mut self, keep: &[&mut BufId]) {
        for t in &mut self.inodes {
            if let TLock::Exclusive(w) = &t.lock
                && t.logged == 0
                && w.inode().is_dirty()
            {
                t.logged = fields::CORE;
            }
        }
        for id in keep {
            let b = &mut self.bufs[id.0 as usize];
            if b.logged == 0
                && !(b.new || b.stale || b.ordered || b.pin_only)
                && b.guard.kind() != BlockKind::Inode
                && b.guard.is_dirty()
            {
                b.logged = b.guard.log_map();
            }
        }
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

    /// Format everything logged into log vectors and insert them into the CIL (XFS's
    /// `xfs_trans_commit` -> `xlog_cil_commit`); the objects are pinned until their
    /// checkpoint is stable. Returns the checkpoint sequence (0 when nothing was logged).
    fn commit_logged(&mut self) -> u64 {
        let fs = self.fs;
        // One item vector per item formatted here, recycled from earlier checkpoints: inode
        // cluster buffer items take large ones, the rest small ones (other buffer items are
        // formatted by the CIL, see below).
        let buf_items = self
            .bufs
            .iter()
            .filter(|b| !b.stale && (b.new || b.logged != 0) && b.guard.kind() == BlockKind::Inode)
            .count();
        let small_items = self.bufs.iter().filter(|b| b.stale).count()
            + self
                .inodes
                .iter()
                .filter(|t| t.logged != 0 && matches!(t.lock, TLock::Exclusive(_)))
                .count()
            + self.icreates.len();
        let mut spare = crate::fs::log::ItemBufs::default();
        fs.log.item_bufs(small_items, buf_items, &mut spare);
        // Inline up to a create's worth of items: these live only until the CIL takes them,
        // and on the heap they were three allocations and frees per commit.
        let mut vecs: SmallVec<[CommitItem; 16]> =
            SmallVec::with_capacity(self.bufs.len() + small_items);
        let mut bufs: SmallVec<[usize; 16]> = SmallVec::with_capacity(self.bufs.len());
        for (i, b) in self.bufs.iter_mut().enumerate() {
            if b.stale {
                // Freed: earlier images of the block must not be replayed over its next use.
                let g = &b.guard;
                vecs.push(CommitItem {
                    obj: CommitObj::buf(g),
                    data: item::format_cancel(
                        spare.small(),
                        g.kind(),
                        g.daddr().0,
                        g.bytes().len(),
                    ),
                    ail: false,
                    keep_oldest: false,
                    pins: 0,
                    source: None,
                });
                bufs.push(i);
                continue;
            }
            if std::mem::take(&mut b.ordered) {
                // Its bytes are not logged: the chunk's icreate item (filed under its first
                // buffer) recreates them; the others carry nothing but their AIL place.
                b.guard.add_logged(0);
                let g = &b.guard;
                let data = match self.icreates.iter().position(|c| c.0 == i) {
                    Some(k) => item::format_icreate(spare.small(), &self.icreates.swap_remove(k).1),
                    None => Vec::new(),
                };
                vecs.push(CommitItem {
                    obj: CommitObj::buf(g),
                    data,
                    ail: true,
                    keep_oldest: true,
                    pins: g.bytes().len() as u32,
                    source: None,
                });
                bufs.push(i);
                continue;
            }
            let map = std::mem::take(&mut b.logged);
            let new = std::mem::take(&mut b.new);
            if std::mem::take(&mut b.pin_only) && map == 0 && !new {
                b.guard.add_logged(0);
                bufs.push(i);
                continue;
            }
            if map == 0 && !new {
                continue;
            }
            let g = &mut b.guard;
            // Inode cluster buffers log only this transaction's chunks and keep their first
            // AIL position: the in-core inodes, logged as inode items, are newer than the
            // cluster's bytes for every slot not changed here (see log::item). Every other
            // buffer logs all it changed since it was last home, over zeros if it was made
            // new since (only what was written into it is logged; the rest is zero).
            let inode_buf = g.kind() == BlockKind::Inode;
            g.add_logged(map);
            if new {
                g.set_zeroed();
            }
            let (logmap, zeroed) = if inode_buf {
                (map, new)
            } else {
                (g.log_map(), g.is_zeroed())
            };
            #[cfg(any(debug_assertions, feature = "lockcheck"))]
            if zeroed {
                check_unlogged_zero(g.kind(), g.daddr().0, g.bytes(), logmap);
            }
            let g: &BufGuard = g;
            let obj = CommitObj::buf(g);
            let pins = g.bytes().len() as u32;
            if inode_buf {
                vecs.push(CommitItem {
                    obj,
                    data: item::format_buf(
                        spare.large(),
                        g.kind(),
                        g.daddr().0,
                        g.bytes(),
                        logmap,
                        zeroed,
                    ),
                    ail: true,
                    keep_oldest: true,
                    pins,
                    source: None,
                });
            } else {
                // Formatted by the CIL under its lock, over the context's earlier item for
                // this buffer when it has one: only this transaction's chunks are copied.
                // A buffer made new here was zeroed whole, so all of it is copied again.
                let source = BufSource {
                    bytes: g.bytes(),
                    kind: g.kind(),
                    daddr: g.daddr().0,
                    map: logmap,
                    changed: if new { logmap } else { map },
                    zeroed,
                };
                vecs.push(CommitItem {
                    obj,
                    data: Vec::new(),
                    ail: true,
                    keep_oldest: false,
                    pins,
                    source: Some(source),
                });
            }
            bufs.push(i);
        }
        let mut inodes: SmallVec<[(usize, bool); 4]> = SmallVec::with_capacity(self.inodes.len());
        for (i, t) in self.inodes.iter_mut().enumerate() {
            let f = std::mem::take(&mut t.logged);
            let TLock::Exclusive(w) = &mut t.lock else {
                continue;
            };
            if f == 0 {
                continue;
            }
            w.di.changecount += 1;
            w.set_dirty(true);
            let ino = w.inode().ino;
            let image = fs.dinode_image(w, ino);
            let w: &InodeWrite = w;
            vecs.push(CommitItem {
                obj: CommitObj::inode(w.inode()),
                data: item::format_inode(spare.small(), ino, f, &image),
                ail: true,
                keep_oldest: false,
                pins: 0,
                source: None,
            });
            inodes.push((i, f & !fields::TIMESTAMP != 0));
        }
        if vecs.is_empty() && inodes.is_empty() && bufs.is_empty() {
            return 0;
        }
        let res = std::mem::take(&mut self.log_res);
        // Drained in place: passing the inline vector by value would copy all its slots.
        let seq = fs.log.commit(vecs.drain(..), res);
        // Its items borrow the buffers and inodes, which are pinned and updated next.
        drop(vecs);
        fs.log.add_busy(std::mem::take(&mut self.freed), seq);
        for i in bufs {
            self.bufs[i].guard.pin(seq);
        }
        for (i, datasync) in inodes {
            if let TLock::Exclusive(w) = &mut self.inodes[i].lock {
                w.set_logged(seq, datasync);
            }
        }
        seq
    }

    fn finish(&mut self, keep: Option<InodeId>) -> FsResult<Option<InodeWrite>> {
        self.done = true;
        // After a shutdown nothing more reaches the log: the change stays in memory, unused.
        self.live()?;
        self.release_reservation();
        let dirty = self.is_dirty();
        debug_assert!(
            !(self.reader && dirty),
            "a read-only transaction logged a change"
        );
        self.count_commit();
        let seq = if dirty { self.commit_logged() } else { 0 };
        let res = std::mem::take(&mut self.log_res);
        if res > 0 {
            self.fs.log.release(res);
        }
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
        let sync = self.sync && seq > 0;
        self.bufs.clear();
        self.inodes.clear();
        if sync {
            self.fs.log.force_seq(seq, "xfs_trans_commit")?;
        }
        Ok(kept)
    }
}

impl Drop for Trans<'_> {
    fn drop(&mut self) {
        self.release_reservation();
        let res = std::mem::take(&mut self.log_res);
        if res > 0 {
            self.fs.log.release(res);
        }
        if !self.done && self.is_dirty() {
            // Changes were made in place and cannot be rolled back: stop the filesystem from
            // writing anything else home (XFS shuts down on a dirty transaction cancel).
            self.fs
                .shutdown("a transaction was cancelled after changing metadata");
        }
        let (mut bufs, mut inodes) = (
            std::mem::take(&mut self.bufs),
            std::mem::take(&mut self.inodes),
        );
        // Release what is still held (a cancelled or read-only transaction's buffers and
        // locks) before the vectors are kept for the next transaction.
        bufs.clear();
        inodes.clear();
        if bufs.capacity() <= SPARE_MAX_BUFS {
            // (During the thread's exit the slot may be gone: the vectors are then just freed.)
            let _ = SPARE_VECS.try_with(|s| s.set(Some((bufs, inodes))));
        }
    }
}

/// The largest buffer vector kept for reuse: a transaction that held many buffers (a big
/// truncate's batch) does not leave its memory parked in every thread that ran one.
const SPARE_MAX_BUFS: usize = 64;

thread_local! {
    /// The emptied held-buffer and held-inode vectors of this thread's last transaction, taken
    /// by its next one: every create, lookup and write-back runs a transaction, and fresh
    /// vectors were two allocations and frees each time.
    static SPARE_VECS: std::cell::Cell<Option<(Vec<TBuf>, Vec<TInode>)>> =
        const { std::cell::Cell::new(None) };
}
