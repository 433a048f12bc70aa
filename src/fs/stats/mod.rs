//! XFS-layout statistics: the counters labfs bumps where each event happens, printed exactly
//! like `/proc/fs/xfs/stat`, plus a decoder and diff for any kernel's stat text.
//!
//! # Why the XFS layout
//!
//! People who tune XFS read `/proc/fs/xfs/stat` (seed 004: "log 89045 2859542 62 132145
//! 143932" decoded field by field on linux-xfs). labfs models XFS, so it keeps the same
//! counters under the same names, in the same order, with the same wrap and clear rules: a
//! labfs run and a kernel run then print text that the same eyes, scripts and this module's
//! decoder read the same way. The line table lives in [`layout`]; this module owns the
//! counters.
//!
//! # Counters: sharded, relaxed, summed on read
//!
//! The kernel keeps one `struct __xfsstats` per CPU and sums them when the file is read; a
//! CPU bumps its own copy with a plain add, no atomic instruction. A userspace process cannot
//! cheaply pin an update to "its CPU" (threads migrate between the lookup and the add), so
//! [`XfsStats`] keeps *per-thread* shards instead: each thread holds a slot number from its
//! first bump until it exits, never the same as another live thread's (the `slot` submodule),
//! and bumps the set's *owned* shard of that number with a plain load and store. A create bumps a
//! hundred counters, each in the mount's set and the global one; as atomic read-modify-writes
//! (one shard per thread slot modulo the shard count, shared by threads that collided) they
//! were a tenth of its CPU time. Threads whose slot is past the owned shards, and threads
//! being torn down, bump a *shared* shard atomically. Each shard is aligned to 128 bytes (two
//! cache lines, which also defeats the adjacent-line prefetcher) so two threads on different
//! shards never share a line. Counters order nothing: a reader loads each one relaxed and
//! only needs each value to be some value it had, exactly what the kernel's racy per-CPU sum
//! gives too.
//!
//! A default set owns four shards per CPU the process may use (at least 16; slot numbers
//! stay below the most threads alive at once) and shares twice as many as CPUs, rounded up
//! to a power of two. A snapshot sums them (a few thousand values, microseconds); memory is
//! ~1.1 KiB per shard.
//!
//! # Wrap and clear
//!
//! Counters are `u32` like the kernel's and wrap modulo 2^32 (the kernel sums per-CPU `u32`s
//! into an `int` and prints `%u`); the four byte/relog counters are `u64`. A gauge that is
//! decremented on one shard and incremented on another wraps per shard but sums correctly.
//! [`XfsStats::clear`] follows `xfs_stats_clearall`: everything becomes 0, including the `u64`
//! counters, except `vnodes` field 0 (in-core inodes, a level that clearing must not corrupt).
//! It does so by keeping the sums it saw as the new zero, not by writing the shards, which
//! only their owners write.
//!
//! # Global and per mount
//!
//! Every kernel `XFS_STATS_INC(mp, ...)` updates both the global set (`/proc/fs/xfs/stat`) and
//! the mount's set (`/sys/fs/xfs/<dev>/stats/stats`). [`MountStats`] does the same: each
//! update goes to its own [`XfsStats`] and to [`global()`].
//!
//! # Submodules
//!
//! - [`layout`]: the line table (names, field counts, meanings) for every kernel version.
//! - [`decode`]: parse, decode and diff any stat text.
//! - [`host`]: read and clear the running kernel's statistics.

pub mod decode;
pub mod host;
pub mod layout;
mod slot;

use std::fmt::Write as _;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub use decode::{DecodeError, LineProblem, Regression, StatDiff, StatFile, StatLine, decode_text};
pub use host::{HostStatsError, clear_host_stats, read_host_stats, read_host_stats_text};

use layout::{FIRST_BTREE_LINE, U32_LINES, U64_LINES, current_layout};

