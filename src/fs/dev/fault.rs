//! The fault shim: a [`BlockDev`] wrapper for crash, corruption and error-path tests.
//!
//! [`FaultDev`] passes every request to the device it wraps and, on the side:
//!
//! - **records** every completed write (with its payload) and every flush, each with a
//!   sequence number, in completion order, like dm-log-writes;
//! - builds the **crash image** at any flush point: the durable state after the k-th flush
//!   plus any chosen subset of the writes that could have landed after it (all, none, a
//!   prefix, a seeded random subset, or an explicit list), optionally **tearing** one
//!   multi-sector write so only some of its 512-byte sectors land. The image is a new
//!   [`MemDev`] whose contents are all durable, ready to mount;
//! - **flips bits** in the durable image ([`FaultDev::corrupt`]) or in what reads return
//!   ([`FaultDev::flip_on_read`]);
//! - **fails** the N-th read, write or flush with [`DevError::Injected`], optionally failing
//!   every later request too ([`DevError::InjectedDead`]) until [`FaultDev::clear_faults`];
//! - counts flush points ([`FaultDev::flush_count`]) so a test can crash at every one, and
//!   reports the device's [`Position`] (flushes and writes completed so far) so a caller can
//!   place its own events, such as an fsync returning, among the device's.
//!
//! # What a flush point covers
//!
//! A write is durable after flush k if it completed before flush k was *issued* (the
//! pessimistic reading of `REQ_PREFLUSH`: a write completing while the flush runs may or may
//! not be covered, so the shim treats it as not covered). The writes that may or may not have
//! landed in a crash between flush k and flush k+1 (the *pending* writes of point k) are those
//! completed from then until flush k+1 completed; for the last point, every write since.
//! A FUA write is durable once it completes, so a plan that drops a pending FUA write models
//! a crash *before* that write completed: whatever the caller did after it was acknowledged
//! did not happen. [`CrashImage::kept`] says which pending writes landed.
//!
//! # Order
//!
//! Kept writes land in completion order by default, so of two kept writes to the same sector
//! the later one wins. A device may also finish writes that were in flight together in either
//! order, so [`ApplyOrder::Shuffled`] lands the kept writes in a seeded random order that keeps
//! only the order the device must keep: a write that completed before another was *issued*
//! lands before it (each write records the [`Position`] it was issued at). Writes that were
//! never in flight together keep their order, so for a filesystem that issues one write at a
//! time a shuffled image equals the completion-order one; they differ where concurrent
//! writes overlap.
//!
//! # Memory
//!
//! Recording costs a copy of every write's payload, held until it is folded into the base
//! image: the durable image at the oldest flush point still available, a sparse [`MemDev`].
//! Each write and flush also costs a small record (tens of bytes). When the log holds more
//! than its limit (default [`DEFAULT_LOG_LIMIT`], [`FaultDev::set_log_limit`]), the oldest
//! flush points are folded into the base at the next flush, and crash images before them can
//! no longer be built. So memory stays near the limit plus the bytes written since the last
//! flush plus the base image (at most the distinct 4 KiB pages ever written), and a run of
//! flushes without writes cannot grow it either. Building a crash image copies the base
//! image, so it costs time and memory in proportion to the pages written. A test that crashes at every flush point of a short script keeps
//! everything; a long soak test keeps a bounded window of recent points.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::fs::dev::mem::{MemDev, PAGE_SIZE};
use crate::fs::dev::{BlockDev, DevError, IoKind, IoReq, SECTOR_SIZE, check_io};
use crate::rng::SplitMix64;

/// Default limit on recorded write payloads before old flush points are folded: 256 MiB.
pub const DEFAULT_LOG_LIMIT: u64 = 256 << 20;

/// What a flush record costs the log, in bytes.
const FLUSH_COST: u64 = std::mem::size_of::<FlushRec>() as u64;

/// What a recorded write costs the log: its payload and its record.
fn write_cost(data: &[u8]) -> u64 {
    (data.len() + std::mem::size_of::<WriteRec>()) as u64
}

/// Bytes read at a time when snapshotting a device that is not a [`MemDev`].
const SNAPSHOT_CHUNK: usize = 1 << 20;

/// Where the device is in its history: flushes and writes completed so far.
///
/// Two positions taken by one thread are ordered; `a.reached_by(b)` says that everything
/// completed at `a` had also completed at `b`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Position {
    /// Flushes completed (the flush point the device is at).
    pub flushes: u64,
    /// Writes completed (recorded).
    pub writes: u64,
}

