//! One job clone's I/O loop: fio's `thread_main` / `do_io` with its counting rules.
//!
//! Per pass the clone issues I/O until the pass's bytes are issued or every file is done (a
//! time-based job starts new passes until its runtime is over); before each I/O it asks
//! whether an fsync/fdatasync is due (`get_rw_ddir`): the job writes, the previous I/O was
//! not a sync, and the write count is a non-zero multiple of `fsync=`. Since that question is
//! asked before the *next* I/O, no sync follows the last write, so 128 writes with `fsync=1`
//! give 127 fsyncs, exactly as fio. Mixed jobs pick a direction with `rwmixread` and hold it
//! for a number of I/Os fio's `set_rwmix_bytes` computes.
//!
//! Accounting follows `td_io_queue` and `account_io_completion`: an fdatasync is counted in
//! fio's `total_io_u[DDIR_DATASYNC]`, which is one past the end of that array and lands in
//! `short_io_u[READ]` — so fdatasyncs show up as "short" reads in fio's output (the capture
//! `fio_randrw_group_normal.txt` shows `short=118` for 118 fdatasyncs) and fiolike keeps that.
//!
//! Engines: `sync` (lseek + write), `psync` (pwrite), `pvsync` (pwritev) run each I/O inline;
//! `libaio`, `io_uring` and `fslab` submit to the target's [`IoQueue`] with up to `iodepth` in
//! flight and reap when it is full (syncs drain the queue first where the queue cannot hold
//! them, as fio's libaio engine does).

use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::files::FioFile;
use super::random::{RandMap, Rng, between};
use crate::backend::queue::{IoBuf, IoCompletion, IoKind, IoQueue, IoRequest, QueueKind};
use crate::backend::{Access, Errno, Fd, OpenFlags, Target, TargetError};
use crate::workload::fio::job::{Ddir, IoEngineKind, JobSpec};
use crate::workload::fio::stats::{JobLog, LogKind, LogSample, ThreadStats};

/// What the coordinator can see of a running clone.
#[derive(Debug, Default)]
pub struct CloneProgress {
    /// Bytes done per direction (read, write, trim).
    pub bytes: [AtomicU64; 3],
    /// I/Os done per direction.
    pub ios: [AtomicU64; 3],
    /// The clone has finished.
    pub finished: AtomicBool,
    /// Raised by the coordinator to ask for a snapshot of the statistics.
    pub snapshot_wanted: AtomicU64,
    /// The latest snapshot (generation, figures).
    pub snapshot: Mutex<Option<(u64, ThreadStats)>>,
}

/// A sync or an I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Rw(Ddir),
    Fsync,
    Fdatasync,
}

/// What fio tracks per in-flight I/O (`io_u`).
#[derive(Debug, Clone, Copy)]
struct Unit {
    op: Op,
    file: usize,
    len: u64,
    start: Instant,
    issue: Instant,
}

enum Engine {
    Sync,
    Psync,
    Pvsync,
    Queue(Box<dyn IoQueue>),
}

/// How a clone's run ended, besides its figures.
#[derive(Debug)]
pub struct CloneOutcome {
    /// The figures.
    pub stats: ThreadStats,
    /// Its logs.
    pub logs: Vec<JobLog>,
}

/// A log being gathered, averaged over `log_avg_msec` windows when that is set.
struct LogCollector {
    log: JobLog,
    avg_msec: u64,
    window: [(u64, u64); 3],
    window_start: [u64; 3],
}

impl LogCollector {
    fn new(kind: LogKind, prefix: &str, spec: &JobSpec, thread_number: u32) -> LogCollector {
        let prefix = if prefix.is_empty() {
            spec.name.clone()
        } else {
            prefix.to_string()
        };
        LogCollector {
            log: JobLog {
                kind,
                prefix,
                thread_number,
                per_job: spec.per_job_logs,
                samples: Vec::new(),
            },
            avg_msec: spec.log_avg_msec,
            window: [(0, 0); 3],
            window_start: [0; 3],
        }
    }

    /// fio's `add_log_sample`: log directly, or average per window and log the rounded mean
    /// when the window has passed.
    fn add(&mut self, elapsed_ms: u64, value: u64, ddir: usize, bs: u64) {
        if self.avg_msec == 0 {
            self.log.samples.push(LogSample {
                time_ms: elapsed_ms,
                value,
                ddir: ddir as u8,
                bs,
            });
            return;
        }
        if self.log.samples.is_empty() && self.window[ddir].1 == 0 && self.window_start[ddir] == 0 {
            self.window_start[ddir] = elapsed_ms;
        }
        let w = &mut self.window[ddir];
        w.0 += value;
        w.1 += 1;
        if elapsed_ms.saturating_sub(self.window_start[ddir]) + 1 >= self.avg_msec {
            self.flush(elapsed_ms, ddir);
            self.window_start[ddir] = elapsed_ms - elapsed_ms % self.avg_msec;
        }
    }

    fn flush(&mut self, elapsed_ms: u64, ddir: usize) {
        let (sum, n) = self.window[ddir];
        if n > 0 {
            self.log.samples.push(LogSample {
                time_ms: elapsed_ms,
                value: ((sum as f64 / n as f64) + 0.5) as u64,
                ddir: ddir as u8,
                bs: 0,
            });
        }
        self.window[ddir] = (0, 0);
    }

    fn finish(mut self, elapsed_ms: u64) -> JobLog {
        if self.avg_msec > 0 {
            for d in 0..3 {
                self.flush(elapsed_ms, d);
            }
        }
        self.log
    }
}

