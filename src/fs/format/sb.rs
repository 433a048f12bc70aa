//! The superblock: sector 0 of every allocation group (AG 0's is primary; the others are
//! copies written at mkfs and unmount).
//!
//! Layout (512-byte sector, CRC over the whole sector at 224, as XFS's `xfs_dsb`). Fields
//! labfs does not use keep their XFS positions and are written as zero.
//!
//! | off | size | field | meaning |
//! |----:|----:|-------|---------|
//! | 0 | 4 | magicnum | `XFSB` |
//! | 4 | 4 | blocksize | filesystem block size (4096) |
//! | 8 | 8 | dblocks | blocks in the filesystem |
//! | 16 | 8 | rblocks | realtime blocks (0) |
//! | 24 | 8 | rextents | realtime extents (0) |
//! | 32 | 16 | uuid | filesystem UUID (also in every metadata block) |
//! | 48 | 8 | logstart | first block of the internal log |
//! | 56 | 8 | rootino | root directory inode |
//! | 64 | 8 | rbmino | (0) |
//! | 72 | 8 | rsumino | (0) |
//! | 80 | 4 | rextsize | (0) |
//! | 84 | 4 | agblocks | blocks per AG (the last AG may be shorter) |
//! | 88 | 4 | agcount | number of AGs |
//! | 92 | 4 | rbmblocks | (0) |
//! | 96 | 4 | logblocks | blocks in the log |
//! | 100 | 2 | versionnum | 5 |
//! | 102 | 2 | sectsize | 512 |
//! | 104 | 2 | inodesize | 512 |
//! | 106 | 2 | inopblock | inodes per block (8) |
//! | 108 | 12 | fname | volume label, NUL padded |
//! | 120 | 1 | blocklog | log2 blocksize (12) |
//! | 121 | 1 | sectlog | log2 sectsize (9) |
//! | 122 | 1 | inodelog | log2 inodesize (9) |
//! | 123 | 1 | inopblog | log2 inopblock (3) |
//! | 124 | 1 | agblklog | ceil(log2 agblocks): bits of the AG block number in an inode number |
//! | 125 | 1 | rextslog | (0) |
//! | 126 | 1 | inprogress | 1 while mkfs is running |
//! | 127 | 1 | imax_pct | (0) |
//! | 128 | 8 | icount | allocated inodes (summed from the AGIs at mount; lazy) |
//! | 136 | 8 | ifree | free allocated inodes (lazy) |
//! | 144 | 8 | fdblocks | free data blocks (lazy) |
//! | 152 | 8 | frextents | (0) |
//! | 160..208 | | quota inodes, flags, alignment, stripe geometry | (0 / unused) |
//! | 192 | 1 | dirblklog | log2 of directory block size in fs blocks (0) |
//! | 208 | 4 | features_compat | (0) |
//! | 212 | 4 | features_ro_compat | (0) |
//! | 216 | 4 | features_incompat | (0) |
//! | 220 | 4 | features_log_incompat | (0) |
//! | 224 | 4 | crc | CRC-32C of the sector, little-endian |
//! | 228 | 4 | spino_align | (0) |
//! | 232 | 8 | pquotino | (0) |
//! | 240 | 8 | lsn | LSN of the last write |
//! | 248 | 16 | meta_uuid | (= uuid) |
//! | 264.. | | zero | |

use crate::fs::error::{FsError, FsResult, SbProblem};
use crate::fs::format::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::fs::format::{
    BBSHIFT, BBSIZE, BLOCK_SHIFT, BLOCK_SIZE, BlockKind, Daddr, INODE_SIZE, INODES_PER_BLOCK,
};

/// Superblock magic, "XFSB".
pub const SB_MAGIC: u32 = 0x5846_5342;
/// The only on-disk version labfs writes.
pub const SB_VERSION: u16 = 5;
/// "No inode" value of inode-number fields.
pub const NULL_INO: u64 = u64::MAX;

/// The decoded superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// Blocks in the filesystem.
    pub dblocks: u64,
    /// Filesystem UUID.
    pub uuid: [u8; 16],
    /// First block of the internal log.
    pub logstart: u64,
    /// Blocks in the log.
    pub logblocks: u32,
    /// Root directory inode.
    pub rootino: u64,
    /// Blocks per AG.
    pub agblocks: u32,
    /// Number of AGs.
    pub agcount: u32,
    /// ceil(log2(agblocks)).
    pub agblklog: u8,
    /// Volume label.
    pub fname: [u8; 12],
    /// mkfs has not finished.
    pub inprogress: bool,
    /// Allocated inodes.
    pub icount: u64,
    /// Free allocated inodes.
    pub ifree: u64,
    /// Free data blocks.
    pub fdblocks: u64,
    /// LSN of the last write.
    pub lsn: u64,
}

