//! A fresh labfs on any kind of device.
//!
//! ```ignore
//! let (img, fs) = common::image::mem(64 << 20).mount();            // mkfs + mount
//! let img = common::image::file(32 << 20).options("agcount=2").build(); // mkfs only
//! let fs = img.remount(fs);                                         // unmount + mount
//! ```
//!
//! Every builder runs labfs's own `mkfs` and `Fs::mount` with the image's [`Options`], so a
//! test states only what is particular to it. Failures panic with what failed: these are
//! fixtures, and a fixture that cannot build its image is a failed test.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::check::check;
use fslab::fs::dev::file::FileOptions;
use fslab::fs::dev::stripe::StripeMember;
use fslab::fs::dev::{BlockDev, FaultDev, FileDev, MemDev, SECTOR_SIZE, StripeDev};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;

/// The stripe unit of [`stripe`] images: 64 KiB, mkfs.xfs's usual `su` for RAID0.
pub const STRIPE_UNIT: u64 = 64 << 10;

/// The device an image lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A memory device of this many bytes.
    Mem(u64),
    /// A regular file of this many bytes in a fresh temporary directory.
    File(u64),
    /// A RAID0 stripe of `members` memory devices of `member_bytes` each.
    Stripe {
        /// Number of members.
        members: usize,
        /// Bytes per member.
        member_bytes: u64,
    },
    /// The fault shim over a memory device of this many bytes.
    Fault(u64),
}

/// What an image is to be made on and with; finish with [`ImageBuilder::build`] or
/// [`ImageBuilder::mount`].
#[derive(Debug, Clone)]
pub struct ImageBuilder {
    device: DeviceKind,
    options: Options,
}

/// A labfs on a memory device of `bytes`.
pub fn mem(bytes: u64) -> ImageBuilder {
    ImageBuilder::new(DeviceKind::Mem(bytes))
}

/// A labfs on a file of `bytes` in a temporary directory (removed with the image).
pub fn file(bytes: u64) -> ImageBuilder {
    ImageBuilder::new(DeviceKind::File(bytes))
}

/// A labfs on a RAID0 stripe of `members` memory devices of `member_bytes` each.
pub fn stripe(members: usize, member_bytes: u64) -> ImageBuilder {
    ImageBuilder::new(DeviceKind::Stripe {
        members,
        member_bytes,
    })
}

/// A labfs on the fault shim over a memory device of `bytes` (crash images, injected errors,
/// bit flips: see [`Image::fault`]).
pub fn fault(bytes: u64) -> ImageBuilder {
    ImageBuilder::new(DeviceKind::Fault(bytes))
}

impl ImageBuilder {
    fn new(device: DeviceKind) -> ImageBuilder {
        ImageBuilder {
            device,
            options: Options::default(),
        }
    }

    /// Use these `-o` options (mkfs and mount keys, as every binary takes them).
    pub fn options(mut self, spec: &str) -> ImageBuilder {
        self.options =
            Options::parse(spec).unwrap_or_else(|e| panic!("fixture options '{spec}': {e}"));
        self
    }

    /// Make the device and run mkfs on it; the image is not mounted.
    pub fn build(self) -> Image {
        let mut tempdir = None;
        let mut fault = None;
        let dev: Arc<dyn BlockDev> = match self.device {
            DeviceKind::Mem(bytes) => Arc::new(mem_dev(bytes)),
            DeviceKind::File(bytes) => {
                let dir = tempfile::tempdir().expect("temporary directory for a file image");
                let path = dir.path().join("lab.img");
                let dev = open_file(&path, Some(bytes));
                tempdir = Some((dir, path));
                Arc::new(dev)
            }
            DeviceKind::Stripe {
                members,
                member_bytes,
            } => {
                let members = (0..members)
                    .map(|_| StripeMember::plain(Arc::new(mem_dev(member_bytes))))
                    .collect();
                Arc::new(StripeDev::new(members, STRIPE_UNIT).expect("stripe device"))
            }
            DeviceKind::Fault(bytes) => {
                let shim = Arc::new(FaultDev::new_mem(bytes).expect("fault shim"));
                fault = Some(Arc::clone(&shim));
                shim
            }
        };
        mkfs(Arc::clone(&dev), &self.options)
            .unwrap_or_else(|e| panic!("mkfs on {}: {e}", dev.describe()));
        Image {
            dev,
            options: self.options,
            device: self.device,
            fault,
            file: tempdir,
        }
    }

