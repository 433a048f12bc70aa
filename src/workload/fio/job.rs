//! One fio job as typed data: what a `[section]` (plus the defaults above it) asks for.
//!
//! [`JobSpec`] holds fio 3.33's defaults for every option fiolike implements; the option table
//! ([`super::options`]) fills it in from `key=value` text, in fio's priority order; and
//! [`JobSpec::check`] refuses combinations fio refuses (or that fiolike cannot honour) before
//! any file is touched. The engine reads only this type.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use super::number::{KbBase, SizeValue};

/// A data direction of fio (`DDIR_READ`, `DDIR_WRITE`, `DDIR_TRIM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ddir {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// Trims (reported as all-zero; fiolike does not issue trims).
    Trim = 2,
}

impl Ddir {
    /// The three directions in fio's order.
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];

    /// fio's lower-case name (`read`, `write`, `trim`).
    pub fn name(self) -> &'static str {
        match self {
            Ddir::Read => "read",
            Ddir::Write => "write",
            Ddir::Trim => "trim",
        }
    }

    /// The index into per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Which directions a job issues and whether offsets are random (`rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RwMode {
    /// Issues reads.
    pub read: bool,
    /// Issues writes.
    pub write: bool,
    /// Random offsets (a random map keeps each block to once per pass).
    pub random: bool,
}

impl RwMode {
    /// fio's name of the mode, as its banner prints it (`ddir_str`).
    pub fn name(self) -> &'static str {
        match (self.read, self.write, self.random) {
            (true, false, false) => "read",
            (false, true, false) => "write",
            (true, true, false) => "rw",
            (true, false, true) => "randread",
            (false, true, true) => "randwrite",
            (true, true, true) => "randrw",
            (false, false, _) => "none",
        }
    }

    /// Reads and writes mixed (`rw`, `randrw`).
    pub fn mixed(self) -> bool {
        self.read && self.write
    }
}

/// What `rw=write:N` adds after each I/O: a gap in bytes (sequential) or how many I/Os to issue
/// before a new random offset (random).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RwModifier {
    /// Bytes skipped after each sequential I/O.
    pub seq_add: u64,
    /// Sequential I/Os issued per random offset (1 = every I/O is random).
    pub seq_nr: u64,
}

/// How files are pre-allocated when laid out (`fallocate=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallocate {
    /// No call.
    None,
    /// posix_fallocate (fallocate with mode 0).
    Posix,
    /// fallocate with mode 0, falling back to none when unsupported (fio's Linux default).
    Native,
    /// fallocate with FALLOC_FL_KEEP_SIZE.
    Keep,
    /// ftruncate to the file size.
    Truncate,
}

impl Fallocate {
    /// fio's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Fallocate::None => "none",
            Fallocate::Posix => "posix",
            Fallocate::Native => "native",
            Fallocate::Keep => "keep",
            Fallocate::Truncate => "truncate",
        }
    }
}

/// The I/O engine (`ioengine=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngineKind {
    /// lseek + read/write.
    Sync,
    /// pread/pwrite (fio's Linux default).
    Psync,
    /// preadv/pwritev.
    Pvsync,
    /// Linux native AIO (io_submit/io_getevents); on labfs, fslab's submission queue.
    Libaio,
    /// io_uring; on labfs, fslab's submission queue.
    IoUring,
    /// fslab's submission queue served by worker threads, on any target.
    Fslab,
}

impl IoEngineKind {
    /// The name fio prints.
    pub fn name(self) -> &'static str {
        match self {
            IoEngineKind::Sync => "sync",
            IoEngineKind::Psync => "psync",
            IoEngineKind::Pvsync => "pvsync",
            IoEngineKind::Libaio => "libaio",
            IoEngineKind::IoUring => "io_uring",
            IoEngineKind::Fslab => "fslab",
        }
    }

    /// Whether the engine keeps several I/Os in flight (honours `iodepth`).
    pub fn is_async(self) -> bool {
        matches!(
            self,
            IoEngineKind::Libaio | IoEngineKind::IoUring | IoEngineKind::Fslab
        )
    }
}

