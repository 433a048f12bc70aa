//! Shortform directories: the entries inside the inode's literal area.
//!
//! Layout (all big-endian):
//!
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 1 | count: entries |
//! | 1 | 1 | i8count: entries with 8-byte inode numbers (labfs writes all inode numbers as 8 bytes, so = count) |
//! | 2 | 8 | parent inode (`..`) |
//! | 10.. | | entries |
//!
//! Entry: `namelen u8, offset u16, name[namelen], ftype u8, ino u64` (12 + namelen bytes).
//! `offset` is the entry's position in the block form, kept so a readdir cookie stays valid
//! across the conversion (as XFS does); `.` is implicit. Offsets are multiples of 8, start at
//! 96 (after the data header, `.` and `..`), increase without overlap (each entry taking its
//! block-form size), and leave room for the block form's hash leaf and tail: converting to a
//! block places every entry at its offset. A new entry goes after the last one; when that
//! would not fit a block, the offsets are renumbered densely first (XFS instead looks for a
//! hole; no cookie outlives a change here, so renumbering is simpler and as good).

use crate::fs::error::{FsError, FsResult};
use crate::fs::format::BlockKind;
use crate::fs::format::endian::{get_u16, get_u64, put_u16, put_u64};
use crate::fs::vfs::FileKind;

/// Header bytes.
pub const HDR: usize = 10;
/// End of the block form's data region for `entries` entries besides `.` and `..`: the hash
/// leaf (8 bytes per entry, dots included) and the 8-byte tail follow it.
pub fn block_data_end(entries: usize) -> usize {
    crate::fs::format::BLOCK_SIZE - 8 - 8 * (entries + 2)
}
/// First block-form offset given to an entry (after the data header and `.`/`..`).
pub const FIRST_OFFSET: u16 = 96;

/// One shortform entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SfEntry {
    /// Name.
    pub name: Vec<u8>,
    /// Block-form offset cookie.
    pub offset: u16,
    /// Kind (ftype).
    pub kind: FileKind,
    /// Inode number.
    pub ino: u64,
}

/// A decoded shortform directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortform {
    /// `..`.
    pub parent: u64,
    /// Entries in offset order.
    pub entries: Vec<SfEntry>,
}

/// The ftype byte of a kind (XFS's XFS_DIR3_FT_* values).
pub fn ftype(kind: FileKind) -> u8 {
    match kind {
        FileKind::File => 1,
        FileKind::Dir => 2,
        FileKind::Symlink => 7,
        FileKind::Other => 0,
    }
}

