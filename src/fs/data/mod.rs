//! The data path: page cache, delayed allocation, write-back, fsync, truncate, fallocate.
//!
//! - **write** copies into cached pages (one per 4 KiB file block) and, for blocks not yet
//!   mapped, reserves space without choosing blocks: a delayed-allocation extent in the
//!   in-core map, paid for from the free-block counter (so ENOSPC is reported at write time,
//!   as on XFS). Each write also updates mtime/ctime in a transaction, as XFS's
//!   `file_update_time` does; thread 004's millions of async transactions are mostly these.
//! - **write-back** (fsync, sync, memory pressure, unmount) turns each delayed extent into a
//!   real one with one allocation (`xstrat quick`, the bytes in `xpc`), writes the dirty pages
//!   in runs of contiguous blocks, converts written unwritten extents, and puts the inode on
//!   the writeback list for the duration (`sb_mark/clear_inode_writeback` tracepoints).
//! - **read** serves cached pages and reads the rest straight from the device; holes,
//!   delayed and unwritten extents read as zeroes. Reads do not populate the cache (a choice
//!   for bounded memory; the kernel would cache them).
//! - **fsync** = write back this file's data, then make metadata durable. Without the journal
//!   (part 1) that means writing every dirty inode and buffer home and flushing the device;
//!   part 2 replaces it with a log force up to the inode's last commit.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::fs::Fs;
use crate::fs::alloc::{AllocReq, alloc_extent};
use crate::fs::bmap::{self, MAX_EXTENT_LEN};
use crate::fs::error::{FsError, FsResult, IoOp};
use crate::fs::format::{BB_PER_BLOCK, BLOCK_SHIFT, BLOCK_SIZE};
use crate::fs::inode::{DELALLOC, Extent, Inode, InodeRead, InodeWrite, iflags};
use crate::fs::options::SyncWait;
use crate::fs::pagecache::{FileCache, Page};
use crate::fs::stats::{Stat, Stat64};
use crate::fs::trans::{CHANGE_BLOCKS, InodeId, Resv, Trans};
use crate::fs::vfs::FallocMode;

/// Largest file labfs allows (2^43 bytes, well inside the 54-bit block offsets).
pub const MAX_FILE_SIZE: u64 = 1 << 43;

/// Extents unmapped per transaction by [`Fs::free_range`]: enough to keep a large truncate
/// from taking thousands of transactions, few enough to bound what one of them changes.
const FREE_BATCH_EXTENTS: usize = 16;

/// Drop a file's cached pages (the file is being freed), settling the mount's counters.
pub(crate) fn drop_cache(fs: &Fs, cache: &FileCache) {
    fs.dirty_data_pages
        .fetch_sub(cache.dirty_pages as u64, Ordering::Relaxed);
    fs.cached_pages
        .fetch_sub(cache.pages.len() as u64, Ordering::Relaxed);
}

/// File data operations apply to regular files only: a directory is `IsDir`, anything else
/// (a symbolic link) `Invalid`, as the kernel refuses to write or truncate them; an inode
/// freed under a caller that held it without opening it (mode 0) is `NotFound`.
fn regular_only(core: &crate::fs::inode::InodeCore) -> FsResult<()> {
    if core.di.mode == 0 {
        Err(FsError::NotFound)
    } else if core.is_dir() {
        Err(FsError::IsDir)
    } else if !core.is_reg() {
        Err(FsError::Invalid("not a regular file"))
    } else {
        Ok(())
    }
}

fn block_of(off: u64) -> u64 {
    off >> BLOCK_SHIFT
}

/// Read one block from the device into `out`.
fn read_block(fs: &Fs, fsblock: u64, out: &mut [u8]) -> FsResult<()> {
    fs.bufs
        .dev()
        .read_at(out, fsblock << BLOCK_SHIFT)
        .map_err(|e| FsError::io(IoOp::ReadData, Some(fsblock * BB_PER_BLOCK), e))
}

/// The inode's state as the writeback tracepoints print the VFS's `i_state` (the kernel's
/// `show_inode_state` names): `I_DIRTY_PAGES` while the inode is on the list of inodes with
/// dirty data, as the VFS keeps that flag until a writeback pass finds the mapping clean.
/// XFS logs inode changes in transactions rather than marking the VFS inode dirty, so the
/// kernel's lines for XFS files show no `I_DIRTY_SYNC`, and neither do labfs's.
fn vfs_inode_state(ip: &Inode) -> &'static str {
    if ip.has_flag(iflags::ON_DATA_LIST) {
        "I_DIRTY_PAGES"
    } else {
        ""
    }
}

