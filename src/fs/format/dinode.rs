//! The on-disk inode: 512 bytes, eight to a block, allocated in chunks of 64.
//!
//! The first 176 bytes are the core (as XFS's v3 `xfs_dinode`, CRC at 100 over the whole
//! 512-byte inode); the remaining 336 bytes are the *literal area* holding the data fork.
//!
//! | off | size | field | meaning |
//! |----:|----:|-------|---------|
//! | 0 | 2 | magic | `IN` |
//! | 2 | 2 | mode | type and permission bits (0 = free inode) |
//! | 4 | 1 | version | 3 |
//! | 5 | 1 | format | data fork format: 1 local, 2 extents, 3 btree |
//! | 6 | 2 | onlink | (0) |
//! | 8 | 4 | uid | |
//! | 12 | 4 | gid | |
//! | 16 | 4 | nlink | link count |
//! | 20 | 4 | projid | (0) |
//! | 24 | 8 | pad | (0) |
//! | 32 | 8 | atime | nanoseconds since the epoch (signed; XFS "bigtime" spirit) |
//! | 40 | 8 | mtime | |
//! | 48 | 8 | ctime | |
//! | 56 | 8 | size | file size in bytes (directory: bytes of its data, see `dir`) |
//! | 64 | 8 | nblocks | blocks used (data and bmbt blocks) |
//! | 72 | 4 | extsize | (0) |
//! | 76 | 4 | nextents | data fork extents |
//! | 80 | 2 | anextents | (0: labfs has no attribute fork) |
//! | 82 | 1 | forkoff | (0) |
//! | 83 | 1 | aformat | (2) |
//! | 84 | 4 | dmevmask | (0) |
//! | 88 | 2 | dmstate | (0) |
//! | 90 | 2 | flags | (0) |
//! | 92 | 4 | gen | generation number |
//! | 96 | 4 | next_unlinked | (null) |
//! | 100 | 4 | crc | CRC-32C of the 512-byte inode |
//! | 104 | 8 | changecount | bumped on every change (i_version) |
//! | 112 | 8 | lsn | LSN of last write |
//! | 120 | 8 | flags2 | (0) |
//! | 128 | 4 | cowextsize | (0) |
//! | 132 | 12 | pad2 | (0) |
//! | 144 | 8 | crtime | creation time, ns |
//! | 152 | 8 | ino | this inode's number (self-description) |
//! | 160 | 16 | uuid | filesystem UUID |
//! | 176 | 336 | literal area | the data fork, per `format` |
//!
//! Data fork encodings in the literal area: *local* holds the bytes themselves (shortform
//! directories); *extents* holds `nextents` 16-byte packed extent records (at most
//! [`MAX_INLINE_EXTENTS`]); *btree* holds the root of the file's extent-map B+tree as
//! `root fsblock u64, level u16`.

use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::fs::format::{BlockKind, Daddr, INODE_SIZE};

/// Inode magic, "IN".
pub const DINODE_MAGIC: u16 = 0x494e;
/// Inode version written by labfs.
pub const DINODE_VERSION: u8 = 3;
/// Size of the core.
pub const CORE_SIZE: usize = 176;
/// Bytes available to the data fork.
pub const LITERAL_SIZE: usize = INODE_SIZE - CORE_SIZE;
/// Bytes of one packed extent record.
pub const EXTENT_REC_SIZE: usize = 16;
/// Extent records that fit in the literal area.
pub const MAX_INLINE_EXTENTS: usize = LITERAL_SIZE / EXTENT_REC_SIZE;
/// Null value of `next_unlinked`.
pub const NULL_AGINO: u32 = u32::MAX;

/// How the data fork is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForkFormat {
    /// Data inside the inode (shortform directory).
    #[default]
    Local,
    /// Extent records inside the inode.
    Extents,
    /// Root of an extent-map B+tree.
    Btree,
}

impl ForkFormat {
    fn to_disk(self) -> u8 {
        match self {
            ForkFormat::Local => 1,
            ForkFormat::Extents => 2,
            ForkFormat::Btree => 3,
        }
    }

    fn from_disk(v: u8) -> Option<ForkFormat> {
        match v {
            1 => Some(ForkFormat::Local),
            2 => Some(ForkFormat::Extents),
            3 => Some(ForkFormat::Btree),
            _ => None,
        }
    }
}

/// The fields of the inode core labfs keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DinodeCore {
    /// Type and permission bits; 0 for a free inode.
    pub mode: u16,
    /// Data fork format.
    pub format: ForkFormat,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u32,
    /// Access time, ns.
    pub atime: i64,
    /// Modification time, ns.
    pub mtime: i64,
    /// Change time, ns.
    pub ctime: i64,
    /// Creation time, ns.
    pub crtime: i64,
    /// Size in bytes.
    pub size: u64,
    /// Blocks used.
    pub nblocks: u64,
    /// Data fork extents.
    pub nextents: u32,
    /// Generation.
    pub generation: u32,
    /// Change counter.
    pub changecount: u64,
}

