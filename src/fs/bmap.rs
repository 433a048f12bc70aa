//! Block maps: which disk blocks hold a file's (or directory's) blocks.
//!
//! The in-core extent list of an inode (sorted, non-overlapping, adjacent extents merged) is
//! the authority for lookups, as XFS's in-core extent tree is. On disk it lives in the inode's
//! literal area while it fits (≤ 21 extents, *extents* format); beyond that, in an extent-map
//! B+tree (*btree* format) whose root the inode records. Every change to the list is applied
//! to the tree in the same transaction.
//!
//! Delayed-allocation extents (`startblock == DELALLOC`) exist only in memory: they reserve
//! space for dirty pages until write-back allocates real blocks (`xstrat`).
//!
//! The `blk_map` stat line counts here as the kernel's bmap code does: `mapr` per read
//! mapping, `mapw` per write mapping, `unmap` per range unmapped (truncate, hole punch, a
//! directory block given up: XFS's bunmapi, not the removal inside a remapping),
//! `look_exlist` per lookup in the in-core list, `add_exlist` per real mapping added (a new
//! allocation, a delalloc conversion, an unwritten extent written: the
//! `xfs_bmap_add_extent_*_real` calls) and `del_exlist` per real extent unmapped
//! (`xfs_bmap_del_extent_real`). Delayed-allocation reservations come and go uncounted, as in
//! XFS, however the list's records merge or split underneath.

use crate::fs::Fs;
use crate::fs::alloc::{AllocReq, alloc_extent, free_extent};
use crate::fs::btree::BtreeSpec;
use crate::fs::btree::kinds::BmbtSpec;
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::dinode::{DinodeCore, EXTENT_REC_SIZE, ForkFormat, MAX_INLINE_EXTENTS};
use crate::fs::format::endian::{get_u16, get_u64, put_u16, put_u64};
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::geo::Geometry;
use crate::fs::inode::{BtreeFork, DELALLOC, DataFork, Extent, ExtentList, ForkRoot, ListChange};
use crate::fs::stats::{MountStats, Stat};
use crate::fs::trans::{InodeId, Trans};

/// Largest blocks in one extent record (21 bits, as XFS).
pub const MAX_EXTENT_LEN: u32 = crate::fs::btree::kinds::BMBT_MAX_BLOCKCOUNT;

/// Pack an extent into the 16-byte on-disk record (the bmbt record encoding).
pub fn pack_extent(e: &Extent, out: &mut [u8]) {
    BmbtSpec::encode_rec(e, out);
}

/// Unpack a 16-byte extent record.
pub fn unpack_extent(b: &[u8]) -> Extent {
    BmbtSpec::decode_rec(b)
}

/// Write a fork into an inode's literal area.
pub fn encode_fork(fork: &DataFork, lit: &mut [u8]) {
    lit.fill(0);
    match fork {
        DataFork::Local(bytes) => lit[..bytes.len()].copy_from_slice(bytes),
        DataFork::Extents(list) => {
            for (i, e) in list.iter().filter(|e| !e.is_delalloc()).enumerate() {
                pack_extent(e, &mut lit[i * EXTENT_REC_SIZE..(i + 1) * EXTENT_REC_SIZE]);
            }
        }
        DataFork::Btree(b) => {
            put_u64(lit, 0, b.root.ptr);
            put_u16(lit, 8, b.root.level);
        }
    }
}

