//! The node form: data blocks (`XDD3`), a hash B+tree rooted at [`LEAF_FIRST`] and
//! free-index blocks (`dir3_free`) from [`FREE_FIRST`].
//!
//! **Hash tree.** The generic [`crate::fs::btree`] instantiated as [`DirHashSpec`]: records
//! (hash u32, address u32) keyed by (hash, address), `dir3_leafn` leaves and `da3_node`
//! nodes (layout in the btree module's docs), pointers are directory block numbers in
//! `LEAF_FIRST..FREE_FIRST`. [`HashStore`] is its block store: it maps pointers through the
//! directory's extent map, places new tree blocks after the last mapped index block, and
//! defers frees to the end of the operation. The root always stays at
//! [`LEAF_FIRST`], as XFS keeps the da root at the first leaf block: when the tree grows a
//! level (its new root lands elsewhere) or loses one (its only child becomes the root), the
//! mappings of `LEAF_FIRST` and the other block are swapped and the two pointers that named
//! them are fixed (`fixup_root`). A full block splits in two, as XFS's da btree does
//! (`xfs_da3_split`), without first passing an entry to a sibling as the AG trees do: an
//! insert dirties the one leaf it lands in, so a checkpoint relogs one leaf per create in a
//! big directory, not two. The tree's height is found without a stored field: one
//! mapped block in the index space means a single `leafn` root; otherwise the root is a
//! `da3_node` whose header gives its level. The da btree has no stat line in XFS, so its
//! operation counts are not reported.
//!
//! **Free-index block** (`xfs_dir3_free`):
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 4 | magic `XDF3` |
//! | 4 | 4 | CRC-32C of the whole block, this field taken as zero |
//! | 8 | 8 | blkno |
//! | 16 | 8 | lsn |
//! | 24 | 16 | filesystem UUID |
//! | 40 | 8 | owner: the directory's inode number |
//! | 48 | 4 | firstdb: first data block described (`index × 2016`) |
//! | 52 | 4 | nvalid: bests in use (the last one is never a hole) |
//! | 56 | 4 | nused: bests that are not holes |
//! | 60 | 4 | pad (0) |
//! | 64 | 2·2016 | bests\[i\]: largest free region of data block firstdb + i, `0xffff` for a hole; unused from nvalid on (zero in a new block), as in XFS |
//!
//! Free-index block `k` lives at directory block `FREE_FIRST + k`; it is freed when it
//! describes no data block (block 0, which holds `.` and `..`, keeps index block 0 alive).
//! A create checks the last data block's best first, then scans the bests for the first data
//! block with room (a few thousand 2-byte values for a million entries, never the data
//! blocks themselves), else takes the first hole or the block after the last.

use crate::fs::treestore::{TreeSpace, TreeStore};

use super::data::{self, Ent};
use super::leaf;
use super::{
    Defer, FREE_BESTS, FREE_FIRST, LEAF_FIRST, LEAF_SHRINK_SLACK, NULL_BEST, addr_of, hashname,
    read_block, split_addr,
};
use crate::fs::bmap;
use crate::fs::btree::kinds::{DirHashRec, DirHashSpec};
use crate::fs::btree::{BlockStore, BtreeSpec, BufId, Cursor, LookupMode, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u32, put_u16, put_u32};
use crate::fs::format::{BLOCK_SIZE, BlockKind, Daddr};
use crate::fs::inode::Extent;
use crate::fs::trans::{InodeId, Trans};

/// Offset of firstdb in a free-index block.
pub const FIRSTDB: usize = 48;
/// Offset of nvalid.
pub const NVALID: usize = 52;
/// Offset of nused.
pub const NUSED: usize = 56;
/// Offset of the bests.
pub const BESTS: usize = 64;

/// Offset of a Da-layout block's entry count.
const DA_COUNT: usize = 56;
/// Offset of a Da-layout block's level.
const DA_LEVEL: usize = 58;
/// Keys per `da3_node` (8-byte keys, 4-byte pointers after a 64-byte header).
const NODE_MAX: usize = (BLOCK_SIZE - 64) / 12;

