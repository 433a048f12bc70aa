//! The instantiations labfs uses, each with its on-disk record and key encoding.
//!
//! Encodings (big-endian, offsets within the record or key):
//!
//! - **bno / cnt** ([`FreeExtent`], 8 bytes, XFS `xfs_alloc_rec`): 0 start u32 (AG block),
//!   4 len u32 (blocks). bno key: start u32 (4 bytes). cnt key: len u32, start u32
//!   (8 bytes), so equal lengths are told apart by start, as in XFS's cntbt.
//! - **ino / fino** ([`InoRec`], 16 bytes, XFS sparse-inode `xfs_inobt_rec`): 0 startino
//!   u32 (AG inode number), 4 holemask u16, 6 count u8, 7 freecount u8, 8 free u64
//!   (bit i set = inode startino + i free). Key: startino u32.
//! - **bmbt** ([`BmbtRec`], 16 bytes, XFS `xfs_bmbt_rec` packed as two u64s): bit 127
//!   unwritten flag, bits 126..73 startoff (54 bits), bits 72..21 startblock (52 bits),
//!   bits 20..0 blockcount (21 bits). Key: startoff u64.
//! - **dirhash** ([`DirHashRec`], 8 bytes, XFS `xfs_dir2_leaf_entry`): 0 hash u32, 4 addr
//!   u32. Key: (hash, addr), 8 bytes, so entries whose names hash alike stay distinct.

use super::{BtreeSpec, Layout};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::{BlockKind, endian};

/// A free extent: `len` blocks from AG block `start` (record of the bno and cnt trees).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FreeExtent {
    /// First AG block of the extent.
    pub start: u32,
    /// Length in blocks.
    pub len: u32,
}

fn encode_free_extent(r: &FreeExtent, out: &mut [u8]) {
    endian::put_u32(out, 0, r.start);
    endian::put_u32(out, 4, r.len);
}

fn decode_free_extent(b: &[u8]) -> FreeExtent {
    FreeExtent {
        start: endian::get_u32(b, 0),
        len: endian::get_u32(b, 4),
    }
}

/// Free space indexed by start block (XFS bnobt).
#[derive(Clone, Copy, Debug)]
pub struct BnoSpec;

impl BtreeSpec for BnoSpec {
    const LAYOUT: Layout = Layout::Short;
    type Rec = FreeExtent;
    type Key = u32;
    const REC_LEN: usize = 8;
    const KEY_LEN: usize = 4;

    fn kind(_level: u16) -> BlockKind {
        BlockKind::BnoBtree
    }
    fn encode_rec(r: &FreeExtent, out: &mut [u8]) {
        encode_free_extent(r, out);
    }
    fn decode_rec(b: &[u8]) -> FreeExtent {
        decode_free_extent(b)
    }
    fn encode_key(k: &u32, out: &mut [u8]) {
        endian::put_u32(out, 0, *k);
    }
    fn decode_key(b: &[u8]) -> u32 {
        endian::get_u32(b, 0)
    }
    fn key_of(r: &FreeExtent) -> u32 {
        r.start
    }
}

/// Free space indexed by (length, start block) (XFS cntbt).
#[derive(Clone, Copy, Debug)]
pub struct CntSpec;

impl BtreeSpec for CntSpec {
    const LAYOUT: Layout = Layout::Short;
    type Rec = FreeExtent;
    /// (len, start).
    type Key = (u32, u32);
    const REC_LEN: usize = 8;
    const KEY_LEN: usize = 8;

    fn kind(_level: u16) -> BlockKind {
        BlockKind::CntBtree
    }
    fn encode_rec(r: &FreeExtent, out: &mut [u8]) {
        encode_free_extent(r, out);
    }
    fn decode_rec(b: &[u8]) -> FreeExtent {
        decode_free_extent(b)
    }
    fn encode_key(k: &(u32, u32), out: &mut [u8]) {
        endian::put_u32(out, 0, k.0);
        endian::put_u32(out, 4, k.1);
    }
    fn decode_key(b: &[u8]) -> (u32, u32) {
        (endian::get_u32(b, 0), endian::get_u32(b, 4))
    }
    fn key_of(r: &FreeExtent) -> (u32, u32) {
        (r.len, r.start)
    }
}