impl Position {
    /// Whether every flush and write completed at `self` had completed at `other` too.
    pub fn reached_by(self, other: Position) -> bool {
        self.flushes <= other.flushes && self.writes <= other.writes
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flush {} write {}", self.flushes, self.writes)
    }
}

/// A flush point's place in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPoint {
    /// The point (0 before the first flush).
    pub point: u64,
    /// Writes durable at this point (global indices below this; also the global index of its
    /// first pending write).
    pub durable_writes: u64,
    /// Writes completed when the flush completed (at least `durable_writes`: writes that
    /// complete while a flush runs are not covered by it). For point 0, 0.
    pub completed_writes: u64,
}

impl FlushPoint {
    /// The position right after this flush completed.
    pub fn position(&self) -> Position {
        Position {
            flushes: self.point,
            writes: self.completed_writes,
        }
    }
}

/// A recorded write, without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteInfo {
    /// Sequence number among all recorded writes and flushes (from 1).
    pub seq: u64,
    /// Index among all recorded writes (from 0).
    pub index: u64,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Whether it was a FUA write.
    pub fua: bool,
    /// The device's position when the write was issued: writes completed before it are those
    /// with a lower index than `issued.writes`; the others were in flight with it.
    pub issued: Position,
}

/// One recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A completed write.
    Write(WriteInfo),
    /// A completed flush.
    Flush {
        /// Sequence number.
        seq: u64,
        /// Which flush point it created (the first flush creates point 1).
        point: u64,
    },
}

/// Which of a flush point's pending writes land in a crash image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// Every pending write (the crash came just before the next flush completed).
    All,
    /// None of them (the crash came right after the flush).
    None,
    /// The first n, in completion order (an in-order device).
    Prefix(usize),
    /// Each independently with probability 1/2, from this seed (a reordering cache).
    Random {
        /// The seed; the same seed picks the same subset.
        seed: u64,
    },
    /// Exactly these positions in the pending list.
    Subset(Vec<usize>),
}

/// Which write to tear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TearTarget {
    /// The last pending write that lands (the one in flight at the crash).
    LastKept,
    /// This position in the pending list (it must be one that lands).
    Index(usize),
}

/// Which sectors of a torn write land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectorPick {
    /// The first n sectors (0 < n < the write's sectors).
    Prefix(u32),
    /// A random non-empty proper subset, from this seed.
    Random {
        /// The seed.
        seed: u64,
    },
    /// Exactly these sectors (0-based within the write).
    Sectors(Vec<u32>),
}

/// Tear one multi-sector write in a crash image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tear {
    /// The write to tear.
    pub target: TearTarget,
    /// Which of its sectors land.
    pub sectors: SectorPick,
}

/// In which order the kept writes land (it matters only where they overlap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApplyOrder {
    /// Completion order: of two overlapping kept writes, the later-completed one wins.
    #[default]
    Completion,
    /// A seeded random order that keeps every write after the writes that completed before
    /// it was issued (see the module docs).
    Shuffled {
        /// The seed; the same seed picks the same order.
        seed: u64,
    },
}

/// What crash image to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPlan {
    /// The flush point: 0 is before the first flush, k after the k-th.
    pub flush_point: u64,
    /// Which pending writes land.
    pub keep: Keep,
    /// Optionally tear one of the writes that land.
    pub tear: Option<Tear>,
    /// The order the kept writes land in.
    pub order: ApplyOrder,
}

impl CrashPlan {
    /// The durable state right after flush point `k`: no pending write lands.
    pub fn at(k: u64) -> CrashPlan {
        CrashPlan {
            flush_point: k,
            keep: Keep::None,
            tear: None,
            order: ApplyOrder::Completion,
        }
    }

    /// The same plan with these pending writes landing.
    pub fn keep(mut self, keep: Keep) -> CrashPlan {
        self.keep = keep;
        self
    }

    /// The same plan with a torn write.
    pub fn tear(mut self, tear: Tear) -> CrashPlan {
        self.tear = Some(tear);
        self
    }

    /// The same plan with the kept writes landing in this order.
    pub fn order(mut self, order: ApplyOrder) -> CrashPlan {
        self.order = order;
        self
    }
}

