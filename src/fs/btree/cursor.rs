//! The cursor: a path from the root to a leaf entry, and every algorithm that reads or
//! changes the tree through it.
//!
//! The cursor is XFS's `xfs_btree_cur` reduced to what labfs needs: for each level, the block
//! it is in and a 1-based index into that block (0 = before the first entry, `numrecs + 1` =
//! after the last). Insert and delete work level by level from the leaf up, exactly like
//! `xfs_btree_insrec` / `xfs_btree_delrec`, and use temporary copies of the path where XFS
//! duplicates its cursor (to fix a sibling's parent keys, or to inspect a sibling while
//! rebalancing). Following XFS this closely is what makes the operation counts comparable
//! with a kernel's (see the module docs of [`super`]).
//!
//! Invariants between operations, when the cursor is positioned: `path[0]` is a leaf,
//! `path[l]` for `l > 0` is the node whose entry `path[l].idx` points at `path[l - 1]`'s
//! block, and `path.len() == root.level + 1`.

use std::cmp::Ordering;
use std::marker::PhantomData;

use smallvec::SmallVec;

use super::block::{
    self, Entry, Side, SpecGeom, child_ptr, copy_entries, corrupt_at, entry_key, is_null,
    log_entries, numrecs, ptr_ok, put_entry, put_rec, read_block, rec_at, set_numrecs, set_sibling,
    shift_entries, sibling, sibling_raw,
};
use super::store::{BlockStore, BufId};
use super::{BtreeOp, BtreeSpec, LookupMode, OpCounts, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::BlockKind;

/// One level of a cursor's path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level {
    /// The block's pointer.
    pub ptr: u64,
    /// The block, held by the store.
    pub buf: BufId,
    /// 1-based entry index; 0 = before the first entry.
    pub idx: usize,
}

/// A cursor's levels, root last. Kept inline: a cursor is made for nearly every tree operation
/// (several per create), and a path on the heap cost each one an allocation and a free. Eight
/// levels cover every tree labfs can build on a device it can address; a deeper (corrupt) root
/// level still works, spilling to the heap, and is refused as corrupt when its blocks are read.
type Path = SmallVec<[Level; 8]>;

impl Level {
    const UNSET: Level = Level {
        ptr: 0,
        buf: BufId(u32::MAX),
        idx: 0,
    };
}

/// Operation counters, with a switch that silences them while the cursor repositions itself
/// (a labfs convenience that XFS does not do, so it must not show in the stats).
#[derive(Debug, Default)]
struct Tally {
    counts: OpCounts,
    quiet: bool,
}

impl Tally {
    #[inline]
    fn inc(&mut self, op: BtreeOp) {
        if !self.quiet {
            self.counts.add(op, 1);
        }
    }

    #[inline]
    fn add(&mut self, op: BtreeOp, n: usize) {
        if !self.quiet {
            // XFS adds into u32 counters; a block never holds more than u16::MAX entries.
            self.counts.add(op, n as u32);
        }
    }
}

/// The keys before and after a record, where they exist.
type Neighbours<K> = (Option<K>, Option<K>);

/// What one level of a delete did.
enum Deleted {
    /// Finished: nothing more to do above this level.
    Done,
    /// The block was joined with a sibling: delete the dead block's entry one level up.
    Joined,
    /// The cursor index addressed no entry.
    NoEntry,
}

/// Everything the algorithms need besides the path they work on: the root, the owner the
/// headers must carry, and the counters. Paths are passed explicitly so that temporary
/// copies (XFS's duplicated cursors) share the counters.
struct Core<S: BtreeSpec> {
    root: Root,
    owner: u64,
    tally: Tally,
    _spec: PhantomData<fn() -> S>,
}

/// A position in one B+tree, plus the operation counts of everything done through it.
///
/// A cursor lives inside one transaction: the `BufId`s it holds are the store's handles for
/// that transaction. After one cursor changes a tree, other cursors on it must look up
/// again before use (as with XFS cursors). Positioning operations ([`Cursor::lookup`], [`Cursor::insert`]) must come
/// before [`Cursor::get`], stepping, [`Cursor::update`] and [`Cursor::delete`].
///
/// Errors: `Exists` and `Invalid` are refusals made before anything changed. Any other error
/// (a corrupt block, a failed allocation) can come after part of an insert or delete was
/// done: the cursor drops its position and the caller must cancel the transaction, as XFS
/// does by shutting down on a dirty transaction's failure.
pub struct Cursor<S: BtreeSpec> {
    core: Core<S>,
    path: Path,
}

impl<S: BtreeSpec> Cursor<S> {
    /// A cursor on the tree rooted at `root`, whose blocks carry `owner` (AG number for
    /// short-form trees, inode number for long-form and directory trees). Not yet positioned.
    pub fn new(root: Root, owner: u64) -> Self {
        let () = S::SANE;
        Cursor {
            core: Core {
                root,
                owner,
                tally: Tally::default(),
                _spec: PhantomData,
            },
            path: Path::new(),
        }
    }

    /// Position at the record matching `key` per `mode`; Ok(true) if one satisfies it.
    /// (Le: greatest key <= key; Ge: smallest key >= key; Eq: exactly key.)
    ///
    /// When nothing matches, the cursor is still positioned: after an Le miss it is before
    /// the first record (nothing is <= key) and after a Ge miss after the last, so a step
    /// reaches the nearest record; after an Eq miss it is at the insertion point, where
    /// [`Cursor::get`] is not meaningful.
    pub fn lookup(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        key: &S::Key,
        mode: LookupMode,
    ) -> FsResult<bool> {
        self.core.tally.inc(BtreeOp::Lookup);
        let r = self.seek(st, key, mode);
        self.invalidate_on_error(r)
    }