/// An inode chunk: 64 inodes from AG inode `startino` (record of the ino and fino trees).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InoRec {
    /// First AG inode number of the chunk.
    pub startino: u32,
    /// Sparse-chunk hole mask: bit i set = inodes 4i..4i+3 are not allocated on disk.
    pub holemask: u16,
    /// Inodes allocated on disk in the chunk.
    pub count: u8,
    /// Free inodes in the chunk.
    pub freecount: u8,
    /// Free mask: bit i set = inode startino + i is free.
    pub free: u64,
}

fn encode_ino(r: &InoRec, out: &mut [u8]) {
    endian::put_u32(out, 0, r.startino);
    endian::put_u16(out, 4, r.holemask);
    out[6] = r.count;
    out[7] = r.freecount;
    endian::put_u64(out, 8, r.free);
}

fn decode_ino(b: &[u8]) -> InoRec {
    InoRec {
        startino: endian::get_u32(b, 0),
        holemask: endian::get_u16(b, 4),
        count: b[6],
        freecount: b[7],
        free: endian::get_u64(b, 8),
    }
}

/// Inode chunks indexed by first inode (XFS inobt).
#[derive(Clone, Copy, Debug)]
pub struct InoSpec;

/// Inode chunks with free inodes, indexed by first inode (XFS finobt).
#[derive(Clone, Copy, Debug)]
pub struct FinoSpec;

macro_rules! inode_spec {
    ($spec:ty, $kind:expr) => {
        impl BtreeSpec for $spec {
            const LAYOUT: Layout = Layout::Short;
            type Rec = InoRec;
            type Key = u32;
            const REC_LEN: usize = 16;
            const KEY_LEN: usize = 4;

            fn kind(_level: u16) -> BlockKind {
                $kind
            }
            fn encode_rec(r: &InoRec, out: &mut [u8]) {
                encode_ino(r, out);
            }
            fn decode_rec(b: &[u8]) -> InoRec {
                decode_ino(b)
            }
            fn encode_key(k: &u32, out: &mut [u8]) {
                endian::put_u32(out, 0, *k);
            }
            fn decode_key(b: &[u8]) -> u32 {
                endian::get_u32(b, 0)
            }
            fn key_of(r: &InoRec) -> u32 {
                r.startino
            }
        }
    };
}

inode_spec!(InoSpec, BlockKind::InoBtree);
inode_spec!(FinoSpec, BlockKind::FinoBtree);

/// Largest file offset (in blocks) a bmbt record can hold: 54 bits.
pub const BMBT_MAX_STARTOFF: u64 = (1 << 54) - 1;
/// Largest filesystem block a bmbt record can hold: 52 bits.
pub const BMBT_MAX_STARTBLOCK: u64 = (1 << 52) - 1;
/// Longest extent a bmbt record can hold: 21 bits.
pub const BMBT_MAX_BLOCKCOUNT: u32 = (1 << 21) - 1;

/// A file extent: `blockcount` blocks of the file from block `startoff`, stored from
/// filesystem block `startblock` (record of the bmbt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BmbtRec {
    /// First file block (54 bits).
    pub startoff: u64,
    /// First filesystem block (52 bits).
    pub startblock: u64,
    /// Length in blocks (21 bits).
    pub blockcount: u32,
    /// Allocated but not yet written (reads return zeroes).
    pub unwritten: bool,
}

impl BmbtRec {
    /// An extent record, refusing fields wider than the packed format holds.
    pub fn new(startoff: u64, startblock: u64, blockcount: u32, unwritten: bool) -> FsResult<Self> {
        if startoff > BMBT_MAX_STARTOFF
            || startblock > BMBT_MAX_STARTBLOCK
            || blockcount > BMBT_MAX_BLOCKCOUNT
        {
            return Err(FsError::Invalid("extent field too wide for a bmbt record"));
        }
        Ok(BmbtRec {
            startoff,
            startblock,
            blockcount,
            unwritten,
        })
    }
}

