//! TEMPORARY integration shim, replaced by the stats branch on merge.
#![allow(missing_docs, unused_variables, dead_code)]
#[derive(Debug, Clone, Copy)]
pub enum Stat {
    Allocx,
    Allocb,
    Freex,
    Freeb,
    BlkMapr,
    BlkMapw,
    BlkUnmap,
    AddExlist,
    DelExlist,
    LookExlist,
    DirLookup,
    DirCreate,
    DirRemove,
    DirGetdents,
    TransSync,
    TransAsync,
    TransEmpty,
    IgAttempts,
    IgFound,
    IgFrecycle,
    IgMissed,
    IgDup,
    IgReclaims,
    IgAttrchg,
    XstratQuick,
    WriteCalls,
    ReadCalls,
    IflushCount,
    IclusterFlushcnt,
    IclusterFlushinode,
    VnActive,
    VnAlloc,
    VnGet,
    VnHold,
    VnRele,
    VnReclaim,
    VnRemove,
    VnFree,
    BufGet,
    BufCreate,
    BufGetLocked,
    BufGetLockedWaited,
    BufBusyLocked,
    BufMissLocked,
    BufPageRetries,
    BufPageFound,
    BufGetRead,
}
#[derive(Debug, Clone, Copy)]
pub enum Stat64 {
    XstratBytes,
    WriteBytes,
    ReadBytes,
    DeferRelog,
}
#[derive(Debug, Clone, Copy)]
pub enum BtreeLine {
    Abtb2,
    Abtc2,
    Bmbt2,
    Ibt2,
    Fibt2,
}
#[derive(Debug, Default)]
pub struct MountStats;
impl MountStats {
    pub fn new() -> Self {
        MountStats
    }
    pub fn inc(&self, s: Stat) {}
    pub fn dec(&self, s: Stat) {}
    pub fn add(&self, s: Stat, n: u32) {}
    pub fn add64(&self, s: Stat64, n: u64) {}
    pub fn add_btree(&self, line: BtreeLine, counts: &[u32; 15]) {}
}
