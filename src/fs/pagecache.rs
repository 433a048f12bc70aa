//! A file's page cache: its cached data pages, by file block.
//!
//! The cache hangs off the in-core inode (`InodeCore::ext`), so it is defined below the inode;
//! the data path (`data`) fills, writes back and drops it.

use std::collections::BTreeMap;

use crate::fs::format::BLOCK_SIZE;

/// One cached page of file data (one filesystem block).
#[derive(Debug)]
pub struct Page {
    /// The bytes.
    pub bytes: Box<[u8; BLOCK_SIZE]>,
    /// Changed since last written to its disk block.
    pub dirty: bool,
}

impl Page {
    /// A clean page of zeroes.
    pub(crate) fn zeroed() -> Page {
        Page {
            bytes: Box::new([0u8; BLOCK_SIZE]),
            dirty: false,
        }
    }
}

/// A file's cached data: pages by file block number.
#[derive(Debug, Default)]
pub struct FileCache {
    /// Cached pages.
    pub pages: BTreeMap<u64, Page>,
    /// Pages with `dirty` set.
    pub dirty_pages: usize,
}
