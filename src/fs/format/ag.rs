//! Allocation-group headers: AGF (free space), AGI (inodes) and AGFL (free list).
//!
//! Every AG starts with one filesystem block whose first four sectors hold, in order, the
//! superblock copy, the AGF, the AGI and the AGFL (as XFS lays them out). Each header is one
//! 512-byte sector with its own CRC.
//!
//! ## AGF (sector 1; CRC at 216; 224-byte structure, as `xfs_agf`)
//! | off | size | field | meaning |
//! |----:|----:|-------|---------|
//! | 0 | 4 | magicnum | `XAGF` |
//! | 4 | 4 | versionnum | 1 |
//! | 8 | 4 | seqno | AG number |
//! | 12 | 4 | length | blocks in this AG |
//! | 16 | 4 | bno_root | root block of the by-block free-space tree |
//! | 20 | 4 | cnt_root | root block of the by-count free-space tree |
//! | 24 | 4 | rmap_root | (0) |
//! | 28 | 4 | bno_level | height of the bno tree (1 = a single leaf) |
//! | 32 | 4 | cnt_level | height of the cnt tree |
//! | 36 | 4 | rmap_level | (0) |
//! | 40 | 4 | flfirst | first AGFL slot in use |
//! | 44 | 4 | fllast | last AGFL slot in use |
//! | 48 | 4 | flcount | blocks on the AGFL |
//! | 52 | 4 | freeblks | free blocks in the trees (not counting the AGFL) |
//! | 56 | 4 | longest | longest free extent |
//! | 60 | 4 | btreeblks | blocks used by the free-space trees beyond their roots |
//! | 64 | 16 | uuid | filesystem UUID |
//! | 80..208 | | spare | (0) |
//! | 208 | 8 | lsn | LSN of last write |
//! | 216 | 4 | crc | |
//! | 220 | 4 | spare2 | (0) |
//!
//! ## AGI (sector 2; CRC at 312; 344-byte structure, as `xfs_agi`)
//! | off | size | field | meaning |
//! |----:|----:|-------|---------|
//! | 0 | 4 | magicnum | `XAGI` |
//! | 4 | 4 | versionnum | 1 |
//! | 8 | 4 | seqno | AG number |
//! | 12 | 4 | length | blocks in this AG |
//! | 16 | 4 | count | allocated inodes |
//! | 20 | 4 | root | inobt root block |
//! | 24 | 4 | level | inobt height |
//! | 28 | 4 | freecount | free allocated inodes |
//! | 32 | 4 | newino | last allocated chunk's first inode |
//! | 36 | 4 | dirino | (null) |
//! | 40 | 256 | unlinked\[64\] | unlinked-inode bucket heads (all null in labfs) |
//! | 296 | 16 | uuid | |
//! | 312 | 4 | crc | |
//! | 316 | 4 | pad | |
//! | 320 | 8 | lsn | |
//! | 328 | 4 | free_root | finobt root block |
//! | 332 | 4 | free_level | finobt height |
//! | 336 | 4 | iblocks | inobt blocks |
//! | 340 | 4 | fblocks | finobt blocks |
//!
//! ## AGFL (sector 3; CRC at 32)
//! | off | size | field |
//! |----:|----:|-------|
//! | 0 | 4 | magicnum `XAFL` |
//! | 4 | 4 | seqno |
//! | 8 | 16 | uuid |
//! | 24 | 8 | lsn |
//! | 32 | 4 | crc |
//! | 36 | 4 x [`AGFL_SIZE`] | bno[]: a ring of free blocks reserved for the free-space trees |
//!
//! The AGFL exists because splitting a free-space tree needs a block, and taking that block
//! from the very tree being split would recurse; XFS keeps a small stock of blocks aside
//! ("fixing the freelist" before each allocation), and so does labfs.

use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u32, put_u32, put_u64};
use crate::fs::format::{BBSIZE, BlockKind, Daddr};