impl Fs {
    /// Put an inode on the list of inodes with dirty data (once).
    fn note_dirty_data(&self, ip: &Arc<Inode>) {
        if ip.set_flag(iflags::ON_DATA_LIST) {
            self.dirty_data.lock().push(Arc::clone(ip));
        }
    }

    /// write(2)/pwrite(2) of `data` at `off`. Returns bytes written. Out of space, it
    /// finishes the pending inactivations and tries once more (`Fs::retry_after_inodegc`;
    /// writing the same bytes again is harmless).
    pub fn write(&self, ip: &Arc<Inode>, off: u64, data: &[u8]) -> FsResult<usize> {
        self.check_live()?;
        self.stats.inc(Stat::WriteCalls);
        self.retry_after_inodegc(|| self.write_once(ip, off, data))
    }

    /// One try of [`Fs::write`].
    fn write_once(&self, ip: &Arc<Inode>, off: u64, data: &[u8]) -> FsResult<usize> {
        let end = off
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(FsError::TooBig)?;
        if data.is_empty() {
            // XFS returns before touching anything (and before the timestamp update).
            let r = InodeRead::lock_allocated(Arc::clone(ip))?;
            regular_only(&r)?;
            return Ok(0);
        }
        // The timestamp update's transaction (XFS: file_update_time -> xfs_vn_update_time)
        // reserves its log space before the ILOCK, as every transaction does (`Trans::new`).
        let mut tp = Trans::new(self, Resv::Ichange);
        let mut w = InodeWrite::lock_allocated(Arc::clone(ip))?;
        regular_only(&w)?;
        self.write_pages(ip, &mut w, off, data)?;
        let grew = end > w.di.size;
        if grew {
            w.di.size = end;
        }
        self.stats.add64(Stat64::WriteBytes, data.len() as u64);
        let id = tp.join_locked(w);
        let now = crate::fs::now_ns();
        let ic = tp.ic_mut(id);
        ic.di.mtime = now;
        ic.di.ctime = now;
        // An overwrite inside the file changes only timestamps, which fdatasync skips.
        tp.log_inode_fields(
            id,
            if grew {
                crate::fs::log::item::fields::CORE
            } else {
                crate::fs::log::item::fields::TIMESTAMP
            },
        );
        tp.commit()?;
        if self.dirty_data_pages.load(Ordering::Relaxed) * BLOCK_SIZE as u64 > self.opts.dirty_bytes
        {
            // Throttle the writer the way balance_dirty_pages does: it writes back its own file.
            self.writeback(ip)?;
        }
        Ok(data.len())
    }

