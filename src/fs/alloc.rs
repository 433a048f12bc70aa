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
//! Stats: `extent_alloc` (extents/blocks allocated and freed) and the `abtb2`/`abtc2` btree
//! lines (from the cursors' exact tallies).

use std::sync::atomic::Ordering;

use crate::fs::btree::kinds::{BnoSpec, CntSpec, FreeExtent};
use crate::fs::btree::store::BufId;
use crate::fs::btree::{Cursor, LookupMode, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::ag::{
    AGF_SECTOR, AGFL_SECTOR, AGFL_SIZE, Agf, agfl_get, agfl_set, agfl_slot_range,
};
use crate::fs::format::{BBSIZE, BlockKind, Daddr};
use crate::fs::stats::Stat;
use crate::fs::trans::Trans;
use crate::fs::treestore::{TreeSpace, TreeStore, run_cursor};

/// What to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocReq {
    /// AG to try first.
    pub agno: u32,
    /// Try to start exactly here (linear fsblock), e.g. right after a file's last extent.
    pub near: Option<u64>,
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
}

impl AllocReq {
    /// A request for exactly `len` blocks anywhere, starting with AG `agno`.
    pub fn blocks(agno: u32, len: u32) -> AllocReq {
        AllocReq {
            agno,
            near: None,
            minlen: len,
            maxlen: len,
            align: 1,
            this_ag_only: false,
            reserved: false,
        }
    }
}

/// Blocks the AGFL must hold before an operation: enough for every level of both trees to
/// split once (XFS's `xfs_alloc_min_freelist`).
fn min_freelist(agf: &Agf) -> u32 {
    (agf.bno_level + 1) + (agf.cnt_level + 1)
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

/// Keep the AGFL between its minimum and a little above, taking blocks from (or returning
/// them to) the free-space trees.
fn fix_freelist(tp: &mut Trans, h: &mut AgfHandle) -> FsResult<()> {
    let need = min_freelist(&h.agf);
    while h.agf.flcount < need {
        // Take the first block of the first free extent by block number.
        let rec = with_tree::<BnoSpec, _>(tp, h, |cur, st| {
            if cur.lookup(st, &0, LookupMode::Ge)? {
                cur.get(st)
            } else {
                Ok(None)
            }
        })?;
        let Some(rec) = rec else {
            return Err(FsError::NoSpace);
        };
        take_from_extent(tp, h, rec, rec.start, 1)?;
        agfl_put(tp, h, rec.start)?;
    }
    // Returning a block can merge free extents and join tree blocks, which puts blocks back
    // on the list; bound the trimming so that can never cycle.
    for _ in 0..16 {
        if h.agf.flcount <= need + 8 {
            break;
        }
        let agbno = agfl_take(tp, h)?;
        give_back(tp, h, agbno, 1)?;
    }
    Ok(())
}

/// Remove `start..start+len` (inside free extent `rec`) from both trees.
fn take_from_extent(
    tp: &mut Trans,
    h: &mut AgfHandle,
    rec: FreeExtent,
    start: u32,
    len: u32,
) -> FsResult<()> {
    let left = FreeExtent {
        start: rec.start,
        len: start - rec.start,
    };
    let right = FreeExtent {
        start: start + len,
        len: rec.start + rec.len - start - len,
    };
    with_tree::<CntSpec, _>(tp, h, |cur, st| {
        if !cur.lookup(st, &(rec.len, rec.start), LookupMode::Eq)? {
            return Err(missing(st.tp, &rec, "cnt"));
        }
        cur.delete(st)?;
        for piece in [left, right] {
            if piece.len > 0 {
                cur.insert(st, &piece)?;
            }
        }
        Ok(())
    })?;
    // The by-block record is updated in place with a remnant (either one keeps its place in
    // block order), as xfs_alloc_fixup_trees does; only a second remnant is a new record,
    // and only an extent used up entirely is deleted. (The by-size tree must delete and
    // re-insert: a remnant's size moves it.)
    with_tree::<BnoSpec, _>(tp, h, |cur, st| {
        if !cur.lookup(st, &rec.start, LookupMode::Eq)? {
            return Err(missing(st.tp, &rec, "bno"));
        }
        match (left.len > 0, right.len > 0) {
            (true, true) => {
                cur.update(st, &left)?;
                cur.insert(st, &right)
            }
            (true, false) => cur.update(st, &left),
            (false, true) => cur.update(st, &right),
            (false, false) => cur.delete(st),
        }
    })?;
    h.agf.freeblks -= len;
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

/// Recompute `longest` from the last record of the cnt tree.
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
    // keeps its place in block order); with both, the right one is deleted into the left.
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
            (None, None) => cur.insert(st, &merged)?,
        }
        Ok((left, right))
    })?;
    let merged = FreeExtent {
        start: left.map_or(agbno, |l| l.start),
        len: len + left.map_or(0, |l| l.len) + right.map_or(0, |r| r.len),
    };
    with_tree::<CntSpec, _>(tp, h, |cur, st| {
        for n in [left, right].into_iter().flatten() {
            cur.lookup(st, &(n.len, n.start), LookupMode::Eq)?;
            cur.delete(st)?;
        }
        cur.insert(st, &merged)
    })?;
    h.agf.freeblks += len;
    h.agf.longest = h.agf.longest.max(merged.len);
    Ok(())
}

