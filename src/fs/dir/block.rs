//! The block form: the whole directory in directory block 0 (`XDB3`).
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 64 | data block header ([`super::data`]), magic `XDB3` |
//! | 64 | | data region: `.` at 64, `..` at 80, entries and free regions |
//! | 4088 − 8·count | 8·count | hash leaf: (hash u32, address u32) per entry, dots included, sorted by hash (ties by address) |
//! | 4088 | 4 | count: hash leaf entries |
//! | 4092 | 4 | stale: leaf entries marked stale (always 0: labfs removes leaf entries at once instead of marking them, so it never has to compact) |
//!
//! The leaf grows downwards into the data region: a new entry needs its own room somewhere
//! plus 8 bytes taken from the free region that ends where the leaf starts. When either is
//! missing the directory becomes a leaf-form directory ([`super::leaf::from_block`]).

use super::data::{self, Ent, Slot};
use super::{Defer, addr_of, hashname, read_block, split_addr};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::dinode::LITERAL_SIZE;
use crate::fs::format::endian::{get_u32, put_u32};
use crate::fs::format::{BLOCK_SIZE, BlockKind};
use crate::fs::inode::{DataFork, ExtentList};
use crate::fs::trans::{InodeId, Trans};
use crate::fs::vfs::{DirEntry, FileKind};

use crate::fs::btree::BufId;

/// Offset of the tail (count, stale).
pub const TAIL: usize = BLOCK_SIZE - 8;

const KIND: BlockKind = BlockKind::DirBlock;

/// Where the hash leaf of `count` entries starts (= the end of the data region).
pub fn leaf_start(count: usize) -> usize {
    TAIL - 8 * count
}

/// Hash leaf entry `i` of a leaf starting at `start`.
pub fn leaf_ent(b: &[u8], start: usize, i: usize) -> (u32, u32) {
    let at = start + 8 * i;
    (get_u32(b, at), get_u32(b, at + 4))
}

