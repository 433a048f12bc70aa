//! `labfs`: the admin tool for labfs images, as xfsprogs is for XFS: its command line and
//! what it prints.
//!
//! ```text
//! labfs mkfs  IMAGE [-f] [-s SIZE] [-o OPTIONS]   make a filesystem (mkfs.xfs)
//! labfs check IMAGE                               fsck, read-only (xfs_repair -n)
//! labfs info  IMAGE                               geometry and counters (xfs_info)
//! labfs print IMAGE WHAT                          decode metadata (xfs_db print)
//! labfs mount [--device SPEC | IMAGE] MOUNTPOINT [-o OPTIONS] [-f]
//!                                                 mount through FUSE ([`super::mount`])
//! labfs umount MOUNTPOINT                         unmount, after the final write-back
//! ```
//!
//! The work is done by [`crate::fs::admin`]; this module parses and prints. It runs no
//! workload on a backend, so of the tool skeleton ([`super::tool`]) it uses the command-line
//! parser and the exit statuses: 0 success (for `check`: clean), 1 a failure (for `check`:
//! problems found), 2 a refused command line or an image that cannot be opened or holds no
//! labfs. Errors are one line on stderr, `labfs: ...`; a closed stdout ends quietly.
//! `mount` and `umount` are [`super::mount`]'s, with its exit statuses (the same three).

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::ExitStatus;
use super::mount::{self, MountArgs, MountError, UmountArgs};
use super::tool;
use crate::fs::admin::check::check_image;
use crate::fs::admin::image::Image;
use crate::fs::admin::info::info;
use crate::fs::admin::mkfs::make;
use crate::fs::admin::print::{KindName, What, print};
use crate::fs::admin::{AdminError, mkfs::MkfsError};
use crate::fs::dev::spec::whole_device_size_problem;
use crate::fs::options::{MountOptions, Options};
use crate::units::parse_size;

/// The program name, the prefix of every line on stderr.
const NAME: &str = "labfs";

/// The `labfs` command line.
#[derive(Debug, Parser)]
#[command(
    name = "labfs",
    about = "Make, check, describe, decode and mount labfs images (what xfsprogs and mount \
             do for XFS)",
    after_help = "Exit status: 0 success (check: clean), 1 failure (check: problems found), \
                  2 bad command line, or an image that cannot be opened or holds no labfs."
)]
pub struct LabfsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Make a labfs filesystem on an image file or block device (mkfs.xfs).
    Mkfs(MkfsArgs),
    /// Check an image without changing it (xfs_repair -n): one line per problem on stdout.
    Check(ImageArg),
    /// Print an image's geometry and counters (xfs_info).
    Info(ImageArg),
    /// Decode a metadata structure field by field, by address or path (xfs_db print).
    Print(PrintArgs),
    /// Mount labfs through FUSE, so any program can use it (in the background unless -f).
    Mount(MountArgs),
    /// Unmount a labfs mount and wait for its final write-back.
    Umount(UmountArgs),
}

/// `labfs mkfs`.
#[derive(Debug, Args)]
pub struct MkfsArgs {
    /// The image file (created with --size) or block device.
    pub image: PathBuf,
    /// Overwrite whatever the image holds (a filesystem, or any data in its first MiB).
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Create the image file, or extend a shorter one, to this size (e.g. 1g).
    #[arg(short = 's', long, value_name = "SIZE", value_parser = parse_image_size)]
    pub size: Option<u64>,
    /// Options as every tool's -o takes them; mkfs uses agcount=N and logsize=SIZE.
    #[arg(short = 'o', value_name = "OPTIONS", value_parser = parse_options_arg)]
    pub options: Option<Options>,
}

/// A subcommand that takes only the image.
#[derive(Debug, Args)]
pub struct ImageArg {
    /// The image file or block device.
    pub image: PathBuf,
}

/// `labfs print`.
#[derive(Debug, Args)]
pub struct PrintArgs {
    /// The image file or block device.
    pub image: PathBuf,
    /// What to decode.
    #[command(subcommand)]
    pub what: PrintWhat,
}

