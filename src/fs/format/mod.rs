//! labfs's on-disk format: geometry, the kinds of metadata block, their magic numbers and
//! where each keeps its CRC.
//!
//! The layout is modelled on XFS v5 (`xfs_format.h`, `xfs_da_format.h`): the same structure
//! sizes and CRC offsets, so that checksum-size histograms mean what they mean on XFS. The
//! whole format is collected in the repository's `docs/format.md`.
//! Byte-for-byte XFS compatibility is not a goal. Every metadata block is self-describing:
//! magic, its own address, the filesystem UUID, an owner and the LSN of its last write.
//! The byte-by-byte layout of each structure is documented in the module that encodes it.
//!
//! Multi-byte integers are big-endian on disk, as in XFS, except CRCs, which are stored
//! little-endian (XFS's `xfs_end_cksum`). All encoding goes through [`endian`].

pub mod ag;
pub mod dinode;
pub mod endian;
pub mod sb;

use std::fmt;

/// Bytes in a basic block (sector); device addresses count in these.
pub const BBSIZE: usize = 512;
/// log2 of [`BBSIZE`].
pub const BBSHIFT: u32 = 9;
/// Filesystem block size.
pub const BLOCK_SIZE: usize = 4096;
/// log2 of [`BLOCK_SIZE`].
pub const BLOCK_SHIFT: u32 = 12;
/// Sectors per filesystem block.
pub const BB_PER_BLOCK: u64 = (BLOCK_SIZE / BBSIZE) as u64;
/// On-disk inode size (XFS v5 default and minimum).
pub const INODE_SIZE: usize = 512;
/// Inodes per filesystem block.
pub const INODES_PER_BLOCK: u64 = (BLOCK_SIZE / INODE_SIZE) as u64;
/// Inodes allocated together as one chunk (one inobt record).
pub const INODES_PER_CHUNK: u64 = 64;
/// Blocks in one inode chunk.
pub const CHUNK_BLOCKS: u32 = (INODES_PER_CHUNK / INODES_PER_BLOCK) as u32;
/// Longest file name.
pub const NAME_MAX: usize = 255;

/// A device address in 512-byte sectors (XFS's `xfs_daddr_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Daddr(pub u64);

impl Daddr {
    /// Byte offset on the device.
    pub fn bytes(self) -> u64 {
        self.0 << BBSHIFT
    }

    /// The sector address of a filesystem block.
    pub fn of_block(fsblock: u64) -> Daddr {
        Daddr(fsblock * BB_PER_BLOCK)
    }
}

impl fmt::Display for Daddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Every kind of metadata block labfs writes, each with its magic and CRC position.
///
/// The kind decides how a buffer is verified when read and checksummed when written, and it
/// is the `site` field of the `crc32c` tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    /// Superblock (one sector at the start of each AG).
    Superblock,
    /// AG free-space header (one sector).
    Agf,
    /// AG inode header (one sector).
    Agi,
    /// AG free list (one sector).
    Agfl,
    /// Free-space B+tree by block number (short pointers).
    BnoBtree,
    /// Free-space B+tree by extent length (short pointers).
    CntBtree,
    /// Inode-chunk B+tree (short pointers).
    InoBtree,
    /// Free-inode B+tree (short pointers).
    FinoBtree,
    /// Extent-map B+tree of a file (long pointers).
    BmapBtree,
    /// One 512-byte on-disk inode (32 per 16 KiB inode cluster buffer).
    Inode,
    /// Single-block directory: entries plus hash leaf in one block.
    DirBlock,
    /// Directory data block (leaf and node forms).
    DirData,
    /// Directory leaf block of the leaf form (hash index + bests).
    DirLeaf1,
    /// Directory hash-index leaf block of the node form.
    DirLeafN,
    /// Directory hash-index interior node.
    DaNode,
    /// Directory free-space index block.
    DirFree,
    /// Remote symbolic link block: a target too long for the inode's literal area.
    Symlink,
    /// Log record header (part 2's journal).
    LogRecord,
}

/// How a block kind stores its magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Magic {
    /// A big-endian u32 at offset 0.
    U32(u32),
    /// A big-endian u16 at the given offset (inodes at 0, da blocks at 8).
    U16 {
        /// Offset of the magic in the block.
        offset: usize,
        /// The value.
        value: u16,
    },
}

impl BlockKind {
    /// Every kind, for tests and tables.
    pub const ALL: [BlockKind; 18] = [
        BlockKind::Superblock,
        BlockKind::Agf,
        BlockKind::Agi,
        BlockKind::Agfl,
        BlockKind::BnoBtree,
        BlockKind::CntBtree,
        BlockKind::InoBtree,
        BlockKind::FinoBtree,
        BlockKind::BmapBtree,
        BlockKind::Inode,
        BlockKind::DirBlock,
        BlockKind::DirData,
        BlockKind::DirLeaf1,
        BlockKind::DirLeafN,
        BlockKind::DaNode,
        BlockKind::DirFree,
        BlockKind::Symlink,
        BlockKind::LogRecord,
    ];

