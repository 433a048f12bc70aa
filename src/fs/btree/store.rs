//! TEMPORARY integration shim, replaced by the btree branch on merge.
#![allow(missing_docs)]
use crate::fs::error::FsResult;
use crate::fs::format::{BlockKind, Daddr};
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufId(pub u32);
pub trait BlockStore {
    fn uuid(&self) -> [u8; 16];
    fn read(&mut self, kind: BlockKind, ptr: u64) -> FsResult<BufId>;
    fn daddr(&self, id: BufId) -> Daddr;
    fn bytes(&self, id: BufId) -> &[u8];
    fn bytes_mut(&mut self, id: BufId) -> &mut [u8];
    fn log_range(&mut self, id: BufId, first: usize, last: usize);
    fn alloc(&mut self, kind: BlockKind, hint: u64) -> FsResult<(u64, BufId)>;
    fn free(&mut self, kind: BlockKind, ptr: u64) -> FsResult<()>;
}
