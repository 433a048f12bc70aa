//! Whole-tree operations that need no cursor: make an empty tree, free a whole tree, and
//! visit every record in key order.
//!
//! The walks go down through the nodes (not along sibling pointers), check every header on
//! the way, and refuse to visit a block twice, so a corrupt image can make them fail but
//! never loop or panic. The fsck-style walk that reports instead of failing is
//! [`super::check`].

use crate::fs::fastmap::FastSet;

use super::block::{self, SpecGeom, child_ptr, corrupt_at, numrecs, ptr_ok, read_block, rec_at};
use super::store::BlockStore;
use super::{BtreeSpec, Layout, Root};
use crate::fs::error::{FsError, FsResult};

/// Make an empty tree: one leaf root block allocated near `hint`, owned by `owner`.
pub fn create<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    owner: u64,
    hint: u64,
) -> FsResult<Root> {
    let () = S::SANE;
    if S::LAYOUT == Layout::Short && owner > u64::from(u32::MAX) {
        return Err(FsError::Invalid(
            "short-form btree owner (AG number) must fit in 32 bits",
        ));
    }
    let kind = S::kind(0);
    let (ptr, id) = st.alloc(kind, hint)?;
    if !ptr_ok::<S>(ptr) {
        return Err(block::corrupt(
            kind,
            st.daddr(id),
            format!("store allocated pointer {ptr:#x}, which this tree cannot store"),
        ));
    }
    block::init_header::<S, _>(st, id, 0, owner);
    Ok(Root { ptr, level: 0 })
}

/// Make a tree of one leaf that already holds `recs` (in strictly increasing key order, at
/// most a leaf's worth), filled in directly the way XFS's `xfs_bmap_extents_to_btree` fills
/// the leaf of a fork turning into a btree: no cursor operation takes place, so none is
/// counted.
pub fn create_filled<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    owner: u64,
    hint: u64,
    recs: &[S::Rec],
) -> FsResult<Root> {
    if recs.len() > S::GEOM.leaf_max {
        return Err(FsError::Invalid("more records than one btree leaf holds"));
    }
    if recs
        .windows(2)
        .any(|w| S::key_of(&w[0]) >= S::key_of(&w[1]))
    {
        return Err(FsError::Invalid("btree records out of key order"));
    }
    let root = create::<S>(st, owner, hint)?;
    let id = st.read(S::kind(0), root.ptr)?;
    for (i, r) in recs.iter().enumerate() {
        block::put_rec::<S, _>(st, id, i + 1, r);
    }
    block::set_numrecs::<S, _>(st, id, recs.len());
    Ok(root)
}

/// Free every block of the tree (children before parents). The root is gone afterwards.
pub fn destroy<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
) -> FsResult<()> {
    let order = walk::<S>(st, root, owner, |_| Ok(()))?;
    for &(ptr, level) in order.iter().rev() {
        st.free(S::kind(level as u16), ptr)?;
    }
    Ok(())
}

/// Call `f` with every record of the tree, in key order.
pub fn for_each_record<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
    mut f: impl FnMut(&S::Rec),
) -> FsResult<()> {
    walk::<S>(st, root, owner, |b| {
        let n = numrecs::<S>(b);
        for i in 1..=n {
            f(&rec_at::<S>(b, i));
        }
        Ok(())
    })?;
    Ok(())
}

/// Number of records in the tree.
pub fn count_records<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
) -> FsResult<u64> {
    let mut n = 0u64;
    walk::<S>(st, root, owner, |b| {
        n += numrecs::<S>(b) as u64;
        Ok(())
    })?;
    Ok(n)
}

/// Every block of the tree as (pointer, level), parents before children and each level left
/// to right, checking every header and handing each leaf's bytes to `leaf`. Fails on the
/// first corrupt block. Behind [`destroy`], [`for_each_record`] and [`count_records`].
fn walk<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
    mut leaf: impl FnMut(&[u8]) -> FsResult<()>,
) -> FsResult<Vec<(u64, usize)>> {
    let () = S::SANE;
    if !ptr_ok::<S>(root.ptr) {
        return Err(FsError::Invalid("btree root pointer names no block"));
    }
    let mut seen = FastSet::default();
    let mut order = Vec::new();
    let mut stack = vec![(root.ptr, usize::from(root.level))];
    while let Some((ptr, level)) = stack.pop() {
        let id = read_block::<S, _>(st, ptr, level, owner)?;
        if !seen.insert(ptr) {
            return Err(corrupt_at::<S, _>(
                st,
                id,
                level,
                "block is referenced twice in the tree",
            ));
        }
        order.push((ptr, level));
        if level == 0 {
            leaf(st.bytes(id))?;
        } else {
            let n = numrecs::<S>(st.bytes(id));
            // Push right to left so the left child is visited first.
            for i in (1..=n).rev() {
                stack.push((child_ptr::<S, _>(st, id, level, i)?, level - 1));
            }
        }
    }
    Ok(order)
}

/// Every block of the tree as (pointer, level), parents before children: what the tree
/// occupies, for space accounting.
pub fn blocks<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
) -> FsResult<Vec<(u64, u16)>> {
    Ok(walk::<S>(st, root, owner, |_| Ok(()))?
        .into_iter()
        .map(|(p, l)| (p, l as u16))
        .collect())
}
