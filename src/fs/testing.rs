//! Fixtures shared by labfs's unit tests (compiled only under `cfg(test)`).
//!
//! The integration tests have their own, fuller set in `tests/common` (every device kind, file
//! images in temporary directories, a kernel XFS mount); unit tests inside the crate need only
//! a fresh filesystem on a memory device, which is this module.

use std::sync::Arc;

use crate::fs::Fs;
use crate::fs::dev::{BlockDev, MemDev};
use crate::fs::mkfs::mkfs;
use crate::fs::options::Options;

/// A freshly made and mounted labfs with default options on a memory device of `size` bytes.
pub(crate) fn mem_fs(size: u64) -> Arc<Fs> {
    let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(size).expect("memory device"));
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).expect("mkfs");
    Fs::mount(dev, opts.mount).expect("mount")
}