/// A torn write in a crash image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornWrite {
    /// Its position in the pending list.
    pub position: usize,
    /// The sectors that landed (0-based within the write, ascending).
    pub landed: Vec<u32>,
    /// How many sectors the write had.
    pub sectors: u32,
}

/// A crash image and how it was made.
#[derive(Debug, Clone)]
pub struct CrashImage {
    /// The image: every byte durable, ready to mount.
    pub dev: Arc<MemDev>,
    /// The flush point it was built at.
    pub flush_point: u64,
    /// The pending writes of that point, in completion order.
    pub pending: Vec<WriteInfo>,
    /// Positions in `pending` of the writes that landed (ascending).
    pub kept: Vec<usize>,
    /// The torn write, if any (it is also in `kept`).
    pub torn: Option<TornWrite>,
    /// Positions in `pending` of the writes that landed, in the order they landed (the
    /// elements of `kept`).
    pub applied: Vec<usize>,
}

/// When a fault rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailRule {
    /// The kind of request it counts.
    pub kind: IoKind,
    /// Fail the n-th request of that kind from now (1 = the next one).
    pub nth: u64,
    /// What happens after it fires.
    pub then: AfterFail,
}

/// What a device does after a fault rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFail {
    /// Only that request fails.
    Recover,
    /// Every later request fails too, until [`FaultDev::clear_faults`].
    FailAll,
}

/// Flip the bits of `mask` in the byte at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitFlip {
    /// Byte offset on the device.
    pub offset: u64,
    /// The bits to flip.
    pub mask: u8,
}

impl BitFlip {
    /// Flip `mask` in byte `offset`.
    pub fn at_byte(offset: u64, mask: u8) -> BitFlip {
        BitFlip { offset, mask }
    }

    /// Flip `mask` in byte `byte` of sector `sector` (bytes past 511 wrap within the sector).
    pub fn in_sector(sector: u64, byte: u16, mask: u8) -> BitFlip {
        BitFlip {
            offset: sector * SECTOR_SIZE + u64::from(byte) % SECTOR_SIZE,
            mask,
        }
    }
}

/// Request counts seen by the shim (after alignment checks, including failed ones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Flushes.
    pub flushes: u64,
}

struct WriteRec {
    seq: u64,
    offset: u64,
    fua: bool,
    issued: Position,
    /// A media corruption from [`FaultDev::corrupt`]: in every image built after it.
    corruption: bool,
    data: Box<[u8]>,
}

struct FlushRec {
    seq: u64,
    /// Writes (by global index) below this are durable after this flush.
    horizon: u64,
    /// Writes recorded when this flush completed.
    done_at: u64,
}

struct Log {
    /// Durable image at flush point `base_flush`.
    base: MemDev,
    base_flush: u64,
    /// Writes completed when flush `base_flush` completed.
    base_done_at: u64,
    /// Global index of `writes[0]`; also the durable horizon of `base_flush`.
    base_writes: u64,
    writes: VecDeque<WriteRec>,
    /// Flush points `base_flush + 1 ..= flush_count`.
    flushes: VecDeque<FlushRec>,
    flush_count: u64,
    write_count: u64,
    horizon: u64,
    next_seq: u64,
    bytes: u64,
    limit: u64,
}

impl Log {
    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn rec(&self, index: u64) -> Option<&WriteRec> {
        index
            .checked_sub(self.base_writes)
            .and_then(|i| self.writes.get(i as usize))
    }

    fn horizon_of(&self, k: u64) -> u64 {
        if k == self.base_flush {
            self.base_writes
        } else {
            self.flushes
                .get((k - self.base_flush - 1) as usize)
                .map_or(self.horizon, |f| f.horizon)
        }
    }

    /// The global write indices pending at flush point k: `[horizon(k), end)`.
    fn pending_range(&self, k: u64) -> std::ops::Range<u64> {
        let end = if k >= self.flush_count {
            self.write_count
        } else {
            self.flushes
                .get((k - self.base_flush) as usize)
                .map_or(self.write_count, |f| f.done_at)
        };
        self.horizon_of(k)..end
    }

    fn check_point(&self, k: u64) -> Result<(), DevError> {
        if k < self.base_flush || k > self.flush_count {
            return Err(DevError::CrashPlan(format!(
                "flush point {k} is not available (the log holds points {}..={}; older ones \
                 were folded to stay under the log limit)",
                self.base_flush, self.flush_count
            )));
        }
        Ok(())
    }

