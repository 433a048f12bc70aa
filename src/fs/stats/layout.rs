//! The `/proc/fs/xfs/stat` line table: every line name fslab knows, its fields in kernel
//! order, and what each field counts.
//!
//! This table is the one place the layout is written down. [`super::StatSnapshot::render`]
//! walks its first 31 entries (the 6.14–6.19 layout) to print our counters, and the decoder
//! ([`super::decode`]) looks lines up here by name to label what a kernel printed. Keeping
//! both on one table is what guarantees that fslab's output decodes with the same names and
//! meanings a real kernel's output does.
//!
//! How the kernel prints the file (xfs_stats.c, `xfs_stats_format`): one flat array of
//! per-CPU `u32` counters is walked with a list of (line name, end offset) pairs, so each line
//! is the name followed by ` %u` per counter; then come the 64-bit lines `xpc` and
//! `defer_relog` (`%llu`), and `debug` (1 only on a CONFIG_XFS_DEBUG kernel). Lines were
//! added over the years (`rmapbt` ~4.8, `refcntbt` ~4.9, `defer_relog` 5.10, `rmapbt_mem` and
//! `rcbagbt` 6.9, the realtime btrees 6.14), and a 2026 tree adds `zoned`, `metafile` and a
//! `gc xpc` line. Lines newer than the layout we render are kept at the end of the table so
//! the decoder can still name their fields.
//!
//! Meanings are paraphrased from the kernel's increment sites (`XFS_STATS_INC` and friends
//! in `fs/xfs/*.c`, the line table in `fs/xfs/xfs_stats.c`). Fields that modern kernels
//! never increment say so, so nobody reads a constant 0 as "nothing happened".

/// How wide the kernel's counters on a line are; this decides where a diff wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Per-CPU `u32` counters summed and printed with `%u`: values wrap modulo 2^32.
    U32,
    /// `u64` counters printed with `%llu`.
    U64,
}

/// What kind of quantity a field is; this decides how a diff of it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An event count that only grows (until it wraps or is cleared).
    Counter,
    /// A level that goes up and down (in-core inodes, in-core dquots): a diff is signed.
    Gauge,
    /// A fixed property of the kernel (the `debug` line): a diff keeps the later value.
    Flag,
}

/// The unit a field's value is in, for the human-readable figure beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain number of events or objects.
    Count,
    /// Bytes.
    Bytes,
    /// 512-byte basic blocks (the unit of `log` blocks).
    BasicBlocks,
}

/// One field of a line: its short name, the kernel struct member, and what it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// Short name printed by the decoder, e.g. `writes` in `log: writes = 89045`.
    pub name: &'static str,
    /// The kernel's `struct __xfsstats` member (or btree op) this field is printed from.
    pub member: &'static str,
    /// What the field counts, in a few words.
    pub meaning: &'static str,
    /// Counter, gauge or flag.
    pub kind: FieldKind,
    /// The unit of the value.
    pub unit: Unit,
}

/// One line of the stat file: its name, a title for the decoded group, and its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSpec {
    /// The line name exactly as the kernel prints it (`gc xpc` has a space in it).
    pub name: &'static str,
    /// What the line is about, printed as the decoded group's heading.
    pub title: &'static str,
    /// Width of the counters on this line.
    pub width: Width,
    /// The fields in the order the kernel prints them.
    pub fields: &'static [FieldSpec],
}

const fn counter(name: &'static str, member: &'static str, meaning: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        member,
        meaning,
        kind: FieldKind::Counter,
        unit: Unit::Count,
    }
}

const fn gauge(name: &'static str, member: &'static str, meaning: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        member,
        meaning,
        kind: FieldKind::Gauge,
        unit: Unit::Count,
    }
}

const fn in_unit(field: FieldSpec, unit: Unit) -> FieldSpec {
    FieldSpec { unit, ..field }
}

const fn line(
    name: &'static str,
    title: &'static str,
    width: Width,
    fields: &'static [FieldSpec],
) -> LineSpec {
    LineSpec {
        name,
        title,
        width,
        fields,
    }
}

