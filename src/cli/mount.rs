//! `labfs mount` and `labfs umount`: labfs as a mounted filesystem ([`crate::fuse`]).
//!
//! ```text
//! labfs mount [--device SPEC | IMAGE] MOUNTPOINT [-o OPTIONS] [-f]
//! labfs umount MOUNTPOINT
//! ```
//!
//! `-o` takes every tool's labfs options plus the FUSE layer's (`allow_other`, `direct_io`,
//! `threads=N`). A file device must already hold labfs (`labfs mkfs`); a memory device is made
//! fresh.
//!
//! **Background by default.** Like `mount.fuse` helpers (sshfs, ...), `labfs mount` starts a
//! copy of itself in foreground mode in a new session (so the terminal's Ctrl-C and hang-up
//! do not reach it), waits until that copy has mounted, and exits 0; if the copy fails before
//! mounting, its one-line error is the command's. The daemon then has no terminal: an error
//! in its final write-back goes to syslog (`labfs[PID]`). With `-f` the same work runs in the
//! calling process, errors on stderr, and SIGINT, SIGTERM or SIGHUP unmount cleanly (with a
//! file of the mount still open, the mount is detached at once and the process exits when
//! that file is closed).
//!
//! **Unmounting.** `labfs umount` unmounts (as `umount`/`fusermount3 -u` would) and then waits
//! for the daemon, whose pid `MOUNTPOINT/.labfs/pid` gives, to finish writing labfs back and
//! exit: when it returns, the image is complete and needs no recovery.
//!
//! Exit status: 0 success, 1 failure (the mount or the final write-back failed), 2 a refused
//! command line or a device that holds no labfs.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use thiserror::Error;

use super::ExitStatus;
use crate::backend::open::LabConfig;
use crate::fs::dev::spec::{DeviceSpec, FileSpec};
use crate::fs::dev::{self, DevError};
use crate::fs::error::FsError;
use crate::fs::mkfs::{Format, mount_formatted};
use crate::fs::options::{OptionError, Options};
use crate::fuse::{self, FuseError, FuseOptionError, FuseOptions};

/// The hidden flag a background `labfs mount` passes to the copy of itself that serves the
/// mount: report readiness on stdout, then detach from it.
pub const DAEMON_FLAG: &str = "--daemon-child";

/// `labfs mount`.
#[derive(Debug, Args)]
pub struct MountArgs {
    /// `[IMAGE] MOUNTPOINT`: the image file to mount (or use --device), and where.
    #[arg(value_name = "IMAGE|MOUNTPOINT", num_args = 1..=2, required = true)]
    pub paths: Vec<PathBuf>,
    /// The device labfs is on, in every tool's grammar (e.g. file:/tmp/lab.img, mem:1g,
    /// stripe:4,file:/dev/...), instead of an IMAGE.
    #[arg(long, value_name = "SPEC", long_help = crate::fs::dev::spec::DEVICE_HELP)]
    pub device: Option<DeviceSpec>,
    /// labfs options (as every tool's -o) and FUSE options: allow_other (let other users in;
    /// off, the mount is private to you), direct_io (bypass the kernel's page cache),
    /// threads=N (request-serving threads).
    #[arg(short = 'o', value_name = "OPTIONS", default_value = "")]
    pub options: String,
    /// Stay in the foreground (Ctrl-C, SIGTERM or SIGHUP unmount).
    #[arg(short = 'f', long)]
    pub foreground: bool,
    /// Internal: this is the background copy serving the mount.
    #[arg(long = "daemon-child", hide = true)]
    pub daemon_child: bool,
}

/// `labfs umount`.
#[derive(Debug, Args)]
pub struct UmountArgs {
    /// Where labfs is mounted.
    pub mountpoint: PathBuf,
}