/// Index of the first of `n` leaf entries not below `key` (hash, address): with address 0,
/// the first entry of a hash; with an entry's own key, where it belongs.
pub fn search(b: &[u8], start: usize, n: usize, key: (u32, u32)) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if leaf_ent(b, start, mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Read block 0 of a block-form directory: its buffer and hash leaf count.
pub fn read(tp: &mut Trans, dp: InodeId) -> FsResult<(BufId, usize)> {
    let id = read_block(tp, dp, 0, KIND)?;
    let n = get_u32(tp.buf(id), TAIL) as usize;
    if !(2..=(TAIL - data::FIRST) / 8).contains(&n) {
        return Err(data::corrupt(
            tp,
            id,
            KIND,
            format!("hash leaf count {n} is impossible"),
        ));
    }
    Ok((id, n))
}

/// Find `name`: its leaf index and entry.
fn find(tp: &Trans, id: BufId, n: usize, name: &[u8]) -> FsResult<Option<(usize, Ent)>> {
    let h = hashname(name);
    let b = tp.buf(id);
    let start = leaf_start(n);
    let mut i = search(b, start, n, (h, 0));
    while i < n {
        let (hh, addr) = leaf_ent(b, start, i);
        if hh != h {
            break;
        }
        let (db, off) = split_addr(addr);
        let e = if db == 0 {
            data::entry_at(b, off, start)
        } else {
            Err(format!("address {addr:#x} is outside block 0"))
        }
        .map_err(|w| data::corrupt(tp, id, KIND, format!("hash leaf entry {i}: {w}")))?;
        if e.name(b) == name {
            return Ok(Some((i, e)));
        }
        i += 1;
    }
    Ok(None)
}

/// Look `name` up.
pub fn lookup(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<Option<u64>> {
    let (id, n) = read(tp, dp)?;
    Ok(find(tp, id, n, name)?.map(|(_, e)| e.ino))
}

/// Point `name` at `ino`; returns the old inode.
pub fn replace(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, ftype: u8) -> FsResult<u64> {
    let (id, n) = read(tp, dp)?;
    let (_, e) = find(tp, id, n, name)?.ok_or(FsError::NotFound)?;
    data::set_ino(tp, id, &e, ino, ftype);
    Ok(e.ino)
}

/// Add an entry if it fits; `Ok(false)` (nothing changed) if the block is full.
pub fn add(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, ftype: u8) -> FsResult<bool> {
    let (id, n) = read(tp, dp)?;
    let size = data::entsize(name.len());
    let end = leaf_start(n);
    let b = tp.buf(id);
    // The leaf grows into the free region just before it.
    let Some((toff, tlen)) = data::free_before(b, end) else {
        return Ok(false);
    };
    let mut region = None;
    for (off, len) in data::stored_bestfree(b) {
        let (off, len) = (usize::from(off), usize::from(len));
        if len >= size && off != toff {
            match data::slot_at(b, off, end) {
                Ok(Slot::Free { len: l, .. }) if l == len => {}
                _ => {
                    return Err(data::corrupt(
                        tp,
                        id,
                        KIND,
                        format!(
                            "bestfree names a {len}-byte free region at {off:#x} that is not there"
                        ),
                    ));
                }
            }
            region = Some((off, len));
            break;
        }
    }
    let region = match region {
        Some(r) => r,
        None if tlen >= size + 8 => (toff, tlen - 8),
        None => return Ok(false),
    };
    // Take 8 bytes off the end of the tail region for the new leaf entry.
    if tlen > 8 {
        data::write_free(tp, id, toff, tlen - 8);
    }
    let off = data::use_free(tp, id, region, ino, name, ftype);
    // Insert the hash leaf entry after any with the same hash.
    let key = (hashname(name), addr_of(0, off));
    let pos = search(tp.buf(id), end, n, key);
    let new_start = end - 8;
    let b = tp.buf_mut(id);
    b.copy_within(end..end + 8 * pos, new_start);
    put_u32(b, new_start + 8 * pos, key.0);
    put_u32(b, new_start + 8 * pos + 4, key.1);
    put_u32(b, TAIL, (n + 1) as u32);
    tp.log_buf(id, new_start, new_start + 8 * pos + 7);
    tp.log_buf(id, TAIL, TAIL + 3);
    data::refresh_bestfree(tp, id, KIND, new_start)?;
    Ok(true)
}

/// Remove `name`; converts to shortform when the rest fits with slack.
pub fn remove(tp: &mut Trans, dp: InodeId, defer: &mut Defer, name: &[u8]) -> FsResult<u64> {
    let (id, n) = read(tp, dp)?;
    let (i, e) = find(tp, id, n, name)?.ok_or(FsError::NotFound)?;
    let end = leaf_start(n);
    data::release(tp, id, KIND, e.off, e.size, end)?;
    // Close the gap in the leaf: entries before it move up by 8.
    let b = tp.buf_mut(id);
    b.copy_within(end..end + 8 * i, end + 8);
    put_u32(b, TAIL, (n - 1) as u32);
    tp.log_buf(id, end, end + 8 * i + 7);
    tp.log_buf(id, TAIL, TAIL + 3);
    // The leaf's first 8 bytes join the data region.
    data::release(tp, id, KIND, end, 8, end + 8)?;
    data::refresh_bestfree(tp, id, KIND, end + 8)?;
    maybe_to_shortform(tp, defer, id, n - 1)?;
    Ok(e.ino)
}

/// Convert to shortform if the entries of block `id` (hash leaf of `n`) fit the inode with
/// [`super::SF_SHRINK_SLACK`] to spare.
pub fn maybe_to_shortform(tp: &mut Trans, defer: &mut Defer, id: BufId, n: usize) -> FsResult<()> {
    let sf_size =
        shortform_size(tp.buf(id), leaf_start(n)).map_err(|w| data::corrupt(tp, id, KIND, w))?;
    if sf_size + super::SF_SHRINK_SLACK <= LITERAL_SIZE {
        to_shortform(tp, defer, id, n)?;
    }
    Ok(())
}

/// Bytes the entries of a block's data region would take in shortform.
fn shortform_size(b: &[u8], end: usize) -> Result<usize, String> {
    let mut size = super::sf::HDR;
    for s in data::slots(b, end) {
        if let Slot::Entry(e) = s?
            && e.off != data::DOT
            && e.off != data::DOTDOT
        {
            size += 12 + e.namelen;
        }
    }
    Ok(size)
}

/// The entries of a block-form directory, without the dots.
pub fn readdir(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<DirEntry>> {
    let (id, n) = read(tp, dp)?;
    entries_of(tp, id, KIND, leaf_start(n))
}

/// The entries (dots excluded) of the data region `HDR..end` of a held block.
pub fn entries_of(tp: &Trans, id: BufId, kind: BlockKind, end: usize) -> FsResult<Vec<DirEntry>> {
    let b = tp.buf(id);
    let mut out = Vec::new();
    for s in data::slots(b, end) {
        match s {
            Ok(Slot::Entry(e)) => {
                let name = e.name(b);
                if name != b"." && name != b".." {
                    out.push(super::dir_entry(b, &e));
                }
            }
            Ok(Slot::Free { .. }) => {}
            Err(w) => return Err(data::corrupt(tp, id, kind, w)),
        }
    }
    Ok(out)
}

/// Only the dots left?
pub fn is_empty(tp: &mut Trans, dp: InodeId) -> FsResult<bool> {
    Ok(read(tp, dp)?.1 == 2)
}

/// Convert a shortform directory (whose decoded entries are `sf`) into block form.
pub fn from_shortform(tp: &mut Trans, dp: InodeId, sf: &super::sf::Shortform) -> FsResult<()> {
    let ino = tp.ino(dp);
    tp.ic_mut(dp).fork = DataFork::Extents(ExtentList::new());
    tp.log_inode(dp);
    let id = super::new_block(tp, dp, 0, KIND)?;
    let dir = super::sf::ftype(FileKind::Dir);
    data::write_entry(tp, id, data::DOT, ino, b".", dir);
    data::write_entry(tp, id, data::DOTDOT, sf.parent, b"..", dir);
    let mut leaf = vec![
        (hashname(b"."), addr_of(0, data::DOT)),
        (hashname(b".."), addr_of(0, data::DOTDOT)),
    ];
    let mut pos = data::FIRST;
    for e in &sf.entries {
        let off = usize::from(e.offset);
        if off < pos {
            return Err(super::bad_dir(tp, dp, "shortform offsets overlap".into()));
        }
        if off > pos {
            data::write_free(tp, id, pos, off - pos);
        }
        data::write_entry(tp, id, off, e.ino, &e.name, super::sf::ftype(e.kind));
        leaf.push((hashname(&e.name), addr_of(0, off)));
        pos = off + data::entsize(e.name.len());
    }
    let start = leaf_start(leaf.len());
    if pos > start {
        return Err(super::bad_dir(
            tp,
            dp,
            "shortform offsets do not fit a block".into(),
        ));
    }
    if pos < start {
        data::write_free(tp, id, pos, start - pos);
    }
    leaf.sort_unstable();
    write_leaf(tp, id, &leaf);
    data::refresh_bestfree(tp, id, KIND, start)?;
    Ok(())
}

/// Write a whole hash leaf (sorted) and the tail of a block-form block.
pub fn write_leaf(tp: &mut Trans, id: BufId, leaf: &[(u32, u32)]) {
    let start = leaf_start(leaf.len());
    let b = tp.buf_mut(id);
    for (i, &(h, a)) in leaf.iter().enumerate() {
        put_u32(b, start + 8 * i, h);
        put_u32(b, start + 8 * i + 4, a);
    }
    put_u32(b, TAIL, leaf.len() as u32);
    put_u32(b, TAIL + 4, 0);
    tp.log_buf(id, start, BLOCK_SIZE - 1);
}

/// Convert a block-form directory whose block `id` has a leaf of `n` entries to shortform
/// (done by [`super::finish`] once the block is unmapped).
fn to_shortform(tp: &mut Trans, defer: &mut Defer, id: BufId, n: usize) -> FsResult<()> {
    let b = tp.buf(id);
    let mut sf = super::sf::Shortform::new(0);
    let mut parent = None;
    for s in data::slots(b, leaf_start(n)) {
        let s = s.map_err(|w| data::corrupt(tp, id, KIND, w))?;
        if let Slot::Entry(e) = s {
            match e.off {
                data::DOT => {}
                data::DOTDOT => parent = Some(e.ino),
                off => sf.entries.push(super::sf::SfEntry {
                    name: e.name(b).to_vec(),
                    offset: off as u16,
                    kind: super::sf::kind_of_ftype(e.ftype),
                    ino: e.ino,
                }),
            }
        }
    }
    sf.parent = parent.ok_or_else(|| data::corrupt(tp, id, KIND, "no '..' entry".into()))?;
    defer.drop_block(tp, id, 0);
    defer.to_local = Some(sf.encode());
    Ok(())
}

/// Rewrite data block 0 of a leaf directory (held as `did`, with the leaf's `entries`) as a
/// block-form block: used by [`super::leaf`] when it shrinks. The final free region must be
/// at least `8 * entries.len() + 8` bytes. Returns the new block.
pub fn from_data_block(
    tp: &mut Trans,
    dp: InodeId,
    defer: &mut Defer,
    did: BufId,
    entries: &[(u32, u32)],
) -> FsResult<BufId> {
    let id = super::move_block(tp, dp, defer, 0, did, KIND)?;
    let start = leaf_start(entries.len());
    let Some((toff, tlen)) = data::free_before(tp.buf(id), BLOCK_SIZE) else {
        return Err(data::corrupt(tp, id, KIND, "no final free region".into()));
    };
    if toff + 8 > start || toff + tlen != BLOCK_SIZE {
        return Err(data::corrupt(
            tp,
            id,
            KIND,
            "final free region too small for the hash leaf".into(),
        ));
    }
    data::write_free(tp, id, toff, start - toff);
    write_leaf(tp, id, entries);
    data::refresh_bestfree(tp, id, KIND, start)?;
    Ok(id)
}
