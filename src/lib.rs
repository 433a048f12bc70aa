//! fslab: reproducible filesystem-performance experiments.
//!
//! Module map (see `../shared/DESIGN.md` for the whole picture):
//!
//! - [`cli`]: flags every binary shares, unit parsers, exit codes.
//! - [`backend`]: the [`backend::Target`] trait, the VFS-like surface a workload sees, and its
//!   implementations (host system calls; labfs).
//! - [`workload`]: the workload engines (fs_mark loop, ...), written once, target-agnostic.
//! - [`report`]: output layers, one per format users already parse.
//! - [`trace`]: tracepoints and their sinks (ftrace text, JSON lines, counts, histograms).
//! - [`fs`]: labfs, the XFS-modelled reference filesystem, and its XFS-layout statistics.
//! - [`fuse`]: labfs mounted through FUSE, with its statistics and traces as files.

pub mod backend;
pub mod cli;
pub mod fs;
pub mod fuse;
pub mod report;
pub mod trace;
pub mod units;
pub mod workload;
