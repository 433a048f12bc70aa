//! The metadata log: delayed logging (CIL), iclogs, log forces with group commit, the AIL.
//!
//! ```text
//!  Trans::commit ─► CIL context (one formatted vector per item; relogging replaces it)
//!                     │ checkpoint: log force, 1/8 of the log in the CIL, or an AIL flush
//!                     ▼
//!  iclog ring ─ ACTIVE → WANT_SYNC → SYNCING → DONE_SYNC → CALLBACK → ACTIVE
//!                     │ record = header sector(s) + ops, cycle-stamped, CRC'd; PREFLUSH+FUA
//!                     ▼
//!  commit record durable ─► items unpinned, into the AIL at the checkpoint's start LSN,
//!                           fsync waiters for that sequence wake
//!  xfsaild ─► items written home (try-locks; pinned / locked / flushing outcomes)
//!             ─► tail moves, log-space waiters wake
//! ```
//!
//! Differences from XFS, each for simplicity and each safe:
//! - One checkpoint is formatted at a time (the push mutex) and iclog writes are issued and
//!   completed strictly in ring order, one at a time; batching comes from the CIL and from
//!   forces that sleep while the previous iclog is in flight, as in XFS.
//! - Every iclog write is PREFLUSH+FUA, so the tail in its header never runs ahead of the
//!   home writes that let it move, and each record is stable when its write returns.
//! - LSNs are kept as absolute 512-byte block counts (`cycle * log_bb + block`) inside the
//!   log code and turned into XFS's `(cycle << 32) | block` at the edges.
//!
//! Submodules: [`item`] (the payload: ops and item formats), [`record`] (record headers,
//! cycle stamping, the record CRC), [`scan`] (finding the valid window of records),
//! [`ail`] (the AIL and its pusher), [`recover`] (replay at mount), `busy` (freed extents not
//! yet stable).

pub mod ail;
mod busy;
pub mod item;
pub mod record;
pub mod recover;
pub mod scan;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Condvar;

use crate::fs::buf::{BufGuard, BufLock};
use crate::fs::cksum::Cksum;
use crate::fs::dev::BlockDev;
use crate::fs::error::{FsError, FsResult, IoOp, ShutdownReason};
use crate::fs::inode::Inode;
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};
use crate::fs::log::ail::Ail;
use crate::fs::log::busy::BusyExtents;
use crate::fs::log::item::{
    CLIENT_LOG, CLIENT_TRANS, ChunkMap, CilSlot, OP_COMMIT, OP_CONTINUE, OP_HEADER_LEN, OP_START,
    OP_UNMOUNT, OP_WAS_CONT, OpHeader,
};
use crate::fs::log::record::{Lsn, RecordHeader};
use crate::fs::shutdown::ShutdownState;
use crate::fs::stats::{MountStats, Stat};
use crate::trace::Dev;

/// An object a log item describes: a metadata buffer or an in-core inode. Identity is the
/// object, not its address: a freed block or inode number can get a new object while the
/// old one still has state in the log.
#[derive(Clone)]
pub enum ItemRef {
    /// A metadata buffer.
    Buf(Arc<BufLock>),
    /// An in-core inode.
    Inode(Arc<Inode>),
}

impl ItemRef {
    /// The object's identity (its address, kept alive by the reference).
    pub fn id(&self) -> usize {
        self.as_obj().id()
    }

    /// The object, borrowed.
    pub fn as_obj(&self) -> ObjRef<'_> {
        match self {
            ItemRef::Buf(b) => ObjRef::Buf(b),
            ItemRef::Inode(i) => ObjRef::Inode(i),
        }
    }

    /// The id inode `ip`'s item has, without making the item.
    pub fn inode_id(ip: &Arc<Inode>) -> usize {
        Arc::as_ptr(ip) as *const u8 as usize
    }

    /// XFS's item type name, for traces.
    pub fn type_name(&self) -> &'static str {
        match self {
            ItemRef::Buf(_) => "XFS_LI_BUF",
            ItemRef::Inode(_) => "XFS_LI_INODE",
        }
    }
}

/// An object a committing transaction holds, borrowed: the CIL takes a reference of its own
/// only when it does not hold the object's item yet. Most of a create's items relog objects
/// the CIL already holds (the directory's blocks, the AG headers), and a reference made and
/// dropped for each of them was two atomic operations on counts the AIL's thread also
/// touches (the drop alone a quarter of `Log::commit`'s samples).
#[derive(Clone, Copy)]
pub enum ObjRef<'a> {
    /// A metadata buffer.
    Buf(&'a Arc<BufLock>),
    /// An in-core inode.
    Inode(&'a Arc<Inode>),
}

impl ObjRef<'_> {
    /// The object's identity: its address, which a held reference keeps from being reused.
    pub fn id(self) -> usize {
        match self {
            ObjRef::Buf(b) => Arc::as_ptr(b) as *const u8 as usize,
            ObjRef::Inode(i) => ItemRef::inode_id(i),
        }
    }

    /// A reference of the CIL's own.
    fn to_item(self) -> ItemRef {
        match self {
            ObjRef::Buf(b) => ItemRef::Buf(Arc::clone(b)),
            ObjRef::Inode(i) => ItemRef::Inode(Arc::clone(i)),
        }
    }
}

/// One item of a transaction on its way into the CIL ([`Log::commit`]).
pub struct CommitItem<'a> {
    /// The object, with its CIL slot.
    pub obj: CommitObj<'a>,
    /// The formatted item, as [`LogVec::data`]; empty when `source` is given.
    pub data: Vec<u8>,
    /// As [`LogVec::ail`].
    pub ail: bool,
    /// As [`LogVec::keep_oldest`].
    pub keep_oldest: bool,
    /// As [`LogVec::pins`].
    pub pins: u32,
    /// A buffer item the CIL formats itself (see [`BufSource`]).
    pub source: Option<BufSource<'a>>,
}

/// The object a commit item describes and its [`CilSlot`], taken from the one object so the
/// two cannot disagree.
pub struct CommitObj<'a> {
    obj: ObjRef<'a>,
    slot: &'a CilSlot,
}

impl<'a> CommitObj<'a> {
    /// A buffer the committing transaction holds locked.
    pub fn buf(g: &'a BufGuard) -> CommitObj<'a> {
        CommitObj {
            obj: ObjRef::Buf(BufGuard::arc(g)),
            slot: g.cil_slot(),
        }
    }

    /// An in-core inode.
    pub fn inode(ip: &'a Arc<Inode>) -> CommitObj<'a> {
        CommitObj {
            obj: ObjRef::Inode(ip),
            slot: &ip.cil_slot,
        }
    }
}

impl std::fmt::Debug for ItemRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{:#x}", self.type_name(), self.id())
    }
}

/// Item vectors a commit formats into ([`Log::item_bufs`]).
#[derive(Default)]
pub struct ItemBufs {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
}

impl ItemBufs {
    /// A vector for an inode, cancel or icreate item.
    pub fn small(&mut self) -> Vec<u8> {
        self.small.pop().unwrap_or_default()
    }

    /// A vector for a buffer item: one that holds any (a new one is made that size, so it
    /// is recycled as a large one).
    pub fn large(&mut self) -> Vec<u8> {
        self.large
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(item::MAX_BUF_ITEM))
    }
}