/// Offset of child pointer `i` (1-based) in a `da3_node`.
fn node_ptr_off(i: usize) -> usize {
    64 + NODE_MAX * 8 + (i - 1) * 4
}

/// Where the hash tree's blocks live: directory blocks of the index space.
pub struct HashSpace<'t> {
    dp: InodeId,
    defer: Option<&'t mut Defer>,
    root_freed: bool,
}

/// The hash tree's block store: directory blocks of the index space, through the
/// transaction.
pub type HashStore<'t, 'a> = TreeStore<'t, 'a, HashSpace<'t>>;

impl<'t, 'a> TreeStore<'t, 'a, HashSpace<'t>> {
    /// A store that only reads (lookups, checks).
    pub fn reader(tp: &'t mut Trans<'a>, dp: InodeId) -> Self {
        TreeStore::new(
            tp,
            HashSpace {
                dp,
                defer: None,
                root_freed: false,
            },
        )
    }

    fn writer(tp: &'t mut Trans<'a>, dp: InodeId, defer: &'t mut Defer) -> Self {
        TreeStore::new(
            tp,
            HashSpace {
                dp,
                defer: Some(defer),
                root_freed: false,
            },
        )
    }

    fn bad(&self, kind: BlockKind, what: String) -> FsError {
        bad(self.tp, self.space.dp, kind, what)
    }
}

/// A corruption of directory `dp`'s hash tree.
fn bad(tp: &Trans, dp: InodeId, kind: BlockKind, what: String) -> FsError {
    FsError::Corrupt {
        kind,
        daddr: 0,
        what: format!("directory {}: {what}", tp.ino(dp)),
    }
}

impl TreeSpace for HashSpace<'_> {
    fn locate(&self, tp: &Trans, kind: BlockKind, ptr: u64) -> FsResult<Daddr> {
        if !(LEAF_FIRST..FREE_FIRST).contains(&ptr) {
            return Err(bad(
                tp,
                self.dp,
                kind,
                format!("hash tree pointer {ptr} is outside the index space"),
            ));
        }
        bmap::map_block(tp, self.dp, ptr)
            .map(Daddr::of_block)
            .ok_or_else(|| {
                bad(
                    tp,
                    self.dp,
                    kind,
                    format!("hash tree block {ptr} is not mapped"),
                )
            })
    }

    fn alloc(&mut self, tp: &mut Trans, _kind: BlockKind, _hint: u64) -> FsResult<(u64, Daddr)> {
        if self.defer.is_none() {
            return Err(FsError::Invalid(
                "allocation through a read-only hash store",
            ));
        }
        let lblk = index_hole(tp.ic(self.dp).fork.extents()).ok_or(FsError::NoSpace)?;
        let added = bmap::alloc_blocks(tp, self.dp, lblk, 1, false)?;
        let e = added.first().ok_or(FsError::NoSpace)?;
        Ok((lblk, Daddr::of_block(e.startblock)))
    }

    fn free(&mut self, tp: &mut Trans, _kind: BlockKind, ptr: u64, id: BufId) -> FsResult<()> {
        let Some(defer) = self.defer.as_deref_mut() else {
            return Err(FsError::Invalid("free through a read-only hash store"));
        };
        if ptr == LEAF_FIRST {
            // The root is being replaced by its only child: fixup_root swaps the mappings
            // and gives up the old root's block.
            tp.inval_buf(id);
            self.root_freed = true;
        } else {
            defer.drop_block(tp, id, ptr);
        }
        Ok(())
    }

    /// Freed index blocks are recycled through the operation's deferred frees.
    fn keeps_freed_buffer(&self) -> bool {
        true
    }
}

/// A directory block of the index space for a new tree block: the one after the last
/// mapped index block (found in O(log n)), else, once the space is used up to its end, the
/// first hole (`hint` is not needed: blocks are never read in address order).
fn index_hole(list: &[Extent]) -> Option<u64> {
    let i = list.partition_point(|e| e.startoff < FREE_FIRST);
    let after_last = list[..i]
        .last()
        .map_or(LEAF_FIRST, Extent::end)
        .max(LEAF_FIRST + 1);
    if after_last < FREE_FIRST {
        return Some(after_last);
    }
    let mut p = LEAF_FIRST + 1;
    while p < FREE_FIRST {
        match bmap::next_extent(list, p) {
            Some(e) if e.startoff <= p => p = e.end(),
            _ => return Some(p),
        }
    }
    None
}

