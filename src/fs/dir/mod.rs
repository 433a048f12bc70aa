//! Directories: names to inode numbers, in the four forms of XFS's version 3 directories.
//!
//! A directory grows through four on-disk forms and shrinks back through them, each chosen so
//! that the common case stays cheap at its size (XFS `xfs_dir2_*.c`; the code here is our own):
//!
//! 1. **Shortform** ([`sf`]): the entries live in the inode's literal area (≤ 336 bytes).
//!    `.` is implicit and `..` is a header field. Lookups scan the few entries.
//! 2. **Block** ([`block`]): one 4 KiB block (directory block 0, `XDB3`) holding the entries
//!    ([`data`] format) followed by a hash leaf (hash, address) sorted by name hash and a tail
//!    (count, stale). Lookups binary-search the leaf.
//! 3. **Leaf** ([`leaf`]): data blocks (`XDD3`) at directory blocks 0.., and one leaf block
//!    (`dir3_leaf1`) at [`LEAF_FIRST`] holding every hash entry plus *bests*, the largest free
//!    region of each data block, so a create finds a block with room without reading them.
//! 4. **Node** ([`node`]): when the leaf block overflows, the hash entries move into a B+tree
//!    (the generic [`crate::fs::btree`] with [`DirHashSpec`](crate::fs::btree::kinds::DirHashSpec):
//!    `dir3_leafn` leaves, `da3_node` nodes, rooted at [`LEAF_FIRST`]) and the bests into
//!    free-index blocks (`dir3_free`) at [`FREE_FIRST`].., 2016 data blocks each. Lookups are
//!    O(log n): hash the name, find the first (hash, 0) or greater, walk the entries with equal
//!    hashes comparing names in the data blocks.
//!
//! ## The directory's address space
//! Directory blocks are file blocks of the directory's data fork, mapped by [`bmap`]. As in
//! XFS, the space is split in three: data blocks from 0, the hash index from 32 GiB
//! ([`LEAF_FIRST`]), free-index blocks from 64 GiB ([`FREE_FIRST`]). Which form a directory
//! is in follows from its last mapped block: block 0 (block form), [`LEAF_FIRST`] (leaf) or a
//! free-index block (node). An entry's *address* is its data-space byte offset divided by 8.
//! `di.size` is the shortform's byte count, or the end of the last data block.
//!
//! ## Transitions
//! - shortform → block when an entry no longer fits the literal area; block → shortform when
//!   a removal leaves entries whose shortform is at least [`SF_SHRINK_SLACK`] bytes below the
//!   limit (hysteresis: a directory hovering at the limit does not convert on every create);
//! - block → leaf when an entry (and its hash entry) no longer fits the block; leaf → block
//!   when only data block 0 is left and its final free region holds the hash leaf with
//!   [`BLOCK_SHRINK_SLACK`] bytes to spare;
//! - leaf → node when the leaf block has no room for another hash entry (or best); node →
//!   leaf when the hash tree is a single leaf, only the first free-index block is left, and
//!   the leaf block would have [`LEAF_SHRINK_SLACK`] bytes to spare.
//!
//! A create converts as many times as it needs to fit (shortform → block → leaf → node); a
//! removal converts at most one step, except that leaf → block goes on to shortform when that
//! fits too, as XFS's `xfs_dir2_leaf_to_block` does.
//!
//! Removing entries compacts nothing, but free space merges with its neighbours and empty
//! data blocks (other than block 0, which holds `.` and `..`) are freed at once.
//!
//! ## Block kinds never change in place
//! The buffer cache types each cached block by kind, and a transaction cannot re-read a block
//! it invalidated. So a conversion that changes a block's kind (block ↔ data block 0,
//! leaf1 ↔ leafn at [`LEAF_FIRST`]) writes the new form into a newly allocated block and
//! remaps the directory block to it; the hash tree keeps its root at [`LEAF_FIRST`] by
//! swapping the mappings of the old and new roots when it grows or shrinks a level, so
//! every physical block keeps its kind for as long as it belongs to the directory.
//!
//! ## Frees come last
//! labfs has no busy-extent tracking: a block freed in a transaction could be handed out
//! again by the allocator in the same transaction, while the transaction still holds the
//! freed block's (invalidated) buffer. Every directory operation therefore collects the
//! blocks it frees ([`Defer`]) and unmaps and frees them at its end, after its last
//! allocation, as XFS defers extent frees to the end of a transaction. Within one operation
//! that is enough. Two operations in one transaction (a rename: add, then remove) are safe
//! as long as the remove does not allocate after the add freed: only shrinking conversions
//! allocate in a remove, and the shrink slacks are larger than any single entry, so a
//! remove cannot undo the conversion an add in the same transaction just made.
//!
//! ## Locking and logging
//! `dp` is joined exclusive for changes, shared (or exclusive) for lookups, readdir and
//! check; directory blocks are locked through the transaction under the directory's lock
//! and held until it commits. Several readers may share a directory, so they take its blocks
//! in one order: index blocks first (the leaf block or the tree root, which serialises every
//! reader that uses the index, then tree blocks downwards and rightwards), data blocks in
//! ascending block order. Lookups meet that order naturally: entries with equal hashes are
//! sorted by address, so the candidates' data blocks come in ascending order; readdir reads
//! only data blocks, in order; the checker takes the index root before the data blocks.
//! Every changed byte range is logged with [`Trans::log_buf`]; fork and size changes with
//! [`Trans::log_inode`].
//!
//! ## Corruption
//! Every block is read through the verifying buffer cache (CRC, magic), then its header is
//! checked here (self address, UUID, owner); every length and offset inside it is checked
//! before use. Failures are typed [`FsError`]s naming the block kind and address; other
//! blocks of the directory stay usable. `..` is read straight from data block 0 (offset 80),
//! so a damaged hash index does not hide a directory's parent. [`check()`] reports every
//! problem instead of stopping.

