//! `--fs`, `--device`, `-o` and `--mkfs`: which filesystem a binary's workload runs on.
//!
//! `--fs lab` (the default) runs on labfs, made fresh on an in-memory device unless `--device`
//! names a file that already holds one; `--fs host` runs on the machine's real directories.
//! The workload code is the same either way; only the [`Target`] behind it changes.

use std::str::FromStr;
use std::sync::Arc;

use clap::Args;
use thiserror::Error;

use crate::backend::host::HostTarget;
use crate::backend::lab::{Format, LabTarget};
use crate::backend::{Target, TargetError};
use crate::cli::observe::StatsSource;
use crate::fs::dev::spec::{DeviceSpec, MemberSpec, SpecError};
use crate::fs::dev::{self, DevError};
use crate::fs::options::{OptionError, Options};

/// Which filesystem to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsKind {
    /// labfs (the default).
    #[default]
    Lab,
    /// The host's own filesystems.
    Host,
}

impl FromStr for FsKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lab" | "labfs" => Ok(FsKind::Lab),
            "host" => Ok(FsKind::Host),
            _ => Err(format!("unknown filesystem '{s}' (expected lab or host)")),
        }
    }
}

/// Target flags, flattened into each binary's arguments.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct TargetArgs {
    /// Run on labfs (`lab`, the default) or on the host's real directories (`host`).
    #[arg(long = "fs", value_name = "lab|host", default_value = "lab")]
    pub fs: FsKind,
    /// The block device labfs runs on, e.g. mem:1g, file:/tmp/lab.img,size=4g,
    /// stripe:6,su=64k,mem:1g (labfs only).
    #[arg(long, value_name = "SPEC", default_value = "mem", long_help = crate::fs::dev::spec::DEVICE_HELP)]
    pub device: DeviceSpec,
    /// labfs mount/mkfs options, comma separated: cksum=single|split, crc=crc32c|fast|soft,
    /// sync_wait=wblist|all, logbufs=N, logbsize=SIZE, agcount=N, logsize=SIZE, icache=N,
    /// bufcache=SIZE, dirty=SIZE.
    #[arg(
        short = 'o',
        long = "mount-options",
        value_name = "OPTIONS",
        default_value = ""
    )]
    pub options: String,
    /// Make a new labfs on the device even if it already holds one (a file device is
    /// otherwise mounted as it is; a memory device is always new).
    #[arg(long)]
    pub mkfs: bool,
}

impl Default for TargetArgs {
    fn default() -> Self {
        TargetArgs {
            fs: FsKind::Lab,
            device: DeviceSpec::from_str("mem").expect("default spec"),
            options: String::new(),
            mkfs: false,
        }
    }
}

/// A target could not be set up.
#[derive(Debug, Error)]
pub enum TargetSetupError {
    /// A bad `-o` option.
    #[error("{0}")]
    Options(#[from] OptionError),
    /// A bad device spec.
    #[error("--device: {0}")]
    Spec(#[from] SpecError),
    /// The device could not be opened.
    #[error("--device: {0}")]
    Device(#[from] DevError),
    /// mkfs or mount failed.
    #[error("labfs: {0}")]
    Mount(TargetError),
    /// Options only labfs understands were given with `--fs host`.
    #[error("{0} applies to labfs only (--fs lab)")]
    LabOnly(&'static str),
}

/// The target a run uses, with what the observability layer needs to know about it.
pub struct OpenedTarget {
    /// The target, shareable with worker threads.
    pub target: Arc<dyn Target>,
    /// Where statistics come from.
    pub stats: StatsSource,
    /// The labfs target, when it is labfs (to unmount at the end and report errors).
    pub lab: Option<Arc<LabTarget>>,
}

impl OpenedTarget {
    /// End the run: unmount labfs (writing everything back), reporting any error.
    pub fn finish(self) -> Result<(), TargetError> {
        match self.lab {
            Some(lab) => lab.unmount(),
            None => Ok(()),
        }
    }
}

/// Whether a tool makes a filesystem on `device` before mounting it: always with `--mkfs`
/// or on a volatile (memory-only) device, else only if the device is blank.
pub fn default_format(device: &DeviceSpec, mkfs: bool) -> Format {
    match (device, mkfs) {
        (_, true) | (DeviceSpec::Mem(_), _) => Format::Always,
        (DeviceSpec::Stripe(s), _) if s.members.iter().all(|m| matches!(m, MemberSpec::Mem(_))) => {
            Format::Always
        }
        _ => Format::IfBlank,
    }
}

impl TargetArgs {
    /// Open the target these flags describe.
    pub fn open(&self) -> Result<OpenedTarget, TargetSetupError> {
        let options = Options::parse(&self.options)?;
        match self.fs {
            FsKind::Host => {
                if !self.options.is_empty() {
                    return Err(TargetSetupError::LabOnly("-o"));
                }
                if self.mkfs {
                    return Err(TargetSetupError::LabOnly("--mkfs"));
                }
                Ok(OpenedTarget {
                    target: Arc::new(HostTarget::new()),
                    stats: StatsSource::Host,
                    lab: None,
                })
            }
            FsKind::Lab => {
                let device = dev::open(&self.device)?;
                let format = default_format(&self.device, self.mkfs);
                let lab = Arc::new(
                    LabTarget::new(device, &options, format).map_err(TargetSetupError::Mount)?,
                );
                let stats = StatsSource::Lab(Arc::clone(&lab.fs().stats));
                Ok(OpenedTarget {
                    target: Arc::clone(&lab) as Arc<dyn Target>,
                    stats,
                    lab: Some(lab),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_kind_parses_and_names_the_bad_value() {
        assert_eq!("host".parse::<FsKind>().unwrap(), FsKind::Host);
        assert!(
            "ext4"
                .parse::<FsKind>()
                .unwrap_err()
                .contains("expected lab or host")
        );
    }

    #[test]
    fn host_refuses_labfs_options() {
        let a = TargetArgs {
            fs: FsKind::Host,
            options: "cksum=split".into(),
            ..TargetArgs::default()
        };
        assert!(matches!(a.open(), Err(TargetSetupError::LabOnly("-o"))));
    }

    #[test]
    fn bad_options_are_reported_before_anything_opens() {
        let a = TargetArgs {
            options: "nosuch=1".into(),
            ..TargetArgs::default()
        };
        let e = a.open().err().unwrap();
        assert!(e.to_string().contains("nosuch=1"), "{e}");
    }
}
