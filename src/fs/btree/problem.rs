//! What can be wrong with one B+tree block: found by the header checks that every read
//! runs (`block.rs`) and by the structural checker (`check.rs`), so it lives below both.

use std::fmt;

use crate::fs::error::FsError;

/// One thing wrong with one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The store could not produce the block (CRC mismatch, bad magic on read, I/O).
    Unreadable(FsError),
    /// The store returned fewer bytes than a block.
    ShortBuffer {
        /// Bytes returned.
        len: usize,
    },
    /// The magic number is not this level's block kind's.
    BadMagic {
        /// Magic found.
        found: u32,
        /// Magic expected.
        expected: u32,
    },
    /// The level field disagrees with the block's place in the tree.
    BadLevel {
        /// Level found.
        found: u16,
        /// Level expected.
        expected: u16,
    },
    /// More entries than fit in a block.
    TooManyRecords {
        /// Entries claimed.
        numrecs: usize,
        /// Most that fit.
        max: usize,
    },
    /// Fewer entries than a non-root block must keep.
    TooFewRecords {
        /// Entries present.
        numrecs: usize,
        /// Minimum for the level.
        min: usize,
    },
    /// A node with no entries.
    EmptyNode,
    /// The self-address field is not the block's address.
    BadBlkno {
        /// Address found.
        found: u64,
        /// The block's address.
        expected: u64,
    },
    /// The filesystem UUID does not match.
    BadUuid,
    /// The owner field names another AG or inode.
    BadOwner {
        /// Owner found.
        found: u64,
        /// Owner expected.
        expected: u64,
    },
    /// A child pointer that cannot name a block.
    BadPointer {
        /// 1-based entry index.
        index: usize,
        /// The pointer value.
        value: u64,
    },
    /// The block was already reached through another pointer.
    SharedBlock,
    /// Entry `index` does not sort after entry `index - 1`.
    KeysOutOfOrder {
        /// 1-based entry index.
        index: usize,
    },
    /// The first key does not sort after the last key of the previous block of the level.
    OrderAcrossBlocks {
        /// Last key of the previous block.
        previous: String,
        /// First key of this block.
        first: String,
    },
    /// The parent's key for this block is not the block's first key.
    ParentKeyMismatch {
        /// Key in the parent.
        parent: String,
        /// This block's first key.
        first: String,
    },
    /// The left sibling pointer is not the previous block of the level.
    LeftSibling {
        /// Pointer found (the layout's null value when none).
        found: u64,
        /// Previous block of the level (null when this block is the first).
        expected: u64,
    },
    /// The right sibling pointer is not the next block of the level.
    RightSibling {
        /// Pointer found.
        found: u64,
        /// Next block of the level (null when this block is the last).
        expected: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "unreadable: {e}"),
            Problem::ShortBuffer { len } => write!(f, "block buffer is only {len} bytes"),
            Problem::BadMagic { found, expected } => {
                write!(f, "bad magic {found:#x}, expected {expected:#x}")
            }
            Problem::BadLevel { found, expected } => {
                write!(f, "level {found}, expected {expected}")
            }
            Problem::TooManyRecords { numrecs, max } => {
                write!(f, "numrecs {numrecs} exceeds the maximum {max}")
            }
            Problem::TooFewRecords { numrecs, min } => {
                write!(f, "numrecs {numrecs} below the minimum {min}")
            }
            Problem::EmptyNode => f.write_str("interior node with no entries"),
            Problem::BadBlkno { found, expected } => {
                write!(f, "blkno {found}, expected {expected}")
            }
            Problem::BadUuid => f.write_str("filesystem UUID mismatch"),
            Problem::BadOwner { found, expected } => {
                write!(f, "owner {found}, expected {expected}")
            }
            Problem::BadPointer { index, value } => {
                write!(f, "child pointer {index} is {value:#x}")
            }
            Problem::SharedBlock => f.write_str("block reached twice"),
            Problem::KeysOutOfOrder { index } => {
                write!(f, "entry {index} does not sort after entry {}", index - 1)
            }
            Problem::OrderAcrossBlocks { previous, first } => write!(
                f,
                "first key {first} does not sort after the previous block's last key {previous}"
            ),
            Problem::ParentKeyMismatch { parent, first } => {
                write!(f, "parent key {parent} differs from first key {first}")
            }
            Problem::LeftSibling { found, expected } => {
                write!(f, "left sibling {found:#x}, expected {expected:#x}")
            }
            Problem::RightSibling { found, expected } => {
                write!(f, "right sibling {found:#x}, expected {expected:#x}")
            }
        }
    }
}
