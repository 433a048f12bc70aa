//! The on-disk extent-map B+tree of files with many extents (XFS's bmbt).
//!
//! [`crate::fs::bmap`] keeps the in-core extent list; this module keeps the tree in step with
//! it. A fork switches to btree format when its extents no longer fit the inode's literal area
//! (21), and back to extents format as soon as they fit again, XFS's rule for files and
//! directories alike. Tree blocks are allocated near the inode and counted in the inode's
//! `nblocks`; their operations feed the `bmbt2` stat line.

use crate::fs::Fs;
use crate::fs::alloc::{AllocReq, alloc_extent, free_extent};
use crate::fs::btree::kinds::BmbtSpec;
use crate::fs::btree::store::BufId;
use crate::fs::btree::{self, LookupMode};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::dinode::MAX_INLINE_EXTENTS;
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::inode::{BtreeFork, DataFork, Extent, ExtentList, ForkRoot, ListChange};
use crate::fs::trans::{InodeId, Trans};
use crate::fs::treestore::{TreeSpace, TreeStore, run_cursor};

/// An inode's bmbt: linear block pointers, blocks allocated near the inode.
struct BmapSpace {
    ip: Option<InodeId>,
    /// Blocks allocated (+) or freed (-), charged to the inode by `settle`.
    blocks_delta: i64,
}

/// A tree store over one inode's bmbt.
type BmapStore<'t, 'a> = TreeStore<'t, 'a, BmapSpace>;

impl TreeSpace for BmapSpace {
    fn locate(&self, tp: &Trans, kind: BlockKind, ptr: u64) -> FsResult<Daddr> {
        if ptr >= tp.fs().geo.dblocks {
            return Err(FsError::Corrupt {
                kind,
                daddr: 0,
                what: format!("extent tree pointer {ptr} beyond the filesystem"),
            });
        }
        Ok(Daddr::of_block(ptr))
    }

    fn alloc(&mut self, tp: &mut Trans, _kind: BlockKind, hint: u64) -> FsResult<(u64, Daddr)> {
        // Near the block being split, or the inode for a new tree (xfs_bmbt_alloc_block).
        let req = AllocReq::near(&tp.fs().geo, hint, 1);
        let (fsb, _) = alloc_extent(tp, &req)?;
        self.blocks_delta += 1;
        Ok((fsb, Daddr::of_block(fsb)))
    }

    fn free(&mut self, tp: &mut Trans, _kind: BlockKind, ptr: u64, _id: BufId) -> FsResult<()> {
        self.blocks_delta -= 1;
        free_extent(tp, ptr, 1)
    }
}

/// A store over an inode's bmbt; with `ip`, tree blocks are charged to that joined inode.
fn bmap_store<'t, 'a>(tp: &'t mut Trans<'a>, ip: Option<InodeId>) -> BmapStore<'t, 'a> {
    TreeStore::new(
        tp,
        BmapSpace {
            ip,
            blocks_delta: 0,
        },
    )
}

/// Charge a store's tree blocks to its inode.
fn settle(st: BmapStore) {
    if let Some(ip) = st.space.ip {
        let ic = st.tp.ic_mut(ip);
        ic.di.nblocks = ic.di.nblocks.saturating_add_signed(st.space.blocks_delta);
        st.tp.log_inode(ip);
    }
}

/// Read every extent of an inode's bmbt (at iget of a btree-format inode).
pub fn load_extents(fs: &Fs, ino: u64, root: ForkRoot) -> FsResult<Vec<Extent>> {
    let mut tp = Trans::reader(fs);
    let mut st = bmap_store(&mut tp, None);
    let (out, _) =
        run_cursor::<BmbtSpec, _, _>(&mut st, root, ino, |cur, st| cur.records_from(st, &0));
    tp.commit()?;
    out
}

/// What a fork change asks of the tree.
#[derive(Debug, Clone, Copy)]
enum TreeAction {
    /// Extents format still fits: nothing on disk but the inode.
    None,
    /// Too many extents for the inode: build a tree holding them.
    Build,
    /// Apply the change to the tree; with `then_remove`, the extents fit the inode again
    /// afterwards and the tree goes.
    Apply { root: ForkRoot, then_remove: bool },
}