/// Read an inode's fork from its literal area (and its extent tree, for btree format).
pub fn decode_fork(
    fs: &Fs,
    di: &DinodeCore,
    lit: &[u8],
    ino: u64,
    daddr: Daddr,
) -> FsResult<DataFork> {
    let bad = |what: String| FsError::Corrupt {
        kind: BlockKind::Inode,
        daddr: daddr.0,
        what: format!("inode {ino}: {what}"),
    };
    if di.mode == 0 {
        return Ok(DataFork::default());
    }
    match di.format {
        ForkFormat::Local => {
            if di.size as usize > lit.len() {
                return Err(bad(format!("local fork of {} bytes does not fit", di.size)));
            }
            Ok(DataFork::Local(lit[..di.size as usize].into()))
        }
        ForkFormat::Extents => {
            let n = di.nextents as usize;
            if n > MAX_INLINE_EXTENTS {
                return Err(bad(format!("{n} inline extents")));
            }
            let list: ExtentList = (0..n)
                .map(|i| unpack_extent(&lit[i * EXTENT_REC_SIZE..(i + 1) * EXTENT_REC_SIZE]))
                .collect();
            check_extents(fs, &list).map_err(bad)?;
            Ok(DataFork::Extents(list))
        }
        ForkFormat::Btree => {
            let root = ForkRoot {
                ptr: get_u64(lit, 0),
                level: get_u16(lit, 8),
            };
            if root.ptr >= fs.geo.dblocks || root.level > 8 {
                return Err(bad(format!(
                    "extent tree root {} level {} is impossible",
                    root.ptr, root.level
                )));
            }
            let list = crate::fs::bmbt::load_extents(fs, ino, root)?;
            if list.len() != di.nextents as usize {
                return Err(bad(format!(
                    "extent tree holds {} extents, inode says {}",
                    list.len(),
                    di.nextents
                )));
            }
            check_extents(fs, &list).map_err(bad)?;
            Ok(DataFork::Btree(Box::new(BtreeFork {
                root,
                extents: list.into(),
            })))
        }
    }
}

/// An extent list read from disk must be sorted, non-overlapping and inside the filesystem.
fn check_extents(fs: &Fs, list: &[Extent]) -> Result<(), String> {
    let mut prev_end = 0u64;
    for e in list {
        if e.blockcount == 0 || e.startoff < prev_end {
            return Err(format!(
                "extent at file block {} overlaps or is empty",
                e.startoff
            ));
        }
        if e.startblock == DELALLOC || e.startblock + u64::from(e.blockcount) > fs.geo.dblocks {
            return Err(format!(
                "extent at file block {} points outside the filesystem",
                e.startoff
            ));
        }
        prev_end = e.end();
    }
    Ok(())
}

/// Index of the extent containing file block `off`, or where one starting at `off` would go.
fn search(list: &[Extent], off: u64) -> Result<usize, usize> {
    let i = list.partition_point(|e| e.end() <= off);
    if i < list.len() && list[i].startoff <= off {
        Ok(i)
    } else {
        Err(i)
    }
}

/// The mapping of file block `off`: the extent containing it, if any.
pub fn lookup(list: &[Extent], off: u64, stats: &MountStats) -> Option<Extent> {
    stats.inc(Stat::LookExlist);
    search(list, off).ok().map(|i| list[i])
}

/// The mapping of each file block `first..=last`, from one lookup in the list (counted once,
/// as iomap maps a write's range with one extent-tree lookup).
pub fn lookup_range(
    list: &[Extent],
    first: u64,
    last: u64,
    stats: &MountStats,
) -> Vec<Option<Extent>> {
    stats.inc(Stat::LookExlist);
    let mut i = match search(list, first) {
        Ok(i) | Err(i) => i,
    };
    (first..=last)
        .map(|b| {
            while i < list.len() && list[i].end() <= b {
                i += 1;
            }
            list.get(i).filter(|e| e.startoff <= b).copied()
        })
        .collect()
}

/// The first extent at or after file block `off` (to find the end of a hole).
pub fn next_extent(list: &[Extent], off: u64) -> Option<Extent> {
    match search(list, off) {
        Ok(i) => Some(list[i]),
        Err(i) => list.get(i).copied(),
    }
}

fn mergeable(a: &Extent, b: &Extent) -> bool {
    a.end() == b.startoff
        && a.unwritten == b.unwritten
        && u64::from(a.blockcount) + u64::from(b.blockcount) <= u64::from(MAX_EXTENT_LEN)
        && if a.is_delalloc() {
            b.is_delalloc()
        } else {
            !b.is_delalloc() && a.startblock + u64::from(a.blockcount) == b.startblock
        }
}

