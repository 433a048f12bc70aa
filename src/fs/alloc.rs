//! Free-space allocation: each AG's free extents, indexed twice.
//!
//! As in XFS, every AG keeps its free extents in two B+trees: by starting block (bno, for
//! finding neighbours to merge with and allocating next to a given block) and by length
//! (cnt, for finding the best-fitting extent). Both describe the same set; invariant 6 of
//! `docs/invariants.md` (free + used = total, both trees agree) is checked by the fsck oracle.
//!
//! The AGF buffer is the AG's free-space lock: an allocation reads it into the transaction
//! and holds it to commit. Splitting bno/cnt blocks needs blocks too; they come from the AGFL,
//! a small stock refilled before each operation ("fixing the free list"), so a tree never
//! allocates from itself mid-update.
//!
//! Where blocks go follows XFS's allocator, because where they go decides the shape of the
//! free space and so every free-space B+tree count: a request has a target ([`AllocTarget`]):
//! the nearest free space to a block (`xfs_alloc_ag_vextent_near`: file data and directory
//! blocks near where the file's blocks are, or near its inode; tree blocks near the block
//! they split from), exactly a block (`xfs_alloc_ag_vextent_exact`: an inode chunk right after
//! the last), or the best fit by size (`xfs_alloc_ag_vextent_size`: other AGs, the AGFL).
//!
//! Stats: `extent_alloc` (extents/blocks allocated and freed) and the `abtb2`/`abtc2` btree
//! lines (from the cursors' exact tallies, with XFS's lookups: a tree whose cursor already
//! stands on the record is not looked up again, and `longest` is re-read with one by-size
//! lookup after every allocation and free, as `xfs_alloc_fixup_longest` does).

use std::sync::atomic::Ordering;

use crate::fs::btree::kinds::{BnoSpec, CntSpec, FreeExtent};
use crate::fs::btree::store::BufId;
use crate::fs::btree::{BtreeSpec, Cursor, LookupMode, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::ag::{
    AGF_SECTOR, AGFL_SECTOR, AGFL_SIZE, Agf, agfl_get, agfl_set, agfl_slot_range,
};
use crate::fs::format::{BBSIZE, BlockKind, Daddr};
use crate::fs::geo::Geometry;
use crate::fs::stats::{BtreeLine, Stat};
use crate::fs::trans::Trans;
use crate::fs::treestore::{TreeSpace, TreeStore, run_cursor};

/// Where an allocation should go: XFS's allocation modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocTarget {
    /// Anywhere: the smallest free extent that fits (`xfs_alloc_ag_vextent_size`).
    Anywhere,
    /// As close to this block (linear) as possible: in its AG, the search of
    /// `xfs_alloc_ag_vextent_near` (the by-size tree's last block, or both directions of the
    /// by-block tree from the target); in the other AGs, by size.
    Near(u64),
    /// Exactly at this block or not at all (`xfs_alloc_ag_vextent_exact`): only its AG.
    Exact(u64),
}

/// What to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocReq {
    /// AG to try first.
    pub agno: u32,
    /// Where the blocks should go.
    pub target: AllocTarget,
    /// Fewest blocks acceptable.
    pub minlen: u32,
    /// Most blocks wanted.
    pub maxlen: u32,
    /// The start must be a multiple of this (AG-relative); 1 for none.
    pub align: u32,
    /// Only this AG (inode chunks must come from the AG whose AGI is held).
    pub this_ag_only: bool,
    /// The blocks were already taken from the free-block counter (delayed allocation).
    pub reserved: bool,
    /// File data (XFS's `XFS_ALLOC_USERDATA`): a near allocation takes a free extent that
    /// lies before the target from its start, leaving room behind the new blocks for the
    /// file to grow into (`xfs_alloc_compute_diff`).
    pub userdata: bool,
}

impl AllocReq {
    /// A request for exactly `len` blocks anywhere, starting with AG `agno`.
    pub fn blocks(agno: u32, len: u32) -> AllocReq {
        AllocReq {
            agno,
            target: AllocTarget::Anywhere,
            minlen: len,
            maxlen: len,
            align: 1,
            this_ag_only: false,
            reserved: false,
            userdata: false,
        }
    }

    /// A request for exactly `len` blocks as near linear block `target` as possible
    /// (starting with its AG).
    pub fn near(geo: &Geometry, target: u64, len: u32) -> AllocReq {
        AllocReq {
            target: AllocTarget::Near(target),
            ..AllocReq::blocks(geo.agno_of(target), len)
        }
    }
}

/// Blocks the AGFL must hold before an operation (XFS's `xfs_alloc_min_freelist`): for each
/// free-space tree, a split of every level and a new root, and then, while refilling the
/// list, another split of every level below the old root: `2 * (levels + 1) - 2`.
fn min_freelist(agf: &Agf) -> u32 {
    2 * (agf.bno_level + 1) - 2 + 2 * (agf.cnt_level + 1) - 2
}

/// The AGF of one AG, held by a transaction.
struct AgfHandle {
    agno: u32,
    agf_buf: BufId,
    agfl_buf: BufId,
    agf: Agf,
}

/// One AG's free-space trees take their blocks from the AGFL and give them back to it.
struct AgflSpace<'t> {
    h: &'t mut AgfHandle,
}

/// A tree store over one AG's free-space trees.
type FreeSpaceStore<'t, 'a> = TreeStore<'t, 'a, AgflSpace<'t>>;

impl TreeSpace for AgflSpace<'_> {
    fn locate(&self, tp: &Trans, kind: BlockKind, ptr: u64) -> FsResult<Daddr> {
        if ptr >= u64::from(self.h.agf.length) {
            return Err(FsError::Corrupt {
                kind,
                daddr: 0,
                what: format!("tree pointer {ptr} beyond AG {}", self.h.agno),
            });
        }
        Ok(tp.fs().geo.ag_daddr(self.h.agno, ptr as u32))
    }

    fn alloc(&mut self, tp: &mut Trans, _kind: BlockKind, _hint: u64) -> FsResult<(u64, Daddr)> {
        let agbno = agfl_take(tp, self.h)?;
        self.h.agf.btreeblks += 1;
        Ok((u64::from(agbno), tp.fs().geo.ag_daddr(self.h.agno, agbno)))
    }

    fn free(&mut self, tp: &mut Trans, _kind: BlockKind, ptr: u64, _id: BufId) -> FsResult<()> {
        self.h.agf.btreeblks = self.h.agf.btreeblks.saturating_sub(1);
        agfl_put(tp, self.h, ptr as u32)
    }
}