    fn write_pages(
        &self,
        ip: &Arc<Inode>,
        w: &mut InodeWrite,
        off: u64,
        data: &[u8],
    ) -> FsResult<()> {
        let first = block_of(off);
        let last = block_of(off + data.len() as u64 - 1);
        // XFS maps a buffered write's range once, in its iomap write-begin path
        // (xfs_buffered_write_iomap_begin), and counts one mapw for it; the write-back
        // conversion counts its own (see allocate_for).
        self.stats.inc(Stat::BlkMapw);
        // One lookup for the write's range, as iomap's write-begin makes: the mapping decides
        // both what to reserve and what to read.
        let mapping = bmap::lookup_range(w.fork.extents(), first, last, &self.stats);
        // Reserve the holes first, so a full filesystem fails before anything changes.
        let holes: u64 = mapping.iter().filter(|m| m.is_none()).count() as u64;
        self.reserve_blocks(holes)?;
        {
            // Each run of holes becomes one delayed-allocation extent (XFS reserves a write's
            // range at once), which grows the reservation before it in place when they touch.
            let list = bmap::fork_list_mut(&mut w.fork)?;
            let mut b = first;
            while b <= last {
                if mapping[(b - first) as usize].is_some() {
                    b += 1;
                    continue;
                }
                let run = (b..=last)
                    .take_while(|&x| mapping[(x - first) as usize].is_none())
                    .count() as u64;
                for part in (0..run).step_by(MAX_EXTENT_LEN as usize) {
                    let e = Extent {
                        startoff: b + part,
                        startblock: DELALLOC,
                        blockcount: (run - part).min(u64::from(MAX_EXTENT_LEN)) as u32,
                        unwritten: false,
                    };
                    bmap::insert(list, e);
                }
                b += run;
            }
        }
        // (A hole's page is new and never read back, so its mapping stays `None` here.)
        let size = w.di.size;
        let cache = w.ext.get_or_insert_with(Box::default);
        let mut newly_dirty = 0u64;
        let mut new_pages = 0u64;
        let mut src = 0usize;
        for (i, b) in (first..=last).enumerate() {
            let page_off = if b == first {
                (off as usize) & (BLOCK_SIZE - 1)
            } else {
                0
            };
            let n = (BLOCK_SIZE - page_off).min(data.len() - src);
            if let std::collections::btree_map::Entry::Vacant(slot) = cache.pages.entry(b) {
                let mut p = Page::zeroed();
                let partial = page_off != 0 || n != BLOCK_SIZE;
                let block_start = b << BLOCK_SHIFT;
                if let Some(e) = mapping[i]
                    .filter(|e| partial && !e.is_delalloc() && !e.unwritten && block_start < size)
                {
                    read_block(self, e.startblock + (b - e.startoff), &mut p.bytes[..])?;
                }
                slot.insert(p);
                new_pages += 1;
            }
            let page = cache.pages.get_mut(&b).expect("inserted above");
            page.bytes[page_off..page_off + n].copy_from_slice(&data[src..src + n]);
            if !page.dirty {
                page.dirty = true;
                cache.dirty_pages += 1;
                newly_dirty += 1;
            }
            src += n;
        }
        self.cached_pages.fetch_add(new_pages, Ordering::Relaxed);
        if newly_dirty > 0 {
            self.dirty_data_pages
                .fetch_add(newly_dirty, Ordering::Relaxed);
            self.note_dirty_data(ip);
        }
        Ok(())
    }

    /// read(2)/pread(2) into `buf` from `off`. Returns bytes read (0 at end of file).
    pub fn read(&self, ip: &Arc<Inode>, off: u64, buf: &mut [u8]) -> FsResult<usize> {
        self.check_live()?;
        self.stats.inc(Stat::ReadCalls);
        let r = InodeRead::lock_allocated(Arc::clone(ip))?;
        regular_only(&r)?;
        let size = r.di.size;
        if off >= size || buf.is_empty() {
            return Ok(0);
        }
        let len = buf.len().min((size - off) as usize);
        let mut done = 0usize;
        let mut block = vec![0u8; 0];
        while done < len {
            let pos = off + done as u64;
            let b = block_of(pos);
            let page_off = (pos as usize) & (BLOCK_SIZE - 1);
            let n = (BLOCK_SIZE - page_off).min(len - done);
            let out = &mut buf[done..done + n];
            if let Some(p) = r.ext.as_ref().and_then(|c| c.pages.get(&b)) {
                out.copy_from_slice(&p.bytes[page_off..page_off + n]);
            } else {
                self.stats.inc(Stat::BlkMapr);
                match bmap::lookup(r.fork.extents(), b, &self.stats) {
                    Some(e) if !e.is_delalloc() && !e.unwritten => {
                        if block.is_empty() {
                            block = vec![0u8; BLOCK_SIZE];
                        }
                        read_block(self, e.startblock + (b - e.startoff), &mut block)?;
                        out.copy_from_slice(&block[page_off..page_off + n]);
                    }
                    _ => out.fill(0),
                }
            }
            done += n;
        }
        self.stats.add64(Stat64::ReadBytes, len as u64);
        Ok(len)
    }

    /// Turn every delayed extent of a locked inode into real blocks, one allocation per
    /// roll of `tp` (which reserved its log space before the inode was locked).
    fn convert_delalloc(&self, tp: &mut Trans, id_lock: InodeWrite) -> FsResult<InodeWrite> {
        let mut w = id_lock;
        loop {
            // Finding the next reservation is a lookup in the in-core list (XFS's
            // xfs_bmapi_convert_delalloc looks its extent up the same way).
            self.stats.inc(Stat::LookExlist);
            let Some(d) = w.fork.extents().iter().find(|e| e.is_delalloc()).copied() else {
                return Ok(w);
            };
            // The data blocks were reserved at write time; extent-tree blocks may use the
            // set-aside pool, which exists for exactly this.
            tp.allow_set_aside();
            let id = tp.join_locked(w);
            self.allocate_for(tp, id, d)?;
            w = tp.roll_keep(id)?;
        }
    }