/// Insert a new mapping (its range must be a hole in the list), merging with neighbours.
pub fn insert(list: &mut ExtentList, mut e: Extent) -> ListChange {
    let mut ch = ListChange::default();
    let mut i = match search(list, e.startoff) {
        Ok(i) | Err(i) => i,
    };
    if i > 0 && mergeable(&list[i - 1], &e) {
        let left = list.remove(i - 1);
        ch.removed.push(left);
        e = Extent {
            startoff: left.startoff,
            startblock: left.startblock,
            blockcount: left.blockcount + e.blockcount,
            unwritten: e.unwritten,
        };
        i -= 1;
    }
    if i < list.len() && mergeable(&e, &list[i]) {
        let right = list.remove(i);
        ch.removed.push(right);
        e.blockcount += right.blockcount;
    }
    list.insert(i, e);
    ch.added.push(e);
    ch
}

/// Unmap file blocks `off..off+len` (truncate, punch, a directory block given up), splitting
/// extents at the edges. Returns the change and the removed pieces (what to free).
pub fn remove_range(
    list: &mut ExtentList,
    off: u64,
    len: u64,
    stats: &MountStats,
) -> (ListChange, Vec<Extent>) {
    // xfs_bunmapi looks up the extent at the range's end, then walks back.
    stats.inc(Stat::BlkUnmap);
    stats.inc(Stat::LookExlist);
    let out = cut_range(list, off, len);
    let real = out.1.iter().filter(|e| !e.is_delalloc()).count();
    stats.add(Stat::DelExlist, real as u32);
    out
}

/// Remove the mappings of `off..off+len` from the list (the callers count).
fn cut_range(list: &mut ExtentList, off: u64, len: u64) -> (ListChange, Vec<Extent>) {
    let end = off + len;
    let mut ch = ListChange::default();
    let mut freed = Vec::new();
    let mut i = list.partition_point(|e| e.end() <= off);
    while i < list.len() && list[i].startoff < end {
        let e = list.remove(i);
        ch.removed.push(e);
        let cut_start = e.startoff.max(off);
        let cut_end = e.end().min(end);
        let shift = |from: u64| {
            if e.is_delalloc() {
                DELALLOC
            } else {
                e.startblock + (from - e.startoff)
            }
        };
        freed.push(Extent {
            startoff: cut_start,
            startblock: shift(cut_start),
            blockcount: (cut_end - cut_start) as u32,
            unwritten: e.unwritten,
        });
        if e.startoff < cut_start {
            let left = Extent {
                blockcount: (cut_start - e.startoff) as u32,
                ..e
            };
            list.insert(i, left);
            ch.added.push(left);
            i += 1;
        }
        if cut_end < e.end() {
            let right = Extent {
                startoff: cut_end,
                startblock: shift(cut_end),
                blockcount: (e.end() - cut_end) as u32,
                unwritten: e.unwritten,
            };
            list.insert(i, right);
            ch.added.push(right);
            i += 1;
        }
    }
    (ch, freed)
}

/// Replace the mapping of `new`'s range (which must be fully mapped, e.g. by a delalloc
/// reservation being converted, or an unwritten extent being written) with `new`.
pub fn replace(list: &mut ExtentList, new: Extent) -> ListChange {
    let (mut ch, _) = cut_range(list, new.startoff, u64::from(new.blockcount));
    ch.merge(insert(list, new));
    ch.simplify();
    ch
}

/// The disk block holding file block `lblk` of a joined inode, if mapped to real blocks
/// (`mapr`).
pub fn map_block(tp: &Trans, ip: InodeId, lblk: u64) -> Option<u64> {
    let stats = &tp.fs().stats;
    stats.inc(Stat::BlkMapr);
    lookup(tp.ic(ip).fork.extents(), lblk, stats)
        .filter(|e| !e.is_delalloc())
        .map(|e| e.startblock + (lblk - e.startoff))
}

/// XFS's `XFS_ALLOC_GAP_UNITS`: a gap to a neighbouring extent counts as part of the
/// target only while it is at most this many times the allocation's length.
const ALLOC_GAP_UNITS: u64 = 4;