pub mod block;
mod check;
pub mod data;
pub mod hash;
pub mod leaf;
pub mod node;
pub mod sf;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::fs::alloc::{self, AllocReq};
use crate::fs::bmap;
use crate::fs::btree::BufId;
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::fs::format::{BLOCK_SHIFT, BLOCK_SIZE, BlockKind, Daddr, Magic, NAME_MAX};
use crate::fs::inode::{DataFork, Extent};
use crate::fs::stats::Stat;
use crate::fs::trans::{InodeId, Trans};
use crate::fs::vfs::{DirEntry, FileKind};

pub use hash::hashname;

/// First directory block of the hash index (leaf1 block, or the hash tree's root): 32 GiB
/// into the directory's address space, as XFS's `XFS_DIR2_LEAF_OFFSET`.
pub const LEAF_FIRST: u64 = (32u64 << 30) >> BLOCK_SHIFT;
/// First free-index block: 64 GiB into the address space (`XFS_DIR2_FREE_OFFSET`).
pub const FREE_FIRST: u64 = (64u64 << 30) >> BLOCK_SHIFT;
/// Data blocks described by one free-index block.
pub const FREE_BESTS: u64 = ((BLOCK_SIZE - 64) / 2) as u64;
/// Free-index blocks needed to describe the whole data space.
pub const MAX_FREE_BLOCKS: u64 = LEAF_FIRST.div_ceil(FREE_BESTS);
/// A best-free value meaning "no data block here" (`NULLDATAOFF`).
pub const NULL_BEST: u16 = 0xffff;

/// A block-form directory shrinks to shortform only if its shortform would be at least this
/// many bytes below the literal area's size.
pub const SF_SHRINK_SLACK: usize = 48;
/// A leaf-form directory shrinks to block form only if the hash leaf fits data block 0's
/// final free region with this many bytes to spare. More than the largest entry (272
/// bytes) plus one hash entry, so that no single removal can undo the conversion an add
/// just made: a rename (add, then remove, in one transaction) never converts both ways.
pub const BLOCK_SHRINK_SLACK: usize = 288;
/// A node-form directory shrinks to leaf form only if the leaf block would keep this many
/// bytes free.
pub const LEAF_SHRINK_SLACK: usize = 256;

