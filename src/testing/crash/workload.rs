//! The workloads the harness crashes: fs_mark with `-S1` and `-S4`, an fsx-like random loop,
//! and ACE sequences ([`crate::testing::crash::ace`]).
//!
//! Each is named by a one-line spec that round-trips through text, so a failure can print
//! the command that reruns it:
//!
//! - `fsmark:S=1,n=40,s=4096,t=1`: the fs_mark engine of [`crate::workload::fsmark`] itself,
//!   on the recorder, with a virtual clock so its file names (and hence the writes) are the
//!   same on every run; files are unlinked at the end as fs_mark does without `-k`.
//! - `fsx:seed=7,ops=300,files=3,max=65536`: in the spirit of fsx (and xfstests generic/455,
//!   which replays fsx at every fsync): writes, truncates, fallocate in all four modes, fsync,
//!   fdatasync and sync on a few files kept open, every read compared with the model, every
//!   written byte a value that says which operation wrote it.
//! - `ace:OP+OP+...`: one bounded ACE sequence.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::backend::{Access, FallocMode, Fd, OpenFlags, Target};
use crate::fs::options::Options;
use crate::rng::SplitMix64;
use crate::testing::VirtualClock;
use crate::testing::crash::ace::AceSeq;
use crate::testing::crash::record::{Recorder, Recording};
use crate::testing::crash::{DEVICE_SIZE, HarnessError, call_err, pattern};
use crate::workload::fsmark::{self, Config, RunEnv, SyncMethod};

/// The wall-clock second the fs_mark workload's virtual clock starts at.
const FSMARK_EPOCH: u64 = 1_700_000_000;

/// fs_mark as the harness runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsmarkLoad {
    /// `-S`: 1 (fsync per file) or 4 (sync, then reopen and fsync each file in reverse).
    pub sync: u32,
    /// `-n`: files.
    pub files: u32,
    /// `-s`: bytes per file.
    pub size: u64,
    /// `-t`: threads (their calls are serialised by the recorder).
    pub threads: u32,
}

/// The fsx-like loop's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsxLoad {
    /// The seed of every choice.
    pub seed: u64,
    /// Operations.
    pub ops: u32,
    /// Files (kept open throughout).
    pub files: u32,
    /// Largest offset or size used.
    pub max: u64,
}

/// A workload the harness can record and crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// fs_mark.
    Fsmark(FsmarkLoad),
    /// The fsx-like loop.
    Fsx(FsxLoad),
    /// One ACE sequence.
    Ace(AceSeq),
}

impl Workload {
    /// Run the workload on a fresh recorder and hand back the recording.
    pub fn record(&self, options: &Options) -> Result<Recording, HarnessError> {
        let rec = match self {
            Workload::Ace(_) => {
                Recorder::resume(&*crate::testing::crash::ace::setup_image(options)?, options)?
            }
            _ => Recorder::mkfs(DEVICE_SIZE, options)?,
        };
        self.run(&rec)?;
        rec.finish()
    }

    /// Run the workload's operations on a recorder (which must start from the filesystem
    /// the workload expects: an empty one, or the ACE set-up image).
    pub fn run(&self, rec: &Recorder) -> Result<(), HarnessError> {
        match self {
            Workload::Fsmark(f) => run_fsmark(rec, f),
            Workload::Fsx(f) => run_fsx(rec, f),
            Workload::Ace(a) => a.run(rec),
        }
    }
}

/// Parse `key=value,...` into pairs, checking every key is known.
fn pairs<'a>(s: &'a str, known: &[&str]) -> Result<Vec<(&'a str, &'a str)>, HarnessError> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| HarnessError::BadCase(format!("{p:?} is not key=value")))?;
            if known.contains(&k) {
                Ok((k, v))
            } else {
                Err(HarnessError::BadCase(format!(
                    "unknown key {k:?} (known: {})",
                    known.join(", ")
                )))
            }
        })
        .collect()
}