    /// Fold the writes durable at flush point `k` into the base image.
    fn fold_to(&mut self, k: u64) -> Result<(), DevError> {
        if k <= self.base_flush {
            return Ok(());
        }
        let k = k.min(self.flush_count);
        let horizon = self.horizon_of(k);
        while self.base_writes < horizon {
            let Some(w) = self.writes.pop_front() else {
                break;
            };
            self.base.write_at(&w.data, w.offset, true)?;
            self.bytes -= write_cost(&w.data);
            self.base_writes += 1;
        }
        for _ in self.base_flush..k {
            if let Some(f) = self.flushes.pop_front() {
                self.bytes -= FLUSH_COST;
                self.base_done_at = f.done_at;
            }
        }
        self.base_flush = k;
        Ok(())
    }

    fn position(&self) -> Position {
        Position {
            flushes: self.flush_count,
            writes: self.write_count,
        }
    }

    fn info(&self, index: u64, w: &WriteRec) -> WriteInfo {
        WriteInfo {
            seq: w.seq,
            index,
            offset: w.offset,
            len: w.data.len() as u64,
            fua: w.fua,
            issued: w.issued,
        }
    }
}

/// One thing that lands in a crash image.
enum Landing<'a> {
    /// A kept pending write, by position.
    Kept(usize),
    /// A media corruption.
    Corruption(&'a WriteRec),
}

struct Armed {
    rule: FailRule,
    seen: u64,
}

#[derive(Default)]
struct Faults {
    armed: Vec<Armed>,
    dead: bool,
    read_flips: Vec<BitFlip>,
    counts: IoCounts,
}

/// The fault shim; see the module docs.
pub struct FaultDev {
    inner: Arc<dyn BlockDev>,
    log: Mutex<Log>,
    faults: Mutex<Faults>,
}

impl FaultDev {
    /// Wrap any device. Its current contents become the base image, read in full once
    /// (pages of zeroes are not stored); for a [`MemDev`], [`FaultDev::over_mem`] is faster.
    pub fn new(inner: Arc<dyn BlockDev>) -> Result<FaultDev, DevError> {
        let base = MemDev::new(inner.size())?;
        let mut buf = vec![0u8; SNAPSHOT_CHUNK];
        let mut offset = 0u64;
        while offset < inner.size() {
            let n = (inner.size() - offset).min(SNAPSHOT_CHUNK as u64) as usize;
            inner.read_at(&mut buf[..n], offset)?;
            for (i, page) in buf[..n].chunks(PAGE_SIZE).enumerate() {
                if page.iter().any(|&b| b != 0) {
                    base.write_at(page, offset + (i * PAGE_SIZE) as u64, true)?;
                }
            }
            offset += n as u64;
        }
        Ok(FaultDev::with_base(inner, base))
    }

    /// Wrap a [`MemDev`]; its live contents become the base image (a sparse copy).
    pub fn over_mem(mem: Arc<MemDev>) -> FaultDev {
        let base = mem.snapshot();
        FaultDev::with_base(mem, base)
    }

    /// A fault shim over a new, all-zero [`MemDev`] of `size` bytes.
    pub fn new_mem(size: u64) -> Result<FaultDev, DevError> {
        let mem = MemDev::new(size)?;
        let base = MemDev::new(size)?;
        Ok(FaultDev::with_base(Arc::new(mem), base))
    }

    fn with_base(inner: Arc<dyn BlockDev>, base: MemDev) -> FaultDev {
        FaultDev {
            inner,
            log: Mutex::new(Log {
                base,
                base_flush: 0,
                base_done_at: 0,
                base_writes: 0,
                writes: VecDeque::new(),
                flushes: VecDeque::new(),
                flush_count: 0,
                write_count: 0,
                horizon: 0,
                next_seq: 0,
                bytes: 0,
                limit: DEFAULT_LOG_LIMIT,
            }),
            faults: Mutex::new(Faults::default()),
        }
    }

    /// The wrapped device.
    pub fn inner(&self) -> &Arc<dyn BlockDev> {
        &self.inner
    }

    /// Flush points so far: crash plans may name 0 (before any flush) up to this.
    pub fn flush_count(&self) -> u64 {
        self.log.lock().flush_count
    }

    /// Flushes and writes completed so far.
    pub fn position(&self) -> Position {
        self.log.lock().position()
    }

