//! Shared by the `fuse_*` tests: labfs mounted through FUSE in this process.
//!
//! These tests need FUSE (`/dev/fuse`, and root or `fusermount3`), which CI installs. A
//! machine that cannot mount makes them fail with the reason: they are never counted as
//! passed without running.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fuse::{FuseMount, FuseOptions, spawn};

/// labfs on a device, mounted through FUSE in a temporary directory.
pub struct Mounted {
    pub dir: tempfile::TempDir,
    pub dev: Arc<dyn BlockDev>,
    pub fs: Arc<Fs>,
    mount: Option<FuseMount>,
}

/// Why this machine cannot run FUSE tests, if it cannot.
pub fn fuse_unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some(
            "/dev/fuse is missing (install fuse3; in a container, pass the device)".into(),
        );
    }
    None
}

fn require_fuse() {
    if let Some(why) = fuse_unavailable() {
        panic!("cannot run a FUSE test here: {why}");
    }
}

impl Mounted {
    /// A fresh labfs of `size` bytes in memory, mounted.
    pub fn fresh(size: u64) -> Mounted {
        let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(size).expect("memory device"));
        mkfs(Arc::clone(&dev), &Options::default()).expect("mkfs");
        Mounted::on(dev, &FuseOptions::default())
    }

    /// Mount whatever labfs `dev` holds.
    pub fn on(dev: Arc<dyn BlockDev>, opts: &FuseOptions) -> Mounted {
        require_fuse();
        let dir = tempfile::tempdir().expect("tempdir");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("mountpoint");
        let fs = Fs::mount(Arc::clone(&dev), Options::default().mount).expect("labfs mount");
        let mount = spawn(Arc::clone(&fs), &mnt, "labfs:test", opts)
            .unwrap_or_else(|e| panic!("cannot run a FUSE test here: {e}"));
        Mounted {
            dir,
            dev,
            fs,
            mount: Some(mount),
        }
    }

    /// The mountpoint.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// A path inside the mount.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.path().join(rel)
    }

    /// Unmount, check the final write-back succeeded, and hand back the device.
    pub fn unmount(mut self) -> Arc<dyn BlockDev> {
        if let Some(m) = self.mount.take() {
            m.unmount().expect("clean unmount");
        }
        Arc::clone(&self.dev)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        drop(self.mount.take());
    }
}
