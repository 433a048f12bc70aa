//! A mounted labfs (XFS's `xfs_mount`): the shared state every operation reaches through.
//!
//! Lifecycle: [`crate::fs::mkfs::mkfs`] writes an empty filesystem; [`Fs::mount`] reads the
//! superblock and AG headers and builds the in-core state; operations run through
//! transactions; [`Fs::unmount`] writes everything back and records the summary counters.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::fs::Fs;
use crate::fs::buf::{BufCache, GetMode};
use crate::fs::cksum::Cksum;
use crate::fs::core::PerAg;
use crate::fs::dcache::Dcache;
use crate::fs::dev::BlockDev;
use crate::fs::dev::signature::{self, BLANK_PROBE_BYTES, NotBlank};
use crate::fs::error::{FsError, FsResult, IoOp, SbProblem, ShutdownReason};
use crate::fs::fastmap::FastMap;
use crate::fs::format::ag::{AGF_SECTOR, AGI_SECTOR, Agf, Agi};
use crate::fs::format::dinode::{self, DinodeCore};
use crate::fs::format::sb::Superblock;
use crate::fs::format::{
    BBSIZE, BLOCK_SIZE, BlockKind, Daddr, INODE_SIZE, INODES_PER_BLOCK, NAME_MAX,
};
use crate::fs::geo::Geometry;
use crate::fs::icache::{InodeCache, Lookup};
use crate::fs::inode::{DataFork, Inode, InodeCore, InodeWrite, iflags};
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};
use crate::fs::log::{Log, LogGeometry, LogMount, recover};
use crate::fs::options::MountOptions;
use crate::fs::stats::{MountStats, Stat};
use crate::fs::vfs::FsStat;
use crate::trace::Dev;

static NEXT_MINOR: AtomicU32 = AtomicU32::new(0);

/// The lock-order identity of the mount's list locks.
const LIST: LockId = LockId::new(LockClass::List, 0);

/// Read and verify the primary superblock of a device.
pub fn read_superblock(dev: &dyn BlockDev, cksum: Cksum) -> FsResult<Superblock> {
    let mut b = vec![0u8; BBSIZE];
    dev.read_at(&mut b, 0)
        .map_err(|e| FsError::io(IoOp::ReadSuperblock, Some(0), e))?;
    if dinode_is_blank(&b) {
        return Err(FsError::BadSuperblock(SbProblem::Blank));
    }
    if let Err(m) = cksum.verify(BlockKind::Superblock, &b) {
        return Err(FsError::crc(BlockKind::Superblock, 0, m));
    }
    Superblock::decode(&b, Daddr(0))
}

