//! `mem`: a sparse in-memory device with a volatile write cache that a crash really drops.
//!
//! # Layout
//!
//! The device is an array of 4 KiB pages behind a two-level page table: a fixed top-level
//! array of [`OnceLock`]s, each holding (once touched) a leaf of 4096 page slots, each slot a
//! [`OnceLock`] holding a boxed page (its state, and its 4 KiB of bytes in an allocation of
//! their own). Looking a page up is two atomic loads and no lock, so
//! I/O on different pages never contends on a shared lock; a page is only allocated by its
//! first write (reads of unwritten pages return zeroes without allocating), and is never freed
//! before the device, which is what lets lookups hand out plain references. Each page carries
//! its own reader-writer lock; a request takes the lock of each page it touches in turn, which
//! makes every request atomic per page, and hence per 512-byte sector, against every other.
//!
//! # Volatile cache and crash
//!
//! Writes land in the page at once (the *live* image, what reads see). The *durable* image,
//! what survives [`MemDev::crash`], is the live image with an undo set applied: the first
//! non-FUA write to a page in each flush epoch saves the page's previous contents (or a
//! "was never written" marker) into the page itself and records the page in a sharded dirty
//! list. [`BlockDev::flush`] starts a new epoch and drops the saved copies; `crash` writes them
//! back. A FUA write also updates the saved copy of the sectors it writes (if the page has
//! one), so those sectors survive a crash while the rest of the page still reverts.
//!
//! Undo buffers freed by a flush go back to a small per-shard pool for the next epoch, and a
//! 64-bit mask records which dirty shards are non-empty, so an fsync-style "write one block,
//! flush" loop touches one shard per flush rather than all 64.
//!
//! Why undo rather than redo: reads are the hot path of a filesystem and must see one image
//! with no overlay lookup, and a run that never crashes pays only one 4 KiB copy per page per
//! flush epoch, plus freeing it at the next flush. (An fsync-heavy workload flushes often, so
//! this is one copy per written page, which is of the order of the write itself.)
//!
//! A write that runs concurrently with a flush may end up on either side of it, as on a real
//! device; [`MemDev::crash`] is meant to be called with I/O stopped (a power cut between
//! requests), and requests that race with it land on either side too.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::fs::dev::{BlockDev, DevError, IoReq, MIN_DEVICE_SIZE, SECTOR_SIZE, check_io};
use crate::units::format_size_iec;

/// Bytes per page: the unit of allocation and of undo copies.
pub const PAGE_SIZE: usize = 4096;
const PAGE_SHIFT: u32 = 12;
/// Pages per leaf of the page table (a leaf covers 16 MiB).
const LEAF_SHIFT: u32 = 12;
const LEAF_PAGES: usize = 1 << LEAF_SHIFT;
/// Shards of the dirty-page list: 64, so one `u64` can say which are non-empty.
const DIRTY_SHARDS: usize = 64;

/// Largest `mem` device: 16 TiB, which keeps the top level of the page table at 1 Mi
/// entries (24 MiB) even when the device is that big.
pub const MAX_MEM_SIZE: u64 = 16 << 40;

/// What a page looked like at the start of the current flush epoch.
enum Undo {
    /// No saved copy: no non-FUA write has touched the page since the epoch began, so its
    /// live contents are durable.
    None,
    /// The page had never been written: it reverts to zeroes.
    Zero,
    /// The page's contents when the epoch began.
    Saved(Box<[u8; PAGE_SIZE]>),
}

struct PageState {
    /// The page's bytes, in an allocation of their own (see [`zeroed_page`]).
    data: Box<[u8; PAGE_SIZE]>,
    /// Whether the page has never been written (its data is all zero by construction).
    fresh: bool,
    /// The epoch `undo` belongs to; 0 means none.
    undo_epoch: u64,
    undo: Undo,
}

type Page = RwLock<PageState>;