/// Where new blocks for file blocks `off..off+len` of inode `ino` should go: the target of
/// its allocation (XFS's `xfs_bmap_adjacent`, as `xfs_bmap_btalloc` aims every data and
/// directory block). Past the last extent, right after the real extent before `off` (plus
/// the gap to it); between extents, whichever of the two neighbours' blocks (adjusted by
/// the gap, while the gap is small) is nearer; with no real neighbour, the inode's own
/// block, so a new file's first blocks go near its inode.
pub fn alloc_target(geo: &Geometry, list: &[Extent], off: u64, len: u32, ino: u64) -> u64 {
    let inode_block = geo.fsblock(geo.ino_agno(ino), Geometry::agino_agbno(geo.ino_agino(ino)));
    // A block in the same AG as `anchor` (the kernel's ISVALID).
    let same_ag = |b: u64, anchor: u64| b < geo.dblocks && geo.agno_of(b) == geo.agno_of(anchor);
    let at = list.partition_point(|e| e.end() <= off);
    let prev = at
        .checked_sub(1)
        .map(|i| list[i])
        .filter(|e| !e.is_delalloc());
    let next = list.get(at).copied();
    let len = u64::from(len);
    let Some(next) = next else {
        // At the end of the file.
        return prev
            .map(|p| (p, p.startblock + u64::from(p.blockcount)))
            .filter(|&(p, end)| same_ag(end, p.startblock))
            .map_or(inode_block, |(p, end)| {
                let gap = off - p.end();
                if same_ag(end + gap, p.startblock) {
                    end + gap
                } else {
                    end
                }
            });
    };
    let before = prev
        .map(|p| (p, p.startblock + u64::from(p.blockcount)))
        .filter(|&(p, end)| same_ag(end, p.startblock))
        .map(|(p, end)| {
            let gap = off - p.end();
            if gap <= ALLOC_GAP_UNITS * len && same_ag(end + gap, p.startblock) {
                (end + gap, gap)
            } else {
                (end, gap + gap)
            }
        });
    let after = (!next.is_delalloc()).then(|| {
        let gap = next.startoff - off;
        let b = next.startblock;
        if gap <= ALLOC_GAP_UNITS * len && b >= gap && same_ag(b - gap, b) {
            (b - gap, gap)
        } else if b >= len && same_ag(b - len, b) {
            (b - len, (gap + gap).wrapping_sub(len))
        } else {
            (b, gap + gap)
        }
    });
    match (before, after) {
        (Some((pb, pd)), Some((gb, gd))) => {
            if pd <= gd {
                pb
            } else {
                gb
            }
        }
        (Some((pb, _)), None) => pb,
        (None, Some((gb, _))) => gb,
        (None, None) => inode_block,
    }
}

/// Allocate real blocks for file blocks `lblk..lblk+count` of a joined inode (which must be
/// a hole there), as one extent if the allocator can, as near as it can to where
/// [`alloc_target`] aims. Used for directory blocks and preallocation; file data normally
/// goes through delayed allocation. Returns the extents added.
pub fn alloc_blocks(
    tp: &mut Trans,
    ip: InodeId,
    lblk: u64,
    count: u32,
    unwritten: bool,
) -> FsResult<Vec<Extent>> {
    let fs = tp.fs();
    fs.stats.inc(Stat::BlkMapw);
    let ino = tp.ino(ip);
    let geo = fs.geo;
    // A directory's blocks are metadata; a file's preallocated blocks are its data.
    let userdata = !tp.ic(ip).is_dir();
    let mut added = Vec::new();
    let mut off = lblk;
    let mut left = count;
    while left > 0 {
        let want = left.min(MAX_EXTENT_LEN);
        let target = alloc_target(&geo, tp.ic(ip).fork.extents(), off, want, ino);
        let req = AllocReq {
            minlen: 1,
            userdata,
            ..AllocReq::near(&geo, target, want)
        };
        let (block, got) = alloc_extent(tp, &req)?;
        if unwritten {
            // Preallocated file blocks get data written straight to them later.
            tp.fs().log.wait_busy(block, got)?;
        }
        let e = Extent {
            startoff: off,
            startblock: block,
            blockcount: got,
            unwritten,
        };
        set_mapping(tp, ip, e, true)?;
        added.push(e);
        off += u64::from(got);
        left -= got;
    }
    Ok(added)
}

