//! The `oltp` profile: a database-like mix, written once against [`Target`].
//!
//! Thread 004's load was MySQL: small random page writes into a few large tablespace files,
//! each transaction made durable with fsync, plus a steady trickle of temporary files created
//! and removed (Dave Chinner read ~143k creates and removes off the stat dump, matching the
//! log force count, and guessed temporary tables). This engine reproduces that shape:
//!
//! 1. *prepare* (not measured): create `files` data files of `file_size` bytes in `dir`,
//!    written in full and fsync'd, so the measured phase overwrites allocated blocks as a
//!    database does (16 MiB each by default: labfs's fsync write-back visits every cached
//!    page of the file, so larger files slow each commit without changing the checksums);
//! 2. *run* (measured): `writes` writes of `write_size` bytes at random aligned offsets of
//!    random files; after every `fsync_every` writes, fsync the file last written (a
//!    commit); after every `temp_every` writes, create a temporary file, write `temp_size`
//!    bytes, fsync, close and unlink it.
//!
//! The random sequence is [`SplitMix64`] from a fixed seed, so two runs (one per checksum
//! mode) do exactly the same operations.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use thiserror::Error;

use crate::backend::{Access, Fd, OpenFlags, Target, TargetError, mkdir_all};
use crate::rng::SplitMix64;

/// Largest number of data files.
pub const MAX_FILES: u32 = 1024;

/// What one oltp run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OltpConfig {
    /// Directory holding the data files (created with its parents).
    pub dir: PathBuf,
    /// Number of data files.
    pub files: u32,
    /// Size of each data file, in bytes.
    pub file_size: u64,
    /// Bytes per random write (InnoDB's page is 16 KiB).
    pub write_size: u64,
    /// Random writes in the measured phase.
    pub writes: u64,
    /// fsync the file just written after every this many writes (1: every write).
    pub fsync_every: u32,
    /// Create and remove a temporary file after every this many writes (0: never).
    pub temp_every: u32,
    /// Bytes written to each temporary file.
    pub temp_size: u64,
    /// Seed of the random sequence.
    pub seed: u64,
}

impl Default for OltpConfig {
    /// The `oltp` profile: four 16 MiB files, 4000 writes of 16 KiB, a commit every two
    /// writes, a temporary file every 16.
    fn default() -> Self {
        OltpConfig {
            dir: PathBuf::from("/oltp"),
            files: 4,
            file_size: 16 << 20,
            write_size: 16 << 10,
            writes: 4000,
            fsync_every: 2,
            temp_every: 16,
            temp_size: 16 << 10,
            seed: 1,
        }
    }
}

/// An oltp configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OltpConfigError {
    /// `files` is 0 or over [`MAX_FILES`].
    #[error("oltp: files must be 1..={MAX_FILES}, not {0}")]
    Files(u32),
    /// `write_size` is 0 or larger than `file_size`.
    #[error("oltp: the write size ({write}) must be 1 byte up to the file size ({file})")]
    WriteSize {
        /// `write_size`.
        write: u64,
        /// `file_size`.
        file: u64,
    },
    /// `writes` is 0.
    #[error("oltp: at least one write")]
    NoWrites,
    /// `fsync_every` is 0.
    #[error("oltp: fsync_every must be at least 1")]
    FsyncEvery,
    /// A buffer would not fit in memory (`write_size` or `temp_size` over 64 MiB).
    #[error("oltp: write and temporary-file sizes are at most 64 MiB, not {0}")]
    TooLarge(u64),
}

/// Largest single buffer the engine allocates.
const MAX_BUFFER: u64 = 64 << 20;

impl OltpConfig {
    /// Check that the engine can run this configuration.
    pub fn check(&self) -> Result<(), OltpConfigError> {
        if self.files == 0 || self.files > MAX_FILES {
            return Err(OltpConfigError::Files(self.files));
        }
        if self.write_size == 0 || self.write_size > self.file_size {
            return Err(OltpConfigError::WriteSize {
                write: self.write_size,
                file: self.file_size,
            });
        }
        if self.writes == 0 {
            return Err(OltpConfigError::NoWrites);
        }
        if self.fsync_every == 0 {
            return Err(OltpConfigError::FsyncEvery);
        }
        for size in [self.write_size, self.temp_size] {
            if size > MAX_BUFFER {
                return Err(OltpConfigError::TooLarge(size));
            }
        }
        Ok(())
    }

    /// One line saying what the run does.
    pub fn describe(&self) -> String {
        let temp = if self.temp_every == 0 {
            String::new()
        } else {
            format!(
                ", a {}-byte temporary file created and removed every {} writes",
                self.temp_size, self.temp_every
            )
        };
        format!(
            "{} random {}-byte writes over {} files of {} bytes in {}, fsync every {} writes{temp}",
            self.writes,
            self.write_size,
            self.files,
            self.file_size,
            self.dir.display(),
            self.fsync_every,
        )
    }