/// Number of `u32` counters in the rendered layout (`extent_alloc` through `qm`).
pub const NUM_U32: usize = 264;
/// Number of `u64` counters (`xpc` ×3, `defer_relog`).
pub const NUM_U64: usize = 4;
/// Fields on every v2 btree line.
pub const BTREE_FIELDS: usize = 15;

/// Define a counter enum and its `ALL` list from one list of variants, so the names are
/// written once: `ALL` holds every variant in declaration order, which is the order the
/// counters are printed in `/proc/fs/xfs/stat`.
macro_rules! counter_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[doc = $doc:literal])* $variant:ident $(= $disc:expr)? ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[doc = $doc])* $variant $(= $disc)? ),+
        }

        impl $name {
            /// Every variant, in `/proc/fs/xfs/stat` order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];
        }
    };
}

/// Flat index of the first btree counter (`abtb2` lookup): the 76 scalar counters come first.
const FIRST_BTREE_INDEX: usize = 76;

counter_enum! {
    /// A `u32` counter outside the btree lines, in `/proc/fs/xfs/stat` order.
    ///
    /// The discriminant is the counter's flat index in the kernel's `u32` array, so the `qm`
    /// counters start at 256, after the 76 scalar counters and the 12 × 15 btree counters.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Stat {
        /// extent_alloc: extents allocated.
        Allocx,
        /// extent_alloc: blocks allocated.
        Allocb,
        /// extent_alloc: extents freed.
        Freex,
        /// extent_alloc: blocks freed.
        Freeb,
        /// abt: legacy free-space btree lookups.
        AbtLookup,
        /// abt: legacy free-space btree compares.
        AbtCompare,
        /// abt: legacy free-space btree inserts.
        AbtInsrec,
        /// abt: legacy free-space btree deletes.
        AbtDelrec,
        /// blk_map: block-map read calls.
        BlkMapr,
        /// blk_map: block-map write calls.
        BlkMapw,
        /// blk_map: block-unmap calls.
        BlkUnmap,
        /// blk_map: extents added to in-core extent lists.
        AddExlist,
        /// blk_map: extents removed from in-core extent lists.
        DelExlist,
        /// blk_map: in-core extent list lookups.
        LookExlist,
        /// blk_map: in-core extent compares (legacy).
        CmpExlist,
        /// bmbt: legacy block-map btree lookups.
        BmbtLookup,
        /// bmbt: legacy block-map btree compares.
        BmbtCompare,
        /// bmbt: legacy block-map btree inserts.
        BmbtInsrec,
        /// bmbt: legacy block-map btree deletes.
        BmbtDelrec,
        /// dir: directory lookups.
        DirLookup,
        /// dir: directory entries created.
        DirCreate,
        /// dir: directory entries removed.
        DirRemove,
        /// dir: getdents calls.
        DirGetdents,
        /// trans: synchronous commits.
        TransSync,
        /// trans: asynchronous commits.
        TransAsync,
        /// trans: empty commits.
        TransEmpty,
        /// ig: inode cache lookups.
        IgAttempts,
        /// ig: found in cache.
        IgFound,
        /// ig: found but being recycled.
        IgFrecycle,
        /// ig: cache misses.
        IgMissed,
        /// ig: duplicate-insert races.
        IgDup,
        /// ig: inodes reclaimed.
        IgReclaims,
        /// ig: attribute changes.
        IgAttrchg,
        /// log: log writes (iclogs submitted).
        LogWrites,
        /// log: 512-byte blocks written to the log.
        LogBlocks,
        /// log: stalls waiting for an iclog.
        LogNoiclogs,
        /// log: log forces.
        LogForce,
        /// log: log forces that slept.
        LogForceSleep,
        /// push_ail: log space reservations.
        TryLogspace,
        /// push_ail: reservations that slept for space.
        SleepLogspace,
        /// push_ail: AIL push passes.
        PushAil,
        /// push_ail: items pushed.
        PushAilSuccess,
        /// push_ail: buffers pushed (legacy).
        PushAilPushbuf,
        /// push_ail: items skipped, pinned.
        PushAilPinned,
        /// push_ail: items skipped, locked.
        PushAilLocked,
        /// push_ail: items skipped, already flushing.
        PushAilFlushing,
        /// push_ail: walk restarts (legacy).
        PushAilRestarts,
        /// push_ail: log flushes to unpin items.
        PushAilFlush,
        /// xstrat: delalloc extents converted by writeback.
        XstratQuick,
        /// xstrat: split conversions (legacy).
        XstratSplit,
        /// rw: write calls.
        WriteCalls,
        /// rw: read calls.
        ReadCalls,
        /// attr: xattr gets.
        AttrGet,
        /// attr: xattr sets.
        AttrSet,
        /// attr: xattr removes.
        AttrRemove,
        /// attr: xattr lists.
        AttrList,
        /// icluster: inode flushes.
        IflushCount,
        /// icluster: cluster flush calls.
        IclusterFlushcnt,
        /// icluster: inodes flushed via clusters.
        IclusterFlushinode,
        /// vnodes: in-core inodes (a gauge, kept by clear).
        VnActive,
        /// vnodes: unused by modern kernels.
        VnAlloc,
        /// vnodes: unused by modern kernels.
        VnGet,
        /// vnodes: unused by modern kernels.
        VnHold,
        /// vnodes: inodes destroyed.
        VnRele,
        /// vnodes: inodes marked reclaimable.
        VnReclaim,
        /// vnodes: inodes destroyed (same event as rele).
        VnRemove,
        /// vnodes: unused by modern kernels.
        VnFree,
        /// buf: buffer lookups.
        BufGet,
        /// buf: buffers created.
        BufCreate,
        /// buf: cached buffers locked.
        BufGetLocked,
        /// buf: cached buffers that waited for the lock.
        BufGetLockedWaited,
        /// buf: trylock failures.
        BufBusyLocked,
        /// buf: cache misses.
        BufMissLocked,
        /// buf: page allocation retries.
        BufPageRetries,
        /// buf: pages found (legacy).
        BufPageFound,
        /// buf: buffer reads.
        BufGetRead,
        /// qm: dquots reclaimed.
        QmDqreclaims = 256,
        /// qm: dquot reclaim misses.
        QmDqreclaimMisses,
        /// qm: duplicate dquots.
        QmDquotDups,
        /// qm: dquot cache misses.
        QmDqcachemisses,
        /// qm: dquot cache hits.
        QmDqcachehits,
        /// qm: dquots wanted.
        QmDqwants,
        /// qm: in-core dquots (a gauge).
        QmDquot,
        /// qm: unused in-core dquots (a gauge).
        QmDquotUnused,
    }
}