/// Everything one clone needs to run.
pub struct CloneSetup {
    /// The job's options.
    pub spec: Arc<JobSpec>,
    /// Its reporting group.
    pub groupid: u32,
    /// Which clone (0-based).
    pub clone: u32,
    /// fio's thread number (1-based, for log names).
    pub thread_number: u32,
    /// The files, laid out.
    pub files: Vec<FioFile>,
    /// Bytes per pass.
    pub size: u64,
    /// The target.
    pub target: Arc<dyn Target>,
    /// Set to stop every clone (Ctrl-C).
    pub interrupt: Arc<AtomicBool>,
    /// What the coordinator sees.
    pub progress: Arc<CloneProgress>,
}

/// Resource usage of the calling thread (`getrusage(RUSAGE_THREAD)`).
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    usr_us: u64,
    sys_us: u64,
    ctx: u64,
    minf: u64,
    majf: u64,
}

fn thread_usage() -> Usage {
    // SAFETY: ru is plain data that getrusage fills; RUSAGE_THREAD is valid on Linux.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Usage {
        usr_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
        ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        minf: ru.ru_minflt as u64,
        majf: ru.ru_majflt as u64,
    }
}

fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}

fn ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// fio's depth buckets for `io_u_map` (by the depth at submission).
fn depth_bucket(depth: u64) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's buckets for submit/complete batch sizes (`__io_u_mark_map`).
fn batch_bucket(nr: u64) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// A running clone.
pub struct Worker {
    spec: Arc<JobSpec>,
    clone: u32,
    files: Vec<FioFile>,
    size: u64,
    target: Arc<dyn Target>,
    interrupt: Arc<AtomicBool>,
    progress: Arc<CloneProgress>,
    engine: Engine,
    stats: ThreadStats,
    offsets: Rng,
    mix: Rng,
    /// Write buffers per direction (sync engines), filled with random data once.
    bufs: [IoBuf; 2],
    /// Free buffers for the queue engines.
    pool: Vec<IoBuf>,
    inflight: std::collections::HashMap<u64, Unit>,
    next_token: u64,
    io_issues: [u64; 3],
    pass_issue_bytes: u64,
    total_bytes: [u64; 3],
    last_was_sync: bool,
    rwmix_ddir: Ddir,
    rwmix_issues: u64,
    seq_countdown: u64,
    next_file: usize,
    last_write_file: usize,
    epoch: Instant,
    pass_start: Instant,
    elapsed_us: [u64; 3],
    ramp_over: bool,
    usage_start: Usage,
    loops_left: u32,
    terminate: bool,
    error: Option<(Errno, String)>,
    // bw/iops sampling (fio's helper thread, done inline after completions).
    bw_sample_time: Instant,
    iops_sample_time: Instant,
    sample_bytes: [u64; 3],
    sample_blocks: [u64; 3],
    bw_avg_ms: u64,
    iops_avg_ms: u64,
    bw_log: Option<LogCollector>,
    iops_log: Option<LogCollector>,
    lat_logs: Option<[LogCollector; 3]>,
    blocks: [u64; 3],
    snapshot_seen: u64,
}

impl Worker {
    /// Prepare a clone (opens its queue, fills its buffers).
    pub fn new(setup: CloneSetup) -> Result<Worker, (Errno, String)> {
        let spec = Arc::clone(&setup.spec);
        let seed = if spec.randrepeat {
            spec.randseed
        } else {
            // SAFETY: plain syscall.
            let pid = u64::from(unsafe { libc::getpid() } as u32);
            pid ^ ns(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default())
        };
        let stream = seed ^ (u64::from(setup.thread_number) << 32);
        let mut fill = Rng::new(stream ^ 0xb0f);
        let engine = match spec.ioengine {
            IoEngineKind::Sync => Engine::Sync,
            IoEngineKind::Psync => Engine::Psync,
            IoEngineKind::Pvsync => Engine::Pvsync,
            kind => {
                let qk = match kind {
                    IoEngineKind::Libaio => QueueKind::Libaio,
                    IoEngineKind::IoUring => QueueKind::IoUring,
                    _ => QueueKind::Threads,
                };
                let q = Arc::clone(&setup.target)
                    .io_queue(qk, spec.iodepth)
                    .map_err(|e| (e.errno, format!("io engine {} init: {e}", kind.name())))?;
                Engine::Queue(q)
            }
        };
        let mk = |len: u64, rng: &mut Rng| {
            let mut b = IoBuf::zeroed(len as usize);
            rng.fill(&mut b);
            b
        };
        let bufs = [mk(spec.bs[0], &mut fill), mk(spec.bs[1], &mut fill)];
        let pool = match engine {
            Engine::Queue(_) => (0..spec.iodepth)
                .map(|_| mk(spec.max_bs(), &mut fill))
                .collect(),
            _ => Vec::new(),
        };
        let mut stats = ThreadStats::new(&spec.name, setup.groupid);
        stats.description = spec.description.clone();
        stats.kb_base = spec.kb_base;
        stats.unit_base = spec.unit_base;
        stats.latency_depth = spec.iodepth;
        stats.job_options = spec.given.clone();
        stats.pid = gettid();
        let per_unit_bw = spec.bw_log.is_some() && spec.log_avg_msec == 0;
        let bw_avg_ms = if spec.bw_log.is_some() && spec.log_avg_msec > 0 {
            spec.log_avg_msec
        } else if per_unit_bw {
            0
        } else {
            500
        };
        let iops_avg_ms = if spec.iops_log.is_some() {
            spec.log_avg_msec
        } else {
            500
        };
        let now = Instant::now();
        let tn = setup.thread_number;
        let bw_log = spec
            .bw_log
            .as_ref()
            .map(|l| LogCollector::new(LogKind::Bw, &l.prefix, &spec, tn));
        let iops_log = spec
            .iops_log
            .as_ref()
            .map(|l| LogCollector::new(LogKind::Iops, &l.prefix, &spec, tn));
        let lat_logs = spec.lat_log.as_ref().map(|l| {
            [
                LogCollector::new(LogKind::Lat, &l.prefix, &spec, tn),
                LogCollector::new(LogKind::Slat, &l.prefix, &spec, tn),
                LogCollector::new(LogKind::Clat, &l.prefix, &spec, tn),
            ]
        });
        let loops_left = spec.loops;
        Ok(Worker {
            clone: setup.clone,
            files: setup.files,
            size: setup.size,
            target: setup.target,
            interrupt: setup.interrupt,
            progress: setup.progress,
            engine,
            stats,
            offsets: Rng::new(stream),
            mix: Rng::new(stream ^ 0x5eed),
            bufs,
            pool,
            inflight: std::collections::HashMap::new(),
            next_token: 0,
            io_issues: [0; 3],
            pass_issue_bytes: 0,
            total_bytes: [0; 3],
            last_was_sync: false,
            rwmix_ddir: Ddir::Read,
            rwmix_issues: 0,
            seq_countdown: 1,
            next_file: 0,
            last_write_file: 0,
            epoch: now,
            pass_start: now,
            elapsed_us: [0; 3],
            ramp_over: spec.ramp_time_us == 0,
            usage_start: Usage::default(),
            loops_left,
            terminate: false,
            error: None,
            bw_sample_time: now,
            iops_sample_time: now,
            sample_bytes: [0; 3],
            sample_blocks: [0; 3],
            bw_avg_ms,
            iops_avg_ms,
            bw_log,
            iops_log,
            lat_logs,
            blocks: [0; 3],
            snapshot_seen: 0,
            spec,
        })
    }

