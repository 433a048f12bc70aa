//! Opening the filesystem a run works on: labfs on a block device, or the host's directories.
//!
//! A [`BackendConfig`] is the plain, already validated description every binary builds from
//! its `--fs`, `--device`, `-o` and `--mkfs` flags (see `cli::backend_args`); [`open`]
//! turns it into an [`OpenedBackend`], the one owner of the mount for the whole run. The
//! skeleton of every binary (`cli::tool`) calls it once, creates the `-d` parents on
//! it, hands its [`Target`] to the engine, and finally calls [`OpenedBackend::finish`], which
//! unmounts labfs and reports whether everything reached the device.
//!
//! Whether labfs is made fresh follows what a device can hold across runs: a memory device
//! (or a stripe of memory devices) starts empty every time, so it is always formatted; a
//! file device is mounted as it is, and formatted only when it holds nothing (or with
//! `--mkfs`), so files persist between runs as they would on a disk.

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

use super::host::HostTarget;
use super::lab::{Format, LabTarget};
use super::{Target, TargetError, mkdir_parents};
use crate::fs::dev::file::NewFiles;
use crate::fs::dev::spec::{DeviceSpec, MemberSpec};
use crate::fs::dev::{self, DevError};
use crate::fs::options::Options;
use crate::fs::stats::MountStats;
use crate::fs::stats::host::HostStatsScope;

/// labfs on a device: what to mount and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabConfig {
    /// The device labfs runs on.
    pub device: DeviceSpec,
    /// Its mkfs and mount options.
    pub options: Options,
    /// Make a new filesystem even if the device holds one (`--mkfs`).
    pub mkfs: bool,
}

impl LabConfig {
    /// labfs with default options on `device`.
    pub fn new(device: DeviceSpec) -> LabConfig {
        LabConfig {
            device,
            options: Options::default(),
            mkfs: false,
        }
    }

    /// Whether mkfs runs before the mount (see the module docs).
    pub fn format(&self) -> Format {
        let volatile = match &self.device {
            DeviceSpec::Mem(_) => true,
            DeviceSpec::Stripe(s) => s.members.iter().all(|m| matches!(m, MemberSpec::Mem(_))),
            DeviceSpec::File(_) => false,
        };
        if self.mkfs || volatile {
            Format::Always
        } else {
            Format::IfBlank
        }
    }
}

/// Which filesystem a run works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendConfig {
    /// The host's own filesystems, through system calls.
    Host,
    /// labfs on a device.
    Lab(LabConfig),
}

impl Default for BackendConfig {
    /// labfs with default options on the default memory device.
    fn default() -> Self {
        BackendConfig::Lab(LabConfig::new(DeviceSpec::default()))
    }
}

/// Where a run's XFS statistics come from.
#[derive(Debug, Clone)]
pub enum StatsSource {
    /// A labfs mount's own counters.
    Lab(Arc<MountStats>),
    /// The host kernel's statistics: the per-mount set of the XFS filesystem holding the
    /// run's directories, or the global `/proc/fs/xfs/stat` (the scope says which and why).
    Host {
        /// Which statistics.
        scope: HostStatsScope,
        /// The run's directories (synced before the final reading).
        dirs: Vec<PathBuf>,
    },
    /// The statistics files of a labfs mounted through FUSE (`MOUNTPOINT/.labfs/stats/`,
    /// holding `stats` and `stats_clear`): a host run in such a mount reads labfs's own
    /// counters for it, as a run on XFS reads `/sys/fs/xfs/<dev>/stats/`.
    Files(PathBuf),
}

/// The backend could not be opened.
#[derive(Debug, Error)]
pub enum OpenError {
    /// The device could not be opened (or created).
    #[error("--device: {0}")]
    Device(#[from] DevError),
    /// mkfs or mount failed.
    #[error("labfs: {0}")]
    Mount(TargetError),
}

/// A `-d` directory's parents could not be created on labfs.
#[derive(Debug, Error)]
#[error("cannot create the parents of {} on labfs: {source}", dir.display())]
pub struct ParentsError {
    /// The directory whose parents were being made.
    pub dir: PathBuf,
    /// What labfs said.
    pub source: TargetError,
}

/// The filesystem of one run, open for its whole length.
pub enum OpenedBackend {
    /// The host's filesystems.
    Host(Arc<HostTarget>),
    /// A mounted labfs.
    Lab(Arc<LabTarget>),
}

/// Open the backend `config` describes (for labfs: open the device, make the filesystem if
/// [`LabConfig::format`] says so, and mount it).
pub fn open(config: &BackendConfig) -> Result<OpenedBackend, OpenError> {
    match config {
        BackendConfig::Host => Ok(OpenedBackend::Host(Arc::new(HostTarget::new()))),
        BackendConfig::Lab(lab) => {
            // An image file this call creates is removed again if the device or the mount
            // fails (an impossible `-o agcount=`, a bad second stripe member), so a refused
            // run leaves nothing behind, as `labfs mkfs` does.
            let created = NewFiles::among(lab.device.file_paths());
            let mounted = dev::open(&lab.device)
                .map_err(OpenError::Device)
                .and_then(|device| {
                    LabTarget::new(device, &lab.options, lab.format()).map_err(OpenError::Mount)
                });
            match mounted {
                Ok(target) => Ok(OpenedBackend::Lab(Arc::new(target))),
                Err(e) => {
                    created.remove();
                    Err(e)
                }
            }
        }
    }
}

impl OpenedBackend {
    /// The target engines call, shareable with worker threads.
    pub fn target(&self) -> Arc<dyn Target> {
        match self {
            OpenedBackend::Host(h) => Arc::clone(h) as Arc<dyn Target>,
            OpenedBackend::Lab(l) => Arc::clone(l) as Arc<dyn Target>,
        }
    }

