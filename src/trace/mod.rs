//! Tracepoints: static events that cost almost nothing when off, and the sinks that collect
//! them when on (ftrace text, JSON lines, per-event counts, ilog2 histograms).
//!
//! # Shape
//!
//! - [`events`]: the catalogue. Each event is declared once (name, subsystem, typed fields,
//!   print format) and fired through a plain function, e.g.
//!   `trace::events::xfs_log_force(dev, lsn, "xfs_file_fsync")`. The names, fields and
//!   formats are the kernel's (`fs/xfs/xfs_trace.h`), so a labfs trace reads like an XFS one;
//!   `crc32c` is fslab's own, the source of seed 004's checksum-size histograms.
//! - [`schema`]: the shape of an event: its definition ([`EventDef`]), typed fields
//!   ([`FieldDef`], [`FieldKind`]) and recorded values ([`Value`]).
//! - [`registry`]: the list of events ([`list`]), lookup by name ([`find`]), and [`EventSet`],
//!   the `--trace` selector (comma list, globs, `subsystem:glob`, `all`, `!exclusions`).
//! - [`session`]: [`TraceConfig`] -> [`Session`] -> [`TraceSummary`]. A session enables its
//!   events, decides what each one feeds (ring, counts, histograms), reads the thread buffers
//!   out and writes the merged records at the end.
//! - `collect` (crate-private): the firing side of a session: `emit`, which files every
//!   fired event in the firing thread's bounded ring (plus exact counts and histograms), and
//!   the process's one active-session slot.
//! - [`hist`]: [`Log2Hist`], the ilog2 histogram with byte ranges on every row, also used by
//!   `csumhist`.
//! - [`testing`]: the lock tests take before firing events or starting a session.
//!
//! # Cost when off
//!
//! A call site compiles to a relaxed load of the event's static flag and a branch around a
//! call to a `#[cold]`, `#[inline(never)]` emitter; arguments are only evaluated into
//! registers, nothing is stored. `benches/trace_disabled.rs` measures it against an empty
//! loop in the same run.
//!
//! # Usage
//!
//! ```no_run
//! use fslab::trace::{Dev, HistSpec, TraceConfig, TraceFormat, events};
//!
//! let session = TraceConfig {
//!     events: "xfs_log_force,xfs_ail_*".into(),
//!     format: TraceFormat::Ftrace,
//!     out: Some("trace.txt".into()),
//!     histograms: vec![HistSpec::new("crc32c", "len").grouped_by("site")],
//!     ..TraceConfig::default()
//! }
//! .start()?;
//! events::xfs_log_force(Dev { major: 7, minor: 0 }, 0x1a, "xfs_file_fsync");
//! events::crc32c("inode", 512, 100, 408, "split", "crc32c");
//! let summary = session.finish()?;
//! print!("{}", summary.render_counts());
//! # Ok::<(), fslab::trace::TraceError>(())
//! ```

mod collect;
pub mod events;
mod format;
pub mod hist;
pub mod registry;
mod ring;
pub mod schema;
pub mod session;
pub(crate) mod sys;
pub mod testing;

use std::fmt;

use thiserror::Error;

pub use hist::{Bucket, Log2Hist};
pub use registry::{EventSet, find, list, render_list};
pub use schema::{EventDef, FieldDef, FieldKind, Value};
pub use session::{
    DEFAULT_RING_ENTRIES, EventCount, HistResult, HistSpec, Session, TraceConfig, TraceFormat,
    TraceSummary,
};

/// A block device number, as XFS and writeback events print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Dev {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl fmt::Display for Dev {
    /// `major:minor`, the XFS form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// Everything setting up or finishing a trace session can fail with.
#[derive(Debug, Error)]
pub enum TraceError {
    /// A `--trace` term matched no event.
    #[error("no trace event matches '{0}' (see the event list)")]
    NoSuchEvent(String),
    /// A histogram spec is malformed or names a field that cannot key a histogram.
    #[error("bad histogram spec '{spec}': {reason}")]
    BadHistSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An output format other than `ftrace` or `json`.
    #[error("unknown trace format '{0}' (expected ftrace or json)")]
    BadFormat(String),
    /// A ring of zero entries per thread.
    #[error("trace ring size must be at least 1 entry per thread")]
    BadRingSize,
    /// `start` while another session is active in this process.
    #[error("a trace session is already active in this process")]
    SessionActive,
    /// The trace output could not be created or written.
    #[error("trace output {path}: {source}")]
    Output {
        /// The file (or `<stderr>`).
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
