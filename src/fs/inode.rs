//! The in-core inode: what labfs keeps in memory for each cached inode, and its lock.
//!
//! Millions of these must fit in memory (thread 002 is about sync() with ~10M cached inodes),
//! so a clean cached inode is small: the decoded core fields, the data fork (an extent list
//! that does not allocate when empty; shortform directory bytes), a few state bits, and the
//! lock, one word. Page cache and other per-file I/O state live in [`InodeCore::ext`], a side
//! structure that exists only while a file has cached data.
//!
//! The lock is the ILOCK: shared for lookups and reads, exclusive for changes. Guards are
//! owned ([`InodeWrite`], [`InodeRead`]) so a transaction can hold the inodes it joined until
//! commit, the way it holds its buffers.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use parking_lot::RwLock;
use parking_lot::lock_api::RawRwLock as _;
use thin_vec::ThinVec;

use crate::fs::error::{FsError, FsResult};
use crate::fs::format::BLOCK_SIZE;
use crate::fs::format::dinode::{DinodeCore, ForkFormat};
use crate::fs::lockcheck::{self, Held, LockClass, LockId};
use crate::fs::log::item::CilSlot;
use crate::fs::vfs::{FileKind, FileStat};

/// Mode bits of a regular file (S_IFREG).
pub const S_IFREG: u16 = 0o100000;
/// Mode bits of a directory (S_IFDIR).
pub const S_IFDIR: u16 = 0o040000;
/// Mode bits of a symlink (S_IFLNK).
pub const S_IFLNK: u16 = 0o120000;
/// Type mask (S_IFMT).
pub const S_IFMT: u16 = 0o170000;
/// Set-group-ID bit (S_ISGID): on a directory, new entries take its group.
pub const S_ISGID: u16 = 0o2000;

/// One mapping of file blocks to disk blocks: the bmbt record type, used in core too.
pub use crate::fs::btree::kinds::BmbtRec as Extent;

/// `startblock` of an extent whose blocks are reserved but not yet allocated (delayed
/// allocation; XFS's "nullstartblock").
pub const DELALLOC: u64 = u64::MAX;

impl Extent {
    /// One past the last file block.
    pub fn end(&self) -> u64 {
        self.startoff + u64::from(self.blockcount)
    }

    /// Whether this is a delayed-allocation reservation.
    pub fn is_delalloc(&self) -> bool {
        self.startblock == DELALLOC
    }
}

/// What an extent-list change did, so the on-disk tree can follow it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ListChange {
    /// Records removed (as they were).
    pub removed: Vec<Extent>,
    /// Records added (as they are now).
    pub added: Vec<Extent>,
}

impl ListChange {
    /// Add what `other` did to this change.
    pub(crate) fn merge(&mut self, other: ListChange) {
        self.removed.extend(other.removed);
        self.added.extend(other.added);
    }

