//! Fixtures shared by the integration tests: `mod common;` at the top of a test file.
//!
//! - [`image`]: a fresh labfs on each kind of device (memory, a file in a temporary
//!   directory, a RAID0 stripe, the fault shim), with its options, mounted or not, plus the
//!   checks and edits almost every labfs test repeats (fsck is clean; flip a bit on the
//!   device).
//! - [`dirs`]: directory helpers (a directory full of files, its form, where its blocks are).
//! - [`xfs`]: the host kernel's XFS: its statistics file and a loop-mounted XFS image.
//! - [`fuse`]: labfs mounted through FUSE in the test process.
//! - [`model`]: the model filesystem of the model-based random tests.
//! - Random inputs come from the crate's one seeded generator, [`fslab::rng::SplitMix64`]:
//!   a failing seed replays exactly.
//!
//! ## Tests that cannot run their subject here
//!
//! A test whose subject the machine may not have (the kernel's XFS, which needs the xfs
//! module, and for a mount also root, loop devices and mkfs.xfs) must never count as passed
//! when it did not run. Such tests:
//!
//! 1. live in a module named `kernel_xfs` and carry `#[ignore = "kernel XFS: ..."]`, so
//!    `cargo test` lists them as *ignored*, visibly, and never as passed;
//! 2. are run on purpose with `cargo test --release -- --ignored kernel_xfs` (`.ci/run` does
//!    this where the machine has XFS, root and loop devices, and says so where it has not);
//! 3. once asked to run, demand their subject: the [`xfs`] fixtures panic with the reason
//!    ("/proc/fs/xfs/stat is absent: the xfs module is not loaded", "mount failed: ...")
//!    instead of returning early, so a run that asked for XFS cannot pass without it.
//!
//! FUSE tests follow the same rules in modules named `kernel_fuse` (`/dev/fuse` and root or
//! `fusermount3`; fio for the fio tests): `cargo test --release -- --ignored kernel_fuse`.
//!
//! Heavy tests use the same mechanism with their own reason (`#[ignore = "benchmark: ..."]`,
//! `#[cfg_attr(debug_assertions, ignore = "run with --release")]`).

#![allow(
    dead_code,
    reason = "each test binary compiles this module and uses a different part of it"
)]

pub mod dirs;
pub mod fuse;
pub mod image;
pub mod model;
pub mod xfs;