/// What `labfs print` decodes.
#[derive(Debug, Subcommand)]
pub enum PrintWhat {
    /// A superblock copy (default AG 0, the primary).
    Sb {
        /// The AG.
        #[arg(default_value_t = 0)]
        agno: u32,
    },
    /// An AG's free-space header.
    Agf {
        /// The AG.
        agno: u32,
    },
    /// An AG's inode header.
    Agi {
        /// The AG.
        agno: u32,
    },
    /// An AG's free list.
    Agfl {
        /// The AG.
        agno: u32,
    },
    /// An inode, by number.
    Inode {
        /// The inode number.
        ino: u64,
    },
    /// A filesystem block (an AG header block, an inode cluster, a tree or directory block).
    Fsblock {
        /// The block number.
        fsblock: u64,
        /// Decode as this kind whatever its magic says (sb, agf, bnobt, inode, dir3_data, ...).
        #[arg(long = "type", value_name = "KIND")]
        kind: Option<KindName>,
    },
    /// The structure at a device address in 512-byte sectors.
    Daddr {
        /// The sector address.
        daddr: u64,
        /// Decode as this kind whatever its magic says.
        #[arg(long = "type", value_name = "KIND")]
        kind: Option<KindName>,
    },
    /// The inode a path names, and every metadata block it owns.
    Path {
        /// The path from the filesystem's root, e.g. /dir/file.
        path: String,
    },
}

impl PrintWhat {
    fn what(&self) -> What {
        match self {
            PrintWhat::Sb { agno } => What::Superblock { agno: *agno },
            PrintWhat::Agf { agno } => What::Agf { agno: *agno },
            PrintWhat::Agi { agno } => What::Agi { agno: *agno },
            PrintWhat::Agfl { agno } => What::Agfl { agno: *agno },
            PrintWhat::Inode { ino } => What::Inode { ino: *ino },
            PrintWhat::Fsblock { fsblock, kind } => What::FsBlock {
                fsblock: *fsblock,
                kind: kind.map(|k| k.0),
            },
            PrintWhat::Daddr { daddr, kind } => What::Daddr {
                daddr: *daddr,
                kind: kind.map(|k| k.0),
            },
            PrintWhat::Path { path } => What::Path { path: path.clone() },
        }
    }
}

/// An image size for mkfs: refused here, before any file is made, when no labfs fits it.
fn parse_image_size(s: &str) -> Result<u64, String> {
    let n = parse_size(s).map_err(|e| e.to_string())?;
    match whole_device_size_problem(n) {
        Some(reason) => Err(reason),
        None => Ok(n),
    }
}

fn parse_options_arg(s: &str) -> Result<Options, String> {
    Options::parse(s).map_err(|e| e.to_string())
}

/// The exit status an admin error calls for: 2 when the image cannot be opened, holds no
/// labfs, or an address is outside it (the command line is wrong); 1 otherwise.
fn status_of(e: &AdminError) -> ExitStatus {
    match e {
        AdminError::Open(_) | AdminError::NotLabfs { .. } | AdminError::OutOfRange { .. } => {
            ExitStatus::Usage
        }
        AdminError::Mkfs(
            MkfsError::Missing(_) | MkfsError::Open(_) | MkfsError::Refused { .. },
        ) => ExitStatus::Usage,
        AdminError::Io(_)
        | AdminError::Mount { .. }
        | AdminError::Path { .. }
        | AdminError::Mkfs(_) => ExitStatus::Failure,
    }
}

/// Run `labfs` with the process's arguments.
pub fn main() -> ExitCode {
    run(std::env::args_os().collect()).into()
}

