//! The host kernel's XFS, for tests that compare fslab with the real thing.
//!
//! These fixtures demand what they need: when the machine cannot provide it they panic with
//! the reason. They are meant for tests marked `#[ignore = "kernel XFS: ..."]` in a
//! `kernel_xfs` module, which run only when asked for (see the module docs of `common`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernel's XFS statistics file.
pub const STAT_FILE: &str = "/proc/fs/xfs/stat";

/// Why the machine cannot provide a kernel XFS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `/proc/fs/xfs/stat` is absent: the xfs module is not loaded (or not built).
    NoXfsModule,
    /// Mounting needs root.
    NotRoot,
    /// A command (mkfs.xfs, mount) could not be started or failed.
    Command {
        /// The command line.
        command: String,
        /// Its error output, or why it did not start.
        error: String,
    },
    /// Setting up the image's temporary directory failed.
    Scratch(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoXfsModule => {
                write!(f, "{STAT_FILE} is absent: the xfs module is not loaded")
            }
            Unavailable::NotRoot => f.write_str("mounting an XFS image needs root"),
            Unavailable::Command { command, error } => write!(f, "`{command}` failed: {error}"),
            Unavailable::Scratch(e) => write!(f, "cannot make a scratch directory: {e}"),
        }
    }
}

/// Panic with a clear message: a kernel-XFS test was asked to run and cannot.
fn demand<T>(r: Result<T, Unavailable>) -> T {
    r.unwrap_or_else(|why| panic!("this kernel-XFS test was asked to run but cannot: {why}"))
}

/// The text of the kernel's statistics file, or why it cannot be read.
pub fn try_stat_file() -> Result<String, Unavailable> {
    std::fs::read_to_string(STAT_FILE).map_err(|_| Unavailable::NoXfsModule)
}

/// The text of the kernel's statistics file; panics with the reason when XFS is not loaded.
pub fn stat_file() -> String {
    demand(try_stat_file())
}

fn run(cmd: &mut Command) -> Result<(), Unavailable> {
    let command = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(Unavailable::Command {
            command,
            error: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        }),
        Err(e) => Err(Unavailable::Command {
            command,
            error: e.to_string(),
        }),
    }
}

/// A freshly made XFS image, loop-mounted in a temporary directory; unmounted and removed
/// on drop.
pub struct XfsMount {
    dir: tempfile::TempDir,
    mnt: PathBuf,
}

impl XfsMount {
    /// Make an XFS image of `bytes` with mkfs.xfs and loop-mount it, or say why not.
    pub fn try_new(bytes: u64) -> Result<XfsMount, Unavailable> {
        XfsMount::try_new_in(&std::env::temp_dir(), bytes)
    }

    /// [`XfsMount::try_new`] with the image in a temporary directory under `parent` (a
    /// benchmark puts it on tmpfs, so the kernel's XFS runs on memory as labfs's `mem`
    /// device does).
    pub fn try_new_in(parent: &Path, bytes: u64) -> Result<XfsMount, Unavailable> {
        try_stat_file()?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Unavailable::NotRoot);
        }
        let scratch = |e: std::io::Error| Unavailable::Scratch(e.to_string());
        let dir = tempfile::tempdir_in(parent).map_err(scratch)?;
        let img = dir.path().join("xfs.img");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(scratch)?;
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(bytes))
            .map_err(scratch)?;
        run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&img))?;
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&mnt))?;
        Ok(XfsMount { dir, mnt })
    }

    /// Make and mount an XFS image of `bytes`; panics with the reason when the machine
    /// cannot.
    pub fn new(bytes: u64) -> XfsMount {
        demand(XfsMount::try_new(bytes))
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }
}

impl Drop for XfsMount {
    fn drop(&mut self) {
        // A lazy unmount still detaches the filesystem if a test left a file open in it, so
        // the temporary directory below can be removed.
        if run(Command::new("umount").arg(&self.mnt)).is_err() {
            let _ = run(Command::new("umount").arg("-l").arg(&self.mnt));
        }
    }
}