/// Bits or bytes in bandwidth output (`unit_base=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitBase {
    /// Bytes (`unit_base=8`, and `0`, auto, which fio resolves to bytes).
    #[default]
    Bytes,
    /// Bits (`unit_base=1`).
    Bits,
}

/// One per-I/O log a job writes (`write_bw_log=`, `write_lat_log=`, `write_iops_log=`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRequest {
    /// File name prefix (empty: the job name).
    pub prefix: String,
}

/// A fully parsed job (one `[section]`, or a `--name` on the command line).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name (`name=` or the section title).
    pub name: String,
    /// `description=`.
    pub description: Option<String>,
    /// `rw=`.
    pub rw: RwMode,
    /// `rw=...:N`.
    pub rw_modifier: RwModifier,
    /// `rwmixread=` (percentage of reads in mixed jobs).
    pub rwmixread: u32,
    /// `bs=` per direction (read, write, trim).
    pub bs: [u64; 3],
    /// `size=` (per job clone), if given.
    pub size: Option<SizeValue>,
    /// `filesize=` range, if given.
    pub filesize: Option<(u64, u64)>,
    /// `nrfiles=`.
    pub nrfiles: u32,
    /// `io_size=`, if given.
    pub io_size: Option<u64>,
    /// `offset=`.
    pub offset: SizeValue,
    /// `fsync=N`: fsync after every N writes.
    pub fsync: u64,
    /// `fdatasync=N`.
    pub fdatasync: u64,
    /// `end_fsync=`.
    pub end_fsync: bool,
    /// `fsync_on_close=`.
    pub fsync_on_close: bool,
    /// `fallocate=`.
    pub fallocate: Fallocate,
    /// `direct=` (O_DIRECT).
    pub direct: bool,
    /// `ioengine=`.
    pub ioengine: IoEngineKind,
    /// `iodepth=`.
    pub iodepth: u32,
    /// `time_based`.
    pub time_based: bool,
    /// `runtime=` in microseconds (0: none).
    pub runtime_us: u64,
    /// `ramp_time=` in microseconds.
    pub ramp_time_us: u64,
    /// `directory=` (a `:`-separated list is spread over clones).
    pub directories: Vec<PathBuf>,
    /// `filename=` (`:`-separated; shared by all clones).
    pub filenames: Vec<String>,
    /// `numjobs=`.
    pub numjobs: u32,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `new_group`.
    pub new_group: bool,
    /// `stonewall`.
    pub stonewall: bool,
    /// `thread` (fio's banner counts threads and processes apart; fiolike always uses threads).
    pub thread: bool,
    /// `create_on_open=`.
    pub create_on_open: bool,
    /// `create_fsync=`.
    pub create_fsync: bool,
    /// `unlink=`.
    pub unlink: bool,
    /// `unlink_each_loop=`.
    pub unlink_each_loop: bool,
    /// `randrepeat=`.
    pub randrepeat: bool,
    /// `randseed=`.
    pub randseed: u64,
    /// `norandommap`.
    pub norandommap: bool,
    /// `overwrite=`.
    pub overwrite: bool,
    /// `kb_base=`.
    pub kb_base: KbBase,
    /// `unit_base=`.
    pub unit_base: UnitBase,
    /// `loops=`.
    pub loops: u32,
    /// `write_bw_log=`.
    pub bw_log: Option<LogRequest>,
    /// `write_lat_log=`.
    pub lat_log: Option<LogRequest>,
    /// `write_iops_log=`.
    pub iops_log: Option<LogRequest>,
    /// `log_avg_msec=`.
    pub log_avg_msec: u64,
    /// `per_job_logs=`.
    pub per_job_logs: bool,
    /// The options as written, in the order fio applied them (JSON "job options").
    pub given: Vec<(String, Option<String>)>,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            description: None,
            rw: RwMode {
                read: true,
                write: false,
                random: false,
            },
            rw_modifier: RwModifier {
                seq_add: 0,
                seq_nr: 1,
            },
            rwmixread: 50,
            bs: [4096; 3],
            size: None,
            filesize: None,
            nrfiles: 1,
            io_size: None,
            offset: SizeValue::Bytes(0),
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            fallocate: Fallocate::Native,
            direct: false,
            ioengine: IoEngineKind::Psync,
            iodepth: 1,
            time_based: false,
            runtime_us: 0,
            ramp_time_us: 0,
            directories: Vec::new(),
            filenames: Vec::new(),
            numjobs: 1,
            group_reporting: false,
            new_group: false,
            stonewall: false,
            thread: false,
            create_on_open: false,
            create_fsync: true,
            unlink: false,
            unlink_each_loop: false,
            randrepeat: true,
            randseed: 0x89,
            norandommap: false,
            overwrite: false,
            kb_base: KbBase::Binary,
            unit_base: UnitBase::Bytes,
            loops: 1,
            bw_log: None,
            lat_log: None,
            iops_log: None,
            log_avg_msec: 0,
            per_job_logs: true,
            given: Vec::new(),
        }
    }
}