/// Take a block off the AGFL.
fn agfl_take(tp: &mut Trans, h: &mut AgfHandle) -> FsResult<u32> {
    if h.agf.flcount == 0 {
        return Err(FsError::Corrupt {
            kind: BlockKind::Agfl,
            daddr: tp.buf_daddr(h.agfl_buf).0,
            what: "free list empty while a free-space tree needs a block".into(),
        });
    }
    let slot = h.agf.flfirst;
    let agbno = agfl_get(tp.buf(h.agfl_buf), slot);
    agfl_set(
        tp.buf_mut(h.agfl_buf),
        slot,
        crate::fs::format::ag::NULL_AGBLOCK,
    );
    let (f, l) = agfl_slot_range(slot);
    tp.log_buf(h.agfl_buf, f, l);
    h.agf.flcount -= 1;
    h.agf.flfirst = (slot + 1) % AGFL_SIZE;
    if h.agf.flcount == 0 {
        h.agf.fllast = h.agf.flfirst;
    }
    Ok(agbno)
}

/// Put a block on the AGFL.
fn agfl_put(tp: &mut Trans, h: &mut AgfHandle, agbno: u32) -> FsResult<()> {
    if h.agf.flcount >= AGFL_SIZE {
        return Err(FsError::Corrupt {
            kind: BlockKind::Agfl,
            daddr: tp.buf_daddr(h.agfl_buf).0,
            what: "free list overflow".into(),
        });
    }
    let slot = if h.agf.flcount == 0 {
        h.agf.flfirst
    } else {
        (h.agf.fllast + 1) % AGFL_SIZE
    };
    agfl_set(tp.buf_mut(h.agfl_buf), slot, agbno);
    let (f, l) = agfl_slot_range(slot);
    tp.log_buf(h.agfl_buf, f, l);
    h.agf.fllast = slot;
    h.agf.flcount += 1;
    Ok(())
}

/// Lock AG `agno`'s AGF (and AGFL) in the transaction; `None` if `try_only` and it is busy.
fn lock_agf(tp: &mut Trans, agno: u32, try_only: bool) -> FsResult<Option<AgfHandle>> {
    let geo = tp.fs().geo;
    let daddr = geo.ag_header_daddr(agno, AGF_SECTOR);
    let agf_buf = if try_only {
        match tp.try_read_buf(daddr, BlockKind::Agf, BBSIZE)? {
            Some(id) => id,
            None => return Ok(None),
        }
    } else {
        tp.read_buf(daddr, BlockKind::Agf, BBSIZE)?
    };
    let agf = Agf::decode(tp.buf(agf_buf), agno, &tp.fs().uuid, daddr)?
        .check_length(geo.ag_len(agno), daddr)?;
    let fl_daddr = geo.ag_header_daddr(agno, AGFL_SECTOR);
    let agfl_buf = tp.read_buf(fl_daddr, BlockKind::Agfl, BBSIZE)?;
    crate::fs::format::ag::agfl_check(tp.buf(agfl_buf), agno, &tp.fs().uuid, fl_daddr)?;
    Ok(Some(AgfHandle {
        agno,
        agf_buf,
        agfl_buf,
        agf,
    }))
}

/// Write the in-memory AGF back into its buffer and log it; update the per-AG summary.
fn put_agf(tp: &mut Trans, h: &AgfHandle) {
    let uuid = tp.fs().uuid;
    h.agf.encode(tp.buf_mut(h.agf_buf), &uuid);
    tp.log_buf(h.agf_buf, 0, 79);
    let pag = &tp.fs().perag[h.agno as usize];
    pag.freeblks.store(h.agf.freeblks, Ordering::Relaxed);
    pag.longest.store(h.agf.longest, Ordering::Relaxed);
}

/// The root of one of the AG's free-space trees, as its AGF records it.
fn agf_root(agf: &Agf, kind: BlockKind) -> Root {
    let (ptr, levels) = if kind == BlockKind::BnoBtree {
        (agf.bno_root, agf.bno_level)
    } else {
        (agf.cnt_root, agf.cnt_level)
    };
    Root {
        ptr: u64::from(ptr),
        level: (levels - 1) as u16,
    }
}

/// Record a free-space tree's new root in the AGF.
fn set_agf_root(agf: &mut Agf, kind: BlockKind, r: Root) {
    let (ptr, levels) = (r.ptr as u32, u32::from(r.level) + 1);
    if kind == BlockKind::BnoBtree {
        (agf.bno_root, agf.bno_level) = (ptr, levels);
    } else {
        (agf.cnt_root, agf.cnt_level) = (ptr, levels);
    }
}

/// Run a cursor operation on one of the AG's free-space trees and keep the AGF's record of
/// its root current.
fn with_tree<S, R>(
    tp: &mut Trans,
    h: &mut AgfHandle,
    f: impl FnOnce(&mut Cursor<S>, &mut FreeSpaceStore) -> FsResult<R>,
) -> FsResult<R>
where
    S: crate::fs::btree::BtreeSpec,
{
    let kind = S::kind(0);
    let (root, owner) = (agf_root(&h.agf, kind), u64::from(h.agno));
    let (result, root) = run_cursor(
        &mut TreeStore::new(&mut *tp, AgflSpace { h: &mut *h }),
        root,
        owner,
        f,
    );
    set_agf_root(&mut h.agf, kind, root);
    result
}

/// Keep the AGFL at its minimum, refilling it from the free-space trees with one allocation
/// by size of as many blocks as are missing (XFS's `xfs_alloc_fix_freelist`), and giving
/// back what is well above it.
fn fix_freelist(tp: &mut Trans, h: &mut AgfHandle) -> FsResult<()> {
    loop {
        let need = min_freelist(&h.agf);
        if h.agf.flcount >= need {
            break;
        }
        let mut req = AllocReq::blocks(h.agno, need - h.agf.flcount);
        req.minlen = 1;
        let Some(t) = alloc_by_size(tp, h, &req, false)? else {
            return Err(FsError::NoSpace);
        };
        for agbno in t.start..t.start + t.len {
            agfl_put(tp, h, agbno)?;
        }
    }
    // Returning a block can merge free extents and join tree blocks, which puts blocks back
    // on the list; bound the trimming so that can never cycle.
    let need = min_freelist(&h.agf);
    for _ in 0..16 {
        if h.agf.flcount <= need + 8 {
            break;
        }
        let agbno = agfl_take(tp, h)?;
        give_back(tp, h, agbno, 1)?;
    }
    Ok(())
}

/// Blocks taken from one free extent: the extent as it was, and the blocks taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Taken {
    rec: FreeExtent,
    start: u32,
    len: u32,
}

impl Taken {
    /// What is left of the free extent before and after the blocks taken (either may be
    /// empty).
    fn remnants(&self) -> (FreeExtent, FreeExtent) {
        let end = self.rec.start + self.rec.len;
        (
            FreeExtent {
                start: self.rec.start,
                len: self.start - self.rec.start,
            },
            FreeExtent {
                start: self.start + self.len,
                len: end - self.start - self.len,
            },
        )
    }
}