    /// Allocate real blocks for (a prefix of) delayed extent `d` of joined inode `id`.
    fn allocate_for(&self, tp: &mut Trans, id: InodeId, d: Extent) -> FsResult<()> {
        let ino = tp.ino(id);
        let want = d.blockcount.min(MAX_EXTENT_LEN);
        let target = bmap::alloc_target(&self.geo, tp.ic(id).fork.extents(), d.startoff, want, ino);
        let req = AllocReq {
            minlen: 1,
            reserved: true,
            userdata: true,
            ..AllocReq::near(&self.geo, target, want)
        };
        let (block, got) = alloc_extent(tp, &req)?;
        // Data goes straight to these blocks: their last free must be stable first.
        self.log.wait_busy(block, got)?;
        self.stats.inc(Stat::XstratQuick);
        self.stats.inc(Stat::BlkMapw);
        self.stats
            .add64(Stat64::XstratBytes, u64::from(got) << BLOCK_SHIFT);
        // Mapped unwritten, as XFS's delalloc conversion maps new data-fork extents: write-back
        // converts the blocks it wrote once their data is on the device. Mapped written, the
        // allocation could reach the log before the data and a crash would expose whatever
        // the blocks held before (another file's old data).
        bmap::set_mapping(
            tp,
            id,
            Extent {
                startoff: d.startoff,
                startblock: block,
                blockcount: got,
                unwritten: true,
            },
            true,
        )
    }

    /// Write back one file's dirty pages. Returns pages written.
    pub fn writeback(&self, ip: &Arc<Inode>) -> FsResult<usize> {
        // Allocating and converting extents takes transactions, whose log space is reserved
        // before the ILOCK (`Trans::new`): look first, and when one is needed reserve and
        // lock again (the file may have changed meanwhile, so look again too).
        let mut tp = None;
        let w = loop {
            let w = InodeWrite::lock(Arc::clone(ip));
            if ip.check_allocated().is_err() || w.ext.as_ref().is_none_or(|c| c.dirty_pages == 0) {
                return Ok(0);
            }
            if tp.is_some()
                || !w
                    .fork
                    .extents()
                    .iter()
                    .any(|e| e.is_delalloc() || e.unwritten)
            {
                break w;
            }
            drop(w);
            tp = Some(Trans::new(self, Resv::Write));
        };
        let mode = u32::from(w.di.mode);
        self.mark_writeback(ip, mode);
        let result = self.writeback_locked(tp, w);
        self.clear_writeback(ip, mode);
        result
    }

    fn writeback_locked(&self, mut tp: Option<Trans>, w: InodeWrite) -> FsResult<usize> {
        let mut w = match tp.as_mut() {
            Some(tp) => self.convert_delalloc(tp, w)?,
            None => w,
        };
        // Gather runs of dirty pages that are contiguous on disk, and the parts of unwritten
        // extents they cover: only those parts become written. Converting a whole unwritten
        // extent because one of its blocks was written would expose whatever its other
        // blocks held on disk (another file's old data) instead of zeroes.
        let mut runs: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut unwritten: Vec<Extent> = Vec::new();
        {
            let cache = w.ext.as_ref().expect("has dirty pages");
            // The mapping found for one page serves the next pages it covers, as the kernel's
            // write-back context keeps its iomap: one list lookup per extent, not per page.
            let mut mapped: Option<Extent> = None;
            for &b in cache.pages.iter().filter(|(_, p)| p.dirty).map(|(b, _)| b) {
                let e = match mapped.filter(|e| e.startoff <= b && b < e.end()) {
                    Some(e) => e,
                    None => bmap::lookup(w.fork.extents(), b, &self.stats).ok_or_else(|| {
                        FsError::Corrupt {
                            kind: crate::fs::format::BlockKind::Inode,
                            daddr: 0,
                            what: format!("inode {}: dirty page {b} has no mapping", w.inode().ino),
                        }
                    })?,
                };
                mapped = Some(e);
                let disk = e.startblock + (b - e.startoff);
                if e.unwritten {
                    match unwritten.last_mut() {
                        Some(u)
                            if u.startoff + u64::from(u.blockcount) == b
                                && u.startblock + u64::from(u.blockcount) == disk
                                && u.blockcount < MAX_EXTENT_LEN =>
                        {
                            u.blockcount += 1;
                        }
                        _ => unwritten.push(Extent {
                            startoff: b,
                            startblock: disk,
                            blockcount: 1,
                            unwritten: false,
                        }),
                    }
                }
                match runs.last_mut() {
                    Some((start, blocks)) if *start + blocks.len() as u64 == disk => blocks.push(b),
                    _ => runs.push((disk, vec![b])),
                }
            }
        }
        // A run of one page (every fsync of a small file) goes to the device straight from
        // the page; only longer runs are gathered into one buffer for a single request.
        let mut io = Vec::new();
        let mut written = 0usize;
        for (disk, blocks) in &runs {
            let cache = w.ext.as_ref().expect("has dirty pages");
            let bytes: &[u8] = match blocks.as_slice() {
                [b] => &cache.pages[b].bytes[..],
                _ => {
                    io.clear();
                    for b in blocks {
                        io.extend_from_slice(&cache.pages[b].bytes[..]);
                    }
                    &io
                }
            };
            self.bufs
                .dev()
                .write_at(bytes, disk << BLOCK_SHIFT, false)
                .map_err(|e| FsError::io(IoOp::WriteData, Some(disk * BB_PER_BLOCK), e))?;
            written += blocks.len();
        }
        {
            let cache = w.ext.as_mut().expect("has dirty pages");
            for p in cache.pages.values_mut() {
                p.dirty = false;
            }
            cache.dirty_pages = 0;
        }
        self.dirty_data_pages
            .fetch_sub(written as u64, Ordering::Relaxed);
        if !unwritten.is_empty() {
            let Some(mut tp) = tp else {
                return Err(FsError::Invalid(
                    "unwritten extents found without a transaction",
                ));
            };
            tp.allow_set_aside();
            let id = tp.join_locked(w);
            for e in unwritten {
                bmap::set_mapping(&mut tp, id, e, false)?;
            }
            w = tp.commit_keep(id)?;
        }
        self.trim_page_cache(&mut w);
        Ok(written)
    }