/// AGF magic, "XAGF".
pub const AGF_MAGIC: u32 = 0x5841_4746;
/// AGI magic, "XAGI".
pub const AGI_MAGIC: u32 = 0x5841_4749;
/// AGFL magic, "XAFL".
pub const AGFL_MAGIC: u32 = 0x5841_464c;
/// Null AG block / AG inode number.
pub const NULL_AGBLOCK: u32 = u32::MAX;
/// Slots in the AGFL ring.
pub const AGFL_SIZE: u32 = ((BBSIZE - 36) / 4) as u32;
/// Sector of each header within the AG's first block.
pub const SB_SECTOR: u64 = 0;
/// AGF sector.
pub const AGF_SECTOR: u64 = 1;
/// AGI sector.
pub const AGI_SECTOR: u64 = 2;
/// AGFL sector.
pub const AGFL_SECTOR: u64 = 3;
/// Fixed AG blocks: headers, then the roots of the four per-AG trees.
pub const BNO_ROOT_BLOCK: u32 = 1;
/// Initial cnt root.
pub const CNT_ROOT_BLOCK: u32 = 2;
/// Initial inobt root.
pub const INO_ROOT_BLOCK: u32 = 3;
/// Initial finobt root.
pub const FINO_ROOT_BLOCK: u32 = 4;
/// First block after the fixed ones.
pub const FIRST_FREE_BLOCK: u32 = 5;

fn check_header(
    kind: BlockKind,
    b: &[u8],
    daddr: Daddr,
    magic: u32,
    agno: u32,
    seq_off: usize,
) -> FsResult<()> {
    let bad = |what: String| FsError::Corrupt {
        kind,
        daddr: daddr.0,
        what,
    };
    if b.len() < BBSIZE {
        return Err(bad(format!("short header ({} bytes)", b.len())));
    }
    let m = get_u32(b, 0);
    if m != magic {
        return Err(bad(format!("bad magic {m:#010x}")));
    }
    let seq = get_u32(b, seq_off);
    if seq != agno {
        return Err(bad(format!("AG number {seq}, expected {agno}")));
    }
    Ok(())
}

fn check_uuid(
    kind: BlockKind,
    b: &[u8],
    off: usize,
    uuid: &[u8; 16],
    daddr: Daddr,
) -> FsResult<()> {
    if &b[off..off + 16] != uuid {
        return Err(FsError::Corrupt {
            kind,
            daddr: daddr.0,
            what: "UUID does not match the filesystem".into(),
        });
    }
    Ok(())
}

/// The decoded AGF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Agf {
    /// AG number.
    pub seqno: u32,
    /// Blocks in this AG.
    pub length: u32,
    /// bno tree root.
    pub bno_root: u32,
    /// cnt tree root.
    pub cnt_root: u32,
    /// bno tree height.
    pub bno_level: u32,
    /// cnt tree height.
    pub cnt_level: u32,
    /// First AGFL slot in use.
    pub flfirst: u32,
    /// Last AGFL slot in use.
    pub fllast: u32,
    /// Blocks on the AGFL.
    pub flcount: u32,
    /// Free blocks in the trees.
    pub freeblks: u32,
    /// Longest free extent.
    pub longest: u32,
    /// Free-space tree blocks beyond the roots.
    pub btreeblks: u32,
}

impl Agf {
    /// Encode into the AGF sector (CRC and LSN are the buffer layer's).
    pub fn encode(&self, b: &mut [u8], uuid: &[u8; 16]) {
        put_u32(b, 0, AGF_MAGIC);
        put_u32(b, 4, 1);
        put_u32(b, 8, self.seqno);
        put_u32(b, 12, self.length);
        put_u32(b, 16, self.bno_root);
        put_u32(b, 20, self.cnt_root);
        put_u32(b, 28, self.bno_level);
        put_u32(b, 32, self.cnt_level);
        put_u32(b, 40, self.flfirst);
        put_u32(b, 44, self.fllast);
        put_u32(b, 48, self.flcount);
        put_u32(b, 52, self.freeblks);
        put_u32(b, 56, self.longest);
        put_u32(b, 60, self.btreeblks);
        b[64..80].copy_from_slice(uuid);
    }

