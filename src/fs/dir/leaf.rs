//! The leaf form: data blocks (`XDD3`) at directory blocks 0.., and one leaf block
//! (`dir3_leaf1`) at [`LEAF_FIRST`] indexing them.
//!
//! Leaf block (`xfs_dir3_leaf`; integers big-endian, CRC little-endian):
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 4 | forw: right sibling (0: none; a leaf1 block has none) |
//! | 4 | 4 | back: left sibling (0) |
//! | 8 | 2 | magic `0x3df1` |
//! | 10 | 2 | pad (0) |
//! | 12 | 4 | CRC-32C of the whole block, this field taken as zero |
//! | 16 | 8 | blkno: the block's own device address |
//! | 24 | 8 | lsn (0 until the journal stamps it) |
//! | 32 | 16 | filesystem UUID |
//! | 48 | 8 | owner: the directory's inode number |
//! | 56 | 2 | count: hash entries |
//! | 58 | 2 | stale: stale entries (always 0, see [`super::block`]) |
//! | 60 | 4 | pad (0) |
//! | 64 | 8·count | hash entries (hash u32, address u32), sorted by (hash, address) |
//! | 4092 − 2·bestcount | 2·bestcount | bests\[db\]: largest free region of data block db, `0xffff` for a hole |
//! | 4092 | 4 | bestcount: data blocks described (the last one is never a hole) |
//!
//! A create takes the last data block if its best fits the entry, else the first that does
//! (reading no data block to decide), else a new data block in the first hole or after the
//! last. When the leaf has no room for another hash entry (and, for a new data block at the
//! end, another best), the directory becomes a node directory ([`super::node::from_leaf`]).

use super::block;
use super::data::{self, Ent};
use super::{
    BLOCK_SHRINK_SLACK, Defer, LEAF_FIRST, NULL_BEST, addr_of, hashname, read_block, split_addr,
};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u32, put_u16, put_u32};
use crate::fs::format::{BLOCK_SIZE, BlockKind};
use crate::fs::trans::{InodeId, Trans};
use crate::fs::vfs::DirEntry;

use crate::fs::btree::BufId;

const KIND: BlockKind = BlockKind::DirLeaf1;
/// Offset of the hash entry count.
pub const COUNT: usize = 56;
/// Offset of the stale count.
pub const STALE: usize = 58;
/// Offset of the first hash entry.
pub const ENTS: usize = 64;
/// Offset of bestcount (the bests end here).
pub const BESTCOUNT: usize = BLOCK_SIZE - 4;

/// Where the bests array of `nb` entries starts.
pub fn bests_start(nb: usize) -> usize {
    BESTCOUNT - 2 * nb
}

/// Whether a leaf block has room for `n` hash entries and `nb` bests.
pub fn fits(n: usize, nb: usize) -> bool {
    ENTS + 8 * n + 2 * nb <= BESTCOUNT
}

/// A leaf block held by the transaction.
#[derive(Debug, Clone, Copy)]
pub struct Leaf {
    /// Its buffer.
    pub id: BufId,
    /// Hash entries.
    pub n: usize,
    /// Bests (data blocks described).
    pub nb: usize,
}

/// The best of data block `db` in a leaf with `nb` bests.
pub fn best(b: &[u8], nb: usize, db: usize) -> u16 {
    get_u16(b, bests_start(nb) + 2 * db)
}

/// Read the leaf block of a leaf-form directory.
pub fn read(tp: &mut Trans, dp: InodeId) -> FsResult<Leaf> {
    let id = read_block(tp, dp, LEAF_FIRST, KIND)?;
    let b = tp.buf(id);
    let n = usize::from(get_u16(b, COUNT));
    let nb = get_u32(b, BESTCOUNT) as usize;
    if n < 2 || nb == 0 || nb > BLOCK_SIZE || !fits(n, nb) {
        return Err(data::corrupt(
            tp,
            id,
            KIND,
            format!("{n} hash entries and {nb} bests do not fit"),
        ));
    }
    Ok(Leaf { id, n, nb })
}

/// A found entry: its hash entry index, data block and entry.
struct Hit {
    idx: usize,
    db: u64,
    did: BufId,
    ent: Ent,
}