/// The 15 per-btree operation counters, in the kernel's `__XBTS_*` order.
pub const BTREE_FIELDS: [FieldSpec; 15] = [
    counter("lookup", "lookup", "lookups: cursor positioned on a key"),
    counter("compare", "compare", "key comparisons made during lookups"),
    counter("insrec", "insrec", "records inserted"),
    counter("delrec", "delrec", "records deleted"),
    counter(
        "newroot",
        "newroot",
        "new root blocks: the tree grew a level",
    ),
    counter(
        "killroot",
        "killroot",
        "root blocks removed: the tree lost a level",
    ),
    counter("increment", "increment", "cursor steps to the next record"),
    counter(
        "decrement",
        "decrement",
        "cursor steps to the previous record",
    ),
    counter("lshift", "lshift", "entries shifted into the left sibling"),
    counter("rshift", "rshift", "entries shifted into the right sibling"),
    counter("split", "split", "block splits"),
    counter("join", "join", "blocks joined with a sibling"),
    counter("alloc", "alloc", "btree blocks allocated"),
    counter("free", "free", "btree blocks freed"),
    counter("moves", "moves", "entries moved inside blocks"),
];

const EXTENT_ALLOC: [FieldSpec; 4] = [
    counter("allocx", "xs_allocx", "extents allocated"),
    counter("allocb", "xs_allocb", "filesystem blocks allocated"),
    counter("freex", "xs_freex", "extents freed"),
    counter("freeb", "xs_freeb", "filesystem blocks freed"),
];

const ABT: [FieldSpec; 4] = [
    counter(
        "lookup",
        "xs_abt_lookup",
        "legacy free-space btree lookups (0 on modern kernels: see abtb2/abtc2)",
    ),
    counter(
        "compare",
        "xs_abt_compare",
        "legacy free-space btree compares (0 on modern kernels)",
    ),
    counter(
        "insrec",
        "xs_abt_insrec",
        "legacy free-space btree inserts (0 on modern kernels)",
    ),
    counter(
        "delrec",
        "xs_abt_delrec",
        "legacy free-space btree deletes (0 on modern kernels)",
    ),
];

const BLK_MAP: [FieldSpec; 7] = [
    counter(
        "mapr",
        "xs_blk_mapr",
        "block-map read calls (file offset to disk block lookups)",
    ),
    counter(
        "mapw",
        "xs_blk_mapw",
        "block-map write calls (mappings that may allocate)",
    ),
    counter(
        "unmap",
        "xs_blk_unmap",
        "block-unmap calls (extents removed from files)",
    ),
    counter(
        "add_exlist",
        "xs_add_exlist",
        "extents inserted into in-core extent lists",
    ),
    counter(
        "del_exlist",
        "xs_del_exlist",
        "extents removed from in-core extent lists",
    ),
    counter(
        "look_exlist",
        "xs_look_exlist",
        "in-core extent list lookups",
    ),
    counter(
        "cmp_exlist",
        "xs_cmp_exlist",
        "in-core extent compares (legacy, normally 0)",
    ),
];

const BMBT: [FieldSpec; 4] = [
    counter(
        "lookup",
        "xs_bmbt_lookup",
        "legacy block-map btree lookups (0 on modern kernels: see bmbt2)",
    ),
    counter(
        "compare",
        "xs_bmbt_compare",
        "legacy block-map btree compares (0 on modern kernels)",
    ),
    counter(
        "insrec",
        "xs_bmbt_insrec",
        "legacy block-map btree inserts (0 on modern kernels)",
    ),
    counter(
        "delrec",
        "xs_bmbt_delrec",
        "legacy block-map btree deletes (0 on modern kernels)",
    ),
];

const DIR: [FieldSpec; 4] = [
    counter(
        "lookup",
        "xs_dir_lookup",
        "directory lookups that reached XFS (dentry cache misses)",
    ),
    counter("create", "xs_dir_create", "directory entries created"),
    counter("remove", "xs_dir_remove", "directory entries removed"),
    counter("getdents", "xs_dir_getdents", "getdents (readdir) calls"),
];