    /// Decode and check the AGF of AG `agno`.
    pub fn decode(b: &[u8], agno: u32, uuid: &[u8; 16], daddr: Daddr) -> FsResult<Agf> {
        check_header(BlockKind::Agf, b, daddr, AGF_MAGIC, agno, 8)?;
        check_uuid(BlockKind::Agf, b, 64, uuid, daddr)?;
        let agf = Agf {
            seqno: agno,
            length: get_u32(b, 12),
            bno_root: get_u32(b, 16),
            cnt_root: get_u32(b, 20),
            bno_level: get_u32(b, 28),
            cnt_level: get_u32(b, 32),
            flfirst: get_u32(b, 40),
            fllast: get_u32(b, 44),
            flcount: get_u32(b, 48),
            freeblks: get_u32(b, 52),
            longest: get_u32(b, 56),
            btreeblks: get_u32(b, 60),
        };
        let bad = |what: &str| FsError::Corrupt {
            kind: BlockKind::Agf,
            daddr: daddr.0,
            what: what.into(),
        };
        if agf.bno_root >= agf.length || agf.cnt_root >= agf.length {
            return Err(bad("tree root beyond the AG"));
        }
        if agf.bno_level == 0 || agf.bno_level > 8 || agf.cnt_level == 0 || agf.cnt_level > 8 {
            return Err(bad("impossible tree height"));
        }
        if agf.flcount > AGFL_SIZE || agf.flfirst >= AGFL_SIZE || agf.fllast >= AGFL_SIZE {
            return Err(bad("free list indexes out of range"));
        }
        if agf.freeblks > agf.length || agf.longest > agf.freeblks {
            return Err(bad("free block counts exceed the AG"));
        }
        Ok(agf)
    }

    /// Refuse an AGF whose length is not `ag_len`, the geometry's: every bound above trusts
    /// `length`, so a wrong one would let tree pointers reach into other AGs.
    pub fn check_length(self, ag_len: u32, daddr: Daddr) -> FsResult<Agf> {
        check_length(BlockKind::Agf, self.length, ag_len, daddr)?;
        Ok(self)
    }
}

/// The decoded AGI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Agi {
    /// AG number.
    pub seqno: u32,
    /// Blocks in this AG.
    pub length: u32,
    /// Allocated inodes.
    pub count: u32,
    /// inobt root.
    pub root: u32,
    /// inobt height.
    pub level: u32,
    /// Free allocated inodes.
    pub freecount: u32,
    /// First inode of the newest chunk.
    pub newino: u32,
    /// finobt root.
    pub free_root: u32,
    /// finobt height.
    pub free_level: u32,
    /// inobt blocks.
    pub iblocks: u32,
    /// finobt blocks.
    pub fblocks: u32,
}

impl Agi {
    /// Encode into the AGI sector (CRC and LSN are the buffer layer's).
    pub fn encode(&self, b: &mut [u8], uuid: &[u8; 16]) {
        put_u32(b, 0, AGI_MAGIC);
        put_u32(b, 4, 1);
        put_u32(b, 8, self.seqno);
        put_u32(b, 12, self.length);
        put_u32(b, 16, self.count);
        put_u32(b, 20, self.root);
        put_u32(b, 24, self.level);
        put_u32(b, 28, self.freecount);
        put_u32(b, 32, self.newino);
        put_u32(b, 36, NULL_AGBLOCK);
        for i in 0..64 {
            put_u32(b, 40 + 4 * i, NULL_AGBLOCK);
        }
        b[296..312].copy_from_slice(uuid);
        put_u32(b, 328, self.free_root);
        put_u32(b, 332, self.free_level);
        put_u32(b, 336, self.iblocks);
        put_u32(b, 340, self.fblocks);
    }

    /// Decode and check the AGI of AG `agno`.
    pub fn decode(b: &[u8], agno: u32, uuid: &[u8; 16], daddr: Daddr) -> FsResult<Agi> {
        check_header(BlockKind::Agi, b, daddr, AGI_MAGIC, agno, 8)?;
        check_uuid(BlockKind::Agi, b, 296, uuid, daddr)?;
        let agi = Agi {
            seqno: agno,
            length: get_u32(b, 12),
            count: get_u32(b, 16),
            root: get_u32(b, 20),
            level: get_u32(b, 24),
            freecount: get_u32(b, 28),
            newino: get_u32(b, 32),
            free_root: get_u32(b, 328),
            free_level: get_u32(b, 332),
            iblocks: get_u32(b, 336),
            fblocks: get_u32(b, 340),
        };
        let bad = |what: &str| FsError::Corrupt {
            kind: BlockKind::Agi,
            daddr: daddr.0,
            what: what.into(),
        };
        if agi.root >= agi.length || agi.free_root >= agi.length {
            return Err(bad("tree root beyond the AG"));
        }
        if agi.level == 0 || agi.level > 8 || agi.free_level == 0 || agi.free_level > 8 {
            return Err(bad("impossible tree height"));
        }
        if agi.freecount > agi.count {
            return Err(bad("more free inodes than allocated ones"));
        }
        Ok(agi)
    }

