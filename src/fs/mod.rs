//! labfs: a journaling filesystem modelled on XFS, in userspace.
//!
//! The design is written up in the repository's `docs/` folder: `architecture.md` (how a
//! metadata change travels: transaction → commit → write-back), `format.md` (every on-disk
//! structure, byte by byte), `locking.md` (the order below, explained) and `invariants.md`
//! (what must always hold, and the test oracle for each).
//!
//! ## Lock order
//! Locks are taken in this order and never against it (a thread holding a later lock never
//! waits for an earlier one):
//!
//! 0. log space: a transaction reserves it (`Trans::new`, waiting while the log is full)
//!    before it takes any lock below, as XFS's `xfs_trans_alloc` comes before `xfs_ilock`;
//! 1. inode locks (the ILOCK), in ascending inode number; a directory before the inodes it
//!    names only when its number is lower (`namei` sorts the set an operation needs);
//! 2. AGI buffers, ascending AG (inode allocation);
//! 3. AGF buffers, ascending AG (block allocation), then the AGFL;
//! 4. tree and directory blocks, root to leaf (under the lock of the object that owns them);
//! 5. inode cluster buffers (only ever taken last, and briefly, to flush or read inodes);
//! 6. cache shard locks and list locks (never held while waiting for anything else).
//!
//! An AG whose header would be locked out of order is only *tried* (`try_read_buf`) and skipped
//! if busy, as XFS does with `XFS_ALLOC_FLAG_TRYLOCK`. Blocks of 4 are covered by their owner:
//! an AG's tree blocks and AGFL by its AGF or AGI, a directory's or file's blocks by its ILOCK.
//!
//! Log space comes first because it comes back only as the AIL writes the items at the log's
//! tail home, and the AIL only *tries* inode and buffer locks: a thread waiting for space while
//! it holds the lock of the item at the tail would wait for ever, and every reservation with
//! it. An operation that keeps an inode locked across several transactions rolls one
//! (`Trans::roll`): the roll relogs what it holds and takes its own reservation again
//! (`Log::regrant`, XFS's permanent reservation) from the margin `Log::reserve` keeps back,
//! so it does not wait for new space with its locks held (and when the margin is used up its
//! wait is safe: nothing it holds is at the tail). `Fs::lock_sorted` only tries further inodes
//! once it holds one whose item is in the AIL, as XFS's `xfs_lock_inodes` does.
//!
//! [`lockcheck`] is this list as a type (`LockClass`, in this order, with the cross-directory
//! rename mutex before 0, and waiting for log space recorded as `LockClass::LogSpace`): every wait for a lock is checked against the locks the thread holds
//! and an inversion panics naming both, in debug builds and in release builds with the
//! `lockcheck` feature (the test command: `cargo test --release --features lockcheck`). New
//! lock classes (the journal's) are added there and here.
//!
//! Operations that free both blocks and an inode split into transactions so that no one
//! transaction holds an AGF and then waits for an AGI: inactivation (unlink, rmdir, rename
//! over an existing name, the last close of an unlinked file) first frees the file's blocks, a
//! batch per roll of its transaction (`Fs::free_range`, AGF only), keeping the inode locked,
//! then rolls (letting go of the AGFs) and frees the inode (AGI, then the AGF only if the
//! whole chunk goes), as XFS's `xfs_inactive` truncates before `xfs_ifree`. Truncate, punch and fallocate take no AGI at all. Allocating
//! a new inode chunk commits it and rolls the transaction holding only the AGI
//! (`Trans::roll`, XFS's `xfs_dialloc_roll`), so the chunk's cluster buffers are not held
//! while the rest of a create waits for an AGF.

//! ## Modules
//! Listed from the bottom up: a module imports only modules listed before it, but for
//! [`error`], which names [`format`](mod@format)'s block kinds while the decoders in `format`
//! return it. The layering and why are in the repository's `docs/architecture.md`, "Layers
//! inside labfs".
//! - [`lockcheck`]: the lock order as a type, checked at every wait.
//! - [`stats`]: XFS-layout statistics; [`vfs`]: the VFS-level types (file kinds, directory
//!   entries, fallocate modes) the layers above share; [`fastmap`]: the hasher of every
//!   in-memory index keyed by numbers or names.
//! - [`dev`]: block devices (memory, file, stripe; latency model; fault shim).
//! - [`error`]: the typed error every labfs operation returns.
//! - [`format`](mod@format): geometry constants, block kinds, magics, CRC offsets, endian helpers, and the
//!   byte-by-byte layouts of the superblock, AG headers and inodes.
//! - [`shutdown`]: the shut-down state a mount shares with its buffer cache.
//! - [`cksum`]: the one place metadata CRCs are computed and verified.
//! - [`geo`]: AG/block/inode number arithmetic.
//! - [`pagecache`]: a file's cached data pages (hung off its in-core inode).
//! - [`buf`]: the metadata buffer cache; [`bufclock`]: the CLOCK ring it evicts with.
//! - [`options`]: mount and mkfs options.
//! - [`btree`]: the one generic B+tree.
//! - [`inode`]: in-core inodes; [`icache`], [`dcache`]: the inode and name caches.
//! - [`log`]: the metadata journal: CIL, iclogs, log forces, the AIL's list, records,
//!   recovery. It stands below the mount and imports nothing above the inode and the
//!   buffer cache.
//! - [`core`](mod@core): the [`Fs`] struct (XFS's `xfs_mount`), its fields all of the types
//!   above. Each module above adds what the mount does in its own `impl Fs` block.
//! - [`trans`]: metadata transactions; [`aild`]: xfsaild, pushing the AIL's items home.
//! - [`treestore`]: a B+tree's blocks inside a transaction.
//! - [`alloc`], [`ialloc`]: free space and inode allocation.
//! - [`bmbt`], [`bmap`]: file block maps (the on-disk extent tree and the in-core extent
//!   lists).
//! - [`dir`]: directories (shortform, block, leaf, node); [`symlink`]: where a symbolic
//!   link's target is stored, and readlink.
//! - [`data`]: page cache I/O, delayed allocation, write-back, fsync.
//! - [`mount`]: mounting, syncing and unmounting a filesystem.
//! - [`namei`]: the namespace operations (create, unlink, rename, symlink, ...).
//! - [`check`]: fsck, the test oracle.
//! - [`mkfs`]: making a filesystem; [`admin`]: the admin tool's work on images.

pub mod admin;
pub mod aild;
pub mod alloc;
pub mod bmap;
pub mod bmbt;
pub mod btree;
pub mod buf;
pub mod bufclock;
pub mod check;
pub mod cksum;
pub mod core;
pub mod data;
pub mod dcache;
pub mod dev;
pub mod dir;
pub mod error;
pub mod fastmap;
pub mod format;
pub mod geo;
pub mod ialloc;
pub mod icache;
pub mod inode;
pub mod lockcheck;
pub mod log;
pub mod mkfs;
pub mod mount;
pub mod namei;
pub mod options;
pub mod pagecache;
pub mod shutdown;
pub mod stats;
pub mod symlink;
#[cfg(test)]
pub(crate) mod testing;
pub mod trans;
pub mod treestore;
pub mod vfs;

pub use self::core::Fs;

/// Now, in nanoseconds since the epoch (inode timestamps).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
