//! labfs's one B+tree: a generic, CRC'd, XFS-shaped B+tree, instantiated for free space by
//! block ([`kinds::BnoSpec`]) and by length ([`kinds::CntSpec`]), inode chunks
//! ([`kinds::InoSpec`]), free inodes ([`kinds::FinoSpec`]), file extent maps
//! ([`kinds::BmbtSpec`]) and large directories' hash index ([`kinds::DirHashSpec`]).
//!
//! # Design
//!
//! One implementation, many trees. A [`BtreeSpec`] says how a record and a key look on disk,
//! which [`Layout`] (header flavour) the blocks use and which [`BlockKind`] each level is; the
//! algorithms in [`Cursor`] are written once. This is XFS's `xfs_btree.c` design, and the
//! algorithms deliberately follow it step for step (lookup by binary search per level;
//! insert that makes room by shifting one entry to the right sibling, else to the left
//! sibling, else splitting (a [`Layout::Da`] tree splits at once, as XFS's da btree does);
//! delete that refills an underfull block from the right sibling,
//! else from the left, else joins it with a neighbour, and kills a root left with a single
//! child), because the point of labfs is that its `abtb2`/`abtc2`/`bmbt2`/`ibt2`/`fibt2`
//! statistics mean what they mean on XFS. The code is our own.
//!
//! The tree owns no I/O and no locks. Its blocks live in a [`BlockStore`] (labfs's
//! transaction: buffers held until commit, every change logged by byte range) and the caller
//! holds whatever lock protects the whole tree (the AGF for free space, the AGI for inodes,
//! the inode for its extent map or directory). A [`Cursor`] lives inside one transaction.
//! When an operation changes the root (a split of the root, or a root left with one child),
//! [`Cursor::root`] returns the new [`Root`] and the caller persists it (AGF/AGI/inode).
//!
//! Corruption is never a panic. Every block the tree reads is checked (the store checks magic
//! and CRC when it comes from disk; [`Cursor`] checks level, record count, self address,
//! UUID and owner every time); a failure is [`FsError::Corrupt`](crate::fs::error::FsError::Corrupt) naming the block kind and
//! device address. [`check()`] is the fsck oracle: it walks a whole tree and returns every
//! structural finding instead of stopping at the first.
//!
//! # Block layouts
//!
//! All integers big-endian (through [`crate::fs::format::endian`]), except the CRC, which the
//! store writes little-endian at write-back, as XFS does. The tree writes every header field
//! but the CRC; it writes the LSN as 0 in a new block and the store stamps it at write-back.
//!
//! **Short** (XFS short-form v5 btree block, 56-byte header; AG trees: bno, cnt, ino, fino;
//! pointers are u32 AG block numbers; "no sibling" is `0xffffffff`):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic (`AB3B`, `AB3C`, `IAB3`, `FIB3`) |
//! | 4 | 2 | level (0 = leaf) |
//! | 6 | 2 | numrecs: records (leaf) or keys (node) in use |
//! | 8 | 4 | leftsib |
//! | 12 | 4 | rightsib |
//! | 16 | 8 | blkno: this block's own device address (512-byte sectors) |
//! | 24 | 8 | lsn of the last write-back (store) |
//! | 32 | 16 | filesystem UUID |
//! | 48 | 4 | owner: AG number |
//! | 52 | 4 | CRC32c of the whole block, field zeroed (store) |
//! | 56 | | records (leaf) or keys then pointers (node) |
//!
//! **Long** (XFS long-form v5 btree block, 72-byte header; extent maps; u64 filesystem
//! block pointers; "no sibling" is `u64::MAX`):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic (`BMA3`) |
//! | 4 | 2 | level |
//! | 6 | 2 | numrecs |
//! | 8 | 8 | leftsib |
//! | 16 | 8 | rightsib |
//! | 24 | 8 | blkno (daddr) |
//! | 32 | 8 | lsn (store) |
//! | 40 | 16 | filesystem UUID |
//! | 56 | 8 | owner: inode number |
//! | 64 | 4 | CRC32c (store) |
//! | 68 | 4 | pad, zero |
//! | 72 | | records or keys then pointers |
//!
//! **Da** (XFS `xfs_da3_blkinfo` + node/leafn header, 64 bytes; a directory's hash index;
//! u32 directory-block pointers; "no sibling" is 0; leaves are `dir3_leafn` blocks, nodes
//! `da3_node`):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | forw: right sibling |
//! | 4 | 4 | back: left sibling |
//! | 8 | 2 | magic (`0x3dff` leafn, `0x3ebe` node) |
//! | 10 | 2 | pad, zero |
//! | 12 | 4 | CRC32c (store) |
//! | 16 | 8 | blkno (daddr) |
//! | 24 | 8 | lsn (store) |
//! | 32 | 16 | filesystem UUID |
//! | 48 | 8 | owner: directory inode number |
//! | 56 | 2 | count: entries in use |
//! | 58 | 2 | level |
//! | 60 | 4 | pad, zero |
//! | 64 | | records or keys then pointers |
//!
//! **Entries.** A leaf holds `numrecs` records packed from the end of the header:
//! record `i` (1-based) at `hdr + (i-1)*REC_LEN`, up to `leaf_max = (4096 - hdr) / REC_LEN`.
//! A node holds keys and pointers in two arrays, XFS style: key `i` at
//! `hdr + (i-1)*KEY_LEN`, pointer `i` at `hdr + node_max*KEY_LEN + (i-1)*PTR_LEN`, where
//! `node_max = (4096 - hdr) / (KEY_LEN + PTR_LEN)`. Key `i` equals the first key of child
//! `i`. Every block but the root holds at least half its maximum (`min = max / 2`).
//! Capacities of the instantiations:
//!
//! | spec | layout | record | key | pointer | leaf max | node max |
//! |---|---|---|---|---|---|---|
//! | bno | Short | 8 | 4 | 4 | 505 | 505 |
//! | cnt | Short | 8 | 8 | 4 | 505 | 336 |
//! | ino, fino | Short | 16 | 4 | 4 | 252 | 505 |
//! | bmbt | Long | 16 | 8 | 8 | 251 | 251 |
//! | dirhash | Da | 8 | 8 | 4 | 504 | 336 |
//!
//! # Operation counts
//!
//! Each [`Cursor`] counts the 15 XFS btree statistics ([`BtreeOp`], in `/proc/fs/xfs/stat`
//! field order) where the event happens, as XFS does (`XFS_BTREE_STATS_INC/ADD` sites):
//!
//! - `lookup` +1 per [`Cursor::lookup`] and per [`Cursor::insert`] (which looks its key up
//!   first, as every XFS caller does before `xfs_btree_insert`); `compare` +1 per binary-search
//!   probe of a key in a block (a level below a block whose probe hit the key exactly is not
//!   searched: its first entry is the answer).
//! - `increment`/`decrement` +1 when a cursor step leaves its block for a sibling. Steps
//!   within a block are not counted, exactly like XFS (`xfs_btree_increment` counts after the
//!   "still inside the block" early return). Internal steps count too, as in XFS: a right
//!   shift steps a temporary cursor into the right sibling to fix its parent keys, and a
//!   rebalancing delete steps one to each sibling it inspects.
//! - `insrec`/`delrec` +1 per entry inserted into or removed from a block, at any level.
//! - `lshift`/`rshift` +1 per entry moved to a sibling; `split`, `join`, `newroot`,
//!   `killroot` +1 each; `alloc`/`free` +1 per block taken from or returned to the store.
//! - `moves`: entries slid by a memmove inside a block or copied between blocks, added with
//!   XFS's own arithmetic: inserting at `i` of `n` adds `n - i + 1`; deleting `i` of `n` adds
//!   `n - i`; a split adds the entries copied to the new block; a join adds the entries
//!   copied from the right block; a right shift adds the right block's entries slid up; a
//!   left shift adds 1 for the entry copied plus (entries slid down − 1), the same one-short
//!   sum XFS's `xfs_btree_lshift` adds.
//!
//! Repositioning the cursor after a structural change so that it points at the inserted
//! record (or at the successor of a deleted one) is labfs's convenience, not an XFS event,
//! and counts nothing.