fn number<T: FromStr>(key: &str, v: &str) -> Result<T, HarnessError> {
    v.parse()
        .map_err(|_| HarnessError::BadCase(format!("{key}={v}: not a number")))
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Fsmark(m) => write!(
                f,
                "fsmark:S={},n={},s={},t={}",
                m.sync, m.files, m.size, m.threads
            ),
            Workload::Fsx(x) => write!(
                f,
                "fsx:seed={},ops={},files={},max={}",
                x.seed, x.ops, x.files, x.max
            ),
            Workload::Ace(a) => write!(f, "ace:{a}"),
        }
    }
}

impl FromStr for Workload {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<Workload, HarnessError> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match kind {
            "fsmark" => {
                let mut m = FsmarkLoad {
                    sync: 1,
                    files: 40,
                    size: 4096,
                    threads: 1,
                };
                for (k, v) in pairs(rest, &["S", "n", "s", "t"])? {
                    match k {
                        "S" => m.sync = number(k, v)?,
                        "n" => m.files = number(k, v)?,
                        "s" => m.size = number(k, v)?,
                        _ => m.threads = number(k, v)?,
                    }
                }
                if !matches!(m.sync, 1 | 4) {
                    return Err(HarnessError::BadCase(format!(
                        "fsmark S={}: the harness runs -S1 and -S4",
                        m.sync
                    )));
                }
                if m.files == 0 || m.threads == 0 {
                    return Err(HarnessError::BadCase(
                        "fsmark needs at least one file and one thread".into(),
                    ));
                }
                Ok(Workload::Fsmark(m))
            }
            "fsx" => {
                let mut x = FsxLoad {
                    seed: 1,
                    ops: 300,
                    files: 3,
                    max: 64 << 10,
                };
                for (k, v) in pairs(rest, &["seed", "ops", "files", "max"])? {
                    match k {
                        "seed" => x.seed = number(k, v)?,
                        "ops" => x.ops = number(k, v)?,
                        "files" => x.files = number(k, v)?,
                        _ => x.max = number(k, v)?,
                    }
                }
                if x.files == 0 || x.max < 4096 || x.max > 16 << 20 {
                    return Err(HarnessError::BadCase(
                        "fsx needs at least one file and 4096 <= max <= 16 MiB".into(),
                    ));
                }
                Ok(Workload::Fsx(x))
            }
            "ace" => Ok(Workload::Ace(rest.parse()?)),
            _ => Err(HarnessError::BadCase(format!(
                "unknown workload {kind:?} (fsmark, fsx or ace)"
            ))),
        }
    }
}

fn run_fsmark(rec: &Recorder, load: &FsmarkLoad) -> Result<(), HarnessError> {
    let mut config = Config::new("/fsmark");
    config.threads = load.threads;
    config.num_files = load.files;
    config.file_size = load.size;
    config.sync = SyncMethod::from_number(load.sync)
        .ok_or_else(|| HarnessError::BadCase(format!("fsmark S={}", load.sync)))?;
    let clock = VirtualClock::new(FSMARK_EPOCH);
    let env = RunEnv {
        target: rec,
        clock: &clock,
        interrupt: None,
    };
    fsmark::run(&env, &config, &mut fsmark::Silent)?;
    Ok(())
}

/// Compare `len` bytes at `offset` of an open file with the model.
pub(crate) fn verify_read(
    rec: &Recorder,
    fd: Fd,
    path: &Path,
    offset: u64,
    len: usize,
    after: usize,
) -> Result<(), HarnessError> {
    let ino = rec
        .ino_of(fd)
        .ok_or_else(|| HarnessError::BadCase(format!("{} is not open", path.display())))?;
    let expected: Vec<u8> = rec.with_model(|m| {
        let data = m.content(ino).unwrap_or_default();
        let start = (offset as usize).min(data.len());
        let end = (offset as usize + len).min(data.len());
        data[start..end].to_vec()
    });
    let mut buf = vec![0u8; len];
    let n = rec
        .pread(fd, &mut buf, offset)
        .map_err(call_err(format!("pread {} {len}@{offset}", path.display())))?;
    buf.truncate(n);
    if buf != expected {
        let i = buf
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(n.min(expected.len()));
        return Err(HarnessError::ReadBack {
            path: path.display().to_string(),
            offset: offset + i as u64,
            expected: expected.get(i).copied(),
            found: buf.get(i).copied(),
            after,
        });
    }
    Ok(())
}