    /// Where flush point `k` sits among the writes.
    pub fn flush_point(&self, k: u64) -> Result<FlushPoint, DevError> {
        let log = self.log.lock();
        log.check_point(k)?;
        let completed_writes = if k == log.base_flush {
            log.base_done_at
        } else {
            log.flushes
                .get((k - log.base_flush - 1) as usize)
                .map_or(log.write_count, |f| f.done_at)
        };
        Ok(FlushPoint {
            point: k,
            durable_writes: log.horizon_of(k),
            completed_writes,
        })
    }

    /// The oldest flush point a crash image can still be built at.
    pub fn oldest_flush_point(&self) -> u64 {
        self.log.lock().base_flush
    }

    /// Writes recorded so far.
    pub fn write_count(&self) -> u64 {
        self.log.lock().write_count
    }

    /// Bytes the log holds now: write payloads plus a small record per write and flush.
    pub fn log_bytes(&self) -> u64 {
        self.log.lock().bytes
    }

    /// Requests seen, by kind.
    pub fn io_counts(&self) -> IoCounts {
        self.faults.lock().counts
    }

    /// Fold old flush points once the log holds more than `bytes` (see [`FaultDev::log_bytes`];
    /// checked at each flush).
    pub fn set_log_limit(&self, bytes: u64) {
        self.log.lock().limit = bytes;
    }

    /// Give up crash images before flush point `k`, folding them into the base image now.
    pub fn forget_before(&self, k: u64) -> Result<(), DevError> {
        self.log.lock().fold_to(k)
    }

    /// The recorded events still held, in order.
    pub fn events(&self) -> Vec<Event> {
        let log = self.log.lock();
        let mut out = Vec::with_capacity(log.writes.len() + log.flushes.len());
        let mut flushes = log.flushes.iter().enumerate().peekable();
        for (i, w) in log.writes.iter().enumerate() {
            let index = log.base_writes + i as u64;
            while let Some((fi, f)) = flushes.peek() {
                if f.done_at > index {
                    break;
                }
                out.push(Event::Flush {
                    seq: f.seq,
                    point: log.base_flush + 1 + *fi as u64,
                });
                flushes.next();
            }
            out.push(Event::Write(log.info(index, w)));
        }
        for (fi, f) in flushes {
            out.push(Event::Flush {
                seq: f.seq,
                point: log.base_flush + 1 + fi as u64,
            });
        }
        out
    }

    /// The pending writes of flush point `k` (what a crash plan at `k` chooses from).
    pub fn pending_writes(&self, k: u64) -> Result<Vec<WriteInfo>, DevError> {
        let log = self.log.lock();
        log.check_point(k)?;
        Ok(log
            .pending_range(k)
            .filter_map(|i| log.rec(i).filter(|w| !w.corruption).map(|w| log.info(i, w)))
            .collect())
    }

    /// Build the crash image a plan describes.
    pub fn crash_image(&self, plan: &CrashPlan) -> Result<CrashImage, DevError> {
        let log = self.log.lock();
        let k = plan.flush_point;
        log.check_point(k)?;
        let range = log.pending_range(k);
        let pending_idx: Vec<u64> = range
            .clone()
            .filter(|&i| log.rec(i).is_some_and(|w| !w.corruption))
            .collect();
        let pending: Vec<WriteInfo> = pending_idx
            .iter()
            .filter_map(|&i| log.rec(i).map(|w| log.info(i, w)))
            .collect();
        let kept = choose_kept(&plan.keep, pending.len())?;
        let torn = match &plan.tear {
            Some(t) => Some(choose_tear(t, &kept, &pending)?),
            None => None,
        };

        let image = log.base.snapshot();
        for i in log.base_writes..range.start {
            if let Some(w) = log.rec(i) {
                image.write_at(&w.data, w.offset, true)?;
            }
        }
        // The pending writes by position, and the media corruptions among them (in every
        // image: in their place in completion order, or after a shuffled order's writes).
        let mut records: Vec<&WriteRec> = Vec::with_capacity(pending.len());
        let mut landing: Vec<Landing> = Vec::with_capacity(kept.len());
        let mut next_kept = kept.iter().peekable();
        for i in range {
            let Some(w) = log.rec(i) else { continue };
            if w.corruption {
                landing.push(Landing::Corruption(w));
                continue;
            }
            if next_kept.peek() == Some(&&records.len()) {
                next_kept.next();
                landing.push(Landing::Kept(records.len()));
            }
            records.push(w);
        }
        let applied = match plan.order {
            ApplyOrder::Completion => kept.clone(),
            ApplyOrder::Shuffled { seed } => {
                let order = shuffle_kept(&kept, &pending, seed);
                landing.retain(|l| matches!(l, Landing::Corruption(_)));
                landing.splice(0..0, order.iter().map(|&p| Landing::Kept(p)));
                order
            }
        };
        for l in landing {
            let (w, position) = match l {
                Landing::Corruption(w) => {
                    image.write_at(&w.data, w.offset, true)?;
                    continue;
                }
                Landing::Kept(p) => (records[p], p),
            };
            match &torn {
                Some(t) if t.position == position => {
                    for &s in &t.landed {
                        let at = s as usize * SECTOR_SIZE as usize;
                        let sector = &w.data[at..at + SECTOR_SIZE as usize];
                        image.write_at(sector, w.offset + at as u64, true)?;
                    }
                }
                _ => image.write_at(&w.data, w.offset, true)?,
            }
        }
        Ok(CrashImage {
            dev: Arc::new(image),
            flush_point: k,
            pending,
            kept,
            torn,
            applied,
        })
    }