    /// Drop records that were added and then removed again within this change.
    pub(crate) fn simplify(&mut self) {
        let mut i = 0;
        while i < self.added.len() {
            if let Some(j) = self.removed.iter().position(|r| *r == self.added[i]) {
                self.removed.swap_remove(j);
                self.added.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// Where a B+tree-format data fork's tree is rooted (the B+tree's own root type).
pub use crate::fs::btree::Root as ForkRoot;

/// A fork's in-core extent list: one pointer wide (its length and capacity live with the
/// extents on the heap, and an empty list allocates nothing), so that with every variant of
/// [`DataFork`] a pointer the fork is 16 bytes, not the 24 a `Vec` makes it. Those 8 bytes,
/// with [`InodeCore`]'s others, keep a cached inode and its `Arc` header in 160 bytes: the
/// allocator's size class below 192 (10M cached inodes: 320 MB).
pub type ExtentList = ThinVec<Extent>;

/// The data fork: what a file's or directory's contents map to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataFork {
    /// Bytes inside the inode (shortform directory, inline symlink target).
    Local(ThinVec<u8>),
    /// Extents, sorted by `startoff`, kept in the inode (≤ 21 on disk).
    Extents(ExtentList),
    /// Extents, also kept in an extent-map B+tree. Boxed: few files have a tree, and inline
    /// its root made every cached inode 16 bytes bigger (the fork 40 bytes, not 24).
    Btree(Box<BtreeFork>),
}

/// A B+tree-format data fork: the in-core list is the authoritative copy for lookups, the
/// tree its on-disk form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtreeFork {
    /// The tree's root.
    pub root: ForkRoot,
    /// Every extent, sorted by `startoff`.
    pub extents: ExtentList,
}

impl Default for DataFork {
    fn default() -> Self {
        DataFork::Extents(ExtentList::new())
    }
}

impl DataFork {
    /// The on-disk format this fork is written in.
    pub fn format(&self) -> ForkFormat {
        match self {
            DataFork::Local(_) => ForkFormat::Local,
            DataFork::Extents(_) => ForkFormat::Extents,
            DataFork::Btree(_) => ForkFormat::Btree,
        }
    }

    /// The extent list (empty for a local fork).
    pub fn extents(&self) -> &[Extent] {
        match self {
            DataFork::Local(_) => &[],
            DataFork::Extents(v) => v,
            DataFork::Btree(b) => &b.extents,
        }
    }
}

/// Per-file state that exists only while a file has cached data: its page cache.
pub type InodeExt = crate::fs::pagecache::FileCache;

/// Everything protected by the inode lock.
#[derive(Debug, Default)]
pub struct InodeCore {
    /// The on-disk core fields.
    pub di: DinodeCore,
    /// The data fork.
    pub fork: DataFork,
    /// The checkpoint sequence of the last transaction that logged this inode (XFS's
    /// `ili_commit_seq`): while that checkpoint is not stable the inode is pinned, and
    /// fsync forces the log up to it. (Whether the inode has changes not yet written home
    /// is [`iflags::DIRTY`]: as a bool here it made the core 8 bytes bigger.)
    pub log_seq: u64,
    /// How far [`InodeCore::datasync_seq`] is behind `log_seq`: 4 bytes where the sequence
    /// itself took 8 (see [`ExtentList`] for why they count).
    datasync_lag: u32,
    /// Open file descriptions referring to this inode (an unlinked inode is freed when
    /// this reaches zero).
    pub opens: u32,
    /// Page cache and other I/O state, when the file has any.
    pub ext: Option<Box<InodeExt>>,
}

impl InodeCore {
    /// A clean, unopened core holding `di` and `fork`, never logged.
    pub fn new(di: DinodeCore, fork: DataFork) -> InodeCore {
        InodeCore {
            di,
            fork,
            ..InodeCore::default()
        }
    }

    /// The checkpoint sequence of the last change other than timestamps: what fdatasync
    /// forces.
    pub fn datasync_seq(&self) -> u64 {
        self.log_seq - u64::from(self.datasync_lag)
    }

    /// Record that checkpoint `seq` logged this inode; `datasync` when the change was more
    /// than timestamps. A lag too large to keep is kept as the largest: fdatasync then
    /// forces a later checkpoint than it needs, never an earlier one.
    pub fn set_logged(&mut self, seq: u64, datasync: bool) {
        let since = if datasync { seq } else { self.datasync_seq() };
        self.log_seq = seq;
        self.datasync_lag = u32::try_from(seq.saturating_sub(since)).unwrap_or(u32::MAX);
    }

    /// The file type bits.
    pub fn file_type(&self) -> u16 {
        self.di.mode & S_IFMT
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }

    /// Whether this is a regular file.
    pub fn is_reg(&self) -> bool {
        self.file_type() == S_IFREG
    }

    /// Whether this is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }

    /// stat(2) of this inode (number `ino`): delayed-allocation blocks count as used, as
    /// XFS's `xfs_vn_getattr` adds `i_delayed_blks`.
    pub fn stat(&self, ino: u64) -> FileStat {
        let delalloc: u64 = self
            .fork
            .extents()
            .iter()
            .filter(|e| e.is_delalloc())
            .map(|e| u64::from(e.blockcount))
            .sum();
        FileStat {
            ino,
            kind: self.kind(),
            mode: u32::from(self.di.mode),
            nlink: self.di.nlink,
            uid: self.di.uid,
            gid: self.di.gid,
            size: self.di.size,
            blocks: (self.di.nblocks + delalloc) * (BLOCK_SIZE as u64 / 512),
            blksize: BLOCK_SIZE as u32,
            atime_ns: self.di.atime,
            mtime_ns: self.di.mtime,
            ctime_ns: self.di.ctime,
        }
    }

    /// The kind, as the Target surface reports it.
    pub fn kind(&self) -> FileKind {
        match self.file_type() {
            S_IFREG => FileKind::File,
            S_IFDIR => FileKind::Dir,
            S_IFLNK => FileKind::Symlink,
            _ => FileKind::Other,
        }
    }
}

/// Bits of an inode's `flags` word (changed without the inode lock, so atomic).
pub mod iflags {
    /// On the mount's dirty-inode list.
    pub const ON_DIRTY_LIST: u8 = 1 << 0;
    /// On the mount's writeback list (data I/O in flight).
    pub const ON_WB_LIST: u8 = 1 << 1;
    /// Freed: unlinked and released; must not be handed out again.
    pub const FREED: u8 = 1 << 2;
    /// On the mount's list of inodes with dirty data.
    pub const ON_DATA_LIST: u8 = 1 << 3;
    /// Stale (XFS's `XFS_ISTALE`): its last logged state, a free inode, must never be
    /// written home: its whole chunk was freed (the cluster blocks are free space now), or a
    /// later owner of the number, freed too, supersedes it.
    pub const STALE: u8 = 1 << 4;
    /// Queued for inactivation (XFS's `XFS_NEED_INACTIVE`): no links and no opens left, its
    /// blocks and number still allocated until the inodegc worker frees them.
    pub const NEED_INACTIVE: u8 = 1 << 5;
    /// Logged changes not yet written to the inode's home location. Set and cleared only
    /// with the inode lock held exclusively ([`InodeWrite::set_dirty`](super::InodeWrite::set_dirty)),
    /// so a holder of either lock reads a settled value.
    pub const DIRTY: u8 = 1 << 6;
}

/// A cached inode.
pub struct Inode {
    /// Inode number.
    pub ino: u64,
    /// Used since the cache last swept (second-chance reclaim).
    pub(crate) referenced: AtomicBool,
    /// List membership bits, [`iflags`].
    pub(crate) flags: AtomicU8,
    /// Where the inode's item sits in the CIL (see [`CilSlot`]); it fills padding, so the
    /// cached inode does not grow.
    pub(crate) cil_slot: CilSlot,
    core: RwLock<InodeCore>,
}

impl fmt::Debug for Inode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inode")
            .field("ino", &self.ino)
            .finish_non_exhaustive()
    }
}

