//! The on-disk extent-map B+tree of files with many extents (XFS's bmbt).
//!
//! [`crate::fs::bmap`] keeps the in-core extent list; this module keeps the tree in step with
//! it. A fork switches to btree format when its extents no longer fit the inode's literal area
//! (21), and back to extents format when they fit again with room to spare, as XFS converts
//! between its formats. Tree blocks are allocated near the inode and counted in the inode's
//! `nblocks`; their operations feed the `bmbt2` stat line.

use crate::fs::Fs;
use crate::fs::alloc::{AllocReq, alloc_extent, free_extent};
use crate::fs::bmap::ListChange;
use crate::fs::btree::kinds::BmbtSpec;
use crate::fs::btree::store::BufId;
use crate::fs::btree::{self, LookupMode};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::dinode::MAX_INLINE_EXTENTS;
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::inode::{DataFork, Extent, ForkRoot};
use crate::fs::trans::{InodeId, Trans};
use crate::fs::treestore::{TreeSpace, TreeStore, run_cursor};

/// Convert back to extents format when the count drops this far below the inline limit
/// (hysteresis, so a file hovering at the limit does not convert on every write).
const BACK_TO_EXTENTS: usize = MAX_INLINE_EXTENTS - 4;

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
    /// Too many extents for the inode: build a tree.
    Build,
    /// Few enough to fit back in the inode: remove the tree.
    Remove(ForkRoot),
    /// Apply the change to the tree.
    Apply(ForkRoot),
}

/// Bring the on-disk form of inode `ip`'s fork in line with its in-core extent list after
/// `change`: apply the change to the tree, or convert between extents and btree format.
pub fn sync_fork(tp: &mut Trans, ip: InodeId, change: &ListChange) -> FsResult<()> {
    let ino = tp.ino(ip);
    let real = |v: &[Extent]| v.iter().filter(|e| !e.is_delalloc()).count();
    let action = match &tp.ic(ip).fork {
        DataFork::Extents(list) if real(list) > MAX_INLINE_EXTENTS => TreeAction::Build,
        DataFork::Btree { root, extents } if real(extents) <= BACK_TO_EXTENTS => {
            TreeAction::Remove(*root)
        }
        DataFork::Btree { root, .. } => TreeAction::Apply(*root),
        _ => TreeAction::None,
    };
    let mut st = bmap_store(&mut *tp, Some(ip));
    let outcome = match action {
        TreeAction::None => Ok(None),
        TreeAction::Build => {
            // Rare (once per file crossing the limit), so copying the list is fine.
            let list: Vec<Extent> = st.tp.ic(ip).fork.extents().to_vec();
            // The first tree block goes near the inode (xfs_bmap_extents_to_btree).
            let geo = st.tp.fs().geo;
            let hint = geo.fsblock(
                geo.ino_agno(ino),
                crate::fs::geo::Geometry::agino_agbno(geo.ino_agino(ino)),
            );
            let built = btree::create::<BmbtSpec>(&mut st, ino, hint).and_then(|root| {
                // (The root block was charged by BmapStore::alloc inside create().)
                let (r, root) = run_cursor::<BmbtSpec, _, _>(&mut st, root, ino, |cur, st| {
                    list.iter()
                        .filter(|e| !e.is_delalloc())
                        .try_for_each(|e| cur.insert(st, e))
                });
                r.map(|()| root)
            });
            built.map(Some)
        }
        TreeAction::Remove(root) => btree::destroy::<BmbtSpec>(&mut st, root, ino).map(|()| None),
        TreeAction::Apply(root) => {
            let (applied, root) = run_cursor::<BmbtSpec, _, _>(&mut st, root, ino, |cur, st| {
                for e in change.removed.iter().filter(|e| !e.is_delalloc()) {
                    if !cur.lookup(st, &e.startoff, LookupMode::Eq)? {
                        return Err(FsError::Corrupt {
                            kind: BlockKind::BmapBtree,
                            daddr: 0,
                            what: format!(
                                "inode {ino}: extent at file block {} missing from its tree",
                                e.startoff
                            ),
                        });
                    }
                    cur.delete(st)?;
                }
                change
                    .added
                    .iter()
                    .filter(|e| !e.is_delalloc())
                    .try_for_each(|e| cur.insert(st, e))
            });
            applied.map(|()| Some(root))
        }
    };
    settle(st);
    let new_root = outcome?;
    let fork = &mut tp.ic_mut(ip).fork;
    match (action, new_root) {
        (TreeAction::Build | TreeAction::Apply(_), Some(r)) => {
            let extents = match std::mem::take(fork) {
                DataFork::Extents(v) | DataFork::Btree { extents: v, .. } => v,
                DataFork::Local(_) => Vec::new(),
            };
            *fork = DataFork::Btree { root: r, extents };
        }
        (TreeAction::Remove(_), _) => {
            if let DataFork::Btree { extents, .. } = std::mem::take(fork) {
                *fork = DataFork::Extents(extents);
            }
        }
        _ => {}
    }
    tp.log_inode(ip);
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
