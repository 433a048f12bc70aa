//! Inode allocation: chunks of 64 inodes, tracked per AG by the inode B+trees.
//!
//! As in XFS (v5, finobt=1): every AG's inode chunks are records of the inobt (first inode,
//! free bitmap, free count); the finobt holds the same records but only for chunks with a free
//! inode, so finding one is a single lookup instead of a scan. Thread 004's stats show both
//! (`ibt2`, `fibt2`). The AGI buffer is the AG's inode lock and comes before the AGF in the
//! lock order, because a new chunk needs blocks.
//!
//! A new chunk is 8 aligned blocks, written at once with 64 free inodes (magic, number, UUID,
//! CRC) through its two 16 KiB inode cluster buffers ([`crate::fs::geo::INODE_CLUSTER_SIZE`]),
//! so every inode slot on disk always verifies. Freeing the last used inode of a chunk
//! frees the chunk (XFS's default, `ikeep` off).
//!
//! The searches are XFS's, lookup for lookup (they decide the `ibt2`/`fibt2` counts): a new
//! inode comes from the finobt chunk nearest its parent, the inobt record is looked up once
//! and updated; a freed one's inobt record is found with a less-or-equal lookup and changed
//! where it was found; a new chunk goes right after the last one, else near the inobt root.

use std::sync::atomic::Ordering;