/// The by-size half of taking blocks (`xfs_alloc_fixup_trees`), with the cursor on the free
/// extent's record: delete it, insert the remnants (each looked up first, as XFS does).
fn cnt_take(cur: &mut Cursor<CntSpec>, st: &mut FreeSpaceStore, t: &Taken) -> FsResult<()> {
    cur.delete(st)?;
    let (left, right) = t.remnants();
    for piece in [left, right] {
        if piece.len > 0 {
            cur.insert(st, &piece)?;
        }
    }
    Ok(())
}

/// The by-block half, with the cursor on the free extent's record. The record is updated in
/// place with a remnant (either one keeps its place in block order), as
/// `xfs_alloc_fixup_trees` does; only a second remnant is a new record, and only an extent
/// used up entirely is deleted. (The by-size tree must delete and re-insert: a remnant's size
/// moves it.)
fn bno_take(cur: &mut Cursor<BnoSpec>, st: &mut FreeSpaceStore, t: &Taken) -> FsResult<()> {
    let (left, right) = t.remnants();
    match (left.len > 0, right.len > 0) {
        (true, true) => {
            cur.update(st, &left)?;
            cur.insert(st, &right)
        }
        (true, false) => cur.update(st, &left),
        (false, true) => cur.update(st, &right),
        (false, false) => cur.delete(st),
    }
}

/// Put a free-space cursor on free extent `rec` (`xfs_alloc_lookup_eq`); a record missing
/// from the tree is corruption.
fn seek_cnt(cur: &mut Cursor<CntSpec>, st: &mut FreeSpaceStore, rec: &FreeExtent) -> FsResult<()> {
    if cur.lookup(st, &(rec.len, rec.start), LookupMode::Eq)? {
        Ok(())
    } else {
        Err(missing(st.tp, rec, "cnt"))
    }
}

/// [`seek_cnt`] in the by-block tree.
fn seek_bno(cur: &mut Cursor<BnoSpec>, st: &mut FreeSpaceStore, rec: &FreeExtent) -> FsResult<()> {
    if cur.lookup(st, &rec.start, LookupMode::Eq)? {
        Ok(())
    } else {
        Err(missing(st.tp, rec, "bno"))
    }
}

/// Remove taken blocks from both trees, looking the free extent up in each (the end of a
/// near allocation: `xfs_alloc_fixup_trees` with no cursor positioned), and account them.
fn take_from_extent(tp: &mut Trans, h: &mut AgfHandle, t: &Taken) -> FsResult<()> {
    with_tree::<CntSpec, _>(tp, h, |cur, st| {
        seek_cnt(cur, st, &t.rec)?;
        cnt_take(cur, st, t)
    })?;
    with_tree::<BnoSpec, _>(tp, h, |cur, st| {
        seek_bno(cur, st, &t.rec)?;
        bno_take(cur, st, t)
    })?;
    taken(tp, h, t)
}

/// The AG's accounting after blocks were taken from the trees.
fn taken(tp: &mut Trans, h: &mut AgfHandle, t: &Taken) -> FsResult<()> {
    h.agf.freeblks -= t.len;
    refresh_longest(tp, h)
}

fn missing(tp: &Trans, rec: &FreeExtent, tree: &str) -> FsError {
    FsError::Corrupt {
        kind: if tree == "bno" {
            BlockKind::BnoBtree
        } else {
            BlockKind::CntBtree
        },
        daddr: 0,
        what: format!(
            "free extent {}+{} missing from the {tree} tree of fs {:?}",
            rec.start,
            rec.len,
            tp.fs().uuid[0]
        ),
    }
}

/// Recompute `longest` from the last record of the cnt tree, one lookup as XFS's
/// `xfs_alloc_fixup_longest` makes after every allocation and free.
fn refresh_longest(tp: &mut Trans, h: &mut AgfHandle) -> FsResult<()> {
    let last = with_tree::<CntSpec, _>(tp, h, |cur, st| {
        if cur.lookup(st, &(u32::MAX, u32::MAX), LookupMode::Le)? {
            cur.get(st)
        } else {
            Ok(None)
        }
    })?;
    h.agf.longest = last.map_or(0, |r| r.len);
    Ok(())
}

/// Add `agbno..agbno+len` to the free-space trees, merging with free neighbours.
fn give_back(tp: &mut Trans, h: &mut AgfHandle, agbno: u32, len: u32) -> FsResult<()> {
    let end = agbno + len;
    let already_free = |n: FreeExtent| FsError::Corrupt {
        kind: BlockKind::BnoBtree,
        daddr: 0,
        what: format!(
            "freeing blocks {agbno}+{len} that are already free ({}+{})",
            n.start, n.len
        ),
    };
    // By block, in one cursor pass as xfs_free_ag_extent makes it: one lookup finds the left
    // neighbour, a step the right one, and the merge happens where the cursor stands. A
    // neighbour absorbs the freed range in place (the right one's start moves down, which
    // keeps its place in block order); with both, the right one is deleted into the left;
    // with neither, the new record goes in where the step left the cursor, with no second
    // lookup.
    let (left, right) = with_tree::<BnoSpec, _>(tp, h, |cur, st| {
        let left = if cur.lookup(st, &agbno, LookupMode::Le)? {
            cur.get(st)?
        } else {
            None
        };
        if let Some(l) = left.filter(|l| l.start + l.len > agbno) {
            return Err(already_free(l));
        }
        let right = if cur.increment(st)? {
            cur.get(st)?
        } else {
            None
        };
        if let Some(r) = right.filter(|r| r.start < end) {
            return Err(already_free(r));
        }
        let left = left.filter(|l| l.start + l.len == agbno);
        let right = right.filter(|r| r.start == end);
        let merged = FreeExtent {
            start: left.map_or(agbno, |l| l.start),
            len: len + left.map_or(0, |l| l.len) + right.map_or(0, |r| r.len),
        };
        match (left, right) {
            (Some(_), Some(_)) => {
                cur.delete(st)?;
                cur.decrement(st)?;
                cur.update(st, &merged)?;
            }
            (None, Some(_)) => cur.update(st, &merged)?,
            (Some(_), None) => {
                cur.decrement(st)?;
                cur.update(st, &merged)?;
            }
            (None, None) => cur.insert_here(st, &merged)?,
        }
        Ok((left, right))
    })?;
    let merged = FreeExtent {
        start: left.map_or(agbno, |l| l.start),
        len: len + left.map_or(0, |l| l.len) + right.map_or(0, |r| r.len),
    };
    with_tree::<CntSpec, _>(tp, h, |cur, st| {
        for n in [left, right].into_iter().flatten() {
            seek_cnt(cur, st, &n)?;
            cur.delete(st)?;
        }
        cur.insert(st, &merged)
    })?;
    h.agf.freeblks += len;
    refresh_longest(tp, h)
}