/// Bring the on-disk form of inode `ip`'s fork in line with its in-core extent list after
/// `change`, by XFS's rule for a data fork (`xfs_bmap_needs_btree` /
/// `xfs_bmap_wants_extents`), the same for directories as for files: more extents than the
/// inode's literal area holds (21 records of 16 bytes) make a tree; a tree left with no more
/// than that many goes back into the inode.
///
/// The counts follow XFS: building the tree fills its leaf with the extents directly
/// (`xfs_bmap_extents_to_btree`) and removing it frees the block
/// (`xfs_bmap_btree_to_extents`), neither counted as btree operations; a change to a
/// fork that has a tree is made with the tree's operations the bmap code uses (see
/// `apply_change`).
pub fn sync_fork(tp: &mut Trans, ip: InodeId, change: &ListChange) -> FsResult<()> {
    let ino = tp.ino(ip);
    // Whether a list has more real extents than the inode holds. It stops counting there:
    // a big directory's list has tens of thousands, and this runs for every change.
    let too_many = |v: &[Extent]| {
        v.iter()
            .filter(|e| !e.is_delalloc())
            .nth(MAX_INLINE_EXTENTS)
            .is_some()
    };
    let action = match &tp.ic(ip).fork {
        DataFork::Extents(list) if too_many(list) => TreeAction::Build,
        DataFork::Btree(b) => TreeAction::Apply {
            root: b.root,
            then_remove: !too_many(&b.extents),
        },
        _ => TreeAction::None,
    };
    let mut st = bmap_store(&mut *tp, Some(ip));
    let outcome = match action {
        TreeAction::None => Ok(None),
        TreeAction::Build => {
            // Rare (once per fork crossing the limit), so copying the list is fine.
            let list: Vec<Extent> = st
                .tp
                .ic(ip)
                .fork
                .extents()
                .iter()
                .filter(|e| !e.is_delalloc())
                .copied()
                .collect();
            // The first tree block goes near the inode (xfs_bmap_extents_to_btree).
            let geo = st.tp.fs().geo;
            let hint = geo.fsblock(
                geo.ino_agno(ino),
                crate::fs::geo::Geometry::agino_agbno(geo.ino_agino(ino)),
            );
            // (The block is charged to the inode by BmapStore::alloc.)
            btree::create_filled::<BmbtSpec>(&mut st, ino, hint, &list).map(Some)
        }
        TreeAction::Apply { root, then_remove } => {
            let (applied, root) = run_cursor::<BmbtSpec, _, _>(&mut st, root, ino, |cur, st| {
                apply_change(cur, st, change, ino)
            });
            match applied {
                Ok(()) if then_remove => {
                    btree::destroy::<BmbtSpec>(&mut st, root, ino).map(|()| None)
                }
                Ok(()) => Ok(Some(root)),
                Err(e) => Err(e),
            }
        }
    };
    settle(st);
    let new_root = outcome?;
    let fork = &mut tp.ic_mut(ip).fork;
    match (action, new_root) {
        (TreeAction::None, _) => {}
        (_, Some(r)) => {
            let extents = match std::mem::take(fork) {
                DataFork::Extents(v) => v,
                DataFork::Btree(b) => b.extents,
                DataFork::Local(_) => ExtentList::new(),
            };
            *fork = DataFork::Btree(Box::new(BtreeFork { root: r, extents }));
        }
        (_, None) => {
            if let DataFork::Btree(b) = std::mem::take(fork) {
                *fork = DataFork::Extents(b.extents);
            }
        }
    }
    tp.log_inode(ip);
    Ok(())
}

