//! A clone's files: their names, how much of each the job uses, and laying them out
//! (`filesetup.c`: `setup_files`, `extend_file`).
//!
//! - Names: `<directory>/<job>.<clone>.<file>` (the directory is the clone's entry of a
//!   `:`-list, round robin), or the `filename=` list, shared by every clone.
//! - Sizes: `size` is split evenly over the files, the remainder handed out one block at a
//!   time to the first ones; `filesize` fixes (or draws from a range) each file's size; a
//!   percentage takes that share of an existing file.
//! - Layout: a file smaller than `offset + io_size` is extended before the job starts and fio
//!   prints `Laying out IO file (...)`. Write-only jobs without `overwrite` unlink the old file,
//!   create it and pre-allocate it (`fallocate=`) without writing data; jobs that read, or
//!   write with `overwrite=1`, write the whole file (with `create_fsync`, fsync it).
//!   `create_on_open` skips all of this and lets the job's own open create the file.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::random::{RandMap, Rng, between};
use crate::backend::queue::IoBuf;
use crate::backend::{Access, Errno, FallocMode, Fd, OpenFlags, Target, TargetError, mkdir_all};
use crate::workload::fio::job::{Fallocate, JobSpec};
use crate::workload::fio::number::SizeValue;

/// One file of a clone.
#[derive(Debug)]
pub struct FioFile {
    /// Its path on the target.
    pub path: PathBuf,
    /// Size on the target (after layout).
    pub real_size: u64,
    /// Where the job's range starts (`offset=`).
    pub file_offset: u64,
    /// How many bytes of it the job uses.
    pub io_size: u64,
    /// The open descriptor while the job runs.
    pub fd: Option<Fd>,
    /// Sequential positions (read, write), relative to `file_offset`.
    pub last_pos: [u64; 2],
    /// Blocks used this pass, for random I/O.
    pub randmap: Option<RandMap>,
    /// No more I/O this pass.
    pub done: bool,
    /// Needs laying out.
    extend: bool,
}

/// Why a clone's files could not be set up.
#[derive(Debug, Error)]
pub enum SetupError {
    /// Nothing says how big the files are.
    #[error("{job}: you need to specify size=")]
    NeedSize {
        /// The job.
        job: String,
    },
    /// An offset beyond the file.
    #[error("{job}: you need to specify valid offset=")]
    BadOffset {
        /// The job.
        job: String,
    },
    /// A block size larger than the files.
    #[error("fio: blocksize is larger than data set range ({job})")]
    BlockSizeTooLarge {
        /// The job.
        job: String,
    },
    /// A target call failed while laying out.
    #[error("{job}: {call} {}: {source}", path.display())]
    Call {
        /// The job.
        job: String,
        /// The call.
        call: &'static str,
        /// The file.
        path: PathBuf,
        /// What the target said.
        source: TargetError,
    },
}

impl SetupError {
    /// The errno behind the failure (EINVAL for option problems), for fio's `err=`.
    pub fn errno(&self) -> Errno {
        match self {
            SetupError::Call { source, .. } => source.errno,
            _ => Errno::EINVAL,
        }
    }
}

/// Resolve `p` against `base` (fio's paths are relative to the current directory).
pub fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// The paths of clone `clone` of a job.
pub fn file_paths(spec: &JobSpec, clone: u32, base: &Path) -> Vec<PathBuf> {
    let dir = (!spec.directories.is_empty())
        .then(|| &spec.directories[clone as usize % spec.directories.len()]);
    let in_dir = |name: &str| match dir {
        Some(d) => resolve(base, &d.join(name)),
        None => resolve(base, Path::new(name)),
    };
    if !spec.filenames.is_empty() {
        return spec.filenames.iter().map(|f| in_dir(f)).collect();
    }
    (0..spec.nrfiles)
        .map(|i| in_dir(&format!("{}.{clone}.{i}", spec.name)))
        .collect()
}

fn call_err(job: &str, call: &'static str, path: &Path) -> impl Fn(TargetError) -> SetupError {
    let (job, path) = (job.to_string(), path.to_path_buf());
    move |source| SetupError::Call {
        job: job.clone(),
        call,
        path: path.clone(),
        source,
    }
}