    fn fail(&mut self, errno: Errno, what: String) {
        if self.error.is_none() {
            self.error = Some((errno, what));
        }
        self.terminate = true;
    }

    fn open_files(&mut self) -> bool {
        let flags = OpenFlags {
            access: if self.spec.rw.write {
                Access::ReadWrite
            } else {
                Access::Read
            },
            create: self.spec.rw.write || self.spec.create_on_open,
            direct: self.spec.direct,
            ..OpenFlags::default()
        };
        for i in 0..self.files.len() {
            let path = self.files[i].path.clone();
            match self.target.open(&path, flags, 0o600) {
                Ok(fd) => self.files[i].fd = Some(fd),
                Err(e) => {
                    self.fail(
                        e.errno,
                        format!("file:{}, func=open(), error={}", path.display(), e),
                    );
                    return false;
                }
            }
        }
        true
    }

    fn close_files(&mut self) {
        for i in 0..self.files.len() {
            if let Some(fd) = self.files[i].fd.take()
                && let Err(e) = self.target.close(fd)
            {
                let what = format!("func=close(), error={e}");
                self.fail(e.errno, what);
            }
        }
    }

    fn in_ramp(&self) -> bool {
        !self.ramp_over
    }

    fn elapsed_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// fio's `ramp_time_over`: at the end of the ramp every statistic restarts.
    fn check_ramp(&mut self, now: Instant) {
        if self.ramp_over {
            return;
        }
        if ns(now - self.epoch) / 1000 < self.spec.ramp_time_us {
            return;
        }
        self.ramp_over = true;
        let fresh = ThreadStats::new(&self.spec.name, self.stats.groupid);
        let keep = std::mem::replace(&mut self.stats, fresh);
        self.stats.description = keep.description;
        self.stats.kb_base = keep.kb_base;
        self.stats.unit_base = keep.unit_base;
        self.stats.latency_depth = keep.latency_depth;
        self.stats.job_options = keep.job_options;
        self.stats.pid = keep.pid;
        self.io_issues = [0; 3];
        self.total_bytes = [0; 3];
        self.blocks = [0; 3];
        self.elapsed_us = [0; 3];
        self.last_was_sync = false;
        self.rwmix_issues = 0;
        self.epoch = now;
        self.pass_start = now;
        self.bw_sample_time = now;
        self.iops_sample_time = now;
        self.sample_bytes = [0; 3];
        self.sample_blocks = [0; 3];
        self.usage_start = thread_usage();
    }

    fn runtime_exceeded(&self, now: Instant) -> bool {
        !self.in_ramp()
            && self.spec.runtime_us > 0
            && ns(now - self.epoch) / 1000 >= self.spec.runtime_us
    }

    /// fio's `keep_running`.
    fn keep_running(&mut self) -> bool {
        if self.terminate || self.error.is_some() {
            return false;
        }
        if self.spec.time_based {
            return true;
        }
        if self.loops_left > 0 {
            self.loops_left -= 1;
            return true;
        }
        let limit = self.spec.io_size.unwrap_or(self.size);
        let done: u64 = self.total_bytes.iter().sum();
        if done < limit {
            if limit - done < self.spec.max_bs() {
                return false;
            }
            return self.spec.io_size.is_some();
        }
        false
    }