const TRANS: [FieldSpec; 3] = [
    counter(
        "sync",
        "xs_trans_sync",
        "synchronous transaction commits (each forces the log)",
    ),
    counter(
        "async",
        "xs_trans_async",
        "asynchronous transaction commits",
    ),
    counter(
        "empty",
        "xs_trans_empty",
        "commits of transactions that changed nothing",
    ),
];

const IG: [FieldSpec; 7] = [
    counter("attempts", "xs_ig_attempts", "inode cache lookups"),
    counter(
        "found",
        "xs_ig_found",
        "lookups that found the inode cached",
    ),
    counter(
        "frecycle",
        "xs_ig_frecycle",
        "found but being recycled or reclaimed: lookup retried",
    ),
    counter(
        "missed",
        "xs_ig_missed",
        "lookups that missed: inode read from disk",
    ),
    counter(
        "dup",
        "xs_ig_dup",
        "lost a race inserting a freshly read inode",
    ),
    counter(
        "reclaims",
        "xs_ig_reclaims",
        "inodes reclaimed from the cache",
    ),
    counter(
        "attrchg",
        "xs_ig_attrchg",
        "inode attribute changes (setattr)",
    ),
];

const LOG: [FieldSpec; 5] = [
    counter(
        "writes",
        "xs_log_writes",
        "log write IOs: log records (iclogs) submitted to disk",
    ),
    in_unit(
        counter(
            "blocks",
            "xs_log_blocks",
            "log write blocks: 512-byte units written to the log",
        ),
        Unit::BasicBlocks,
    ),
    counter(
        "noiclogs",
        "xs_log_noiclogs",
        "stalls waiting for a free iclog (in-core log buffer)",
    ),
    counter(
        "force",
        "xs_log_force",
        "log forces requested (fsync, sync commits, AIL unpinning)",
    ),
    counter(
        "force_sleep",
        "xs_log_force_sleep",
        "log forces that slept until a log write completed",
    ),
];

const PUSH_AIL: [FieldSpec; 10] = [
    counter(
        "try_logspace",
        "xs_try_logspace",
        "log space reservations (reserve or regrant)",
    ),
    counter(
        "sleep_logspace",
        "xs_sleep_logspace",
        "reservations that slept waiting for log space",
    ),
    counter(
        "pushes",
        "xs_push_ail",
        "AIL push passes (xfsaild scans of the AIL)",
    ),
    counter(
        "success",
        "xs_push_ail_success",
        "log items queued for writeback by the AIL",
    ),
    counter(
        "pushbuf",
        "xs_push_ail_pushbuf",
        "buffers pushed (legacy outcome, 0 on modern kernels)",
    ),
    counter(
        "pinned",
        "xs_push_ail_pinned",
        "items skipped because pinned in the log",
    ),
    counter(
        "locked",
        "xs_push_ail_locked",
        "items skipped because locked",
    ),
    counter(
        "flushing",
        "xs_push_ail_flushing",
        "items skipped because already being flushed",
    ),
    counter(
        "restarts",
        "xs_push_ail_restarts",
        "AIL walk restarts (legacy, 0 on modern kernels)",
    ),
    counter(
        "flush",
        "xs_push_ail_flush",
        "log flushes issued by the AIL to unpin items",
    ),
];

const XSTRAT: [FieldSpec; 2] = [
    counter(
        "quick",
        "xs_xstrat_quick",
        "delayed-allocation extents converted by writeback",
    ),
    counter(
        "split",
        "xs_xstrat_split",
        "split delalloc conversions (legacy, normally 0)",
    ),
];

const RW: [FieldSpec; 2] = [
    counter("write_calls", "xs_write_calls", "file write calls into XFS"),
    counter("read_calls", "xs_read_calls", "file read calls into XFS"),
];