/// The kind of an ftype byte.
pub fn kind_of_ftype(t: u8) -> FileKind {
    match t {
        1 => FileKind::File,
        2 => FileKind::Dir,
        7 => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

/// Block-form size of an entry with a name of `len` bytes (8-byte aligned).
pub fn block_entry_size(len: usize) -> u16 {
    (8 + 1 + len + 1 + 2).div_ceil(8) as u16 * 8
}

fn corrupt(what: &str) -> FsError {
    FsError::Corrupt {
        kind: BlockKind::Inode,
        daddr: 0,
        what: format!("shortform directory: {what}"),
    }
}

impl Shortform {
    /// An empty directory whose parent is `parent`.
    pub fn new(parent: u64) -> Shortform {
        Shortform {
            parent,
            entries: Vec::new(),
        }
    }

    /// Decode, checking every length.
    pub fn decode(b: &[u8]) -> FsResult<Shortform> {
        if b.len() < HDR {
            return Err(corrupt("shorter than its header"));
        }
        let count = b[0] as usize;
        let parent = get_u64(b, 2);
        let mut entries = Vec::with_capacity(count);
        let mut p = HDR;
        for _ in 0..count {
            let namelen = *b.get(p).ok_or_else(|| corrupt("entry runs past the end"))? as usize;
            if namelen == 0 || p + 12 + namelen > b.len() {
                return Err(corrupt("entry runs past the end"));
            }
            let offset = get_u16(b, p + 1);
            let name = b[p + 3..p + 3 + namelen].to_vec();
            let kind = kind_of_ftype(b[p + 3 + namelen]);
            let ino = get_u64(b, p + 4 + namelen);
            entries.push(SfEntry {
                name,
                offset,
                kind,
                ino,
            });
            p += 12 + namelen;
        }
        if p != b.len() {
            return Err(corrupt("trailing bytes after the last entry"));
        }
        let mut next = usize::from(FIRST_OFFSET);
        for e in &entries {
            let off = usize::from(e.offset);
            if off < next || off % 8 != 0 {
                return Err(corrupt(
                    "entry offsets overlap, run backwards or are misaligned",
                ));
            }
            next = off + usize::from(block_entry_size(e.name.len()));
        }
        if next > block_data_end(entries.len()) {
            return Err(corrupt("entry offsets do not fit the block form"));
        }
        Ok(Shortform { parent, entries })
    }

    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.size()];
        b[0] = self.entries.len() as u8;
        b[1] = self.entries.len() as u8;
        put_u64(&mut b, 2, self.parent);
        let mut p = HDR;
        for e in &self.entries {
            let n = e.name.len();
            b[p] = n as u8;
            put_u16(&mut b, p + 1, e.offset);
            b[p + 3..p + 3 + n].copy_from_slice(&e.name);
            b[p + 3 + n] = ftype(e.kind);
            put_u64(&mut b, p + 4 + n, e.ino);
            p += 12 + n;
        }
        b
    }

    /// Encoded size.
    pub fn size(&self) -> usize {
        HDR + self
            .entries
            .iter()
            .map(|e| 12 + e.name.len())
            .sum::<usize>()
    }

    /// The entry named `name`.
    pub fn find(&self, name: &[u8]) -> Option<&SfEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entry named `name`, writable.
    pub fn find_mut(&mut self, name: &[u8]) -> Option<&mut SfEntry> {
        self.entries.iter_mut().find(|e| e.name == name)
    }

    /// Block-form offset just past the last entry.
    fn end_offset(&self) -> usize {
        self.entries.last().map_or(usize::from(FIRST_OFFSET), |e| {
            usize::from(e.offset) + usize::from(block_entry_size(e.name.len()))
        })
    }

    /// Give the entries dense offsets from [`FIRST_OFFSET`], keeping their order.
    pub fn renumber(&mut self) {
        let mut off = FIRST_OFFSET;
        for e in &mut self.entries {
            e.offset = off;
            off += block_entry_size(e.name.len());
        }
    }

    /// Append an entry after the last one's offset (renumbering first if it would not fit
    /// the block form there).
    pub fn add(&mut self, name: &[u8], ino: u64, kind: FileKind) {
        let size = usize::from(block_entry_size(name.len()));
        if self.end_offset() + size > block_data_end(self.entries.len() + 1) {
            self.renumber();
        }
        let offset = self.end_offset() as u16;
        self.entries.push(SfEntry {
            name: name.to_vec(),
            offset,
            kind,
            ino,
        });
    }

    /// Remove an entry, returning its inode.
    pub fn remove(&mut self, name: &[u8]) -> Option<u64> {
        let i = self.entries.iter().position(|e| e.name == name)?;
        Some(self.entries.remove(i).ino)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let mut sf = Shortform::new(128);
        sf.add(b"a", 131, FileKind::File);
        sf.add(b"subdir", 200, FileKind::Dir);
        let b = sf.encode();
        assert_eq!(b.len(), HDR + 13 + 18);
        assert_eq!(Shortform::decode(&b).unwrap(), sf);
        assert!(Shortform::decode(&b[..b.len() - 1]).is_err());
        assert_eq!(sf.entries[1].offset, FIRST_OFFSET + 16);
        assert_eq!(sf.remove(b"a"), Some(131));
        assert_eq!(sf.find(b"subdir").map(|e| e.ino), Some(200));
    }

    #[test]
    fn decode_rejects_offsets_that_would_not_make_a_block() {
        let mut sf = Shortform::new(128);
        sf.add(b"a", 131, FileKind::File);
        sf.add(b"b", 132, FileKind::File);
        sf.entries[1].offset = sf.entries[0].offset; // overlap
        assert!(Shortform::decode(&sf.encode()).is_err());
        sf.entries[1].offset = 4090; // past the block's data region
        assert!(Shortform::decode(&sf.encode()).is_err());
        sf.entries[1].offset = 113; // misaligned
        assert!(Shortform::decode(&sf.encode()).is_err());
    }

    #[test]
    fn offsets_creep_then_renumber_instead_of_leaving_the_block() {
        let mut sf = Shortform::new(128);
        sf.add(b"keep", 1, FileKind::File);
        for i in 0..1000u32 {
            let name = format!("n{i}");
            sf.add(name.as_bytes(), 2, FileKind::File);
            assert!(Shortform::decode(&sf.encode()).is_ok(), "step {i}");
            if i % 2 == 0 {
                sf.remove(b"keep");
                sf.add(b"keep", 1, FileKind::File);
            }
            sf.remove(name.as_bytes());
        }
        assert!(sf.entries.iter().all(|e| usize::from(e.offset) < 4096));
    }
}