    /// Run the clone to the end.
    pub fn run(mut self) -> CloneOutcome {
        self.epoch = Instant::now();
        self.bw_sample_time = self.epoch;
        self.iops_sample_time = self.epoch;
        self.usage_start = thread_usage();
        if self.open_files() {
            let mut first = true;
            while self.keep_running() {
                self.pass_start = Instant::now();
                if !first {
                    self.clear_io_state();
                }
                first = false;
                self.do_io();
                let pass_us = ns(self.pass_start.elapsed()) / 1000;
                for d in 0..2 {
                    let issues = if d == 0 {
                        self.spec.rw.read
                    } else {
                        self.spec.rw.write
                    };
                    if issues && self.stats.dir[d].io_bytes > 0 {
                        self.elapsed_us[d] += pass_us;
                        self.stats.dir[d].runtime_ms = self.elapsed_us[d].div_ceil(1000);
                    }
                }
                if self.interrupt.load(Ordering::Relaxed) {
                    self.terminate = true;
                }
                if self.terminate || self.error.is_some() {
                    break;
                }
            }
            self.close_files();
        }
        if self.spec.unlink {
            for f in &self.files {
                let _ = self.target.unlink(&f.path);
            }
        }
        let usage = thread_usage();
        self.stats.usr_ms = usage.usr_us.saturating_sub(self.usage_start.usr_us) / 1000;
        self.stats.sys_ms = usage.sys_us.saturating_sub(self.usage_start.sys_us) / 1000;
        self.stats.ctx = usage.ctx.saturating_sub(self.usage_start.ctx);
        self.stats.minf = usage.minf.saturating_sub(self.usage_start.minf);
        self.stats.majf = usage.majf.saturating_sub(self.usage_start.majf);
        self.stats.total_run_time_ms = self.elapsed_ms();
        if let Some((errno, what)) = self.error.take() {
            self.stats.error = errno as i32;
            self.stats.verror = what;
        }
        let elapsed = self.elapsed_ms();
        let mut logs = Vec::new();
        if let Some(l) = self.bw_log.take() {
            logs.push(l.finish(elapsed));
        }
        if let Some(l) = self.iops_log.take() {
            logs.push(l.finish(elapsed));
        }
        if let Some(ls) = self.lat_logs.take() {
            for l in ls {
                logs.push(l.finish(elapsed));
            }
        }
        self.progress.finished.store(true, Ordering::Release);
        CloneOutcome {
            stats: self.stats,
            logs,
        }
    }

    /// Reset per-pass state (fio's `clear_io_state`), and unlink with `unlink_each_loop`.
    fn clear_io_state(&mut self) {
        if self.spec.unlink_each_loop {
            self.close_files();
            for f in &self.files {
                let _ = self.target.unlink(&f.path);
            }
            if !self.open_files() {
                return;
            }
        }
        for f in &mut self.files {
            f.last_pos = [f.file_offset; 2];
            f.done = false;
            if let Some(m) = &mut f.randmap {
                m.clear();
            }
        }
        self.pass_issue_bytes = 0;
        self.last_was_sync = false;
        self.rwmix_issues = 0;
    }

    /// fio's `get_rw_ddir`.
    fn next_op(&mut self) -> Op {
        if !self.last_was_sync && self.spec.rw.write {
            let w = self.io_issues[1];
            if self.spec.fsync > 0 && w > 0 && w.is_multiple_of(self.spec.fsync) {
                return Op::Fsync;
            }
            if self.spec.fdatasync > 0 && w > 0 && w.is_multiple_of(self.spec.fdatasync) {
                return Op::Fdatasync;
            }
        }
        if self.spec.rw.mixed() {
            let cur = self.rwmix_ddir.index();
            if self.io_issues[cur] >= self.rwmix_issues {
                let v = between(&mut self.mix, 1, 100);
                let ddir = if v <= u64::from(self.spec.rwmixread) {
                    Ddir::Read
                } else {
                    Ddir::Write
                };
                if ddir != self.rwmix_ddir {
                    // set_rwmix_bytes, computed from the direction being left.
                    let other = if cur == 0 {
                        100 - u64::from(self.spec.rwmixread)
                    } else {
                        u64::from(self.spec.rwmixread)
                    };
                    self.rwmix_issues = self.io_issues[cur] * other / 100;
                }
                self.rwmix_ddir = ddir;
            }
            return Op::Rw(self.rwmix_ddir);
        }
        Op::Rw(if self.spec.rw.read {
            Ddir::Read
        } else {
            Ddir::Write
        })
    }

    /// The next file (round robin over files not done) and offset for `ddir`, fio's
    /// `get_next_file` + `get_next_offset`. None when every file is done.
    fn next_offset(&mut self, ddir: Ddir) -> Option<(usize, u64, u64)> {
        let d = ddir.index();
        let len = self.spec.bs[d];
        let n = self.files.len();
        let random = self.spec.rw.random;
        let use_random = random && {
            self.seq_countdown -= 1;
            if self.seq_countdown == 0 {
                self.seq_countdown = self.spec.rw_modifier.seq_nr.max(1);
                true
            } else {
                false
            }
        };
        for step in 0..n {
            let i = (self.next_file + step) % n;
            if self.files[i].done {
                continue;
            }
            let min_bs = self.spec.min_bs();
            let time_based_single = self.spec.time_based && n == 1;
            let f = &mut self.files[i];
            let end = f.file_offset + f.io_size;
            let offset = if use_random {
                if self.spec.norandommap {
                    let blocks = f.io_size / min_bs;
                    (blocks > 0).then(|| f.file_offset + self.offsets.below(blocks) * min_bs)
                } else {
                    let map = f
                        .randmap
                        .get_or_insert_with(|| RandMap::new(f.io_size / min_bs));
                    let mut found = None;
                    while let Some(b) = map.take(&mut self.offsets) {
                        let off = f.file_offset + b * min_bs;
                        if off + len <= end {
                            found = Some(off);
                            break;
                        }
                    }
                    found
                }
            } else {
                let mut pos = f.last_pos[d.min(1)];
                if pos >= end && time_based_single {
                    pos = f.file_offset;
                }
                if pos > f.file_offset && self.spec.rw_modifier.seq_add > 0 {
                    pos += self.spec.rw_modifier.seq_add;
                    if pos >= end && time_based_single {
                        pos = f.file_offset;
                    }
                }
                (pos + len <= end).then_some(pos)
            };
            match offset {
                Some(off) => {
                    f.last_pos[d.min(1)] = off + len;
                    self.next_file = (i + 1) % n;
                    return Some((i, off, len));
                }
                None => f.done = true,
            }
        }
        None
    }

