//! The mounted filesystem's shared state (XFS's `xfs_mount`): the one struct every subsystem
//! reaches the others through.
//!
//! Only the definition lives here, at the bottom of the filesystem's layers: its fields are
//! the lower modules' types (geometry, options, buffer cache, inode and name caches, log,
//! statistics), so defining it imports nothing that uses it. What the mount does is in the
//! `impl Fs` blocks of the modules that own each part: mounting and unmounting in `mount`,
//! pushing the AIL in `aild`, namespace operations in `namei`, the data path in `data`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64};

use crate::fs::buf::BufCache;
use crate::fs::dcache::Dcache;
use crate::fs::fastmap::FastMap;
use crate::fs::geo::Geometry;
use crate::fs::icache::InodeCache;
use crate::fs::inode::Inode;
use crate::fs::inodegc_queue::InodeGc;
use crate::fs::lockcheck::OrderedMutex;
use crate::fs::log::Log;
use crate::fs::options::MountOptions;
use crate::fs::shutdown::ShutdownState;
use crate::fs::stats::MountStats;
use crate::trace::Dev;

/// In-core per-AG summary, read without locks to choose where to allocate (XFS's `xfs_perag`).
/// The AGF and AGI buffers are the authority; these follow them under their locks.
#[derive(Debug, Default)]
pub struct PerAg {
    /// Free blocks in the free-space trees.
    pub freeblks: AtomicU32,
    /// Longest free extent.
    pub longest: AtomicU32,
    /// Allocated inodes.
    pub icount: AtomicU32,
    /// Free allocated inodes.
    pub ifree: AtomicU32,
}

/// A mounted labfs.
pub struct Fs {
    /// Where everything is.
    pub geo: Geometry,
    /// Filesystem UUID.
    pub uuid: [u8; 16],
    /// Root directory inode.
    pub rootino: u64,
    /// Mount options.
    pub opts: MountOptions,
    /// Metadata buffers.
    pub bufs: BufCache,
    /// In-core inodes.
    pub icache: InodeCache,
    /// Names already looked up, positive and negative (see [`crate::fs::dcache`]).
    pub dcache: Dcache,
    /// This mount's statistics (and the global ones).
    pub stats: Arc<MountStats>,
    /// Per-AG summaries.
    pub perag: Box<[PerAg]>,
    /// Free data blocks not yet promised to delayed allocations (sb_fdblocks).
    pub fdblocks: AtomicI64,
    /// The device number tracepoints print for this mount (major 0, like anonymous mounts).
    pub dev_id: Dev,
    /// AG to put the next new directory in.
    pub(crate) dir_rotor: AtomicU32,
    /// The metadata log.
    pub log: Log,
    /// xfsaild should stop (unmount).
    pub(crate) aild_stop: AtomicBool,
    /// Freed inodes whose free image is not yet home, by number: a new owner of the number
    /// is not written home before it (see `fs::aild`).
    pub(crate) freed_pending: OrderedMutex<FastMap<u64, Arc<Inode>>>,
    /// The xfsaild thread, until unmount stops it.
    pub(crate) aild: OrderedMutex<Option<std::thread::JoinHandle<()>>>,
    /// Inodes with dirty data pages.
    pub(crate) dirty_data: OrderedMutex<Vec<Arc<Inode>>>,
    /// Inodes under data write-back (the superblock writeback list of thread 002).
    pub(crate) wb_list: OrderedMutex<FastMap<u64, Arc<Inode>>>,
    /// Dirty data pages in all page caches.
    pub(crate) dirty_data_pages: AtomicU64,
    /// Pages in all page caches.
    pub(crate) cached_pages: AtomicU64,
    /// Bytes of clean pages the page caches may keep: `dirty=` over a device slower than
    /// memory, none over one that reads at memory speed (see `Fs::trim_page_cache`). Fixed
    /// at mount, so write-back does not ask the device stack every time.
    pub(crate) clean_page_budget: u64,
    /// Serialises cross-directory renames.
    pub(crate) rename_lock: OrderedMutex<()>,
    /// Unlinked inodes waiting for background inactivation, and the worker that frees them.
    pub inodegc: InodeGc,
    /// Shared with `bufs`, whose failed write-homes set it.
    pub(crate) shutdown: Arc<ShutdownState>,
    /// Unmount has run (a second one does nothing).
    pub(crate) unmounted: AtomicBool,
    /// The volume label, as the superblock holds it.
    pub(crate) fname: [u8; 12],
}

impl std::fmt::Debug for Fs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fs")
            .field("geo", &self.geo)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}
