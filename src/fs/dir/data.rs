//! Directory data blocks: the entry format shared by the block form (`XDB3`, which also
//! carries the hash leaf) and the data blocks of the leaf and node forms (`XDD3`).
//!
//! ## Header (`xfs_dir3_data_hdr`, 64 bytes; integers big-endian, CRC little-endian)
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 4 | magic: `XDB3` (block form) or `XDD3` (data block) |
//! | 4 | 4 | CRC-32C of the whole 4 KiB block, this field taken as zero |
//! | 8 | 8 | blkno: the block's own device address (512-byte sectors) |
//! | 16 | 8 | lsn of the last write (0 until the journal stamps it) |
//! | 24 | 16 | filesystem UUID |
//! | 40 | 8 | owner: the directory's inode number |
//! | 48 | 12 | bestfree\[3\]: (offset u16, length u16) of the three largest free regions, largest first (ties: lower offset first); unused slots are (0, 0) |
//! | 60 | 4 | pad (0) |
//!
//! ## Data region
//!
//! From byte 64 to the end of the data region (the end of the block for `XDD3`; the start of
//! the hash leaf for `XDB3`), a sequence of 8-byte-aligned *slots*, each an entry or a free
//! region, each ending with a 2-byte *tag* holding its own offset, so the slot before any
//! offset can be found from the two bytes in front of it (that is how freeing an entry finds
//! a free neighbour to merge with).
//!
//! Entry (`xfs_dir2_data_entry`, `round_up(12 + namelen, 8)` bytes):
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 8 | inode number |
//! | 8 | 1 | namelen (1..=255) |
//! | 9 | namelen | name |
//! | 9 + namelen | 1 | ftype (XFS_DIR3_FT_*) |
//! | .. | | zero padding |
//! | size − 2 | 2 | tag |
//!
//! Free region (`xfs_dir2_data_unused`, a multiple of 8 bytes, at least 8):
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 2 | freetag `0xffff` (an inode number never starts with it) |
//! | 2 | 2 | length |
//! | length − 2 | 2 | tag |
//!
//! Two free regions are never adjacent: freeing space merges it with free neighbours, so the
//! bestfree table sees whole holes. An entry's *address* is its data-space byte offset
//! (`block × 4096 + offset`) divided by 8, as XFS's `xfs_dir2_dataptr_t`.
//!
//! In data block 0 of every non-shortform directory, `.` (this directory) sits at offset 64
//! and `..` (the parent) at 80; other entries start at 96.
//!
//! ## When bestfree is recomputed
//! XFS updates the bestfree table incrementally and rescans a block only when it cannot
//! (`needscan`). labfs does the same for the hot case, an entry added at the front of the
//! largest free region ([`bestfree_after_use`]: every create in a growing directory), and
//! rescans the block after every other change (removes, block-form changes): a block holds
//! at most a few hundred slots, and a rescanned table is exact by construction, which is
//! what the checker compares against.

use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u64, put_u16, put_u64};
use crate::fs::format::{BLOCK_SIZE, BlockKind};
use crate::fs::trans::Trans;

use crate::fs::btree::BufId;

/// Bytes of the data block header.
pub const HDR: usize = 64;
/// Offset of the bestfree table.
const BESTFREE: usize = 48;
/// First two bytes of a free region.
pub const FREE_TAG: u16 = 0xffff;
/// Offset of `.` in data block 0.
pub const DOT: usize = 64;
/// Offset of `..` in data block 0.
pub const DOTDOT: usize = 80;
/// First offset of an ordinary entry in data block 0.
pub const FIRST: usize = 96;
/// Free bytes of an empty data block.
pub const EMPTY: u16 = (BLOCK_SIZE - HDR) as u16;

/// Bytes of an entry with a name of `namelen` bytes.
pub fn entsize(namelen: usize) -> usize {
    (12 + namelen).div_ceil(8) * 8
}

/// One entry of a data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ent {
    /// Offset in the block.
    pub off: usize,
    /// Bytes it occupies.
    pub size: usize,
    /// Inode number.
    pub ino: u64,
    /// Name length.
    pub namelen: usize,
    /// ftype byte.
    pub ftype: u8,
}

impl Ent {
    /// The entry's name in block `b`.
    pub fn name<'b>(&self, b: &'b [u8]) -> &'b [u8] {
        &b[self.off + 9..self.off + 9 + self.namelen]
    }
}