    fn account_issue(&mut self, op: Op, len: u64) {
        match op {
            Op::Rw(d) => {
                self.io_issues[d.index()] += 1;
                self.pass_issue_bytes += len;
                self.last_was_sync = false;
            }
            Op::Fsync | Op::Fdatasync => self.last_was_sync = true,
        }
    }

    /// `td_io_queue`'s counters for an I/O queued (`depth` in flight including it).
    fn count_queued(&mut self, op: Op, depth: u64, counted: bool) {
        self.stats.io_u_submit[batch_bucket(1)] += 1;
        self.stats.total_submit += 1;
        if !counted {
            return;
        }
        self.stats.io_u_map[depth_bucket(depth)] += 1;
        match op {
            Op::Rw(d) => self.stats.dir[d.index()].total_ios += 1,
            Op::Fsync => self.stats.sync_total += 1,
            // fio writes total_io_u[DDIR_DATASYNC], one past total_io_u: short_io_u[READ].
            Op::Fdatasync => self.stats.dir[0].short_ios += 1,
        }
    }

    /// `account_io_completion` and the bookkeeping of `io_completed`.
    fn complete(&mut self, u: Unit, result: Result<usize, TargetError>, done: Instant) {
        let n = match result {
            Ok(n) => n as u64,
            Err(e) => {
                let call = match u.op {
                    Op::Rw(Ddir::Read) => "read",
                    Op::Rw(_) => "write",
                    Op::Fsync => "fsync",
                    Op::Fdatasync => "fdatasync",
                };
                let path = self.files[u.file].path.display().to_string();
                self.fail(
                    e.errno,
                    format!("file:{path}, func=io_u error ({call}), error={e}"),
                );
                return;
            }
        };
        let clat = ns(done - u.issue);
        let lat = ns(done - u.start);
        let elapsed_ms = ns(done - self.epoch) / 1_000_000;
        match u.op {
            Op::Rw(d) => {
                let di = d.index();
                if n < u.len {
                    self.stats.dir[di].short_ios += 1;
                }
                let ds = &mut self.stats.dir[di];
                ds.io_bytes += n;
                ds.lat.add(lat);
                ds.clat.add(clat);
                ds.clat_hist.record(clat);
                self.stats.mark_latency(clat);
                self.total_bytes[di] += n;
                self.blocks[di] += 1;
                self.progress.bytes[di].fetch_add(n, Ordering::Relaxed);
                self.progress.ios[di].fetch_add(1, Ordering::Relaxed);
                if let Some(l) = &mut self.lat_logs {
                    l[0].add(elapsed_ms, lat, di, u.len);
                    l[2].add(elapsed_ms, clat, di, u.len);
                }
                if self.bw_avg_ms == 0 {
                    let rate = (n * 1_000_000).checked_div(clat).unwrap_or(0);
                    self.stats.dir[di].bw.add(rate);
                    if let Some(l) = &mut self.bw_log {
                        l.add(elapsed_ms, rate, di, n);
                    }
                }
                if self.spec.iops_log.is_some() && self.iops_avg_ms == 0 {
                    self.stats.dir[di].iops.add(1);
                    if let Some(l) = &mut self.iops_log {
                        l.add(elapsed_ms, 1, di, n);
                    }
                }
            }
            Op::Fsync | Op::Fdatasync => {
                self.stats.sync.add(clat);
                self.stats.sync_hist.record(clat);
            }
        }
        self.check_ramp(done);
        self.sample(done);
        let wanted = self.progress.snapshot_wanted.load(Ordering::Relaxed);
        if wanted != self.snapshot_seen {
            self.snapshot_seen = wanted;
            let snap = self.snapshot(done);
            *self.progress.snapshot.lock() = Some((wanted, snap));
        }
    }

    /// The figures so far, with the current pass's runtime included (for --status-interval).
    fn snapshot(&self, now: Instant) -> ThreadStats {
        let mut s = self.stats.clone();
        let pass_us = ns(now - self.pass_start) / 1000;
        for d in 0..2 {
            if s.dir[d].io_bytes > 0 {
                s.dir[d].runtime_ms = (self.elapsed_us[d] + pass_us).div_ceil(1000);
            }
        }
        s.total_run_time_ms = ns(now - self.epoch) / 1_000_000;
        s
    }

    /// Bandwidth and IOPS samples every `bw_avg_time` / `iops_avg_time` (fio's helper
    /// thread, `__add_samples`), taken here after completions.
    fn sample(&mut self, now: Instant) {
        if self.bw_avg_ms > 0 && self.window_due(self.bw_sample_time, self.bw_avg_ms, now) {
            self.add_samples(true, now);
            self.bw_sample_time = now;
        }
        if self.iops_avg_ms > 0 && self.window_due(self.iops_sample_time, self.iops_avg_ms, now) {
            self.add_samples(false, now);
            self.iops_sample_time = now;
        }
    }