/// The four forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Entries inside the inode.
    Short,
    /// One block with entries and hash leaf.
    Block,
    /// Data blocks plus one leaf block.
    Leaf,
    /// Data blocks, a hash B+tree and free-index blocks.
    Node,
}

/// The `Corrupt` error for the directory inode itself.
fn bad_dir(tp: &Trans, dp: InodeId, what: String) -> FsError {
    let ino = tp.ino(dp);
    FsError::Corrupt {
        kind: BlockKind::Inode,
        daddr: tp.fs().geo.ino_location(ino).0.0,
        what: format!("directory {ino}: {what}"),
    }
}

/// Which form a directory is in (from its fork and its last mapped block).
pub fn form(tp: &Trans, dp: InodeId) -> FsResult<Form> {
    let ic = tp.ic(dp);
    if !ic.is_dir() {
        return Err(FsError::NotDir);
    }
    match &ic.fork {
        DataFork::Local(_) => Ok(Form::Short),
        fork => match fork.extents().last().map(Extent::end) {
            Some(1) => Ok(Form::Block),
            Some(end) if end == LEAF_FIRST + 1 => Ok(Form::Leaf),
            Some(end) if end > FREE_FIRST && end <= FREE_FIRST + MAX_FREE_BLOCKS => Ok(Form::Node),
            other => Err(bad_dir(
                tp,
                dp,
                format!("no directory form ends its address space at block {other:?}"),
            )),
        },
    }
}

/// The address of the entry at byte `off` of data block `db`.
pub fn addr_of(db: u64, off: usize) -> u32 {
    (((db << BLOCK_SHIFT) | off as u64) >> 3) as u32
}

/// The data block and byte offset an address names.
pub fn split_addr(addr: u32) -> (u64, usize) {
    let byte = u64::from(addr) << 3;
    (
        byte >> BLOCK_SHIFT,
        (byte & (BLOCK_SIZE as u64 - 1)) as usize,
    )
}

/// Where the self-description fields of a directory block kind sit: (blkno, uuid, owner).
/// Data, block and free blocks use `xfs_dir3_blk_hdr`; leaf and tree blocks
/// `xfs_da3_blkinfo`.
fn hdr_layout(kind: BlockKind) -> (usize, usize, usize) {
    match kind {
        BlockKind::DirLeaf1 | BlockKind::DirLeafN | BlockKind::DaNode => (16, 32, 48),
        _ => (8, 24, 40),
    }
}

/// Check a directory block's magic, self address, UUID and owner.
pub fn check_hdr(
    b: &[u8],
    kind: BlockKind,
    daddr: Daddr,
    uuid: &[u8; 16],
    owner: u64,
) -> Result<(), String> {
    let magic_ok = match kind.magic() {
        Magic::U32(v) => get_u32(b, 0) == v,
        Magic::U16 { offset, value } => get_u16(b, offset) == value,
    };
    if !magic_ok {
        return Err("bad magic number".into());
    }
    let (blkno, uu, own) = hdr_layout(kind);
    let found = get_u64(b, blkno);
    if found != daddr.0 {
        return Err(format!("blkno {found} is not the block's address {daddr}"));
    }
    if b[uu..uu + 16] != uuid[..] {
        return Err("filesystem UUID mismatch".into());
    }
    let found = get_u64(b, own);
    if found != owner {
        return Err(format!("owner {found}, expected directory {owner}"));
    }
    Ok(())
}