/// One item as a transaction hands it to the CIL.
pub struct LogVec {
    /// The object.
    pub obj: ItemRef,
    /// The formatted item ([`item`]); empty for an ordered buffer that another item
    /// recreates at recovery (it takes an AIL place but writes no op).
    pub data: Vec<u8>,
    /// Whether the item goes into the AIL when its checkpoint is stable (a cancel does not:
    /// nothing is left to write home).
    pub ail: bool,
    /// Whether a relogged item keeps its older AIL position instead of moving forward: its
    /// vector carries only this checkpoint's changes (inode cluster buffers).
    pub keep_oldest: bool,
    /// Bytes of buffer memory the item pins until its checkpoint is stable (a buffer's
    /// length; 0 for an inode).
    pub pins: u32,
}

/// A buffer item a commit leaves the CIL to format, from the buffer the committing
/// transaction still holds locked: relogged in place over the context's earlier item for the
/// buffer when there is one ([`item::relog_buf`]), else formatted whole.
pub struct BufSource<'a> {
    /// The buffer's bytes.
    pub bytes: &'a [u8],
    /// What the block holds.
    pub kind: crate::fs::format::BlockKind,
    /// Where it is.
    pub daddr: u64,
    /// Every chunk the item carries (changed since the block was last written home).
    pub map: ChunkMap,
    /// The chunks this transaction changed.
    pub changed: ChunkMap,
    /// Whether the item is logged over zeros.
    pub zeroed: bool,
}

struct CilItem {
    vec: LogVec,
}

/// A relogged buffer item is exactly the item formatting it whole would make (checked in
/// debug and lock-checked builds, so the whole test suite holds [`item::relog_buf`] to it).
#[cfg(any(debug_assertions, feature = "lockcheck"))]
fn check_relogged(relogged: &[u8], src: &BufSource<'_>) {
    let whole = item::format_buf(
        Vec::new(),
        src.kind,
        src.daddr,
        src.bytes,
        src.map,
        src.zeroed,
    );
    assert!(
        relogged == whole.as_slice(),
        "relogged {} item at {} differs from its whole format",
        src.kind,
        src.daddr
    );
}

/// The CIL's current context: everything committed since the last checkpoint.
struct Cil {
    seq: u64,
    items: Vec<CilItem>,
    bytes: u64,
    /// Buffer memory the context's items pin (each buffer counted once).
    pinned: u64,
    /// Item vectors a checkpoint wrote or a relog replaced, for commits to format into
    /// ([`Log::item_bufs`]), in two sizes: `large` ones hold any buffer item, `small` ones
    /// inode, cancel and icreate items. Commits allocate item vectors and xfsaild's
    /// background pushes dropped them: freeing another thread's blocks took its malloc
    /// arena's lock on every item, and the two threads queued on it. One pool of mixed
    /// sizes made buffer items grow small vectors, and reallocating in a heap of millions
    /// of objects was a tenth of a create at 3M files.
    spare: SpareVecs,
    /// The item list of the previous context, emptied, to be the next one's.
    spare_items: Vec<CilItem>,
    /// Large spare vectors kept at most: whole buffer items enough to fill a quarter of the
    /// log, twice the size at which a context is pushed. A big directory's contexts relog
    /// thousands of whole blocks; with a fixed 1024 each one dropped most of the last one's
    /// vectors (freed by xfsaild's thread) and took fresh memory for its own.
    spare_large_max: usize,
}

/// Spare item vectors the CIL keeps: at most this many small ones, and room for at least
/// this many large ones (4 MiB of buffer items).
const SPARE_VECS: usize = 1024;

/// Recycled item vectors, by size ([`Cil::spare`]).
#[derive(Default)]
struct SpareVecs {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
}

impl Cil {
    fn new(seq: u64, log_bytes: u64) -> Cil {
        Cil {
            seq,
            items: Vec::new(),
            bytes: 0,
            pinned: 0,
            spare: SpareVecs::default(),
            spare_items: Vec::new(),
            spare_large_max: SPARE_VECS.max((log_bytes / 4) as usize / item::MAX_BUF_ITEM),
        }
    }

    /// Keep `v` for a later commit to format into, unless enough are kept already.
    fn recycle(&mut self, v: Vec<u8>) {
        let (pool, max) = if v.capacity() >= item::MAX_BUF_ITEM {
            (&mut self.spare.large, self.spare_large_max)
        } else {
            (&mut self.spare.small, SPARE_VECS)
        };
        if pool.len() < max {
            pool.push(v);
        }
    }
}

/// The states of an iclog (XFS's `XLOG_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IclogState {
    /// Being filled.
    Active,
    /// Full or forced: no more copies in; waiting to be written.
    WantSync,
    /// Its write was submitted.
    Syncing,
    /// Its write finished.
    DoneSync,
    /// Running its completion callbacks.
    Callback,
}

impl IclogState {
    fn name(self) -> &'static str {
        match self {
            IclogState::Active => "XLOG_STATE_ACTIVE",
            IclogState::WantSync => "XLOG_STATE_WANT_SYNC",
            IclogState::Syncing => "XLOG_STATE_SYNCING",
            IclogState::DoneSync => "XLOG_STATE_DONE_SYNC",
            IclogState::Callback => "XLOG_STATE_CALLBACK",
        }
    }
}

/// The `xlog_iclog_*` events, by the point of the iclog's life they mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IclogEvent {
    GetSpace,
    Switch,
    Release,
    Syncing,
    Sync,
    Write,
    SyncDone,
    Callback,
    CallbacksStart,
    CallbacksDone,
    Clean,
    Activate,
    Force,
    ForceLsn,
    WaitOn,
}

/// A checkpoint whose commit record sits in an iclog: what completing that iclog does.
struct Checkpoint {
    seq: u64,
    start: u64,
    items: Vec<(ItemRef, bool)>,
}

struct Iclog {
    state: IclogState,
    /// Ops written so far (the record's payload before padding).
    data: Vec<u8>,
    /// The record built from `data` for its write (kept to reuse its allocation).
    image: Vec<u8>,
    ops: u32,
    /// Where the record's header goes (absolute block).
    at: u64,
    /// Order in which iclogs were switched out; writes go in this order.
    wseq: u64,
    callbacks: Vec<Checkpoint>,
}

struct Ring {
    icl: Vec<Iclog>,
    curr: usize,
    /// Where the next iclog switched in will start (absolute block).
    next_at: u64,
    /// Switch-outs so far, and writes completed (in order).
    switched: u64,
    written: u64,
    /// Start blocks of checkpoints written but not yet complete: the tail may not pass them.
    in_flight: BTreeSet<u64>,
    /// The previous record's block, for `h_prev_block`.
    prev_block: u32,
}

struct Space {
    granted: u64,
}

/// Where the log starts and how its iclogs are shaped.
#[derive(Debug, Clone, Copy)]
pub struct LogGeometry {
    /// First sector of the log on the device.
    pub start_daddr: u64,
    /// Log length in 512-byte blocks.
    pub log_bb: u32,
    /// In-core log buffers (`logbufs`).
    pub logbufs: u32,
    /// Bytes per in-core log buffer (`logbsize`).
    pub logbsize: u32,
}