/// File extent maps indexed by file offset (XFS bmbt).
#[derive(Clone, Copy, Debug)]
pub struct BmbtSpec;

impl BtreeSpec for BmbtSpec {
    const LAYOUT: Layout = Layout::Long;
    type Rec = BmbtRec;
    type Key = u64;
    const REC_LEN: usize = 16;
    const KEY_LEN: usize = 8;

    fn kind(_level: u16) -> BlockKind {
        BlockKind::BmapBtree
    }
    /// Packs like XFS's `xfs_bmbt_disk_set_all`; fields wider than the format are masked,
    /// so build records with [`BmbtRec::new`].
    fn encode_rec(r: &BmbtRec, out: &mut [u8]) {
        let l0 = (u64::from(r.unwritten) << 63)
            | ((r.startoff & BMBT_MAX_STARTOFF) << 9)
            | ((r.startblock & BMBT_MAX_STARTBLOCK) >> 43);
        let l1 = ((r.startblock & BMBT_MAX_STARTBLOCK) << 21)
            | u64::from(r.blockcount & BMBT_MAX_BLOCKCOUNT);
        endian::put_u64(out, 0, l0);
        endian::put_u64(out, 8, l1);
    }
    fn decode_rec(b: &[u8]) -> BmbtRec {
        let l0 = endian::get_u64(b, 0);
        let l1 = endian::get_u64(b, 8);
        BmbtRec {
            unwritten: l0 >> 63 == 1,
            startoff: (l0 >> 9) & BMBT_MAX_STARTOFF,
            startblock: ((l0 & 0x1ff) << 43) | (l1 >> 21),
            blockcount: (l1 & u64::from(BMBT_MAX_BLOCKCOUNT)) as u32,
        }
    }
    fn encode_key(k: &u64, out: &mut [u8]) {
        endian::put_u64(out, 0, *k);
    }
    fn decode_key(b: &[u8]) -> u64 {
        endian::get_u64(b, 0)
    }
    fn key_of(r: &BmbtRec) -> u64 {
        r.startoff
    }
}

/// A directory hash index entry: a name hash and the address of its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DirHashRec {
    /// Hash of the entry's name.
    pub hash: u32,
    /// Address of the entry in the directory's data blocks (8-byte units).
    pub addr: u32,
}

/// A large directory's hash index (XFS node-form directory: da3 nodes over leafn blocks).
#[derive(Clone, Copy, Debug)]
pub struct DirHashSpec;

impl BtreeSpec for DirHashSpec {
    const LAYOUT: Layout = Layout::Da;
    type Rec = DirHashRec;
    /// (hash, addr).
    type Key = (u32, u32);
    const REC_LEN: usize = 8;
    const KEY_LEN: usize = 8;

    fn kind(level: u16) -> BlockKind {
        if level == 0 {
            BlockKind::DirLeafN
        } else {
            BlockKind::DaNode
        }
    }
    fn encode_rec(r: &DirHashRec, out: &mut [u8]) {
        endian::put_u32(out, 0, r.hash);
        endian::put_u32(out, 4, r.addr);
    }
    fn decode_rec(b: &[u8]) -> DirHashRec {
        DirHashRec {
            hash: endian::get_u32(b, 0),
            addr: endian::get_u32(b, 4),
        }
    }
    fn encode_key(k: &(u32, u32), out: &mut [u8]) {
        endian::put_u32(out, 0, k.0);
        endian::put_u32(out, 4, k.1);
    }
    fn decode_key(b: &[u8]) -> (u32, u32) {
        (endian::get_u32(b, 0), endian::get_u32(b, 4))
    }
    fn key_of(r: &DirHashRec) -> (u32, u32) {
        (r.hash, r.addr)
    }
}