/// A slot of the data region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A free region.
    Free {
        /// Offset in the block.
        off: usize,
        /// Length in bytes.
        len: usize,
    },
    /// An entry.
    Entry(Ent),
}

impl Slot {
    /// Offset of the slot.
    pub fn off(&self) -> usize {
        match self {
            Slot::Free { off, .. } => *off,
            Slot::Entry(e) => e.off,
        }
    }

    /// Bytes the slot occupies.
    pub fn size(&self) -> usize {
        match self {
            Slot::Free { len, .. } => *len,
            Slot::Entry(e) => e.size,
        }
    }
}

/// Decode the slot at `off` of a data region ending at `end`, checking every length.
pub fn slot_at(b: &[u8], off: usize, end: usize) -> Result<Slot, String> {
    if off < HDR || !off.is_multiple_of(8) || end > b.len() || off + 8 > end {
        return Err(format!(
            "offset {off:#x} is not a slot start inside {HDR:#x}..{end:#x}"
        ));
    }
    if get_u16(b, off) == FREE_TAG {
        let len = usize::from(get_u16(b, off + 2));
        if len < 8 || len % 8 != 0 || off + len > end {
            return Err(format!("free region at {off:#x} has bad length {len}"));
        }
        let tag = usize::from(get_u16(b, off + len - 2));
        if tag != off {
            return Err(format!("free region at {off:#x} has tag {tag:#x}"));
        }
        return Ok(Slot::Free { off, len });
    }
    if off + entsize(1) > end {
        return Err(format!(
            "entry at {off:#x} runs past the data region end {end:#x}"
        ));
    }
    let namelen = usize::from(b[off + 8]);
    if namelen == 0 {
        return Err(format!("entry at {off:#x} has an empty name"));
    }
    let size = entsize(namelen);
    if off + size > end {
        return Err(format!(
            "entry at {off:#x} ({size} bytes) runs past the data region end {end:#x}"
        ));
    }
    let tag = usize::from(get_u16(b, off + size - 2));
    if tag != off {
        return Err(format!("entry at {off:#x} has tag {tag:#x}"));
    }
    Ok(Slot::Entry(Ent {
        off,
        size,
        ino: get_u64(b, off),
        namelen,
        ftype: b[off + 9 + namelen],
    }))
}

/// The slots of a data region in offset order; stops after the first malformed one.
pub struct Slots<'b> {
    b: &'b [u8],
    off: usize,
    end: usize,
    failed: bool,
}