    /// fio samples when the window has passed, with one millisecond of slack.
    fn window_due(&self, since: Instant, avg_ms: u64, now: Instant) -> bool {
        let spent = ns(now - since) / 1_000_000;
        !(spent < avg_ms && avg_ms - spent > 1)
    }

    fn add_samples(&mut self, bw: bool, now: Instant) {
        let since = if bw {
            self.bw_sample_time
        } else {
            self.iops_sample_time
        };
        let spent = ns(now - since) / 1_000_000;
        let elapsed_ms = ns(now - self.epoch) / 1_000_000;
        for d in 0..3 {
            let (this, prev) = if bw {
                (self.total_bytes[d], self.sample_bytes[d])
            } else {
                (self.blocks[d], self.sample_blocks[d])
            };
            let delta = this - prev;
            if delta == 0 {
                continue;
            }
            let rate = match (spent, bw) {
                (0, _) => 0,
                (_, true) => delta * 1000 / spent / 1024,
                (_, false) => delta * 1000 / spent,
            };
            let bs = self.spec.bs[d];
            if bw {
                self.stats.dir[d].bw.add(rate);
                if let Some(l) = &mut self.bw_log {
                    l.add(elapsed_ms, rate, d, bs);
                }
                self.sample_bytes[d] = this;
            } else {
                self.stats.dir[d].iops.add(rate);
                if let Some(l) = &mut self.iops_log {
                    l.add(elapsed_ms, rate, d, bs);
                }
                self.sample_blocks[d] = this;
            }
        }
    }

    fn file_fd(&self, i: usize) -> Option<Fd> {
        self.files.get(i).and_then(|f| f.fd)
    }

    /// One I/O or sync with a synchronous engine.
    fn issue_sync_engine(&mut self, op: Op, file: usize, offset: u64, len: u64) {
        let Some(fd) = self.file_fd(file) else {
            return;
        };
        let start = Instant::now();
        self.account_issue(op, len);
        let issue = Instant::now();
        let d = match op {
            Op::Rw(d) => d.index().min(1),
            _ => 0,
        };
        let result = match op {
            Op::Fsync => self.target.fsync(fd).map(|()| 0),
            Op::Fdatasync => self.target.fdatasync(fd).map(|()| 0),
            Op::Rw(ddir) => {
                let buf = &mut self.bufs[d];
                let len = len as usize;
                match (&self.engine, ddir) {
                    (Engine::Sync, Ddir::Read) => self
                        .target
                        .lseek(fd, offset)
                        .and_then(|_| self.target.read(fd, &mut buf[..len])),
                    (Engine::Sync, _) => self
                        .target
                        .lseek(fd, offset)
                        .and_then(|_| self.target.write(fd, &buf[..len])),
                    (Engine::Pvsync, Ddir::Read) => {
                        self.target
                            .preadv(fd, &mut [IoSliceMut::new(&mut buf[..len])], offset)
                    }
                    (Engine::Pvsync, _) => {
                        self.target
                            .pwritev(fd, &[IoSlice::new(&buf[..len])], offset)
                    }
                    (_, Ddir::Read) => self.target.pread(fd, &mut buf[..len], offset),
                    (_, _) => self.target.pwrite(fd, &buf[..len], offset),
                }
            }
        };
        let done = Instant::now();
        self.count_queued(op, 1, true);
        self.stats.io_u_complete[batch_bucket(1)] += 1;
        self.stats.total_complete += 1;
        self.complete(
            Unit {
                op,
                file,
                len,
                start,
                issue,
            },
            result,
            done,
        );
    }

    fn queue(&mut self) -> Option<&mut Box<dyn IoQueue>> {
        match &mut self.engine {
            Engine::Queue(q) => Some(q),
            _ => None,
        }
    }

    /// Reap at least `min` completions from the queue and account them.
    fn reap(&mut self, min: usize) {
        let depth = self.spec.iodepth as usize;
        let mut out: Vec<IoCompletion> = Vec::new();
        let got = match self.queue() {
            Some(q) => q.reap(min, depth, &mut out),
            None => return,
        };
        let done = Instant::now();
        match got {
            Ok(n) => {
                self.stats.io_u_complete[batch_bucket(n as u64)] += 1;
                self.stats.total_complete += 1;
            }
            Err(e) => {
                self.fail(e.errno, format!("func=getevents, error={e}"));
                return;
            }
        }
        for c in out {
            if let Some(u) = self.inflight.remove(&c.token) {
                if matches!(u.op, Op::Rw(_)) {
                    self.pool.push(c.buf);
                }
                self.complete(u, c.result, done);
            }
        }
    }

    fn drain(&mut self) {
        while !self.inflight.is_empty() && self.error.is_none() {
            let n = self.inflight.len();
            self.reap(n);
        }
    }

