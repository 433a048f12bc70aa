//! A B+tree's blocks inside a transaction: the one [`BlockStore`] implementation.
//!
//! Every labfs tree (free space, inodes, extent maps, directory hashes) reads, changes and
//! logs its blocks the same way, through the transaction that holds them. What differs is
//! only where a tree's pointers lead and where its new blocks come from and freed ones go:
//! the AG free list for the free-space trees, the AG's free space for the inode trees, the
//! filesystem for an extent map, the directory's own index space for a directory. Each tree
//! says that in a small [`TreeSpace`]; [`TreeStore`] does the rest.

use crate::fs::btree::store::{BlockStore, BufId};
use crate::fs::btree::{BtreeSpec, Cursor, Root, stat_line};
use crate::fs::error::FsResult;
use crate::fs::format::{BLOCK_SIZE, BlockKind, Daddr};
use crate::fs::trans::Trans;

/// Where one tree's blocks live.
pub trait TreeSpace {
    /// The device address of tree pointer `ptr` (an error if `ptr` cannot be this tree's).
    fn locate(&self, tp: &Trans, kind: BlockKind, ptr: u64) -> FsResult<Daddr>;
    /// Find a block for a new tree block near pointer `hint`: its pointer and address.
    fn alloc(&mut self, tp: &mut Trans, kind: BlockKind, hint: u64) -> FsResult<(u64, Daddr)>;
    /// Take back a block the tree no longer uses; its buffer (held by the transaction, at
    /// `id`) is invalidated by the store first unless [`TreeSpace::keeps_freed_buffer`].
    fn free(&mut self, tp: &mut Trans, kind: BlockKind, ptr: u64, id: BufId) -> FsResult<()>;
    /// Whether `free` wants the freed block's buffer left valid (a directory recycles it).
    fn keeps_freed_buffer(&self) -> bool {
        false
    }
}

/// A tree's block store: the transaction plus the tree's [`TreeSpace`].
pub struct TreeStore<'t, 'a, S> {
    /// The transaction holding the tree's buffers.
    pub tp: &'t mut Trans<'a>,
    /// Where the tree's blocks live.
    pub space: S,
}

impl<'t, 'a, S: TreeSpace> TreeStore<'t, 'a, S> {
    /// A store for a tree whose blocks live in `space`.
    pub fn new(tp: &'t mut Trans<'a>, space: S) -> Self {
        TreeStore { tp, space }
    }
}

impl<S: TreeSpace> BlockStore for TreeStore<'_, '_, S> {
    fn uuid(&self) -> [u8; 16] {
        self.tp.fs().uuid
    }

    fn read(&mut self, kind: BlockKind, ptr: u64) -> FsResult<BufId> {
        let daddr = self.space.locate(self.tp, kind, ptr)?;
        self.tp.read_buf(daddr, kind, BLOCK_SIZE)
    }

    fn daddr(&self, id: BufId) -> Daddr {
        self.tp.buf_daddr(id)
    }

    fn bytes(&self, id: BufId) -> &[u8] {
        self.tp.buf(id)
    }

    fn bytes_mut(&mut self, id: BufId) -> &mut [u8] {
        self.tp.buf_mut(id)
    }

    fn log_range(&mut self, id: BufId, first: usize, last: usize) {
        self.tp.log_buf(id, first, last);
    }

    fn alloc(&mut self, kind: BlockKind, hint: u64) -> FsResult<(u64, BufId)> {
        let (ptr, daddr) = self.space.alloc(self.tp, kind, hint)?;
        let id = self.tp.new_buf(daddr, kind, BLOCK_SIZE)?;
        Ok((ptr, id))
    }

    fn free(&mut self, kind: BlockKind, ptr: u64) -> FsResult<()> {
        let id = self.read(kind, ptr)?;
        if !self.space.keeps_freed_buffer() {
            self.tp.inval_buf(id);
        }
        self.space.free(self.tp, kind, ptr, id)
    }
}

/// Run one cursor operation on the tree rooted at `root` (owned by `owner`): returns the
/// operation's result and the tree's root after it (a split or a join can move it), and adds
/// the cursor's exact tallies to the tree's btree stat line, where XFS counts them.
pub fn run_cursor<'t, 'a, B: BtreeSpec, S: TreeSpace, R>(
    st: &mut TreeStore<'t, 'a, S>,
    root: Root,
    owner: u64,
    f: impl FnOnce(&mut Cursor<B>, &mut TreeStore<'t, 'a, S>) -> FsResult<R>,
) -> (FsResult<R>, Root) {
    let mut cur = Cursor::<B>::new(root, owner);
    let result = f(&mut cur, st);
    if let Some(line) = stat_line(B::kind(0)) {
        st.tp.fs().stats.add_btree(line, &cur.take_counts().0);
    }
    (result, cur.root())
}