impl Stat {
    /// The counter's index in the flat `u32` array (its position in the rendered text).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The line this counter is printed on and its field position within that line.
    pub fn position(self) -> (&'static layout::LineSpec, usize) {
        locate(self.index())
    }

    /// The field's table entry: short name (`writes` for [`Stat::LogWrites`]), kernel member,
    /// meaning.
    pub fn field(self) -> &'static layout::FieldSpec {
        let (line, i) = self.position();
        // `locate` only returns positions inside the line.
        &line.fields[i]
    }
}

/// Find the line and field of flat `u32` index `index` in the rendered layout.
fn locate(index: usize) -> (&'static layout::LineSpec, usize) {
    let lines = &current_layout()[..U32_LINES];
    let mut start = 0;
    for line in lines {
        let end = start + line.fields.len();
        if index < end {
            return (line, index - start);
        }
        start = end;
    }
    // Callers pass indices of `Stat` variants, all < NUM_U32; clamp to the last field.
    let last = &lines[U32_LINES - 1];
    (last, last.fields.len() - 1)
}

counter_enum! {
    /// A `u64` counter: the three `xpc` byte counters and `defer_relog`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Stat64 {
        /// xpc: bytes converted from delayed allocation by writeback.
        XstratBytes,
        /// xpc: bytes written by write calls.
        WriteBytes,
        /// xpc: bytes read by read calls.
        ReadBytes,
        /// defer_relog: deferred intent items relogged.
        DeferRelog,
    }
}

