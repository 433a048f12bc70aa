//! An in-memory [`BlockStore`] that behaves like a strict transaction, for tests (this
//! module's and the integrator's).
//!
//! It models what labfs's transaction layer promises the tree, and checks what the tree
//! promises back:
//!
//! - Blocks read in a transaction are *held* until [`MemStore::commit`]; reading the same
//!   pointer again returns the same [`BufId`].
//! - A block that is not held comes "from disk": its magic (for the kind asked for) and CRC
//!   are verified, as a real buffer read verifier would, and a mismatch is
//!   [`FsError::Corrupt`] / [`FsError::Crc`].
//! - Every byte the tree changes must be covered by a [`BlockStore::log_range`] call:
//!   `commit` compares each dirty block with its contents at the start of the transaction
//!   and fails with [`FsError::Corrupt`] naming the first unlogged byte. This is what makes
//!   journalling the logged ranges (labfs part 2) sufficient.
//! - `commit` is the write-back: it stamps the LSN and computes the CRC of each dirty
//!   B+tree block, as the store side of the contract requires.
//!
//! Pointers are small integers from 1 up (0 and the all-ones values are null in some
//! layouts); the block at pointer `p` sits at device address `p * 8` (filesystem block `p`).
//! Freed pointers are reused, nearest to the allocation hint first.

use std::collections::BTreeSet;

use super::block::lsn_offset;
use super::store::{BlockStore, BufId};
use crate::fs::error::{CrcMismatch, FsError, FsResult};
use crate::fs::format::{BB_PER_BLOCK, BLOCK_SIZE, BlockKind, Daddr, Magic, endian};

/// The first pointer handed out.
const FIRST_PTR: u64 = 1;

/// One allocated block.
#[derive(Clone)]
struct Slot {
    kind: BlockKind,
    data: Box<[u8]>,
    /// Held by the current transaction.
    held: bool,
    /// Changed in the current transaction.
    dirty: bool,
    /// Contents when the transaction first changed the block (logging check only).
    before: Option<Box<[u8]>>,
    /// Byte ranges logged in the current transaction.
    logged: Vec<(usize, usize)>,
}

/// An in-memory block store with transaction semantics, CRC'd write-back and a check that
/// every change was logged. Cloning snapshots the whole store (for fault-injection tests).
#[derive(Clone)]
pub struct MemStore {
    uuid: [u8; 16],
    slots: Vec<Option<Slot>>,
    free: BTreeSet<u64>,
    held: Vec<u32>,
    live: usize,
    lsn: u64,
    check_logging: bool,
    /// Contract violations seen since the last commit (reported by `commit`).
    violations: Vec<FsError>,
}

impl MemStore {
    /// An empty store for a filesystem with `uuid`; change logging is checked.
    pub fn new(uuid: [u8; 16]) -> Self {
        MemStore {
            uuid,
            slots: Vec::new(),
            free: BTreeSet::new(),
            held: Vec::new(),
            live: 0,
            lsn: 1,
            check_logging: true,
            violations: Vec::new(),
        }
    }

    /// Turn the unlogged-change check on or off (off for benchmarks: it copies each block
    /// the first time a transaction changes it).
    pub fn set_check_logging(&mut self, on: bool) {
        self.check_logging = on;
    }

    /// Blocks currently allocated.
    pub fn live_blocks(&self) -> usize {
        self.live
    }

    /// The device address of pointer `ptr` (saturating: a corrupt pointer read from a block
    /// may be any value, and still needs an address for its error message).
    pub fn daddr_of(ptr: u64) -> Daddr {
        Daddr(ptr.saturating_mul(BB_PER_BLOCK))
    }