/// What a log shares with its mount.
pub struct LogMount {
    /// The device (the log is internal).
    pub dev: Arc<dyn BlockDev>,
    /// The mount's checksum configuration (record CRCs).
    pub cksum: Cksum,
    /// The filesystem UUID, stamped in every record header.
    pub uuid: [u8; 16],
    /// The mount's statistics.
    pub stats: Arc<MountStats>,
    /// The device number traces print.
    pub dev_id: Dev,
    /// The buffer cache's cell for the stable checkpoint sequence.
    pub stable: Arc<AtomicU64>,
    /// The mount's shutdown state.
    pub shutdown: Arc<ShutdownState>,
    /// Buffer memory the CIL may pin before a background push (a quarter of the buffer
    /// cache's limit), so a cache with a memory limit can always be relieved.
    pub pin_limit: u64,
}

/// A mount's log.
pub struct Log {
    dev: Arc<dyn BlockDev>,
    cksum: Cksum,
    uuid: [u8; 16],
    stats: Arc<MountStats>,
    /// The device number its tracepoints print (the mount's).
    pub(crate) dev_id: Dev,
    geo: LogGeometry,
    /// Payload bytes an iclog holds (its size less its header sectors).
    icl_payload: usize,
    push: OrderedMutex<()>,
    cil: OrderedMutex<Cil>,
    ring: OrderedMutex<Ring>,
    ring_cv: Condvar,
    pub(crate) ail: OrderedMutex<Ail>,
    /// xfsaild's thread, to wake it.
    aild: std::sync::OnceLock<std::thread::Thread>,
    space: OrderedMutex<Space>,
    space_cv: Condvar,
    /// Highest checkpoint sequence whose commit record is stable (shared with the buffer
    /// cache, which must not write a buffer pinned by a later one).
    stable: Arc<AtomicU64>,
    /// Highest checkpoint sequence handed to the iclogs.
    pushed: AtomicU64,
    /// Absolute block of the head (end of what the iclogs hold) and of the tail.
    head_abs: AtomicU64,
    tail_abs: AtomicU64,
    /// Bytes in the CIL, counted against log space until checkpointed.
    cil_bytes: AtomicU64,
    /// A background push was asked for (the CIL passed 1/8 of the log).
    pub(crate) want_push: AtomicBool,
    /// The mount's shutdown state: a failed log write shuts the filesystem down.
    shutdown: Arc<ShutdownState>,
    /// Bytes transactions logged beyond their reservation (a reservation too small).
    overrun: AtomicU64,
    /// Freed extents (first block, length, checkpoint) not yet known stable.
    busy: OrderedMutex<BusyExtents>,
    /// See [`LogMount::pin_limit`].
    pin_limit: u64,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").field("geo", &self.geo).finish()
    }
}

/// Blocks of header a record of `payload` bytes needs.
fn header_blocks(payload: usize) -> u64 {
    record::header_sectors(payload) as u64
}

impl Log {
    /// A log over `geo` whose next record goes at absolute block `next_at` (from recovery,
    /// or the start of an empty log) with nothing older still needed.
    pub fn new(mount: LogMount, geo: LogGeometry, next_at: u64) -> Log {
        let LogMount {
            dev,
            cksum,
            uuid,
            stats,
            dev_id,
            stable,
            shutdown,
            pin_limit,
        } = mount;
        let hsize = record::header_sectors(geo.logbsize as usize) * record::HEADER_SIZE;
        let icl_payload = geo.logbsize as usize - hsize;
        let icl = (0..geo.logbufs.max(2))
            .map(|_| Iclog {
                state: IclogState::Active,
                data: Vec::with_capacity(icl_payload),
                image: Vec::new(),
                ops: 0,
                at: 0,
                wseq: 0,
                callbacks: Vec::new(),
            })
            .collect::<Vec<_>>();
        let mut ring = Ring {
            icl,
            curr: 0,
            next_at,
            switched: 0,
            written: 0,
            in_flight: BTreeSet::new(),
            prev_block: 0,
        };
        ring.icl[0].at = next_at;
        stable.store(0, Ordering::Release);
        Log {
            dev,
            cksum,
            uuid,
            stats,
            dev_id,
            geo,
            icl_payload,
            push: OrderedMutex::new(LockId::new(LockClass::LogPush, 0), ()),
            cil: OrderedMutex::new(
                LockId::new(LockClass::LogCil, 0),
                Cil::new(1, u64::from(geo.log_bb) * 512),
            ),
            ring: OrderedMutex::new(LockId::new(LockClass::LogIclog, 0), ring),
            ring_cv: Condvar::new(),
            ail: OrderedMutex::new(LockId::new(LockClass::LogAil, 0), Ail::default()),
            aild: std::sync::OnceLock::new(),
            space: OrderedMutex::new(LockId::new(LockClass::LogGrant, 0), Space { granted: 0 }),
            space_cv: Condvar::new(),
            stable,
            pushed: AtomicU64::new(0),
            head_abs: AtomicU64::new(next_at),
            tail_abs: AtomicU64::new(next_at),
            cil_bytes: AtomicU64::new(0),
            want_push: AtomicBool::new(false),
            shutdown,
            overrun: AtomicU64::new(0),
            busy: OrderedMutex::new(LockId::new(LockClass::List, 0), BusyExtents::default()),
            pin_limit,
        }
    }

    /// Extents freed by checkpoint `seq`: busy until it is stable.
    pub(crate) fn add_busy(&self, freed: Vec<(u64, u32)>, seq: u64) {
        if freed.is_empty() {
            return;
        }
        let stable = self.stable_seq();
        let mut busy = self.busy.lock();
        busy.expire(stable);
        for (block, len) in freed {
            busy.insert(block, len, seq);
        }
    }

    /// Before data is written to blocks `fsblock..+len` just allocated: if a free of any of
    /// them is not yet stable, force the log up to it (XFS's `xfs_extent_busy_flush`), so a
    /// crash cannot leave the old owner mapping blocks that hold the new owner's data.
    pub(crate) fn wait_busy(&self, fsblock: u64, len: u32) -> FsResult<()> {
        let stable = self.stable_seq();
        let need = self.busy.lock().needs(fsblock, len, stable);
        match need {
            Some(seq) => self.force_seq(seq, "xfs_extent_busy_flush").map(drop),
            None => Ok(()),
        }
    }

    /// The log's geometry.
    pub fn geometry(&self) -> LogGeometry {
        self.geo
    }

    /// Bytes in the log.
    pub fn size_bytes(&self) -> u64 {
        u64::from(self.geo.log_bb) * 512
    }

    /// The device the log writes to.
    pub fn dev(&self) -> &Arc<dyn BlockDev> {
        &self.dev
    }

    /// Highest checkpoint sequence that is stable on the log.
    pub fn stable_seq(&self) -> u64 {
        self.stable.load(Ordering::Acquire)
    }