    /// Refuse an AGI whose length is not `ag_len`, the geometry's (as [`Agf::check_length`]).
    pub fn check_length(self, ag_len: u32, daddr: Daddr) -> FsResult<Agi> {
        check_length(BlockKind::Agi, self.length, ag_len, daddr)?;
        Ok(self)
    }
}

fn check_length(kind: BlockKind, length: u32, ag_len: u32, daddr: Daddr) -> FsResult<()> {
    if length == ag_len {
        return Ok(());
    }
    Err(FsError::Corrupt {
        kind,
        daddr: daddr.0,
        what: format!("length {length} but the AG has {ag_len} blocks"),
    })
}

/// Write the AGFL header (magic, AG, UUID); slots are set with [`agfl_set`].
pub fn agfl_init(b: &mut [u8], agno: u32, uuid: &[u8; 16]) {
    b[..BBSIZE].fill(0);
    put_u32(b, 0, AGFL_MAGIC);
    put_u32(b, 4, agno);
    b[8..24].copy_from_slice(uuid);
    put_u64(b, 24, 0);
    for i in 0..AGFL_SIZE as usize {
        put_u32(b, 36 + 4 * i, NULL_AGBLOCK);
    }
}

/// Check an AGFL sector's header.
pub fn agfl_check(b: &[u8], agno: u32, uuid: &[u8; 16], daddr: Daddr) -> FsResult<()> {
    check_header(BlockKind::Agfl, b, daddr, AGFL_MAGIC, agno, 4)?;
    check_uuid(BlockKind::Agfl, b, 8, uuid, daddr)
}

/// The block in AGFL slot `i`.
pub fn agfl_get(b: &[u8], i: u32) -> u32 {
    get_u32(b, 36 + 4 * i as usize)
}

/// Set AGFL slot `i`.
pub fn agfl_set(b: &mut [u8], i: u32, agbno: u32) {
    put_u32(b, 36 + 4 * i as usize, agbno);
}

/// Byte range of AGFL slot `i`, for logging.
pub fn agfl_slot_range(i: u32) -> (usize, usize) {
    let off = 36 + 4 * i as usize;
    (off, off + 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: [u8; 16] = [3; 16];

    #[test]
    fn agf_round_trips_and_checks() {
        let agf = Agf {
            seqno: 2,
            length: 1000,
            bno_root: 1,
            cnt_root: 2,
            bno_level: 1,
            cnt_level: 1,
            flfirst: 0,
            fllast: 3,
            flcount: 4,
            freeblks: 900,
            longest: 900,
            btreeblks: 0,
        };
        let mut b = vec![0u8; 512];
        agf.encode(&mut b, &UUID);
        assert_eq!(Agf::decode(&b, 2, &UUID, Daddr(8)).unwrap(), agf);
        assert!(matches!(
            Agf::decode(&b, 1, &UUID, Daddr(8)),
            Err(FsError::Corrupt { .. })
        ));
        assert!(Agf::decode(&b, 2, &[0; 16], Daddr(8)).is_err());
        put_u32(&mut b, 56, 5000);
        assert!(Agf::decode(&b, 2, &UUID, Daddr(8)).is_err());
    }

    #[test]
    fn agi_round_trips_with_null_unlinked_buckets() {
        let agi = Agi {
            seqno: 0,
            length: 1000,
            count: 64,
            root: 3,
            level: 1,
            freecount: 10,
            newino: 128,
            free_root: 4,
            free_level: 1,
            iblocks: 1,
            fblocks: 1,
        };
        let mut b = vec![0u8; 512];
        agi.encode(&mut b, &UUID);
        assert_eq!(get_u32(&b, 40), NULL_AGBLOCK);
        assert_eq!(Agi::decode(&b, 0, &UUID, Daddr(16)).unwrap(), agi);
        put_u32(&mut b, 28, 65);
        assert!(Agi::decode(&b, 0, &UUID, Daddr(16)).is_err());
    }

    #[test]
    fn agfl_slots() {
        let mut b = vec![0u8; 512];
        agfl_init(&mut b, 1, &UUID);
        agfl_check(&b, 1, &UUID, Daddr(0)).unwrap();
        agfl_set(&mut b, AGFL_SIZE - 1, 77);
        assert_eq!(agfl_get(&b, AGFL_SIZE - 1), 77);
        assert_eq!(AGFL_SIZE, 119);
        assert!(agfl_check(&b, 2, &UUID, Daddr(0)).is_err());
    }
}