/// Make the tree's records follow one extent-list change, with the operations XFS's bmap
/// code uses for the same change: a mapping that merges with a neighbour or is trimmed is
/// looked up and updated in place; one merging two neighbours deletes the right one, steps
/// back and updates the left (`xfs_bmap_add_extent_hole_real`); a mapping cut in the middle
/// is updated to its left part and the right part inserted after it
/// (`xfs_bmap_del_extent_real`); only a mapping with no neighbour to merge with is inserted
/// after a lookup, and only an extent unmapped whole is deleted.
fn apply_change(
    cur: &mut btree::Cursor<BmbtSpec>,
    st: &mut BmapStore,
    change: &ListChange,
    ino: u64,
) -> FsResult<()> {
    let sorted = |v: &[Extent]| {
        let mut v: Vec<Extent> = v.iter().filter(|e| !e.is_delalloc()).copied().collect();
        v.sort_by_key(|e| e.startoff);
        v
    };
    let (removed, added) = (sorted(&change.removed), sorted(&change.added));
    let missing = |e: &Extent| FsError::Corrupt {
        kind: BlockKind::BmapBtree,
        daddr: 0,
        what: format!(
            "inode {ino}: extent at file block {} missing from its tree",
            e.startoff
        ),
    };
    // Put the cursor on `e`: where it stands if it is there already, else by a lookup.
    let seek = |cur: &mut btree::Cursor<BmbtSpec>, st: &mut BmapStore, e: &Extent| {
        if cur.get(st)?.is_some_and(|r| r == *e) {
            return Ok(());
        }
        if cur.lookup(st, &e.startoff, LookupMode::Eq)? {
            Ok(())
        } else {
            Err(missing(e))
        }
    };
    let Some((first, rest)) = removed.split_first() else {
        return added.iter().try_for_each(|e| cur.insert(st, e));
    };
    if added.is_empty() {
        for e in &removed {
            if !cur.lookup(st, &e.startoff, LookupMode::Eq)? {
                return Err(missing(e));
            }
            cur.delete(st)?;
        }
        return Ok(());
    }
    // From the last removed record leftwards: delete each but the first, stepping back
    // onto the one before it.
    let last = rest.last().unwrap_or(first);
    if !cur.lookup(st, &last.startoff, LookupMode::Eq)? {
        return Err(missing(last));
    }
    for e in rest.iter().rev() {
        seek(cur, st, e)?;
        cur.delete(st)?;
        cur.decrement(st)?;
    }
    seek(cur, st, first)?;
    cur.update(st, &added[0])?;
    for e in &added[1..] {
        cur.increment(st)?;
        cur.insert_here(st, e)?;
    }
    Ok(())
}

/// Check an inode's bmbt against its in-core list (for the checker).
pub fn check_tree(fs: &Fs, ino: u64, root: ForkRoot, extents: &[Extent]) -> FsResult<Vec<String>> {
    let mut tp = Trans::reader(fs);
    let mut st = bmap_store(&mut tp, None);
    let r = root;
    let mut findings: Vec<String> = btree::check::<BmbtSpec>(&mut st, r, ino)?
        .iter()
        .map(ToString::to_string)
        .collect();
    tp.commit()?;
    let on_disk = load_extents(fs, ino, root)?;
    let in_core: Vec<Extent> = extents
        .iter()
        .filter(|e| !e.is_delalloc())
        .copied()
        .collect();
    if on_disk != in_core {
        findings.push(format!(
            "{} records differ from the in-core extent list ({})",
            on_disk.len(),
            in_core.len()
        ));
    }
    Ok(findings)
}