    fn data_file(&self, i: u32) -> PathBuf {
        self.dir.join(format!("data{i:04}.ibd"))
    }
}

/// A failed oltp step.
#[derive(Debug, Error)]
pub enum OltpError {
    /// The configuration cannot run.
    #[error(transparent)]
    Config(#[from] OltpConfigError),
    /// A target call failed.
    #[error("oltp: {op} {} failed: {source}", path.display())]
    Call {
        /// The call.
        op: &'static str,
        /// The path it was made on.
        path: PathBuf,
        /// What the target said.
        source: TargetError,
    },
    /// A write wrote less than asked (the filesystem is full).
    #[error("oltp: write to {} wrote {wrote} of {wanted} bytes (filesystem full?)", path.display())]
    ShortWrite {
        /// The file.
        path: PathBuf,
        /// Bytes written.
        wrote: usize,
        /// Bytes asked for.
        wanted: usize,
    },
}

/// What a measured oltp run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OltpOutcome {
    /// Random writes made.
    pub writes: u64,
    /// fsync calls (commits and temporary files).
    pub fsyncs: u64,
    /// Temporary files created.
    pub creates: u64,
    /// Temporary files removed.
    pub removes: u64,
    /// Bytes written, temporary files included.
    pub bytes: u64,
    /// The run stopped early because the interrupt flag was raised.
    pub interrupted: bool,
}

fn call<T>(op: &'static str, path: &Path, r: crate::backend::Result<T>) -> Result<T, OltpError> {
    r.map_err(|source| OltpError::Call {
        op,
        path: path.to_path_buf(),
        source,
    })
}

fn write_all(
    target: &dyn Target,
    fd: Fd,
    path: &Path,
    buf: &[u8],
    offset: u64,
) -> Result<(), OltpError> {
    let n = call("pwrite", path, target.pwrite(fd, buf, offset))?;
    if n != buf.len() {
        return Err(OltpError::ShortWrite {
            path: path.to_path_buf(),
            wrote: n,
            wanted: buf.len(),
        });
    }
    Ok(())
}

/// Bytes that are not all zero (so nothing could mistake them for holes), different for
/// every `stamp`.
fn fill(buf: &mut [u8], stamp: u64) {
    SplitMix64::new(stamp).fill(buf);
}

/// Create the directory and the data files, written in full and fsync'd.
pub fn prepare(target: &dyn Target, cfg: &OltpConfig) -> Result<(), OltpError> {
    cfg.check()?;
    call("mkdir", &cfg.dir, mkdir_all(target, &cfg.dir))?;
    let chunk = cfg.file_size.min(1 << 20) as usize;
    let mut buf = vec![0u8; chunk];
    for i in 0..cfg.files {
        let path = cfg.data_file(i);
        let fd = call(
            "open",
            &path,
            target.open(&path, OpenFlags::create_truncate(), 0o644),
        )?;
        let mut off = 0u64;
        while off < cfg.file_size {
            let n = (cfg.file_size - off).min(chunk as u64) as usize;
            fill(&mut buf[..n], off ^ u64::from(i) << 48);
            write_all(target, fd, &path, &buf[..n], off)?;
            off += n as u64;
        }
        call("fsync", &path, target.fsync(fd))?;
        call("close", &path, target.close(fd))?;
    }
    Ok(())
}

/// The measured phase. `progress` counts writes as they complete; `interrupt` stops the run
/// after the current write.
pub fn run(
    target: &dyn Target,
    cfg: &OltpConfig,
    interrupt: Option<&AtomicBool>,
    progress: &AtomicU64,
) -> Result<OltpOutcome, OltpError> {
    cfg.check()?;
    let rw = OpenFlags {
        access: Access::ReadWrite,
        ..OpenFlags::default()
    };
    let paths: Vec<PathBuf> = (0..cfg.files).map(|i| cfg.data_file(i)).collect();
    let mut fds = Vec::with_capacity(paths.len());
    for p in &paths {
        fds.push(call("open", p, target.open(p, rw, 0))?);
    }
    let result = run_open(target, cfg, &paths, &fds, interrupt, progress);
    for (fd, p) in fds.into_iter().zip(&paths) {
        let closed = call("close", p, target.close(fd));
        if result.is_ok() {
            closed?;
        }
    }
    result
}