/// Map `e`'s range to `e` in a joined inode's fork (and its tree), replacing whatever mapped
/// it (a delayed reservation, an unwritten extent). With `new_blocks`, `e`'s blocks were just
/// allocated and are charged to the inode.
pub fn set_mapping(tp: &mut Trans, ip: InodeId, e: Extent, new_blocks: bool) -> FsResult<()> {
    let stats = std::sync::Arc::clone(&tp.fs().stats);
    let change = {
        let ic = tp.ic_mut(ip);
        let list = fork_list_mut(&mut ic.fork)?;
        // xfs_bmapi_write looks the range up, then adds the mapping.
        stats.inc(Stat::LookExlist);
        let ch = replace_or_insert(list, e);
        stats.inc(Stat::AddExlist);
        if new_blocks {
            ic.di.nblocks += u64::from(e.blockcount);
        }
        ch
    };
    tp.log_inode(ip);
    crate::fs::bmbt::sync_fork(tp, ip, &change)
}

fn replace_or_insert(list: &mut ExtentList, e: Extent) -> ListChange {
    // The list is sorted and its extents do not overlap: only the first extent ending after
    // `e` starts can overlap it.
    let i = list.partition_point(|x| x.end() <= e.startoff);
    if list.get(i).is_some_and(|x| x.startoff < e.end()) {
        replace(list, e)
    } else {
        insert(list, e)
    }
}

/// The writable extent list of a fork (a local fork has none).
pub fn fork_list_mut(fork: &mut DataFork) -> FsResult<&mut ExtentList> {
    match fork {
        DataFork::Extents(v) => Ok(v),
        DataFork::Btree(b) => Ok(&mut b.extents),
        DataFork::Local(_) => Err(FsError::Invalid("block mapping on an inline fork")),
    }
}

/// Unmap file blocks `lblk..lblk+count` of a joined inode and free the real blocks behind
/// them (delayed-allocation reservations are returned to the free-block counter).
/// Returns how many real blocks were freed.
pub fn free_blocks(tp: &mut Trans, ip: InodeId, lblk: u64, count: u64) -> FsResult<u64> {
    let stats = std::sync::Arc::clone(&tp.fs().stats);
    let (change, freed) = {
        let ic = tp.ic_mut(ip);
        let list = fork_list_mut(&mut ic.fork)?;
        remove_range(list, lblk, count, &stats)
    };
    if change.removed.is_empty() {
        return Ok(0);
    }
    let mut real = 0u64;
    for e in &freed {
        if e.is_delalloc() {
            tp.fs().fdblocks.fetch_add(
                i64::from(e.blockcount),
                std::sync::atomic::Ordering::Relaxed,
            );
        } else {
            real += u64::from(e.blockcount);
        }
    }
    {
        let ic = tp.ic_mut(ip);
        ic.di.nblocks = ic.di.nblocks.saturating_sub(real);
    }
    tp.log_inode(ip);
    crate::fs::bmbt::sync_fork(tp, ip, &change)?;
    for e in freed.iter().filter(|e| !e.is_delalloc()) {
        free_extent(tp, e.startblock, e.blockcount)?;
    }
    Ok(real)
}

