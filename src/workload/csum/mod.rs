//! csumhist's engine: where metadata checksum work goes, and how fast each CRC engine is.
//!
//! Thread 004 ("larger batches for crc32c", linux-xfs 2016) needed three pieces of evidence,
//! and each is a submodule here:
//!
//! - [`calls`]: an ilog2 histogram of the sizes passed to crc32c during a workload, split into
//!   the total, the head (bytes before the CRC field) and the tail (after it), as frequency and
//!   as bytes, plus which structures they came from, and how many crc32c computations the
//!   single-pass and split update methods make for the same work.
//! - [`run`]: running a workload on a fresh labfs with the `crc32c` tracepoint aggregated into
//!   histograms ([`run::measure`]); the built-in profiles ([`run::Profile`]: `fsmark-s1`,
//!   `oltp`) or any fsmark command line.
//! - [`oltp`]: the database-like mix the thread's MySQL load stands for.
//! - [`bench`](mod@bench): throughput of each CRC engine by buffer size, the breakeven size between them
//!   (the vectorised engine only pays off above some size), and CPU counters per byte
//!   ([`counters`]).
//!
//! The stat dump the thread decoded field by field comes with every measurement
//! ([`run::Measured::stats`]) and is rendered by `fs/stats`' own decoder.
//!
//! Rendering (tables, JSON, the SVG plot) is `report::csum`'s job; this module only measures
//! and computes.

pub mod bench;
pub mod calls;
pub mod counters;
pub mod oltp;
pub mod run;

pub use calls::{CallFilter, CallProfile, SmallBelow};
pub use run::{CsumError, Measured, Profile, Workload, measure};