/// A job fio would refuse (or fiolike cannot run), caught before anything runs.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JobError {
    /// No size and no files to take one from.
    #[error("{job}: you need to specify size=")]
    NeedSize {
        /// The job.
        job: String,
    },
    /// A block size larger than the data set.
    #[error("{job}: blocksize is larger than data set range")]
    BlockSizeTooLarge {
        /// The job.
        job: String,
    },
    /// time_based without a runtime (fio warns and turns it off; fiolike refuses, so a
    /// job never runs forever by accident).
    #[error("{job}: time_based requires a runtime= (fio would ignore time_based)")]
    TimeBasedWithoutRuntime {
        /// The job.
        job: String,
    },
    /// A size given as a percentage of files that do not exist yet.
    #[error("{job}: size={pct}% needs existing files")]
    PercentWithoutFiles {
        /// The job.
        job: String,
        /// The percentage.
        pct: u64,
    },
    /// Two options that cannot go together.
    #[error("{job}: {what}")]
    Conflict {
        /// The job.
        job: String,
        /// Which options and why.
        what: String,
    },
}

impl JobSpec {
    /// The largest block size over the directions the job issues.
    pub fn max_bs(&self) -> u64 {
        let mut m = 0;
        if self.rw.read {
            m = m.max(self.bs[0]);
        }
        if self.rw.write {
            m = m.max(self.bs[1]);
        }
        m.max(1)
    }

    /// The smallest block size over the directions the job issues (fio's `td_min_bs`).
    pub fn min_bs(&self) -> u64 {
        let mut m = u64::MAX;
        if self.rw.read {
            m = m.min(self.bs[0]);
        }
        if self.rw.write {
            m = m.min(self.bs[1]);
        }
        if m == u64::MAX { self.bs[1] } else { m }
    }

    /// Refuse combinations fio refuses or fiolike cannot honour.
    pub fn check(&self) -> Result<(), JobError> {
        let job = self.name.clone();
        if self.time_based && self.runtime_us == 0 {
            return Err(JobError::TimeBasedWithoutRuntime { job });
        }
        if self.direct && self.ioengine == IoEngineKind::Sync && self.rw_modifier.seq_add != 0 {
            return Err(JobError::Conflict {
                job,
                what: "direct=1 with a sequential offset modifier is not aligned".into(),
            });
        }
        if self.rw.mixed() && self.rwmixread > 100 {
            return Err(JobError::Conflict {
                job,
                what: "rwmixread must be 0..100".into(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for RwMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