impl Stat64 {
    /// Index in the `u64` array.
    pub fn index(self) -> usize {
        self as usize
    }
}

counter_enum! {
    /// A v2 btree statistics line: 15 operation counters each.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum BtreeLine {
        /// `abtb2`: free-space btree by block number (bnobt).
        Abtb2,
        /// `abtc2`: free-space btree by extent size (cntbt).
        Abtc2,
        /// `bmbt2`: block-map btree.
        Bmbt2,
        /// `ibt2`: inode btree.
        Ibt2,
        /// `fibt2`: free-inode btree.
        Fibt2,
        /// `rmapbt`: reverse-mapping btree.
        Rmapbt,
        /// `refcntbt`: reference-count btree.
        Refcntbt,
        /// `rmapbt_mem`: in-memory reverse-mapping btree.
        RmapbtMem,
        /// `rcbagbt`: in-memory refcount-bag btree.
        Rcbagbt,
        /// `rtrmapbt`: realtime reverse-mapping btree.
        Rtrmapbt,
        /// `rtrmapbt_mem`: in-memory realtime reverse-mapping btree.
        RtrmapbtMem,
        /// `rtrefcntbt`: realtime reference-count btree.
        Rtrefcntbt,
    }
}

impl BtreeLine {
    /// The line name as printed, e.g. `abtb2`.
    pub fn name(self) -> &'static str {
        current_layout()[FIRST_BTREE_LINE + self as usize].name
    }

    /// Flat `u32` index of this line's first field (`lookup`).
    pub fn first_index(self) -> usize {
        FIRST_BTREE_INDEX + BTREE_FIELDS * self as usize
    }
}

/// One thread slot's copy of every counter, alone on its cache lines.
#[repr(align(128))]
struct Shard {
    c32: [AtomicU32; NUM_U32],
    c64: [AtomicU64; NUM_U64],
}

impl Shard {
    fn new() -> Self {
        Shard {
            c32: [const { AtomicU32::new(0) }; NUM_U32],
            c64: [const { AtomicU64::new(0) }; NUM_U64],
        }
    }
}

/// Exclusive shards per CPU a default set keeps (threads beyond them share atomically).
const OWNED_PER_CPU: usize = 4;

/// Default shard counts: owned shards for four times the CPUs this process may use (at
/// least 16), shared ones for twice the CPUs (see the module docs).
fn default_shards() -> (usize, usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (
        (cpus * OWNED_PER_CPU).clamp(16, 1024),
        (cpus * 2).clamp(2, 1024),
    )
}

/// One set of XFS statistics (global or one mount's), cheap to bump from many threads.
pub struct XfsStats {
    /// Shard `s` belongs to the thread holding slot `s` (see [`slot`]): bumped with a plain
    /// load and store.
    owned: Box<[Shard]>,
    /// For threads whose slot has no owned shard, or that are exiting: bumped atomically,
    /// shard `slot % shared.len()` (a power of two).
    shared: Box<[Shard]>,
    /// What [`XfsStats::clear`] subtracts: the sums when it last ran (a clearing thread never
    /// writes a shard another thread owns, so it cannot race with an owner's store).
    base: Shard,
}

impl Default for XfsStats {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for XfsStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XfsStats")
            .field("owned", &self.owned.len())
            .field("shared", &self.shared.len())
            .finish()
    }
}