/// A new all-zero page buffer, allocated zeroed. Kept apart from the page's state, it is
/// exactly 4 KiB, an allocator size class of its own: inline with the state it made a
/// 4.1 KiB object that took a 5 KiB slot, spanning two memory pages, and was zeroed by a
/// store loop. Allocated zeroed, fresh memory from the system needs no zeroing pass, so a
/// page costs its one page fault, taken by the write that fills it.
fn zeroed_page() -> Box<[u8; PAGE_SIZE]> {
    // The conversion cannot fail (the length is PAGE_SIZE); the fallback keeps it panic-free.
    vec![0u8; PAGE_SIZE]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| Box::new([0; PAGE_SIZE]))
}
type Leaf = Box<[OnceLock<Box<Page>>]>;

/// Undo buffers each dirty shard keeps for reuse after a flush (1 MiB per shard). Reusing
/// them saves a malloc, a free and, for big epochs, the page faults of memory the allocator
/// gave back to the system; the cap bounds what an idle device holds.
const POOL_PER_SHARD: usize = 256;

type UndoBuf = Box<[u8; PAGE_SIZE]>;

#[derive(Default)]
struct DirtyList {
    /// Pages that saved an undo copy (or a zero marker).
    pages: Vec<u64>,
    /// Spare undo buffers.
    pool: Vec<UndoBuf>,
}

impl DirtyList {
    fn recycle(&mut self, freed: &mut Vec<UndoBuf>) {
        let room = POOL_PER_SHARD.saturating_sub(self.pool.len());
        let take = room.min(freed.len());
        self.pool.extend(freed.drain(..take));
    }
}

/// One shard of the dirty-page list, padded to its own cache line.
#[repr(align(64))]
struct DirtyShard(Mutex<DirtyList>);

fn dirty_shards() -> Box<[DirtyShard]> {
    (0..DIRTY_SHARDS)
        .map(|_| DirtyShard(Mutex::new(DirtyList::default())))
        .collect()
}

/// The `mem` device. See the module docs for how it is built and what a crash does.
pub struct MemDev {
    size: u64,
    leaves: Box<[OnceLock<Leaf>]>,
    /// The current flush epoch; starts at 1.
    epoch: AtomicU64,
    /// Pages that saved an undo copy, by `page % DIRTY_SHARDS`, and spare undo buffers.
    dirty: Box<[DirtyShard]>,
    /// Bit i set: shard i may hold pages (set after a push, cleared by the flush that takes
    /// them), so a flush after a few writes visits a few shards, not all 64.
    dirty_mask: AtomicU64,
    resident_pages: AtomicU64,
}

impl std::fmt::Debug for MemDev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemDev")
            .field("size", &self.size)
            .field(
                "resident_pages",
                &self.resident_pages.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

/// One piece of a request that falls in a single page.
struct Chunk {
    page: u64,
    /// Offset in the page.
    in_page: usize,
    /// Range in the caller's buffer.
    buf: std::ops::Range<usize>,
}

/// Split `[offset, offset + len)` at page boundaries.
fn chunks(offset: u64, len: usize) -> impl Iterator<Item = Chunk> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let pos = offset + done as u64;
        let in_page = (pos % PAGE_SIZE as u64) as usize;
        let n = (PAGE_SIZE - in_page).min(len - done);
        let c = Chunk {
            page: pos >> PAGE_SHIFT,
            in_page,
            buf: done..done + n,
        };
        done += n;
        Some(c)
    })
}

