//! The seam between the B+tree and whatever holds its blocks.
//!
//! The tree never does I/O, locking or checksumming itself. It asks a [`BlockStore`] for
//! blocks by the pointer values stored in the tree (AG block numbers, filesystem block
//! numbers or directory block numbers, depending on the layout), edits their bytes in
//! place and reports every edited byte range with [`BlockStore::log_range`], exactly as XFS
//! btree code calls `xfs_trans_log_buf`. labfs's transaction layer implements this trait
//! over its buffer cache; [`super::mem_store::MemStore`] implements it in memory for tests.
//!
//! Division of verification: the store checks what it can check without knowing the tree
//! (magic number and CRC, when a block comes from disk); the tree checks the rest of the
//! header (level, record count, self address, UUID, owner) every time it reads a block.

use crate::fs::error::FsResult;
use crate::fs::format::{BlockKind, Daddr};

/// A handle to a block the store holds for the current transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufId(pub u32);

/// Where a B+tree's blocks live: the transaction's view of the buffer cache.
///
/// Every method works on blocks of [`crate::fs::format::BLOCK_SIZE`] bytes. A `BufId` stays
/// valid until the transaction ends or the block is freed; a cursor must not be used across
/// transactions.
pub trait BlockStore {
    /// Filesystem UUID, written into every block header.
    fn uuid(&self) -> [u8; 16];
    /// Get block `ptr` (a pointer value of this tree) of kind `kind`, held for the rest of the
    /// transaction. Reading the same ptr again returns the same BufId. The store verifies the
    /// CRC and magic of blocks it reads from disk; the tree verifies the rest of the header.
    fn read(&mut self, kind: BlockKind, ptr: u64) -> FsResult<BufId>;
    /// Device address of a held block (written into the header's blkno field).
    fn daddr(&self, id: BufId) -> Daddr;
    /// The bytes of a held block.
    fn bytes(&self, id: BufId) -> &[u8];
    /// Mutable bytes; every change must be followed by `log_range` covering it.
    fn bytes_mut(&mut self, id: BufId) -> &mut [u8];
    /// Record that bytes first..=last of the block changed (xfs_trans_log_buf).
    fn log_range(&mut self, id: BufId, first: usize, last: usize);
    /// A new zeroed block for this tree near pointer `hint`; returns its pointer and BufId.
    fn alloc(&mut self, kind: BlockKind, hint: u64) -> FsResult<(u64, BufId)>;
    /// Give back a block the tree no longer references.
    fn free(&mut self, kind: BlockKind, ptr: u64) -> FsResult<()>;
}