pub mod check;
pub mod kinds;
pub mod mem_store;
pub mod store;
pub mod view;

mod block;
mod cursor;
mod problem;
mod tree;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Index;

pub use block::lsn_offset;
pub use check::{Finding, Problem, check};
pub use cursor::Cursor;
pub use store::{BlockStore, BufId};
pub use tree::{blocks, count_records, create, create_filled, destroy, for_each_record};

use crate::fs::format::BlockKind;
use crate::fs::stats::BtreeLine;

/// The block header flavour of a tree (see the module docs for the byte layouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// XFS short-form v5 header (56 bytes), u32 AG block pointers: AG-wide trees.
    Short,
    /// XFS long-form v5 header (72 bytes), u64 filesystem block pointers: extent maps.
    Long,
    /// XFS da3 node/leafn header (64 bytes), u32 directory block pointers: directory hashes.
    Da,
}

/// What one instantiation of the tree stores and how it looks on disk.
pub trait BtreeSpec {
    /// The block header flavour.
    const LAYOUT: Layout;
    /// A leaf record.
    type Rec: Copy + fmt::Debug;
    /// The ordering key of a record; unique within a tree.
    type Key: Copy + Ord + fmt::Debug;
    /// Bytes per encoded record.
    const REC_LEN: usize;
    /// Bytes per encoded key.
    const KEY_LEN: usize;
    /// The block kind of a block at `level` (leaf = level 0).
    fn kind(level: u16) -> BlockKind;
    /// Encode a record into exactly `REC_LEN` bytes.
    fn encode_rec(r: &Self::Rec, out: &mut [u8]);
    /// Decode a record from exactly `REC_LEN` bytes.
    fn decode_rec(b: &[u8]) -> Self::Rec;
    /// Encode a key into exactly `KEY_LEN` bytes.
    fn encode_key(k: &Self::Key, out: &mut [u8]);
    /// Decode a key from exactly `KEY_LEN` bytes.
    fn decode_key(b: &[u8]) -> Self::Key;
    /// The key a record is ordered by.
    fn key_of(r: &Self::Rec) -> Self::Key;
}