fn run_fsx(rec: &Recorder, load: &FsxLoad) -> Result<(), HarnessError> {
    let dir = Path::new("/fsx");
    rec.mkdir(dir, 0o755).map_err(call_err("mkdir /fsx"))?;
    let rw = OpenFlags {
        access: Access::ReadWrite,
        create: true,
        ..OpenFlags::default()
    };
    let mut files: Vec<(PathBuf, Fd)> = Vec::new();
    for i in 0..load.files {
        let path = dir.join(format!("f{i}"));
        let fd = rec
            .open(&path, rw, 0o644)
            .map_err(call_err(format!("open {}", path.display())))?;
        files.push((path, fd));
    }
    let mut rng = SplitMix64::new(load.seed);
    let max = load.max;
    for op in 0..u64::from(load.ops) {
        let (path, fd) = &files[rng.below(files.len() as u64) as usize];
        let (path, fd) = (path.as_path(), *fd);
        let ino = rec.ino_of(fd);
        let size = rec.with_model(|m| ino.and_then(|i| m.content(i)).map_or(0, |d| d.len() as u64));
        let name = path.display();
        let done = rec.steps();
        match rng.below(100) {
            0..30 => {
                let off = rng.below(max);
                let len = 1 + rng.below((max - off).min(16 << 10)) as usize;
                let data = pattern(op, off, len);
                rec.pwrite(fd, &data, off)
                    .map_err(call_err(format!("pwrite {name} {len}@{off}")))?;
            }
            30..45 => {
                let off = rng.below(size + 1);
                let len = 1 + rng.below((size - off).clamp(1, 32 << 10)) as usize;
                verify_read(rec, fd, path, off, len, done)?;
            }
            45..55 => {
                let to = rng.below(max + 1);
                rec.ftruncate(fd, to)
                    .map_err(call_err(format!("ftruncate {name} {to}")))?;
            }
            55..70 => {
                let mode = [
                    FallocMode::Allocate,
                    FallocMode::KeepSize,
                    FallocMode::PunchHole,
                    FallocMode::ZeroRange,
                ][rng.below(4) as usize];
                let off = rng.below(max);
                let len = 1 + rng.below((max - off).min(32 << 10));
                rec.fallocate(fd, mode, off, len)
                    .map_err(call_err(format!("fallocate {name} {mode:?} {len}@{off}")))?;
            }
            70..82 => rec.fsync(fd).map_err(call_err(format!("fsync {name}")))?,
            82..92 => rec
                .fdatasync(fd)
                .map_err(call_err(format!("fdatasync {name}")))?,
            92..95 => rec.sync().map_err(call_err("sync"))?,
            _ => verify_read(rec, fd, path, 0, size as usize + 1, done)?,
        }
    }
    for (path, fd) in &files {
        verify_read(rec, *fd, path, 0, max as usize + 1, rec.steps())?;
        rec.close(*fd)
            .map_err(call_err(format!("close {}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_specs_round_trip_and_reject_nonsense() {
        for s in [
            "fsmark:S=1,n=40,s=4096,t=1",
            "fsmark:S=4,n=7,s=0,t=2",
            "fsx:seed=7,ops=300,files=3,max=65536",
        ] {
            let w: Workload = s.parse().expect("valid");
            assert_eq!(w.to_string(), s);
        }
        assert_eq!(
            "fsmark:n=5"
                .parse::<Workload>()
                .expect("defaults")
                .to_string(),
            "fsmark:S=1,n=5,s=4096,t=1"
        );
        for bad in [
            "fsmark:S=2",
            "fsmark:n=0",
            "fsmark:q=1",
            "fsmark:n=x",
            "fsx:max=100",
            "fsx:files=0",
            "tar",
            "fsx:seed",
        ] {
            assert!(bad.parse::<Workload>().is_err(), "{bad:?}");
        }
    }
}