/// Add `n` to a counter only this thread writes: no read-modify-write needed.
fn owned_add32(c: &AtomicU32, n: u32) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl XfsStats {
    /// A zeroed set with owned shards for four times the CPUs (at least 16) and shared ones
    /// for twice the CPUs (rounded up to a power of two).
    pub fn new() -> Self {
        let (owned, shared) = default_shards();
        Self::with_owned_and_shared(owned, shared)
    }

    /// A zeroed set with `shards` owned shards and `shards` shared ones (rounded up to a
    /// power of two, at least one); for tests and tiny tools.
    pub fn with_shards(shards: usize) -> Self {
        Self::with_owned_and_shared(shards, shards)
    }

    fn with_owned_and_shared(owned: usize, shared: usize) -> Self {
        XfsStats {
            owned: (0..owned.max(1)).map(|_| Shard::new()).collect(),
            shared: (0..shared.max(1).next_power_of_two())
                .map(|_| Shard::new())
                .collect(),
            base: Shard::new(),
        }
    }

    /// How many shards this set keeps (owned and shared).
    pub fn shard_count(&self) -> usize {
        self.owned.len() + self.shared.len()
    }

    fn shared_shard(&self, slot: usize) -> &Shard {
        // The count is a power of two: the mask is `slot % len`.
        &self.shared[slot & (self.shared.len() - 1)]
    }

    fn add_at(&self, slot: Option<usize>, index: usize, n: u32) {
        match slot.and_then(|s| self.owned.get(s)) {
            Some(shard) => {
                if let Some(c) = shard.c32.get(index) {
                    owned_add32(c, n);
                }
            }
            None => {
                if let Some(c) = self.shared_shard(slot.unwrap_or(0)).c32.get(index) {
                    c.fetch_add(n, Ordering::Relaxed);
                }
            }
        }
    }

    fn sub_at(&self, slot: Option<usize>, index: usize, n: u32) {
        self.add_at(slot, index, n.wrapping_neg());
    }

    fn add64_at(&self, slot: Option<usize>, s: Stat64, n: u64) {
        match slot.and_then(|s| self.owned.get(s)) {
            Some(shard) => {
                if let Some(c) = shard.c64.get(s.index()) {
                    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
                }
            }
            None => {
                if let Some(c) = self.shared_shard(slot.unwrap_or(0)).c64.get(s.index()) {
                    c.fetch_add(n, Ordering::Relaxed);
                }
            }
        }
    }

    fn add_btree_at(&self, slot: Option<usize>, line: BtreeLine, counts: &[u32; BTREE_FIELDS]) {
        let base = line.first_index();
        for (i, &n) in counts.iter().enumerate() {
            if n != 0 {
                self.add_at(slot, base + i, n);
            }
        }
    }

    /// Add 1 to `s` (wraps at 2^32 like the kernel's counters).
    pub fn inc(&self, s: Stat) {
        self.add_at(slot::current(), s.index(), 1);
    }

    /// Subtract 1 from `s`; for gauges (`vnodes` active, `qm` dquot counts).
    pub fn dec(&self, s: Stat) {
        self.sub_at(slot::current(), s.index(), 1);
    }

    /// Add `n` to `s` (wrapping).
    pub fn add(&self, s: Stat, n: u32) {
        self.add_at(slot::current(), s.index(), n);
    }

    /// Add `n` to a 64-bit counter (wrapping).
    pub fn add64(&self, s: Stat64, n: u64) {
        self.add64_at(slot::current(), s, n);
    }

    /// Add a whole btree operation tally (`lookup` .. `moves`) to `line`.
    pub fn add_btree(&self, line: BtreeLine, counts: &[u32; BTREE_FIELDS]) {
        self.add_btree_at(slot::current(), line, counts);
    }

    /// Every shard summed, before what a clear subtracts.
    fn raw_sums(&self) -> StatSnapshot {
        let mut snap = StatSnapshot::default();
        for shard in self.owned.iter().chain(self.shared.iter()) {
            for (sum, c) in snap.c32.iter_mut().zip(shard.c32.iter()) {
                *sum = sum.wrapping_add(c.load(Ordering::Relaxed));
            }
            for (sum, c) in snap.c64.iter_mut().zip(shard.c64.iter()) {
                *sum = sum.wrapping_add(c.load(Ordering::Relaxed));
            }
        }
        snap
    }

    /// Sum every shard into a point-in-time copy (each counter read once, relaxed), less
    /// what the last clear saw.
    pub fn snapshot(&self) -> StatSnapshot {
        let mut snap = self.raw_sums();
        for (v, b) in snap.c32.iter_mut().zip(self.base.c32.iter()) {
            *v = v.wrapping_sub(b.load(Ordering::Relaxed));
        }
        for (v, b) in snap.c64.iter_mut().zip(self.base.c64.iter()) {
            *v = v.wrapping_sub(b.load(Ordering::Relaxed));
        }
        snap
    }

    /// Zero every counter except `vnodes` field 0 (in-core inodes), like writing 1 to
    /// `stats_clear`; the `u64` counters are zeroed too. Done by remembering the sums as the
    /// new zero, so the shards (each written by its own thread) are left alone.
    pub fn clear(&self) {
        let keep = Stat::VnActive.index();
        let now = self.raw_sums();
        for (i, (b, &v)) in self.base.c32.iter().zip(now.c32.iter()).enumerate() {
            if i != keep {
                b.store(v, Ordering::Relaxed);
            }
        }
        for (b, &v) in self.base.c64.iter().zip(now.c64.iter()) {
            b.store(v, Ordering::Relaxed);
        }
    }
}