/// Write a directory block's magic, self address, UUID and owner.
fn write_hdr(tp: &mut Trans, id: BufId, kind: BlockKind, owner: u64) {
    let daddr = tp.buf_daddr(id);
    let uuid = tp.fs().uuid;
    let (blkno, uu, own) = hdr_layout(kind);
    let b = tp.buf_mut(id);
    match kind.magic() {
        Magic::U32(v) => put_u32(b, 0, v),
        Magic::U16 { offset, value } => put_u16(b, offset, value),
    }
    put_u64(b, blkno, daddr.0);
    b[uu..uu + 16].copy_from_slice(&uuid);
    put_u64(b, own, owner);
    tp.log_buf(id, 0, own + 7);
}

/// Read directory block `lblk` of `dp` as `kind`, verified (CRC and magic by the cache,
/// self-description here).
pub fn read_block(tp: &mut Trans, dp: InodeId, lblk: u64, kind: BlockKind) -> FsResult<BufId> {
    try_read_block(tp, dp, lblk, kind)?
        .ok_or_else(|| bad_dir(tp, dp, format!("{kind} block {lblk} is not mapped")))
}

/// [`read_block`] for a block that may be a hole (XFS's "may not exist" reads, as of a free
/// index block): `None` for a hole, after one mapping lookup either way.
pub fn try_read_block(
    tp: &mut Trans,
    dp: InodeId,
    lblk: u64,
    kind: BlockKind,
) -> FsResult<Option<BufId>> {
    let ino = tp.ino(dp);
    let Some(phys) = bmap::map_block(tp, dp, lblk) else {
        return Ok(None);
    };
    let daddr = Daddr::of_block(phys);
    let id = tp.read_buf(daddr, kind, BLOCK_SIZE)?;
    check_hdr(tp.buf(id), kind, daddr, &tp.fs().uuid, ino).map_err(|w| FsError::Corrupt {
        kind,
        daddr: daddr.0,
        what: format!("directory {ino} block {lblk}: {w}"),
    })?;
    Ok(Some(id))
}

/// Allocate directory block `lblk` (a hole) and start it as an empty block of `kind` with
/// its header written.
fn new_block(tp: &mut Trans, dp: InodeId, lblk: u64, kind: BlockKind) -> FsResult<BufId> {
    let ino = tp.ino(dp);
    let added = bmap::alloc_blocks(tp, dp, lblk, 1, false)?;
    let Some(e) = added.first() else {
        return Err(FsError::NoSpace);
    };
    let id = tp.new_buf(Daddr::of_block(e.startblock), kind, BLOCK_SIZE)?;
    write_hdr(tp, id, kind, ino);
    Ok(id)
}

/// A new, empty data block at directory block `db`.
fn new_data_block(tp: &mut Trans, dp: InodeId, db: u64) -> FsResult<BufId> {
    if db >= LEAF_FIRST {
        return Err(FsError::NoSpace);
    }
    let id = new_block(tp, dp, db, BlockKind::DirData)?;
    data::init_free_space(tp, id, BlockKind::DirData, BLOCK_SIZE)?;
    Ok(id)
}

/// Give directory block `lblk` a newly allocated physical block holding a copy of `old`'s
/// bytes, to be rewritten as `kind`; the old block is invalidated and freed at the end of
/// the operation. (See "Block kinds never change in place".)
fn move_block(
    tp: &mut Trans,
    dp: InodeId,
    defer: &mut Defer,
    lblk: u64,
    old: BufId,
    kind: BlockKind,
) -> FsResult<BufId> {
    let Some(old_phys) = bmap::map_block(tp, dp, lblk) else {
        return Err(bad_dir(tp, dp, format!("block {lblk} is not mapped")));
    };
    let req = AllocReq::near(&tp.fs().geo, old_phys + 1, 1);
    let (phys, _) = alloc::alloc_extent(tp, &req)?;
    let e = Extent {
        startoff: lblk,
        startblock: phys,
        blockcount: 1,
        unwritten: false,
    };
    bmap::set_mapping(tp, dp, e, true)?;
    let bytes = tp.buf(old).to_vec();
    let id = tp.new_buf(Daddr::of_block(phys), kind, BLOCK_SIZE)?;
    tp.buf_mut(id).copy_from_slice(&bytes);
    tp.log_buf(id, 0, BLOCK_SIZE - 1);
    tp.inval_buf(old);
    defer.phys.push(old_phys);
    write_hdr(tp, id, kind, tp.ino(dp));
    Ok(id)
}

