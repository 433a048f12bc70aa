//! fslab: reproducible filesystem-performance experiments.
//!
//! Module map. The design is written up in the repository's `docs/` folder: `architecture.md`
//! (layers and data flow), `format.md` (labfs on disk, byte by byte), `locking.md`,
//! `invariants.md` (and their test oracles), `tools.md`.
//!
//! - [`cli`]: the binaries' layer: each flag defined once, each tool's command, and the tool
//!   skeleton ([`cli::tool`]) every binary's `main` is built on.
//! - [`backend`]: the [`backend::Target`] trait, the VFS-like surface a workload sees, its
//!   implementations (host system calls; labfs), and opening either from a plain config.
//! - [`workload`]: the workload engines (fs_mark loop, ...), written once, target-agnostic.
//! - [`report`]: output layers, one per format users already parse.
//! - [`trace`]: tracepoints and their sinks (ftrace text, JSON lines, counts, histograms).
//! - [`testing`]: test doubles (recording and in-memory targets, a virtual clock); production
//!   code never imports them.
//! - [`fs`]: labfs, the XFS-modelled reference filesystem, and its XFS-layout statistics.
//! - [`fuse`]: labfs mounted through FUSE, with its statistics and traces as files.
//! - [`units`], [`rng`]: foundation modules below everything (size/duration parsing and
//!   printing; the one seeded random generator).

pub mod backend;
pub mod cli;
pub mod fs;
pub mod fuse;
pub mod report;
pub mod rng;
pub mod testing;
pub mod trace;
pub mod units;
pub mod workload;