    /// Arm a fault rule. Several rules may be armed at once; each counts its own kind.
    pub fn fail(&self, rule: FailRule) {
        self.faults.lock().armed.push(Armed { rule, seen: 0 });
    }

    /// Disarm every fault rule and revive a device failed by [`AfterFail::FailAll`].
    pub fn clear_faults(&self) {
        let mut f = self.faults.lock();
        f.armed.clear();
        f.dead = false;
    }

    /// From now on, every read that covers `flip.offset` returns that byte with `flip.mask`
    /// flipped (the stored data is unchanged).
    pub fn flip_on_read(&self, flip: BitFlip) {
        self.faults.lock().read_flips.push(flip);
    }

    /// Stop flipping bits on read.
    pub fn clear_read_flips(&self) {
        self.faults.lock().read_flips.clear();
    }

    /// Media corruption: flip bits in the device's stored data, durably. Recorded so that
    /// every crash image built at a later flush point (or from pending writes after it)
    /// contains it. Fault rules do not apply to this.
    pub fn corrupt(&self, flip: BitFlip) -> Result<(), DevError> {
        let sector = flip.offset - flip.offset % SECTOR_SIZE;
        let mut buf = vec![0u8; SECTOR_SIZE as usize];
        self.inner.read_at(&mut buf, sector)?;
        buf[(flip.offset - sector) as usize] ^= flip.mask;
        self.inner.write_at(&buf, sector, true)?;
        self.record_write(sector, true, None, true, buf.into_boxed_slice());
        Ok(())
    }

    fn record_write(
        &self,
        offset: u64,
        fua: bool,
        issued: Option<Position>,
        corruption: bool,
        data: Box<[u8]>,
    ) {
        let mut log = self.log.lock();
        let seq = log.seq();
        let issued = issued.unwrap_or_else(|| log.position());
        log.bytes += write_cost(&data);
        log.write_count += 1;
        log.writes.push_back(WriteRec {
            seq,
            offset,
            fua,
            issued,
            corruption,
            data,
        });
    }

    /// Count the request and apply armed rules; an error means fail it.
    fn gate(&self, req: IoReq) -> Result<(), DevError> {
        let mut f = self.faults.lock();
        match req.kind {
            IoKind::Read => f.counts.reads += 1,
            IoKind::Write => f.counts.writes += 1,
            IoKind::Flush => f.counts.flushes += 1,
        }
        if f.dead {
            return Err(DevError::InjectedDead {
                dev: self.describe(),
                req,
            });
        }
        let mut fired = None;
        for (i, a) in f.armed.iter_mut().enumerate() {
            if a.rule.kind == req.kind {
                a.seen += 1;
                if fired.is_none() && a.seen >= a.rule.nth.max(1) {
                    fired = Some(i);
                }
            }
        }
        let Some(i) = fired else { return Ok(()) };
        let armed = f.armed.remove(i);
        let sticky = armed.rule.then == AfterFail::FailAll;
        if sticky {
            f.dead = true;
        }
        Err(DevError::Injected {
            dev: self.describe(),
            req,
            nth: armed.seen,
            sticky,
        })
    }
}