/// Blocks a directory operation gives up, released by `finish` after its last
/// allocation.
#[derive(Debug, Default)]
pub struct Defer {
    /// Directory blocks to unmap and free.
    unmap: Vec<u64>,
    /// Physical blocks (already unmapped by a move) to free.
    phys: Vec<u64>,
    /// Shortform bytes the fork becomes once its last block is gone.
    to_local: Option<Vec<u8>>,
}

impl Defer {
    /// Unmap and free directory block `lblk` (whose buffer `id` is invalidated now).
    fn drop_block(&mut self, tp: &mut Trans, id: BufId, lblk: u64) {
        tp.inval_buf(id);
        self.unmap.push(lblk);
    }

    /// Whether directory block `lblk` is being given up by this operation.
    fn dropping(&self, lblk: u64) -> bool {
        self.unmap.contains(&lblk)
    }
}

/// End a changing operation: unmap the blocks it gave up (all of them before freeing any, so
/// the extent tree's own allocations cannot receive one), free them, and set the size.
fn finish(tp: &mut Trans, dp: InodeId, defer: Defer) -> FsResult<()> {
    let stats = Arc::clone(&tp.fs().stats);
    let mut unmap = defer.unmap;
    unmap.sort_unstable();
    unmap.dedup();
    let mut to_free: Vec<(u64, u32)> = Vec::new();
    for lblk in unmap {
        let (change, freed) = {
            let ic = tp.ic_mut(dp);
            let list = bmap::fork_list_mut(&mut ic.fork)?;
            bmap::remove_range(list, lblk, 1, &stats)
        };
        if change.removed.is_empty() {
            continue;
        }
        let n: u64 = freed.iter().map(|e| u64::from(e.blockcount)).sum();
        let ic = tp.ic_mut(dp);
        ic.di.nblocks = ic.di.nblocks.saturating_sub(n);
        tp.log_inode(dp);
        crate::fs::bmbt::sync_fork(tp, dp, &change)?;
        to_free.extend(freed.iter().map(|e| (e.startblock, e.blockcount)));
    }
    if !defer.phys.is_empty() {
        let ic = tp.ic_mut(dp);
        ic.di.nblocks = ic.di.nblocks.saturating_sub(defer.phys.len() as u64);
        tp.log_inode(dp);
        to_free.extend(defer.phys.iter().map(|&p| (p, 1)));
    }
    // AGFs are locked in ascending AG order: free in block order (linear block numbers
    // ascend with the AG), or a directory spanning AGs waits for AG 0's AGF holding AG 1's.
    to_free.sort_unstable();
    for (block, len) in to_free {
        alloc::free_extent(tp, block, len)?;
    }
    if let Some(bytes) = defer.to_local {
        if !tp.ic(dp).fork.extents().is_empty() {
            return Err(bad_dir(
                tp,
                dp,
                "blocks left after the conversion to shortform".into(),
            ));
        }
        set_local(tp, dp, bytes);
        return Ok(());
    }
    if !matches!(tp.ic(dp).fork, DataFork::Local(_)) {
        let size = data_end(tp.ic(dp).fork.extents()) << BLOCK_SHIFT;
        if tp.ic(dp).di.size != size {
            tp.ic_mut(dp).di.size = size;
            tp.log_inode(dp);
        }
    }
    Ok(())
}

/// One past the last mapped data block.
fn data_end(list: &[Extent]) -> u64 {
    let i = list.partition_point(|e| e.startoff < LEAF_FIRST);
    if i == 0 {
        0
    } else {
        list[i - 1].end().min(LEAF_FIRST)
    }
}