const ATTR: [FieldSpec; 4] = [
    counter("get", "xs_attr_get", "extended attribute reads"),
    counter("set", "xs_attr_set", "extended attribute sets"),
    counter("remove", "xs_attr_remove", "extended attribute removals"),
    counter("list", "xs_attr_list", "extended attribute list calls"),
];

const ICLUSTER: [FieldSpec; 3] = [
    counter(
        "iflush_count",
        "xs_iflush_count",
        "inodes flushed to their cluster buffers",
    ),
    counter(
        "flushcnt",
        "xs_icluster_flushcnt",
        "inode-cluster flush calls",
    ),
    counter(
        "flushinode",
        "xs_icluster_flushinode",
        "inodes written through cluster flushing",
    ),
];

const VNODES: [FieldSpec; 8] = [
    gauge(
        "active",
        "vn_active",
        "in-core inodes right now (a level, kept by stats_clear)",
    ),
    counter("alloc", "vn_alloc", "unused by modern kernels (always 0)"),
    counter("get", "vn_get", "unused by modern kernels (always 0)"),
    counter("hold", "vn_hold", "unused by modern kernels (always 0)"),
    counter("rele", "vn_rele", "inodes destroyed (destroy_inode calls)"),
    counter(
        "reclaim",
        "vn_reclaim",
        "inodes marked reclaimable for background reclaim",
    ),
    counter(
        "remove",
        "vn_remove",
        "inodes destroyed (same event as rele)",
    ),
    counter("free", "vn_free", "unused by modern kernels (always 0)"),
];

const BUF: [FieldSpec; 9] = [
    counter("get", "xb_get", "metadata buffer lookups"),
    counter(
        "create",
        "xb_create",
        "buffers created because the lookup missed the cache",
    ),
    counter(
        "get_locked",
        "xb_get_locked",
        "lookups that found the buffer cached and locked it",
    ),
    counter(
        "get_locked_waited",
        "xb_get_locked_waited",
        "cached-buffer lookups that slept for the buffer lock",
    ),
    counter(
        "busy_locked",
        "xb_busy_locked",
        "trylock lookups that found the buffer busy",
    ),
    counter(
        "miss_locked",
        "xb_miss_locked",
        "lookups not found in the cache",
    ),
    counter(
        "page_retries",
        "xb_page_retries",
        "memory allocation retries for buffer pages",
    ),
    counter(
        "page_found",
        "xb_page_found",
        "buffer pages found in the page cache (legacy)",
    ),
    counter(
        "get_read",
        "xb_get_read",
        "buffer reads (lookup, then read from disk if needed)",
    ),
];

const QM: [FieldSpec; 8] = [
    counter(
        "dqreclaims",
        "xs_qm_dqreclaims",
        "dquots reclaimed from the cache",
    ),
    counter(
        "dqreclaim_misses",
        "xs_qm_dqreclaim_misses",
        "dquot reclaim attempts that skipped a busy dquot",
    ),
    counter(
        "dquot_dups",
        "xs_qm_dquot_dups",
        "lost a race inserting a dquot: duplicate found",
    ),
    counter("dqcachemisses", "xs_qm_dqcachemisses", "dquot cache misses"),
    counter("dqcachehits", "xs_qm_dqcachehits", "dquot cache hits"),
    counter(
        "dqwants",
        "xs_qm_dqwants",
        "dquots wanted (lookup requests)",
    ),
    gauge("dquot", "xs_qm_dquot", "in-core dquots right now (a level)"),
    gauge(
        "dquot_unused",
        "xs_qm_dquot_unused",
        "in-core dquots not in use right now (a level)",
    ),
];

const XPC: [FieldSpec; 3] = [
    in_unit(
        counter(
            "xstrat_bytes",
            "xs_xstrat_bytes",
            "bytes converted from delayed allocation by writeback",
        ),
        Unit::Bytes,
    ),
    in_unit(
        counter(
            "write_bytes",
            "xs_write_bytes",
            "bytes written by write calls",
        ),
        Unit::Bytes,
    ),
    in_unit(
        counter("read_bytes", "xs_read_bytes", "bytes read by read calls"),
        Unit::Bytes,
    ),
];