impl Iterator for Slots<'_> {
    type Item = Result<Slot, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.off >= self.end {
            return None;
        }
        match slot_at(self.b, self.off, self.end) {
            Ok(s) => {
                self.off += s.size();
                Some(Ok(s))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Walk the data region `HDR..end` of block `b`.
pub fn slots(b: &[u8], end: usize) -> Slots<'_> {
    Slots {
        b,
        off: HDR,
        end,
        failed: false,
    }
}

/// A bestfree table: (offset, length) of the three largest free regions.
pub type BestFree = [(u16, u16); 3];

/// The bestfree table stored in a block's header.
pub fn stored_bestfree(b: &[u8]) -> BestFree {
    let mut bf = [(0u16, 0u16); 3];
    for (i, slot) in bf.iter_mut().enumerate() {
        let at = BESTFREE + 4 * i;
        *slot = (get_u16(b, at), get_u16(b, at + 2));
    }
    bf
}

/// The bestfree table a data region really has: its three largest free regions, largest
/// first, ties by lower offset.
pub fn compute_bestfree(b: &[u8], end: usize) -> Result<BestFree, String> {
    let mut bf = [(0u16, 0u16); 3];
    for s in slots(b, end) {
        if let Slot::Free { off, len } = s? {
            let cand = (off as u16, len as u16);
            if let Some(i) = bf.iter().position(|&(_, l)| cand.1 > l) {
                bf.copy_within(i..2, i + 1);
                bf[i] = cand;
            }
        }
    }
    Ok(bf)
}

/// The `Corrupt` error for held buffer `id` of `kind`.
pub fn corrupt(tp: &Trans, id: BufId, kind: BlockKind, what: String) -> FsError {
    FsError::Corrupt {
        kind,
        daddr: tp.buf_daddr(id).0,
        what,
    }
}

/// Recompute block `id`'s bestfree table after a change, store it if it differs, and
/// return the largest free length.
pub fn refresh_bestfree(tp: &mut Trans, id: BufId, kind: BlockKind, end: usize) -> FsResult<u16> {
    let bf = compute_bestfree(tp.buf(id), end).map_err(|w| corrupt(tp, id, kind, w))?;
    store_bestfree(tp, id, bf);
    Ok(bf[0].1)
}

/// Store `bf` as block `id`'s bestfree table, if it differs from the stored one.
pub fn store_bestfree(tp: &mut Trans, id: BufId, bf: BestFree) {
    if bf != stored_bestfree(tp.buf(id)) {
        let b = tp.buf_mut(id);
        for (i, (off, len)) in bf.iter().enumerate() {
            put_u16(b, BESTFREE + 4 * i, *off);
            put_u16(b, BESTFREE + 4 * i + 2, *len);
        }
        tp.log_buf(id, BESTFREE, BESTFREE + 11);
    }
}

/// Whether free region `a` ranks before `b` in a bestfree table: longer first, and of two
/// the same length the lower offset (the order [`compute_bestfree`] keeps).
fn ranks_before(a: (u16, u16), b: (u16, u16)) -> bool {
    a.1 > b.1 || (a.1 == b.1 && a.0 < b.0)
}

/// The bestfree table after an entry took the front of the largest free region `old[0]`,
/// leaving `rest` of it free (`None`: the entry filled it), when the old table alone
/// decides it; `None` when a scan must. A table with an empty place listed every free
/// region, so it always decides; a full one (three regions) may hide a fourth that now
/// ranks third, unless what is left of the region ranks before the old third, as XFS's
/// `xfs_dir2_data_use_free` decides when to ask for a rescan.
pub fn bestfree_after_use(old: BestFree, rest: Option<(u16, u16)>) -> Option<BestFree> {
    let full = old[2].1 != 0;
    let mut bf = [old[1], old[2], (0, 0)];
    if let Some(r) = rest {
        if full && !ranks_before(r, old[2]) {
            return None;
        }
        let at = bf
            .iter()
            .position(|&e| e.1 == 0 || ranks_before(r, e))
            .unwrap_or(2);
        bf.copy_within(at..2, at + 1);
        bf[at] = r;
    } else if full {
        return None;
    }
    Some(bf)
}

/// Write a free region `off..off + len` (its freetag, length and tag).
pub fn write_free(tp: &mut Trans, id: BufId, off: usize, len: usize) {
    let b = tp.buf_mut(id);
    put_u16(b, off, FREE_TAG);
    put_u16(b, off + 2, len as u16);
    put_u16(b, off + len - 2, off as u16);
    tp.log_buf(id, off, off + 3);
    tp.log_buf(id, off + len - 2, off + len - 1);
}

/// Write an entry at `off` (its whole `entsize` bytes, padding zeroed).
pub fn write_entry(tp: &mut Trans, id: BufId, off: usize, ino: u64, name: &[u8], ftype: u8) {
    let size = entsize(name.len());
    let b = tp.buf_mut(id);
    put_u64(b, off, ino);
    b[off + 8] = name.len() as u8;
    b[off + 9..off + 9 + name.len()].copy_from_slice(name);
    b[off + 9 + name.len()] = ftype;
    b[off + 10 + name.len()..off + size - 2].fill(0);
    put_u16(b, off + size - 2, off as u16);
    tp.log_buf(id, off, off + size - 1);
}

/// Point the entry at `e` at another inode (and kind).
pub fn set_ino(tp: &mut Trans, id: BufId, e: &Ent, ino: u64, ftype: u8) {
    let b = tp.buf_mut(id);
    put_u64(b, e.off, ino);
    b[e.off + 9 + e.namelen] = ftype;
    tp.log_buf(id, e.off, e.off + 9 + e.namelen);
}

/// Put an entry of `name` at the start of the free region `region` (which must hold it);
/// what is left of the region stays free. Returns the entry's offset.
pub fn use_free(
    tp: &mut Trans,
    id: BufId,
    region: (usize, usize),
    ino: u64,
    name: &[u8],
    ftype: u8,
) -> usize {
    let (off, len) = region;
    let size = entsize(name.len());
    debug_assert!(size <= len);
    write_entry(tp, id, off, ino, name, ftype);
    if len > size {
        write_free(tp, id, off + size, len - size);
    }
    off
}

/// Make `off..off + len` free, merging it with a free region just before and just after it
/// (inside `HDR..end`).
pub fn release(
    tp: &mut Trans,
    id: BufId,
    kind: BlockKind,
    off: usize,
    len: usize,
    end: usize,
) -> FsResult<()> {
    let b = tp.buf(id);
    let mut start = off;
    let mut stop = off + len;
    if off >= HDR + 8 {
        let prev = usize::from(get_u16(b, off - 2));
        if (HDR..off).contains(&prev) && get_u16(b, prev) == FREE_TAG {
            match slot_at(b, prev, off) {
                Ok(Slot::Free { len: l, .. }) if prev + l == off => start = prev,
                _ => {
                    return Err(corrupt(
                        tp,
                        id,
                        kind,
                        format!("free region before {off:#x} (at {prev:#x}) is malformed"),
                    ));
                }
            }
        }
    }
    if stop < end && get_u16(b, stop) == FREE_TAG {
        match slot_at(b, stop, end) {
            Ok(Slot::Free { len: l, .. }) => stop += l,
            _ => {
                return Err(corrupt(
                    tp,
                    id,
                    kind,
                    format!("free region after {off:#x} (at {stop:#x}) is malformed"),
                ));
            }
        }
    }
    write_free(tp, id, start, stop - start);
    Ok(())
}

/// The free region ending exactly at `end`, if there is one.
pub fn free_before(b: &[u8], end: usize) -> Option<(usize, usize)> {
    if end < HDR + 8 || end > b.len() {
        return None;
    }
    let start = usize::from(get_u16(b, end - 2));
    match slot_at(b, start, end) {
        Ok(Slot::Free { off, len }) if off + len == end => Some((off, len)),
        _ => None,
    }
}

/// Find the entry at byte offset `off` of a data region ending at `end`.
pub fn entry_at(b: &[u8], off: usize, end: usize) -> Result<Ent, String> {
    match slot_at(b, off, end)? {
        Slot::Entry(e) => Ok(e),
        Slot::Free { .. } => Err(format!("address points at free space at {off:#x}")),
    }
}

/// Turn a fresh, zeroed, headed block into an empty data block: one free region covering
/// `HDR..end` and a bestfree table naming it.
pub fn init_free_space(tp: &mut Trans, id: BufId, kind: BlockKind, end: usize) -> FsResult<()> {
    write_free(tp, id, HDR, end - HDR);
    refresh_bestfree(tp, id, kind, end)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_with(slots: &[(usize, Option<&[u8]>, usize)]) -> Vec<u8> {
        // (offset, Some(name) for an entry / None for free, length for free regions)
        let mut b = vec![0u8; BLOCK_SIZE];
        for &(off, name, len) in slots {
            match name {
                Some(n) => {
                    let size = entsize(n.len());
                    put_u64(&mut b, off, 1000 + off as u64);
                    b[off + 8] = n.len() as u8;
                    b[off + 9..off + 9 + n.len()].copy_from_slice(n);
                    put_u16(&mut b, off + size - 2, off as u16);
                }
                None => {
                    put_u16(&mut b, off, FREE_TAG);
                    put_u16(&mut b, off + 2, len as u16);
                    put_u16(&mut b, off + len - 2, off as u16);
                }
            }
        }
        b
    }

    #[test]
    fn bestfree_after_use_matches_a_scan_whenever_it_decides() {
        // Random blocks of entries and free regions; an entry takes the front of the largest
        // free region; the table kept from the old one must be the table a scan finds.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let (mut decided, mut scanned) = (0, 0);
        for _ in 0..20_000 {
            let mut slots: Vec<(usize, Option<&[u8]>, usize)> = Vec::new();
            let mut off = HDR;
            let mut free_last = false;
            // Half the blocks have few free regions (the table has room), half many.
            let odds = if next(2) == 0 { 60 } else { 3 };
            while off < BLOCK_SIZE {
                let room = BLOCK_SIZE - off;
                if !free_last && (next(odds) == 0 || room < 64) {
                    let len = (8 * (1 + next(12) as usize)).min(room);
                    slots.push((off, None, len));
                    off += len;
                    free_last = true;
                } else {
                    let name: &[u8] =
                        &b"abcdefghijklmnopqrstuvwxyz0123456789"[..1 + next(30) as usize];
                    if entsize(name.len()) + 8 > room {
                        slots.push((off, None, room));
                        break;
                    }
                    slots.push((off, Some(name), 0));
                    off += entsize(name.len());
                    free_last = false;
                }
            }
            let mut b = block_with(&slots);
            let old = compute_bestfree(&b, BLOCK_SIZE).unwrap();
            let (at, len) = (usize::from(old[0].0), usize::from(old[0].1));
            if len < 16 {
                continue;
            }
            // A name that fits the region, up to the longest that does.
            let longest = (1..=255).filter(|&n| entsize(n) <= len).max().unwrap_or(1);
            let name = vec![b'n'; 1 + next(longest as u64) as usize];
            let size = entsize(name.len());
            let mut with = slots.clone();
            with.retain(|s| s.0 != at);
            with.push((at, Some(&name), 0));
            if len > size {
                with.push((at + size, None, len - size));
            }
            b = block_with(&with);
            let rest = (len > size).then(|| ((at + size) as u16, (len - size) as u16));
            match bestfree_after_use(old, rest) {
                Some(bf) => {
                    decided += 1;
                    assert_eq!(bf, compute_bestfree(&b, BLOCK_SIZE).unwrap(), "{slots:?}");
                }
                None => {
                    scanned += 1;
                    assert_ne!(old[2].1, 0, "a table with room always decides");
                }
            }
        }
        assert!(
            decided > 1000 && scanned > 1000,
            "{decided} decided, {scanned} scanned"
        );
    }

    #[test]
    fn entry_sizes_are_rounded_to_eight() {
        assert_eq!(entsize(1), 16);
        assert_eq!(entsize(4), 16);
        assert_eq!(entsize(5), 24);
        assert_eq!(entsize(255), 272);
        assert_eq!(
            entsize(1),
            usize::from(super::super::sf::block_entry_size(1))
        );
    }

    #[test]
    fn walk_and_bestfree_follow_the_slots() {
        let b = block_with(&[
            (64, Some(b"a"), 0),
            (80, None, 32),
            (112, Some(b"hello"), 0),
            (136, None, 64),
            (200, Some(b"x"), 0),
            (216, None, BLOCK_SIZE - 216),
        ]);
        let s: Vec<Slot> = slots(&b, BLOCK_SIZE).map(|s| s.unwrap()).collect();
        assert_eq!(s.len(), 6);
        assert_eq!(s[2].off(), 112);
        let bf = compute_bestfree(&b, BLOCK_SIZE).unwrap();
        assert_eq!(bf, [(216, (BLOCK_SIZE - 216) as u16), (136, 64), (80, 32)]);
        assert_eq!(free_before(&b, BLOCK_SIZE), Some((216, BLOCK_SIZE - 216)));
        assert_eq!(free_before(&b, 136), None);
        assert!(entry_at(&b, 80, BLOCK_SIZE).is_err());
        assert_eq!(entry_at(&b, 112, BLOCK_SIZE).unwrap().name(&b), b"hello");
    }

    #[test]
    fn malformed_slots_are_errors_not_panics() {
        let mut b = block_with(&[(64, Some(b"abc"), 0), (80, None, BLOCK_SIZE - 80)]);
        put_u16(&mut b, 82, 3); // free length not a multiple of 8
        assert!(slots(&b, BLOCK_SIZE).any(|s| s.is_err()));
        let mut b = block_with(&[(64, Some(b"abc"), 0), (80, None, BLOCK_SIZE - 80)]);
        b[72] = 250; // name runs past a short region end
        assert!(slot_at(&b, 64, 200).is_err());
        b[72] = 0;
        assert!(slot_at(&b, 64, BLOCK_SIZE).is_err(), "empty name");
        assert!(slot_at(&b, 4090, BLOCK_SIZE).is_err());
        // The last 8 bytes of a block can only be a free region: reading a name length
        // there would run off the block.
        assert!(slot_at(&b, 4088, BLOCK_SIZE).is_err());
        assert!(slot_at(&b, 12, BLOCK_SIZE).is_err());
    }
}