/// `roundup(bno, align)`.
fn align_up(bno: u32, align: u32) -> u32 {
    bno.div_ceil(align) * align
}

/// The aligned part of a free extent: its first aligned block and the blocks from there to
/// the extent's end (XFS's `xfs_alloc_compute_aligned`, without busy-extent trimming: labfs
/// waits for a busy range after allocating it instead).
fn aligned(rec: &FreeExtent, align: u32) -> (u32, u32) {
    let start = align_up(rec.start, align);
    let end = rec.start + rec.len;
    (start, end.saturating_sub(start))
}

/// Allocate `req` by size in a locked AG (`xfs_alloc_ag_vextent_size`): the first free
/// extent of at least `maxlen` (plus alignment slack) in the by-size tree, else the longest
/// one that still gives `minlen`, taken from its (aligned) start. The by-size cursor that
/// found the extent removes it (`XFSA_FIXUP_CNT_OK`); the by-block tree looks it up.
/// `charge` takes the blocks from the transaction's reservation (not for the AGFL, whose
/// blocks stay free space).
fn alloc_by_size(
    tp: &mut Trans,
    h: &mut AgfHandle,
    req: &AllocReq,
    charge: bool,
) -> FsResult<Option<Taken>> {
    let align = req.align.max(1);
    let fit = |rec: &FreeExtent| {
        let (start, len) = aligned(rec, align);
        Taken {
            rec: *rec,
            start,
            len: len.min(req.maxlen),
        }
    };
    let chosen = with_tree::<CntSpec, _>(tp, h, |cur, st| {
        let want = req.maxlen + align - 1;
        let mut best = if cur.lookup(st, &(want, 0), LookupMode::Ge)? {
            // The first extent long enough once aligned (without busy extents, the first).
            let Some(rec) = cur.get(st)? else {
                return Ok(None);
            };
            fit(&rec)
        } else {
            // Nothing that long: the longest extent (`xfs_alloc_ag_vextent_small`), then
            // leftwards for one that gives more once aligned.
            if !cur.decrement(st)? {
                return Ok(None);
            }
            let Some(rec) = cur.get(st)? else {
                return Ok(None);
            };
            let mut best = fit(&rec);
            if best.len < req.maxlen {
                while cur.decrement(st)? {
                    let Some(rec) = cur.get(st)? else { break };
                    if rec.len <= best.len {
                        break;
                    }
                    let t = fit(&rec);
                    if t.len > best.len {
                        best = t;
                        if t.len == req.maxlen {
                            break;
                        }
                    }
                }
                // Back to the best one (XFS looks it up again, found or not).
                seek_cnt(cur, st, &best.rec)?;
            }
            best
        };
        if best.len < req.minlen {
            return Ok(None);
        }
        best.len = best.len.min(req.maxlen);
        if charge {
            st.tp.charge_blocks(u64::from(best.len))?;
        }
        cnt_take(cur, st, &best)?;
        Ok(Some(best))
    })?;
    let Some(t) = chosen else {
        return Ok(None);
    };
    with_tree::<BnoSpec, _>(tp, h, |cur, st| {
        seek_bno(cur, st, &t.rec)?;
        bno_take(cur, st, &t)
    })?;
    taken(tp, h, &t)?;
    Ok(Some(t))
}

/// Allocate exactly at AG block `agbno` in a locked AG (`xfs_alloc_ag_vextent_exact`): the
/// free extent at or before it must hold `agbno..agbno+minlen`; up to `maxlen` blocks are
/// taken. The by-block cursor that found it removes it (`XFSA_FIXUP_BNO_OK`).
fn alloc_exact(
    tp: &mut Trans,
    h: &mut AgfHandle,
    req: &AllocReq,
    agbno: u32,
) -> FsResult<Option<Taken>> {
    let chosen = with_tree::<BnoSpec, _>(tp, h, |cur, st| {
        if !cur.lookup(st, &agbno, LookupMode::Le)? {
            return Ok(None);
        }
        let Some(rec) = cur.get(st)? else {
            return Ok(None);
        };
        let end = rec.start + rec.len;
        if end < agbno + req.minlen {
            return Ok(None);
        }
        let t = Taken {
            rec,
            start: agbno,
            len: (end - agbno).min(req.maxlen),
        };
        if !req.reserved {
            st.tp.charge_blocks(u64::from(t.len))?;
        }
        bno_take(cur, st, &t)?;
        Ok(Some(t))
    })?;
    let Some(t) = chosen else {
        return Ok(None);
    };
    with_tree::<CntSpec, _>(tp, h, |cur, st| {
        seek_cnt(cur, st, &t.rec)?;
        cnt_take(cur, st, &t)
    })?;
    taken(tp, h, &t)?;
    Ok(Some(t))
}

/// `xfs_alloc_compute_diff`: where in free extent `free_start..+free_len` a near allocation of
/// `want_len` blocks aimed at `want` should start, and how far that is from `want`. A free
/// extent past the target is used from its start; one holding the target from the target
/// (leaving two remnants); one before it from its end, except that file data takes it from
/// its start, so the file can grow into what follows. `None` when alignment leaves no room.
fn near_start(
    want: u32,
    want_len: u32,
    align: u32,
    userdata: bool,
    free_start: u32,
    free_len: u32,
) -> Option<(u32, u32)> {
    let free_end = free_start + free_len;
    let want_end = want + want_len;
    let start = if free_start >= want || (userdata && free_end < want_end) {
        let s = align_up(free_start, align);
        (s < free_end).then_some(s)
    } else if free_end >= want_end && align > 1 {
        // The aligned blocks on either side of the target: the one giving more blocks,
        // else the nearer.
        let up = align_up(want, align);
        let down = up.checked_sub(align).filter(|&d| d >= free_start);
        let up = (up < free_end).then_some(up);
        let len_at = |s: u32| want_len.min(free_end - s);
        match (up, down) {
            (Some(u), Some(d))
                if len_at(u) < len_at(d)
                    || (len_at(u) == len_at(d) && u.abs_diff(want) > d.abs_diff(want)) =>
            {
                Some(d)
            }
            (u, d) => u.or(d),
        }
    } else if free_end >= want_end {
        Some(want)
    } else if align > 1 {
        let last = free_end - want_len;
        let s = align_up(last, align);
        if s > last && s.checked_sub(align).is_some_and(|d| d >= free_start) {
            Some(s - align)
        } else if s >= free_end {
            None
        } else {
            Some(s)
        }
    } else {
        Some(free_end - want_len)
    };
    start.map(|s| (s, s.abs_diff(want)))
}