    /// The shared cell holding [`Log::stable_seq`].
    pub fn stable_cell(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.stable)
    }

    /// Bytes transactions logged beyond their reservations (0 when every reservation held).
    pub fn overrun_bytes(&self) -> u64 {
        self.overrun.load(Ordering::Relaxed)
    }

    /// Move up to `small` recycled vectors for inode, cancel and icreate items and up to
    /// `large` ones for buffer items into `out` (see `Cil::spare`), for a commit to format
    /// its items into, reusing their allocations.
    pub fn item_bufs(&self, small: usize, large: usize, out: &mut ItemBufs) {
        let mut cil = self.cil.lock();
        let from = cil.spare.small.len().saturating_sub(small);
        out.small.extend(cil.spare.small.drain(from..));
        let from = cil.spare.large.len().saturating_sub(large);
        out.large.extend(cil.spare.large.drain(from..));
    }

    /// Items in the CIL (committed, not yet checkpointed).
    pub fn cil_len(&self) -> usize {
        self.cil.lock().items.len()
    }

    /// Items in the AIL (stable on the log, not yet home).
    pub fn ail_len(&self) -> usize {
        self.ail.lock().len()
    }

    /// Whether any of `inodes` has its log item in the AIL (it may be the item at the log's
    /// tail), looked up under one hold of the AIL's lock.
    pub fn any_inode_in_ail<'a>(&self, inodes: impl IntoIterator<Item = &'a Arc<Inode>>) -> bool {
        let ail = self.ail.lock();
        inodes
            .into_iter()
            .any(|ip| ail.contains(ItemRef::inode_id(ip)))
    }

    /// The sequence the next commit goes into.
    pub fn current_seq(&self) -> u64 {
        self.cil.lock().seq
    }

    /// The LSN (cycle, block) of absolute log block `abs`.
    pub(crate) fn lsn(&self, abs: u64) -> Lsn {
        let bb = u64::from(self.geo.log_bb);
        Lsn::new((abs / bb) as u32, (abs % bb) as u32)
    }

    /// The absolute block of a record LSN.
    pub fn abs_of(&self, lsn: Lsn) -> u64 {
        u64::from(lsn.cycle()) * u64::from(self.geo.log_bb) + u64::from(lsn.block())
    }

    fn check_ok(&self) -> FsResult<()> {
        self.shutdown.check_live()
    }

    /// The filesystem shut down: wake every waiter, so each sees it and fails.
    pub fn fail(&self) {
        self.ring_cv.notify_all();
        self.space_cv.notify_all();
    }

    /// A log write or flush failed: shut the filesystem down (nothing later may claim to be
    /// durable) and wake every waiter.
    fn fail_with(&self, e: &FsError) {
        self.shutdown
            .shut_down(ShutdownReason::MetadataIo(Box::new(e.clone())));
        self.fail();
    }

    // ---- log space (grant heads) ----

    /// Bytes of log space neither on the log between tail and head, nor granted, nor in the
    /// CIL.
    fn free_bytes(&self, granted: u64) -> i64 {
        let used = (self.head_abs.load(Ordering::Acquire))
            .saturating_sub(self.tail_abs.load(Ordering::Acquire))
            * 512;
        // Every iclog may add a header and up to a block of padding to what the CIL holds.
        let cil = self.cil_bytes.load(Ordering::Acquire);
        let overhead = cil / 32 + u64::from(self.geo.logbufs) * 2 * 512;
        self.size_bytes() as i64 - (used + granted + cil + overhead) as i64
    }

    /// The reservation a transaction of `want` bytes gets on this log: no more than an
    /// eighth of it, so a small log still admits several at once.
    pub fn unit_for(&self, want: u64) -> u64 {
        want.min(self.size_bytes() / 8)
    }

    /// The free space below which xfsaild pushes the AIL: a quarter of the log (XFS's
    /// `xfs_ail_calc_push_target` keeps 25 % free).
    fn push_threshold(&self) -> i64 {
        (self.size_bytes() / 4) as i64
    }

    /// Whether less than a quarter of the log is free, counting reservations and the CIL as
    /// a reservation does (XFS computes its push target from the reserve grant head, which
    /// includes both): xfsaild pushes then, so reservations, which wait only at an eighth,
    /// seldom have to.
    pub(crate) fn space_short(&self) -> bool {
        let granted = self.space.lock().granted;
        self.free_bytes(granted) < self.push_threshold()
    }

    /// Reserve `bytes` of log space (XFS's `xfs_log_reserve`): waits, pushing the AIL, while
    /// the log is too full. `push` runs one inline AIL pass when it has to wait.
    ///
    /// Call it before taking any inode, AG header or buffer lock: space comes back only as
    /// the AIL writes items home, and the AIL only tries locks, so a waiter holding the lock
    /// of the item at the tail would wait for ever, and every reservation with it. The
    /// lock-order checker enforces it ([`LockClass::LogSpace`]) on every call, waiting or not.
    pub fn reserve(&self, bytes: u64, push: &dyn Fn()) -> FsResult<()> {
        let _waiting = crate::fs::lockcheck::wait(LockId::new(LockClass::LogSpace, 0));
        self.stats.inc(Stat::TryLogspace);
        // An eighth of the log stays out of reach of new reservations: regrants of rolled
        // transactions, overruns and the checkpoint's headers come out of it. Between a
        // quarter and an eighth free, xfsaild pushes while reservations still go through.
        let keep = (self.size_bytes() / 8) as i64;
        loop {
            self.check_ok()?;
            {
                let mut sp = self.space.lock();
                let free = self.free_bytes(sp.granted) - bytes as i64;
                if free >= keep {
                    sp.granted += bytes;
                    drop(sp);
                    if free < self.push_threshold() {
                        self.wake_aild();
                    }
                    return Ok(());
                }
                self.stats.inc(Stat::SleepLogspace);
            }
            self.make_room(push)?;
            let mut sp = self.space.lock();
            if self.free_bytes(sp.granted) - bytes as i64 >= keep {
                sp.granted += bytes;
                return Ok(());
            }
            sp.wait_for(&self.space_cv, Duration::from_millis(5));
        }
    }

    /// One round of what a thread short of log space does before it sleeps: checkpoint the
    /// CIL (items pinned there cannot be written home until it is; an ordered buffer's item
    /// has no bytes, so ask for items, not bytes), wake xfsaild and push the AIL inline.
    fn make_room(&self, push: &dyn Fn()) -> FsResult<()> {
        if self.cil_len() > 0 {
            self.push_cil()?;
            self.force_current(None, false)?;
        }
        self.wake_aild();
        push();
        Ok(())
    }

    /// A rolled transaction takes its reservation of `bytes` again (XFS's `xfs_log_regrant`
    /// of a permanent reservation): the commit just made gave the old one back.
    ///
    /// It comes out of the eighth of the log [`Log::reserve`] keeps back, without waiting.
    /// Only when rolls have used all of that up (the log would otherwise be overcommitted and
    /// its head could overwrite the tail) does it wait, pushing the CIL first; that wait is
    /// exempt from the lock-order check by construction: the transaction holds its locks,
    /// but it relogged everything it holds in the commit just made (`Trans::roll`) and the
    /// CIL push moves those items forward, so none of them can be what the tail waits for.
    /// XFS's regrant waits on its write grant head the same way.
    pub fn regrant(&self, bytes: u64, push: &dyn Fn()) -> FsResult<()> {
        self.stats.inc(Stat::TryLogspace);
        {
            let mut sp = self.space.lock();
            sp.granted += bytes;
            if self.free_bytes(sp.granted) >= 0 {
                return Ok(());
            }
        }
        loop {
            self.check_ok()?;
            self.stats.inc(Stat::SleepLogspace);
            self.make_room(push)?;
            let mut sp = self.space.lock();
            if self.free_bytes(sp.granted) >= 0 {
                return Ok(());
            }
            sp.wait_for(&self.space_cv, Duration::from_millis(5));
        }
    }

    /// Remember xfsaild's thread.
    pub(crate) fn set_aild(&self, t: std::thread::Thread) {
        let _ = self.aild.set(t);
    }

    /// Wake xfsaild (a background push, space wanted, unmount).
    pub(crate) fn wake_aild(&self) {
        if let Some(t) = self.aild.get() {
            t.unpark();
        }
    }

    /// Give back a reservation (at commit, or when a transaction is dropped).
    pub fn release(&self, bytes: u64) {
        let mut sp = self.space.lock();
        sp.granted = sp.granted.saturating_sub(bytes);
        drop(sp);
        self.space_cv.notify_all();
    }

    /// The tail moved or space came back: wake reservations waiting for space.
    pub(crate) fn space_moved(&self) {
        self.refresh_tail();
        self.space_cv.notify_all();
    }

    // ---- the CIL ----

    /// Insert a transaction's items into the CIL (XFS's `xlog_cil_commit`), giving back its
    /// reservation of `resv` bytes. Returns the checkpoint sequence the items belong to.
    ///
    /// An item with a [`BufSource`] comes with no data: its item is formatted here, under the
    /// CIL's lock, so that whether the context already holds the buffer's item cannot change
    /// before this commit is in it.
    pub fn commit<'a>(&self, items: impl IntoIterator<Item = CommitItem<'a>>, resv: u64) -> u64 {
        let mut cil = self.cil.lock();
        let mut delta: i64 = 0;
        // An item's size on the log: its data and its op header (none when empty).
        let logged = |data: &[u8]| match data.len() {
            0 => 0,
            n => (n + OP_HEADER_LEN) as i64,
        };
        for mut v in items {
            let id = v.obj.obj.id();
            let at = v.obj.slot.get();
            let held = cil
                .items
                .get(at)
                .is_some_and(|it| it.vec.obj.id() == id)
                .then_some(at);
            if let Some(src) = v.source.take() {
                if let Some(i) = held {
                    let old = &mut cil.items[i].vec;
                    let before = logged(&old.data);
                    if item::relog_buf(
                        &mut old.data,
                        src.kind,
                        src.daddr,
                        src.bytes,
                        src.map,
                        src.changed,
                        src.zeroed,
                    ) {
                        #[cfg(any(debug_assertions, feature = "lockcheck"))]
                        check_relogged(&old.data, &src);
                        delta += logged(&old.data) - before;
                        continue;
                    }
                }
                // Made large when there is none, so it is recycled as a large one.
                let spare = cil
                    .spare
                    .large
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(item::MAX_BUF_ITEM));
                v.data =
                    item::format_buf(spare, src.kind, src.daddr, src.bytes, src.map, src.zeroed);
            }
            delta += logged(&v.data);
            match held {
                Some(i) => {
                    // The same object (the CIL's reference keeps its address from being
                    // reused): everything but the reference is replaced. A cancel stays a
                    // cancel only if nothing relogged the object since.
                    let old = &mut cil.items[i].vec;
                    delta -= logged(&old.data);
                    old.ail = v.ail;
                    old.keep_oldest = v.keep_oldest;
                    old.pins = v.pins;
                    let replaced = std::mem::replace(&mut old.data, v.data);
                    cil.recycle(replaced);
                }
                None => {
                    cil.pinned += u64::from(v.pins);
                    let i = cil.items.len();
                    cil.items.push(CilItem {
                        vec: LogVec {
                            obj: v.obj.obj.to_item(),
                            data: v.data,
                            ail: v.ail,
                            keep_oldest: v.keep_oldest,
                            pins: v.pins,
                        },
                    });
                    v.obj.slot.set(i);
                }
            }
        }
        let seq = cil.seq;
        let pinned = cil.pinned;
        let bytes = (cil.bytes as i64 + delta).max(0) as u64;
        let grew = bytes.saturating_sub(cil.bytes);
        cil.bytes = bytes;
        drop(cil);
        if delta > 0 {
            self.cil_bytes.fetch_add(delta as u64, Ordering::AcqRel);
        } else {
            let _ = self
                .cil_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                    Some(b.saturating_sub((-delta) as u64))
                });
        }
        if grew > resv {
            self.overrun.fetch_add(grew - resv, Ordering::Relaxed);
        }
        self.release(resv);
        // An ordered cluster buffer or a block logged over zeros pins a whole buffer for few
        // log bytes, so the buffer memory the CIL pins is bounded too.
        if bytes > self.size_bytes() / 8 || pinned > self.pin_limit {
            // The background push (XLOG_CIL_SPACE_LIMIT): xfsaild's thread checkpoints.
            self.want_push.store(true, Ordering::Release);
            self.wake_aild();
        }
        seq
    }

    /// Checkpoint the CIL (XFS's `xlog_cil_push_work`): format every item of the current
    /// context into the iclogs as one transaction, commit record last. The iclog holding the
    /// commit record is left ACTIVE (a force writes it).
    pub fn push_cil(&self) -> FsResult<()> {
        self.check_ok()?;
        let _push = self.push.lock();
        // The context's items move out; the item list's allocation stays for the next
        // context (the objects' CIL slots go stale with it).
        let (seq, mut items, ctx_bytes) = {
            let mut cil = self.cil.lock();
            if cil.items.is_empty() {
                return Ok(());
            }
            let next_items = std::mem::take(&mut cil.spare_items);
            let items = std::mem::replace(&mut cil.items, next_items);
            cil.pinned = 0;
            let seq = cil.seq;
            cil.seq += 1;
            (seq, items, std::mem::take(&mut cil.bytes))
        };
        let tid = (seq as u32) ^ 0x5eed_0000;
        let nitems = items.iter().filter(|it| !it.vec.data.is_empty()).count() as u32;
        let mut objs = Vec::with_capacity(items.len());
        let mut written = Vec::with_capacity(items.len());
        let mut w = self.ring.lock();
        self.ensure_room(&mut w, OP_HEADER_LEN)?;
        let start_abs = w.icl[w.curr].at;
        w.in_flight.insert(start_abs);
        self.write_op(&mut w, tid, CLIENT_TRANS, OP_START, &[])?;
        self.write_op(
            &mut w,
            tid,
            CLIENT_TRANS,
            0,
            &item::trans_header(tid, nitems),
        )?;
        for it in items.drain(..) {
            if !it.vec.data.is_empty() {
                self.write_op(&mut w, tid, CLIENT_TRANS, 0, &it.vec.data)?;
            }
            if it.vec.ail {
                objs.push((it.vec.obj, it.vec.keep_oldest));
            }
            written.push(it.vec.data);
        }
        self.write_op(&mut w, tid, CLIENT_TRANS, OP_COMMIT, &[])?;
        let c = w.curr;
        w.icl[c].callbacks.push(Checkpoint {
            seq,
            start: start_abs,
            items: objs,
        });
        self.set_head(&w);
        drop(w);
        {
            let mut cil = self.cil.lock();
            for v in written {
                cil.recycle(v);
            }
            if cil.spare_items.capacity() < items.capacity() {
                cil.spare_items = items;
            }
        }
        let _ = self
            .cil_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(ctx_bytes))
            });
        self.pushed.store(seq, Ordering::Release);
        self.space_cv.notify_all();
        Ok(())
    }

    fn set_head(&self, w: &Ring) {
        let ic = &w.icl[w.curr];
        let head = ic.at + header_blocks(ic.data.len()) + ic.data.len().div_ceil(512) as u64;
        self.head_abs.store(head, Ordering::Release);
    }

    /// Make sure the current iclog is ACTIVE with `need` bytes free (switching a full one out
    /// and writing it), waiting when the ring has no free iclog (`noiclogs`).
    fn ensure_room(
        &self,
        w: &mut crate::fs::lockcheck::OrderedGuard<'_, Ring>,
        need: usize,
    ) -> FsResult<()> {
        loop {
            self.check_ok()?;
            let c = w.curr;
            if w.icl[c].state == IclogState::Active {
                if self.icl_payload - w.icl[c].data.len() >= need {
                    if w.icl[c].data.is_empty() {
                        w.icl[c].at = w.next_at;
                        self.trace_iclog(IclogEvent::GetSpace, &w.icl[c]);
                    }
                    return Ok(());
                }
                self.switch_and_write(w)?;
                continue;
            }
            self.stats.inc(Stat::LogNoiclogs);
            self.trace_iclog(IclogEvent::WaitOn, &w.icl[c]);
            w.wait(&self.ring_cv);
        }
    }

    /// Write one op, split across iclogs when it does not fit.
    fn write_op(
        &self,
        w: &mut crate::fs::lockcheck::OrderedGuard<'_, Ring>,
        tid: u32,
        client: u8,
        flags: u8,
        data: &[u8],
    ) -> FsResult<()> {
        let mut rest = data;
        let mut cont = false;
        loop {
            self.ensure_room(w, OP_HEADER_LEN + rest.len().min(1))?;
            let c = w.curr;
            let room = self.icl_payload - w.icl[c].data.len() - OP_HEADER_LEN;
            let take = rest.len().min(room);
            let more = take < rest.len();
            let mut f = flags;
            if cont {
                f = (f & !OP_START) | OP_WAS_CONT;
            }
            if more {
                f = (f & !OP_COMMIT) | OP_CONTINUE;
            }
            let h = OpHeader {
                tid,
                len: take as u32,
                client,
                flags: f,
            };
            let ic = &mut w.icl[c];
            ic.data.extend_from_slice(&h.encode());
            ic.data.extend_from_slice(&rest[..take]);
            ic.ops += 1;
            rest = &rest[take..];
            if !more {
                return Ok(());
            }
            cont = true;
        }
    }

    /// Switch the current iclog out (WANT_SYNC) and write it: XFS's
    /// `xlog_state_switch_iclogs` then `xlog_sync`, done by the switching thread. Returns
    /// with the lock held again.
    fn switch_and_write(
        &self,
        w: &mut crate::fs::lockcheck::OrderedGuard<'_, Ring>,
    ) -> FsResult<()> {
        let c = w.curr;
        debug_assert_eq!(w.icl[c].state, IclogState::Active);
        if w.icl[c].data.is_empty() {
            return Ok(());
        }
        let len = w.icl[c].data.len();
        let blocks = header_blocks(len.div_ceil(512) * 512) + len.div_ceil(512) as u64;
        self.trace_iclog(IclogEvent::Switch, &w.icl[c]);
        w.icl[c].state = IclogState::WantSync;
        w.switched += 1;
        w.icl[c].wseq = w.switched;
        self.trace_iclog(IclogEvent::Release, &w.icl[c]);
        w.next_at = w.icl[c].at + blocks;
        w.curr = (c + 1) % w.icl.len();
        // Writes go out in switch order.
        let mine = w.icl[c].wseq;
        while w.written + 1 != mine {
            self.check_ok()?;
            self.trace_iclog(IclogEvent::WaitOn, &w.icl[c]);
            w.wait(&self.ring_cv);
        }
        w.icl[c].state = IclogState::Syncing;
        self.trace_iclog(IclogEvent::Syncing, &w.icl[c]);
        self.trace_iclog(IclogEvent::Sync, &w.icl[c]);
        self.trace_iclog(IclogEvent::Write, &w.icl[c]);
        let data = std::mem::take(&mut w.icl[c].data);
        let mut image = std::mem::take(&mut w.icl[c].image);
        let ops = w.icl[c].ops;
        let at = w.icl[c].at;
        let prev = w.prev_block;
        w.prev_block = (at % u64::from(self.geo.log_bb)) as u32;
        // The tail: the oldest item not yet home, or checkpoint not yet complete, or this
        // record itself.
        let mut tail = at;
        if let Some(&s) = w.in_flight.iter().next() {
            tail = tail.min(s);
        }
        crate::fs::lockcheck::OrderedGuard::unlocked(w, || -> FsResult<()> {
            if let Some(m) = self.ail.lock().min_abs() {
                tail = tail.min(m);
            }
            self.write_record(&data, &mut image, ops, at, tail, prev)
        })
        .inspect_err(|e| self.fail_with(e))?;
        w.icl[c].image = image;
        let ic = &mut w.icl[c];
        ic.state = IclogState::DoneSync;
        self.trace_iclog(IclogEvent::SyncDone, &w.icl[c]);
        self.run_callbacks(w, c);
        let mut data = data;
        data.clear();
        let ic = &mut w.icl[c];
        ic.data = data;
        ic.ops = 0;
        self.trace_iclog(IclogEvent::Clean, &w.icl[c]);
        w.icl[c].state = IclogState::Active;
        self.trace_iclog(IclogEvent::Activate, &w.icl[c]);
        w.written = mine;
        self.ring_cv.notify_all();
        Ok(())
    }

    /// Build (into `image`), checksum and write one record (PREFLUSH + FUA).
    fn write_record(
        &self,
        data: &[u8],
        image: &mut Vec<u8>,
        ops: u32,
        at: u64,
        tail: u64,
        prev: u32,
    ) -> FsResult<()> {
        let lsn = self.lsn(at);
        let hdr = RecordHeader {
            cycle: lsn.cycle(),
            len: (data.len().div_ceil(512) * 512) as u32,
            lsn,
            tail_lsn: self.lsn(tail),
            prev_block: prev,
            num_logops: ops,
            size: self.geo.logbsize,
            uuid: self.uuid,
        };
        record::encode_record_into(&self.cksum, &hdr, data, self.geo.log_bb, image);
        let log_bytes = u64::from(self.geo.log_bb) * 512;
        let off = u64::from(lsn.block()) * 512;
        let base = self.geo.start_daddr * 512;
        let daddr = self.geo.start_daddr + u64::from(lsn.block());
        let io = |e| FsError::io(IoOp::WriteLog, Some(daddr), e);
        self.dev
            .flush()
            .map_err(|e| FsError::io(IoOp::FlushDevice, None, e))?;
        let first = ((log_bytes - off) as usize).min(image.len());
        self.dev
            .write_at(&image[..first], base + off, true)
            .map_err(io)?;
        if first < image.len() {
            self.dev.write_at(&image[first..], base, true).map_err(io)?;
        }
        self.stats.inc(Stat::LogWrites);
        self.stats.add(Stat::LogBlocks, (image.len() / 512) as u32);
        Ok(())
    }

    /// The iclog `c` is written: its checkpoints are stable. Insert their items into the
    /// AIL at each checkpoint's start and wake whoever waits for those sequences.
    fn run_callbacks(&self, w: &mut crate::fs::lockcheck::OrderedGuard<'_, Ring>, c: usize) {
        w.icl[c].state = IclogState::Callback;
        self.trace_iclog(IclogEvent::CallbacksStart, &w.icl[c]);
        let cbs = std::mem::take(&mut w.icl[c].callbacks);
        for cp in cbs {
            self.trace_iclog(IclogEvent::Callback, &w.icl[c]);
            {
                let mut ail = self.ail.lock();
                for (obj, keep) in cp.items {
                    ail.insert(self, obj, cp.start, keep);
                }
            }
            w.in_flight.remove(&cp.start);
            self.stable.fetch_max(cp.seq, Ordering::AcqRel);
        }
        self.trace_iclog(IclogEvent::CallbacksDone, &w.icl[c]);
        let head = Self::head_at(w);
        let first = w.in_flight.iter().next().copied();
        self.set_tail(first, head);
    }

    /// Where the head is: the current iclog's start when it holds data, else where the next
    /// record will go.
    fn head_at(w: &Ring) -> u64 {
        let ic = &w.icl[w.curr];
        if ic.state == IclogState::Active && !ic.data.is_empty() {
            ic.at
        } else {
            w.next_at
        }
    }

    /// The tail is the oldest of: the AIL's first item, the oldest checkpoint written but not
    /// complete, the head. Moves forward only.
    fn set_tail(&self, in_flight: Option<u64>, head: u64) {
        let min = self.ail.lock().min_abs();
        let tail = [in_flight, min, Some(head)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(head);
        self.tail_abs.fetch_max(tail, Ordering::AcqRel);
    }

    /// Recompute the tail (with the ring lock not held).
    fn refresh_tail(&self) {
        let (in_flight, head) = {
            let w = self.ring.lock();
            (w.in_flight.iter().next().copied(), Self::head_at(&w))
        };
        self.set_tail(in_flight, head);
    }

    /// Fire one `xlog_iclog_*` event for `ic`, with the reference count, caller and (where
    /// the kernel prints the state before or after a change labfs makes in one step) state
    /// that XFS's trace shows at the same point.
    fn trace_iclog(&self, what: IclogEvent, ic: &Iclog) {
        use crate::trace::events as ev;
        type Event = fn(Dev, &'static str, i32, u32, u64, &'static str, &'static str);
        let (f, caller, refcnt, state): (Event, &'static str, i32, Option<&'static str>) =
            match what {
                IclogEvent::GetSpace => (
                    ev::xlog_iclog_get_space,
                    "xlog_state_get_iclog_space",
                    1,
                    None,
                ),
                IclogEvent::Switch => (
                    ev::xlog_iclog_switch,
                    "xlog_state_get_iclog_space",
                    1,
                    Some("XLOG_STATE_ACTIVE"),
                ),
                IclogEvent::Release => (ev::xlog_iclog_release, "xlog_write", 1, None),
                IclogEvent::Syncing => (
                    ev::xlog_iclog_syncing,
                    "xlog_write_get_more_iclog_space",
                    0,
                    None,
                ),
                IclogEvent::Sync => (ev::xlog_iclog_sync, "xlog_state_release_iclog", 0, None),
                IclogEvent::Write => (ev::xlog_iclog_write, "xlog_state_release_iclog", 0, None),
                IclogEvent::SyncDone => (
                    ev::xlog_iclog_sync_done,
                    "xlog_ioend_work",
                    0,
                    Some("XLOG_STATE_SYNCING"),
                ),
                IclogEvent::Callback => (
                    ev::xlog_iclog_callback,
                    "xlog_ioend_work",
                    0,
                    Some("XLOG_STATE_DONE_SYNC"),
                ),
                IclogEvent::CallbacksStart => {
                    (ev::xlog_iclog_callbacks_start, "xlog_ioend_work", 0, None)
                }
                IclogEvent::CallbacksDone => {
                    (ev::xlog_iclog_callbacks_done, "xlog_ioend_work", 0, None)
                }
                IclogEvent::Clean => (ev::xlog_iclog_clean, "xlog_state_do_callback", 0, None),
                IclogEvent::Activate => (
                    ev::xlog_iclog_activate,
                    "xlog_state_do_callback",
                    0,
                    Some("XLOG_STATE_DIRTY"),
                ),
                IclogEvent::Force => (ev::xlog_iclog_force, "xfs_fs_sync_fs", 0, None),
                IclogEvent::ForceLsn => (ev::xlog_iclog_force_lsn, "xfs_log_force_seq", 0, None),
                IclogEvent::WaitOn => (ev::xlog_iclog_wait_on, "xfs_log_force_seq", 0, None),
            };
        let flags = if matches!(ic.state, IclogState::WantSync | IclogState::Syncing) {
            "XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA"
        } else {
            ""
        };
        let state = state.unwrap_or(ic.state.name());
        f(
            self.dev_id,
            state,
            refcnt,
            ic.data.len() as u32,
            self.lsn(ic.at).0,
            flags,
            caller,
        );
    }

    // ---- forces ----

    /// Write the current iclog if it holds anything (or, with `upto`, only if it holds the
    /// commit record of a checkpoint up to that sequence). A force by sequence that finds
    /// the previous iclog still being written sleeps for it first, so more commits can join
    /// the current one (`force_sleep`, XFS's -EAGAIN retry in `xfs_log_force_seq`).
    /// Returns whether it wrote.
    fn force_current(&self, upto: Option<u64>, waits: bool) -> FsResult<bool> {
        let mut w = self.ring.lock();
        loop {
            self.check_ok()?;
            let c = w.curr;
            self.trace_iclog(
                if upto.is_some() {
                    IclogEvent::ForceLsn
                } else {
                    IclogEvent::Force
                },
                &w.icl[c],
            );
            let ic = &w.icl[c];
            if ic.state != IclogState::Active || ic.data.is_empty() {
                return Ok(false);
            }
            if let Some(seq) = upto
                && !ic.callbacks.iter().any(|cp| cp.seq <= seq)
            {
                return Ok(false);
            }
            if upto.is_some() && w.written < w.switched {
                self.stats.inc(Stat::LogForceSleep);
                let target = w.switched;
                while w.written < target {
                    self.check_ok()?;
                    w.wait(&self.ring_cv);
                }
                continue;
            }
            // A synchronous force waits here for the iclog's write (XFS counts the sleep in
            // xlog_wait_on_iclog).
            if waits {
                self.stats.inc(Stat::LogForceSleep);
            }
            self.switch_and_write(&mut w)?;
            return Ok(true);
        }
    }

    /// Wait until checkpoint `seq` is stable, once its commit record is in an iclog that
    /// someone else is writing.
    fn wait_stable(&self, seq: u64) -> FsResult<()> {
        let mut w = self.ring.lock();
        while self.stable_seq() < seq {
            self.check_ok()?;
            if w.written >= w.switched {
                // Nothing in flight: the caller must write.
                return Ok(());
            }
            w.wait(&self.ring_cv);
        }
        Ok(())
    }

    /// Force the log up to checkpoint `seq` and wait for it to be stable (XFS's
    /// `xfs_log_force_seq` with `XFS_LOG_SYNC`). Returns whether this call wrote to the log.
    pub fn force_seq(&self, seq: u64, caller: &'static str) -> FsResult<bool> {
        self.stats.inc(Stat::LogForce);
        crate::trace::events::xfs_log_force(self.dev_id, seq, caller);
        self.check_ok()?;
        let mut wrote = false;
        if self.stable_seq() >= seq {
            return Ok(false);
        }
        if self.pushed.load(Ordering::Acquire) < seq {
            self.push_cil()?;
        }
        while self.stable_seq() < seq {
            wrote |= self.force_current(Some(seq), true)?;
            if self.stable_seq() < seq {
                let before = self.stats_switches();
                self.wait_stable(seq)?;
                if self.stable_seq() < seq && self.stats_switches() == before {
                    // Not in flight and not in the current iclog: it was pushed into an
                    // iclog that filled up and is queued; give the writers a turn.
                    std::thread::yield_now();
                }
            }
        }
        Ok(wrote)
    }

    fn stats_switches(&self) -> u64 {
        self.ring.lock().switched
    }

    /// Force everything committed so far to the log and wait (XFS's `xfs_log_force` with
    /// `XFS_LOG_SYNC`: sync, syncfs, unmount).
    pub fn force_all(&self, caller: &'static str) -> FsResult<()> {
        self.stats.inc(Stat::LogForce);
        crate::trace::events::xfs_log_force(self.dev_id, 0, caller);
        self.check_ok()?;
        // The CIL force inside traces again with the sequence it forces to, as the kernel's
        // xlog_cil_force -> xfs_log_force_seq does (the stat counts the call once).
        let seq = self.current_seq();
        crate::trace::events::xfs_log_force(self.dev_id, seq, "xfs_log_force");
        self.push_cil()?;
        let seq = self.pushed.load(Ordering::Acquire);
        while self.stable_seq() < seq {
            self.force_current(None, true)?;
            self.wait_stable(seq)?;
        }
        Ok(())
    }

    /// Start writing whatever the current iclog holds without waiting for the rest (the
    /// background push, XFS's async `xfs_log_force(mp, 0)`).
    pub fn force_background(&self) -> FsResult<()> {
        self.force_current(None, false).map(drop)
    }

    /// Write the unmount record (the log is clean: nothing in it needs replay) and wait.
    pub fn write_unmount_record(&self) -> FsResult<()> {
        let _push = self.push.lock();
        let mut w = self.ring.lock();
        self.write_op(&mut w, 0, CLIENT_LOG, OP_UNMOUNT, &item::unmount_data())?;
        self.set_head(&w);
        self.switch_and_write(&mut w)
    }

    /// Where the next record would go (absolute block), once everything is written.
    pub fn next_abs(&self) -> u64 {
        let w = self.ring.lock();
        w.icl[w.curr].at.max(w.next_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::buf::GetMode;
    use crate::fs::format::{BLOCK_SIZE, BlockKind, Daddr};

    /// The data of the current context's item for object `id`, if it has one.
    fn cil_data(log: &Log, id: usize) -> Option<Vec<u8>> {
        let cil = log.cil.lock();
        let mut found = cil.items.iter().filter(|it| it.vec.obj.id() == id);
        let data = found.next().map(|it| it.vec.data.clone());
        assert!(found.next().is_none(), "two items for one object");
        data
    }

    fn commit_data(log: &Log, g: &BufGuard, data: &[u8]) {
        let item = CommitItem {
            obj: CommitObj::buf(g),
            data: data.to_vec(),
            ail: false,
            keep_oldest: false,
            pins: 0,
            source: None,
        };
        log.commit([item], 0);
    }

    #[test]
    fn a_commit_finds_its_item_by_the_objects_slot_and_never_trusts_a_stale_one() {
        let fs = crate::fs::testing::mem_fs(64 << 20);
        let log = &fs.log;
        let get = |d| {
            fs.bufs
                .get(Daddr(d), BlockKind::DirData, BLOCK_SIZE, GetMode::New)
                .expect("buffer")
        };
        let (a, b) = (get(8000), get(8008));
        let id = |g: &BufGuard| ObjRef::Buf(BufGuard::arc(g)).id();
        commit_data(log, &a, b"a1");
        commit_data(log, &b, b"b1");
        assert_eq!(
            (log.cil_len(), a.cil_slot().get(), b.cil_slot().get()),
            (2, 0, 1)
        );

        // A relog finds the item its object's slot names.
        commit_data(log, &b, b"b2");
        assert_eq!(log.cil_len(), 2);
        assert_eq!(cil_data(log, id(&a)).as_deref(), Some(&b"a1"[..]));
        assert_eq!(cil_data(log, id(&b)).as_deref(), Some(&b"b2"[..]));

        // After a checkpoint every slot is stale: `a` still names place 0, which `b` takes
        // first in the new context, and `a`'s next commit gets an item of its own.
        log.push_cil().expect("checkpoint");
        assert_eq!(log.cil_len(), 0);
        commit_data(log, &b, b"b3");
        commit_data(log, &a, b"a2");
        assert_eq!(log.cil_len(), 2);
        assert_eq!(cil_data(log, id(&a)).as_deref(), Some(&b"a2"[..]));
        assert_eq!(cil_data(log, id(&b)).as_deref(), Some(&b"b3"[..]));
        assert_eq!((a.cil_slot().get(), b.cil_slot().get()), (1, 0));
    }

    #[test]
    fn the_cil_keeps_a_quarter_logs_worth_of_whole_buffer_vectors_and_1024_small_ones() {
        let log_bytes = 64 << 20;
        let mut cil = Cil::new(1, log_bytes);
        let large = (log_bytes / 4) as usize / item::MAX_BUF_ITEM;
        assert!(large > SPARE_VECS, "a 64 MiB log keeps more than the floor");
        for _ in 0..large + 10 {
            cil.recycle(Vec::with_capacity(item::MAX_BUF_ITEM));
            cil.recycle(Vec::with_capacity(64));
        }
        assert_eq!(
            (cil.spare.large.len(), cil.spare.small.len()),
            (large, SPARE_VECS)
        );
        // A small log still keeps the floor.
        let mut small_log = Cil::new(1, 1 << 20);
        for _ in 0..SPARE_VECS + 10 {
            small_log.recycle(Vec::with_capacity(item::MAX_BUF_ITEM));
        }
        assert_eq!(small_log.spare.large.len(), SPARE_VECS);
    }
}