    /// One I/O or sync with a queue engine.
    fn issue_queued(&mut self, op: Op, file: usize, offset: u64, len: u64) {
        let Some(fd) = self.file_fd(file) else {
            return;
        };
        let queues_syncs = self.queue().is_some_and(|q| q.queues_syncs());
        if matches!(op, Op::Fsync | Op::Fdatasync) && !queues_syncs {
            // fio's libaio: a sync is BUSY until the queue drains, then runs inline.
            self.drain();
            self.issue_sync_engine(op, file, offset, len);
            return;
        }
        if self.inflight.len() >= self.spec.iodepth as usize {
            self.reap(1);
        }
        let start = Instant::now();
        let (kind, buf) = match op {
            Op::Rw(d) => {
                let mut buf = self
                    .pool
                    .pop()
                    .unwrap_or_else(|| IoBuf::zeroed(self.spec.max_bs() as usize));
                if buf.len() != len as usize {
                    // Pool buffers hold the largest block; a smaller I/O gets its own.
                    let mut b = IoBuf::zeroed(len as usize);
                    let n = b.len().min(buf.len());
                    b[..n].copy_from_slice(&buf[..n]);
                    buf = b;
                }
                (
                    if d == Ddir::Read {
                        IoKind::Read
                    } else {
                        IoKind::Write
                    },
                    buf,
                )
            }
            Op::Fsync => (IoKind::Fsync, IoBuf::zeroed(0)),
            Op::Fdatasync => (IoKind::Fdatasync, IoBuf::zeroed(0)),
        };
        self.account_issue(op, len);
        let token = self.next_token;
        self.next_token += 1;
        let req = IoRequest {
            token,
            fd,
            kind,
            offset,
            buf,
        };
        let submitted = match self.queue() {
            Some(q) => q.submit(req),
            None => return,
        };
        if let Err(e) = submitted {
            self.fail(e.errno, format!("func=io_submit, error={e}"));
            return;
        }
        let issue = Instant::now();
        let depth = self.inflight.len() as u64 + 1;
        self.count_queued(op, depth, true);
        if let Op::Rw(d) = op {
            // Submission latency is recorded for queued reads and writes only.
            let slat = ns(issue - start);
            self.stats.dir[d.index()].slat.add(slat);
            if let Some(l) = &mut self.lat_logs {
                let elapsed_ms = ns(issue - self.epoch) / 1_000_000;
                l[1].add(elapsed_ms, slat, d.index(), len);
            }
        }
        self.inflight.insert(
            token,
            Unit {
                op,
                file,
                len,
                start,
                issue,
            },
        );
    }

    fn issue(&mut self, op: Op, file: usize, offset: u64, len: u64) {
        if matches!(self.engine, Engine::Queue(_)) {
            self.issue_queued(op, file, offset, len);
        } else {
            self.issue_sync_engine(op, file, offset, len);
        }
    }

    /// One pass (fio's `do_io`).
    fn do_io(&mut self) {
        loop {
            if self.terminate || self.error.is_some() {
                break;
            }
            if self.interrupt.load(Ordering::Relaxed) {
                self.terminate = true;
                break;
            }
            let now = Instant::now();
            if self.runtime_exceeded(now) {
                self.terminate = true;
                break;
            }
            if self.pass_issue_bytes >= self.size && !self.spec.time_based {
                break;
            }
            let op = self.next_op();
            match op {
                Op::Fsync | Op::Fdatasync => {
                    let f = self.last_write_file;
                    self.issue(op, f, 0, 0);
                }
                Op::Rw(d) => {
                    let Some((file, offset, len)) = self.next_offset(d) else {
                        break;
                    };
                    if d == Ddir::Write {
                        self.last_write_file = file;
                    }
                    self.issue(op, file, offset, len);
                }
            }
        }
        self.drain();
        if self.error.is_some() {
            return;
        }
        // fio's end-of-pass fsync (end_fsync / fsync_on_close): one per file, outside the
        // statistics (fio runs it in its FSYNCING state).
        if !self.last_was_sync
            && self.spec.rw.write
            && (self.spec.end_fsync || self.spec.fsync_on_close)
        {
            for i in 0..self.files.len() {
                if let Some(fd) = self.file_fd(i) {
                    self.stats.io_u_submit[batch_bucket(1)] += 1;
                    self.stats.total_submit += 1;
                    self.stats.io_u_complete[batch_bucket(1)] += 1;
                    self.stats.total_complete += 1;
                    if let Err(e) = self.target.fsync(fd) {
                        let path = self.files[i].path.display().to_string();
                        self.fail(e.errno, format!("file:{path}, func=end_fsync, error={e}"));
                        return;
                    }
                }
            }
            self.last_was_sync = true;
        }
    }

    /// Which clone this is.
    pub fn clone_index(&self) -> u32 {
        self.clone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Call, RecordingTarget};
    use crate::workload::fio::engine::files::{file_paths, lay_out, plan};
    use crate::workload::fio::options::apply_option;
    use std::path::Path;

    fn run_job(lines: &[&str]) -> (CloneOutcome, Vec<Call>) {
        let mut spec = JobSpec {
            name: "t".into(),
            ..JobSpec::default()
        };
        for l in lines {
            apply_option(&mut spec, l).unwrap();
        }
        let rec = Arc::new(RecordingTarget::in_memory(1 << 34));
        let target: Arc<dyn Target> = Arc::clone(&rec) as Arc<dyn Target>;
        let mut rng = Rng::new(1);
        let mut setup = plan(
            target.as_ref(),
            &spec,
            file_paths(&spec, 0, Path::new("/")),
            &mut rng,
        )
        .unwrap();
        lay_out(target.as_ref(), &spec, &mut setup, &mut rng).unwrap();
        rec.clear();
        let w = Worker::new(CloneSetup {
            spec: Arc::new(spec),
            groupid: 0,
            clone: 0,
            thread_number: 1,
            files: setup.files,
            size: setup.size,
            target,
            interrupt: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(CloneProgress::default()),
        })
        .unwrap();
        let out = w.run();
        (out, rec.calls())
    }