impl MemDev {
    /// An all-zero device of `size` bytes (a multiple of 512, at least 4 KiB, at most
    /// [`MAX_MEM_SIZE`]). Memory is only used for pages that get written.
    pub fn new(size: u64) -> Result<MemDev, DevError> {
        if !size.is_multiple_of(SECTOR_SIZE) {
            return Err(DevError::Config(format!(
                "mem size {size} is not a multiple of 512"
            )));
        }
        if !(MIN_DEVICE_SIZE..=MAX_MEM_SIZE).contains(&size) {
            return Err(DevError::Config(format!(
                "mem size {} is outside {}..={}",
                format_size_iec(size),
                format_size_iec(MIN_DEVICE_SIZE),
                format_size_iec(MAX_MEM_SIZE)
            )));
        }
        let pages = size.div_ceil(PAGE_SIZE as u64);
        let leaves = pages.div_ceil(LEAF_PAGES as u64) as usize;
        Ok(MemDev {
            size,
            leaves: (0..leaves).map(|_| OnceLock::new()).collect(),
            epoch: AtomicU64::new(1),
            dirty: dirty_shards(),
            dirty_mask: AtomicU64::new(0),
            resident_pages: AtomicU64::new(0),
        })
    }

    /// Bytes of page memory in use (4 KiB per page ever written; undo copies not counted).
    pub fn resident_bytes(&self) -> u64 {
        self.resident_pages.load(Ordering::Relaxed) * PAGE_SIZE as u64
    }

    fn page(&self, page: u64) -> Option<&Page> {
        let leaf = self.leaves.get((page >> LEAF_SHIFT) as usize)?.get()?;
        leaf.get(page as usize & (LEAF_PAGES - 1))?
            .get()
            .map(|b| &**b)
    }

    fn page_or_alloc(&self, page: u64) -> Option<&Page> {
        let leaf = self
            .leaves
            .get((page >> LEAF_SHIFT) as usize)?
            .get_or_init(|| (0..LEAF_PAGES).map(|_| OnceLock::new()).collect());
        let slot = leaf.get(page as usize & (LEAF_PAGES - 1))?;
        Some(slot.get_or_init(|| {
            self.resident_pages.fetch_add(1, Ordering::Relaxed);
            Box::new(RwLock::new(PageState {
                data: zeroed_page(),
                fresh: true,
                undo_epoch: 0,
                undo: Undo::None,
            }))
        }))
    }

    /// Every allocated page, with its number.
    fn pages(&self) -> impl Iterator<Item = (u64, &Page)> {
        self.leaves.iter().enumerate().flat_map(|(li, leaf)| {
            leaf.get().into_iter().flat_map(move |leaf| {
                leaf.iter().enumerate().filter_map(move |(pi, slot)| {
                    slot.get()
                        .map(|p| (((li as u64) << LEAF_SHIFT) + pi as u64, &**p))
                })
            })
        })
    }

    /// A page that `check_io` said exists; a miss would be a bug in this module, reported
    /// as a configuration error rather than a panic.
    fn page_for_write(&self, page: u64) -> Result<&Page, DevError> {
        self.page_or_alloc(page).ok_or_else(|| {
            DevError::Config(format!(
                "mem page {page} outside the page table of {}",
                self.describe()
            ))
        })
    }

    /// Power cut: every write not made durable by a flush or FUA is lost, and the device
    /// reads back its durable image. Call with I/O stopped (see the module docs).
    pub fn crash(&self) {
        let epoch = self.epoch.load(Ordering::Acquire);
        self.dirty_mask.store(0, Ordering::Release);
        for shard in self.dirty.iter() {
            let pages = std::mem::take(&mut shard.0.lock().pages);
            let mut freed = Vec::new();
            for pno in pages {
                let Some(page) = self.page(pno) else { continue };
                let mut st = page.write();
                let undo = std::mem::replace(&mut st.undo, Undo::None);
                let current = st.undo_epoch == epoch;
                st.undo_epoch = 0;
                match undo {
                    Undo::None => {}
                    Undo::Zero => {
                        if current {
                            st.data.fill(0);
                            st.fresh = true;
                        }
                    }
                    Undo::Saved(mut saved) => {
                        if current {
                            // The saved copy becomes the page; the live bytes' buffer is
                            // the one recycled.
                            std::mem::swap(&mut st.data, &mut saved);
                        }
                        freed.push(saved);
                    }
                }
            }
            shard.0.lock().recycle(&mut freed);
        }
    }