const DEFER_RELOG: [FieldSpec; 1] = [counter(
    "defer_relog",
    "defer_relog",
    "deferred intent items relogged so the log tail can move",
)];

const DEBUG: [FieldSpec; 1] = [FieldSpec {
    name: "debug",
    member: "CONFIG_XFS_DEBUG",
    meaning: "1 on a kernel built with XFS debugging, else 0",
    kind: FieldKind::Flag,
    unit: Unit::Count,
}];

const ZONED: [FieldSpec; 4] = [
    counter(
        "gc_read_calls",
        "xs_gc_read_calls",
        "zone garbage-collection chunk reads",
    ),
    counter(
        "gc_write_calls",
        "xs_gc_write_calls",
        "zone garbage-collection chunk writes",
    ),
    counter(
        "gc_zone_reset_calls",
        "xs_gc_zone_reset_calls",
        "zone resets issued",
    ),
    counter(
        "pad",
        "__pad1",
        "padding slot, always 0 (later taken by the metafile line)",
    ),
];

const METAFILE: [FieldSpec; 1] = [gauge(
    "inodes_meta",
    "xs_inodes_meta",
    "in-core metadata-directory inodes right now (a level, kept by stats_clear)",
)];

const GC_XPC: [FieldSpec; 1] = [in_unit(
    counter(
        "gc_bytes",
        "xs_gc_bytes",
        "bytes written by zone garbage collection",
    ),
    Unit::Bytes,
)];