    /// Short lowercase name, used in errors and as the crc32c tracepoint's `site`.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Superblock => "sb",
            BlockKind::Agf => "agf",
            BlockKind::Agi => "agi",
            BlockKind::Agfl => "agfl",
            BlockKind::BnoBtree => "bnobt",
            BlockKind::CntBtree => "cntbt",
            BlockKind::InoBtree => "inobt",
            BlockKind::FinoBtree => "finobt",
            BlockKind::BmapBtree => "bmbt",
            BlockKind::Inode => "inode",
            BlockKind::DirBlock => "dir3_block",
            BlockKind::DirData => "dir3_data",
            BlockKind::DirLeaf1 => "dir3_leaf1",
            BlockKind::DirLeafN => "dir3_leafn",
            BlockKind::DaNode => "da3_node",
            BlockKind::DirFree => "dir3_free",
            BlockKind::Symlink => "symlink",
            BlockKind::LogRecord => "log_record",
        }
    }

    /// The magic number and where it sits (XFS v5 values).
    pub fn magic(self) -> Magic {
        match self {
            BlockKind::Superblock => Magic::U32(0x5846_5342), // "XFSB"
            BlockKind::Agf => Magic::U32(0x5841_4746),        // "XAGF"
            BlockKind::Agi => Magic::U32(0x5841_4749),        // "XAGI"
            BlockKind::Agfl => Magic::U32(0x5841_464c),       // "XAFL"
            BlockKind::BnoBtree => Magic::U32(0x4142_3342),   // "AB3B"
            BlockKind::CntBtree => Magic::U32(0x4142_3343),   // "AB3C"
            BlockKind::InoBtree => Magic::U32(0x4941_4233),   // "IAB3"
            BlockKind::FinoBtree => Magic::U32(0x4649_4233),  // "FIB3"
            BlockKind::BmapBtree => Magic::U32(0x424d_4133),  // "BMA3"
            BlockKind::Inode => Magic::U16 {
                offset: 0,
                value: 0x494e,
            }, // "IN"
            BlockKind::DirBlock => Magic::U32(0x5844_4233),   // "XDB3"
            BlockKind::DirData => Magic::U32(0x5844_4433),    // "XDD3"
            BlockKind::DirLeaf1 => Magic::U16 {
                offset: 8,
                value: 0x3df1,
            },
            BlockKind::DirLeafN => Magic::U16 {
                offset: 8,
                value: 0x3dff,
            },
            BlockKind::DaNode => Magic::U16 {
                offset: 8,
                value: 0x3ebe,
            },
            BlockKind::DirFree => Magic::U32(0x5844_4633), // "XDF3"
            BlockKind::Symlink => Magic::U32(0x5853_4c4d), // "XSLM"
            BlockKind::LogRecord => Magic::U32(0xfeed_babe),
        }
    }

    /// Byte offset of the CRC field (XFS's, e.g. `XFS_SB_CRC_OFF`, `XFS_AGF_CRC_OFF`).
    pub fn crc_offset(self) -> usize {
        match self {
            BlockKind::Superblock => 224,
            BlockKind::Agf => 216,
            BlockKind::Agi => 312,
            BlockKind::Agfl => 32,
            BlockKind::BnoBtree
            | BlockKind::CntBtree
            | BlockKind::InoBtree
            | BlockKind::FinoBtree => 52,
            BlockKind::BmapBtree => 64,
            BlockKind::Inode => 100,
            BlockKind::DirBlock | BlockKind::DirData | BlockKind::DirFree => 4,
            BlockKind::Symlink => 12,
            BlockKind::DirLeaf1 | BlockKind::DirLeafN | BlockKind::DaNode => 12,
            BlockKind::LogRecord => 32,
        }
    }

    /// Bytes the CRC covers: one sector for AG headers, one inode for inodes, the whole
    /// block otherwise. (Log records cover a variable length, computed by the log.)
    pub fn crc_len(self) -> usize {
        match self {
            BlockKind::Superblock | BlockKind::Agf | BlockKind::Agi | BlockKind::Agfl => BBSIZE,
            BlockKind::Inode => INODE_SIZE,
            BlockKind::LogRecord => BBSIZE,
            _ => BLOCK_SIZE,
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_field_fits_inside_what_it_covers() {
        for k in BlockKind::ALL {
            assert!(k.crc_offset() + 4 <= k.crc_len(), "{k}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = BlockKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), BlockKind::ALL.len());
    }
}
