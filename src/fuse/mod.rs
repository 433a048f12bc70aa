//! labfs as a real mounted filesystem, through FUSE: unmodified tools (fio, fs_mark, a
//! database, `fio --server` for multi-host runs) work on it, and its statistics and traces
//! are files under the mount.
//!
//! This layer sits above labfs ([`crate::fs`]) beside [`crate::backend`]: the kernel's FUSE
//! requests arrive on several threads and each becomes the labfs call a kernel VFS would make
//! ([`ops`] has the table). The [`control`] directory `MOUNTPOINT/.labfs/` offers the gestures
//! the seed threads use on XFS (`cat .../stats/stats`, `echo 1 > .../stats_clear`, tracefs's
//! `set_event`, `trace`, `trace_pipe` and `hist`), served from this mount's own counters
//! ([`crate::fs::stats`]) and one trace session ([`crate::trace`]), see [`tracefs`].
//!
//! The mount is made with [`fuser`] (pure Rust; the kernel's `/dev/fuse` protocol, mounted
//! with `mount(2)` as root or through `fusermount3`). Choices, and why:
//!
//! - **No writeback cache** (the kernel's FUSE writeback cache is never requested): every
//!   `write(2)` reaches labfs, so labfs's page cache, delayed allocation and counters see the
//!   writes an application makes, as they would in-process or on XFS.
//! - **Private by default**: without `-o allow_other` only the mounting user (and nobody else,
//!   not even root) can use the mount; `default_permissions` is always on, so the kernel
//!   checks mode bits against the owners labfs records.
//! - **A clean unmount writes everything back**: when the kernel ends the connection, files
//!   still open are closed (unlinked ones freed) and labfs is unmounted, so a file device
//!   needs no recovery at the next mount. [`FuseMount::unmount`] and [`run_foreground`] report
//!   that final write-back's result.

pub mod control;
pub mod nodes;
pub mod ops;
pub mod tracefs;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fuser::{BackgroundSession, Config, MountOption, Session, SessionACL};
use parking_lot::Mutex;
use thiserror::Error;

use crate::fs::Fs;
use crate::fs::error::FsError;
use crate::fuse::ops::{LabFuse, Outcome};

/// Options of the FUSE layer, given in the same `-o` list as labfs's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuseOptions {
    /// Let every user use the mount (FUSE's `allow_other`); off: only the mounting user.
    pub allow_other: bool,
    /// Open every file with the kernel's page cache bypassed (FUSE `direct_io`): every
    /// `read(2)` reaches labfs too, at the price of mmap.
    pub direct_io: bool,
    /// Threads serving requests.
    pub threads: usize,
}

impl Default for FuseOptions {
    fn default() -> Self {
        FuseOptions {
            allow_other: false,
            direct_io: false,
            threads: std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(2, 8),
        }
    }
}

/// A FUSE option that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad mount option '{option}': {reason}")]
pub struct FuseOptionError {
    /// The option as given.
    pub option: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FuseOptions {
    /// Take the FUSE layer's options (`allow_other`, `direct_io`, `threads=N`) out of a
    /// comma list; the rest (labfs's own options) is returned for
    /// [`Options::parse`](crate::fs::options::Options::parse).
    pub fn split(list: &str) -> Result<(FuseOptions, String), FuseOptionError> {
        let mut o = FuseOptions::default();
        let mut rest = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=').unwrap_or((item, "")) {
                ("allow_other", "") => o.allow_other = true,
                ("direct_io", "") => o.direct_io = true,
                ("threads", n) => {
                    o.threads = n
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| (1..=64).contains(&n))
                        .ok_or_else(|| FuseOptionError {
                            option: item.to_string(),
                            reason: "expected a thread count from 1 to 64".into(),
                        })?;
                }
                ("allow_other" | "direct_io", _) => {
                    return Err(FuseOptionError {
                        option: item.to_string(),
                        reason: "takes no value".into(),
                    });
                }
                _ => rest.push(item),
            }
        }
        Ok((o, rest.join(",")))
    }

    /// The fuser configuration: labfs's name and type in the mount table, the kernel
    /// checking permissions, private unless `allow_other`, one cloned `/dev/fuse` descriptor
    /// per thread.
    fn config(&self, source: &str) -> Config {
        let mut c = Config::default();
        c.mount_options = vec![
            MountOption::FSName(source.to_string()),
            // As a kernel option, so a direct mount(2) by root is typed `fuse.labfs` too
            // (fuser passes `Subtype` only to fusermount3).
            MountOption::CUSTOM("subtype=labfs".into()),
            MountOption::DefaultPermissions,
            MountOption::NoDev,
            MountOption::NoSuid,
        ];
        c.acl = if self.allow_other {
            SessionACL::All
        } else {
            SessionACL::Owner
        };
        c.n_threads = Some(self.threads);
        c.clone_fd = true;
        c
    }
}