    #[test]
    fn fsync_every_write_skips_the_last_one() {
        let (out, calls) = run_job(&["rw=write", "bs=64k", "size=8m", "fsync=1", "directory=/d"]);
        let s = &out.stats;
        assert_eq!(s.dir[1].total_ios, 128);
        assert_eq!(s.sync_total, 127);
        assert_eq!(s.sync.samples, 127);
        assert_eq!(s.dir[1].io_bytes, 8 << 20);
        let fsyncs = calls
            .iter()
            .filter(|c| matches!(c, Call::Fsync { .. }))
            .count();
        assert_eq!(fsyncs, 127);
        // psync: pwrite at increasing offsets.
        let offsets: Vec<u64> = calls
            .iter()
            .filter_map(|c| match c {
                Call::Pwrite { offset, .. } => Some(*offset),
                _ => None,
            })
            .collect();
        assert_eq!(offsets.len(), 128);
        assert!(offsets.windows(2).all(|w| w[1] == w[0] + 65536));
        // Depth map counts syncs, as fio's 199.2%.
        assert_eq!(s.io_u_map[0], 255);
        assert_eq!(s.total_submit, 255);
    }

    #[test]
    fn fdatasync_counts_land_in_short_reads_and_end_fsync_is_not_counted() {
        let (out, calls) = run_job(&[
            "rw=write",
            "bs=4k",
            "size=64k",
            "fdatasync=4",
            "end_fsync=1",
            "directory=/d",
        ]);
        let s = &out.stats;
        assert_eq!(s.dir[1].total_ios, 16);
        assert_eq!(s.sync_total, 0, "fdatasyncs are not fsyncs");
        assert_eq!(s.sync.samples, 3);
        assert_eq!(
            s.dir[0].short_ios, 3,
            "fio's DDIR_DATASYNC overflow into short reads"
        );
        let datasyncs = calls
            .iter()
            .filter(|c| matches!(c, Call::Fdatasync { .. }))
            .count();
        assert_eq!(datasyncs, 3);
        let fsyncs = calls
            .iter()
            .filter(|c| matches!(c, Call::Fsync { .. }))
            .count();
        assert_eq!(fsyncs, 1, "the end_fsync");
    }

    #[test]
    fn random_writes_touch_every_block_once_and_sync_engine_seeks() {
        let (out, calls) = run_job(&[
            "rw=randwrite",
            "bs=4k",
            "size=1m",
            "ioengine=sync",
            "directory=/d",
        ]);
        assert_eq!(out.stats.dir[1].total_ios, 256);
        let mut offsets: Vec<u64> = calls
            .iter()
            .filter_map(|c| match c {
                Call::Lseek { offset, .. } => Some(*offset),
                _ => None,
            })
            .collect();
        let writes = calls
            .iter()
            .filter(|c| matches!(c, Call::Write { .. }))
            .count();
        assert_eq!(writes, 256);
        offsets.sort_unstable();
        offsets.dedup();
        assert_eq!(offsets.len(), 256, "each 4k block once");
    }

    #[test]
    fn mixed_jobs_split_size_between_directions() {
        let (out, _) = run_job(&[
            "rw=randrw",
            "rwmixread=70",
            "bs=4k",
            "size=4m",
            "directory=/d",
        ]);
        let s = &out.stats;
        let total = s.dir[0].io_bytes + s.dir[1].io_bytes;
        assert_eq!(total, 4 << 20);
        let reads = s.dir[0].total_ios as f64 / 1024.0;
        assert!((0.6..0.8).contains(&reads), "read share {reads}");
    }

    #[test]
    fn queue_engine_keeps_depth_and_records_slat() {
        let (out, calls) = run_job(&[
            "rw=write",
            "bs=4k",
            "size=1m",
            "ioengine=fslab",
            "iodepth=8",
            "fsync=16",
            "directory=/d",
        ]);
        let s = &out.stats;
        assert_eq!(s.dir[1].total_ios, 256);
        assert_eq!(s.dir[1].slat.samples, 256);
        assert_eq!(s.sync_total, 15);
        let writes = calls
            .iter()
            .filter(|c| matches!(c, Call::Pwrite { .. }))
            .count();
        assert_eq!(writes, 256);
        assert!(
            s.io_u_map[3] > 0,
            "depths of 8 were reached: {:?}",
            s.io_u_map
        );
        assert_eq!(out.stats.latency_depth, 8);
    }

    #[test]
    fn time_based_keeps_going_until_the_runtime() {
        let started = Instant::now();
        let (out, _) = run_job(&[
            "rw=write",
            "bs=4k",
            "size=64k",
            "time_based",
            "runtime=300ms",
            "directory=/d",
        ]);
        assert!(started.elapsed().as_millis() >= 300);
        assert!(out.stats.dir[1].io_bytes > 64 << 10, "several passes");
        assert!(out.stats.dir[1].runtime_ms >= 300);
    }

    #[test]
    fn loops_repeat_the_pass() {
        let (out, _) = run_job(&["rw=read", "bs=4k", "size=64k", "loops=3", "directory=/d"]);
        assert_eq!(out.stats.dir[0].io_bytes, 3 * (64 << 10));
    }

    #[test]
    fn logs_get_a_line_per_io_without_averaging() {
        let (out, _) = run_job(&[
            "rw=write",
            "bs=4k",
            "size=64k",
            "write_lat_log=x",
            "write_bw_log",
            "directory=/d",
        ]);
        let kinds: Vec<_> = out.logs.iter().map(|l| (l.kind, l.samples.len())).collect();
        assert_eq!(
            kinds,
            vec![
                (LogKind::Bw, 16),
                (LogKind::Lat, 16),
                (LogKind::Slat, 0),
                (LogKind::Clat, 16)
            ]
        );
        assert_eq!(out.logs[0].prefix, "t");
        assert_eq!(out.logs[1].prefix, "x");
        assert_eq!(out.stats.dir[1].bw.samples, 16, "per-I/O bandwidth samples");
    }
}
