//! FUSE node ids and the table of inodes the kernel holds.
//!
//! A FUSE node id names an inode for as long as the kernel remembers it. labfs inode numbers
//! serve directly, except that FUSE insists the root is node 1: the root's number and 1 swap
//! places (1 is never a labfs inode: it would sit in the superblock's block). The control
//! directory's synthetic nodes have the top bit set, far above any labfs inode number.
//!
//! [`NodeTable`] plays the part of the kernel's VFS inode cache for a local filesystem: every
//! inode handed to the kernel (lookup, create, readdirplus ...) is kept with the kernel's
//! lookup count until the kernel forgets it, so later requests by node id reach the cached
//! inode without `iget`. That keeps labfs's inode-cache counters (`ig`) meaning what they mean
//! on XFS, where a path the dentry cache resolves never calls `xfs_iget`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::fs::Fs;
use crate::fs::error::FsResult;
use crate::fs::inode::Inode;

/// The FUSE node id of the root directory.
pub const ROOT_NODE: u64 = 1;
/// Node ids with this bit set are the control directory's synthetic nodes.
pub const CONTROL_BIT: u64 = 1 << 63;

/// labfs inode number to FUSE node id.
pub fn node_of(fs: &Fs, ino: u64) -> u64 {
    if ino == fs.rootino { ROOT_NODE } else { ino }
}

/// FUSE node id (not a control node) to labfs inode number.
pub fn ino_of(fs: &Fs, node: u64) -> u64 {
    if node == ROOT_NODE { fs.rootino } else { node }
}

const SHARDS: usize = 16;

/// One shard: node id to the inode and the kernel's lookup count.
type Shard = Mutex<HashMap<u64, (Arc<Inode>, u64)>>;

/// Inodes the kernel knows, with its lookup count for each.
pub struct NodeTable {
    shards: Vec<Shard>,
}

impl NodeTable {
    /// An empty table.
    pub fn new() -> NodeTable {
        NodeTable {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, node: u64) -> &Shard {
        &self.shards[(node as usize) % SHARDS]
    }

    /// The kernel took one more reference to `ip` (a reply that hands it an entry).
    /// A different inode under the same number (the old one was freed and its number
    /// reused) replaces the old one.
    pub fn remember(&self, node: u64, ip: &Arc<Inode>) {
        let mut s = self.shard(node).lock();
        let slot = s.entry(node).or_insert_with(|| (Arc::clone(ip), 0));
        if !Arc::ptr_eq(&slot.0, ip) {
            slot.0 = Arc::clone(ip);
        }
        slot.1 += 1;
    }

    /// The kernel dropped `n` references (FORGET).
    pub fn forget(&self, node: u64, n: u64) {
        let mut s = self.shard(node).lock();
        if let Some(slot) = s.get_mut(&node) {
            slot.1 = slot.1.saturating_sub(n);
            if slot.1 == 0 {
                s.remove(&node);
            }
        }
    }

    /// The inode behind `node`: the one the kernel holds, else read through the inode cache.
    pub fn get(&self, fs: &Fs, node: u64) -> FsResult<Arc<Inode>> {
        if let Some((ip, _)) = self.shard(node).lock().get(&node) {
            return Ok(Arc::clone(ip));
        }
        fs.iget(ino_of(fs, node))
    }

    /// Drop every entry (the connection ended).
    pub fn clear(&self) {
        for s in &self.shards {
            s.lock().clear();
        }
    }

    /// Inodes held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for NodeTable {
    fn default() -> Self {
        NodeTable::new()
    }
}