impl Inode {
    /// A cached inode holding `core`.
    pub fn new(ino: u64, core: InodeCore) -> Inode {
        Inode {
            ino,
            referenced: AtomicBool::new(true),
            flags: AtomicU8::new(0),
            cil_slot: CilSlot::default(),
            core: RwLock::new(core),
        }
    }

    /// Set flag bits; returns whether they were all clear before.
    pub(crate) fn set_flag(&self, bit: u8) -> bool {
        self.flags.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Clear flag bits; returns whether any was set.
    pub(crate) fn clear_flag(&self, bit: u8) -> bool {
        self.flags.fetch_and(!bit, Ordering::AcqRel) & bit != 0
    }

    /// Whether a flag bit is set.
    pub(crate) fn has_flag(&self, bit: u8) -> bool {
        self.flags.load(Ordering::Acquire) & bit != 0
    }

    /// Whether the inode has logged changes not yet written home ([`iflags::DIRTY`]).
    pub fn is_dirty(&self) -> bool {
        self.has_flag(iflags::DIRTY)
    }

    /// Refuse an inode that has been freed, with ENOENT (call with its lock held).
    ///
    /// A handle (`Arc<Inode>`) from a lookup does not pin the inode the way an open does: an
    /// unlink by another thread queues it for inactivation as soon as it has no links and no
    /// opens, the inodegc worker frees it, and its number can go to a new inode (a new
    /// in-core inode replaces this one in the cache). An operation through the old handle must then change nothing: mapping blocks
    /// into the freed fork (which may still be a removed directory's inline fork) or logging
    /// the stale core would corrupt the filesystem or the number's next owner. Inactivation
    /// sets [`iflags::FREED`] with the inode lock held, so checking under the lock is exact.
    pub fn check_allocated(&self) -> FsResult<()> {
        if self.has_flag(iflags::FREED) {
            Err(FsError::NotFound)
        } else {
            Ok(())
        }
    }
}

/// The lock-order identity of an inode's ILOCK.
fn ilock_id(ip: &Inode) -> LockId {
    LockId::new(LockClass::Ilock, ip.ino)
}

/// The inode lock held exclusive, owning a reference to the inode.
pub struct InodeWrite {
    ip: Arc<Inode>,
    _held: Held,
}

impl InodeWrite {
    /// Take the lock exclusive, waiting if needed (checked against the lock order first).
    #[track_caller]
    pub fn lock(ip: Arc<Inode>) -> InodeWrite {
        let held = lockcheck::wait(ilock_id(&ip));
        // SAFETY: the matching unlock happens exactly once, in Drop.
        unsafe { ip.core.raw().lock_exclusive() };
        InodeWrite { ip, _held: held }
    }