/// What `labfs mount` or `labfs umount` could not do.
#[derive(Debug, Error)]
pub enum MountError {
    /// The paths do not say what to mount where.
    #[error("{0}")]
    Usage(&'static str),
    /// A bad `-o` option (FUSE's).
    #[error("{0}")]
    FuseOption(#[from] FuseOptionError),
    /// A bad `-o` option (labfs's).
    #[error("{0}")]
    Option(#[from] OptionError),
    /// The mountpoint is not a directory.
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The IMAGE named on the command line does not exist.
    #[error("{}: no such file (labfs mkfs IMAGE -s SIZE makes one)", .0.display())]
    NoImage(PathBuf),
    /// The device could not be opened (its message names the path).
    #[error("{0}")]
    Device(#[from] DevError),
    /// The device holds no labfs (or a damaged one).
    #[error("{device}: {source}")]
    NoLabfs {
        /// The device.
        device: String,
        /// What mounting said.
        source: FsError,
    },
    /// Mounting, serving or the final write-back failed.
    #[error(transparent)]
    Fuse(#[from] FuseError),
    /// The background copy could not be started, or was killed before mounting.
    #[error("cannot start the mount daemon: {0}")]
    Daemon(String),
    /// The background copy failed before mounting, and has said why on stderr: its exit
    /// status is the command's, with nothing more to print.
    #[error("the mount daemon failed before mounting (exit status {})", .0.code())]
    DaemonFailed(ExitStatus),
    /// `umount` of something that is not a labfs mount.
    #[error("{}: not a labfs mount", .0.display())]
    NotMounted(PathBuf),
    /// The kernel unmount failed.
    #[error("cannot unmount {}: {detail}", mountpoint.display())]
    Unmount {
        /// Where.
        mountpoint: PathBuf,
        /// Why.
        detail: String,
    },
}

impl MountError {
    /// The exit status this error ends the command with.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            MountError::Usage(_)
            | MountError::FuseOption(_)
            | MountError::Option(_)
            | MountError::NotADirectory(_)
            | MountError::NotMounted(_)
            | MountError::NoImage(_)
            // A path that cannot be used as a device is the command line's fault, as for
            // `labfs check` and `info`; a failed read or write is not.
            | MountError::Device(DevError::Open { .. } | DevError::Config(_))
            | MountError::NoLabfs { .. } => ExitStatus::Usage,
            MountError::DaemonFailed(status) => *status,
            _ => ExitStatus::Failure,
        }
    }

    /// Whether the error has been printed already (by the background copy), so the command
    /// only exits with its status.
    pub fn already_reported(&self) -> bool {
        matches!(self, MountError::DaemonFailed(_))
    }
}

impl MountArgs {
    /// The device and the mountpoint the paths and `--device` name.
    fn target(&self) -> Result<(DeviceSpec, &Path), MountError> {
        match (self.paths.as_slice(), &self.device) {
            ([image, mp], None) => Ok((
                DeviceSpec::File(FileSpec {
                    path: image.clone(),
                    size: None,
                    direct: false,
                    latency: Default::default(),
                }),
                mp,
            )),
            ([mp], Some(spec)) => Ok((spec.clone(), mp)),
            ([_, _], Some(_)) => Err(MountError::Usage(
                "give either an IMAGE or --device, not both",
            )),
            ([_], None) => Err(MountError::Usage(
                "what to mount? give IMAGE MOUNTPOINT or --device SPEC MOUNTPOINT",
            )),
            _ => Err(MountError::Usage("expected [IMAGE] MOUNTPOINT")),
        }
    }
}

/// Run `labfs mount`.
pub fn mount(args: &MountArgs) -> Result<(), MountError> {
    let (device, mountpoint) = args.target()?;
    let (fuse_opts, rest) = FuseOptions::split(&args.options)?;
    let options = Options::parse(&rest)?;
    if !mountpoint.is_dir() {
        return Err(MountError::NotADirectory(mountpoint.to_path_buf()));
    }
    if let DeviceSpec::File(f) = &device
        && args.device.is_none()
        && !f.path.exists()
    {
        // Said here, not by the device, whose wording is for --device specs.
        return Err(MountError::NoImage(f.path.clone()));
    }
    if !args.foreground && !args.daemon_child {
        return spawn_daemon();
    }
    // A memory device is new every time, so it is made; a file must hold labfs already.
    let format = match LabConfig::new(device.clone()).format() {
        Format::Always => Format::Always,
        _ => Format::Never,
    };
    let dev = dev::open(&device)?;
    let describe = dev.describe();
    let fs = mount_formatted(dev, &options, format).map_err(|source| MountError::NoLabfs {
        device: describe.clone(),
        source,
    })?;
    let source = format!("labfs:{describe}");
    let daemon = args.daemon_child;
    let result = fuse::run_foreground(Arc::clone(&fs), mountpoint, &source, &fuse_opts, || {
        if daemon {
            detach_after_ready();
        }
    });
    if daemon && let Err(e) = &result {
        syslog_error(&format!("{}: {e}", mountpoint.display()));
    }
    result.map_err(MountError::from)
}

/// Start the background copy (`labfs mount ... --daemon-child`) in its own session and wait
/// for it to say it has mounted; its error, if it fails first, reaches the user's stderr.
fn spawn_daemon() -> Result<(), MountError> {
    let exe = std::env::current_exe().map_err(|e| MountError::Daemon(e.to_string()))?;
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .arg(DAEMON_FLAG)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent's memory.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| MountError::Daemon(e.to_string()))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    if line.trim() == READY {
        return Ok(());
    }
    // The child failed before mounting; it has printed why.
    let status = child
        .wait()
        .map_err(|e| MountError::Daemon(e.to_string()))?;
    Err(match status.code() {
        Some(2) => MountError::DaemonFailed(ExitStatus::Usage),
        Some(_) => MountError::DaemonFailed(ExitStatus::Failure),
        None => MountError::Daemon("it was killed before mounting".into()),
    })
}

/// What the daemon prints when the mount is in place.
const READY: &str = "mounted";

/// In the daemon, once mounted: tell the waiting parent, then let go of its pipe and the
/// terminal (stdout and stderr become /dev/null).
fn detach_after_ready() {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{READY}");
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto the standard descriptors; `null` stays open until both are done.
        unsafe {
            libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO);
            libc::dup2(null.as_raw_fd(), libc::STDERR_FILENO);
        }
    }
}