    /// The record under the cursor, or `None` when the cursor is before the first record,
    /// after the last, or not positioned.
    pub fn get(&self, st: &(impl BlockStore + ?Sized)) -> FsResult<Option<S::Rec>> {
        if !self.positioned() {
            return Ok(None);
        }
        let leaf = self.path[0];
        let b = st.bytes(leaf.buf);
        let n = numrecs::<S>(b);
        if n > S::GEOM.leaf_max {
            return Err(corrupt_at::<S, _>(
                st,
                leaf.buf,
                0,
                "record count changed under the cursor",
            ));
        }
        if leaf.idx == 0 || leaf.idx > n {
            return Ok(None);
        }
        Ok(Some(rec_at::<S>(b, leaf.idx)))
    }

    /// Step to the next record; false (and after the last record) at the end of the tree.
    pub fn increment(&mut self, st: &mut (impl BlockStore + ?Sized)) -> FsResult<bool> {
        self.require_positioned()?;
        let r = self.core.increment_at(st, &mut self.path, 0);
        self.invalidate_on_error(r)
    }

    /// Step to the previous record; false (and before the first record) at the start.
    pub fn decrement(&mut self, st: &mut (impl BlockStore + ?Sized)) -> FsResult<bool> {
        self.require_positioned()?;
        let r = self.core.decrement_at(st, &mut self.path, 0);
        self.invalidate_on_error(r)
    }

    /// Insert a record with a key not present (an equal key is FsError::Exists).
    ///
    /// Afterwards the cursor is on the new record (on the existing one after `Exists`). The root may have changed ([`Self::root`]).
    pub fn insert(&mut self, st: &mut (impl BlockStore + ?Sized), rec: &S::Rec) -> FsResult<()> {
        let r = self.insert_inner(st, rec);
        self.invalidate_on_error(r)
    }

    fn insert_inner(&mut self, st: &mut (impl BlockStore + ?Sized), rec: &S::Rec) -> FsResult<()> {
        let key = S::key_of(rec);
        self.core.tally.inc(BtreeOp::Lookup);
        if self.seek(st, &key, LookupMode::Eq)? {
            return Err(FsError::Exists);
        }
        self.insert_at_cursor(st, rec)
    }

    /// Insert a record where the cursor stands, without looking its key up: for callers
    /// that positioned the cursor by a lookup and a step, as XFS's `xfs_free_ag_extent`
    /// inserts a free extent with no free neighbour at its by-block cursor (one lookup
    /// counted, not two). The record's key must belong at that position (after the record
    /// before it, before the one under the cursor); otherwise `Invalid`, before anything
    /// changes. Afterwards the cursor is on the new record, as after [`Cursor::insert`].
    pub fn insert_here(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        rec: &S::Rec,
    ) -> FsResult<()> {
        self.require_positioned()?;
        let key = S::key_of(rec);
        let (prev, next) = self.core.insertion_neighbours(st, self.path[0])?;
        if prev.is_some_and(|p| p >= key) || next.is_some_and(|n| n <= key) {
            return Err(FsError::Invalid(
                "btree insert at the cursor would put the record out of key order",
            ));
        }
        let r = self.insert_at_cursor(st, rec);
        self.invalidate_on_error(r)
    }

    /// Whether the cursor's leaf is the tree's last (XFS's `xfs_btree_islastblock` at the
    /// leaf level): the near-block allocator scans that whole block when its by-size lookup
    /// lands there.
    pub fn in_last_leaf(&self, st: &(impl BlockStore + ?Sized)) -> FsResult<bool> {
        self.require_positioned()?;
        Ok(is_null::<S>(sibling_raw::<S>(
            st.bytes(self.path[0].buf),
            Side::Right,
        )))
    }

    /// Put the cursor on the first record of its leaf (XFS sets `bc_levels[0].ptr = 1`):
    /// a move inside the block, which XFS does not count either.
    pub fn to_leaf_start(&mut self) -> FsResult<()> {
        self.require_positioned()?;
        self.path[0].idx = 1;
        Ok(())
    }

    /// The insertion proper at the cursor's position (the key checked by the caller).
    fn insert_at_cursor(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        rec: &S::Rec,
    ) -> FsResult<()> {
        let key = S::key_of(rec);
        let mut entry = Entry::Rec(*rec);
        let mut level = 0;
        let mut split = false;
        while let Some((k, p)) = self.core.insrec(st, &mut self.path, level, &entry)? {
            split = true;
            level += 1;
            entry = Entry::Node(k, p);
        }
        if split {
            // A split may have moved the record to a new block whose parent entry the path
            // does not show yet; find it again, silently.
            self.reseek(st, &key)?;
        }
        Ok(())
    }

    /// Delete the record under the cursor (rebalances: shift from a sibling or join; kill root).
    ///
    /// Afterwards the cursor is on the record that followed the deleted one (after the last
    /// record if it was the last). The root may have changed ([`Self::root`]).
    pub fn delete(&mut self, st: &mut (impl BlockStore + ?Sized)) -> FsResult<()> {
        self.require_record(st)?;
        let r = self.delete_inner(st);
        self.invalidate_on_error(r)
    }