/// Write the core of inode `ino` into `b` (512 bytes); the literal area is untouched.
pub fn encode_core(b: &mut [u8], ino: u64, c: &DinodeCore, uuid: &[u8; 16]) {
    b[..CORE_SIZE].fill(0);
    put_u16(b, 0, DINODE_MAGIC);
    put_u16(b, 2, c.mode);
    b[4] = DINODE_VERSION;
    b[5] = c.format.to_disk();
    put_u32(b, 8, c.uid);
    put_u32(b, 12, c.gid);
    put_u32(b, 16, c.nlink);
    put_u64(b, 32, c.atime as u64);
    put_u64(b, 40, c.mtime as u64);
    put_u64(b, 48, c.ctime as u64);
    put_u64(b, 56, c.size);
    put_u64(b, 64, c.nblocks);
    put_u32(b, 76, c.nextents);
    b[83] = 2;
    put_u32(b, 92, c.generation);
    put_u32(b, 96, NULL_AGINO);
    put_u64(b, 104, c.changecount);
    put_u64(b, 144, c.crtime as u64);
    put_u64(b, 152, ino);
    b[160..176].copy_from_slice(uuid);
}

/// Decode and check the core of the inode at `b` (512 bytes, CRC already verified), which
/// must be inode `ino` of this filesystem.
pub fn decode_core(b: &[u8], ino: u64, uuid: &[u8; 16], daddr: Daddr) -> FsResult<DinodeCore> {
    let bad = |what: String| FsError::Corrupt {
        kind: BlockKind::Inode,
        daddr: daddr.0,
        what,
    };
    if b.len() < INODE_SIZE {
        return Err(bad(format!("inode {ino}: short buffer")));
    }
    let magic = get_u16(b, 0);
    if magic != DINODE_MAGIC {
        return Err(bad(format!("inode {ino}: bad magic {magic:#06x}")));
    }
    if b[4] != DINODE_VERSION {
        return Err(bad(format!("inode {ino}: version {}", b[4])));
    }
    let self_ino = get_u64(b, 152);
    if self_ino != ino {
        return Err(bad(format!(
            "inode {ino}: records itself as inode {self_ino}"
        )));
    }
    if &b[160..176] != uuid {
        return Err(bad(format!(
            "inode {ino}: UUID does not match the filesystem"
        )));
    }
    let mode = get_u16(b, 2);
    let format = match ForkFormat::from_disk(b[5]) {
        Some(f) => f,
        None if mode == 0 => ForkFormat::Extents,
        None => return Err(bad(format!("inode {ino}: unknown fork format {}", b[5]))),
    };
    let nextents = get_u32(b, 76);
    if format == ForkFormat::Extents && nextents as usize > MAX_INLINE_EXTENTS {
        return Err(bad(format!(
            "inode {ino}: {nextents} inline extents do not fit"
        )));
    }
    Ok(DinodeCore {
        mode,
        format,
        uid: get_u32(b, 8),
        gid: get_u32(b, 12),
        nlink: get_u32(b, 16),
        atime: get_u64(b, 32) as i64,
        mtime: get_u64(b, 40) as i64,
        ctime: get_u64(b, 48) as i64,
        crtime: get_u64(b, 144) as i64,
        size: get_u64(b, 56),
        nblocks: get_u64(b, 64),
        nextents,
        generation: get_u32(b, 92),
        changecount: get_u64(b, 104),
    })
}

/// The literal area of an inode buffer.
pub fn literal(b: &[u8]) -> &[u8] {
    &b[CORE_SIZE..INODE_SIZE]
}

/// The literal area of an inode buffer, writable.
pub fn literal_mut(b: &mut [u8]) -> &mut [u8] {
    &mut b[CORE_SIZE..INODE_SIZE]
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: [u8; 16] = [9; 16];

    #[test]
    fn core_round_trips_and_leaves_the_literal_area() {
        let c = DinodeCore {
            mode: 0o100644,
            format: ForkFormat::Extents,
            uid: 1000,
            gid: 100,
            nlink: 1,
            atime: -5,
            mtime: 1_700_000_000_000_000_000,
            ctime: 3,
            crtime: 4,
            size: 4096,
            nblocks: 1,
            nextents: 1,
            generation: 42,
            changecount: 7,
        };
        let mut b = vec![0xeeu8; 512];
        encode_core(&mut b, 131, &c, &UUID);
        assert_eq!(literal(&b)[0], 0xee);
        assert_eq!(
            b[100..104],
            [0, 0, 0, 0],
            "CRC slot left to the buffer layer"
        );
        assert_eq!(decode_core(&b, 131, &UUID, Daddr(1)).unwrap(), c);
    }

    #[test]
    fn misplaced_or_foreign_inodes_are_corrupt() {
        let mut b = vec![0u8; 512];
        encode_core(
            &mut b,
            131,
            &DinodeCore {
                mode: 0o40755,
                ..Default::default()
            },
            &UUID,
        );
        assert!(decode_core(&b, 132, &UUID, Daddr(1)).is_err());
        assert!(decode_core(&b, 131, &[1; 16], Daddr(1)).is_err());
        b[5] = 9;
        assert!(decode_core(&b, 131, &UUID, Daddr(1)).is_err());
        b[5] = 2;
        put_u32(&mut b, 76, 22);
        assert!(decode_core(&b, 131, &UUID, Daddr(1)).is_err());
        b[0] = 0;
        assert!(decode_core(&b, 131, &UUID, Daddr(1)).is_err());
    }

    #[test]
    fn literal_area_holds_21_extents() {
        assert_eq!(LITERAL_SIZE, 336);
        assert_eq!(MAX_INLINE_EXTENTS, 21);
    }
}