/// The near search's state (XFS's `struct xfs_alloc_cur`): the best candidate so far and the
/// by-size search length.
struct NearSearch {
    /// Target AG block.
    agbno: u32,
    /// Last AG block a start may have.
    max_agbno: u32,
    minlen: u32,
    maxlen: u32,
    align: u32,
    userdata: bool,
    /// The best candidate: the free extent and the blocks that would be taken from it.
    best: Option<Taken>,
    /// Distance of the best candidate's start from the target.
    diff: u32,
    /// The by-size tree's search length.
    cur_len: u32,
}

/// What checking one record did (`xfs_alloc_cur_check`).
#[derive(Debug, Clone, Copy, Default)]
struct Checked {
    /// It is the new best candidate.
    better: bool,
    /// The cursor that read it should stop: a by-block cursor past anything better, a
    /// by-size cursor below `minlen`, or any cursor that found the perfect candidate.
    stop: bool,
}

impl NearSearch {
    fn best_len(&self) -> u32 {
        self.best.map_or(0, |t| t.len)
    }

    /// Judge free extent `rec` as a candidate, read by a by-block cursor (`by_bno`) or a
    /// by-size one.
    fn check(&mut self, rec: &FreeExtent, by_bno: bool) -> Checked {
        let mut out = Checked::default();
        if rec.len < self.minlen {
            out.stop = !by_bno;
            return out;
        }
        let (start_a, len_a) = aligned(rec, self.align);
        if start_a > self.max_agbno {
            out.stop = by_bno;
            return out;
        }
        if len_a < self.minlen {
            return out;
        }
        let len = len_a.min(self.maxlen);
        if len < self.best_len() {
            return out;
        }
        let Some((start, diff)) =
            near_start(self.agbno, len, self.align, self.userdata, start_a, len_a)
        else {
            return out;
        };
        if diff > self.diff {
            out.stop = by_bno;
            return out;
        }
        self.best = Some(Taken {
            rec: *rec,
            start,
            len,
        });
        self.diff = diff;
        out.better = true;
        if diff == 0 && len == self.maxlen {
            out.stop = true;
        }
        out
    }
}

/// One search cursor of the near allocator and whether it is still searching
/// (`XFS_BTREE_ALLOCBT_ACTIVE`).
struct Walker<S: BtreeSpec> {
    cur: Cursor<S>,
    active: bool,
}

/// Record types the near search reads: both free-space trees hold [`FreeExtent`]s.
trait FreeSpaceTree: BtreeSpec<Rec = FreeExtent> {
    /// Whether this is the by-block tree (its cursors stop differently).
    const BY_BNO: bool;
}

impl FreeSpaceTree for BnoSpec {
    const BY_BNO: bool = true;
}

impl FreeSpaceTree for CntSpec {
    const BY_BNO: bool = false;
}

impl<S: FreeSpaceTree> Walker<S> {
    fn new(root: Root, owner: u64) -> Self {
        Walker {
            cur: Cursor::new(root, owner),
            active: false,
        }
    }

    /// `xfs_alloc_walk_iter`: check records from the cursor on, stepping right (`forward`)
    /// or left, at most `count` of them (`None`: no limit), until the cursor stops; with
    /// `find_one`, until the first better candidate. Returns whether one was found.
    fn walk(
        &mut self,
        st: &mut FreeSpaceStore,
        s: &mut NearSearch,
        forward: bool,
        find_one: bool,
        mut count: Option<u32>,
    ) -> FsResult<bool> {
        let mut found = false;
        while self.active && count != Some(0) {
            let Some(rec) = self.cur.get(st)? else {
                self.active = false;
                break;
            };
            let c = s.check(&rec, S::BY_BNO);
            if c.stop {
                self.active = false;
            }
            if c.better {
                found = true;
                if find_one {
                    break;
                }
            }
            if !self.active {
                break;
            }
            let stepped = if forward {
                self.cur.increment(st)?
            } else {
                self.cur.decrement(st)?
            };
            if !stepped {
                self.active = false;
            }
            if let Some(c) = count.as_mut() {
                *c -= 1;
            }
        }
        Ok(found)
    }
}

/// Allocate near AG block `agbno` in a locked AG (`xfs_alloc_ag_vextent_near`).
///
/// First algorithm: look up the first free extent of at least `maxlen` in the by-size tree;
/// when that lands in the tree's last leaf, check every extent from there to the end and
/// keep the one whose best-placed start is nearest the target. Second algorithm, when the
/// by-size tree is bigger: step two by-block cursors away from the target in both directions
/// and probe the by-size tree at growing lengths, until a by-block cursor finds a candidate
/// (then finish the other direction) or the by-size probe runs out. The chosen extent is
/// then looked up again in both trees and split (`xfs_alloc_cur_finish`).
fn alloc_near(
    tp: &mut Trans,
    h: &mut AgfHandle,
    req: &AllocReq,
    agbno: u32,
) -> FsResult<Option<Taken>> {
    let owner = u64::from(h.agno);
    let (cnt_root, bno_root) = (
        agf_root(&h.agf, BlockKind::CntBtree),
        agf_root(&h.agf, BlockKind::BnoBtree),
    );
    let max_agbno = h.agf.length.saturating_sub(1);
    let mut s = NearSearch {
        agbno: agbno.min(max_agbno),
        max_agbno,
        minlen: req.minlen,
        maxlen: req.maxlen,
        align: req.align.max(1),
        userdata: req.userdata,
        best: None,
        diff: u32::MAX,
        cur_len: req.maxlen,
    };
    let mut cnt = Walker::<CntSpec>::new(cnt_root, owner);
    let mut lt = Walker::<BnoSpec>::new(bno_root, owner);
    let mut gt = Walker::<BnoSpec>::new(bno_root, owner);
    let mut st = TreeStore::new(&mut *tp, AgflSpace { h: &mut *h });
    let searched = near_search(&mut st, &mut s, &mut cnt, &mut lt, &mut gt);
    for counts in [
        (BtreeLine::Abtc2, cnt.cur.take_counts()),
        (BtreeLine::Abtb2, lt.cur.take_counts()),
        (BtreeLine::Abtb2, gt.cur.take_counts()),
    ] {
        st.tp.fs().stats.add_btree(counts.0, &counts.1.0);
    }
    searched?;
    let Some(t) = s.best else {
        return Ok(None);
    };
    if !req.reserved {
        tp.charge_blocks(u64::from(t.len))?;
    }
    take_from_extent(tp, h, &t)?;
    Ok(Some(t))
}