impl Superblock {
    /// Encode into a zeroed 512-byte sector (the CRC is left to the buffer layer).
    pub fn encode(&self, b: &mut [u8]) {
        b[..BBSIZE].fill(0);
        put_u32(b, 0, SB_MAGIC);
        put_u32(b, 4, BLOCK_SIZE as u32);
        put_u64(b, 8, self.dblocks);
        b[32..48].copy_from_slice(&self.uuid);
        put_u64(b, 48, self.logstart);
        put_u64(b, 56, self.rootino);
        put_u64(b, 64, NULL_INO);
        put_u64(b, 72, NULL_INO);
        put_u32(b, 84, self.agblocks);
        put_u32(b, 88, self.agcount);
        put_u32(b, 96, self.logblocks);
        put_u16(b, 100, SB_VERSION);
        put_u16(b, 102, BBSIZE as u16);
        put_u16(b, 104, INODE_SIZE as u16);
        put_u16(b, 106, INODES_PER_BLOCK as u16);
        b[108..120].copy_from_slice(&self.fname);
        b[120] = BLOCK_SHIFT as u8;
        b[121] = BBSHIFT as u8;
        b[122] = INODE_SIZE.trailing_zeros() as u8;
        b[123] = INODES_PER_BLOCK.trailing_zeros() as u8;
        b[124] = self.agblklog;
        b[126] = u8::from(self.inprogress);
        put_u64(b, 128, self.icount);
        put_u64(b, 136, self.ifree);
        put_u64(b, 144, self.fdblocks);
        put_u64(b, 240, self.lsn);
        b[248..264].copy_from_slice(&self.uuid);
    }

    /// Decode and check a superblock sector read from `daddr` (CRC already verified).
    pub fn decode(b: &[u8], daddr: Daddr) -> FsResult<Superblock> {
        let bad = |what: String| FsError::Corrupt {
            kind: BlockKind::Superblock,
            daddr: daddr.0,
            what,
        };
        if b.len() < BBSIZE {
            return Err(bad(format!("short superblock ({} bytes)", b.len())));
        }
        let magic = get_u32(b, 0);
        if magic != SB_MAGIC {
            return Err(FsError::BadSuperblock(SbProblem::BadMagic { found: magic }));
        }
        let version = get_u16(b, 100);
        if version != SB_VERSION {
            return Err(FsError::BadSuperblock(SbProblem::UnsupportedVersion {
                version,
            }));
        }
        let blocksize = get_u32(b, 4);
        if blocksize as usize != BLOCK_SIZE
            || get_u16(b, 102) as usize != BBSIZE
            || get_u16(b, 104) as usize != INODE_SIZE
        {
            return Err(FsError::BadSuperblock(SbProblem::UnsupportedGeometry {
                block: blocksize,
                sector: get_u16(b, 102),
                inode: get_u16(b, 104),
            }));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[32..48]);
        let mut fname = [0u8; 12];
        fname.copy_from_slice(&b[108..120]);
        let sb = Superblock {
            dblocks: get_u64(b, 8),
            uuid,
            logstart: get_u64(b, 48),
            rootino: get_u64(b, 56),
            agblocks: get_u32(b, 84),
            agcount: get_u32(b, 88),
            logblocks: get_u32(b, 96),
            agblklog: b[124],
            fname,
            inprogress: b[126] != 0,
            icount: get_u64(b, 128),
            ifree: get_u64(b, 136),
            fdblocks: get_u64(b, 144),
            lsn: get_u64(b, 240),
        };
        sb.check().map_err(|w| bad(w.to_string()))?;
        Ok(sb)
    }

    /// Geometry sanity: the numbers must describe a filesystem labfs can address.
    fn check(&self) -> Result<(), &'static str> {
        if self.agcount == 0 || self.agblocks < 64 {
            return Err("AG count or size too small");
        }
        if u64::from(self.agcount - 1) * u64::from(self.agblocks) >= self.dblocks
            || u64::from(self.agcount) * u64::from(self.agblocks) < self.dblocks
        {
            return Err("dblocks does not match agcount x agblocks");
        }
        if u32::from(self.agblklog) != ceil_log2(self.agblocks) {
            return Err("agblklog does not match agblocks");
        }
        if self.logblocks == 0
            || self.logstart + u64::from(self.logblocks) > u64::from(self.agblocks)
        {
            return Err("log does not fit in AG 0");
        }
        Ok(())
    }
}

/// ceil(log2(n)) for n >= 1.
pub fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        Superblock {
            dblocks: 262_144,
            uuid: [7; 16],
            logstart: 16,
            logblocks: 4096,
            rootino: 128,
            agblocks: 65_536,
            agcount: 4,
            agblklog: 16,
            fname: *b"labfs\0\0\0\0\0\0\0",
            inprogress: false,
            icount: 64,
            ifree: 61,
            fdblocks: 250_000,
            lsn: 0,
        }
    }

    #[test]
    fn round_trips_at_xfs_offsets() {
        let sb = sample();
        let mut b = vec![0u8; 512];
        sb.encode(&mut b);
        assert_eq!(&b[0..4], b"XFSB");
        assert_eq!(get_u64(&b, 56), 128, "rootino at 56 as in xfs_dsb");
        assert_eq!(Superblock::decode(&b, Daddr(0)).unwrap(), sb);
    }

    #[test]
    fn rejects_foreign_and_inconsistent_images() {
        let mut b = vec![0u8; 512];
        assert_eq!(
            Superblock::decode(&b, Daddr(0)),
            Err(FsError::BadSuperblock(SbProblem::BadMagic { found: 0 }))
        );
        let mut sb = sample();
        sb.agcount = 9;
        sb.encode(&mut b);
        assert!(matches!(
            Superblock::decode(&b, Daddr(0)),
            Err(FsError::Corrupt { .. })
        ));
        assert!(Superblock::decode(&b[..100], Daddr(0)).is_err());
    }

    #[test]
    fn ceil_log2_matches_definition() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(65_536), 16);
        assert_eq!(ceil_log2(65_537), 17);
    }
}