use crate::fs::alloc::{AllocReq, AllocTarget, alloc_extent, free_extent};
use crate::fs::btree::kinds::{FinoSpec, InoRec, InoSpec};
use crate::fs::btree::store::BufId;
use crate::fs::btree::{BtreeSpec, Cursor, LookupMode, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::ag::{AGI_SECTOR, Agi, NULL_AGBLOCK};
use crate::fs::format::dinode::{self, DinodeCore};
use crate::fs::format::{BBSIZE, BlockKind, CHUNK_BLOCKS, Daddr, INODE_SIZE, INODES_PER_CHUNK};
use crate::fs::geo::{BLOCKS_PER_CLUSTER, CLUSTERS_PER_CHUNK, Geometry, INODE_CLUSTER_SIZE};
use crate::fs::log::item::init_cluster;
use crate::fs::trans::Trans;
use crate::fs::treestore::{TreeSpace, TreeStore, run_cursor};

/// The AGI of one AG, held by a transaction.
struct AgiHandle {
    agno: u32,
    buf: BufId,
    agi: Agi,
}

/// The inode trees take their blocks from their AG's free space.
struct InodeTreeSpace {
    agno: u32,
    /// Blocks allocated (+) or freed (-) for the tree being changed.
    blocks_delta: i32,
}

/// A tree store over one AG's inode trees.
type InodeTreeStore<'t, 'a> = TreeStore<'t, 'a, InodeTreeSpace>;

impl TreeSpace for InodeTreeSpace {
    fn locate(&self, tp: &Trans, kind: BlockKind, ptr: u64) -> FsResult<Daddr> {
        let geo = tp.fs().geo;
        if ptr == 0 || ptr >= u64::from(geo.ag_len(self.agno)) {
            return Err(FsError::Corrupt {
                kind,
                daddr: 0,
                what: format!("tree pointer {ptr} beyond AG {}", self.agno),
            });
        }
        Ok(geo.ag_daddr(self.agno, ptr as u32))
    }

    fn alloc(&mut self, tp: &mut Trans, _kind: BlockKind, hint: u64) -> FsResult<(u64, Daddr)> {
        let geo = tp.fs().geo;
        // Near the block being split, in this AG (XFS's xfs_inobt_alloc_block).
        let req = AllocReq {
            this_ag_only: true,
            ..AllocReq::near(&geo, geo.fsblock(self.agno, hint as u32), 1)
        };
        let (fsb, _) = alloc_extent(tp, &req)?;
        self.blocks_delta += 1;
        Ok((u64::from(geo.agbno_of(fsb)), Daddr::of_block(fsb)))
    }

    fn free(&mut self, tp: &mut Trans, _kind: BlockKind, ptr: u64, _id: BufId) -> FsResult<()> {
        self.blocks_delta -= 1;
        let fsb = tp.fs().geo.fsblock(self.agno, ptr as u32);
        free_extent(tp, fsb, 1)
    }
}

fn lock_agi(tp: &mut Trans, agno: u32, try_only: bool) -> FsResult<Option<AgiHandle>> {
    let daddr = tp.fs().geo.ag_header_daddr(agno, AGI_SECTOR);
    let buf = if try_only {
        match tp.try_read_buf(daddr, BlockKind::Agi, BBSIZE)? {
            Some(b) => b,
            None => return Ok(None),
        }
    } else {
        tp.read_buf(daddr, BlockKind::Agi, BBSIZE)?
    };
    let agi = Agi::decode(tp.buf(buf), agno, &tp.fs().uuid, daddr)?
        .check_length(tp.fs().geo.ag_len(agno), daddr)?;
    Ok(Some(AgiHandle { agno, buf, agi }))
}

fn put_agi(tp: &mut Trans, h: &AgiHandle) {
    let uuid = tp.fs().uuid;
    h.agi.encode(tp.buf_mut(h.buf), &uuid);
    tp.log_buf(h.buf, 0, 343);
    let pag = &tp.fs().perag[h.agno as usize];
    pag.icount.store(h.agi.count, Ordering::Relaxed);
    pag.ifree.store(h.agi.freecount, Ordering::Relaxed);
}

/// Run a cursor operation on the AG's inobt or finobt and keep the AGI's record of its root
/// and block count current.
fn with_tree<S, R>(
    tp: &mut Trans,
    h: &mut AgiHandle,
    f: impl FnOnce(&mut Cursor<S>, &mut InodeTreeStore) -> FsResult<R>,
) -> FsResult<R>
where
    S: BtreeSpec,
{
    let fino = S::kind(0) == BlockKind::FinoBtree;
    let (ptr, levels) = if fino {
        (h.agi.free_root, h.agi.free_level)
    } else {
        (h.agi.root, h.agi.level)
    };
    let root = Root {
        ptr: u64::from(ptr),
        level: (levels - 1) as u16,
    };
    let mut st = TreeStore::new(
        &mut *tp,
        InodeTreeSpace {
            agno: h.agno,
            blocks_delta: 0,
        },
    );
    let (result, r) = run_cursor(&mut st, root, u64::from(h.agno), f);
    let delta = st.space.blocks_delta;
    let (root_field, level_field, blocks_field) = if fino {
        (
            &mut h.agi.free_root,
            &mut h.agi.free_level,
            &mut h.agi.fblocks,
        )
    } else {
        (&mut h.agi.root, &mut h.agi.level, &mut h.agi.iblocks)
    };
    *root_field = r.ptr as u32;
    *level_field = u32::from(r.level) + 1;
    *blocks_field = blocks_field.saturating_add_signed(delta);
    result
}

/// Write 64 free inodes into a new chunk's cluster buffers. The log carries an icreate item for
/// them, not their bytes (XFS's ordered buffers): recovery rebuilds the blocks from it.
fn init_chunk(tp: &mut Trans, agno: u32, agbno: u32) -> FsResult<()> {
    let fs = tp.fs();
    let geo = fs.geo;
    let uuid = fs.uuid;
    let cksum = fs.bufs.cksum();
    let seed = generation_seed();
    let mut ids = Vec::with_capacity(CLUSTERS_PER_CHUNK as usize);
    for c in 0..CLUSTERS_PER_CHUNK {
        let at = agbno + c * BLOCKS_PER_CLUSTER;
        let id = tp.new_buf(geo.ag_daddr(agno, at), BlockKind::Inode, INODE_CLUSTER_SIZE)?;
        let first = geo.ino(agno, Geometry::agbno_agino(at));
        init_cluster(tp.buf_mut(id), first, seed, &uuid, cksum);
        ids.push(id);
    }
    tp.log_icreate(agno, agbno, seed, &ids);
    Ok(())
}

/// A new chunk's generation seed (varies with chunk reuse; each inode mixes in its number).
fn generation_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// Add a chunk to a locked AG. Fails with `NoSpace` if the AG has no 8 aligned blocks.
///
/// Where it goes is XFS's `xfs_ialloc_ag_alloc`: right after the last chunk made
/// (`agi_newino`) if those blocks are free, else the aligned free blocks nearest the
/// inobt's root.
fn new_chunk(tp: &mut Trans, h: &mut AgiHandle) -> FsResult<()> {
    let geo = tp.fs().geo;
    let chunk = AllocReq {
        this_ag_only: true,
        ..AllocReq::blocks(h.agno, CHUNK_BLOCKS)
    };
    // mkfs records "no chunk yet" as NULL_AGBLOCK (all ones), as XFS its NULLAGINO.
    let after_last = (h.agi.newino != NULL_AGBLOCK)
        .then(|| Geometry::agino_agbno(h.agi.newino) + CHUNK_BLOCKS)
        .filter(|&b| b < geo.ag_len(h.agno));
    let exact = match after_last {
        Some(agbno) => {
            let req = AllocReq {
                target: AllocTarget::Exact(geo.fsblock(h.agno, agbno)),
                ..chunk
            };
            match alloc_extent(tp, &req) {
                Ok(got) => Some(got),
                Err(FsError::NoSpace) => None,
                Err(e) => return Err(e),
            }
        }
        None => None,
    };
    let (fsb, _) = match exact {
        Some(got) => got,
        None => {
            let req = AllocReq {
                target: AllocTarget::Near(geo.fsblock(h.agno, h.agi.root)),
                align: CHUNK_BLOCKS,
                ..chunk
            };
            alloc_extent(tp, &req)?
        }
    };
    let agbno = geo.agbno_of(fsb);
    init_chunk(tp, h.agno, agbno)?;
    let rec = InoRec {
        startino: Geometry::agbno_agino(agbno),
        holemask: 0,
        count: 64,
        freecount: 64,
        free: u64::MAX,
    };
    with_tree::<InoSpec, _>(tp, h, |cur, st| cur.insert(st, &rec))?;
    with_tree::<FinoSpec, _>(tp, h, |cur, st| cur.insert(st, &rec))?;
    h.agi.count += 64;
    h.agi.freecount += 64;
    h.agi.newino = rec.startino;
    Ok(())
}

/// The chunk a new inode comes from, with the inode taken: the finobt record as it is after
/// the take, and the inode's bit in it.
struct TakenInode {
    rec: InoRec,
    bit: u32,
}

/// Find a chunk with a free inode in the finobt, take its first free inode and update or
/// delete the record there (the finobt half of XFS's `xfs_dialloc_ag`).
///
/// In the parent's AG, the chunk nearest the parent (`xfs_dialloc_ag_finobt_near`): the
/// record at or before the parent's inode, if the parent is in it; else the nearer of that
/// one and the first record after the parent, looked up with a second cursor. In another AG,
/// the chunk made last (`agi_newino`), else the first chunk with a free inode
/// (`xfs_dialloc_ag_finobt_newino`).
fn fino_take(tp: &mut Trans, h: &mut AgiHandle, near: Option<u32>) -> FsResult<TakenInode> {
    let root = Root {
        ptr: u64::from(h.agi.free_root),
        level: (h.agi.free_level - 1) as u16,
    };
    let owner = u64::from(h.agno);
    let newino = h.agi.newino;
    let mut left = Cursor::<FinoSpec>::new(root, owner);
    let mut right = Cursor::<FinoSpec>::new(root, owner);
    let mut st = TreeStore::new(
        &mut *tp,
        InodeTreeSpace {
            agno: h.agno,
            blocks_delta: 0,
        },
    );
    let empty = || FsError::Corrupt {
        kind: BlockKind::FinoBtree,
        daddr: 0,
        what: format!(
            "AG {} counts {} free inodes but its finobt has none to give",
            h.agno, h.agi.freecount
        ),
    };
    let taken = (|| -> FsResult<(TakenInode, bool)> {
        // Which cursor holds the chosen record (true: `right`), and the record.
        let (use_right, rec) = match near {
            Some(pagino) => {
                let l = if left.lookup(&mut st, &pagino, LookupMode::Le)? {
                    left.get(&st)?
                } else {
                    None
                };
                match l {
                    Some(r) if pagino < r.startino + INODES_PER_CHUNK as u32 => (false, r),
                    _ => {
                        let r = if right.lookup(&mut st, &pagino, LookupMode::Ge)? {
                            right.get(&st)?
                        } else {
                            None
                        };
                        match (l, r) {
                            (Some(l), Some(r)) => {
                                if pagino - l.startino + INODES_PER_CHUNK as u32 - 1
                                    > r.startino - pagino
                                {
                                    (true, r)
                                } else {
                                    (false, l)
                                }
                            }
                            (None, Some(r)) => (true, r),
                            (Some(l), None) => (false, l),
                            (None, None) => return Err(empty()),
                        }
                    }
                }
            }
            None => {
                let at_newino =
                    newino != NULL_AGBLOCK && left.lookup(&mut st, &newino, LookupMode::Eq)?;
                if !at_newino && !left.lookup(&mut st, &0, LookupMode::Ge)? {
                    return Err(empty());
                }
                (false, left.get(&st)?.ok_or_else(empty)?)
            }
        };
        if rec.free == 0 || rec.freecount == 0 {
            return Err(FsError::Corrupt {
                kind: BlockKind::FinoBtree,
                daddr: 0,
                what: format!("finobt record {} has no free inode", rec.startino),
            });
        }
        let bit = rec.free.trailing_zeros();
        let rec = InoRec {
            free: rec.free & !(1u64 << bit),
            freecount: rec.freecount - 1,
            ..rec
        };
        let cur = if use_right { &mut right } else { &mut left };
        if rec.freecount == 0 {
            cur.delete(&mut st)?;
        } else {
            cur.update(&mut st, &rec)?;
        }
        Ok((TakenInode { rec, bit }, use_right))
    })();
    let line = crate::fs::btree::stat_line(BlockKind::FinoBtree);
    for cur in [&mut left, &mut right] {
        if let Some(line) = line {
            st.tp.fs().stats.add_btree(line, &cur.take_counts().0);
        }
    }
    let delta = st.space.blocks_delta;
    let (taken, use_right) = taken?;
    let new_root = if use_right { right.root() } else { left.root() };
    h.agi.free_root = new_root.ptr as u32;
    h.agi.free_level = u32::from(new_root.level) + 1;
    h.agi.fblocks = h.agi.fblocks.saturating_add_signed(delta);
    Ok(taken)
}

/// Take a free inode in a locked AG (adding a chunk if none is free): the finobt finds and
/// updates the chunk ([`fino_take`]), then the inobt's record of it is looked up and gets
/// the same change (XFS's `xfs_dialloc_ag_update_inobt`, which checks the two agree).
fn alloc_in_ag(tp: &mut Trans, h: &mut AgiHandle, parent: u64) -> FsResult<u64> {
    if h.agi.freecount == 0 {
        new_chunk(tp, h)?;
        // Commit the new chunk and go on holding only the AGI (XFS's xfs_dialloc_roll): the
        // chunk's cluster buffers and the AGF are released, so the rest of the caller's
        // transaction (a directory entry that may need a block from another AG) does not wait
        // for an AGF while holding cluster buffers, which come later in the lock order.
        put_agi(tp, h);
        tp.roll(&mut [&mut h.buf])?;
    }
    let geo = tp.fs().geo;
    // The parent's inode number in this AG, if it lives here; XFS uses the chunk made last
    // for the root directory's own allocation (its "parent" is inode 0).
    let near = (geo.ino_agno(parent) == h.agno).then(|| match geo.ino_agino(parent) {
        0 => h.agi.newino,
        agino => agino,
    });
    let TakenInode { rec, bit } = fino_take(tp, h, near)?;
    with_tree::<InoSpec, _>(tp, h, |cur, st| {
        let found = if cur.lookup(st, &rec.startino, LookupMode::Eq)? {
            cur.get(st)?
        } else {
            None
        };
        let Some(mut irec) = found else {
            return Err(FsError::Corrupt {
                kind: BlockKind::InoBtree,
                daddr: 0,
                what: format!("chunk {} missing from inobt", rec.startino),
            });
        };
        irec.free &= !(1u64 << bit);
        irec.freecount = irec.freecount.wrapping_sub(1);
        if irec.free != rec.free || irec.freecount != rec.freecount {
            return Err(FsError::Corrupt {
                kind: BlockKind::InoBtree,
                daddr: 0,
                what: format!(
                    "chunk {}: inobt and finobt disagree on its free inodes",
                    rec.startino
                ),
            });
        }
        cur.update(st, &irec)
    })?;
    h.agi.freecount -= 1;
    put_agi(tp, h);
    Ok(geo.ino(h.agno, rec.startino + bit))
}

/// Allocate an inode number for a new inode whose parent directory is `parent`.
///
/// Files go in the parent's AG; directories are spread over the AGs (a rotor), as XFS spreads
/// new directories so their files' later allocations spread too. As `xfs_dialloc`, the AGs
/// are visited from there, wrapping: a first pass only where there are free inodes or room
/// for a chunk with its alignment slack, a second wherever a chunk fits. Each AGI is waited
/// for, except where the lock order forbids it (an AG below one whose AGI the transaction
/// already holds, after a wrap): that one is only tried.
pub fn ialloc(tp: &mut Trans, parent: u64, is_dir: bool) -> FsResult<u64> {
    let fs = tp.fs();
    fs.check_live()?;
    let geo = fs.geo;
    let start = if is_dir {
        fs.dir_rotor.fetch_add(1, Ordering::Relaxed) % geo.agcount
    } else {
        geo.ino_agno(parent).min(geo.agcount - 1)
    };
    for pass in 0..2 {
        for i in 0..geo.agcount {
            let agno = (start + i) % geo.agcount;
            let pag = &fs.perag[agno as usize];
            let has_free = pag.ifree.load(Ordering::Relaxed) > 0;
            // xfs_dialloc_good_ag: a chunk and, on the first pass, its alignment slack.
            let need = if pass == 0 {
                CHUNK_BLOCKS * 2
            } else {
                CHUNK_BLOCKS
            };
            if !has_free && pag.longest.load(Ordering::Relaxed) < need {
                continue;
            }
            let may_block = tp.highest_agi_held().is_none_or(|h| agno > h);
            let Some(mut h) = lock_agi(tp, agno, !may_block)? else {
                continue;
            };
            match alloc_in_ag(tp, &mut h, parent) {
                Ok(ino) => return Ok(ino),
                Err(FsError::NoSpace) => {
                    put_agi(tp, &h);
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(FsError::NoSpace)
}

/// Free inode `ino` (already unlinked and truncated): mark it free on disk and in the inode
/// trees; free its chunk if that was the chunk's last used inode. Returns the free slot's
/// core for the caller to log as the inode's last state (`None` when the chunk went).
pub fn ifree(tp: &mut Trans, ino: u64) -> FsResult<Option<DinodeCore>> {
    let geo = tp.fs().geo;
    let agno = geo.ino_agno(ino);
    let agino = geo.ino_agino(ino);
    let Some(mut h) = lock_agi(tp, agno, false)? else {
        return Err(FsError::Invalid("AGI lock"));
    };
    // The inobt record is found, changed and updated (or deleted, when the whole chunk is
    // free) with one cursor, as xfs_difree_inobt does.
    let (rec, was_full) = with_tree::<InoSpec, _>(tp, &mut h, |cur, st| {
        let found = if cur.lookup(st, &agino, LookupMode::Le)? {
            cur.get(st)?
        } else {
            None
        };
        let Some(mut rec) = found.filter(|r| agino < r.startino + 64) else {
            return Err(FsError::Corrupt {
                kind: BlockKind::InoBtree,
                daddr: 0,
                what: format!("inode {ino} is in no allocated chunk"),
            });
        };
        let bit = agino - rec.startino;
        if rec.free & (1u64 << bit) != 0 {
            return Err(FsError::Corrupt {
                kind: BlockKind::InoBtree,
                daddr: 0,
                what: format!("inode {ino} freed twice"),
            });
        }
        let was_full = rec.freecount == 0;
        rec.free |= 1u64 << bit;
        rec.freecount += 1;
        if rec.freecount as u64 == INODES_PER_CHUNK {
            cur.delete(st)?;
        } else {
            cur.update(st, &rec)?;
        }
        Ok((rec, was_full))
    })?;
    h.agi.freecount += 1;
    if rec.freecount as u64 == INODES_PER_CHUNK {
        // The whole chunk is free: drop it from the finobt too and give its blocks back.
        if !was_full {
            with_tree::<FinoSpec, _>(tp, &mut h, |cur, st| {
                cur.lookup(st, &rec.startino, LookupMode::Eq)?;
                cur.delete(st)
            })?;
        }
        let agbno = Geometry::agino_agbno(rec.startino);
        h.agi.count -= 64;
        h.agi.freecount -= 64;
        put_agi(tp, &h);
        // AGI, then AGF, then the cluster buffers: the lock order. The buffers are only
        // invalidated, so they are got without reading them (XFS's xfs_ifree_cluster).
        free_extent(tp, geo.fsblock(agno, agbno), CHUNK_BLOCKS)?;
        if let Some(id) = tp.find_inode(ino) {
            tp.inode(id).set_flag(crate::fs::inode::iflags::STALE);
        }
        // The chunk's other freed inodes whose free slots are not home yet: their slots are
        // free space now, never to be written.
        {
            let mut pending = tp.fs().freed_pending.lock();
            for i in 0..INODES_PER_CHUNK {
                let n = geo.ino(agno, rec.startino + i as u32);
                if let Some(ip) = pending.remove(&n) {
                    ip.set_flag(crate::fs::inode::iflags::STALE);
                }
            }
        }
        for c in 0..CLUSTERS_PER_CHUNK {
            let at = agbno + c * BLOCKS_PER_CLUSTER;
            let id = tp.new_buf(geo.ag_daddr(agno, at), BlockKind::Inode, INODE_CLUSTER_SIZE)?;
            tp.inval_buf(id);
        }
        return Ok(None);
    }
    with_tree::<FinoSpec, _>(tp, &mut h, |cur, st| {
        if was_full {
            cur.insert(st, &rec)
        } else {
            cur.lookup(st, &rec.startino, LookupMode::Eq)?;
            cur.update(st, &rec)
        }
    })?;
    // The slot becomes a free inode. The change reaches the log as the freed inode's own
    // item (the caller logs the returned core), not as a buffer item: the cluster buffer is
    // only changed in memory here (so lookups and fsck see the slot free at once) and pinned
    // until that item is stable, so it cannot go home first.
    let (daddr, off) = geo.ino_location(ino);
    let id = tp.read_buf(daddr, BlockKind::Inode, INODE_CLUSTER_SIZE)?;
    let uuid = tp.fs().uuid;
    let cksum = tp.fs().bufs.cksum();
    let raw = &mut tp.buf_mut(id)[off..off + INODE_SIZE];
    let old_gen = dinode::decode_core(raw, ino, &uuid, daddr).map_or(0, |c| c.generation);
    let free = DinodeCore {
        generation: old_gen.wrapping_add(1),
        ..DinodeCore::default()
    };
    dinode::encode_core(raw, ino, &free, &uuid);
    dinode::literal_mut(raw).fill(0);
    cksum.update(BlockKind::Inode, raw);
    tp.pin_buf(id);
    put_agi(tp, &h);
    Ok(Some(free))
}

/// Every chunk record of an AG's inobt and finobt, and its AGI (for the checker and tests).
pub fn ag_inodes(tp: &mut Trans, agno: u32) -> FsResult<(Agi, Vec<InoRec>, Vec<InoRec>)> {
    let Some(mut h) = lock_agi(tp, agno, false)? else {
        return Err(FsError::Invalid("AGI lock"));
    };
    let ino = with_tree::<InoSpec, _>(tp, &mut h, |cur, st| cur.records_from(st, &0))?;
    let fino = with_tree::<FinoSpec, _>(tp, &mut h, |cur, st| cur.records_from(st, &0))?;
    Ok((h.agi, ino, fino))
}

/// fsck for one AG's inode trees: the blocks they occupy and every structural problem.
pub fn check_trees(tp: &mut Trans, agno: u32) -> FsResult<(Vec<u32>, Vec<String>)> {
    let Some(h) = lock_agi(tp, agno, false)? else {
        return Err(FsError::Invalid("AGI lock"));
    };
    let roots = [
        (
            "inobt",
            Root {
                ptr: u64::from(h.agi.root),
                level: (h.agi.level - 1) as u16,
            },
        ),
        (
            "finobt",
            Root {
                ptr: u64::from(h.agi.free_root),
                level: (h.agi.free_level - 1) as u16,
            },
        ),
    ];
    let owner = u64::from(agno);
    let mut st = TreeStore::new(
        &mut *tp,
        InodeTreeSpace {
            agno,
            blocks_delta: 0,
        },
    );
    let mut blocks = Vec::new();
    let mut findings = Vec::new();
    for (i, (name, root)) in roots.into_iter().enumerate() {
        let found = if i == 0 {
            crate::fs::btree::check::<InoSpec>(&mut st, root, owner)?
        } else {
            crate::fs::btree::check::<FinoSpec>(&mut st, root, owner)?
        };
        if found.is_empty() {
            let b = if i == 0 {
                crate::fs::btree::blocks::<InoSpec>(&mut st, root, owner)?
            } else {
                crate::fs::btree::blocks::<FinoSpec>(&mut st, root, owner)?
            };
            blocks.extend(b.into_iter().map(|(p, _)| p as u32));
        }
        findings.extend(found.into_iter().map(|f| format!("{name}: {f}")));
    }
    Ok((blocks, findings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::Fs;
    use crate::fs::btree::BtreeOp;
    use crate::fs::stats::BtreeLine;
    use crate::fs::testing::mem_fs;
    use crate::fs::trans::Resv;

    fn alloc(fs: &Fs, parent: u64) -> u64 {
        let mut tp = Trans::new(fs, Resv::Create);
        let ino = ialloc(&mut tp, parent, false).expect("ialloc");
        tp.commit().expect("commit");
        ino
    }

    fn free(fs: &Fs, ino: u64) {
        let mut tp = Trans::new(fs, Resv::Remove);
        ifree(&mut tp, ino).expect("ifree");
        tp.commit().expect("commit");
    }

    /// Lookups in the inobt and the finobt during `f`.
    fn lookups(fs: &Fs, f: impl FnOnce()) -> (u32, u32) {
        let snap = || {
            let s = fs.stats.mount().snapshot();
            (
                s.btree(BtreeLine::Ibt2)[BtreeOp::Lookup as usize],
                s.btree(BtreeLine::Fibt2)[BtreeOp::Lookup as usize],
            )
        };
        let before = snap();
        f();
        let after = snap();
        (after.0 - before.0, after.1 - before.1)
    }

    #[test]
    fn allocating_and_freeing_look_each_inode_tree_up_as_xfs_does() {
        let fs = mem_fs(64 << 20);
        let root = fs.geo.ino(0, 0);
        let first = alloc(&fs, root);
        let mut second = 0;
        // The finobt lookup at the parent finds the parent's chunk, which has a free inode;
        // the inobt record is looked up once and updated.
        assert_eq!(lookups(&fs, || second = alloc(&fs, first)), (1, 1));
        // Freeing: the inobt record found at or before the inode is updated where it was
        // found; the finobt record is looked up and updated.
        assert_eq!(lookups(&fs, || free(&fs, second)), (1, 1));
    }

    #[test]
    fn a_new_chunk_is_two_16k_cluster_buffers_and_its_inodes_are_read_32_at_a_time() {
        use crate::fs::buf::GetMode;
        use crate::fs::geo::INODES_PER_CLUSTER;
        use crate::fs::stats::Stat;
        let fs = mem_fs(64 << 20);
        let root = fs.geo.ino(0, 0);
        let stat = |s: Stat| fs.stats.mount().snapshot().get(s);
        let chunk_of = |ino: u64| fs.geo.ino_agino(ino) / INODES_PER_CHUNK as u32;
        // Allocate until an allocation makes a new chunk; count the buffers it creates.
        let (ino, made) = loop {
            let before = stat(Stat::BufCreate);
            let ino = alloc(&fs, root);
            let made = stat(Stat::BufCreate) - before;
            if ino != root && chunk_of(ino) != chunk_of(root) {
                break (ino, made);
            }
        };
        // XFS's two 16 KiB clusters, not eight 4 KiB blocks (the trees had room: no block).
        assert_eq!(made, CLUSTERS_PER_CHUNK);
        for c in 0..CLUSTERS_PER_CHUNK {
            let first = fs
                .geo
                .ino(0, chunk_of(ino) * 64 + c * INODES_PER_CLUSTER as u32);
            let (daddr, off) = fs.geo.ino_location(first);
            assert_eq!(off, 0);
            let g = fs
                .bufs
                .get(daddr, BlockKind::Inode, INODE_CLUSTER_SIZE, GetMode::Read)
                .expect("the cluster is cached at its size");
            assert_eq!(g.bytes().len(), 16384);
        }
        // Written home and dropped from the cache, the chunk's 64 inodes are read with two
        // device reads, one per cluster.
        fs.quiesce().expect("quiesce");
        fs.bufs.purge_clean();
        let reads = stat(Stat::BufGetRead);
        for i in 0..INODES_PER_CHUNK as u32 {
            let n = fs.geo.ino(0, chunk_of(ino) * 64 + i);
            // Free slots are read and found free (NotFound); the one in use is cached.
            let _ = fs.iget(n);
        }
        assert_eq!(stat(Stat::BufGetRead) - reads, CLUSTERS_PER_CHUNK);
    }

    #[test]
    fn a_new_inode_comes_from_the_free_chunk_nearest_its_parent() {
        let fs = mem_fs(64 << 20);
        let root = fs.geo.ino(0, 0);
        // Two chunks, each with one free inode (its first).
        let inodes: Vec<u64> = (0..128).map(|_| alloc(&fs, root)).collect();
        let (a, b) = (inodes[0], inodes[64]);
        assert_eq!(fs.geo.ino_agno(a), fs.geo.ino_agno(b));
        assert_ne!(a >> 6, b >> 6, "two chunks");
        free(&fs, a);
        free(&fs, b);
        // A parent inside chunk B gets B's free inode; one inside chunk A gets A's.
        assert_eq!(alloc(&fs, inodes[100]), b);
        free(&fs, b);
        assert_eq!(alloc(&fs, inodes[10]), a);
    }
}
