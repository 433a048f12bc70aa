//! Filesystem geometry: turning AG-relative numbers into device addresses and back.
//!
//! As in XFS, space is split into allocation groups (AGs) of `agblocks` blocks; each AG
//! manages its own free space and inodes, so operations in different AGs do not contend.
//!
//! - A **filesystem block number** (`fsblock`) here is linear: `agno * agblocks + agbno`.
//!   (XFS packs `agno << agblklog | agbno`; labfs keeps the linear form on disk because it
//!   makes bmbt records and device addresses the same number.)
//! - An **inode number** packs the inode's location: `agno << (agblklog + 3) | agbno << 3 |
//!   slot`, slot being the inode's index (0..8) in its 4 KiB block, exactly as XFS does with
//!   512-byte inodes. So an inode number names the block that holds it.
//! - Inodes are read and written home in **inode cluster buffers** of
//!   [`INODE_CLUSTER_SIZE`] bytes (16 KiB: 32 inodes, two to a 64-inode chunk), sized as
//!   XFS's `xfs_ialloc_setup_geometry` sizes them; [`Geometry::ino_location`] names an
//!   inode's cluster and its offset in it.

use crate::fs::format::sb::Superblock;
use crate::fs::format::{
    BB_PER_BLOCK, BLOCK_SIZE, CHUNK_BLOCKS, Daddr, INODE_SIZE, INODES_PER_BLOCK,
};

/// log2 of inodes per block.
pub const INOPBLOG: u32 = INODES_PER_BLOCK.trailing_zeros();

/// XFS's `XFS_INODE_BIG_CLUSTER_SIZE`: the inode cluster size for 256-byte inodes.
const BIG_CLUSTER_SIZE: usize = 8192;
/// XFS's `XFS_DINODE_MIN_SIZE`: the inode size [`BIG_CLUSTER_SIZE`] is stated for.
const DINODE_MIN_SIZE: usize = 256;

/// Bytes of an inode cluster buffer for `block_size`-byte blocks, `inode_size`-byte inodes
/// and inode chunks aligned to `chunk_align` blocks, computed as XFS's
/// `xfs_ialloc_setup_geometry` does for a v5 filesystem: the big cluster size scaled by the
/// inode size (so a cluster holds as many inodes whatever their size), kept only if chunks
/// are aligned to it (else the unscaled size), and never less than one block.
pub const fn inode_cluster_size(block_size: usize, inode_size: usize, chunk_align: usize) -> usize {
    let scaled = BIG_CLUSTER_SIZE * (inode_size / DINODE_MIN_SIZE);
    let raw = if chunk_align >= scaled / block_size {
        scaled
    } else {
        BIG_CLUSTER_SIZE
    };
    if raw > block_size {
        raw / block_size * block_size
    } else {
        block_size
    }
}

/// Bytes of an inode cluster buffer: the unit inodes are read and written home in. Chunks
/// are aligned to their own size ([`CHUNK_BLOCKS`]), as mkfs.xfs aligns them on a
/// filesystem with sparse inodes (`sb_inoalignmt` is a chunk, 8 blocks here).
pub const INODE_CLUSTER_SIZE: usize =
    inode_cluster_size(BLOCK_SIZE, INODE_SIZE, CHUNK_BLOCKS as usize);
/// Blocks in an inode cluster.
pub const BLOCKS_PER_CLUSTER: u32 = (INODE_CLUSTER_SIZE / BLOCK_SIZE) as u32;
/// Inodes in an inode cluster.
pub const INODES_PER_CLUSTER: u64 = (INODE_CLUSTER_SIZE / INODE_SIZE) as u64;
/// Inode clusters in a chunk.
pub const CLUSTERS_PER_CHUNK: u32 = CHUNK_BLOCKS / BLOCKS_PER_CLUSTER;
const _: () = assert!(CHUNK_BLOCKS.is_multiple_of(BLOCKS_PER_CLUSTER));

/// The numbers that place everything on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Blocks in the filesystem.
    pub dblocks: u64,
    /// Blocks per AG (the last AG may be shorter).
    pub agblocks: u32,
    /// Number of AGs.
    pub agcount: u32,
    /// ceil(log2(agblocks)).
    pub agblklog: u8,
    /// First block of the log (in AG 0).
    pub logstart: u64,
    /// Blocks of log.
    pub logblocks: u32,
}

impl Geometry {
    /// Geometry recorded in a superblock.
    pub fn from_sb(sb: &Superblock) -> Geometry {
        Geometry {
            dblocks: sb.dblocks,
            agblocks: sb.agblocks,
            agcount: sb.agcount,
            agblklog: sb.agblklog,
            logstart: sb.logstart,
            logblocks: sb.logblocks,
        }
    }

    /// Blocks in AG `agno`.
    pub fn ag_len(&self, agno: u32) -> u32 {
        let start = u64::from(agno) * u64::from(self.agblocks);
        (self.dblocks - start).min(u64::from(self.agblocks)) as u32
    }

    /// Linear block number of `agbno` in `agno`.
    pub fn fsblock(&self, agno: u32, agbno: u32) -> u64 {
        u64::from(agno) * u64::from(self.agblocks) + u64::from(agbno)
    }

    /// AG of a linear block number.
    pub fn agno_of(&self, fsblock: u64) -> u32 {
        (fsblock / u64::from(self.agblocks)) as u32
    }

    /// AG-relative block of a linear block number.
    pub fn agbno_of(&self, fsblock: u64) -> u32 {
        (fsblock % u64::from(self.agblocks)) as u32
    }