/// Real (allocated) blocks mapped by a list.
pub fn allocated_blocks(list: &[Extent]) -> u64 {
    list.iter()
        .filter(|e| !e.is_delalloc())
        .map(|e| u64::from(e.blockcount))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(off: u64, block: u64, len: u32) -> Extent {
        Extent {
            startoff: off,
            startblock: block,
            blockcount: len,
            unwritten: false,
        }
    }

    #[test]
    fn packing_round_trips_extreme_values() {
        let mut b = [0u8; 16];
        for e in [
            ext(0, 0, 1),
            Extent {
                startoff: (1 << 54) - 1,
                startblock: (1 << 52) - 1,
                blockcount: MAX_EXTENT_LEN,
                unwritten: true,
            },
            ext(12345, 678_910, 42),
        ] {
            pack_extent(&e, &mut b);
            assert_eq!(unpack_extent(&b), e);
        }
    }

    #[test]
    fn inserting_contiguous_extents_merges_them() {
        let s = MountStats::new();
        let mut l = ExtentList::new();
        insert(&mut l, ext(0, 100, 4));
        insert(&mut l, ext(8, 108, 4));
        let ch = insert(&mut l, ext(4, 104, 4));
        assert_eq!(l, vec![ext(0, 100, 12)]);
        assert_eq!(ch.removed.len(), 2);
        assert_eq!(ch.added, vec![ext(0, 100, 12)]);
        // Not contiguous on disk: kept apart.
        insert(&mut l, ext(12, 500, 1));
        assert_eq!(l.len(), 2);
        assert_eq!(lookup(&l, 12, &s), Some(ext(12, 500, 1)));
        assert_eq!(lookup(&l, 13, &s), None);
    }

    #[test]
    fn only_real_mappings_count_as_added_or_removed() {
        let s = MountStats::new();
        let counts = || {
            let snap = s.mount().snapshot();
            (
                snap.get(Stat::AddExlist),
                snap.get(Stat::DelExlist),
                snap.get(Stat::BlkUnmap),
            )
        };
        let delalloc = |off, len| Extent {
            startoff: off,
            startblock: DELALLOC,
            blockcount: len,
            unwritten: false,
        };
        let mut l: ExtentList = thin_vec::thin_vec![ext(0, 100, 4), ext(8, 108, 4)];
        // Giving up a delalloc reservation is an unmap but removes no real extent.
        insert(&mut l, delalloc(20, 4));
        remove_range(&mut l, 20, 4, &s);
        assert_eq!(counts(), (0, 0, 1));
        // Unmapping a range over two real extents removes two (XFS's del_extent_real twice).
        let (_, freed) = remove_range(&mut l, 2, 8, &s);
        assert_eq!(freed, vec![ext(2, 102, 2), ext(8, 108, 2)]);
        assert_eq!(counts(), (0, 2, 2));
    }

    #[test]
    fn one_range_lookup_maps_every_block_and_counts_once() {
        let s = MountStats::new();
        let l = vec![ext(2, 100, 2), ext(6, 200, 1)];
        let m = lookup_range(&l, 0, 7, &s);
        let blocks: Vec<Option<u64>> = m
            .iter()
            .zip(0u64..)
            .map(|(e, b)| e.map(|e| e.startblock + (b - e.startoff)))
            .collect();
        assert_eq!(
            blocks,
            vec![
                None,
                None,
                Some(100),
                Some(101),
                None,
                None,
                Some(200),
                None
            ]
        );
        assert_eq!(s.mount().snapshot().get(Stat::LookExlist), 1);
    }

    #[test]
    fn removing_a_middle_range_splits_and_returns_what_to_free() {
        let s = MountStats::new();
        let mut l: ExtentList = thin_vec::thin_vec![ext(0, 100, 10)];
        let (ch, freed) = remove_range(&mut l, 3, 4, &s);
        assert_eq!(l, vec![ext(0, 100, 3), ext(7, 107, 3)]);
        assert_eq!(freed, vec![ext(3, 103, 4)]);
        assert_eq!(ch.removed, vec![ext(0, 100, 10)]);
        assert_eq!(ch.added.len(), 2);
    }

    #[test]
    fn converting_delalloc_replaces_the_reservation() {
        let mut l = ExtentList::new();
        insert(
            &mut l,
            Extent {
                startoff: 0,
                startblock: DELALLOC,
                blockcount: 8,
                unwritten: false,
            },
        );
        insert(&mut l, ext(8, 208, 2));
        assert_eq!(l.len(), 2, "delalloc never merges with real blocks");
        let ch = replace(&mut l, ext(0, 200, 8));
        assert_eq!(l, vec![ext(0, 200, 10)]);
        assert!(ch.removed.iter().any(|e| e.is_delalloc()));
        assert_eq!(allocated_blocks(&l), 10);
        assert_eq!(next_extent(&l, 20), None);
    }
}