static GLOBAL: LazyLock<XfsStats> = LazyLock::new(XfsStats::new);

/// The process-wide statistics: labfs's `/proc/fs/xfs/stat`. Every [`MountStats`] update
/// lands here too.
pub fn global() -> &'static XfsStats {
    &GLOBAL
}

/// One mount's statistics; every update also goes to [`global()`], as in the kernel.
#[derive(Debug, Default)]
pub struct MountStats {
    mount: XfsStats,
}

impl MountStats {
    /// A zeroed per-mount set tied to the global one.
    pub fn new() -> Self {
        MountStats {
            mount: XfsStats::new(),
        }
    }

    /// The mount's own counters (`/sys/fs/xfs/<dev>/stats/stats`).
    pub fn mount(&self) -> &XfsStats {
        &self.mount
    }

    /// Add 1 to `s` in the mount's set and the global one.
    pub fn inc(&self, s: Stat) {
        let slot = slot::current();
        self.mount.add_at(slot, s.index(), 1);
        global().add_at(slot, s.index(), 1);
    }

    /// Subtract 1 from `s` in both sets.
    pub fn dec(&self, s: Stat) {
        let slot = slot::current();
        self.mount.sub_at(slot, s.index(), 1);
        global().sub_at(slot, s.index(), 1);
    }

    /// Add `n` to `s` in both sets.
    pub fn add(&self, s: Stat, n: u32) {
        let slot = slot::current();
        self.mount.add_at(slot, s.index(), n);
        global().add_at(slot, s.index(), n);
    }

    /// Add `n` to a 64-bit counter in both sets.
    pub fn add64(&self, s: Stat64, n: u64) {
        let slot = slot::current();
        self.mount.add64_at(slot, s, n);
        global().add64_at(slot, s, n);
    }

    /// Add a btree operation tally to `line` in both sets.
    pub fn add_btree(&self, line: BtreeLine, counts: &[u32; BTREE_FIELDS]) {
        let slot = slot::current();
        self.mount.add_btree_at(slot, line, counts);
        global().add_btree_at(slot, line, counts);
    }
}

/// A point-in-time copy of one [`XfsStats`]: 264 `u32` + 4 `u64` counters and the `debug`
/// value (always 0: fslab is not a debug kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatSnapshot {
    c32: [u32; NUM_U32],
    c64: [u64; NUM_U64],
    debug: u32,
}

impl Default for StatSnapshot {
    fn default() -> Self {
        StatSnapshot {
            c32: [0; NUM_U32],
            c64: [0; NUM_U64],
            debug: 0,
        }
    }
}