    /// Keep the page cache under its budget by dropping this file's clean pages. Over a
    /// device that reads at memory speed the budget for clean pages is nothing (see
    /// [`crate::fs::dev::BlockDev::reads_at_memory_speed`]): on the memory device,
    /// `fsmark -S1 -s 4096 -n 20000` took 41k page faults instead of 62k, and ran 13%
    /// faster, with written-back pages dropped (their memory holds the next file's page).
    fn trim_page_cache(&self, w: &mut InodeWrite) {
        if self.cached_pages.load(Ordering::Relaxed) * BLOCK_SIZE as u64 <= self.clean_page_budget {
            return;
        }
        if let Some(cache) = w.ext.as_mut() {
            let before = cache.pages.len();
            cache.pages.retain(|_, p| p.dirty);
            self.cached_pages
                .fetch_sub((before - cache.pages.len()) as u64, Ordering::Relaxed);
            if cache.pages.is_empty() {
                w.ext = None;
            }
        }
    }

    fn mark_writeback(&self, ip: &Arc<Inode>, mode: u32) {
        if ip.set_flag(iflags::ON_WB_LIST) {
            self.wb_list.lock().insert(ip.ino, Arc::clone(ip));
            crate::trace::events::sb_mark_inode_writeback(
                self.dev_id,
                ip.ino,
                0,
                vfs_inode_state(ip),
                mode,
            );
        }
    }

    fn clear_writeback(&self, ip: &Arc<Inode>, mode: u32) {
        if ip.clear_flag(iflags::ON_WB_LIST) {
            self.wb_list.lock().remove(&ip.ino);
            crate::trace::events::sb_clear_inode_writeback(
                self.dev_id,
                ip.ino,
                0,
                vfs_inode_state(ip),
                mode,
            );
        }
    }

    /// fsync(2)/fdatasync(2), as XFS's `xfs_file_fsync`: write back this file's dirty data,
    /// then force the log only if the inode is pinned (a change not yet stable), up to the
    /// checkpoint of its last change (fdatasync: its last change other than timestamps).
    /// When no log write happened, the device cache is flushed so the data is durable.
    pub fn fsync(&self, ip: &Arc<Inode>, datasync: bool) -> FsResult<()> {
        self.check_live()?;
        self.writeback(ip)?;
        let seq = {
            let r = InodeRead::lock(Arc::clone(ip));
            if datasync {
                r.datasync_seq()
            } else {
                r.log_seq
            }
        };
        let mut forced = false;
        if seq > self.log.stable_seq() {
            crate::trace::events::xfs_log_force(self.dev_id, seq, "xfs_file_fsync");
            forced = self.log.force_seq(seq, "xfs_log_force_seq")?;
        }
        if !forced {
            self.bufs
                .dev()
                .flush()
                .map_err(|e| FsError::io(crate::fs::error::IoOp::FlushDevice, None, e))?;
        }
        Ok(())
    }