/// Whether the index space holds more than the root block.
fn tree_has_children(list: &[Extent]) -> bool {
    matches!(bmap::next_extent(list, LEAF_FIRST + 1), Some(e) if e.startoff < FREE_FIRST)
}

/// The hash tree's root: at [`LEAF_FIRST`], a `leafn` when it is the only index block,
/// else a `da3_node` whose header gives the level.
pub fn tree_root(tp: &mut Trans, dp: InodeId) -> FsResult<Root> {
    if !tree_has_children(tp.ic(dp).fork.extents()) {
        return Ok(Root {
            ptr: LEAF_FIRST,
            level: 0,
        });
    }
    let mut st = HashStore::reader(tp, dp);
    let id = st.read(BlockKind::DaNode, LEAF_FIRST)?;
    let level = get_u16(st.bytes(id), DA_LEVEL);
    if level == 0 || level > 16 {
        return Err(FsError::Corrupt {
            kind: BlockKind::DaNode,
            daddr: st.daddr(id).0,
            what: format!("hash tree root claims level {level}"),
        });
    }
    Ok(Root {
        ptr: LEAF_FIRST,
        level,
    })
}

/// Read the hash tree's root block (held until commit).
pub fn read_root(tp: &mut Trans, dp: InodeId) -> FsResult<BufId> {
    let root = tree_root(tp, dp)?;
    HashStore::reader(tp, dp).read(DirHashSpec::kind(root.level), LEAF_FIRST)
}

/// Swap the mappings of directory blocks `a` and `b`.
fn swap_mappings(tp: &mut Trans, dp: InodeId, a: u64, b: u64) -> FsResult<()> {
    let missing = |x: u64| FsError::Corrupt {
        kind: BlockKind::DaNode,
        daddr: 0,
        what: format!("hash tree block {x} is not mapped"),
    };
    let pa = bmap::map_block(tp, dp, a).ok_or_else(|| missing(a))?;
    let pb = bmap::map_block(tp, dp, b).ok_or_else(|| missing(b))?;
    let ext = |startoff, startblock| Extent {
        startoff,
        startblock,
        blockcount: 1,
        unwritten: false,
    };
    bmap::set_mapping(tp, dp, ext(a, pb), false)?;
    bmap::set_mapping(tp, dp, ext(b, pa), false)
}

/// Replace pointer value `from` by `to` in the 4-byte fields at `offs` of block `id`.
fn repoint(st: &mut HashStore, id: BufId, offs: &[usize], from: u64, to: u64) {
    for &off in offs {
        if u64::from(get_u32(st.bytes(id), off)) == from {
            put_u32(st.bytes_mut(id), off, to as u32);
            st.log_range(id, off, off + 3);
        }
    }
}

/// Keep the root at [`LEAF_FIRST`] after a cursor operation moved it from `before` to
/// `after` (see the module docs).
fn fixup_root(st: &mut HashStore, before: Root, after: Root) -> FsResult<()> {
    if after.ptr == LEAF_FIRST {
        return Ok(());
    }
    let other = after.ptr;
    swap_mappings(st.tp, st.space.dp, LEAF_FIRST, other)?;
    if st.space.root_freed {
        // Lost a level: LEAF_FIRST now maps the only child's block, `other` the dead root's.
        st.space.root_freed = false;
        if let Some(d) = st.space.defer.as_deref_mut() {
            d.unmap.push(other);
        }
        return Ok(());
    }
    // Grew a level: LEAF_FIRST now maps the new root, `other` the old root, which is one of
    // its children. The new root's pointer and the old root's sibling's back pointer still
    // say LEAF_FIRST.
    let root = st.read(DirHashSpec::kind(after.level), LEAF_FIRST)?;
    let n = usize::from(get_u16(st.bytes(root), DA_COUNT)).min(NODE_MAX);
    let offs: Vec<usize> = (1..=n).map(node_ptr_off).collect();
    repoint(st, root, &offs, LEAF_FIRST, other);
    let kind = DirHashSpec::kind(before.level);
    let old = st.read(kind, other)?;
    let b = st.bytes(old);
    let sibs = [u64::from(get_u32(b, 0)), u64::from(get_u32(b, 4))];
    for s in sibs.into_iter().filter(|&s| s != 0) {
        let sid = st.read(kind, s)?;
        repoint(st, sid, &[0, 4], LEAF_FIRST, other);
    }
    Ok(())
}