/// Find where to allocate in a locked AG: exactly at `near` if that block starts enough free
/// space, else the smallest free extent that fits `maxlen` (aligned), else the largest one if
/// it still gives `minlen`. Returns the free extent and the chosen start and length.
fn choose(
    tp: &mut Trans,
    h: &mut AgfHandle,
    req: &AllocReq,
) -> FsResult<Option<(FreeExtent, u32, u32)>> {
    let geo = tp.fs().geo;
    let align = req.align.max(1);
    let aligned = |s: u32| s.div_ceil(align) * align;
    if let Some(near) = req.near.filter(|&b| geo.agno_of(b) == h.agno) {
        let nb = geo.agbno_of(near);
        let hit = with_tree::<BnoSpec, _>(tp, h, |cur, st| {
            if cur.lookup(st, &nb, LookupMode::Le)? {
                cur.get(st)
            } else {
                Ok(None)
            }
        })?;
        if let Some(r) = hit {
            let avail = (r.start + r.len).saturating_sub(nb);
            if r.start <= nb && nb.is_multiple_of(align) && avail >= req.minlen {
                return Ok(Some((r, nb, avail.min(req.maxlen))));
            }
        }
    }
    let want = req.maxlen + align - 1;
    let fit = with_tree::<CntSpec, _>(tp, h, |cur, st| {
        if cur.lookup(st, &(want, 0), LookupMode::Ge)? {
            cur.get(st)
        } else {
            Ok(None)
        }
    })?;
    if let Some(r) = fit {
        return Ok(Some((r, aligned(r.start), req.maxlen)));
    }
    let largest = with_tree::<CntSpec, _>(tp, h, |cur, st| {
        if cur.lookup(st, &(u32::MAX, u32::MAX), LookupMode::Le)? {
            cur.get(st)
        } else {
            Ok(None)
        }
    })?;
    if let Some(r) = largest {
        let s = aligned(r.start);
        let avail = (r.start + r.len).saturating_sub(s);
        if avail >= req.minlen {
            return Ok(Some((r, s, avail.min(req.maxlen))));
        }
    }
    Ok(None)
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
    let Some((rec, start, len)) = choose(tp, &mut h, req)? else {
        put_agf(tp, &h);
        return Ok(None);
    };
    if !req.reserved {
        tp.charge_blocks(u64::from(len))?;
    }
    take_from_extent(tp, &mut h, rec, start, len)?;
    put_agf(tp, &h);
    let fs = tp.fs();
    fs.stats.inc(Stat::Allocx);
    fs.stats.add(Stat::Allocb, len);
    Ok(Some((fs.geo.fsblock(h.agno, start), len)))
}

/// Allocate an extent: returns its first block (linear) and length. Tries the requested AG
/// first, then the others; never waits for an AG lock out of order (AGFs are locked in
/// ascending AG order, so when the transaction already holds one, lower AGs are only tried).
pub fn alloc_extent(tp: &mut Trans, req: &AllocReq) -> FsResult<(u64, u32)> {
    tp.fs().check_live()?;
    let agcount = tp.fs().geo.agcount;
    if req.minlen == 0 || req.minlen > req.maxlen {
        return Err(FsError::Invalid("allocation of an empty or inverted range"));
    }
    // Refuse before touching any AG when the blocks cannot be paid for.
    if !req.reserved && !tp.can_charge(u64::from(req.minlen)) {
        return Err(FsError::NoSpace);
    }
    let order: Vec<u32> = if req.this_ag_only {
        vec![req.agno]
    } else {
        (0..agcount).map(|i| (req.agno + i) % agcount).collect()
    };
    for pass in 0..2 {
        for &agno in &order {
            let pag = &tp.fs().perag[agno as usize];
            if pag.longest.load(Ordering::Relaxed) < req.minlen {
                continue;
            }
            let highest_held = tp.highest_agf_held();
            let may_block = pass == 1 && highest_held.is_none_or(|h| agno > h)
                || pass == 0 && agno == req.agno && highest_held.is_none_or(|h| agno >= h);
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
        req.near = Some(got.0 + 3);
        let mut mid = (0, 0);
        assert_eq!(bno_changes(&fs, || mid = alloc(&fs, req)), (1, 0));
        assert_eq!(mid, (got.0 + 3, 2));
    }
}