    /// First sector of the log.
    pub fn log_daddr(&self) -> u64 {
        self.logstart * BB_PER_BLOCK
    }

    /// Size of the log in 512-byte blocks (at most 2 GiB of log: 4 Mi blocks).
    pub fn log_bb(&self) -> u32 {
        self.logblocks * BB_PER_BLOCK as u32
    }

    /// Bytes of log.
    pub fn log_bytes(&self) -> u64 {
        u64::from(self.logblocks) * BLOCK_SIZE as u64
    }

    /// Device address of block `agbno` in AG `agno`.
    pub fn ag_daddr(&self, agno: u32, agbno: u32) -> Daddr {
        Daddr::of_block(self.fsblock(agno, agbno))
    }

    /// Device address of sector `sector` of AG `agno`'s first block (the AG headers).
    pub fn ag_header_daddr(&self, agno: u32, sector: u64) -> Daddr {
        Daddr(self.ag_daddr(agno, 0).0 + sector)
    }

    /// Bits of an AG inode number.
    pub fn agino_log(&self) -> u32 {
        u32::from(self.agblklog) + INOPBLOG
    }

    /// Inode number of AG inode `agino` in `agno`.
    pub fn ino(&self, agno: u32, agino: u32) -> u64 {
        (u64::from(agno) << self.agino_log()) | u64::from(agino)
    }

    /// AG of an inode.
    pub fn ino_agno(&self, ino: u64) -> u32 {
        (ino >> self.agino_log()) as u32
    }

    /// AG inode number of an inode.
    pub fn ino_agino(&self, ino: u64) -> u32 {
        (ino & ((1u64 << self.agino_log()) - 1)) as u32
    }

    /// AG block holding AG inode `agino`.
    pub fn agino_agbno(agino: u32) -> u32 {
        agino >> INOPBLOG
    }

    /// First AG inode number of block `agbno`.
    pub fn agbno_agino(agbno: u32) -> u32 {
        agbno << INOPBLOG
    }

    /// Whether `ino` can name an inode of this filesystem (within an AG, not in AG headers).
    pub fn ino_valid(&self, ino: u64) -> bool {
        let agno = self.ino_agno(ino);
        agno < self.agcount && {
            let agbno = Self::agino_agbno(self.ino_agino(ino));
            agbno > 0 && agbno < self.ag_len(agno)
        }
    }

    /// Where inode `ino` lives: the device address of its inode cluster buffer
    /// ([`INODE_CLUSTER_SIZE`] bytes) and the byte offset of the inode inside it. Chunks are
    /// aligned to the cluster size, so a cluster starts at the AG block rounded down to it
    /// (XFS's `xfs_imap` with an inode alignment).
    pub fn ino_location(&self, ino: u64) -> (Daddr, usize) {
        let agno = self.ino_agno(ino);
        let agino = self.ino_agino(ino);
        let cluster = Self::agino_agbno(agino) & !(BLOCKS_PER_CLUSTER - 1);
        let slot = (agino & (INODES_PER_CLUSTER as u32 - 1)) as usize;
        (self.ag_daddr(agno, cluster), slot * INODE_SIZE)
    }

    /// Device size needed, in sectors.
    pub fn sectors(&self) -> u64 {
        self.dblocks * BB_PER_BLOCK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry {
            dblocks: 250_000,
            agblocks: 65_536,
            agcount: 4,
            agblklog: 16,
            logstart: 16,
            logblocks: 1024,
        }
    }

    #[test]
    fn inode_numbers_name_their_block_and_slot() {
        let g = geo();
        let ino = g.ino(2, Geometry::agbno_agino(100) + 5);
        assert_eq!(g.ino_agno(ino), 2);
        let (daddr, off) = g.ino_location(ino);
        assert_eq!(daddr, g.ag_daddr(2, 100));
        assert_eq!(off, 5 * 512);
        // Block 103 is the last of the cluster starting at 100.
        let (daddr, off) = g.ino_location(g.ino(2, Geometry::agbno_agino(103) + 7));
        assert_eq!((daddr, off), (g.ag_daddr(2, 100), 31 * 512));
        assert!(g.ino_valid(ino));
        assert!(!g.ino_valid(g.ino(4, 8)), "AG beyond the filesystem");
        assert!(!g.ino_valid(g.ino(0, 3)), "inside the AG header block");
    }

    #[test]
    fn inode_clusters_are_sized_as_xfs_sizes_them() {
        // mkfs.xfs v5 defaults: 4 KiB blocks, 512-byte inodes: 16 KiB, 32 inodes.
        assert_eq!(INODE_CLUSTER_SIZE, 16384);
        assert_eq!((BLOCKS_PER_CLUSTER, INODES_PER_CLUSTER), (4, 32));
        assert_eq!(CLUSTERS_PER_CHUNK, 2);
        // 256-byte inodes keep the big cluster size; an alignment smaller than the scaled
        // size keeps the unscaled one; a block bigger than the cluster is one block.
        assert_eq!(inode_cluster_size(4096, 256, 8), 8192);
        assert_eq!(inode_cluster_size(4096, 512, 2), 8192);
        assert_eq!(inode_cluster_size(4096, 2048, 64), 65536);
        assert_eq!(inode_cluster_size(65536, 512, 1), 65536);
    }

    #[test]
    fn last_ag_is_short_and_blocks_round_trip() {
        let g = geo();
        assert_eq!(g.ag_len(3), 250_000 - 3 * 65_536);
        let b = g.fsblock(3, 1234);
        assert_eq!((g.agno_of(b), g.agbno_of(b)), (3, 1234));
    }
}