    /// Take the lock exclusive on an inode reached through a caller's handle, refusing one
    /// freed since the handle was taken; see [`Inode::check_allocated`].
    pub fn lock_allocated(ip: Arc<Inode>) -> FsResult<InodeWrite> {
        let w = InodeWrite::lock(ip);
        w.ip.check_allocated()?;
        Ok(w)
    }

    /// Take the lock exclusive if it is free.
    pub fn try_lock(ip: Arc<Inode>) -> Option<InodeWrite> {
        // SAFETY: on success the matching unlock happens in Drop.
        unsafe { ip.core.raw().try_lock_exclusive() }.map(|_token| InodeWrite {
            _held: lockcheck::tried(ilock_id(&ip)),
            ip,
        })
    }

    /// The inode.
    pub fn inode(&self) -> &Arc<Inode> {
        &self.ip
    }

    /// Mark the inode as having (or no longer having) logged changes not yet written home.
    pub fn set_dirty(&mut self, dirty: bool) {
        if dirty {
            self.ip.set_flag(iflags::DIRTY);
        } else {
            self.ip.clear_flag(iflags::DIRTY);
        }
    }
}

impl Deref for InodeWrite {
    type Target = InodeCore;
    fn deref(&self) -> &InodeCore {
        // SAFETY: we hold the lock exclusive for our whole lifetime.
        unsafe { &*self.ip.core.data_ptr() }
    }
}

impl DerefMut for InodeWrite {
    fn deref_mut(&mut self) -> &mut InodeCore {
        // SAFETY: we hold the lock exclusive and `&mut self` makes this the only access.
        unsafe { &mut *self.ip.core.data_ptr() }
    }
}

impl Drop for InodeWrite {
    fn drop(&mut self) {
        // SAFETY: taken exclusive in lock/try_lock, released once here.
        unsafe { self.ip.core.raw().unlock_exclusive(Default::default()) };
    }
}

/// The inode lock held shared, owning a reference to the inode.
pub struct InodeRead {
    ip: Arc<Inode>,
    _held: Held,
}

impl InodeRead {
    /// Take the lock shared, waiting if needed (checked against the lock order first).
    #[track_caller]
    pub fn lock(ip: Arc<Inode>) -> InodeRead {
        let held = lockcheck::wait(ilock_id(&ip));
        // SAFETY: the matching unlock happens exactly once, in Drop.
        unsafe { ip.core.raw().lock_shared() };
        InodeRead { ip, _held: held }
    }