/// A found entry: its data block, the block's buffer and the entry.
struct Hit {
    db: u64,
    did: BufId,
    ent: Ent,
}

/// Position `cur` on `name`'s hash record and return the entry; `None` if absent.
fn find(st: &mut HashStore, cur: &mut Cursor<DirHashSpec>, name: &[u8]) -> FsResult<Option<Hit>> {
    let h = hashname(name);
    if !cur.lookup(st, &(h, 0), LookupMode::Ge)? {
        return Ok(None);
    }
    loop {
        let Some(rec) = cur.get(st)? else {
            return Ok(None);
        };
        if rec.hash != h {
            return Ok(None);
        }
        let (db, off) = split_addr(rec.addr);
        if db >= LEAF_FIRST {
            return Err(st.bad(
                BlockKind::DirLeafN,
                format!(
                    "hash record address {:#x} is outside the data space",
                    rec.addr
                ),
            ));
        }
        let did = read_block(st.tp, st.space.dp, db, BlockKind::DirData)?;
        let b = st.tp.buf(did);
        let e = data::entry_at(b, off, BLOCK_SIZE).map_err(|w| {
            data::corrupt(
                st.tp,
                did,
                BlockKind::DirData,
                format!("hash record {:#x}: {w}", rec.addr),
            )
        })?;
        if e.name(b) == name {
            return Ok(Some(Hit { db, did, ent: e }));
        }
        if !cur.increment(st)? {
            return Ok(None);
        }
    }
}