    /// End the transaction: verify that every change was logged, write back every dirty
    /// block (LSN stamped, CRC computed) and release all holds. Returns the first contract
    /// violation of the transaction, if any, after finishing the write-back.
    pub fn commit(&mut self) -> FsResult<()> {
        let lsn = self.lsn;
        self.lsn += 1;
        let check = self.check_logging;
        for idx in std::mem::take(&mut self.held) {
            let ptr = idx as u64 + FIRST_PTR;
            let Some(slot) = self.slots[idx as usize].as_mut() else {
                continue;
            };
            slot.held = false;
            if slot.dirty {
                if check
                    && let Some(before) = slot.before.take()
                    && let Some(off) = first_unlogged(&before, &slot.data, &slot.logged)
                {
                    self.violations.push(FsError::Corrupt {
                        kind: slot.kind,
                        daddr: Self::daddr_of(ptr).0,
                        what: format!("byte {off} changed but was not logged"),
                    });
                }
                if let Some(off) = lsn_offset(slot.kind) {
                    endian::put_u64(&mut slot.data, off, lsn);
                }
                let crc = block_crc(slot.kind, &slot.data);
                endian::put_crc(&mut slot.data, slot.kind.crc_offset(), crc);
            }
            slot.dirty = false;
            slot.before = None;
            slot.logged.clear();
        }
        match self.violations.drain(..).next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The committed or in-transaction bytes of block `ptr`, if allocated.
    pub fn block(&self, ptr: u64) -> Option<&[u8]> {
        self.slot(ptr).map(|s| &s.data[..])
    }

    /// Raw mutable bytes of block `ptr`, bypassing logging and holds: for tests that
    /// corrupt an image between transactions.
    pub fn block_mut_unlogged(&mut self, ptr: u64) -> Option<&mut [u8]> {
        let idx = self.index(ptr)?;
        self.slots[idx].as_mut().map(|s| &mut s.data[..])
    }

    /// Recompute the stored CRC of block `ptr` after a raw edit, so that only the tree's
    /// own header checks can notice the corruption.
    pub fn restamp_crc(&mut self, ptr: u64) {
        if let Some(idx) = self.index(ptr)
            && let Some(slot) = self.slots[idx].as_mut()
        {
            let crc = block_crc(slot.kind, &slot.data);
            endian::put_crc(&mut slot.data, slot.kind.crc_offset(), crc);
        }
    }

    /// Every allocated pointer, ascending.
    pub fn allocated(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i as u64 + FIRST_PTR)
            .collect()
    }

    fn index(&self, ptr: u64) -> Option<usize> {
        let idx = usize::try_from(ptr.checked_sub(FIRST_PTR)?).ok()?;
        (idx < self.slots.len()).then_some(idx)
    }

    fn slot(&self, ptr: u64) -> Option<&Slot> {
        self.slots[self.index(ptr)?].as_ref()
    }

    fn slot_of(&self, id: BufId) -> &Slot {
        match self.slots.get(id.0 as usize).and_then(Option::as_ref) {
            Some(s) => s,
            None => panic!("MemStore: {id:?} names no allocated block (used after free?)"),
        }
    }

    fn hold(&mut self, idx: usize) -> BufId {
        if let Some(slot) = self.slots[idx].as_mut()
            && !slot.held
        {
            slot.held = true;
            self.held.push(idx as u32);
        }
        BufId(idx as u32)
    }
}

/// CRC32c of a block with its CRC field taken as zero (XFS `xfs_start_cksum_safe`).
fn block_crc(kind: BlockKind, data: &[u8]) -> u32 {
    let off = kind.crc_offset();
    let len = kind.crc_len().min(data.len());
    let crc = crc32c::crc32c(&data[..off]);
    let crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc32c::crc32c_append(crc, &data[off + 4..len])
}

/// The first byte that differs between `before` and `after` and is outside every range.
fn first_unlogged(before: &[u8], after: &[u8], ranges: &[(usize, usize)]) -> Option<usize> {
    let mut covered = vec![false; after.len()];
    for &(first, last) in ranges {
        for c in &mut covered[first..=last] {
            *c = true;
        }
    }
    before
        .iter()
        .zip(after)
        .enumerate()
        .find(|&(i, (a, b))| a != b && !covered[i])
        .map(|(i, _)| i)
}

fn magic_ok(kind: BlockKind, data: &[u8]) -> bool {
    match kind.magic() {
        Magic::U32(v) => endian::get_u32(data, 0) == v,
        Magic::U16 { offset, value } => endian::get_u16(data, offset) == value,
    }
}

impl BlockStore for MemStore {
    fn uuid(&self) -> [u8; 16] {
        self.uuid
    }