    /// Make the image and mount it.
    pub fn mount(self) -> (Image, Arc<Fs>) {
        let img = self.build();
        let fs = img.mount();
        (img, fs)
    }
}

fn mem_dev(bytes: u64) -> MemDev {
    MemDev::new(bytes).unwrap_or_else(|e| panic!("memory device of {bytes} bytes: {e}"))
}

fn open_file(path: &Path, size: Option<u64>) -> FileDev {
    let opts = FileOptions {
        size,
        direct: false,
    };
    FileDev::open(path, &opts).unwrap_or_else(|e| panic!("file device {}: {e}", path.display()))
}

/// A device holding a labfs, and what it takes to mount it again.
pub struct Image {
    /// The device (for a fault image, the shim itself).
    pub dev: Arc<dyn BlockDev>,
    /// The options it was made with and is mounted with.
    pub options: Options,
    device: DeviceKind,
    fault: Option<Arc<FaultDev>>,
    file: Option<(tempfile::TempDir, PathBuf)>,
}

impl Image {
    /// What the image lives on.
    pub fn kind(&self) -> DeviceKind {
        self.device
    }

    /// Mount it with its options.
    pub fn mount(&self) -> Arc<Fs> {
        Fs::mount(Arc::clone(&self.dev), self.options.mount.clone())
            .unwrap_or_else(|e| panic!("mount {}: {e}", self.dev.describe()))
    }

    /// Unmount `fs` (which must be this image's) and mount the image again.
    pub fn remount(&self, fs: Arc<Fs>) -> Arc<Fs> {
        fs.unmount()
            .unwrap_or_else(|e| panic!("unmount {}: {e}", self.dev.describe()));
        drop(fs);
        self.mount()
    }

    /// The fault shim of an image made with [`fault`].
    pub fn fault(&self) -> &Arc<FaultDev> {
        self.fault
            .as_ref()
            .unwrap_or_else(|| panic!("{:?} is not a fault-shim image", self.device))
    }

    /// The image file of an image made with [`file`].
    pub fn path(&self) -> &Path {
        match &self.file {
            Some((_, path)) => path,
            None => panic!("{:?} is not a file image", self.device),
        }
    }

    /// A second, independent device on the same image file (what another process, or this
    /// one after closing the file, would open).
    pub fn reopen(&self) -> Arc<dyn BlockDev> {
        Arc::new(open_file(self.path(), None))
    }

    /// Flip the bits of `mask` in the byte at `offset` on the device, durably. The image
    /// must not be mounted (a mounted filesystem would overwrite the flip from its cache).
    pub fn flip(&self, offset: u64, mask: u8) {
        let sector = offset - offset % SECTOR_SIZE;
        let mut b = vec![0u8; SECTOR_SIZE as usize];
        self.dev
            .read_at(&mut b, sector)
            .unwrap_or_else(|e| panic!("read for a bit flip at {offset}: {e}"));
        b[(offset - sector) as usize] ^= mask;
        self.dev
            .write_at(&b, sector, false)
            .and_then(|()| self.dev.flush())
            .unwrap_or_else(|e| panic!("write a bit flip at {offset}: {e}"));
    }
}

/// Run fsck on `fs` and fail with every finding unless it is clean; `when` says at what
/// point of the test.
pub fn assert_clean(fs: &Fs, when: &str) {
    let r = check(fs).unwrap_or_else(|e| panic!("{when}: fsck could not run: {e}"));
    assert!(r.is_clean(), "{when}: fsck findings: {:#?}", r.findings);
}