impl StatSnapshot {
    /// The value of a `u32` counter.
    pub fn get(&self, s: Stat) -> u32 {
        self.c32.get(s.index()).copied().unwrap_or(0)
    }

    /// The value of a `u64` counter.
    pub fn get64(&self, s: Stat64) -> u64 {
        self.c64.get(s.index()).copied().unwrap_or(0)
    }

    /// The 15 counters of a btree line, `lookup` .. `moves`.
    pub fn btree(&self, line: BtreeLine) -> [u32; BTREE_FIELDS] {
        let mut out = [0; BTREE_FIELDS];
        if let Some(src) = self
            .c32
            .get(line.first_index()..line.first_index() + BTREE_FIELDS)
        {
            out.copy_from_slice(src);
        }
        out
    }

    /// All `u32` counters in print order.
    pub fn counters32(&self) -> &[u32; NUM_U32] {
        &self.c32
    }

    /// All `u64` counters in print order (`xpc` ×3, `defer_relog`).
    pub fn counters64(&self) -> &[u64; NUM_U64] {
        &self.c64
    }

    /// The `debug` line's value.
    pub fn debug(&self) -> u32 {
        self.debug
    }

    /// The exact `/proc/fs/xfs/stat` text of a 6.14–6.19 kernel: 31 lines, each the name then
    /// ` %u` per field and `\n`.
    pub fn render(&self) -> String {
        let layout = current_layout();
        let mut out = String::with_capacity(1536);
        let mut v32 = self.c32.iter();
        for line in &layout[..U32_LINES] {
            out.push_str(line.name);
            for v in v32.by_ref().take(line.fields.len()) {
                let _ = write!(out, " {v}");
            }
            out.push('\n');
        }
        let mut v64 = self.c64.iter();
        for line in &layout[U32_LINES..U32_LINES + U64_LINES] {
            out.push_str(line.name);
            for v in v64.by_ref().take(line.fields.len()) {
                let _ = write!(out, " {v}");
            }
            out.push('\n');
        }
        for line in &layout[U32_LINES + U64_LINES..] {
            let _ = writeln!(out, "{} {}", line.name, self.debug);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snake(camel: &str) -> String {
        let mut s = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    s.push('_');
                }
                s.push(c.to_ascii_lowercase());
            } else {
                s.push(c);
            }
        }
        s
    }

    #[test]
    fn stat_variants_match_the_kernel_members_of_their_table_position() {
        for (pos, s) in Stat::ALL.iter().enumerate() {
            let want = if pos < 76 { pos } else { pos - 76 + 256 };
            assert_eq!(s.index(), want, "{s:?}");
            let member = s.field().member;
            let member = member
                .strip_prefix("xs_")
                .map(str::to_string)
                .or_else(|| member.strip_prefix("xb_").map(|m| format!("buf_{m}")))
                .unwrap_or_else(|| member.to_string());
            assert_eq!(snake(&format!("{s:?}")), member, "{s:?}");
        }
        assert_eq!(Stat::QmDquotUnused.index(), NUM_U32 - 1);
    }

    #[test]
    fn btree_lines_sit_between_buf_and_qm() {
        assert_eq!(BtreeLine::Abtb2.first_index(), Stat::BufGetRead.index() + 1);
        assert_eq!(
            BtreeLine::Rtrefcntbt.first_index() + BTREE_FIELDS,
            Stat::QmDqreclaims.index()
        );
        let names: Vec<&str> = BtreeLine::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names[0], "abtb2");
        assert_eq!(names[11], "rtrefcntbt");
    }

    #[test]
    fn one_shard_set_counts_like_many() {
        let one = XfsStats::with_shards(1);
        let many = XfsStats::with_shards(8);
        for st in [&one, &many] {
            st.add(Stat::LogBlocks, 64);
            st.inc(Stat::LogWrites);
            st.add_btree(BtreeLine::Fibt2, &[1; BTREE_FIELDS]);
        }
        assert_eq!(one.snapshot(), many.snapshot());
    }
}