/// What a clone's setup produced.
#[derive(Debug)]
pub struct Setup {
    /// The files.
    pub files: Vec<FioFile>,
    /// Bytes per pass (fio's `o->size` after setup).
    pub size: u64,
    /// Files laid out and their total bytes, if any were (for the layout message).
    pub laid_out: Option<(u32, u64)>,
}

/// Work out a clone's files and sizes (fio's `setup_files` up to the layout decision).
pub fn plan(
    target: &dyn Target,
    spec: &JobSpec,
    paths: Vec<PathBuf>,
    rng: &mut Rng,
) -> Result<Setup, SetupError> {
    let job = spec.name.as_str();
    let min_bs = spec.min_bs();
    let mut files: Vec<FioFile> = Vec::with_capacity(paths.len());
    for path in paths {
        for dir in path
            .parent()
            .into_iter()
            .filter(|d| !d.as_os_str().is_empty())
        {
            mkdir_all(target, dir).map_err(call_err(job, "mkdir", dir))?;
        }
        let real_size = match target.stat(&path) {
            Ok(st) => st.size,
            Err(e) if e.errno == Errno::ENOENT => 0,
            Err(e) => return Err(call_err(job, "stat", &path)(e)),
        };
        files.push(FioFile {
            path,
            real_size,
            file_offset: 0,
            io_size: 0,
            fd: None,
            last_pos: [0, 0],
            randmap: None,
            done: false,
            extend: false,
        });
    }
    let total_real: u64 = files.iter().map(|f| f.real_size).sum();
    let size_bytes = match spec.size {
        Some(SizeValue::Bytes(b)) => Some(b),
        _ => None,
    };
    let size_percent = match spec.size {
        Some(SizeValue::Percent(p)) => Some(p.min(100)),
        _ => None,
    };
    if total_real == 0 && size_bytes.is_none() && spec.filesize.is_none() {
        return Err(SetupError::NeedSize {
            job: job.to_string(),
        });
    }
    let nr = files.len() as u64;
    let (per_file, mut extra) = match size_bytes {
        Some(size) if spec.filesize.is_none() && nr > 0 => {
            let fs = size / nr;
            (fs, (size - fs * nr) / min_bs)
        }
        _ => (0, 0),
    };
    let mut total_io = 0u64;
    for f in &mut files {
        f.file_offset = match spec.offset {
            SizeValue::Bytes(b) => b,
            SizeValue::Percent(p) => {
                let off = f.real_size * p.min(100) / 100;
                off - off % min_bs
            }
        };
        match spec.filesize {
            None => {
                f.io_size = per_file;
                if extra > 0 {
                    extra -= 1;
                    f.io_size += min_bs;
                }
                if f.io_size == 0 {
                    if f.file_offset > f.real_size {
                        return Err(SetupError::BadOffset {
                            job: job.to_string(),
                        });
                    }
                    f.io_size = f.real_size - f.file_offset;
                }
            }
            Some((lo, hi)) if f.real_size < lo || f.real_size > hi => {
                if f.file_offset > lo {
                    return Err(SetupError::BadOffset {
                        job: job.to_string(),
                    });
                }
                let target_size = if lo == hi { lo } else { between(rng, lo, hi) };
                f.io_size = target_size - f.file_offset;
            }
            Some(_) => f.io_size = f.real_size.saturating_sub(f.file_offset),
        }
        if let Some(p) = size_percent.filter(|p| *p != 100) {
            let file_size = f.io_size + f.file_offset;
            f.io_size = (file_size * p / 100).min(file_size - f.file_offset);
            f.io_size -= f.io_size % min_bs;
        }
        total_io += f.io_size;
        if f.io_size + f.file_offset > f.real_size {
            if spec.create_on_open {
                f.real_size = f.io_size + f.file_offset;
            } else {
                f.extend = true;
            }
        }
    }
    let mut size = size_bytes.unwrap_or(0);
    if size == 0 || (total_io > 0 && size > total_io) {
        size = total_io;
    }
    if size < min_bs {
        return Err(SetupError::BlockSizeTooLarge {
            job: job.to_string(),
        });
    }
    let extending: Vec<&FioFile> = files.iter().filter(|f| f.extend).collect();
    let laid_out = (!extending.is_empty()).then(|| {
        (
            extending.len() as u32,
            extending.iter().map(|f| f.io_size + f.file_offset).sum(),
        )
    });
    Ok(Setup {
        files,
        size,
        laid_out,
    })
}