    /// Write back every file with dirty data.
    pub fn writeback_all(&self) -> FsResult<()> {
        let list = std::mem::take(&mut *self.dirty_data.lock());
        let mut first_err = None;
        for ip in list {
            ip.clear_flag(iflags::ON_DATA_LIST);
            if let Err(e) = self.writeback(&ip) {
                self.note_dirty_data(&ip);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Wait for data write-back in flight, finding the inodes to wait on as `wait` says:
    /// the writeback list, or a walk of every cached inode (the cost thread 002 removed).
    /// Returns how many inodes were examined.
    pub fn wait_writeback(&self, wait: SyncWait) -> usize {
        match wait {
            SyncWait::WbList => {
                let list: Vec<Arc<Inode>> = self.wb_list.lock().values().cloned().collect();
                for ip in &list {
                    // Write-back holds the inode lock for its duration: taking it waits.
                    drop(InodeRead::lock(Arc::clone(ip)));
                }
                list.len()
            }
            SyncWait::All => {
                let mut examined = 0;
                let mut busy = Vec::new();
                self.icache.for_each(|ip| {
                    examined += 1;
                    if ip.has_flag(iflags::ON_WB_LIST) {
                        busy.push(Arc::clone(ip));
                    }
                });
                for ip in busy {
                    drop(InodeRead::lock(ip));
                }
                examined
            }
        }
    }

    /// sync(2)/syncfs(2): write back all data, wait for it (as the mount's `sync_wait`
    /// says), make all metadata durable.
    pub fn sync(&self) -> FsResult<()> {
        self.sync_waiting(self.opts.sync_wait)
    }

    /// [`Fs::sync`] finding the write-back to wait on as `wait` says, whatever the mount
    /// option: syncbench times both ways on one populated cache, which a remount would empty.
    pub fn sync_waiting(&self, wait: SyncWait) -> FsResult<()> {
        self.check_live()?;
        self.writeback_all()?;
        self.wait_writeback(wait);
        self.sync_metadata()?;
        // Data written over blocks already mapped needs no transaction, so the log force
        // may write nothing: flush the device cache so that data is durable too (Linux's
        // sync flushes the block device after sync_fs).
        self.bufs
            .dev()
            .flush()
            .map_err(|e| FsError::io(crate::fs::error::IoOp::FlushDevice, None, e))
    }

    /// Inodes on the writeback list now (data write-back in flight).
    pub fn writeback_list_len(&self) -> usize {
        self.wb_list.lock().len()
    }

    /// truncate(2)/ftruncate(2).
    pub fn truncate(&self, ip: &Arc<Inode>, size: u64) -> FsResult<()> {
        self.check_live()?;
        if size > MAX_FILE_SIZE {
            return Err(FsError::TooBig);
        }
        // One transaction for the whole truncate, its log space reserved before the ILOCK
        // and rolled between steps (XFS's xfs_setattr_size with tr_itruncate).
        let mut tp = Trans::new(self, Resv::Truncate);
        let mut w = InodeWrite::lock_allocated(Arc::clone(ip))?;
        regular_only(&w)?;
        let old = w.di.size;
        let keep_blocks = size.div_ceil(BLOCK_SIZE as u64);
        if size < old {
            self.drop_pages(&mut w, keep_blocks, u64::MAX);
            // Zero the tail of a partial last page so growing again reads zeroes.
            let tail = (size as usize) & (BLOCK_SIZE - 1);
            if tail != 0 {
                self.zero_partial(ip, &mut w, size, BLOCK_SIZE - tail)?;
            }
        }
        // The new size first, then the blocks past it in steps of their own, as XFS's
        // xfs_setattr_size does: blocks beyond EOF are harmless if a later step fails.
        let id = tp.join_locked(w);
        let now = crate::fs::now_ns();
        let ic = tp.ic_mut(id);
        ic.di.size = size;
        ic.di.mtime = now;
        ic.di.ctime = now;
        tp.log_inode(id);
        if size < old {
            self.free_range(&mut tp, id, keep_blocks, MAX_FILE_SIZE >> BLOCK_SHIFT)?;
        }
        tp.commit()
    }

    /// Unmap file blocks `from..to` of joined inode `id` and free what was behind them, a
    /// batch of extents per transaction from the end backwards, rolling `tp` between batches
    /// with the inode still joined (XFS's `xfs_itruncate_extents`, which rolls its
    /// transaction every couple of extents). The first batch goes into `tp` as it is; the
    /// last one is left for the caller to commit (or roll). Each batch takes only AGF locks,
    /// never an AGI: inactivation calls this before it frees the inode, and rolls first, so
    /// no transaction holds an AGF and then waits for an AGI (the lock order in `fs/mod.rs`).
    /// Bounded batches also bound what one commit must log.
    pub(crate) fn free_range(
        &self,
        tp: &mut Trans,
        id: InodeId,
        from: u64,
        to: u64,
    ) -> FsResult<()> {
        loop {
            let list = tp.ic(id).fork.extents();
            let lo = list.partition_point(|e| e.end() <= from);
            let hi = list.partition_point(|e| e.startoff < to);
            if lo >= hi {
                return Ok(());
            }
            let start = list[hi.saturating_sub(FREE_BATCH_EXTENTS).max(lo)]
                .startoff
                .max(from);
            if tp.is_dirty() {
                tp.roll(&mut [])?;
            }
            tp.reserve_or_dip_up_to(CHANGE_BLOCKS);
            bmap::free_blocks(tp, id, start, to - start)?;
        }
    }

    /// Drop cached pages of blocks `from..to`, settling counters.
    fn drop_pages(&self, w: &mut InodeWrite, from: u64, to: u64) {
        if let Some(cache) = w.ext.as_mut() {
            let doomed: Vec<u64> = cache.pages.range(from..to).map(|(&b, _)| b).collect();
            for b in doomed {
                if let Some(p) = cache.pages.remove(&b) {
                    self.cached_pages.fetch_sub(1, Ordering::Relaxed);
                    if p.dirty {
                        cache.dirty_pages -= 1;
                        self.dirty_data_pages.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Zero `len` bytes at `pos` within one block, through the page cache.
    fn zero_partial(
        &self,
        ip: &Arc<Inode>,
        w: &mut InodeWrite,
        pos: u64,
        len: usize,
    ) -> FsResult<()> {
        let b = block_of(pos);
        let mapped = bmap::lookup(w.fork.extents(), b, &self.stats);
        if mapped.is_none() {
            return Ok(());
        }
        let zeros = vec![0u8; len];
        self.write_pages(ip, w, pos, &zeros)
    }

    /// fallocate(2).
    pub fn fallocate(&self, ip: &Arc<Inode>, mode: FallocMode, off: u64, len: u64) -> FsResult<()> {
        self.check_live()?;
        if len == 0 {
            return Err(FsError::Invalid("fallocate length is zero"));
        }
        let end = off
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(FsError::TooBig)?;
        match mode {
            FallocMode::Allocate | FallocMode::KeepSize => {
                self.preallocate(ip, off, end, mode == FallocMode::Allocate)
            }
            FallocMode::PunchHole => self.punch(ip, off, end),
            FallocMode::ZeroRange => {
                self.punch(ip, off, end)?;
                self.preallocate(ip, off, end, true)
            }
        }
    }

    /// Allocate unwritten extents for the holes in `off..end`.
    fn preallocate(&self, ip: &Arc<Inode>, off: u64, end: u64, extend: bool) -> FsResult<()> {
        let first = block_of(off);
        let last = end.div_ceil(BLOCK_SIZE as u64);
        // One transaction reserved before the ILOCK, rolled after each allocation.
        let mut tp = Trans::new(self, Resv::Write);
        let w = InodeWrite::lock_allocated(Arc::clone(ip))?;
        regular_only(&w)?;
        let id = tp.join_locked(w);
        let mut b = first;
        while b < last {
            match bmap::lookup(tp.ic(id).fork.extents(), b, &self.stats) {
                Some(e) => b = e.end(),
                None => {
                    let hole_end = bmap::next_extent(tp.ic(id).fork.extents(), b)
                        .map_or(last, |e| e.startoff.min(last));
                    let count = (hole_end - b).min(u64::from(MAX_EXTENT_LEN)) as u32;
                    if tp.is_dirty() {
                        tp.roll(&mut [])?;
                    }
                    tp.reserve(u64::from(count) + CHANGE_BLOCKS)?;
                    // alloc_blocks fails before changing anything when no space.
                    let v = bmap::alloc_blocks(&mut tp, id, b, count, true)?;
                    b += v.iter().map(|e| u64::from(e.blockcount)).sum::<u64>();
                }
            }
        }
        if tp.is_dirty() {
            tp.roll(&mut [])?;
        }
        let now = crate::fs::now_ns();
        let ic = tp.ic_mut(id);
        if extend && end > ic.di.size {
            ic.di.size = end;
        }
        ic.di.ctime = now;
        tp.log_inode(id);
        tp.commit()
    }

    /// Free whole blocks in `off..end` and zero the partial edges.
    fn punch(&self, ip: &Arc<Inode>, off: u64, end: u64) -> FsResult<()> {
        // Log space before the ILOCK; a punch inside one block drops it unused.
        let mut tp = Trans::new(self, Resv::Truncate);
        let mut w = InodeWrite::lock_allocated(Arc::clone(ip))?;
        regular_only(&w)?;
        let end = end.min(w.di.size.max(off));
        if end <= off {
            return Ok(());
        }
        let first_whole = off.div_ceil(BLOCK_SIZE as u64);
        let last_whole = block_of(end);
        // Partial edges are zeroed in place.
        let head = ((first_whole << BLOCK_SHIFT).min(end) - off) as usize;
        if head > 0 {
            self.zero_partial(ip, &mut w, off, head)?;
        }
        if last_whole >= first_whole {
            let tail_start = (last_whole << BLOCK_SHIFT).max(off);
            if end > tail_start && tail_start >= first_whole << BLOCK_SHIFT {
                self.zero_partial(ip, &mut w, tail_start, (end - tail_start) as usize)?;
            }
        }
        if last_whole > first_whole {
            self.drop_pages(&mut w, first_whole, last_whole);
            let id = tp.join_locked(w);
            self.free_range(&mut tp, id, first_whole, last_whole)?;
            if tp.is_dirty() {
                tp.roll(&mut [])?;
            }
            tp.ic_mut(id).di.ctime = crate::fs::now_ns();
            tp.log_inode(id);
            tp.commit()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::fs::Fs;
    use crate::fs::dev::latency::{LatencyDev, LatencyParams};
    use crate::fs::dev::{BlockDev, MemDev};
    use crate::fs::mkfs::mkfs;
    use crate::fs::options::Options;

    /// Pages the mount caches after a 16 KiB file is written and fsynced on `dev` (the
    /// file must read back whole either way).
    fn cached_after_fsync(dev: Arc<dyn BlockDev>) -> u64 {
        let opts = Options::default();
        mkfs(Arc::clone(&dev), &opts).expect("mkfs");
        let fs = Fs::mount(dev, opts.mount).expect("mount");
        let root = fs.root().expect("root");
        let (f, _) = fs.create(&root, b"f", 0o644, true).expect("create");
        let data: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        fs.write(&f, 0, &data).expect("write");
        fs.fsync(&f, false).expect("fsync");
        let cached = fs.cached_pages.load(std::sync::atomic::Ordering::Relaxed);
        let mut back = vec![0u8; data.len()];
        let n = fs.read(&f, 0, &mut back).expect("read");
        assert_eq!(n, data.len());
        assert_eq!(back, data, "the file reads back whole");
        cached
    }

    /// A memory device with `params` modelled in front of it.
    fn modelled_mem(params: LatencyParams) -> Arc<dyn BlockDev> {
        let mem = Arc::new(MemDev::new(64 << 20).expect("mem"));
        Arc::new(LatencyDev::new(mem, params))
    }

    #[test]
    fn written_back_pages_stay_cached_only_over_a_device_slower_than_memory() {
        let mem: Arc<dyn BlockDev> = Arc::new(MemDev::new(64 << 20).expect("mem"));
        assert!(mem.reads_at_memory_speed());
        assert_eq!(cached_after_fsync(mem), 0, "memory device: no second copy");
        // A flush cost alone leaves reads free; a read latency makes the cache worth keeping.
        let flush_only = modelled_mem(LatencyParams {
            flush: Duration::from_micros(10),
            ..LatencyParams::NONE
        });
        assert!(flush_only.reads_at_memory_speed());
        let slow_reads = modelled_mem(LatencyParams {
            lat: Duration::from_micros(1),
            ..LatencyParams::NONE
        });
        assert!(!slow_reads.reads_at_memory_speed());
        assert_eq!(
            cached_after_fsync(slow_reads),
            4,
            "slow reads: the clean pages stay"
        );
    }
}