/// Make the fork the shortform `bytes`.
fn set_local(tp: &mut Trans, dp: InodeId, bytes: Vec<u8>) {
    let ic = tp.ic_mut(dp);
    ic.di.size = bytes.len() as u64;
    ic.fork = DataFork::Local(bytes.into());
    tp.log_inode(dp);
}

/// The shortform bytes of the fork.
fn local<'t>(tp: &'t Trans, dp: InodeId) -> FsResult<&'t [u8]> {
    match &tp.ic(dp).fork {
        DataFork::Local(b) => Ok(b),
        _ => Err(bad_dir(tp, dp, "directory is not in shortform".into())),
    }
}

/// A name that can be stored: 1..=255 bytes, no NUL or `/`, not `.` or `..`.
fn check_name(name: &[u8]) -> FsResult<()> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&0) || name.contains(&b'/')
    {
        return Err(FsError::Invalid("directory entry name"));
    }
    if name.len() > NAME_MAX {
        return Err(FsError::NameTooLong);
    }
    Ok(())
}

/// Initialise a new directory's data fork: shortform, empty, with `..` = parent.
pub fn init(tp: &mut Trans, dp: InodeId, parent: u64) -> FsResult<()> {
    set_local(tp, dp, sf::Shortform::new(parent).encode());
    Ok(())
}