/// The pending positions a `Keep` selects, ascending.
fn choose_kept(keep: &Keep, pending: usize) -> Result<Vec<usize>, DevError> {
    Ok(match keep {
        Keep::All => (0..pending).collect(),
        Keep::None => Vec::new(),
        Keep::Prefix(n) => {
            if *n > pending {
                return Err(DevError::CrashPlan(format!(
                    "prefix of {n} writes, but only {pending} are pending"
                )));
            }
            (0..*n).collect()
        }
        Keep::Random { seed } => {
            let mut rng = SplitMix64::new(*seed);
            (0..pending).filter(|_| rng.coin()).collect()
        }
        Keep::Subset(list) => {
            let mut v = list.clone();
            v.sort_unstable();
            v.dedup();
            if let Some(&bad) = v.iter().find(|&&p| p >= pending) {
                return Err(DevError::CrashPlan(format!(
                    "pending write {bad} does not exist (there are {pending})"
                )));
            }
            v
        }
    })
}

/// A seeded random order of the kept positions in which every write lands after the kept
/// writes that completed before it was issued.
///
/// Write `b` may land once no kept write with a lower index than `b.issued.writes` is still
/// waiting; as writes land, the lowest waiting index grows and more writes become free.
fn shuffle_kept(kept: &[usize], pending: &[WriteInfo], seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed);
    // Kept positions by the position they were issued at (stable, so ties keep their order).
    let mut by_issue: Vec<usize> = kept.to_vec();
    by_issue.sort_by_key(|&p| pending[p].issued.writes);
    let mut landed = vec![false; pending.len()];
    let mut next_waiting = 0usize; // into `kept`, completion order
    let mut next_free = 0usize; // into `by_issue`
    let mut free: Vec<usize> = Vec::new();
    let mut order = Vec::with_capacity(kept.len());
    while order.len() < kept.len() {
        while next_waiting < kept.len() && landed[kept[next_waiting]] {
            next_waiting += 1;
        }
        let lowest_waiting = kept
            .get(next_waiting)
            .map_or(u64::MAX, |&p| pending[p].index);
        while next_free < by_issue.len()
            && pending[by_issue[next_free]].issued.writes <= lowest_waiting
        {
            free.push(by_issue[next_free]);
            next_free += 1;
        }
        // The lowest waiting write itself is always free (it was issued before it
        // completed), so `free` is never empty here.
        let pick = rng.below(free.len() as u64) as usize;
        let p = free.swap_remove(pick);
        landed[p] = true;
        order.push(p);
    }
    order
}

/// Resolve a tear against the chosen writes.
fn choose_tear(tear: &Tear, kept: &[usize], pending: &[WriteInfo]) -> Result<TornWrite, DevError> {
    let position = match tear.target {
        TearTarget::LastKept => *kept.last().ok_or_else(|| {
            DevError::CrashPlan("cannot tear the last write kept: the plan keeps none".into())
        })?,
        TearTarget::Index(p) => {
            if !kept.contains(&p) {
                return Err(DevError::CrashPlan(format!(
                    "cannot tear pending write {p}: the plan does not keep it"
                )));
            }
            p
        }
    };
    let w = pending
        .get(position)
        .ok_or_else(|| DevError::CrashPlan(format!("pending write {position} does not exist")))?;
    let sectors = (w.len / SECTOR_SIZE) as u32;
    if sectors < 2 {
        return Err(DevError::CrashPlan(format!(
            "pending write {position} ({} bytes at byte {}) is one sector; it cannot tear",
            w.len, w.offset
        )));
    }
    let landed: Vec<u32> = match &tear.sectors {
        SectorPick::Prefix(n) => {
            if *n == 0 || *n >= sectors {
                return Err(DevError::CrashPlan(format!(
                    "a torn prefix must keep 1..{} of the write's {sectors} sectors, not {n}",
                    sectors - 1
                )));
            }
            (0..*n).collect()
        }
        SectorPick::Random { seed } => {
            let mut rng = SplitMix64::new(*seed);
            let mut mask: Vec<bool> = (0..sectors).map(|_| rng.coin()).collect();
            let count = mask.iter().filter(|&&b| b).count();
            if count == 0 || count == sectors as usize {
                // Make it a proper, non-empty subset: toggle one sector at random.
                let i = rng.below(u64::from(sectors)) as usize;
                mask[i] = !mask[i];
            }
            (0..sectors).filter(|&s| mask[s as usize]).collect()
        }
        SectorPick::Sectors(list) => {
            let mut v = list.clone();
            v.sort_unstable();
            v.dedup();
            if let Some(&bad) = v.iter().find(|&&s| s >= sectors) {
                return Err(DevError::CrashPlan(format!(
                    "sector {bad} is outside the torn write's {sectors} sectors"
                )));
            }
            v
        }
    };
    Ok(TornWrite {
        position,
        landed,
        sectors,
    })
}