    fn delete_inner(&mut self, st: &mut (impl BlockStore + ?Sized)) -> FsResult<()> {
        let mut level = 0;
        loop {
            match self.core.delrec(st, &mut self.path, level)? {
                Deleted::Done => break,
                Deleted::Joined => level += 1,
                Deleted::NoEntry => {
                    let at = self.path[level];
                    return Err(corrupt_at::<S, _>(
                        st,
                        at.buf,
                        level,
                        "parent entry of a joined block is missing",
                    ));
                }
            }
        }
        let leaf = self.path[0];
        if leaf.idx > numrecs::<S>(st.bytes(leaf.buf)) {
            // The successor is the first record of the next leaf.
            self.core.tally.quiet = true;
            let stepped = self.core.increment_at(st, &mut self.path, 0);
            self.core.tally.quiet = false;
            stepped?;
        }
        Ok(())
    }

    /// Replace the record under the cursor; its key may change only within its neighbours'
    /// keys (order preserved) and parents' keys are updated when it is a block's first.
    pub fn update(&mut self, st: &mut (impl BlockStore + ?Sized), rec: &S::Rec) -> FsResult<()> {
        let leaf = self.require_record(st)?;
        let r = self.update_inner(st, leaf, rec);
        self.invalidate_on_error(r)
    }

    fn update_inner(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        leaf: Level,
        rec: &S::Rec,
    ) -> FsResult<()> {
        let new_key = S::key_of(rec);
        let old_key = S::key_of(&rec_at::<S>(st.bytes(leaf.buf), leaf.idx));
        if new_key != old_key {
            let (prev, next) = self.core.neighbour_keys(st, leaf)?;
            if prev.is_some_and(|p| p >= new_key) || next.is_some_and(|n| n <= new_key) {
                return Err(FsError::Invalid(
                    "btree update would move the record out of key order",
                ));
            }
        }
        put_rec::<S, _>(st, leaf.buf, leaf.idx, rec);
        if leaf.idx == 1 {
            self.core.update_keys(st, &self.path, 0)?;
        }
        Ok(())
    }

    /// The tree's root as this cursor left it; the caller persists it when it changed.
    pub fn root(&self) -> Root {
        self.core.root
    }

    /// Operation counts so far.
    pub fn counts(&self) -> &OpCounts {
        &self.core.tally.counts
    }

    /// Operation counts so far, resetting them to zero.
    pub fn take_counts(&mut self) -> OpCounts {
        std::mem::take(&mut self.core.tally.counts)
    }