    /// Flip the bits of `mask` in the byte at `offset`, in both the live and the durable
    /// image: media corruption, which no write path would produce.
    pub fn flip_bits(&self, offset: u64, mask: u8) -> Result<(), DevError> {
        check_io(
            self.size,
            IoReq::write(offset - offset % SECTOR_SIZE, SECTOR_SIZE as usize, true),
            || self.describe(),
        )?;
        let page = self.page_for_write(offset >> PAGE_SHIFT)?;
        let at = (offset % PAGE_SIZE as u64) as usize;
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut st = page.write();
        st.fresh = false;
        st.data[at] ^= mask;
        if st.undo_epoch == epoch {
            if let Undo::Zero = st.undo {
                st.undo = Undo::Saved(zeroed_page());
            }
            if let Undo::Saved(saved) = &mut st.undo {
                saved[at] ^= mask;
            }
        }
        Ok(())
    }

    /// A new device holding a copy of this one's live contents, all of it durable.
    pub fn snapshot(&self) -> MemDev {
        // The size was valid for `self`, so it is valid for the copy.
        let copy = MemDev {
            size: self.size,
            leaves: (0..self.leaves.len()).map(|_| OnceLock::new()).collect(),
            epoch: AtomicU64::new(1),
            dirty: dirty_shards(),
            dirty_mask: AtomicU64::new(0),
            resident_pages: AtomicU64::new(0),
        };
        for (pno, page) in self.pages() {
            let st = page.read();
            if st.fresh {
                continue;
            }
            if let Some(dst) = copy.page_or_alloc(pno) {
                let mut d = dst.write();
                *d.data = *st.data;
                d.fresh = false;
            }
        }
        copy
    }

    /// Pages holding an undo copy for the current epoch: what a crash would revert.
    pub fn unflushed_pages(&self) -> u64 {
        let epoch = self.epoch.load(Ordering::Acquire);
        self.pages()
            .filter(|(_, p)| {
                let st = p.read();
                st.undo_epoch == epoch && !matches!(st.undo, Undo::None)
            })
            .count() as u64
    }
}

impl BlockDev for MemDev {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        check_io(self.size, IoReq::read(offset, buf.len()), || {
            self.describe()
        })?;
        for c in chunks(offset, buf.len()) {
            let n = c.buf.len();
            let dst = &mut buf[c.buf];
            match self.page(c.page) {
                Some(page) => dst.copy_from_slice(&page.read().data[c.in_page..c.in_page + n]),
                None => dst.fill(0),
            }
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        check_io(self.size, IoReq::write(offset, buf.len(), fua), || {
            self.describe()
        })?;
        let epoch = self.epoch.load(Ordering::Acquire);
        for c in chunks(offset, buf.len()) {
            let page = self.page_for_write(c.page)?;
            let src = &buf[c.buf];
            let range = c.in_page..c.in_page + src.len();
            let mut st = page.write();
            if fua {
                // Durable now: if a crash would revert this page, make it keep these bytes.
                if st.undo_epoch == epoch {
                    if let Undo::Zero = st.undo {
                        st.undo = Undo::Saved(zeroed_page());
                    }
                    if let Undo::Saved(saved) = &mut st.undo {
                        saved[range.clone()].copy_from_slice(src);
                    }
                }
            } else if st.undo_epoch != epoch {
                let shard = c.page as usize & (DIRTY_SHARDS - 1);
                let spare = {
                    let mut list = self.dirty[shard].0.lock();
                    list.pages.push(c.page);
                    self.dirty_mask.fetch_or(1 << shard, Ordering::Release);
                    if st.fresh { None } else { list.pool.pop() }
                };
                st.undo = if st.fresh {
                    Undo::Zero
                } else {
                    match spare {
                        Some(mut buf) => {
                            *buf = *st.data;
                            Undo::Saved(buf)
                        }
                        None => Undo::Saved(st.data.clone()),
                    }
                };
                st.undo_epoch = epoch;
            }
            st.data[range].copy_from_slice(src);
            st.fresh = false;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), DevError> {
        // From here on writes belong to the new epoch: everything before is durable.
        let new = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        // Drop the old epoch's undo copies. A page re-dirtied in the new epoch (by a write
        // racing with this flush) keeps its copy and its place in the list. A push whose mask
        // bit lands after the swap below is simply left for the next flush: its copy is stale
        // (older epoch) and crash ignores stale copies.
        let mut mask = self.dirty_mask.swap(0, Ordering::AcqRel);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let Some(shard) = self.dirty.get(i) else {
                continue;
            };
            let pages = std::mem::take(&mut shard.0.lock().pages);
            let mut keep = Vec::new();
            let mut freed = Vec::new();
            for pno in pages {
                let Some(page) = self.page(pno) else { continue };
                let mut st = page.write();
                if st.undo_epoch >= new {
                    keep.push(pno);
                } else if let Undo::Saved(buf) = std::mem::replace(&mut st.undo, Undo::None) {
                    freed.push(buf);
                }
            }
            let mut list = shard.0.lock();
            if !keep.is_empty() {
                list.pages.extend(keep);
                self.dirty_mask.fetch_or(1 << i, Ordering::Release);
            }
            list.recycle(&mut freed);
        }
        Ok(())
    }