fn run_open(
    target: &dyn Target,
    cfg: &OltpConfig,
    paths: &[PathBuf],
    fds: &[Fd],
    interrupt: Option<&AtomicBool>,
    progress: &AtomicU64,
) -> Result<OltpOutcome, OltpError> {
    let mut rng = SplitMix64::new(cfg.seed);
    let mut page = vec![0u8; cfg.write_size as usize];
    let mut temp = vec![0u8; cfg.temp_size as usize];
    let pages = cfg.file_size / cfg.write_size;
    let mut out = OltpOutcome::default();
    for n in 1..=cfg.writes {
        if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            out.interrupted = true;
            break;
        }
        let file = rng.index(cfg.files as usize);
        let offset = rng.below(pages) * cfg.write_size;
        fill(&mut page, n);
        write_all(target, fds[file], &paths[file], &page, offset)?;
        out.writes += 1;
        out.bytes += cfg.write_size;
        if n % u64::from(cfg.fsync_every) == 0 {
            call("fsync", &paths[file], target.fsync(fds[file]))?;
            out.fsyncs += 1;
        }
        if cfg.temp_every != 0 && n % u64::from(cfg.temp_every) == 0 {
            let path = cfg.dir.join(format!("#sql-tmp-{n}"));
            let excl = OpenFlags {
                exclusive: true,
                ..OpenFlags::create_truncate()
            };
            let fd = call("open", &path, target.open(&path, excl, 0o600))?;
            out.creates += 1;
            if !temp.is_empty() {
                fill(&mut temp, !n);
                write_all(target, fd, &path, &temp, 0)?;
                out.bytes += cfg.temp_size;
            }
            call("fsync", &path, target.fsync(fd))?;
            out.fsyncs += 1;
            call("close", &path, target.close(fd))?;
            call("unlink", &path, target.unlink(&path))?;
            out.removes += 1;
        }
        progress.store(n, Ordering::Relaxed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Call, RecordingTarget};

    fn small() -> OltpConfig {
        OltpConfig {
            files: 2,
            file_size: 64 << 10,
            write_size: 16 << 10,
            writes: 8,
            fsync_every: 2,
            temp_every: 4,
            temp_size: 4096,
            ..OltpConfig::default()
        }
    }

    #[test]
    fn checks_refuse_what_cannot_run() {
        assert_eq!(OltpConfig::default().check(), Ok(()));
        let bad = |f: fn(&mut OltpConfig)| {
            let mut c = OltpConfig::default();
            f(&mut c);
            c.check().unwrap_err()
        };
        assert_eq!(bad(|c| c.files = 0), OltpConfigError::Files(0));
        assert!(matches!(
            bad(|c| c.write_size = 0),
            OltpConfigError::WriteSize { .. }
        ));
        assert!(matches!(
            bad(|c| c.write_size = c.file_size + 1),
            OltpConfigError::WriteSize { .. }
        ));
        assert_eq!(bad(|c| c.writes = 0), OltpConfigError::NoWrites);
        assert_eq!(bad(|c| c.fsync_every = 0), OltpConfigError::FsyncEvery);
        assert_eq!(
            bad(|c| c.temp_size = 1 << 30),
            OltpConfigError::TooLarge(1 << 30)
        );
    }

    #[test]
    fn the_mix_commits_and_churns_temporary_files_as_configured() {
        let target = RecordingTarget::in_memory(1 << 30);
        let cfg = small();
        prepare(&target, &cfg).expect("prepare");
        target.clear();
        let progress = AtomicU64::new(0);
        let out = run(&target, &cfg, None, &progress).expect("run");
        assert_eq!(
            out,
            OltpOutcome {
                writes: 8,
                fsyncs: 4 + 2,
                creates: 2,
                removes: 2,
                bytes: 8 * 16384 + 2 * 4096,
                interrupted: false,
            }
        );
        assert_eq!(progress.load(Ordering::Relaxed), 8);
        let calls = target.calls();
        let pwrites: Vec<_> = calls
            .iter()
            .filter_map(|c| match c {
                Call::Pwrite { len, offset, .. } if *len == 16384 => Some(*offset),
                _ => None,
            })
            .collect();
        assert_eq!(pwrites.len(), 8);
        assert!(pwrites.iter().all(|o| o % 16384 == 0 && *o < 64 << 10));
        let unlinks = calls
            .iter()
            .filter(|c| matches!(c, Call::Unlink { .. }))
            .count();
        assert_eq!(unlinks, 2);
    }

    #[test]
    fn the_same_seed_makes_the_same_writes() {
        let offsets = |seed: u64| {
            let target = RecordingTarget::in_memory(1 << 30);
            let cfg = OltpConfig { seed, ..small() };
            prepare(&target, &cfg).expect("prepare");
            target.clear();
            run(&target, &cfg, None, &AtomicU64::new(0)).expect("run");
            target.calls()
        };
        assert_eq!(offsets(7), offsets(7));
        assert_ne!(offsets(7), offsets(8));
    }

    #[test]
    fn an_interrupt_stops_before_the_next_write() {
        let target = RecordingTarget::in_memory(1 << 30);
        let cfg = small();
        prepare(&target, &cfg).expect("prepare");
        let stop = AtomicBool::new(true);
        let out = run(&target, &cfg, Some(&stop), &AtomicU64::new(0)).expect("run");
        assert!(out.interrupted);
        assert_eq!(out.writes, 0);
    }
}