/// Every line fslab knows, in kernel print order. The first [`CURRENT_LINES`] entries are the
/// 6.14–6.19 layout fslab renders; the rest only appear in newer kernels.
pub static KNOWN_LINES: [LineSpec; 34] = [
    line(
        "extent_alloc",
        "extent allocation",
        Width::U32,
        &EXTENT_ALLOC,
    ),
    line("abt", "free-space btree, legacy counters", Width::U32, &ABT),
    line("blk_map", "block mapping", Width::U32, &BLK_MAP),
    line(
        "bmbt",
        "block-map btree, legacy counters",
        Width::U32,
        &BMBT,
    ),
    line("dir", "directory operations", Width::U32, &DIR),
    line("trans", "transaction commits", Width::U32, &TRANS),
    line("ig", "inode cache lookups", Width::U32, &IG),
    line("log", "journal writes and forces", Width::U32, &LOG),
    line(
        "push_ail",
        "log space and AIL pushing",
        Width::U32,
        &PUSH_AIL,
    ),
    line(
        "xstrat",
        "delayed-allocation conversion",
        Width::U32,
        &XSTRAT,
    ),
    line("rw", "file read and write calls", Width::U32, &RW),
    line("attr", "extended attribute operations", Width::U32, &ATTR),
    line("icluster", "inode flushing", Width::U32, &ICLUSTER),
    line("vnodes", "in-core inode life cycle", Width::U32, &VNODES),
    line("buf", "metadata buffer cache", Width::U32, &BUF),
    line(
        "abtb2",
        "free-space btree by block (bnobt)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "abtc2",
        "free-space btree by size (cntbt)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "bmbt2",
        "block-map btree (file extents)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line("ibt2", "inode btree (inobt)", Width::U32, &BTREE_FIELDS),
    line(
        "fibt2",
        "free-inode btree (finobt)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line("rmapbt", "reverse-mapping btree", Width::U32, &BTREE_FIELDS),
    line(
        "refcntbt",
        "reference-count btree (reflink)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "rmapbt_mem",
        "in-memory reverse-mapping btree (online repair)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "rcbagbt",
        "in-memory refcount-bag btree (online repair)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "rtrmapbt",
        "realtime reverse-mapping btree",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "rtrmapbt_mem",
        "in-memory realtime reverse-mapping btree (online repair)",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line(
        "rtrefcntbt",
        "realtime reference-count btree",
        Width::U32,
        &BTREE_FIELDS,
    ),
    line("qm", "quota manager (dquot cache)", Width::U32, &QM),
    line("xpc", "64-bit byte counters", Width::U64, &XPC),
    line(
        "defer_relog",
        "deferred intent relogging",
        Width::U64,
        &DEFER_RELOG,
    ),
    line("debug", "kernel build", Width::U32, &DEBUG),
    line(
        "zoned",
        "zoned-device garbage collection",
        Width::U32,
        &ZONED,
    ),
    line(
        "metafile",
        "metadata-directory inodes",
        Width::U32,
        &METAFILE,
    ),
    line(
        "gc xpc",
        "zoned garbage-collection bytes",
        Width::U64,
        &GC_XPC,
    ),
];

/// How many of [`KNOWN_LINES`] make up the layout fslab renders (6.14–6.19): 31.
pub const CURRENT_LINES: usize = 31;

/// Of the rendered layout, the lines of `u32` counters (`extent_alloc` .. `qm`): 28.
pub(crate) const U32_LINES: usize = 28;

/// Of the rendered layout, the lines of `u64` counters after the `u32` ones (`xpc`,
/// `defer_relog`): 2.
pub(crate) const U64_LINES: usize = 2;

/// Index in [`KNOWN_LINES`] of the first 15-field btree line (`abtb2`).
pub(crate) const FIRST_BTREE_LINE: usize = 15;

/// The lines fslab renders, in order: the 6.14–6.19 `/proc/fs/xfs/stat` layout.
pub fn current_layout() -> &'static [LineSpec] {
    &KNOWN_LINES[..CURRENT_LINES]
}

/// The table entry for a line name, if fslab knows it (of any kernel version).
pub fn line_spec(name: &str) -> Option<&'static LineSpec> {
    KNOWN_LINES.iter().find(|l| l.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout_has_264_u32_and_4_u64_fields_then_debug() {
        let cur = current_layout();
        let u32_fields: usize = cur[..U32_LINES].iter().map(|l| l.fields.len()).sum();
        let u64_fields: usize = cur[U32_LINES..U32_LINES + U64_LINES]
            .iter()
            .map(|l| l.fields.len())
            .sum();
        assert_eq!(u32_fields, 264);
        assert_eq!(u64_fields, 4);
        assert!(cur[..U32_LINES].iter().all(|l| l.width == Width::U32));
        assert!(
            cur[U32_LINES..U32_LINES + U64_LINES]
                .iter()
                .all(|l| l.width == Width::U64)
        );
        assert_eq!(cur[U32_LINES + U64_LINES].name, "debug");
        assert_eq!(U32_LINES + U64_LINES + 1, CURRENT_LINES);
    }

    #[test]
    fn line_names_are_unique_and_field_names_unique_per_line() {
        for (i, l) in KNOWN_LINES.iter().enumerate() {
            assert!(
                KNOWN_LINES[i + 1..].iter().all(|m| m.name != l.name),
                "duplicate line {}",
                l.name
            );
            for (j, f) in l.fields.iter().enumerate() {
                assert!(
                    l.fields[j + 1..].iter().all(|g| g.name != f.name),
                    "duplicate field {} in {}",
                    f.name,
                    l.name
                );
            }
        }
    }

    #[test]
    fn btree_lines_are_the_twelve_fifteen_field_lines_before_qm() {
        let cur = current_layout();
        let btrees: Vec<&str> = cur
            .iter()
            .filter(|l| l.fields == &BTREE_FIELDS[..])
            .map(|l| l.name)
            .collect();
        assert_eq!(btrees.len(), 12);
        assert_eq!(cur[FIRST_BTREE_LINE].name, "abtb2");
        assert_eq!(cur[FIRST_BTREE_LINE + 12].name, "qm");
    }

    #[test]
    fn line_spec_finds_newer_lines_and_rejects_unknown() {
        assert_eq!(line_spec("gc xpc").map(|l| l.fields.len()), Some(1));
        assert_eq!(line_spec("log").map(|l| l.fields[0].name), Some("writes"));
        assert!(line_spec("nosuchline").is_none());
    }
}