/// Log one error line to syslog as `labfs[PID]` (the daemon has no terminal).
fn syslog_error(msg: &str) {
    let Ok(text) = std::ffi::CString::new(msg.replace('\0', " ")) else {
        return;
    };
    // SAFETY: the identity and format are static NUL-terminated strings; the message is
    // passed as an argument, never as the format.
    unsafe {
        libc::openlog(c"labfs".as_ptr(), libc::LOG_PID, libc::LOG_DAEMON);
        libc::syslog(libc::LOG_ERR, c"%s".as_ptr(), text.as_ptr());
        libc::closelog();
    }
}

/// How long `labfs umount` waits for the daemon's final write-back.
const WRITE_BACK_WAIT: Duration = Duration::from_secs(600);

/// Run `labfs umount`.
pub fn umount(args: &UmountArgs) -> Result<(), MountError> {
    let mp = args
        .mountpoint
        .canonicalize()
        .map_err(|_| MountError::NotMounted(args.mountpoint.clone()))?;
    if fuse::labfs_mountpoint_of(&mp).as_deref() != Some(mp.as_path()) {
        return Err(MountError::NotMounted(args.mountpoint.clone()));
    }
    let pid = daemon_pid(&mp);
    unmount_kernel(&mp)?;
    if let Some(pid) = pid {
        let deadline = Instant::now() + WRITE_BACK_WAIT;
        while process_alive(pid) {
            if Instant::now() > deadline {
                return Err(MountError::Unmount {
                    mountpoint: mp,
                    detail: format!("the daemon (pid {pid}) is still writing back"),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

/// The daemon's pid from the control directory, asked in a thread so a hung daemon cannot
/// hang the unmount.
fn daemon_pid(mp: &Path) -> Option<i32> {
    let path = mp.join(fuse::control::CONTROL_DIR).join("pid");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(path));
    });
    rx.recv_timeout(Duration::from_secs(5))
        .ok()?
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether process `pid` is still running (a zombie has finished).
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Unmount in the kernel: umount(2) as root, `fusermount3 -u` otherwise.
fn unmount_kernel(mp: &Path) -> Result<(), MountError> {
    match nix::mount::umount(mp) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EPERM) => {
            let out = Command::new("fusermount3")
                .arg("-u")
                .arg(mp)
                .output()
                .map_err(|e| MountError::Unmount {
                    mountpoint: mp.to_path_buf(),
                    detail: format!("fusermount3: {e}"),
                })?;
            if out.status.success() {
                Ok(())
            } else {
                Err(MountError::Unmount {
                    mountpoint: mp.to_path_buf(),
                    detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                })
            }
        }
        Err(e) => Err(MountError::Unmount {
            mountpoint: mp.to_path_buf(),
            detail: e.desc().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrap {
        #[command(flatten)]
        args: MountArgs,
    }

    fn parse(v: &[&str]) -> MountArgs {
        Wrap::try_parse_from(std::iter::once("mount").chain(v.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn image_or_device_and_a_mountpoint() {
        let a = parse(&["/tmp/lab.img", "/mnt/lab"]);
        let (dev, mp) = a.target().unwrap();
        assert!(matches!(dev, DeviceSpec::File(f) if f.path == Path::new("/tmp/lab.img")));
        assert_eq!(mp, Path::new("/mnt/lab"));
        let a = parse(&["--device", "mem:64m", "/mnt/lab", "-o", "allow_other", "-f"]);
        assert!(matches!(a.target().unwrap().0, DeviceSpec::Mem(_)));
        assert!(a.foreground);
        for bad in [&["/mnt/lab"][..], &["--device", "mem", "/a", "/b"]] {
            let e = parse(bad).target().unwrap_err();
            assert_eq!(e.exit_status(), ExitStatus::Usage, "{e}");
        }
    }

    #[test]
    fn bad_options_and_mountpoints_are_usage_errors_before_anything_opens() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("never-created.img");
        let mp = dir.path().to_str().unwrap().to_string();
        let run = |o: &str, mp: &str| {
            let a = parse(&[img.to_str().unwrap(), mp, "-o", o, "-f"]);
            mount(&a).unwrap_err()
        };
        let e = run("threads=0", &mp);
        assert!(matches!(e, MountError::FuseOption(_)), "{e}");
        let e = run("nosuch=1", &mp);
        assert!(matches!(e, MountError::Option(_)), "{e}");
        let e = run("", "/no/such/dir");
        assert!(matches!(e, MountError::NotADirectory(_)), "{e}");
        assert!(!img.exists(), "nothing was opened");
    }

    #[test]
    fn zombies_and_missing_processes_are_not_alive() {
        assert!(process_alive(std::process::id() as i32));
        assert!(!process_alive(i32::MAX));
    }
}