    /// Take the lock shared on an inode reached through a caller's handle, refusing one freed
    /// since the handle was taken; see [`Inode::check_allocated`].
    pub fn lock_allocated(ip: Arc<Inode>) -> FsResult<InodeRead> {
        let r = InodeRead::lock(ip);
        r.ip.check_allocated()?;
        Ok(r)
    }

    /// Take the lock shared if no writer holds it.
    pub fn try_lock(ip: Arc<Inode>) -> Option<InodeRead> {
        // SAFETY: on success the matching unlock happens in Drop.
        unsafe { ip.core.raw().try_lock_shared() }.map(|_token| InodeRead {
            _held: lockcheck::tried(ilock_id(&ip)),
            ip,
        })
    }

    /// The inode.
    pub fn inode(&self) -> &Arc<Inode> {
        &self.ip
    }
}

impl Deref for InodeRead {
    type Target = InodeCore;
    fn deref(&self) -> &InodeCore {
        // SAFETY: we hold the lock shared; only shared references are handed out.
        unsafe { &*self.ip.core.data_ptr() }
    }
}

impl Drop for InodeRead {
    fn drop(&mut self) {
        // SAFETY: taken shared in lock/try_lock, released once here.
        unsafe { self.ip.core.raw().unlock_shared(Default::default()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_guard_excludes_readers_until_dropped() {
        let ip = Arc::new(Inode::new(5, InodeCore::default()));
        let mut w = InodeWrite::lock(Arc::clone(&ip));
        w.di.nlink = 2;
        assert!(InodeRead::try_lock(Arc::clone(&ip)).is_none());
        drop(w);
        let r = InodeRead::lock(Arc::clone(&ip));
        assert_eq!(r.di.nlink, 2);
        assert!(
            InodeRead::try_lock(Arc::clone(&ip)).is_some(),
            "readers share"
        );
        assert!(InodeWrite::try_lock(Arc::clone(&ip)).is_none());
    }

    #[test]
    fn flags_report_transitions() {
        let ip = Inode::new(1, InodeCore::default());
        assert!(ip.set_flag(iflags::ON_DIRTY_LIST));
        assert!(!ip.set_flag(iflags::ON_DIRTY_LIST));
        assert!(ip.has_flag(iflags::ON_DIRTY_LIST));
        assert!(ip.clear_flag(iflags::ON_DIRTY_LIST));
        assert!(!ip.clear_flag(iflags::ON_DIRTY_LIST));
    }

    #[test]
    fn clean_cached_inode_fits_the_160_byte_allocation_class() {
        // With its Arc header (two counts), a cached inode is one allocation; mimalloc's
        // classes go 128, 160, 192, so 8 bytes more would cost 32 (320 MB at 10M inodes).
        assert_eq!(std::mem::size_of::<DataFork>(), 16);
        let size = std::mem::size_of::<Inode>() + 2 * std::mem::size_of::<usize>();
        assert!(size <= 160, "Inode and its Arc header are {size} bytes");
    }

    #[test]
    fn datasync_sequence_trails_the_log_sequence_by_what_only_touched_timestamps() {
        let mut c = InodeCore::default();
        c.set_logged(5, true);
        assert_eq!((c.log_seq, c.datasync_seq()), (5, 5));
        c.set_logged(9, false);
        assert_eq!((c.log_seq, c.datasync_seq()), (9, 5));
        c.set_logged(12, true);
        assert_eq!((c.log_seq, c.datasync_seq()), (12, 12));
        // A lag past 32 bits is kept as the largest: later than the truth, never earlier.
        let far = 12 + (1u64 << 33);
        c.set_logged(far, false);
        assert_eq!(c.log_seq, far);
        assert!(c.datasync_seq() >= 12 && c.datasync_seq() < far);
    }
}