/// Every block of an inode's bmbt (for the checker's space accounting).
pub fn tree_blocks(fs: &Fs, ino: u64, root: ForkRoot) -> FsResult<Vec<u64>> {
    let mut tp = Trans::reader(fs);
    let mut st = bmap_store(&mut tp, None);
    let blocks = btree::blocks::<BmbtSpec>(&mut st, root, ino)?;
    tp.commit()?;
    Ok(blocks.into_iter().map(|(p, _)| p).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::fs::Fs;
    use crate::fs::btree::BtreeOp;
    use crate::fs::format::BLOCK_SIZE;
    use crate::fs::format::dinode::MAX_INLINE_EXTENTS;
    use crate::fs::inode::{DataFork, Inode, InodeRead};
    use crate::fs::stats::BtreeLine;
    use crate::fs::testing::mem_fs;
    use crate::fs::vfs::FallocMode;

    const BLOCK: u64 = BLOCK_SIZE as u64;

    /// A file whose first `n` extents are one block each, a block apart in the file.
    fn file_with_extents(fs: &Arc<Fs>, n: u64) -> Arc<Inode> {
        let root = fs.root().expect("root");
        let (ip, _) = fs.create(&root, b"f", 0o644, true).expect("create");
        for i in 0..n {
            fs.fallocate(&ip, FallocMode::Allocate, 2 * i * BLOCK, BLOCK)
                .expect("fallocate");
        }
        ip
    }

    fn is_btree(ip: &Arc<Inode>) -> (bool, usize) {
        let r = InodeRead::lock(Arc::clone(ip));
        (matches!(r.fork, DataFork::Btree(_)), r.fork.extents().len())
    }

    /// bmbt2 counts of `ops` during `f`.
    fn bmbt(fs: &Fs, ops: &[BtreeOp], f: impl FnOnce()) -> Vec<u32> {
        let before = fs.stats.mount().snapshot().btree(BtreeLine::Bmbt2);
        f();
        let after = fs.stats.mount().snapshot().btree(BtreeLine::Bmbt2);
        ops.iter()
            .map(|&op| after[op as usize].wrapping_sub(before[op as usize]))
            .collect()
    }

    #[test]
    fn a_fork_is_a_tree_only_while_its_extents_do_not_fit_the_inode() {
        let fs = mem_fs(64 << 20);
        let limit = MAX_INLINE_EXTENTS as u64;
        let ip = file_with_extents(&fs, limit);
        assert_eq!(is_btree(&ip), (false, 21));
        // One more extent: the fork becomes a tree whose leaf is filled directly, with no
        // btree operation to count (xfs_bmap_extents_to_btree).
        let counted = bmbt(&fs, &BtreeOp::ALL, || {
            fs.fallocate(&ip, FallocMode::Allocate, 2 * limit * BLOCK, BLOCK)
                .expect("fallocate");
        });
        assert_eq!(is_btree(&ip), (true, 22));
        assert!(counted.iter().all(|&c| c == 0), "{counted:?}");
        // Back to 21: the record goes from the tree (a lookup and a delete), then the tree.
        let counted = bmbt(&fs, &[BtreeOp::Lookup, BtreeOp::Delrec], || {
            fs.fallocate(&ip, FallocMode::PunchHole, 0, BLOCK)
                .expect("punch");
        });
        assert_eq!(counted, [1, 1]);
        assert_eq!(is_btree(&ip), (false, 21));
    }

    #[test]
    fn a_tree_changes_in_place_where_xfs_updates_its_records() {
        let fs = mem_fs(64 << 20);
        let ip = file_with_extents(&fs, 30);
        assert_eq!(is_btree(&ip), (true, 30));
        let ops = [BtreeOp::Lookup, BtreeOp::Insrec, BtreeOp::Delrec];
        // The block right after the last extent's in the file: the allocator aims right
        // after it on disk (its blocks lie a block apart, so that one is free), and the
        // extent grows: a lookup and an update, no insert (xfs_bmap_add_extent_hole_real).
        let merged = bmbt(&fs, &ops, || {
            fs.fallocate(&ip, FallocMode::Allocate, 59 * BLOCK, BLOCK)
                .expect("fallocate");
        });
        assert_eq!(is_btree(&ip), (true, 30));
        assert_eq!(merged, [1, 0, 0]);
        // Cutting a block out of the middle of a three-block extent: a lookup, an update to
        // its left part and an insert of its right part after it (xfs_bmap_del_extent_real).
        fs.fallocate(&ip, FallocMode::Allocate, 100 * BLOCK, 3 * BLOCK)
            .expect("fallocate");
        let (_, before) = is_btree(&ip);
        let cut = bmbt(&fs, &ops, || {
            fs.fallocate(&ip, FallocMode::PunchHole, 101 * BLOCK, BLOCK)
                .expect("punch");
        });
        assert_eq!(cut, [1, 1, 0]);
        assert_eq!(is_btree(&ip), (true, before + 1));
        let report = crate::fs::check::check(&fs).expect("check");
        assert!(report.is_clean(), "{:?}", report.findings);
    }
}