fn fallocate_file(
    target: &dyn Target,
    spec: &JobSpec,
    fd: Fd,
    f: &FioFile,
) -> Result<(), SetupError> {
    let len = f.real_size;
    let r = match spec.fallocate {
        Fallocate::None => Ok(()),
        Fallocate::Posix => target.fallocate(fd, FallocMode::Allocate, 0, len),
        Fallocate::Native => match target.fallocate(fd, FallocMode::Allocate, 0, len) {
            // fio silently falls back to no pre-allocation where it is not supported.
            Err(e) if matches!(e.errno, Errno::EOPNOTSUPP | Errno::ENOSYS) => Ok(()),
            other => other,
        },
        Fallocate::Keep => target.fallocate(fd, FallocMode::KeepSize, 0, len),
        Fallocate::Truncate => target.ftruncate(fd, len),
    };
    r.map_err(call_err(&spec.name, "fallocate", &f.path))
}

/// Lay out the files that need it (fio's `extend_file`), writing with `buf`-sized writes.
pub fn lay_out(
    target: &dyn Target,
    spec: &JobSpec,
    setup: &mut Setup,
    fill: &mut Rng,
) -> Result<(), SetupError> {
    let job = spec.name.as_str();
    let new_layout = spec.rw.read || (spec.rw.write && spec.overwrite);
    let unlink_first = spec.rw.write && !spec.overwrite;
    for f in setup.files.iter_mut().filter(|f| f.extend) {
        f.extend = false;
        f.real_size = f.io_size + f.file_offset;
        if unlink_first || new_layout {
            match target.unlink(&f.path) {
                Ok(()) => {}
                Err(e) if e.errno == Errno::ENOENT => {}
                Err(e) => return Err(call_err(job, "unlink", &f.path)(e)),
            }
        }
        let flags = OpenFlags {
            access: Access::Write,
            create: true,
            truncate: new_layout,
            ..OpenFlags::default()
        };
        let fd = target
            .open(&f.path, flags, 0o644)
            .map_err(call_err(job, "open", &f.path))?;
        let result = (|| {
            fallocate_file(target, spec, fd, f)?;
            if !new_layout {
                return Ok(());
            }
            target
                .ftruncate(fd, f.real_size)
                .map_err(call_err(job, "ftruncate", &f.path))?;
            let bs = spec.bs[1].min(f.real_size).max(1) as usize;
            let mut buf = IoBuf::zeroed(bs);
            fill.fill(&mut buf);
            let mut left = f.real_size;
            let mut pos = 0u64;
            while left > 0 {
                let n = (bs as u64).min(left) as usize;
                let w = target
                    .write(fd, &buf[..n])
                    .map_err(call_err(job, "write", &f.path))?;
                if w == 0 {
                    return Err(call_err(job, "write", &f.path)(TargetError::errno(
                        Errno::EIO,
                    )));
                }
                left -= w as u64;
                pos += w as u64;
            }
            debug_assert_eq!(pos, f.real_size);
            if spec.create_fsync {
                target.fsync(fd).map_err(call_err(job, "fsync", &f.path))?;
            }
            Ok(())
        })();
        let closed = target.close(fd);
        result?;
        closed.map_err(call_err(job, "close", &f.path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Call, RecordingTarget};
    use crate::workload::fio::options::apply_option;

    fn spec(lines: &[&str]) -> JobSpec {
        let mut s = JobSpec {
            name: "j".into(),
            ..JobSpec::default()
        };
        for l in lines {
            apply_option(&mut s, l).unwrap();
        }
        s
    }

    #[test]
    fn names_follow_fio() {
        let s = spec(&["directory=/a:/b", "nrfiles=2"]);
        assert_eq!(
            file_paths(&s, 1, Path::new("/cwd")),
            vec![PathBuf::from("/b/j.1.0"), PathBuf::from("/b/j.1.1")]
        );
        let s = spec(&["filename=f1:f2"]);
        assert_eq!(
            file_paths(&s, 3, Path::new("/cwd")),
            vec![PathBuf::from("/cwd/f1"), PathBuf::from("/cwd/f2")]
        );
    }

    #[test]
    fn size_splits_over_files_with_whole_blocks_of_remainder_to_the_first() {
        let t = RecordingTarget::in_memory(1 << 30);
        let mut rng = Rng::new(1);
        // fio splits bytes, not blocks: 10240 / 3 = 3413 each, and the 1-byte remainder is
        // less than a block, so nobody gets an extra block.
        let s = spec(&["rw=write", "size=10k", "bs=1k", "nrfiles=3", "directory=/d"]);
        let setup = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        let sizes: Vec<u64> = setup.files.iter().map(|f| f.io_size).collect();
        assert_eq!(sizes, vec![3413, 3413, 3413]);
        assert_eq!(setup.size, 10239);
        assert_eq!(setup.laid_out, Some((3, 10239)));
        // Even splits, and a remainder of whole blocks going one block each to the first:
        let s = spec(&["rw=write", "size=5k", "bs=512", "nrfiles=4", "directory=/e"]);
        let setup = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        let sizes: Vec<u64> = setup.files.iter().map(|f| f.io_size).collect();
        assert_eq!(sizes, vec![1280, 1280, 1280, 1280]);
        let s = spec(&["rw=write", "size=3000", "bs=1", "nrfiles=7", "directory=/f"]);
        let setup = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        let sizes: Vec<u64> = setup.files.iter().map(|f| f.io_size).collect();
        assert_eq!(sizes, vec![429, 429, 429, 429, 428, 428, 428]);
    }

    #[test]
    fn write_only_layout_unlinks_and_preallocates_without_writing() {
        let t = RecordingTarget::in_memory(1 << 30);
        let s = spec(&["rw=write", "size=1m", "directory=/d", "fallocate=posix"]);
        let mut rng = Rng::new(1);
        let mut setup = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        t.clear();
        lay_out(&t, &s, &mut setup, &mut rng).unwrap();
        let calls = t.calls();
        assert!(matches!(calls[0], Call::Unlink { .. }));
        assert!(matches!(calls[1], Call::Open { .. }));
        assert!(matches!(calls[2], Call::Fallocate { len: 1048576, .. }));
        assert!(matches!(calls[3], Call::Close { .. }));
        assert_eq!(calls.len(), 4);
    }

    #[test]
    fn read_layout_writes_the_whole_file_and_fsyncs() {
        let t = RecordingTarget::in_memory(1 << 30);
        let s = spec(&[
            "rw=randread",
            "size=256k",
            "bs=64k",
            "directory=/d",
            "fallocate=none",
        ]);
        let mut rng = Rng::new(1);
        let mut setup = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        t.clear();
        lay_out(&t, &s, &mut setup, &mut rng).unwrap();
        let calls = t.calls();
        let writes = calls
            .iter()
            .filter(|c| matches!(c, Call::Write { len: 65536, .. }))
            .count();
        assert_eq!(writes, 4);
        assert!(calls.iter().any(|c| matches!(c, Call::Fsync { .. })));
        assert_eq!(t.stat(Path::new("/d/j.0.0")).unwrap().size, 256 << 10);
        // A second plan finds the file big enough: no layout.
        let again = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap();
        assert_eq!(again.laid_out, None);
    }

    #[test]
    fn missing_size_and_tiny_files_are_refused() {
        let t = RecordingTarget::in_memory(1 << 30);
        let mut rng = Rng::new(1);
        let s = spec(&["rw=write", "directory=/d"]);
        let e = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap_err();
        assert_eq!(e.to_string(), "j: you need to specify size=");
        let s = spec(&["rw=write", "directory=/d", "size=1k", "bs=4k"]);
        let e = plan(&t, &s, file_paths(&s, 0, Path::new("/")), &mut rng).unwrap_err();
        assert!(matches!(e, SetupError::BlockSizeTooLarge { .. }));
    }
}