fn dinode_is_blank(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// `None` when the device's first [`BLANK_PROBE_BYTES`] are zero (it may be formatted without
/// being asked); otherwise what it holds.
pub fn probe_blank(dev: &dyn BlockDev) -> FsResult<Option<NotBlank>> {
    let len = (dev.size() as usize).min(BLANK_PROBE_BYTES);
    let mut b = vec![0u8; len];
    dev.read_at(&mut b, 0)
        .map_err(|e| FsError::io(IoOp::ProbeBlank, Some(0), e))?;
    Ok(signature::probe(&b))
}

impl Fs {
    /// Mount the filesystem on `dev`.
    pub fn mount(dev: Arc<dyn BlockDev>, opts: MountOptions) -> FsResult<Arc<Fs>> {
        let cksum = Cksum {
            mode: opts.cksum,
            engine: opts.crc,
        };
        let sb = read_superblock(dev.as_ref(), cksum)?;
        if sb.inprogress {
            return Err(FsError::BadSuperblock(SbProblem::MkfsUnfinished));
        }
        let geo = Geometry::from_sb(&sb);
        if geo.sectors() * BBSIZE as u64 > dev.size() {
            return Err(FsError::BadSuperblock(SbProblem::DoesNotFit {
                dblocks: geo.dblocks,
                dev_bytes: dev.size(),
            }));
        }
        Fs::mount_log(dev, opts, &sb, geo)
    }

    /// Mount an image whose mkfs is still running (mkfs itself, after laying out the AGs).
    pub(crate) fn mount_inprogress(
        dev: Arc<dyn BlockDev>,
        opts: MountOptions,
        sb: &Superblock,
    ) -> FsResult<Arc<Fs>> {
        Fs::mount_log(dev, opts, sb, Geometry::from_sb(sb))
    }

    /// Recover the log, build the in-core state, start xfsaild.
    fn mount_log(
        dev: Arc<dyn BlockDev>,
        opts: MountOptions,
        sb: &Superblock,
        geo: Geometry,
    ) -> FsResult<Arc<Fs>> {
        let cksum = Cksum {
            mode: opts.cksum,
            engine: opts.crc,
        };
        let r = recover::recover(dev.as_ref(), cksum, &sb.uuid, &geo)?;
        let fs = Arc::new(Fs::assemble(dev, opts, sb, geo, r.next_abs));
        fs.load_ag_summaries()?;
        if !r.clean {
            fs.free_orphans()?;
        }
        *fs.aild.lock() = Some(crate::fs::aild::spawn_aild(&fs)?);
        crate::fs::inodegc::start(&fs)?;
        let weak = Arc::downgrade(&fs);
        fs.bufs.set_relief_push(Box::new(move || {
            weak.upgrade().map_or(0, |fs| fs.relieve_buffer_pressure())
        }));
        Ok(fs)
    }

    /// Build the in-core state for a superblock (used by mount and mkfs).
    pub(crate) fn assemble(
        dev: Arc<dyn BlockDev>,
        opts: MountOptions,
        sb: &Superblock,
        geo: Geometry,
        log_next: u64,
    ) -> Fs {
        let cksum = Cksum {
            mode: opts.cksum,
            engine: opts.crc,
        };
        let stats = Arc::new(MountStats::new());
        let bufs = BufCache::new(
            dev,
            cksum,
            sb.uuid,
            Arc::clone(&stats),
            opts.bufcache_bytes,
            geo.agblocks,
        );
        let dev_id = Dev {
            major: 0,
            minor: 100 + NEXT_MINOR.fetch_add(1, Ordering::Relaxed),
        };
        let log = Log::new(
            LogMount {
                dev: Arc::clone(bufs.dev()),
                cksum,
                uuid: sb.uuid,
                stats: Arc::clone(&stats),
                dev_id,
                stable: bufs.stable_cell(),
                shutdown: Arc::clone(bufs.shutdown_state()),
                pin_limit: bufs.limit_bytes() / 4,
            },
            LogGeometry {
                start_daddr: geo.log_daddr(),
                log_bb: geo.log_bb(),
                logbufs: opts.logbufs,
                logbsize: opts.logbsize,
            },
            log_next,
        );
        let shutdown = Arc::clone(bufs.shutdown_state());
        let clean_page_budget = if bufs.dev().reads_at_memory_speed() {
            0
        } else {
            opts.dirty_bytes
        };
        Fs {
            geo,
            uuid: sb.uuid,
            rootino: sb.rootino,
            icache: InodeCache::new(opts.icache_limit),
            dcache: Dcache::new(opts.dcache_entries),
            opts,
            bufs,
            stats,
            perag: (0..geo.agcount).map(|_| PerAg::default()).collect(),
            fdblocks: AtomicI64::new(0),
            dev_id,
            dir_rotor: AtomicU32::new(0),
            log,
            aild_stop: AtomicBool::new(false),
            freed_pending: OrderedMutex::new(LIST, FastMap::default()),
            aild: OrderedMutex::new(LIST, None),
            dirty_data: OrderedMutex::new(LIST, Vec::new()),
            wb_list: OrderedMutex::new(LIST, FastMap::default()),
            dirty_data_pages: AtomicU64::new(0),
            cached_pages: AtomicU64::new(0),
            clean_page_budget,
            rename_lock: OrderedMutex::new(LockId::new(LockClass::RenameSerial, 0), ()),
            inodegc: crate::fs::inodegc_queue::InodeGc::new(),
            shutdown,
            unmounted: AtomicBool::new(false),
            fname: sb.fname,
        }
    }

    /// Read every AGF and AGI: the per-AG summaries and the lazy superblock counters come
    /// from them, as XFS recomputes its counters at mount.
    fn load_ag_summaries(&self) -> FsResult<()> {
        let mut free: i64 = 0;
        for agno in 0..self.geo.agcount {
            let daddr = self.geo.ag_header_daddr(agno, AGF_SECTOR);
            let g = self
                .bufs
                .get(daddr, BlockKind::Agf, BBSIZE, GetMode::Read)?;
            let agf = Agf::decode(g.bytes(), agno, &self.uuid, daddr)?;
            drop(g);
            let daddr = self.geo.ag_header_daddr(agno, AGI_SECTOR);
            let g = self
                .bufs
                .get(daddr, BlockKind::Agi, BBSIZE, GetMode::Read)?;
            let agi = Agi::decode(g.bytes(), agno, &self.uuid, daddr)?;
            drop(g);
            let pag = &self.perag[agno as usize];
            pag.freeblks.store(agf.freeblks, Ordering::Relaxed);
            pag.longest.store(agf.longest, Ordering::Relaxed);
            pag.icount.store(agi.count, Ordering::Relaxed);
            pag.ifree.store(agi.freecount, Ordering::Relaxed);
            free += i64::from(agf.freeblks) + i64::from(agf.flcount);
        }
        self.fdblocks.store(free, Ordering::Relaxed);
        Ok(())
    }

    /// After replaying a dirty log: free every inode in use with no links left. An unlink
    /// and the inactivation that frees the inode are separate transactions, the second run
    /// later by the inodegc worker, so a crash between them (while the inode was queued, or
    /// while the file was still open) leaves such an orphan; XFS finds
    /// them on the AGI unlinked lists, labfs (which has none) by walking the allocated
    /// inodes of every AG, which only a mount after a crash pays for.
    fn free_orphans(&self) -> FsResult<()> {
        let mut orphans = Vec::new();
        for agno in 0..self.geo.agcount {
            let mut tp = crate::fs::trans::Trans::reader(self);
            let (_, chunks, _) = crate::fs::ialloc::ag_inodes(&mut tp, agno)?;
            tp.commit()?;
            for rec in chunks {
                for i in 0..64u32 {
                    if rec.free & (1u64 << i) == 0 {
                        orphans.push(self.geo.ino(agno, rec.startino + i));
                    }
                }
            }
        }
        for ino in orphans {
            let ip = match self.iget(ino) {
                Ok(ip) => ip,
                Err(FsError::NotFound) => continue,
                Err(e) => return Err(e),
            };
            let unlinked = crate::fs::inode::InodeRead::lock(Arc::clone(&ip)).di.nlink == 0;
            if unlinked {
                self.inactivate(&ip)?;
            }
        }
        Ok(())
    }

    /// Blocks kept back from ordinary reservations, so write-back, tree splits and removals
    /// can still allocate when the filesystem is "full" (XFS's `m_alloc_set_aside`).
    pub fn set_aside(&self) -> i64 {
        i64::from(self.geo.agcount) * 16
    }

    /// Take `n` blocks from the free-block counter, leaving the set-aside pool alone:
    /// `NoSpace` if there are not that many.
    pub(crate) fn reserve_blocks(&self, n: u64) -> FsResult<()> {
        let prev = self.fdblocks.fetch_sub(n as i64, Ordering::AcqRel);
        if prev - (n as i64) < self.set_aside() {
            self.fdblocks.fetch_add(n as i64, Ordering::AcqRel);
            return Err(FsError::NoSpace);
        }
        Ok(())
    }

    /// Fail if the filesystem has shut down.
    pub fn check_live(&self) -> FsResult<()> {
        self.shutdown.check_live()
    }

    /// Stop writing anything home: after an unrecoverable error, metadata on disk stays as
    /// it was rather than receive half an operation. The first reason is kept.
    pub fn shutdown(&self, reason: impl Into<ShutdownReason>) {
        // The cache's dirty-pressure relief writes home on its own; it must stop too.
        self.bufs.stop_writing();
        self.shutdown.shut_down(reason.into());
        self.log.fail();
    }

    /// Why the filesystem shut down, if it did.
    pub fn shutdown_reason(&self) -> Option<ShutdownReason> {
        self.shutdown.reason().cloned()
    }

    /// Get an inode by number: from the cache, or read from its inode cluster buffer.
    pub fn iget(&self, ino: u64) -> FsResult<Arc<Inode>> {
        if let Lookup::Found(ip) = self.icache.lookup(ino, &self.stats) {
            if ip.has_flag(iflags::FREED) {
                return Err(FsError::NotFound);
            }
            return Ok(ip);
        }
        if !self.geo.ino_valid(ino) {
            return Err(FsError::Corrupt {
                kind: BlockKind::Inode,
                daddr: 0,
                what: format!("inode number {ino} is outside the filesystem"),
            });
        }
        let core = self.read_inode(ino)?;
        if core.di.mode == 0 {
            return Err(FsError::NotFound);
        }
        let ip = self
            .icache
            .insert(Arc::new(Inode::new(ino, core)), &self.stats);
        if self.icache.over_limit() {
            self.icache.reclaim(&self.stats);
        }
        Ok(ip)
    }

    /// Read inode `ino` from its home location.
    fn read_inode(&self, ino: u64) -> FsResult<InodeCore> {
        let (daddr, off) = self.geo.ino_location(ino);
        let g = self.bufs.get(
            daddr,
            BlockKind::Inode,
            crate::fs::geo::INODE_CLUSTER_SIZE,
            GetMode::Read,
        )?;
        let raw = &g.bytes()[off..off + crate::fs::format::INODE_SIZE];
        let at = Daddr(daddr.0 + (off / BBSIZE) as u64);
        if let Err(m) = self.bufs.cksum().verify(BlockKind::Inode, raw) {
            return Err(FsError::crc(BlockKind::Inode, at.0, m));
        }
        let di = dinode::decode_core(raw, ino, &self.uuid, at)?;
        let fork = crate::fs::bmap::decode_fork(self, &di, dinode::literal(raw), ino, at)?;
        Ok(InodeCore::new(di, fork))
    }

    /// Add a brand-new inode to the cache, locked exclusive (its allocation transaction
    /// joins it).
    pub(crate) fn new_inode(&self, ino: u64, di: DinodeCore) -> FsResult<InodeWrite> {
        // XFS instantiates a new inode through xfs_iget(XFS_IGET_CREATE): a cache lookup that
        // misses, or finds the number's previous, freed owner still cached and recycles it.
        self.stats.inc(Stat::IgAttempts);
        let ip = Arc::new(Inode::new(ino, InodeCore::new(di, DataFork::default())));
        // Nobody else can hold a lock on an inode object made just now: a try-lock, which
        // cannot wait, so it is not ordered against the locks the creating transaction holds
        // (XFS locks a new inode while it is still I_NEW, unseen by others).
        let Some(w) = InodeWrite::try_lock(Arc::clone(&ip)) else {
            return Err(FsError::Invalid("a new inode object was already locked"));
        };
        let cached = match self.icache.insert_counted(ip, &self.stats) {
            crate::fs::icache::Inserted::Recycled(ip) => {
                self.stats.inc(Stat::IgFound);
                ip
            }
            inserted => {
                self.stats.inc(Stat::IgMissed);
                inserted.inode()
            }
        };
        if !Arc::ptr_eq(&cached, w.inode()) {
            return Err(FsError::Corrupt {
                kind: BlockKind::Inode,
                daddr: self.geo.ino_location(ino).0.0,
                what: format!("free inode {ino} is still cached in use"),
            });
        }
        Ok(w)
    }

    /// The on-disk image of an in-core inode with its CRC: what a push copies into the
    /// inode's cluster buffer (XFS's `xfs_iflush` computes the CRC there; a logged image
    /// carries none, see [`Fs::dinode_image`]).
    pub(crate) fn encode_inode(&self, core: &mut InodeCore, ino: u64) -> [u8; INODE_SIZE] {
        let mut raw = self.dinode_image(core, ino);
        self.bufs.cksum().update(BlockKind::Inode, &mut raw);
        raw
    }

    /// The on-disk image of an in-core inode (core and fork) with its CRC field zero: what
    /// its log item carries. XFS's `xfs_inode_to_log_dinode` leaves `di_crc` zero too: a
    /// commit that relogs an inode has no use for a CRC that its next commit replaces, and
    /// recovery computes the CRC of each inode it replays.
    pub(crate) fn dinode_image(&self, core: &mut InodeCore, ino: u64) -> [u8; INODE_SIZE] {
        let mut raw = [0u8; INODE_SIZE];
        core.di.format = core.fork.format();
        // Only a regular file's fork holds delayed allocations, which are not on disk. Other
        // forks are counted by length: a big directory has thousands of extents and logs its
        // inode with every entry it gains, so counting them one by one made each create
        // slower as the directory grew.
        let extents = core.fork.extents();
        core.di.nextents = if core.is_reg() {
            extents.iter().filter(|e| !e.is_delalloc()).count()
        } else {
            debug_assert!(!extents.iter().any(|e| e.is_delalloc()));
            extents.len()
        } as u32;
        dinode::encode_core(&mut raw, ino, &core.di, &self.uuid);
        crate::fs::bmap::encode_fork(&core.fork, dinode::literal_mut(&mut raw));
        raw
    }

    /// The buffer cache is over its limit with dirty buffers: push the AIL, pass after pass
    /// while passes write items home (one pass takes at most a thousand, and small items
    /// (inode items, icreates, blocks logged over zeros) let a log hold many more than
    /// that); when a pass writes nothing, checkpoint the CIL once so what it pins can go
    /// too (XFS's xfsaild flushes the CIL when pinned items stall it). Returns the items
    /// written home.
    pub(crate) fn relieve_buffer_pressure(&self) -> usize {
        /// Passes one relief runs at most (a bound on the stall of the caller).
        const RELIEF_PASSES: usize = 16;
        let mut total = 0;
        let mut flushed = false;
        for _ in 0..RELIEF_PASSES {
            let (n, pinned) = self.ail_push_pass(true);
            total += n;
            if n > 0 {
                continue;
            }
            if flushed || (!pinned && self.log.cil_len() == 0) {
                break;
            }
            if pinned {
                self.stats.inc(Stat::PushAilFlush);
            }
            if self.log.push_cil().is_err() || self.log.force_background().is_err() {
                break;
            }
            flushed = true;
        }
        total
    }

    /// Make all metadata durable: finish the queued inactivations, force the log (metadata
    /// then stays in the log until the AIL writes it home).
    ///
    /// The kernel's `xfs_fs_sync_fs` does not flush inodegc (only a freeze stops it), but its
    /// worker runs a jiffy after an unlink, so a sync there finds the queue empty unless an
    /// unlink raced with it; labfs flushes, so what a sync leaves is the same state every
    /// time: no orphans for a crash to leave behind, free space and the counters (what the
    /// fidelity fixtures, read after syncfs, compare) after every unlink before it.
    pub fn sync_metadata(&self) -> FsResult<()> {
        self.check_live()?;
        self.inodegc_flush()?;
        self.log.force_all("xfs_fs_sync_fs")
    }

    /// Write all metadata home: force the log, push the AIL until it is empty, so every
    /// cached inode and buffer is clean (what the kernel's `drop_caches` needs before it can
    /// evict them; syncbench empties the inode cache this way).
    pub fn write_metadata_home(&self) -> FsResult<()> {
        self.check_live()?;
        self.log.force_all("xfs_log_force")?;
        self.ail_push_all_sync()
    }

    /// Write all metadata home and leave the log clean: force it, push the AIL until it is
    /// empty, flush, write an unmount record (unmount, freeze, the end of mkfs).
    pub fn quiesce(&self) -> FsResult<()> {
        self.check_live()?;
        // Nothing may be left queued: a clean log with an orphan on disk would keep it for
        // ever (only a mount after a crash looks for them).
        self.inodegc_flush()?;
        self.log.force_all("xfs_log_quiesce")?;
        self.ail_push_all_sync()?;
        self.bufs.dev().flush().map_err(|source| {
            // Writes that cannot be made durable must not be reported as such: shut down.
            let e = FsError::io(IoOp::FlushDevice, None, source);
            self.shutdown(ShutdownReason::MetadataIo(Box::new(e.clone())));
            e
        })?;
        self.log.write_unmount_record()
    }

    /// Stop xfsaild (unmount).
    pub(crate) fn stop_aild(&self) {
        self.aild_stop.store(true, Ordering::Release);
        self.log.wake_aild();
        let h = self.aild.lock().take();
        if let Some(h) = h
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }

    /// Write everything back, record the summary counters in every superblock copy and flush.
    /// Idempotent; the filesystem must not be used afterwards.
    pub fn unmount(&self) -> FsResult<()> {
        // Checked before the once-only guard: every unmount of a shut-down filesystem says
        // so, including a second one after the first failed.
        if let Some(reason) = self.shutdown_reason() {
            self.unmounted.store(true, Ordering::Release);
            return Err(FsError::ShutDownBeforeUnmount { reason });
        }
        if self.unmounted.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.sync()?;
        let sb = self.current_superblock();
        let mut tp = crate::fs::trans::Trans::new(self, crate::fs::trans::Resv::Mkfs);
        for agno in 0..self.geo.agcount {
            let daddr = self
                .geo
                .ag_header_daddr(agno, crate::fs::format::ag::SB_SECTOR);
            let id = tp.new_buf(daddr, BlockKind::Superblock, BBSIZE)?;
            sb.encode(tp.buf_mut(id));
            tp.log_buf(id, 0, BBSIZE - 1);
        }
        tp.commit()?;
        let r = self.quiesce();
        self.inodegc.stop();
        self.stop_aild();
        r?;
        self.bufs.purge_clean();
        Ok(())
    }

    /// statfs(2). As XFS: the internal log is not part of `blocks`; free inodes include
    /// those that free blocks could still hold.
    pub fn statfs(&self) -> FsStat {
        let free = self.fdblocks.load(Ordering::Relaxed).max(0) as u64;
        let (mut icount, mut ifree) = (0u64, 0u64);
        for p in self.perag.iter() {
            icount += u64::from(p.icount.load(Ordering::Relaxed));
            ifree += u64::from(p.ifree.load(Ordering::Relaxed));
        }
        let ffree = ifree + free * INODES_PER_BLOCK;
        FsStat {
            bsize: BLOCK_SIZE as u64,
            blocks: self.geo.dblocks - u64::from(self.geo.logblocks),
            bfree: free,
            bavail: free,
            files: icount - ifree + ffree,
            ffree,
            namelen: NAME_MAX as u64,
        }
    }

    /// The volume label.
    pub fn label(&self) -> String {
        String::from_utf8_lossy(&self.fname)
            .trim_end_matches('\0')
            .to_string()
    }

    /// The superblock as it should be written now (summary counters from the per-AG state).
    pub(crate) fn current_superblock(&self) -> Superblock {
        let (mut icount, mut ifree) = (0u64, 0u64);
        for p in self.perag.iter() {
            icount += u64::from(p.icount.load(Ordering::Relaxed));
            ifree += u64::from(p.ifree.load(Ordering::Relaxed));
        }
        Superblock {
            dblocks: self.geo.dblocks,
            uuid: self.uuid,
            logstart: self.geo.logstart,
            logblocks: self.geo.logblocks,
            rootino: self.rootino,
            agblocks: self.geo.agblocks,
            agcount: self.geo.agcount,
            agblklog: self.geo.agblklog,
            fname: self.fname,
            inprogress: false,
            icount,
            ifree,
            fdblocks: self.fdblocks.load(Ordering::Relaxed).max(0) as u64,
            lsn: 0,
        }
    }
}