    /// The labfs mount, when the run is on labfs.
    pub fn lab(&self) -> Option<&Arc<LabTarget>> {
        match self {
            OpenedBackend::Host(_) => None,
            OpenedBackend::Lab(l) => Some(l),
        }
    }

    /// One line naming the filesystem, device and options (the target's `describe`).
    pub fn describe(&self) -> String {
        match self {
            OpenedBackend::Host(h) => h.describe(),
            OpenedBackend::Lab(l) => l.describe(),
        }
    }

    /// Where the statistics of a run in `dirs` come from.
    pub fn stats_source(&self, dirs: &[PathBuf]) -> StatsSource {
        match self {
            OpenedBackend::Host(_) => StatsSource::Host {
                scope: HostStatsScope::for_dirs(dirs),
                dirs: dirs.to_vec(),
            },
            OpenedBackend::Lab(l) => StatsSource::Lab(Arc::clone(&l.fs().stats)),
        }
    }

    /// On labfs, create the missing parents of each of `dirs` (labfs starts empty, so a
    /// workload pointed at `/mnt/x` needs `/mnt` first). On the host, nothing: a missing
    /// parent there is the user's to create, as with the real tools.
    pub fn create_parents(&self, dirs: &[PathBuf]) -> Result<(), ParentsError> {
        let OpenedBackend::Lab(lab) = self else {
            return Ok(());
        };
        for dir in dirs {
            mkdir_parents(lab.as_ref(), dir).map_err(|source| ParentsError {
                dir: dir.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// End the run: unmount labfs, writing everything back, and report any error. Every
    /// other holder of [`OpenedBackend::target`] must have dropped it by now.
    pub fn finish(self) -> Result<(), TargetError> {
        match self {
            OpenedBackend::Host(_) => Ok(()),
            OpenedBackend::Lab(lab) => lab.unmount(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::dev::LatencyParams;
    use crate::fs::dev::spec::{FileSpec, MemSpec, StripeSpec};
    use std::path::Path;

    #[test]
    fn memory_devices_are_always_formatted_and_files_only_when_blank_or_asked() {
        let mem = LabConfig::new(DeviceSpec::Mem(MemSpec::default()));
        assert_eq!(mem.format(), Format::Always);
        let file = LabConfig::new(DeviceSpec::File(FileSpec {
            path: "/tmp/x.img".into(),
            size: None,
            direct: false,
            latency: LatencyParams::NONE,
        }));
        assert_eq!(file.format(), Format::IfBlank);
        assert_eq!(
            LabConfig {
                mkfs: true,
                ..file.clone()
            }
            .format(),
            Format::Always
        );
        let stripe = |members| {
            LabConfig::new(DeviceSpec::Stripe(StripeSpec {
                su: 64 << 10,
                members,
            }))
        };
        let m = MemberSpec::Mem(MemSpec::default());
        let DeviceSpec::File(f) = file.device else {
            unreachable!("built as a file above")
        };
        assert_eq!(stripe(vec![m.clone(), m.clone()]).format(), Format::Always);
        assert_eq!(
            stripe(vec![m, MemberSpec::File(f)]).format(),
            Format::IfBlank
        );
    }

    #[test]
    fn a_failed_open_removes_the_image_files_it_created_and_only_those() {
        let dir = tempfile::tempdir().expect("scratch");
        let new = dir.path().join("new.img");
        let old = dir.path().join("old.img");
        std::fs::write(&old, b"someone's bytes").expect("a file of someone's");
        let spec = |text: String| -> DeviceSpec { text.parse().expect("spec") };
        let bad_geometry = LabConfig {
            options: Options::parse("agcount=100").expect("options"),
            ..LabConfig::new(spec(format!("file:{},size=8m", new.display())))
        };
        let err = open(&BackendConfig::Lab(bad_geometry))
            .err()
            .expect("100 groups do not fit 8 MiB");
        assert!(err.to_string().contains("agcount too large"), "{err}");
        assert!(
            !new.exists(),
            "the image made for the refused run was left behind"
        );

        // A stripe whose second member cannot be opened (a 15-byte file is no device): the
        // member made for it goes, the file that was there stays as it was.
        let stripe = spec(format!(
            "stripe:2,file:{},size=4m,file:{}",
            new.display(),
            old.display()
        ));
        assert!(open(&BackendConfig::Lab(LabConfig::new(stripe))).is_err());
        assert!(
            !new.exists(),
            "the stripe member made for the refused run was left behind"
        );
        assert_eq!(
            std::fs::read(&old).expect("still there"),
            b"someone's bytes"
        );
    }

    #[test]
    fn labfs_gets_its_parents_made_and_the_host_does_not() {
        let config = BackendConfig::Lab(LabConfig::new("mem:16m".parse().expect("spec")));
        let opened = open(&config).expect("opens");
        opened
            .create_parents(&[PathBuf::from("/a/b/c")])
            .expect("parents");
        let target = opened.target();
        assert!(target.stat(Path::new("/a/b")).is_ok());
        assert!(
            target.stat(Path::new("/a/b/c")).is_err(),
            "only the parents"
        );
        drop(target);
        opened.finish().expect("unmounts");

        let host = open(&BackendConfig::Host).expect("host");
        let missing = PathBuf::from("/nonexistent-fslab-dir/x");
        host.create_parents(std::slice::from_ref(&missing))
            .expect("nothing to do");
        assert!(!Path::new("/nonexistent-fslab-dir").exists());
    }
}