    fn read(&mut self, kind: BlockKind, ptr: u64) -> FsResult<BufId> {
        let daddr = Self::daddr_of(ptr).0;
        let Some(idx) = self.index(ptr).filter(|&i| self.slots[i].is_some()) else {
            return Err(FsError::Corrupt {
                kind,
                daddr,
                what: format!("pointer {ptr:#x} names no allocated block"),
            });
        };
        if let Some(slot) = self.slots[idx].as_ref()
            && !slot.held
        {
            // A read from "disk": verify as a buffer read verifier would.
            if !magic_ok(kind, &slot.data) {
                return Err(FsError::Corrupt {
                    kind,
                    daddr,
                    what: "bad magic on read".into(),
                });
            }
            let found = endian::get_crc(&slot.data, kind.crc_offset());
            let expected = block_crc(kind, &slot.data);
            if found != expected {
                return Err(FsError::crc(kind, daddr, CrcMismatch { expected, found }));
            }
        }
        Ok(self.hold(idx))
    }

    fn daddr(&self, id: BufId) -> Daddr {
        Self::daddr_of(u64::from(id.0) + FIRST_PTR)
    }

    fn bytes(&self, id: BufId) -> &[u8] {
        &self.slot_of(id).data
    }

    fn bytes_mut(&mut self, id: BufId) -> &mut [u8] {
        let check = self.check_logging;
        let daddr = self.daddr(id).0;
        let slot = match self.slots.get_mut(id.0 as usize).and_then(Option::as_mut) {
            Some(s) => s,
            None => panic!("MemStore: {id:?} names no allocated block (used after free?)"),
        };
        if !slot.held {
            self.violations.push(FsError::Corrupt {
                kind: slot.kind,
                daddr,
                what: "changed without being held by the transaction".into(),
            });
        }
        if check && slot.before.is_none() {
            slot.before = Some(slot.data.clone());
        }
        slot.dirty = true;
        &mut slot.data
    }

    fn log_range(&mut self, id: BufId, first: usize, last: usize) {
        let daddr = self.daddr(id).0;
        let slot = match self.slots.get_mut(id.0 as usize).and_then(Option::as_mut) {
            Some(s) => s,
            None => panic!("MemStore: {id:?} names no allocated block (used after free?)"),
        };
        if first > last || last >= slot.data.len() {
            self.violations.push(FsError::Corrupt {
                kind: slot.kind,
                daddr,
                what: format!("logged an impossible range {first}..={last}"),
            });
            return;
        }
        if self.check_logging {
            slot.logged.push((first, last));
        }
    }

    fn alloc(&mut self, kind: BlockKind, hint: u64) -> FsResult<(u64, BufId)> {
        let reuse = self
            .free
            .range(hint..)
            .next()
            .or_else(|| self.free.iter().next_back())
            .copied();
        let ptr = match reuse {
            Some(p) => {
                self.free.remove(&p);
                p
            }
            None => {
                self.slots.push(None);
                self.slots.len() as u64 - 1 + FIRST_PTR
            }
        };
        let idx = (ptr - FIRST_PTR) as usize;
        let data = vec![0u8; BLOCK_SIZE].into_boxed_slice();
        self.slots[idx] = Some(Slot {
            kind,
            before: self.check_logging.then(|| data.clone()),
            data,
            held: false,
            dirty: true,
            logged: Vec::new(),
        });
        self.live += 1;
        Ok((ptr, self.hold(idx)))
    }

    fn free(&mut self, kind: BlockKind, ptr: u64) -> FsResult<()> {
        let daddr = Self::daddr_of(ptr).0;
        let Some(idx) = self.index(ptr).filter(|&i| self.slots[i].is_some()) else {
            return Err(FsError::Corrupt {
                kind,
                daddr,
                what: format!("free of pointer {ptr:#x}, which is not allocated"),
            });
        };
        if let Some(slot) = self.slots[idx].as_ref()
            && slot.kind != kind
        {
            return Err(FsError::Corrupt {
                kind,
                daddr,
                what: format!("free as {kind} of a {} block", slot.kind),
            });
        }
        self.slots[idx] = None;
        self.free.insert(ptr);
        self.live -= 1;
        Ok(())
    }
}