    fn reads_at_memory_speed(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("mem:{}", format_size_iec(self.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_page_boundaries() {
        let got: Vec<(u64, usize, std::ops::Range<usize>)> = chunks(3584, 5120)
            .map(|c| (c.page, c.in_page, c.buf))
            .collect();
        assert_eq!(
            got,
            vec![(0, 3584, 0..512), (1, 0, 512..4608), (2, 0, 4608..5120)]
        );
        assert_eq!(chunks(0, 0).count(), 0);
    }

    #[test]
    fn rejects_sizes_outside_limits() {
        assert!(matches!(MemDev::new(1000), Err(DevError::Config(_))));
        assert!(matches!(MemDev::new(2048), Err(DevError::Config(_))));
        assert!(matches!(
            MemDev::new(MAX_MEM_SIZE + 4096),
            Err(DevError::Config(_))
        ));
        assert!(MemDev::new(4096).is_ok());
    }

    #[test]
    fn odd_sized_device_uses_its_last_partial_page() {
        // 4.5 KiB: the last page is only half inside the device.
        let d = MemDev::new(4608).expect("valid size");
        d.write_at(&[7u8; 512], 4096, false).expect("in range");
        let mut b = [0u8; 512];
        d.read_at(&mut b, 4096).expect("in range");
        assert_eq!(b, [7u8; 512]);
        assert!(d.write_at(&[7u8; 512], 4608, false).is_err());
    }

    #[test]
    fn fua_into_a_dirty_fresh_page_keeps_only_its_sectors() {
        let d = MemDev::new(1 << 20).expect("valid size");
        d.write_at(&[1u8; 1024], 0, false).expect("write");
        d.write_at(&[2u8; 512], 512, true).expect("fua write");
        d.crash();
        let mut b = [9u8; 1536];
        d.read_at(&mut b, 0).expect("read");
        assert!(b[..512].iter().all(|&x| x == 0));
        assert!(b[512..1024].iter().all(|&x| x == 2));
        assert!(b[1024..].iter().all(|&x| x == 0));
    }

    #[test]
    fn unflushed_pages_counts_what_a_crash_reverts() {
        let d = MemDev::new(1 << 20).expect("valid size");
        d.write_at(&[1u8; 8192], 0, false).expect("write");
        d.write_at(&[1u8; 4096], 65536, true).expect("fua write");
        assert_eq!(d.unflushed_pages(), 2);
        d.flush().expect("flush");
        assert_eq!(d.unflushed_pages(), 0);
    }
}
