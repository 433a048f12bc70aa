//! labfs mounted through FUSE in the test process, for the `fuse_*` tests.
//!
//! FUSE needs `/dev/fuse` and root (or `fusermount3`): a machine may not have them, so every
//! FUSE test lives in a module named `kernel_fuse` and carries
//! `#[ignore = "FUSE: ..."]` (see the module docs of `common`). `.ci/run` runs them with
//! `cargo test --release -- --ignored kernel_fuse` where the machine can mount, and says why
//! where it cannot. Asked to run, [`Mounted::mount`] demands FUSE: it panics with the reason
//! rather than return early.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fuse::{FuseMount, FuseOptions, spawn};

use super::image::{Image, ImageBuilder};

/// A labfs image mounted through FUSE in a temporary directory.
///
/// Fields drop in order: the mount goes before its directory is removed.
pub struct Mounted {
    mount: Option<FuseMount>,
    dir: tempfile::TempDir,
    /// The mounted filesystem, as the FUSE layer serves it.
    pub fs: Arc<Fs>,
    /// The image under the mount.
    pub img: Image,
}

impl Mounted {
    /// Build `image` and mount it with default FUSE options.
    pub fn fresh(image: ImageBuilder) -> Mounted {
        Mounted::mount(image.build(), &FuseOptions::default())
    }

    /// Mount what `img` holds.
    pub fn mount(img: Image, opts: &FuseOptions) -> Mounted {
        assert!(
            Path::new("/dev/fuse").exists(),
            "a FUSE test was asked to run, but /dev/fuse is missing (install fuse3; a \
             container needs the device passed in)"
        );
        let dir = tempfile::tempdir().expect("temporary directory for the mountpoint");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("mountpoint");
        let fs = img.mount();
        let mount = spawn(Arc::clone(&fs), &mnt, "labfs:test", opts)
            .unwrap_or_else(|e| panic!("a FUSE test was asked to run, but mounting failed: {e}"));
        Mounted {
            mount: Some(mount),
            dir,
            fs,
            img,
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

    /// Unmount (the final write-back must succeed) and hand back the image.
    pub fn unmount(mut self) -> Image {
        if let Some(m) = self.mount.take() {
            m.unmount()
                .unwrap_or_else(|e| panic!("unmount of {}: {e}", self.path().display()));
        }
        self.img
    }
}

/// Run a command to completion; its stdout, or a panic naming it with its stderr.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{:?} failed ({}):\n{}\n{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