/// Look `name` up.
pub fn lookup(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<Option<u64>> {
    let root = tree_root(tp, dp)?;
    let ino = tp.ino(dp);
    let mut st = HashStore::reader(tp, dp);
    let mut cur = Cursor::<DirHashSpec>::new(root, ino);
    Ok(find(&mut st, &mut cur, name)?.map(|h| h.ent.ino))
}

/// Point `name` at `ino`; returns the old inode.
pub fn replace(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, ftype: u8) -> FsResult<u64> {
    let root = tree_root(tp, dp)?;
    let owner = tp.ino(dp);
    let mut st = HashStore::reader(tp, dp);
    let mut cur = Cursor::<DirHashSpec>::new(root, owner);
    let hit = find(&mut st, &mut cur, name)?.ok_or(FsError::NotFound)?;
    data::set_ino(tp, hit.did, &hit.ent, ino, ftype);
    Ok(hit.ent.ino)
}

/// Only the dots left? (Empty data blocks are always freed, so only block 0 can be left.)
pub fn is_empty(tp: &mut Trans, dp: InodeId) -> FsResult<bool> {
    if super::data_end(tp.ic(dp).fork.extents()) > 1 {
        return Ok(false);
    }
    let did = read_block(tp, dp, 0, BlockKind::DirData)?;
    let entries = super::block::entries_of(tp, did, BlockKind::DirData, BLOCK_SIZE)?;
    Ok(entries.is_empty())
}

/// A free-index block held by the transaction.
#[derive(Debug, Clone, Copy)]
pub struct FreeBlk {
    /// Its buffer.
    pub id: BufId,
    /// Its index (directory block `FREE_FIRST + f`).
    pub f: u64,
    /// Bests in use.
    pub nvalid: usize,
    /// Bests that are not holes.
    pub nused: usize,
}

/// Best `i` of a free-index block.
pub fn free_best(b: &[u8], i: usize) -> u16 {
    get_u16(b, BESTS + 2 * i)
}

/// The index of the first of `bests` (big-endian u16s) that is at least `size`: a data
/// block with room, or a hole. Looks at 16 at a time without branching, which the compiler
/// vectorizes: in a big directory whose blocks are all full, every new data block scans
/// all the bests (tens of thousands at a few million entries), as XFS's
/// `xfs_dir2_node_find_freeblk` does.
fn first_at_least(bests: &[u8], size: u16) -> Option<usize> {
    const LANES: usize = 16;
    let hit = |c: &[u8]| u16::from_be_bytes([c[0], c[1]]) >= size;
    let mut chunks = bests.chunks_exact(2 * LANES);
    let mut base = 0;
    for chunk in &mut chunks {
        if chunk.chunks_exact(2).fold(false, |any, c| any | hit(c)) {
            return chunk.chunks_exact(2).position(hit).map(|i| base + i);
        }
        base += LANES;
    }
    chunks
        .remainder()
        .chunks_exact(2)
        .position(hit)
        .map(|i| base + i)
}

/// Read free-index block `f`.
pub fn read_free(tp: &mut Trans, dp: InodeId, f: u64) -> FsResult<FreeBlk> {
    let id = read_block(tp, dp, FREE_FIRST + f, BlockKind::DirFree)?;
    free_blk(tp, id, f)
}

/// [`read_free`], or `None` when free-index block `f` is a hole.
fn try_read_free(tp: &mut Trans, dp: InodeId, f: u64) -> FsResult<Option<FreeBlk>> {
    match super::try_read_block(tp, dp, FREE_FIRST + f, BlockKind::DirFree)? {
        Some(id) => free_blk(tp, id, f).map(Some),
        None => Ok(None),
    }
}

/// Check the header of held free-index block `id` (number `f`) and describe it.
fn free_blk(tp: &Trans, id: BufId, f: u64) -> FsResult<FreeBlk> {
    let b = tp.buf(id);
    let firstdb = u64::from(get_u32(b, FIRSTDB));
    let nvalid = get_u32(b, NVALID) as usize;
    let nused = get_u32(b, NUSED) as usize;
    if firstdb != f * FREE_BESTS || nvalid > FREE_BESTS as usize || nused > nvalid {
        return Err(data::corrupt(
            tp,
            id,
            BlockKind::DirFree,
            format!(
                "free index {f}: firstdb {firstdb}, nvalid {nvalid}, nused {nused} are impossible"
            ),
        ));
    }
    Ok(FreeBlk {
        id,
        f,
        nvalid,
        nused,
    })
}

/// A new free-index block `f`, describing no data block yet.
fn new_free(tp: &mut Trans, dp: InodeId, f: u64) -> FsResult<FreeBlk> {
    let id = super::new_block(tp, dp, FREE_FIRST + f, BlockKind::DirFree)?;
    let b = tp.buf_mut(id);
    put_u32(b, FIRSTDB, (f * FREE_BESTS) as u32);
    put_u32(b, NVALID, 0);
    put_u32(b, NUSED, 0);
    put_u32(b, 60, 0);
    // Only the header: bests from nvalid on are unused (as XFS's), and set as nvalid grows
    // (see set_free_best). Filling all 2016 with holes made the whole block part of every
    // later log item of it.
    tp.log_buf(id, FIRSTDB, BESTS - 1);
    Ok(FreeBlk {
        id,
        f,
        nvalid: 0,
        nused: 0,
    })
}

/// Record data block `db`'s new best (`None`: the block is gone). Gives the free-index block
/// up when it describes nothing any more.
fn set_free_best(tp: &mut Trans, defer: &mut Defer, fr: &mut FreeBlk, db: u64, v: Option<u16>) {
    let i = (db - fr.f * FREE_BESTS) as usize;
    let was_used = i < fr.nvalid && free_best(tp.buf(fr.id), i) != NULL_BEST;
    if v.is_some() && i > fr.nvalid {
        // Bests between the old end and this one become holes: past nvalid they meant
        // nothing.
        let b = tp.buf_mut(fr.id);
        for h in fr.nvalid..i {
            put_u16(b, BESTS + 2 * h, NULL_BEST);
        }
        tp.log_buf(fr.id, BESTS + 2 * fr.nvalid, BESTS + 2 * i - 1);
    }
    let b = tp.buf_mut(fr.id);
    put_u16(b, BESTS + 2 * i, v.unwrap_or(NULL_BEST));
    tp.log_buf(fr.id, BESTS + 2 * i, BESTS + 2 * i + 1);
    match v {
        Some(_) => {
            if !was_used {
                fr.nused += 1;
            }
            fr.nvalid = fr.nvalid.max(i + 1);
        }
        None => {
            if was_used {
                fr.nused -= 1;
            }
            while fr.nvalid > 0 && free_best(tp.buf(fr.id), fr.nvalid - 1) == NULL_BEST {
                fr.nvalid -= 1;
            }
        }
    }
    let b = tp.buf_mut(fr.id);
    put_u32(b, NVALID, fr.nvalid as u32);
    put_u32(b, NUSED, fr.nused as u32);
    tp.log_buf(fr.id, NVALID, NUSED + 3);
    if fr.nused == 0 {
        defer.drop_block(tp, fr.id, FREE_FIRST + fr.f);
    }
}

/// Mapped free-index blocks (their indexes), in order.
fn free_indexes(list: &[Extent]) -> Vec<u64> {
    let i = list.partition_point(|e| e.end() <= FREE_FIRST);
    list[i..]
        .iter()
        .flat_map(|e| e.startoff.max(FREE_FIRST)..e.end())
        .map(|b| b - FREE_FIRST)
        .collect()
}

/// The last mapped free-index block (its index), without listing the others.
fn last_free_index(list: &[Extent]) -> Option<u64> {
    list.last()
        .filter(|e| e.end() > FREE_FIRST)
        .map(|e| e.end() - 1 - FREE_FIRST)
}

/// Where a new entry goes: a data block with room in it, described by the free-index block
/// that said so (held, read once: XFS's `xfs_dir2_node_addname_int` keeps that buffer too),
/// or a new data block.
enum Space {
    /// Existing data block `db`, which free-index block `fr` lists with room.
    Existing { db: u64, fr: FreeBlk },
    /// Data block `db` is to be made.
    New { db: u64 },
}

/// Choose a data block for an entry of `size` bytes.
fn find_space(tp: &mut Trans, dp: InodeId, size: u16) -> FsResult<Space> {
    let usable = |v: u16| v != NULL_BEST && v >= size;
    // The last data block is the usual answer: find it without listing every free-index
    // block (a create in a big directory did that, allocating, every time).
    let Some(last_f) = last_free_index(tp.ic(dp).fork.extents()) else {
        return Err(super::bad_dir(
            tp,
            dp,
            "node form without a free index".into(),
        ));
    };
    let last = read_free(tp, dp, last_f)?;
    if last.nvalid > 0 && usable(free_best(tp.buf(last.id), last.nvalid - 1)) {
        let db = last_f * FREE_BESTS + last.nvalid as u64 - 1;
        return Ok(Space::Existing { db, fr: last });
    }
    let frees = free_indexes(tp.ic(dp).fork.extents());
    let mut hole = None;
    let mut expect = 0u64;
    for &f in &frees {
        if f > expect && hole.is_none() {
            // A whole free-index block is missing: its data blocks are all holes.
            hole = Some(expect * FREE_BESTS);
        }
        expect = f + 1;
        let fr = read_free(tp, dp, f)?;
        let b = tp.buf(fr.id);
        let bests = &b[BESTS..BESTS + 2 * fr.nvalid];
        let mut i = 0;
        while let Some(j) = first_at_least(&bests[2 * i..], size) {
            i += j;
            let v = free_best(b, i);
            if usable(v) {
                let db = f * FREE_BESTS + i as u64;
                return Ok(Space::Existing { db, fr });
            }
            if hole.is_none() {
                // A hole (NULL_BEST is above every entry size).
                hole = Some(f * FREE_BESTS + i as u64);
            }
            i += 1;
        }
        if f != last_f && fr.nvalid < FREE_BESTS as usize && hole.is_none() {
            hole = Some(f * FREE_BESTS + fr.nvalid as u64);
        }
    }
    Ok(Space::New {
        db: hole.unwrap_or(last_f * FREE_BESTS + last.nvalid as u64),
    })
}

/// Add an entry.
pub fn add(
    tp: &mut Trans,
    dp: InodeId,
    defer: &mut Defer,
    name: &[u8],
    ino: u64,
    ftype: u8,
) -> FsResult<()> {
    let owner = tp.ino(dp);
    let size = data::entsize(name.len()) as u16;
    let (db, did, mut fr) = match find_space(tp, dp, size)? {
        Space::Existing { db, fr } => (db, read_block(tp, dp, db, BlockKind::DirData)?, fr),
        Space::New { db } => {
            let did = super::new_data_block(tp, dp, db)?;
            // The new block's free-index block may itself be a hole: one mapping lookup
            // either way, as XFS's `xfs_dir2_free_try_read`.
            let f = db / FREE_BESTS;
            let fr = match try_read_free(tp, dp, f)? {
                Some(fr) => fr,
                None => new_free(tp, dp, f)?,
            };
            (db, did, fr)
        }
    };
    let (off, v) = leaf::place(tp, did, name, ino, ftype)?;
    set_free_best(tp, defer, &mut fr, db, Some(v));
    let root = tree_root(tp, dp)?;
    let mut st = HashStore::writer(tp, dp, defer);
    let mut cur = Cursor::<DirHashSpec>::new(root, owner);
    let rec = DirHashRec {
        hash: hashname(name),
        addr: addr_of(db, off),
    };
    cur.insert(&mut st, &rec).map_err(|e| match e {
        // The address was free a moment ago: a record for it means the tree is damaged.
        FsError::Exists => st.bad(
            BlockKind::DirLeafN,
            format!("hash tree already indexes address {:#x}", rec.addr),
        ),
        e => e,
    })?;
    fixup_root(&mut st, root, cur.root())
}

/// Remove `name`; frees its data block if it empties, converts to leaf form when the tree
/// is a single leaf and everything fits one leaf block with slack.
pub fn remove(tp: &mut Trans, dp: InodeId, defer: &mut Defer, name: &[u8]) -> FsResult<u64> {
    let owner = tp.ino(dp);
    let root = tree_root(tp, dp)?;
    let (hit, mut fr, after) = {
        let mut st = HashStore::writer(tp, dp, defer);
        let mut cur = Cursor::<DirHashSpec>::new(root, owner);
        let hit = find(&mut st, &mut cur, name)?.ok_or(FsError::NotFound)?;
        // Read the free index before changing anything, so a bad one fails cleanly.
        let fr = read_free(st.tp, st.space.dp, hit.db / FREE_BESTS)?;
        cur.delete(&mut st)?;
        let after = cur.root();
        fixup_root(&mut st, root, after)?;
        (hit, fr, after)
    };
    data::release(
        tp,
        hit.did,
        BlockKind::DirData,
        hit.ent.off,
        hit.ent.size,
        BLOCK_SIZE,
    )?;
    let v = data::refresh_bestfree(tp, hit.did, BlockKind::DirData, BLOCK_SIZE)?;
    if v == data::EMPTY && hit.db != 0 {
        defer.drop_block(tp, hit.did, hit.db);
        set_free_best(tp, defer, &mut fr, hit.db, None);
    } else {
        set_free_best(tp, defer, &mut fr, hit.db, Some(v));
    }
    if after.level == 0 {
        maybe_to_leaf(tp, dp, defer)?;
    }
    Ok(hit.ent.ino)
}

/// Shrink to leaf form when the tree is one `leafn` block and only free-index block 0 is
/// left, and the leaf block would keep [`LEAF_SHRINK_SLACK`] bytes free.
fn maybe_to_leaf(tp: &mut Trans, dp: InodeId, defer: &mut Defer) -> FsResult<()> {
    let frees = free_indexes(tp.ic(dp).fork.extents());
    if frees
        .iter()
        .any(|&f| f != 0 && !defer.dropping(FREE_FIRST + f))
    {
        return Ok(());
    }
    let rid = {
        let mut st = HashStore::reader(tp, dp);
        st.read(BlockKind::DirLeafN, LEAF_FIRST)?
    };
    let n = usize::from(get_u16(tp.buf(rid), DA_COUNT));
    let fr = read_free(tp, dp, 0)?;
    if leaf::ENTS + 8 * n + 2 * fr.nvalid + LEAF_SHRINK_SLACK > leaf::BESTCOUNT {
        return Ok(());
    }
    let entries = tp.buf(rid)[leaf::ENTS..leaf::ENTS + 8 * n].to_vec();
    let b = tp.buf(fr.id);
    let bests: Vec<u16> = (0..fr.nvalid).map(|i| free_best(b, i)).collect();
    let lid = super::move_block(tp, dp, defer, LEAF_FIRST, rid, BlockKind::DirLeaf1)?;
    let b = tp.buf_mut(lid);
    put_u32(b, 0, 0);
    put_u32(b, 4, 0);
    tp.log_buf(lid, 0, 7);
    leaf::write_leaf(tp, lid, &entries, &bests);
    defer.drop_block(tp, fr.id, FREE_FIRST);
    Ok(())
}

/// Convert a leaf-form directory to node form: the bests move to free-index block 0 and the
/// leaf block becomes the hash tree's single `leafn` root.
pub fn from_leaf(tp: &mut Trans, dp: InodeId, defer: &mut Defer) -> FsResult<()> {
    let lf = leaf::read(tp, dp)?;
    let b = tp.buf(lf.id);
    let entries = b[leaf::ENTS..leaf::ENTS + 8 * lf.n].to_vec();
    let bests: Vec<u16> = (0..lf.nb).map(|db| leaf::best(b, lf.nb, db)).collect();
    if bests.len() > FREE_BESTS as usize {
        return Err(data::corrupt(
            tp,
            lf.id,
            BlockKind::DirLeaf1,
            format!("{} bests do not fit one free-index block", bests.len()),
        ));
    }
    let fr = new_free(tp, dp, 0)?;
    let nid = super::move_block(tp, dp, defer, LEAF_FIRST, lf.id, BlockKind::DirLeafN)?;
    let b = tp.buf_mut(nid);
    put_u32(b, 0, 0);
    put_u32(b, 4, 0);
    put_u16(b, DA_COUNT, lf.n as u16);
    put_u16(b, DA_LEVEL, 0);
    put_u32(b, 60, 0);
    b[leaf::ENTS..leaf::ENTS + entries.len()].copy_from_slice(&entries);
    b[leaf::ENTS + entries.len()..].fill(0);
    tp.log_buf(nid, 0, BLOCK_SIZE - 1);
    let b = tp.buf_mut(fr.id);
    let mut nused = 0u32;
    for (i, &v) in bests.iter().enumerate() {
        put_u16(b, BESTS + 2 * i, v);
        nused += u32::from(v != NULL_BEST);
    }
    put_u32(b, NVALID, bests.len() as u32);
    put_u32(b, NUSED, nused);
    tp.log_buf(fr.id, NVALID, BESTS + 2 * bests.len().max(1) - 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::first_at_least;
    use crate::rng::SplitMix64;

    #[test]
    fn first_at_least_agrees_with_a_plain_scan() {
        let mut rng = SplitMix64::new(7);
        for trial in 0..2000 {
            let n = rng.index(80);
            let size = 8 + rng.below(300) as u16;
            // Mostly full blocks (small bests), now and then a hole or a block with room.
            let bests: Vec<u16> = (0..n)
                .map(|_| match rng.below(40) {
                    0 => 0xffff,
                    1 => size + rng.below(100) as u16,
                    _ => rng.below(u64::from(size)) as u16,
                })
                .collect();
            let bytes: Vec<u8> = bests.iter().flat_map(|v| v.to_be_bytes()).collect();
            let want = bests.iter().position(|&v| v >= size);
            assert_eq!(
                first_at_least(&bytes, size),
                want,
                "trial {trial}: {bests:?}"
            );
        }
    }
}