    /// Every record from the first at or after `key` to the end, in key order (a scan with
    /// the cursor: one lookup, then steps, counted as such).
    pub fn records_from(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        key: &S::Key,
    ) -> FsResult<Vec<S::Rec>> {
        let mut out = Vec::new();
        if self.lookup(st, key, LookupMode::Ge)? {
            loop {
                if let Some(r) = self.get(st)? {
                    out.push(r);
                }
                if !self.increment(st)? {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Test support: assert the path invariants documented at the top of this module.
    #[cfg(test)]
    pub(crate) fn assert_path_consistent(&self, st: &(impl BlockStore + ?Sized)) {
        if !self.positioned() {
            return;
        }
        let top = self.path.len() - 1;
        assert_eq!(
            self.path[top].ptr, self.core.root.ptr,
            "path top is not the root"
        );
        for l in 1..=top {
            let at = self.path[l];
            let n = numrecs::<S>(st.bytes(at.buf));
            assert!(
                at.idx >= 1 && at.idx <= n,
                "level {l} index {} of {n}",
                at.idx
            );
            assert_eq!(
                block::ptr_at::<S>(st.bytes(at.buf), at.idx),
                self.path[l - 1].ptr,
                "level {l} entry does not point at the level below"
            );
        }
        let leaf = self.path[0];
        assert!(leaf.idx <= numrecs::<S>(st.bytes(leaf.buf)) + 1);
    }

    /// After a failed operation the path may name blocks that changed or were freed: the
    /// cursor forgets its position (XFS tears the cursor down on error the same way).
    /// `Exists` and `Invalid` are refusals made before anything changed; they keep it.
    fn invalidate_on_error<T>(&mut self, r: FsResult<T>) -> FsResult<T> {
        if let Err(e) = &r
            && !matches!(e, FsError::Exists | FsError::Invalid(_))
        {
            self.path.clear();
        }
        r
    }

    fn positioned(&self) -> bool {
        !self.path.is_empty() && self.path.len() == usize::from(self.core.root.level) + 1
    }

    fn require_positioned(&self) -> FsResult<()> {
        if self.positioned() {
            Ok(())
        } else {
            Err(FsError::Invalid("btree cursor is not positioned"))
        }
    }

    /// The leaf level, which must address a record.
    fn require_record(&self, st: &(impl BlockStore + ?Sized)) -> FsResult<Level> {
        self.require_positioned()?;
        let leaf = self.path[0];
        if leaf.idx == 0 || leaf.idx > numrecs::<S>(st.bytes(leaf.buf)) {
            return Err(FsError::Invalid("no record under the btree cursor"));
        }
        Ok(leaf)
    }

    /// Look `key` up without counting (repositioning after a split).
    fn reseek(&mut self, st: &mut (impl BlockStore + ?Sized), key: &S::Key) -> FsResult<()> {
        self.core.tally.quiet = true;
        let found = self.seek(st, key, LookupMode::Eq);
        self.core.tally.quiet = false;
        if found? {
            Ok(())
        } else {
            let leaf = self.path[0];
            Err(corrupt_at::<S, _>(
                st,
                leaf.buf,
                0,
                format!("inserted key {key:?} not found again"),
            ))
        }
    }

    /// The lookup proper (XFS `xfs_btree_lookup`): binary search in each block from the root
    /// down, then adjust the leaf position for the mode.
    fn seek(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        key: &S::Key,
        mode: LookupMode,
    ) -> FsResult<bool> {
        let root = self.core.root;
        if !ptr_ok::<S>(root.ptr) {
            return Err(FsError::Invalid("btree root pointer names no block"));
        }
        let nlevels = usize::from(root.level) + 1;
        self.path.clear();
        self.path.resize(nlevels, Level::UNSET);
        let mut ptr = root.ptr;
        // Ordering of the last probed key against `key`; "greater" until a probe happens,
        // as XFS starts with diff = 1.
        let mut diff = Ordering::Greater;
        let mut keyno = 0usize;
        for level in (0..nlevels).rev() {
            let buf = read_block::<S, _>(st, ptr, level, self.core.owner)?;
            let n = numrecs::<S>(st.bytes(buf));
            if diff == Ordering::Equal {
                // A parent key matched exactly: it is this block's first key.
                keyno = 1;
            } else {
                if n == 0 {
                    // Only an empty root leaf has no entries (nodes are checked on read).
                    if nlevels != 1 {
                        return Err(corrupt_at::<S, _>(
                            st,
                            buf,
                            level,
                            "empty leaf below a node",
                        ));
                    }
                    self.path[0] = Level {
                        ptr,
                        buf,
                        idx: usize::from(mode != LookupMode::Le),
                    };
                    return Ok(false);
                }
                let (mut lo, mut hi) = (1usize, n);
                while lo <= hi {
                    self.core.tally.inc(BtreeOp::Compare);
                    keyno = (lo + hi) / 2;
                    diff = entry_key::<S>(st.bytes(buf), level, keyno).cmp(key);
                    match diff {
                        Ordering::Less => lo = keyno + 1,
                        Ordering::Greater => hi = keyno - 1,
                        Ordering::Equal => break,
                    }
                }
            }
            if level > 0 {
                // Probe ended right of the key: the child to descend is the previous one
                // (or the first, when the key is below every key of the node).
                if diff == Ordering::Greater && keyno > 1 {
                    keyno -= 1;
                }
                self.path[level] = Level {
                    ptr,
                    buf,
                    idx: keyno,
                };
                ptr = child_ptr::<S, _>(st, buf, level, keyno)?;
            } else {
                self.path[0] = Level {
                    ptr,
                    buf,
                    idx: keyno,
                };
            }
        }
        let leaf = self.path[0];
        let n = numrecs::<S>(st.bytes(leaf.buf));
        let mut keyno = leaf.idx;
        if mode != LookupMode::Le && diff == Ordering::Less {
            keyno += 1;
            if mode == LookupMode::Ge
                && keyno > n
                && !is_null::<S>(sibling_raw::<S>(st.bytes(leaf.buf), Side::Right))
            {
                // Past this leaf's end: the answer is the next leaf's first record.
                self.path[0].idx = keyno;
                if !self.core.increment_at(st, &mut self.path, 0)? {
                    return Err(corrupt_at::<S, _>(
                        st,
                        leaf.buf,
                        0,
                        "right sibling vanished",
                    ));
                }
                return Ok(true);
            }
        } else if mode == LookupMode::Le && diff == Ordering::Greater {
            keyno -= 1;
        }
        self.path[0].idx = keyno;
        Ok(keyno != 0 && keyno <= n && (mode != LookupMode::Eq || diff == Ordering::Equal))
    }
}

impl<S: BtreeSpec> Core<S> {
    fn read(&self, st: &mut (impl BlockStore + ?Sized), ptr: u64, level: usize) -> FsResult<BufId> {
        read_block::<S, _>(st, ptr, level, self.owner)
    }

    /// A new block from the store, counted.
    fn alloc(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        kind: BlockKind,
        hint: u64,
    ) -> FsResult<(u64, BufId)> {
        let (ptr, id) = st.alloc(kind, hint)?;
        if !ptr_ok::<S>(ptr) {
            return Err(block::corrupt(
                kind,
                st.daddr(id),
                format!("store allocated pointer {ptr:#x}, which this tree cannot store"),
            ));
        }
        self.tally.inc(BtreeOp::Alloc);
        Ok((ptr, id))
    }

    /// Return a block to the store, counted.
    fn free(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        kind: BlockKind,
        ptr: u64,
    ) -> FsResult<()> {
        st.free(kind, ptr)?;
        self.tally.inc(BtreeOp::Free);
        Ok(())
    }

    /// The entry index of `path[level]`, checked to address an entry of its block.
    fn entry_index(
        &self,
        st: &(impl BlockStore + ?Sized),
        path: &[Level],
        level: usize,
    ) -> FsResult<usize> {
        let at = path[level];
        let n = numrecs::<S>(st.bytes(at.buf));
        if at.idx == 0 || at.idx > n {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                format!("cursor index {} outside {n} entries", at.idx),
            ));
        }
        Ok(at.idx)
    }

    /// Step `path` one entry right at `level` (XFS `xfs_btree_increment`). Crossing into the
    /// right sibling climbs until a parent has a next entry, then descends its first entries.
    fn increment_at(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut [Level],
        level: usize,
    ) -> FsResult<bool> {
        let at = path[level];
        let n = numrecs::<S>(st.bytes(at.buf));
        if at.idx < n {
            path[level].idx = at.idx + 1;
            return Ok(true);
        }
        path[level].idx = n + 1;
        let Some(right) = sibling::<S, _>(st, at.buf, at.ptr, level, Side::Right)? else {
            return Ok(false);
        };
        self.tally.inc(BtreeOp::Increment);
        let mut lev = level + 1;
        while lev < path.len() {
            let up = path[lev];
            if up.idx < numrecs::<S>(st.bytes(up.buf)) {
                path[lev].idx = up.idx + 1;
                break;
            }
            lev += 1;
        }
        if lev == path.len() {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                "right sibling exists but no parent entry follows",
            ));
        }
        while lev > level {
            let up = path[lev];
            let child = child_ptr::<S, _>(st, up.buf, lev, up.idx)?;
            lev -= 1;
            let buf = self.read(st, child, lev)?;
            path[lev] = Level {
                ptr: child,
                buf,
                idx: 1,
            };
        }
        if path[level].ptr != right {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                format!(
                    "right sibling {right:#x} disagrees with the parent's next block {:#x}",
                    path[level].ptr
                ),
            ));
        }
        Ok(true)
    }

    /// Step `path` one entry left at `level` (XFS `xfs_btree_decrement`).
    fn decrement_at(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut [Level],
        level: usize,
    ) -> FsResult<bool> {
        let at = path[level];
        if at.idx > 1 {
            path[level].idx = at.idx - 1;
            return Ok(true);
        }
        path[level].idx = 0;
        let Some(left) = sibling::<S, _>(st, at.buf, at.ptr, level, Side::Left)? else {
            return Ok(false);
        };
        self.tally.inc(BtreeOp::Decrement);
        let mut lev = level + 1;
        while lev < path.len() {
            let up = path[lev];
            if up.idx > 1 {
                path[lev].idx = up.idx - 1;
                break;
            }
            lev += 1;
        }
        if lev == path.len() {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                "left sibling exists but no parent entry precedes",
            ));
        }
        while lev > level {
            let up = path[lev];
            let child = child_ptr::<S, _>(st, up.buf, lev, up.idx)?;
            lev -= 1;
            let buf = self.read(st, child, lev)?;
            let n = numrecs::<S>(st.bytes(buf));
            path[lev] = Level {
                ptr: child,
                buf,
                idx: n,
            };
        }
        if path[level].ptr != left {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                format!(
                    "left sibling {left:#x} disagrees with the parent's previous block {:#x}",
                    path[level].ptr
                ),
            ));
        }
        Ok(true)
    }

    /// Copy the first key of `path[level]`'s block into its parent entry, and on up while
    /// the entry written is its block's first (XFS `xfs_btree_update_keys`).
    fn update_keys(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &[Level],
        level: usize,
    ) -> FsResult<()> {
        let at = path[level];
        if numrecs::<S>(st.bytes(at.buf)) == 0 {
            // An emptied block is about to be joined away; it has no key to pass up.
            return Ok(());
        }
        let key = entry_key::<S>(st.bytes(at.buf), level, 1);
        for lev in level + 1..path.len() {
            let idx = self.entry_index(st, path, lev)?;
            block::put_key::<S, _>(st, path[lev].buf, idx, &key);
            if idx != 1 {
                break;
            }
        }
        Ok(())
    }

    /// The keys before and after the insertion point `leaf` (an index from 1 to one past
    /// the block's last record), reading sibling leaves at a block edge.
    fn insertion_neighbours(
        &self,
        st: &mut (impl BlockStore + ?Sized),
        leaf: Level,
    ) -> FsResult<Neighbours<S::Key>> {
        let n = numrecs::<S>(st.bytes(leaf.buf));
        if leaf.idx == 0 || leaf.idx > n + 1 {
            return Err(FsError::Invalid(
                "btree cursor is not at an insertion point",
            ));
        }
        // An entry inserted here goes between the entries now at idx - 1 and idx.
        self.keys_around(st, leaf, leaf.idx)
    }

    /// The keys before and after the leaf entry `leaf` (reading sibling leaves when the entry
    /// is at a block edge), for the order check of an update.
    fn neighbour_keys(
        &self,
        st: &mut (impl BlockStore + ?Sized),
        leaf: Level,
    ) -> FsResult<Neighbours<S::Key>> {
        self.keys_around(st, leaf, leaf.idx + 1)
    }

    /// The key of the entry before `leaf.idx` and of entry `next` (1-based) of the same
    /// leaf, each taken from the sibling leaf when it lies past the block's edge.
    fn keys_around(
        &self,
        st: &mut (impl BlockStore + ?Sized),
        leaf: Level,
        next: usize,
    ) -> FsResult<Neighbours<S::Key>> {
        let n = numrecs::<S>(st.bytes(leaf.buf));
        let prev = if leaf.idx > 1 {
            Some(entry_key::<S>(st.bytes(leaf.buf), 0, leaf.idx - 1))
        } else if let Some(l) = sibling::<S, _>(st, leaf.buf, leaf.ptr, 0, Side::Left)? {
            let buf = self.read(st, l, 0)?;
            let ln = numrecs::<S>(st.bytes(buf));
            (ln > 0).then(|| entry_key::<S>(st.bytes(buf), 0, ln))
        } else {
            None
        };
        let next = if next <= n {
            Some(entry_key::<S>(st.bytes(leaf.buf), 0, next))
        } else if let Some(r) = sibling::<S, _>(st, leaf.buf, leaf.ptr, 0, Side::Right)? {
            let buf = self.read(st, r, 0)?;
            (numrecs::<S>(st.bytes(buf)) > 0).then(|| entry_key::<S>(st.bytes(buf), 0, 1))
        } else {
            None
        };
        Ok((prev, next))
    }

    /// Insert `entry` at `path[level].idx`, making room first if the block is full
    /// (XFS `xfs_btree_insrec` + `xfs_btree_make_block_unfull`; a da tree only splits, see
    /// [`super::Layout::shifts_before_split`]). Returns the new block's key
    /// and pointer when the block had to be split: the caller inserts them one level up.
    fn insrec(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut Path,
        level: usize,
        entry: &Entry<S>,
    ) -> FsResult<Option<(S::Key, u64)>> {
        if level >= path.len() {
            self.new_root(st, path)?;
            return Ok(None);
        }
        let start = path[level];
        if start.idx == 0 {
            return Err(corrupt_at::<S, _>(
                st,
                start.buf,
                level,
                "insert position before the first entry",
            ));
        }
        self.tally.inc(BtreeOp::Insrec);
        let max = S::GEOM.max(level);
        let mut first_idx = start.idx;
        let mut split = None;
        if numrecs::<S>(st.bytes(start.buf)) >= max {
            let shifts = S::LAYOUT.shifts_before_split();
            if shifts && self.rshift(st, path, level)? {
                // Our last entry went right; the insert position is unchanged.
            } else if shifts && self.lshift(st, path, level)? {
                first_idx = path[level].idx;
            } else {
                split = Some(self.split(st, path, level)?);
            }
        }
        let at = path[level];
        let n = numrecs::<S>(st.bytes(at.buf));
        if n >= max || at.idx > n + 1 {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                format!("no room to insert at {} of {n} entries", at.idx),
            ));
        }
        self.tally.add(BtreeOp::Moves, n + 1 - at.idx);
        shift_entries::<S, _>(st, at.buf, level, at.idx, n + 1 - at.idx, true);
        put_entry::<S, _>(st, at.buf, level, at.idx, entry);
        set_numrecs::<S, _>(st, at.buf, n + 1);
        log_entries::<S, _>(st, at.buf, level, at.idx, n + 1);
        if at.ptr != start.ptr {
            // The entry landed in the new right block, which has no parent entry yet: the
            // key to insert above is that block's (possibly new) first key.
            if let Some((k, _)) = split.as_mut() {
                *k = entry_key::<S>(st.bytes(at.buf), level, 1);
            }
        } else if first_idx == 1 {
            self.update_keys(st, path, level)?;
        }
        if split.is_some() && level + 1 < path.len() {
            // The new block's entry goes right after the split block's entry.
            path[level + 1].idx += 1;
        }
        Ok(split)
    }

    /// Split `path[level]`'s full block in two (XFS `__xfs_btree_split`): the upper half
    /// moves to a new right sibling; the cursor follows its entry. Returns the new block's
    /// first key and pointer.
    fn split(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut [Level],
        level: usize,
    ) -> FsResult<(S::Key, u64)> {
        self.tally.inc(BtreeOp::Split);
        let left = path[level];
        let (rptr, rbuf) = self.alloc(st, S::kind(level as u16), left.ptr)?;
        block::init_header::<S, _>(st, rbuf, level, self.owner);
        let total = numrecs::<S>(st.bytes(left.buf));
        // Halve; with an odd count, the half that will receive the new entry gets fewer.
        let mut rrecs = total / 2;
        if total % 2 == 1 && left.idx <= rrecs + 1 {
            rrecs += 1;
        }
        let lrecs = total - rrecs;
        self.tally.add(BtreeOp::Moves, rrecs);
        copy_entries::<S, _>(st, left.buf, lrecs + 1, rbuf, 1, rrecs, level);
        set_numrecs::<S, _>(st, left.buf, lrecs);
        set_numrecs::<S, _>(st, rbuf, rrecs);
        let rkey = entry_key::<S>(st.bytes(rbuf), level, 1);
        let far = sibling::<S, _>(st, left.buf, left.ptr, level, Side::Right)?;
        set_sibling::<S, _>(st, rbuf, Side::Left, left.ptr);
        set_sibling::<S, _>(st, rbuf, Side::Right, far.unwrap_or(S::LAYOUT.null_ptr()));
        set_sibling::<S, _>(st, left.buf, Side::Right, rptr);
        if let Some(far) = far {
            let fbuf = self.read(st, far, level)?;
            set_sibling::<S, _>(st, fbuf, Side::Left, rptr);
        }
        if left.idx > lrecs + 1 {
            path[level] = Level {
                ptr: rptr,
                buf: rbuf,
                idx: left.idx - lrecs,
            };
        }
        Ok((rkey, rptr))
    }

    /// Grow the tree by one level above the two halves of a split root
    /// (XFS `xfs_btree_new_root`).
    fn new_root(&mut self, st: &mut (impl BlockStore + ?Sized), path: &mut Path) -> FsResult<()> {
        self.tally.inc(BtreeOp::Newroot);
        let top = path.len() - 1;
        let cur = path[top];
        let (nptr, nbuf) = self.alloc(st, S::kind(top as u16 + 1), self.root.ptr)?;
        // The cursor's block is one of the two halves; find the other through its sibling.
        let (lptr, lbuf, rptr, rbuf, idx) =
            if let Some(r) = sibling::<S, _>(st, cur.buf, cur.ptr, top, Side::Right)? {
                let rbuf = self.read(st, r, top)?;
                (cur.ptr, cur.buf, r, rbuf, 1)
            } else if let Some(l) = sibling::<S, _>(st, cur.buf, cur.ptr, top, Side::Left)? {
                let lbuf = self.read(st, l, top)?;
                (l, lbuf, cur.ptr, cur.buf, 2)
            } else {
                return Err(corrupt_at::<S, _>(
                    st,
                    cur.buf,
                    top,
                    "split root block has no sibling",
                ));
            };
        block::init_header::<S, _>(st, nbuf, top + 1, self.owner);
        let lkey = entry_key::<S>(st.bytes(lbuf), top, 1);
        let rkey = entry_key::<S>(st.bytes(rbuf), top, 1);
        put_entry::<S, _>(st, nbuf, top + 1, 1, &Entry::Node(lkey, lptr));
        put_entry::<S, _>(st, nbuf, top + 1, 2, &Entry::Node(rkey, rptr));
        set_numrecs::<S, _>(st, nbuf, 2);
        self.root = Root {
            ptr: nptr,
            level: top as u16 + 1,
        };
        path.push(Level {
            ptr: nptr,
            buf: nbuf,
            idx,
        });
        Ok(())
    }

    /// Move the last entry of `path[level]`'s block to the front of its right sibling, if
    /// the sibling has room and the cursor is not on that entry (XFS `xfs_btree_rshift`).
    fn rshift(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &[Level],
        level: usize,
    ) -> FsResult<bool> {
        let left = path[level];
        let Some(rptr) = sibling::<S, _>(st, left.buf, left.ptr, level, Side::Right)? else {
            return Ok(false);
        };
        let lrecs = numrecs::<S>(st.bytes(left.buf));
        if left.idx >= lrecs {
            return Ok(false);
        }
        let rbuf = self.read(st, rptr, level)?;
        let rrecs = numrecs::<S>(st.bytes(rbuf));
        if rrecs >= S::GEOM.max(level) {
            return Ok(false);
        }
        self.tally.inc(BtreeOp::Rshift);
        self.tally.add(BtreeOp::Moves, rrecs);
        shift_entries::<S, _>(st, rbuf, level, 1, rrecs, true);
        copy_entries::<S, _>(st, left.buf, lrecs, rbuf, 1, 1, level);
        log_entries::<S, _>(st, rbuf, level, 1, rrecs + 1);
        set_numrecs::<S, _>(st, left.buf, lrecs - 1);
        set_numrecs::<S, _>(st, rbuf, rrecs + 1);
        // The right block has a new first key: step a copy of the path into it (XFS's
        // temporary cursor) and fix its parents' keys.
        let mut t = Path::from_slice(path);
        t[level].idx = lrecs - 1;
        if !self.increment_at(st, &mut t, level)? {
            return Err(corrupt_at::<S, _>(
                st,
                left.buf,
                level,
                "right sibling vanished",
            ));
        }
        self.update_keys(st, &t, level)?;
        Ok(true)
    }

    /// Move the first entry of `path[level]`'s block to the end of its left sibling, if the
    /// sibling has room and the cursor is not on that entry (XFS `xfs_btree_lshift`).
    fn lshift(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut [Level],
        level: usize,
    ) -> FsResult<bool> {
        let right = path[level];
        let Some(lptr) = sibling::<S, _>(st, right.buf, right.ptr, level, Side::Left)? else {
            return Ok(false);
        };
        if right.idx <= 1 {
            return Ok(false);
        }
        let lbuf = self.read(st, lptr, level)?;
        let lrecs = numrecs::<S>(st.bytes(lbuf));
        if lrecs >= S::GEOM.max(level) {
            return Ok(false);
        }
        let rrecs = numrecs::<S>(st.bytes(right.buf));
        if rrecs == 0 {
            return Ok(false);
        }
        self.tally.inc(BtreeOp::Lshift);
        self.tally.add(BtreeOp::Moves, 1);
        copy_entries::<S, _>(st, right.buf, 1, lbuf, lrecs + 1, 1, level);
        set_numrecs::<S, _>(st, lbuf, lrecs + 1);
        set_numrecs::<S, _>(st, right.buf, rrecs - 1);
        // XFS adds one less than the number of entries it slides down.
        self.tally
            .add(BtreeOp::Moves, (rrecs - 1).saturating_sub(1));
        shift_entries::<S, _>(st, right.buf, level, 2, rrecs - 1, false);
        log_entries::<S, _>(st, right.buf, level, 1, rrecs - 1);
        self.update_keys(st, path, level)?;
        path[level].idx -= 1;
        Ok(true)
    }

    /// Remove the entry at `path[level].idx`, then rebalance the block if it fell below the
    /// minimum (XFS `xfs_btree_delrec`).
    fn delrec(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut Path,
        level: usize,
    ) -> FsResult<Deleted> {
        let at = path[level];
        let mut n = numrecs::<S>(st.bytes(at.buf));
        if at.idx == 0 || at.idx > n {
            return Ok(Deleted::NoEntry);
        }
        self.tally.inc(BtreeOp::Delrec);
        self.tally.add(BtreeOp::Moves, n - at.idx);
        shift_entries::<S, _>(st, at.buf, level, at.idx + 1, n - at.idx, false);
        log_entries::<S, _>(st, at.buf, level, at.idx, n - 1);
        n -= 1;
        set_numrecs::<S, _>(st, at.buf, n);

        if level == path.len() - 1 {
            // The root: exempt from the minimum; a node root left with one child goes.
            if n == 1 && level > 0 {
                self.kill_root(st, path, level)?;
            } else if level > 0 {
                self.decrement_at(st, path, level)?;
            }
            return Ok(Deleted::Done);
        }
        if at.idx == 1 {
            self.update_keys(st, path, level)?;
        }
        let g = &S::GEOM;
        let min = g.min(level);
        if n >= min {
            if level > 0 {
                self.decrement_at(st, path, level)?;
            }
            return Ok(Deleted::Done);
        }

        // Underfull: try to take one entry from a sibling, else join with one.
        let rsib = sibling::<S, _>(st, at.buf, at.ptr, level, Side::Right)?;
        let lsib = sibling::<S, _>(st, at.buf, at.ptr, level, Side::Left)?;
        if rsib.is_none() && lsib.is_none() {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                "block below the root has no siblings",
            ));
        }
        // XFS works on a duplicate cursor here so the path above stays where it is.
        let mut t = path.clone();
        let mut rrecs = 0;
        let mut lrecs = 0;
        if rsib.is_some() {
            t[level].idx = n;
            if !self.increment_at(st, &mut t, level)? {
                return Err(corrupt_at::<S, _>(
                    st,
                    at.buf,
                    level,
                    "right sibling vanished",
                ));
            }
            let right = t[level];
            let rn = numrecs::<S>(st.bytes(right.buf));
            t[level].idx = rn;
            if rn > min && self.lshift(st, &mut t, level)? {
                // The right sibling gave us its first entry, appended after ours.
                if level > 0 {
                    self.decrement_at(st, path, level)?;
                }
                return Ok(Deleted::Done);
            }
            rrecs = numrecs::<S>(st.bytes(right.buf));
            if lsib.is_some() {
                // Back to our block, for the left sibling's turn.
                t[level].idx = 1;
                if !self.decrement_at(st, &mut t, level)? {
                    return Err(corrupt_at::<S, _>(
                        st,
                        right.buf,
                        level,
                        "left sibling vanished",
                    ));
                }
            }
        }
        if lsib.is_some() {
            t[level].idx = 1;
            if !self.decrement_at(st, &mut t, level)? {
                return Err(corrupt_at::<S, _>(
                    st,
                    at.buf,
                    level,
                    "left sibling vanished",
                ));
            }
            t[level].idx = 1;
            let left = t[level];
            let ln = numrecs::<S>(st.bytes(left.buf));
            if ln > min && self.rshift(st, &t, level)? {
                // The left sibling gave us its last entry, now our first.
                if level == 0 {
                    path[0].idx += 1;
                }
                return Ok(Deleted::Done);
            }
            lrecs = numrecs::<S>(st.bytes(left.buf));
        }

        // Join: everything of the right block of the pair moves into the left one.
        let max = g.max(level);
        let (lptr, lbuf, rptr, rbuf) = match (lsib, rsib) {
            (Some(l), _) if lrecs + n <= max => {
                let lbuf = self.read(st, l, level)?;
                (l, lbuf, at.ptr, at.buf)
            }
            (_, Some(r)) if rrecs + n <= max => {
                let rbuf = self.read(st, r, level)?;
                (at.ptr, at.buf, r, rbuf)
            }
            _ => {
                // Cannot happen with min = max / 2; XFS gives up quietly here too.
                if level > 0 {
                    self.decrement_at(st, path, level)?;
                }
                return Ok(Deleted::Done);
            }
        };
        if lbuf == rbuf {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                "block is its own sibling",
            ));
        }
        let lrecs = numrecs::<S>(st.bytes(lbuf));
        let rrecs = numrecs::<S>(st.bytes(rbuf));
        if lrecs + rrecs > max {
            return Err(corrupt_at::<S, _>(
                st,
                at.buf,
                level,
                "joined blocks would overflow",
            ));
        }
        self.tally.add(BtreeOp::Moves, rrecs);
        copy_entries::<S, _>(st, rbuf, 1, lbuf, lrecs + 1, rrecs, level);
        self.tally.inc(BtreeOp::Join);
        set_numrecs::<S, _>(st, lbuf, lrecs + rrecs);
        let far = sibling::<S, _>(st, rbuf, rptr, level, Side::Right)?.filter(|&f| f != lptr);
        set_sibling::<S, _>(st, lbuf, Side::Right, far.unwrap_or(S::LAYOUT.null_ptr()));
        if let Some(far) = far {
            let fbuf = self.read(st, far, level)?;
            set_sibling::<S, _>(st, fbuf, Side::Left, lptr);
        }
        self.free(st, S::kind(level as u16), rptr)?;
        if lptr != at.ptr {
            // Joined into the left sibling: the cursor's entry moved there.
            path[level] = Level {
                ptr: lptr,
                buf: lbuf,
                idx: at.idx + lrecs,
            };
        } else {
            // Joined the right sibling into ours: the entry to delete above is the right
            // block's, one step right of ours.
            self.increment_at(st, path, level + 1)?;
        }
        if level > 0 {
            path[level].idx = path[level].idx.saturating_sub(1);
        }
        Ok(Deleted::Joined)
    }

    /// Replace a node root that has a single child by that child (XFS `xfs_btree_kill_root`).
    fn kill_root(
        &mut self,
        st: &mut (impl BlockStore + ?Sized),
        path: &mut Path,
        level: usize,
    ) -> FsResult<()> {
        self.tally.inc(BtreeOp::Killroot);
        let root = path[level];
        let child = child_ptr::<S, _>(st, root.buf, level, 1)?;
        self.root = Root {
            ptr: child,
            level: level as u16 - 1,
        };
        self.free(st, S::kind(level as u16), root.ptr)?;
        path.truncate(level);
        Ok(())
    }
}