/// The two algorithms of [`alloc_near`], leaving the best candidate in `s`.
fn near_search(
    st: &mut FreeSpaceStore,
    s: &mut NearSearch,
    cnt: &mut Walker<CntSpec>,
    lt: &mut Walker<BnoSpec>,
    gt: &mut Walker<BnoSpec>,
) -> FsResult<()> {
    // xfs_alloc_cur_setup: is there an extent of maxlen at all?
    cnt.active = cnt.cur.lookup(st, &(s.maxlen, 0), LookupMode::Ge)?;
    let small = !cnt.active;
    if small {
        // xfs_alloc_ag_vextent_small: the longest extent, if the tree has any.
        if !cnt.cur.decrement(st)? {
            return Ok(());
        }
        if cnt.cur.get(st)?.is_none_or(|r| r.len < s.minlen) {
            return Ok(());
        }
        cnt.active = true;
    }
    if cnt.cur.in_last_leaf(st)? {
        // First algorithm (xfs_alloc_ag_vextent_lastblock).
        let mut walk_it = true;
        if small || s.align > 1 {
            cnt.cur.to_leaf_start()?;
            loop {
                if cnt.cur.get(st)?.is_some_and(|r| r.len >= s.minlen) {
                    break;
                }
                if !cnt.cur.increment(st)? {
                    walk_it = false;
                    break;
                }
            }
        }
        if walk_it {
            cnt.walk(st, s, true, false, None)?;
            if s.best.is_some() {
                return Ok(());
            }
        }
    }
    // Second algorithm (xfs_alloc_ag_vextent_locality).
    cnt.active = cnt.cur.lookup(st, &(s.cur_len, s.agbno), LookupMode::Ge)?;
    lt.active = lt.cur.lookup(st, &s.agbno, LookupMode::Le)?;
    gt.active = gt.cur.lookup(st, &s.agbno, LookupMode::Ge)?;
    let mut finish: Option<(bool, bool)> = None; // (which: true = gt, forward)
    while lt.active || gt.active || cnt.active {
        if lt.walk(st, s, false, true, Some(1))? {
            finish = Some((true, true));
            break;
        }
        if gt.walk(st, s, true, true, Some(1))? {
            finish = Some((false, false));
            break;
        }
        probe_by_size(st, s, cnt)?;
        if !cnt.active {
            break;
        }
    }
    match finish {
        Some((true, fwd)) => {
            gt.walk(st, s, fwd, true, None)?;
        }
        Some((false, fwd)) => {
            lt.walk(st, s, fwd, true, None)?;
        }
        None => {
            // Nothing near: walk back from the end of the by-size tree for any extent.
            if !cnt.active && s.best.is_none() && cnt.cur.decrement(st)? {
                cnt.active = true;
                cnt.walk(st, s, false, true, None)?;
            }
        }
    }
    Ok(())
}

/// `xfs_alloc_cntbt_iter`: look up the first extent of at least the search length at or
/// after the target, check it (and the one before it if that is as long and the target lies
/// between them), then grow the search length: by one while nothing is found or the extent
/// found was longer than asked, else doubled.
fn probe_by_size(
    st: &mut FreeSpaceStore,
    s: &mut NearSearch,
    cnt: &mut Walker<CntSpec>,
) -> FsResult<()> {
    if !cnt.active {
        return Ok(());
    }
    let cur_len = s.cur_len;
    cnt.active = cnt.cur.lookup(st, &(cur_len, s.agbno), LookupMode::Ge)?;
    if !cnt.active {
        return Ok(());
    }
    let Some(rec) = cnt.cur.get(st)? else {
        cnt.active = false;
        return Ok(());
    };
    if s.check(&rec, false).stop {
        cnt.active = false;
    }
    s.cur_len = rec.len;
    if rec.start > s.agbno
        && cnt.cur.decrement(st)?
        && let Some(prev) = cnt.cur.get(st)?.filter(|p| p.len == s.cur_len)
        && s.check(&prev, false).stop
    {
        cnt.active = false;
    }
    let doubled = cur_len << 1;
    if s.best.is_none() || s.cur_len >= doubled {
        s.cur_len += 1;
    } else {
        s.cur_len = doubled;
    }
    Ok(())
}