/// Look a name up; `..` included; `Ok(None)` if absent. +1 `Stat::DirLookup`.
pub fn lookup(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<Option<u64>> {
    tp.fs().stats.inc(Stat::DirLookup);
    if name == b"." {
        return Ok(Some(tp.ino(dp)));
    }
    match form(tp, dp)? {
        Form::Short => {
            let sf = sf::Shortform::decode(local(tp, dp)?)?;
            if name == b".." {
                return Ok(Some(sf.parent));
            }
            Ok(sf.find(name).map(|e| e.ino))
        }
        _ if name == b".." => Ok(Some(dotdot(tp, dp)?.1.ino)),
        Form::Block => block::lookup(tp, dp, name),
        Form::Leaf => leaf::lookup(tp, dp, name),
        Form::Node => node::lookup(tp, dp, name),
    }
}

/// The `..` entry of a block, leaf or node directory: always at offset 80 of data block 0,
/// so it is read directly (a damaged hash index does not hide the parent from fsck).
fn dotdot(tp: &mut Trans, dp: InodeId) -> FsResult<(BufId, data::Ent)> {
    let kind = if form(tp, dp)? == Form::Block {
        BlockKind::DirBlock
    } else {
        BlockKind::DirData
    };
    let id = read_block(tp, dp, 0, kind)?;
    let b = tp.buf(id);
    match data::entry_at(b, data::DOTDOT, BLOCK_SIZE - 8) {
        Ok(e) if e.name(b) == b".." => Ok((id, e)),
        _ => Err(data::corrupt(
            tp,
            id,
            kind,
            "no '..' entry at offset 0x50".into(),
        )),
    }
}

/// Add an entry (the caller checked the name is absent). +1 `Stat::DirCreate`.
pub fn add(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, kind: FileKind) -> FsResult<()> {
    tp.fs().stats.inc(Stat::DirCreate);
    check_name(name)?;
    let ftype = sf::ftype(kind);
    let mut defer = Defer::default();
    let mut f = form(tp, dp)?;
    loop {
        f = match f {
            Form::Short => {
                let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
                sf.add(name, ino, kind);
                if sf.size() <= crate::fs::format::dinode::LITERAL_SIZE {
                    set_local(tp, dp, sf.encode());
                    return Ok(());
                }
                sf.entries.pop();
                block::from_shortform(tp, dp, &sf)?;
                Form::Block
            }
            Form::Block => {
                if block::add(tp, dp, name, ino, ftype)? {
                    break;
                }
                leaf::from_block(tp, dp, &mut defer)?;
                Form::Leaf
            }
            Form::Leaf => {
                if leaf::add(tp, dp, name, ino, ftype)? {
                    break;
                }
                node::from_leaf(tp, dp, &mut defer)?;
                Form::Node
            }
            Form::Node => {
                node::add(tp, dp, &mut defer, name, ino, ftype)?;
                break;
            }
        };
    }
    finish(tp, dp, defer)
}

/// Remove an entry; returns its inode. +1 `Stat::DirRemove`.
pub fn remove(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<u64> {
    tp.fs().stats.inc(Stat::DirRemove);
    if name == b"." || name == b".." {
        return Err(FsError::Invalid("'.' and '..' cannot be removed"));
    }
    let mut defer = Defer::default();
    let ino = match form(tp, dp)? {
        Form::Short => {
            let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
            let ino = sf.remove(name).ok_or(FsError::NotFound)?;
            set_local(tp, dp, sf.encode());
            return Ok(ino);
        }
        Form::Block => block::remove(tp, dp, &mut defer, name)?,
        Form::Leaf => leaf::remove(tp, dp, &mut defer, name)?,
        Form::Node => node::remove(tp, dp, &mut defer, name)?,
    };
    finish(tp, dp, defer)?;
    Ok(ino)
}

/// Point an existing entry (or `..`) at another inode; returns the old one.
pub fn replace(
    tp: &mut Trans,
    dp: InodeId,
    name: &[u8],
    ino: u64,
    kind: FileKind,
) -> FsResult<u64> {
    if name == b"." {
        return Err(FsError::Invalid("'.' cannot be replaced"));
    }
    let ftype = sf::ftype(kind);
    match form(tp, dp)? {
        Form::Short => {
            let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
            let old = if name == b".." {
                std::mem::replace(&mut sf.parent, ino)
            } else {
                let e = sf.find_mut(name).ok_or(FsError::NotFound)?;
                e.kind = kind;
                std::mem::replace(&mut e.ino, ino)
            };
            set_local(tp, dp, sf.encode());
            Ok(old)
        }
        _ if name == b".." => {
            let (id, e) = dotdot(tp, dp)?;
            data::set_ino(tp, id, &e, ino, ftype);
            Ok(e.ino)
        }
        Form::Block => block::replace(tp, dp, name, ino, ftype),
        Form::Leaf => leaf::replace(tp, dp, name, ino, ftype),
        Form::Node => node::replace(tp, dp, name, ino, ftype),
    }
}

/// Only `.` and `..` left?
pub fn is_empty(tp: &mut Trans, dp: InodeId) -> FsResult<bool> {
    match form(tp, dp)? {
        Form::Short => Ok(sf::Shortform::decode(local(tp, dp)?)?.entries.is_empty()),
        Form::Block => block::is_empty(tp, dp),
        Form::Leaf => leaf::is_empty(tp, dp),
        Form::Node => node::is_empty(tp, dp),
    }
}

/// Every entry except `.`/`..`, in directory order (stable for an unchanged directory).
/// +1 `Stat::DirGetdents` per call.
pub fn readdir(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<DirEntry>> {
    tp.fs().stats.inc(Stat::DirGetdents);
    match form(tp, dp)? {
        Form::Short => {
            let sf = sf::Shortform::decode(local(tp, dp)?)?;
            Ok(sf
                .entries
                .into_iter()
                .map(|e| DirEntry {
                    name: e.name,
                    ino: e.ino,
                    kind: e.kind,
                })
                .collect())
        }
        Form::Block => block::readdir(tp, dp),
        Form::Leaf | Form::Node => leaf::readdir_data(tp, dp),
    }
}

/// fsck: every structural problem found in this directory (block headers, hashes sorted and
/// matching names, leaf/free indexes agree with data blocks, bestfree right, no duplicate
/// names, size and nblocks consistent), each naming the block and what is wrong.
pub fn check(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<String>> {
    check::check(tp, dp)
}

/// A data-block entry as the Target surface reports it.
fn dir_entry(b: &[u8], e: &data::Ent) -> DirEntry {
    DirEntry {
        name: e.name(b).to_vec(),
        ino: e.ino,
        kind: sf::kind_of_ftype(e.ftype),
    }
}