/// The filesystem type mounts of labfs show in `/proc/self/mountinfo`.
pub const FSTYPE: &str = "fuse.labfs";

/// Mounting, serving or unmounting failed.
#[derive(Debug, Error)]
pub enum FuseError {
    /// The kernel mount failed (the mountpoint is missing or busy, no `/dev/fuse`, ...).
    #[error("cannot mount on {}: {source}", mountpoint.display())]
    Mount {
        /// Where.
        mountpoint: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Serving requests ended with an error.
    #[error("serving {}: {source}", mountpoint.display())]
    Serve {
        /// Where.
        mountpoint: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The kernel unmount failed.
    #[error("cannot unmount {}: {source}", mountpoint.display())]
    Unmount {
        /// Where.
        mountpoint: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// labfs could not be read or written at the start or at the final write-back.
    #[error("labfs: {0}")]
    Labfs(#[from] FsError),
    /// The connection ended without the final write-back having run.
    #[error("the FUSE session of {} ended without unmounting labfs", mountpoint.display())]
    NoWriteBack {
        /// Where.
        mountpoint: PathBuf,
    },
}

fn final_outcome(outcome: &Outcome, mountpoint: &Path) -> Result<(), FuseError> {
    match outcome.lock().take() {
        Some(r) => r.map_err(FuseError::Labfs),
        None => Err(FuseError::NoWriteBack {
            mountpoint: mountpoint.to_path_buf(),
        }),
    }
}

/// labfs mounted through FUSE, served by threads of this process. Dropping it unmounts.
pub struct FuseMount {
    session: Option<BackgroundSession>,
    outcome: Outcome,
    mountpoint: PathBuf,
}

impl FuseMount {
    /// Where it is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Unmount (the kernel side), wait for the serving threads, and return the result of
    /// labfs's final write-back.
    pub fn unmount(mut self) -> Result<(), FuseError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        session
            .umount_and_join()
            .map_err(|source| FuseError::Unmount {
                mountpoint: self.mountpoint.clone(),
                source,
            })?;
        final_outcome(&self.outcome, &self.mountpoint)
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}

/// Mount `fs` on `mountpoint` and serve it from background threads of this process.
/// `source` names the device in the mount table (e.g. `labfs:/tmp/lab.img`).
pub fn spawn(
    fs: Arc<Fs>,
    mountpoint: &Path,
    source: &str,
    opts: &FuseOptions,
) -> Result<FuseMount, FuseError> {
    let outcome: Outcome = Arc::new(Mutex::new(None));
    let lab = LabFuse::new(fs, opts.direct_io, Arc::clone(&outcome))?;
    let session = Session::new(lab, mountpoint, &opts.config(source))
        .and_then(Session::spawn)
        .map_err(|source| FuseError::Mount {
            mountpoint: mountpoint.to_path_buf(),
            source,
        })?;
    Ok(FuseMount {
        session: Some(session),
        outcome,
        mountpoint: mountpoint.to_path_buf(),
    })
}

/// Mount `fs` and serve it on this thread until the mount goes away: `labfs umount` (or any
/// unmount) from outside, or SIGINT, SIGTERM or SIGHUP to this process, which unmount it.
/// `mounted` runs once the mount is in place (a daemon reports readiness there). Returns the
/// result of labfs's final write-back.
pub fn run_foreground(
    fs: Arc<Fs>,
    mountpoint: &Path,
    source: &str,
    opts: &FuseOptions,
    mounted: impl FnOnce(),
) -> Result<(), FuseError> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

    // Block the signals in this thread before any other exists: every thread inherits the
    // mask, and one thread takes them with sigwait.
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), None).map_err(|e| FuseError::Mount {
        mountpoint: mountpoint.to_path_buf(),
        source: io::Error::from(e),
    })?;
    let outcome: Outcome = Arc::new(Mutex::new(None));
    let lab = LabFuse::new(fs, opts.direct_io, Arc::clone(&outcome))?;
    let mut session =
        Session::new(lab, mountpoint, &opts.config(source)).map_err(|source| FuseError::Mount {
            mountpoint: mountpoint.to_path_buf(),
            source,
        })?;
    let mut unmounter = session.unmount_callable();
    let mp = mountpoint.to_path_buf();
    std::thread::Builder::new()
        .name("labfs-signals".into())
        .spawn(move || {
            // The serving threads see the connection end and finish the write-back. The
            // unmount can fail (EBUSY while the kernel still holds a file of the mount), and
            // fuser gives up its handle on the mount when it does: the mount is then
            // detached lazily, as libfuse unmounts on exit, so it leaves the namespace at
            // once and the session ends when its last open file is closed. Each later
            // signal tries again: one failure never leaves the process deaf to them.
            while signals.wait().is_ok() {
                let Err(e) = unmounter.unmount() else { break };
                match nix::mount::umount2(&mp, nix::mount::MntFlags::MNT_DETACH) {
                    Ok(()) => break,
                    Err(d) => {
                        eprintln!("labfs: unmounting {}: {e}; detaching it: {d}", mp.display())
                    }
                }
            }
        })
        .map_err(|source| FuseError::Mount {
            mountpoint: mountpoint.to_path_buf(),
            source,
        })?;
    mounted();
    session.run().map_err(|source| FuseError::Serve {
        mountpoint: mountpoint.to_path_buf(),
        source,
    })?;
    final_outcome(&outcome, mountpoint)
}

/// The mount point containing `path`, from `/proc/self/mountinfo` (the longest mount point
/// that is `path` or one of its ancestors) and its filesystem type. `path` need not exist:
/// its nearest existing ancestor decides.
fn mount_of(path: &Path) -> Option<(PathBuf, String)> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let real = existing.canonicalize().ok()?;
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    table
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mountpoint = unescape_mountinfo(left.split(' ').nth(4)?);
            let fstype = right.split(' ').next()?.to_string();
            real.starts_with(&mountpoint)
                .then_some((PathBuf::from(mountpoint), fstype))
        })
        .max_by_key(|(mp, _)| mp.as_os_str().len())
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo` octal.
fn unescape_mountinfo(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount point of the labfs FUSE mount `path` is in, if it is in one.
pub fn labfs_mountpoint_of(path: &Path) -> Option<PathBuf> {
    let (mountpoint, fstype) = mount_of(path)?;
    (fstype == FSTYPE).then_some(mountpoint)
}

/// If `path` is inside a labfs FUSE mount, that mount's statistics directory
/// (`MOUNTPOINT/.labfs/stats`): what a host run there reads its XFS statistics from.
pub fn stats_dir_of(path: &Path) -> Option<PathBuf> {
    labfs_mountpoint_of(path).map(|mp| mp.join(control::CONTROL_DIR).join("stats"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuse_options_are_taken_out_and_the_rest_left_for_labfs() {
        let (o, rest) = FuseOptions::split("cksum=split,allow_other,threads=3,agcount=2").unwrap();
        assert!(o.allow_other && !o.direct_io);
        assert_eq!(o.threads, 3);
        assert_eq!(rest, "cksum=split,agcount=2");
        let (o, rest) = FuseOptions::split("").unwrap();
        assert_eq!((o, rest), (FuseOptions::default(), String::new()));
        for bad in ["threads=0", "threads=x", "allow_other=1", "direct_io=yes"] {
            let e = FuseOptions::split(bad).unwrap_err();
            assert_eq!(e.option, bad);
        }
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape_mountinfo(r"/mnt/a\040b\134c"), r"/mnt/a b\c");
        assert_eq!(unescape_mountinfo("/plain"), "/plain");
        assert_eq!(unescape_mountinfo(r"/odd\04"), r"/odd\04");
    }

    #[test]
    fn a_path_outside_labfs_mounts_has_no_stats_dir() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(stats_dir_of(&dir.path().join("not/yet/made")), None);
        assert!(
            mount_of(dir.path()).is_some(),
            "every path is on some mount"
        );
    }
}