/// Where a tree starts: its root block and the root's level (tree height − 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    /// Pointer to the root block.
    pub ptr: u64,
    /// Level of the root block; 0 when the root is the only (leaf) block.
    pub level: u16,
}

/// How [`Cursor::lookup`] matches a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LookupMode {
    /// Exactly the key.
    Eq,
    /// The greatest key less than or equal to the key.
    Le,
    /// The smallest key greater than or equal to the key.
    Ge,
}

/// The 15 btree statistics, in XFS's `/proc/fs/xfs/stat` field order (`__XBTS_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BtreeOp {
    /// Lookups started.
    Lookup,
    /// Key comparisons made by lookups.
    Compare,
    /// Entries inserted into a block.
    Insrec,
    /// Entries deleted from a block.
    Delrec,
    /// New root blocks made (tree grew a level).
    Newroot,
    /// Root blocks removed (tree lost a level).
    Killroot,
    /// Cursor steps right into a sibling block.
    Increment,
    /// Cursor steps left into a sibling block.
    Decrement,
    /// Entries shifted to the left sibling.
    Lshift,
    /// Entries shifted to the right sibling.
    Rshift,
    /// Blocks split.
    Split,
    /// Blocks joined.
    Join,
    /// Blocks allocated.
    Alloc,
    /// Blocks freed.
    Free,
    /// Entries moved within or between blocks.
    Moves,
}

impl BtreeOp {
    /// Every op, in stat field order.
    pub const ALL: [BtreeOp; 15] = [
        BtreeOp::Lookup,
        BtreeOp::Compare,
        BtreeOp::Insrec,
        BtreeOp::Delrec,
        BtreeOp::Newroot,
        BtreeOp::Killroot,
        BtreeOp::Increment,
        BtreeOp::Decrement,
        BtreeOp::Lshift,
        BtreeOp::Rshift,
        BtreeOp::Split,
        BtreeOp::Join,
        BtreeOp::Alloc,
        BtreeOp::Free,
        BtreeOp::Moves,
    ];

    /// The XFS field name (`xs_abt_*`'s suffix, e.g. "lookup").
    pub fn name(self) -> &'static str {
        match self {
            BtreeOp::Lookup => "lookup",
            BtreeOp::Compare => "compare",
            BtreeOp::Insrec => "insrec",
            BtreeOp::Delrec => "delrec",
            BtreeOp::Newroot => "newroot",
            BtreeOp::Killroot => "killroot",
            BtreeOp::Increment => "increment",
            BtreeOp::Decrement => "decrement",
            BtreeOp::Lshift => "lshift",
            BtreeOp::Rshift => "rshift",
            BtreeOp::Split => "split",
            BtreeOp::Join => "join",
            BtreeOp::Alloc => "alloc",
            BtreeOp::Free => "free",
            BtreeOp::Moves => "moves",
        }
    }
}

impl fmt::Display for BtreeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `/proc/fs/xfs/stat` line a tree's [`OpCounts`] feed, by its block kind: `abtb2`
/// (bno), `abtc2` (cnt), `ibt2` (ino), `fibt2` (fino), `bmbt2` (extent maps). Directory hash
/// trees have no btree stat line in XFS (the da btree is not a generic btree), so `None`.
pub fn stat_line(kind: BlockKind) -> Option<BtreeLine> {
    match kind {
        BlockKind::BnoBtree => Some(BtreeLine::Abtb2),
        BlockKind::CntBtree => Some(BtreeLine::Abtc2),
        BlockKind::InoBtree => Some(BtreeLine::Ibt2),
        BlockKind::FinoBtree => Some(BtreeLine::Fibt2),
        BlockKind::BmapBtree => Some(BtreeLine::Bmbt2),
        _ => None,
    }
}

/// Counts of each [`BtreeOp`], indexed by `op as usize`. Counters wrap like XFS's u32 stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts(pub [u32; 15]);

impl OpCounts {
    /// The count of one op.
    pub fn get(&self, op: BtreeOp) -> u32 {
        self.0[op as usize]
    }

    /// Add `n` to one op (wrapping).
    pub fn add(&mut self, op: BtreeOp, n: u32) {
        let c = &mut self.0[op as usize];
        *c = c.wrapping_add(n);
    }

    /// Add every count of `other` (wrapping), e.g. to fold a cursor into per-mount stats.
    pub fn merge(&mut self, other: &OpCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_add(b);
        }
    }

    /// Whether every count is zero.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&c| c == 0)
    }
}

impl Index<BtreeOp> for OpCounts {
    type Output = u32;

    fn index(&self, op: BtreeOp) -> &u32 {
        &self.0[op as usize]
    }
}

impl fmt::Display for OpCounts {
    /// The counts space-separated in stat order, as on a `/proc/fs/xfs/stat` btree line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}
