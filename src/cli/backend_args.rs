//! `--fs`, `--device`, `-o` and `--mkfs`: which filesystem a binary's workload runs on.
//!
//! `--fs lab` (the default) runs on labfs, made fresh on an in-memory device unless `--device`
//! names a file that already holds one; `--fs host` runs on the machine's real directories.
//! The workload code is the same either way; only the [`crate::backend::Target`] behind it
//! changes. Each flag is defined here once and flattened into every binary's parser;
//! [`BackendArgs::to_config`] checks how they combine and yields the plain
//! [`BackendConfig`] that [`crate::backend::open::open`] opens.

use std::str::FromStr;

use clap::Args;
use thiserror::Error;

use crate::backend::open::{BackendConfig, LabConfig};
use crate::fs::dev::spec::{DEVICE_HELP, DeviceSpec};
use crate::fs::options::{self, OptionError, Options};

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

/// Backend flags, flattened into each binary's arguments.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendArgs {
    /// Run on labfs (`lab`, the default) or on the host's real directories (`host`).
    #[arg(long = "fs", value_name = "lab|host", default_value = "lab")]
    pub fs: FsKind,
    /// The block device labfs runs on (default mem:1g), e.g. mem:4g,
    /// file:/tmp/lab.img,size=4g, stripe:6,su=64k,mem:1g.
    #[arg(long, value_name = "SPEC", long_help = DEVICE_HELP)]
    pub device: Option<DeviceSpec>,
    /// labfs mkfs/mount options (help text derived from the option table).
    #[arg(
        short = 'o',
        long = "mount-options",
        value_name = "OPTIONS",
        help = options::summary_help(),
        long_help = options::long_help()
    )]
    pub options: Option<String>,
    /// Make a new labfs on the device even if it already holds one (a file device is
    /// otherwise mounted as it is; a memory device is always new).
    #[arg(long)]
    pub mkfs: bool,
}

/// The backend flags do not make sense together.
#[derive(Debug, Error)]
pub enum BackendArgsError {
    /// A bad `-o` option.
    #[error("-o: {0}")]
    Options(#[from] OptionError),
    /// A flag only labfs understands was given with `--fs host`.
    #[error("{0} applies to labfs only (--fs lab), not to --fs host")]
    LabOnly(&'static str),
}

impl BackendArgs {
    /// Check how the flags combine and describe the backend they ask for.
    pub fn to_config(&self) -> Result<BackendConfig, BackendArgsError> {
        let options = Options::parse(self.options.as_deref().unwrap_or(""))?;
        match self.fs {
            FsKind::Host => {
                if self.device.is_some() {
                    return Err(BackendArgsError::LabOnly("--device"));
                }
                if self.options.is_some() {
                    return Err(BackendArgsError::LabOnly("-o"));
                }
                if self.mkfs {
                    return Err(BackendArgsError::LabOnly("--mkfs"));
                }
                Ok(BackendConfig::Host)
            }
            FsKind::Lab => Ok(BackendConfig::Lab(LabConfig {
                device: self.device.clone().unwrap_or_default(),
                options,
                mkfs: self.mkfs,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        backend: BackendArgs,
    }

    fn config(args: &[&str]) -> Result<BackendConfig, BackendArgsError> {
        let argv = std::iter::once("prog").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .expect("parses")
            .backend
            .to_config()
    }

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
    fn no_flags_is_labfs_on_the_default_memory_device() {
        assert_eq!(config(&[]).unwrap(), BackendConfig::default());
        let parsed = Cli::try_parse_from(["prog"]).unwrap();
        assert_eq!(
            parsed.backend,
            BackendArgs::default(),
            "Default is clap's default"
        );
        let BackendConfig::Lab(lab) = config(&["--device", "mem:64m", "--mkfs"]).unwrap() else {
            panic!("labfs")
        };
        assert_eq!(lab.device.to_string(), "mem:64m");
        assert!(lab.mkfs);
    }

    #[test]
    fn host_refuses_every_labfs_flag() {
        for (args, flag) in [
            (&["--fs", "host", "--device", "mem:4g"][..], "--device"),
            (&["--fs", "host", "-o", "cksum=split"][..], "-o"),
            (&["--fs", "host", "-o", ""][..], "-o"),
            (&["--fs", "host", "--mkfs"][..], "--mkfs"),
        ] {
            let e = config(args).unwrap_err();
            assert!(
                matches!(e, BackendArgsError::LabOnly(f) if f == flag),
                "{args:?}: {e}"
            );
            assert!(e.to_string().contains("--fs host"), "{e}");
        }
        assert_eq!(config(&["--fs", "host"]).unwrap(), BackendConfig::Host);
    }

    #[test]
    fn bad_options_are_reported_naming_the_option() {
        let e = config(&["-o", "nosuch=1"]).unwrap_err();
        assert!(e.to_string().contains("nosuch=1"), "{e}");
    }

    #[test]
    fn a_bad_device_spec_is_a_clap_error_naming_it() {
        let err = Cli::try_parse_from(["prog", "--device", "mem:1x"]).expect_err("bad size");
        assert!(
            err.to_string()
                .contains("bad size '1x' in 'mem:1x': unknown unit 'x' in '1x'"),
            "{err}"
        );
    }
}