/// Allocate in one locked AG; `None` if it has no room.
fn alloc_in_ag(tp: &mut Trans, mut h: AgfHandle, req: &AllocReq) -> FsResult<Option<(u64, u32)>> {
    fix_freelist(tp, &mut h).or_else(|e| {
        if e == FsError::NoSpace {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    if h.agf.flcount < min_freelist(&h.agf) {
        put_agf(tp, &h);
        return Ok(None);
    }
    let geo = tp.fs().geo;
    let in_this_ag = |b: u64| geo.agno_of(b) == h.agno;
    let got = match req.target {
        AllocTarget::Exact(b) if in_this_ag(b) => alloc_exact(tp, &mut h, req, geo.agbno_of(b))?,
        AllocTarget::Exact(_) => None,
        AllocTarget::Near(b) if in_this_ag(b) => alloc_near(tp, &mut h, req, geo.agbno_of(b))?,
        AllocTarget::Near(_) | AllocTarget::Anywhere => {
            alloc_by_size(tp, &mut h, req, !req.reserved)?
        }
    };
    put_agf(tp, &h);
    let Some(t) = got else {
        return Ok(None);
    };
    let fs = tp.fs();
    fs.stats.inc(Stat::Allocx);
    fs.stats.add(Stat::Allocb, t.len);
    Ok(Some((fs.geo.fsblock(h.agno, t.start), t.len)))
}

/// Allocate an extent: returns its first block (linear) and length.
///
/// As XFS's `xfs_alloc_vextent_start_ag`: the request's AG first (near its target, if it
/// has one there), then the others by size, first only *trying* each AGF (a busy one is
/// skipped: `buf busy_locked`), then waiting for them. AGFs are locked in ascending AG order,
/// so when the transaction already holds one, lower AGs are only ever tried. An exact
/// request and one for a single AG (inode chunks and inode-tree blocks, under their AGI) wait
/// for that AG's AGF, as `xfs_alloc_vextent_exact_bno` and `xfs_alloc_vextent_near_bno` do.
///
/// One difference: the request's own AG is waited for on the first pass, where XFS only
/// tries it. A transaction that allocates may free blocks of that AG afterwards (a
/// directory block replaced by a new one); XFS frees them in a transaction of their own
/// (deferred, after a roll), labfs in the same one, which would then wait for a lower AGF
/// than the one the allocation moved to.
pub fn alloc_extent(tp: &mut Trans, req: &AllocReq) -> FsResult<(u64, u32)> {
    tp.fs().check_live()?;
    let geo = tp.fs().geo;
    if req.minlen == 0 || req.minlen > req.maxlen {
        return Err(FsError::Invalid("allocation of an empty or inverted range"));
    }
    // Refuse before touching any AG when the blocks cannot be paid for.
    if !req.reserved && !tp.can_charge(u64::from(req.minlen)) {
        return Err(FsError::NoSpace);
    }
    let single = match req.target {
        AllocTarget::Exact(b) => Some(geo.agno_of(b)),
        _ if req.this_ag_only => Some(req.agno),
        _ => None,
    };
    let order: Vec<u32> = match single {
        Some(agno) => vec![agno],
        None => (0..geo.agcount)
            .map(|i| (req.agno + i) % geo.agcount)
            .collect(),
    };
    let passes = if single.is_some() { 1 } else { 2 };
    for pass in 0..passes {
        for &agno in &order {
            let pag = &tp.fs().perag[agno as usize];
            if pag.longest.load(Ordering::Relaxed) < req.minlen {
                continue;
            }
            let in_order = tp.highest_agf_held().is_none_or(|h| agno >= h);
            let may_block = in_order && (single.is_some() || pass == 1 || agno == req.agno);
            let Some(h) = lock_agf(tp, agno, !may_block)? else {
                continue;
            };
            if let Some(got) = alloc_in_ag(tp, h, req)? {
                return Ok(got);
            }
        }
    }
    Err(FsError::NoSpace)
}

/// Free `len` blocks starting at linear block `fsblock`.
pub fn free_extent(tp: &mut Trans, fsblock: u64, len: u32) -> FsResult<()> {
    let fs = tp.fs();
    let geo = fs.geo;
    let agno = geo.agno_of(fsblock);
    let agbno = geo.agbno_of(fsblock);
    if len == 0
        || agno >= geo.agcount
        || u64::from(agbno) + u64::from(len) > u64::from(geo.ag_len(agno))
    {
        return Err(FsError::Corrupt {
            kind: BlockKind::BnoBtree,
            daddr: 0,
            what: format!("freeing blocks {fsblock}+{len} outside the filesystem"),
        });
    }
    let Some(mut h) = lock_agf(tp, agno, false)? else {
        return Err(FsError::Invalid("AGF lock"));
    };
    fix_freelist(tp, &mut h).or_else(|e| {
        if e == FsError::NoSpace {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    give_back(tp, &mut h, agbno, len)?;
    put_agf(tp, &h);
    tp.note_freed(fsblock, len);
    let fs = tp.fs();
    fs.stats.inc(Stat::Freex);
    fs.stats.add(Stat::Freeb, len);
    fs.fdblocks.fetch_add(i64::from(len), Ordering::Relaxed);
    Ok(())
}

/// One AG's free space as its structures record it (for the checker and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgSpace {
    /// The AGF.
    pub agf: Agf,
    /// Free extents from the bno tree, in block order.
    pub by_bno: Vec<FreeExtent>,
    /// Free extents from the cnt tree, in (length, block) order.
    pub by_cnt: Vec<FreeExtent>,
    /// Blocks on the AGFL.
    pub agfl: Vec<u32>,
}

/// Read one AG's free-space records.
pub fn ag_space(tp: &mut Trans, agno: u32) -> FsResult<AgSpace> {
    let Some(mut h) = lock_agf(tp, agno, false)? else {
        return Err(FsError::Invalid("AGF lock"));
    };
    let by_bno = with_tree::<BnoSpec, _>(tp, &mut h, |cur, st| cur.records_from(st, &0))?;
    let by_cnt = with_tree::<CntSpec, _>(tp, &mut h, |cur, st| cur.records_from(st, &(0, 0)))?;
    let agfl = (0..h.agf.flcount)
        .map(|i| agfl_get(tp.buf(h.agfl_buf), (h.agf.flfirst + i) % AGFL_SIZE))
        .collect();
    Ok(AgSpace {
        agf: h.agf,
        by_bno,
        by_cnt,
        agfl,
    })
}

/// fsck for one AG's free-space trees: the blocks they occupy and every structural problem
/// (each naming its tree; the caller knows the AG).
pub fn check_trees(tp: &mut Trans, agno: u32) -> FsResult<(Vec<u32>, Vec<String>)> {
    let Some(mut h) = lock_agf(tp, agno, false)? else {
        return Err(FsError::Invalid("AGF lock"));
    };
    let mut blocks = Vec::new();
    let mut findings = Vec::new();
    let (bno_root, cnt_root) = (
        Root {
            ptr: u64::from(h.agf.bno_root),
            level: (h.agf.bno_level - 1) as u16,
        },
        Root {
            ptr: u64::from(h.agf.cnt_root),
            level: (h.agf.cnt_level - 1) as u16,
        },
    );
    let owner = u64::from(agno);
    let mut st = TreeStore::new(&mut *tp, AgflSpace { h: &mut h });
    for f in crate::fs::btree::check::<BnoSpec>(&mut st, bno_root, owner)? {
        findings.push(format!("bno tree: {f}"));
    }
    for f in crate::fs::btree::check::<CntSpec>(&mut st, cnt_root, owner)? {
        findings.push(format!("cnt tree: {f}"));
    }
    if findings.is_empty() {
        for (ptr, _) in crate::fs::btree::blocks::<BnoSpec>(&mut st, bno_root, owner)? {
            blocks.push(ptr as u32);
        }
        for (ptr, _) in crate::fs::btree::blocks::<CntSpec>(&mut st, cnt_root, owner)? {
            blocks.push(ptr as u32);
        }
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

    /// (inserts, deletes) into the by-block free-space tree during `f`.
    fn bno_changes(fs: &Fs, f: impl FnOnce()) -> (u32, u32) {
        let before = fs.stats.mount().snapshot().btree(BtreeLine::Abtb2);
        f();
        let after = fs.stats.mount().snapshot().btree(BtreeLine::Abtb2);
        let d = |op: BtreeOp| after[op as usize].wrapping_sub(before[op as usize]);
        (d(BtreeOp::Insrec), d(BtreeOp::Delrec))
    }

    fn alloc(fs: &Fs, req: AllocReq) -> (u64, u32) {
        let mut tp = Trans::new(fs, Resv::Write);
        let got = alloc_extent(&mut tp, &req).expect("alloc");
        tp.commit().expect("commit");
        got
    }

    fn free(fs: &Fs, fsblock: u64, len: u32) {
        let mut tp = Trans::new(fs, Resv::Truncate);
        free_extent(&mut tp, fsblock, len).expect("free");
        tp.commit().expect("commit");
    }

    #[test]
    fn records_are_updated_in_place_and_split_or_merged_only_when_the_shape_changes() {
        let fs = mem_fs(64 << 20);
        // Warm the free list so its refills do not add tree changes of their own.
        let (first, _) = alloc(&fs, AllocReq::blocks(1, 1));
        let mut got = (0, 0);
        // From the start of a free extent: the record shrinks in place.
        assert_eq!(
            bno_changes(&fs, || got = alloc(&fs, AllocReq::blocks(1, 8))),
            (0, 0)
        );
        assert_eq!(got.0, first + 1);
        // Freeing the first half: no neighbour touches it, so one new record.
        assert_eq!(bno_changes(&fs, || free(&fs, got.0, 4)), (1, 0));
        // Freeing the second half joins both neighbours: one record goes, one grows in place.
        assert_eq!(bno_changes(&fs, || free(&fs, got.0 + 4, 4)), (0, 1));
        // From the middle of a free extent: the left part stays in place, the right is new.
        let mut req = AllocReq::blocks(1, 2);
        req.target = AllocTarget::Near(got.0 + 3);
        let mut mid = (0, 0);
        assert_eq!(bno_changes(&fs, || mid = alloc(&fs, req)), (1, 0));
        assert_eq!(mid, (got.0 + 3, 2));
    }

    /// The change in one btree stat line's count of `op` during `f`.
    fn btree_delta(fs: &Fs, line: BtreeLine, op: BtreeOp, f: impl FnOnce()) -> u32 {
        let before = fs.stats.mount().snapshot().btree(line);
        f();
        let after = fs.stats.mount().snapshot().btree(line);
        after[op as usize].wrapping_sub(before[op as usize])
    }

    #[test]
    fn a_near_start_follows_xfs_alloc_compute_diff() {
        // (target, want, align, userdata, free start, free len) -> start
        let cases = [
            // A free extent past the target: from its start.
            ((100, 1, 1, true, 120, 10), Some(120)),
            // One holding the target: at the target, leaving space on both sides.
            ((100, 1, 1, true, 90, 20), Some(100)),
            ((100, 1, 1, false, 90, 20), Some(100)),
            // One before the target: metadata from its end, data from its start.
            ((100, 2, 1, false, 50, 10), Some(58)),
            ((100, 2, 1, true, 50, 10), Some(50)),
            // Aligned, holding the target: the aligned block giving more room, else the
            // nearer, else the one above.
            ((100, 8, 8, false, 90, 40), Some(104)),
            ((99, 8, 8, false, 90, 40), Some(96)),
            ((100, 8, 8, false, 96, 12), Some(96)),
            // Aligned, past the target: the first aligned block, if the extent reaches it
            // (whether enough follows is the caller's check on the aligned extent).
            ((100, 8, 8, false, 105, 6), None),
            ((100, 8, 8, false, 105, 20), Some(112)),
            // Aligned, before the target: the last aligned start that fits.
            ((100, 8, 8, false, 40, 30), Some(56)),
        ];
        for ((want, len, align, data, fs_, fl), start) in cases {
            let got = near_start(want, len, align, data, fs_, fl);
            assert_eq!(
                got.map(|g| g.0),
                start,
                "{want} {len} {align} {data} {fs_}+{fl}"
            );
            if let Some((s, d)) = got {
                assert_eq!(d, s.abs_diff(want));
            }
        }
    }

    #[test]
    fn a_near_allocation_takes_the_free_block_nearest_its_target() {
        let fs = mem_fs(64 << 20);
        let geo = fs.geo;
        let (first, _) = alloc(&fs, AllocReq::blocks(1, 16));
        free(&fs, first + 4, 4);
        // The hole [first+4, first+8) is nearer to first+9 than the free space after
        // first+16: metadata takes the hole's last block...
        let got = alloc(&fs, AllocReq::near(&geo, first + 9, 1));
        assert_eq!(got, (first + 7, 1));
        // ...file data its first, leaving room behind it to grow into.
        let data = AllocReq {
            userdata: true,
            ..AllocReq::near(&geo, first + 9, 1)
        };
        assert_eq!(alloc(&fs, data), (first + 4, 1));
        // A target inside free space is taken exactly, splitting the free extent in two.
        let inside = first + 100;
        let mut split = (0, 0);
        assert_eq!(
            bno_changes(&fs, || split = alloc(&fs, AllocReq::near(&geo, inside, 1))),
            (1, 0)
        );
        assert_eq!(split, (inside, 1));
    }

    #[test]
    fn an_exact_allocation_takes_that_block_or_nothing() {
        let fs = mem_fs(64 << 20);
        let geo = fs.geo;
        let (first, _) = alloc(&fs, AllocReq::blocks(1, 4));
        let exact = |b: u64| AllocReq {
            target: AllocTarget::Exact(b),
            ..AllocReq::blocks(geo.agno_of(b), 4)
        };
        let mut tp = Trans::new(&fs, Resv::Write);
        assert_eq!(alloc_extent(&mut tp, &exact(first)), Err(FsError::NoSpace));
        assert_eq!(alloc_extent(&mut tp, &exact(first + 4)), Ok((first + 4, 4)));
        tp.commit().expect("commit");
    }

    #[test]
    fn freeing_with_no_free_neighbour_looks_the_by_block_tree_up_once() {
        let fs = mem_fs(64 << 20);
        let (first, _) = alloc(&fs, AllocReq::blocks(1, 8));
        // Blocks first+2 and first+4 are allocated on both sides of first+3.
        let lookups = btree_delta(&fs, BtreeLine::Abtb2, BtreeOp::Lookup, || {
            free(&fs, first + 3, 1)
        });
        // xfs_free_ag_extent: the lookup of the left neighbour, a step, an insert there.
        assert_eq!(lookups, 1);
        let inserts = btree_delta(&fs, BtreeLine::Abtb2, BtreeOp::Insrec, || {
            free(&fs, first + 5, 1)
        });
        assert_eq!(inserts, 1);
    }

    #[test]
    fn a_busy_agf_is_skipped_for_the_next_ag_and_counted_busy() {
        let fs = mem_fs(64 << 20);
        let geo = fs.geo;
        // AG 1, the request's own, is full.
        loop {
            let longest = fs.perag[1].longest.load(Ordering::Relaxed);
            if longest == 0 {
                break;
            }
            let req = AllocReq {
                this_ag_only: true,
                ..AllocReq::blocks(1, longest)
            };
            let mut tp = Trans::new(&fs, Resv::Write);
            if alloc_extent(&mut tp, &req).is_err() {
                break;
            }
            tp.commit().expect("commit");
        }
        // Another transaction holds AG 2's AGF (both reserve their log space first: one
        // thread waiting for log space while it holds an AGF is against the lock order).
        let mut holder = Trans::new(&fs, Resv::Write);
        let mut tp = Trans::new(&fs, Resv::Write);
        alloc_extent(&mut holder, &AllocReq::blocks(2, 1)).expect("alloc");
        let busy = fs.stats.mount().snapshot().get(Stat::BufBusyLocked);
        let (got, _) =
            alloc_extent(&mut tp, &AllocReq::near(&geo, geo.fsblock(1, 100), 1)).expect("alloc");
        assert_eq!(geo.agno_of(got), 3, "past the busy AG, not a wait for it");
        assert_eq!(
            fs.stats.mount().snapshot().get(Stat::BufBusyLocked),
            busy + 1
        );
        tp.commit().expect("commit");
        holder.commit().expect("commit");
    }
}
