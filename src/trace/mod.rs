//! TEMPORARY integration shim, replaced by the trace branch on merge.
#![allow(missing_docs, unused_variables)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dev {
    pub major: u32,
    pub minor: u32,
}
pub mod events {
    use super::Dev;
    #[inline(always)]
    pub fn crc32c(
        site: &'static str,
        len: u32,
        head: u32,
        tail: u32,
        mode: &'static str,
        engine: &'static str,
    ) {
    }
    #[inline(always)]
    pub fn sb_mark_inode_writeback(
        dev: Dev,
        ino: u64,
        dirtied_when: u64,
        state: &'static str,
        mode: u32,
    ) {
    }
    #[inline(always)]
    pub fn sb_clear_inode_writeback(
        dev: Dev,
        ino: u64,
        dirtied_when: u64,
        state: &'static str,
        mode: u32,
    ) {
    }
}