impl BlockDev for FaultDev {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn sector_size(&self) -> u32 {
        self.inner.sector_size()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        let req = IoReq::read(offset, buf.len());
        check_io(self.size(), req, || self.describe())?;
        self.gate(req)?;
        self.inner.read_at(buf, offset)?;
        let f = self.faults.lock();
        for flip in &f.read_flips {
            if let Some(i) = flip.offset.checked_sub(offset)
                && let Some(b) = buf.get_mut(i as usize)
            {
                *b ^= flip.mask;
            }
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        let req = IoReq::write(offset, buf.len(), fua);
        check_io(self.size(), req, || self.describe())?;
        self.gate(req)?;
        let data: Box<[u8]> = buf.into();
        let issued = self.position();
        self.inner.write_at(buf, offset, fua)?;
        self.record_write(offset, fua, Some(issued), false, data);
        Ok(())
    }

    fn flush(&self) -> Result<(), DevError> {
        self.gate(IoReq::flush())?;
        let covers = self.log.lock().write_count;
        self.inner.flush()?;
        let mut log = self.log.lock();
        let seq = log.seq();
        let horizon = log.horizon.max(covers);
        log.horizon = horizon;
        let done_at = log.write_count;
        log.flushes.push_back(FlushRec {
            seq,
            horizon,
            done_at,
        });
        log.flush_count += 1;
        log.bytes += FLUSH_COST;
        while log.bytes > log.limit && log.base_flush < log.flush_count {
            let next = log.base_flush + 1;
            log.fold_to(next)?;
        }
        Ok(())
    }

    fn reads_at_memory_speed(&self) -> bool {
        self.inner.reads_at_memory_speed()
    }

    fn describe(&self) -> String {
        format!("fault({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(len: u64) -> WriteInfo {
        WriteInfo {
            seq: 1,
            index: 0,
            offset: 0,
            len,
            fua: false,
            issued: Position::default(),
        }
    }

    #[test]
    fn random_keep_is_reproducible_from_its_seed() {
        let a = choose_kept(&Keep::Random { seed: 7 }, 64).expect("valid");
        let b = choose_kept(&Keep::Random { seed: 7 }, 64).expect("valid");
        let c = choose_kept(&Keep::Random { seed: 8 }, 64).expect("valid");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(!a.is_empty() && a.len() < 64);
    }

    #[test]
    fn keep_rejects_positions_past_the_pending_list() {
        assert!(choose_kept(&Keep::Prefix(3), 2).is_err());
        assert!(choose_kept(&Keep::Subset(vec![0, 5]), 5).is_err());
        assert_eq!(
            choose_kept(&Keep::Subset(vec![3, 1, 3]), 5).expect("valid"),
            vec![1, 3]
        );
    }

    #[test]
    fn random_tear_is_a_proper_nonempty_subset() {
        let pending = [info(8 * 512)];
        for seed in 0..200 {
            let t = choose_tear(
                &Tear {
                    target: TearTarget::LastKept,
                    sectors: SectorPick::Random { seed },
                },
                &[0],
                &pending,
            )
            .expect("valid tear");
            assert!(!t.landed.is_empty() && t.landed.len() < 8, "seed {seed}");
        }
    }

    #[test]
    fn tear_refuses_single_sector_and_unkept_writes() {
        let pending = [info(512), info(4096)];
        let tear = |target| Tear {
            target,
            sectors: SectorPick::Prefix(1),
        };
        assert!(choose_tear(&tear(TearTarget::Index(0)), &[0, 1], &pending).is_err());
        assert!(choose_tear(&tear(TearTarget::Index(1)), &[0], &pending).is_err());
        assert!(choose_tear(&tear(TearTarget::LastKept), &[], &pending).is_err());
        let ok = choose_tear(&tear(TearTarget::LastKept), &[0, 1], &pending).expect("valid");
        assert_eq!((ok.position, ok.landed, ok.sectors), (1, vec![0], 8));
    }
}