/// Run `labfs` with `argv` (program name first) and return its exit status.
pub fn run(argv: Vec<OsString>) -> ExitStatus {
    let args = match tool::parse::<LabfsArgs>(NAME, argv) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let mut out = io::stdout().lock();
    let result = match &args.command {
        AdminCommand::Mkfs(a) => run_mkfs(a, &mut out),
        AdminCommand::Check(a) => run_check(&a.image, &mut out),
        AdminCommand::Info(a) => run_info(&a.image, &mut out),
        AdminCommand::Print(a) => run_print(a, &mut out),
        AdminCommand::Mount(a) => mount::mount(a)
            .map(|()| ExitStatus::Ok)
            .map_err(Ended::from),
        AdminCommand::Umount(a) => mount::umount(a)
            .map(|()| ExitStatus::Ok)
            .map_err(Ended::from),
    };
    match result {
        Ok(status) => status,
        Err(Ended::Admin(e)) => {
            eprintln!("{NAME}: {e}");
            status_of(&e)
        }
        Err(Ended::Mount(e)) => {
            if !e.already_reported() {
                eprintln!("{NAME}: {e}");
            }
            e.exit_status()
        }
        // `labfs print ... | head`: the reader has what it wanted.
        Err(Ended::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitStatus::Ok,
        Err(Ended::Output(e)) => {
            eprintln!("{NAME}: writing the output: {e}");
            ExitStatus::Failure
        }
    }
}

/// Why a subcommand stopped early.
enum Ended {
    Admin(AdminError),
    Mount(MountError),
    Output(io::Error),
}

impl From<AdminError> for Ended {
    fn from(e: AdminError) -> Ended {
        Ended::Admin(e)
    }
}

impl From<MountError> for Ended {
    fn from(e: MountError) -> Ended {
        Ended::Mount(e)
    }
}

impl From<io::Error> for Ended {
    fn from(e: io::Error) -> Ended {
        Ended::Output(e)
    }
}

fn run_mkfs(a: &MkfsArgs, out: &mut impl Write) -> Result<ExitStatus, Ended> {
    let opts = a.options.clone().unwrap_or_default();
    make(&a.image, a.size, &opts, a.force).map_err(AdminError::from)?;
    let img = Image::open(&a.image)?;
    write!(out, "{}", info(&img)?)?;
    Ok(ExitStatus::Ok)
}

fn run_check(image: &Path, out: &mut impl Write) -> Result<ExitStatus, Ended> {
    let img = Image::open(image)?;
    let result = check_image(&img, &MountOptions::default())?;
    for f in &result.findings {
        writeln!(out, "{f}")?;
    }
    out.flush()?;
    if let Some(e) = &result.unmountable {
        eprintln!(
            "{NAME}: {}: cannot be mounted ({e}); only the AG headers were checked",
            image.display()
        );
    }
    match &result.report {
        Some(r) if result.is_clean() => {
            eprintln!(
                "{NAME}: {}: clean ({} inodes, {} directories, {} free blocks)",
                image.display(),
                r.inodes,
                r.dirs,
                r.free_blocks
            );
            Ok(ExitStatus::Ok)
        }
        _ => {
            eprintln!(
                "{NAME}: {}: {} problem{} found",
                image.display(),
                result.findings.len(),
                if result.findings.len() == 1 { "" } else { "s" }
            );
            Ok(ExitStatus::Failure)
        }
    }
}

fn run_info(image: &Path, out: &mut impl Write) -> Result<ExitStatus, Ended> {
    let img = Image::open(image)?;
    let info = info(&img)?;
    if let Some(problem) = &info.located.primary_problem {
        eprintln!(
            "{NAME}: {}: primary superblock unreadable ({problem}); geometry from AG {}'s copy",
            image.display(),
            info.located.agno
        );
    }
    write!(out, "{info}")?;
    Ok(
        if info.unreadable_headers() == 0 && info.located.primary_problem.is_none() {
            ExitStatus::Ok
        } else {
            ExitStatus::Failure
        },
    )
}

fn run_print(a: &PrintArgs, out: &mut impl Write) -> Result<ExitStatus, Ended> {
    let img = Image::open(&a.image)?;
    let decoded = print(&img, &a.what.what())?;
    for (i, d) in decoded.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write!(out, "{d}")?;
    }
    Ok(ExitStatus::Ok)
}