fn find(tp: &mut Trans, dp: InodeId, lf: &Leaf, name: &[u8]) -> FsResult<Option<Hit>> {
    let h = hashname(name);
    let mut i = block::search(tp.buf(lf.id), ENTS, lf.n, (h, 0));
    while i < lf.n {
        let (hh, addr) = block::leaf_ent(tp.buf(lf.id), ENTS, i);
        if hh != h {
            break;
        }
        let (db, off) = split_addr(addr);
        if db >= lf.nb as u64 || best(tp.buf(lf.id), lf.nb, db as usize) == NULL_BEST {
            return Err(data::corrupt(
                tp,
                lf.id,
                KIND,
                format!("hash entry {i} points into data block {db}, which does not exist"),
            ));
        }
        let did = read_block(tp, dp, db, BlockKind::DirData)?;
        let b = tp.buf(did);
        let e = data::entry_at(b, off, BLOCK_SIZE).map_err(|w| {
            data::corrupt(tp, did, BlockKind::DirData, format!("hash entry {i}: {w}"))
        })?;
        if e.name(b) == name {
            return Ok(Some(Hit {
                idx: i,
                db,
                did,
                ent: e,
            }));
        }
        i += 1;
    }
    Ok(None)
}

/// Look `name` up.
pub fn lookup(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<Option<u64>> {
    let lf = read(tp, dp)?;
    Ok(find(tp, dp, &lf, name)?.map(|h| h.ent.ino))
}

/// Point `name` at `ino`; returns the old inode.
pub fn replace(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, ftype: u8) -> FsResult<u64> {
    let lf = read(tp, dp)?;
    let hit = find(tp, dp, &lf, name)?.ok_or(FsError::NotFound)?;
    data::set_ino(tp, hit.did, &hit.ent, ino, ftype);
    Ok(hit.ent.ino)
}

/// Only the dots left?
pub fn is_empty(tp: &mut Trans, dp: InodeId) -> FsResult<bool> {
    Ok(read(tp, dp)?.n == 2)
}

fn set_best(tp: &mut Trans, lf: &Leaf, db: usize, v: u16) {
    let at = bests_start(lf.nb) + 2 * db;
    put_u16(tp.buf_mut(lf.id), at, v);
    tp.log_buf(lf.id, at, at + 1);
}

/// Insert hash entry (h, addr) in (hash, address) order.
fn insert_hash(tp: &mut Trans, lf: &mut Leaf, h: u32, addr: u32) {
    let pos = block::search(tp.buf(lf.id), ENTS, lf.n, (h, addr));
    let at = ENTS + 8 * pos;
    let b = tp.buf_mut(lf.id);
    b.copy_within(at..ENTS + 8 * lf.n, at + 8);
    put_u32(b, at, h);
    put_u32(b, at + 4, addr);
    lf.n += 1;
    put_u16(b, COUNT, lf.n as u16);
    tp.log_buf(lf.id, COUNT, COUNT + 1);
    tp.log_buf(lf.id, at, ENTS + 8 * lf.n - 1);
}

/// Add an entry if the leaf has room; `Ok(false)` (nothing changed) if it is full.
pub fn add(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, ftype: u8) -> FsResult<bool> {
    let mut lf = read(tp, dp)?;
    let size = data::entsize(name.len()) as u16;
    let b = tp.buf(lf.id);
    let usable = |v: u16| v != NULL_BEST && v >= size;
    let last = lf.nb - 1;
    let mut use_db = usable(best(b, lf.nb, last)).then_some(last);
    let mut hole = None;
    if use_db.is_none() {
        for db in 0..lf.nb {
            let v = best(b, lf.nb, db);
            if usable(v) {
                use_db = Some(db);
                break;
            }
            if v == NULL_BEST && hole.is_none() {
                hole = Some(db);
            }
        }
    }
    let grow = use_db.is_none() && hole.is_none();
    if !fits(lf.n + 1, lf.nb + usize::from(grow)) {
        return Ok(false);
    }
    let (db, did) = match use_db {
        Some(db) => (db, read_block(tp, dp, db as u64, BlockKind::DirData)?),
        None => {
            let db = hole.unwrap_or(lf.nb);
            (db, super::new_data_block(tp, dp, db as u64)?)
        }
    };
    if grow {
        let start = bests_start(lf.nb);
        let b = tp.buf_mut(lf.id);
        b.copy_within(start..BESTCOUNT, start - 2);
        lf.nb += 1;
        put_u16(b, BESTCOUNT - 2, NULL_BEST);
        put_u32(b, BESTCOUNT, lf.nb as u32);
        tp.log_buf(lf.id, start - 2, BLOCK_SIZE - 1);
    }
    let (off, v) = place(tp, did, name, ino, ftype)?;
    set_best(tp, &lf, db, v);
    insert_hash(tp, &mut lf, hashname(name), addr_of(db as u64, off));
    Ok(true)
}

/// Put an entry into data block `did` at its largest free region (which the caller knows
/// holds it) and bring the bestfree table up to date: from the old table when that decides
/// it, by a scan of the block when not. Returns the entry's offset and the block's largest
/// free length after it.
pub fn place(
    tp: &mut Trans,
    did: BufId,
    name: &[u8],
    ino: u64,
    ftype: u8,
) -> FsResult<(usize, u16)> {
    let size = data::entsize(name.len());
    let b = tp.buf(did);
    let bf = data::stored_bestfree(b);
    let (off, len) = (usize::from(bf[0].0), usize::from(bf[0].1));
    match data::slot_at(b, off, BLOCK_SIZE) {
        Ok(data::Slot::Free { len: l, .. }) if l == len && len >= size => {}
        _ => {
            return Err(data::corrupt(
                tp,
                did,
                BlockKind::DirData,
                format!(
                    "bestfree names a {len}-byte free region at {off:#x} that is not there or too small"
                ),
            ));
        }
    }
    data::use_free(tp, did, (off, len), ino, name, ftype);
    let rest = (len > size).then(|| ((off + size) as u16, (len - size) as u16));
    let largest = match data::bestfree_after_use(bf, rest) {
        Some(new) => {
            data::store_bestfree(tp, did, new);
            new[0].1
        }
        None => data::refresh_bestfree(tp, did, BlockKind::DirData, BLOCK_SIZE)?,
    };
    Ok((off, largest))
}

/// Remove `name`; frees its data block if it empties, converts to block form when only
/// block 0 is left and the hash leaf fits in it with slack.
pub fn remove(tp: &mut Trans, dp: InodeId, defer: &mut Defer, name: &[u8]) -> FsResult<u64> {
    let mut lf = read(tp, dp)?;
    let hit = find(tp, dp, &lf, name)?.ok_or(FsError::NotFound)?;
    data::release(
        tp,
        hit.did,
        BlockKind::DirData,
        hit.ent.off,
        hit.ent.size,
        BLOCK_SIZE,
    )?;
    let v = data::refresh_bestfree(tp, hit.did, BlockKind::DirData, BLOCK_SIZE)?;
    let db = hit.db as usize;
    if v == data::EMPTY && db != 0 {
        defer.drop_block(tp, hit.did, hit.db);
        set_best(tp, &lf, db, NULL_BEST);
        if db == lf.nb - 1 {
            trim_bests(tp, &mut lf);
        }
    } else {
        set_best(tp, &lf, db, v);
    }
    // Remove the hash entry.
    let at = ENTS + 8 * hit.idx;
    let end = ENTS + 8 * lf.n;
    let b = tp.buf_mut(lf.id);
    b.copy_within(at + 8..end, at);
    b[end - 8..end].fill(0);
    lf.n -= 1;
    put_u16(b, COUNT, lf.n as u16);
    tp.log_buf(lf.id, COUNT, COUNT + 1);
    tp.log_buf(lf.id, at, end - 1);
    if lf.nb == 1 {
        maybe_to_block(tp, dp, defer, &lf)?;
    }
    Ok(hit.ent.ino)
}

/// Drop trailing holes from the bests array (the last data block was freed).
fn trim_bests(tp: &mut Trans, lf: &mut Leaf) {
    let b = tp.buf(lf.id);
    let mut nb = lf.nb;
    while nb > 1 && best(b, lf.nb, nb - 1) == NULL_BEST {
        nb -= 1;
    }
    let drop = lf.nb - nb;
    let start = bests_start(lf.nb);
    let b = tp.buf_mut(lf.id);
    b.copy_within(start..start + 2 * nb, start + 2 * drop);
    b[start..start + 2 * drop].fill(0);
    put_u32(b, BESTCOUNT, nb as u32);
    tp.log_buf(lf.id, start, BLOCK_SIZE - 1);
    lf.nb = nb;
}

/// Shrink to block form if data block 0 alone can hold the hash leaf with slack.
fn maybe_to_block(tp: &mut Trans, dp: InodeId, defer: &mut Defer, lf: &Leaf) -> FsResult<()> {
    let did = read_block(tp, dp, 0, BlockKind::DirData)?;
    let Some((_, tlen)) = data::free_before(tp.buf(did), BLOCK_SIZE) else {
        return Ok(());
    };
    if tlen < 8 * lf.n + 8 + BLOCK_SHRINK_SLACK {
        return Ok(());
    }
    let b = tp.buf(lf.id);
    let entries: Vec<(u32, u32)> = (0..lf.n).map(|i| block::leaf_ent(b, ENTS, i)).collect();
    let id = block::from_data_block(tp, dp, defer, did, &entries)?;
    defer.drop_block(tp, lf.id, LEAF_FIRST);
    // As XFS's leaf-to-block conversion does, go on to shortform when that fits too.
    block::maybe_to_shortform(tp, defer, id, lf.n)
}

/// Convert a block-form directory to leaf form: its block becomes data block 0 (the hash
/// leaf's space joins the free space) and a leaf block takes the hash entries.
pub fn from_block(tp: &mut Trans, dp: InodeId, defer: &mut Defer) -> FsResult<()> {
    let (bid, n) = block::read(tp, dp)?;
    let start = block::leaf_start(n);
    let entries = tp.buf(bid)[start..block::TAIL].to_vec();
    let lid = super::new_block(tp, dp, LEAF_FIRST, KIND)?;
    let did = super::move_block(tp, dp, defer, 0, bid, BlockKind::DirData)?;
    data::release(
        tp,
        did,
        BlockKind::DirData,
        start,
        BLOCK_SIZE - start,
        BLOCK_SIZE,
    )?;
    let v = data::refresh_bestfree(tp, did, BlockKind::DirData, BLOCK_SIZE)?;
    write_leaf(tp, lid, &entries, &[v]);
    Ok(())
}

/// Fill a fresh leaf block (header written) with hash entries (raw, sorted) and bests.
pub fn write_leaf(tp: &mut Trans, lid: BufId, entries: &[u8], bests: &[u16]) {
    let n = entries.len() / 8;
    let bs = bests_start(bests.len());
    let b = tp.buf_mut(lid);
    put_u16(b, COUNT, n as u16);
    put_u16(b, STALE, 0);
    put_u32(b, 60, 0);
    b[ENTS..ENTS + entries.len()].copy_from_slice(entries);
    b[ENTS + entries.len()..bs].fill(0);
    for (i, v) in bests.iter().enumerate() {
        put_u16(b, bs + 2 * i, *v);
    }
    put_u32(b, BESTCOUNT, bests.len() as u32);
    tp.log_buf(lid, COUNT, BLOCK_SIZE - 1);
}

/// The entries (dots excluded) of every data block of a leaf- or node-form directory, in
/// block order.
pub fn readdir_data(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<DirEntry>> {
    let blocks: Vec<u64> = tp
        .ic(dp)
        .fork
        .extents()
        .iter()
        .take_while(|e| e.startoff < LEAF_FIRST)
        .flat_map(|e| e.startoff..e.end().min(LEAF_FIRST))
        .collect();
    let mut out = Vec::new();
    for db in blocks {
        let did = read_block(tp, dp, db, BlockKind::DirData)?;
        out.extend(block::entries_of(tp, did, BlockKind::DirData, BLOCK_SIZE)?);
    }
    Ok(out)
}
