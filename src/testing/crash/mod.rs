//! The crash-consistency harness: run a workload on labfs over the fault shim, crash it at
//! every flush and FUA point with the unflushed writes landing in every way a device allows,
//! and check each recovered image against what was acknowledged.
//!
//! This is test infrastructure (it lives under [`crate::testing`], which no production code
//! imports); it is in the library so integration tests and the long-run command
//! (`examples/crashtest.rs`) share it.
//! It follows the tools the reliability notes describe: dm-log-writes and CrashMonkey record
//! every write and replay up to each persistence point; CrashMonkey/ACE showed that small
//! exhaustive workloads of up to three operations find most crash bugs; xfstests generic/455
//! runs fsx and checks the file at every fsync; redb and Fxfs check a reopened image against a
//! model of what was made durable.
//!
//! # How a run goes
//!
//! 1. **Record** ([`record`]): the workload runs on a [`record::Recorder`], labfs behind the
//!    `Target` surface every workload uses, over a [`crate::fs::dev::FaultDev`]. Each
//!    operation is applied to a model filesystem ([`model`]) and kept with the device
//!    positions (flushes and writes completed) at which it started and returned.
//! 2. **Choose crash states** ([`plan`]): at each flush point, the moment right after the
//!    flush and after each FUA write (durable states), and, for a filesystem with a journal,
//!    the moment before the next flush with every pending write landed, random prefixes,
//!    random subsets (a reordering cache), shuffled landing orders, and torn in-flight writes.
//! 3. **Check** ([`mod@sweep`]): build the image, mount it (log recovery runs there), run the
//!    full checker, walk the tree ([`image`]) and hand it to the oracle ([`oracle`]): the
//!    namespace must be the model's after some prefix of the operations (XFS's strictly
//!    ordered metadata) no shorter than every acknowledged fsync, fdatasync, sync and unmount
//!    demands, and every file's bytes and size what its last promise and the operations after
//!    it allow.
//! 4. **Report**: a failure names its case (`workload@point.completed.landing`), the crash
//!    moment, which pending writes landed and which tore, every finding, and the one command
//!    that reruns it ([`sweep::Case::rerun_command`]).
//!
//! Workloads ([`workload`], [`ace`]): fs_mark `-S1` and `-S4` (the real engine), an fsx-like
//! random loop with read-back verification, and every ACE sequence of up to three operations.
//! Every choice is seeded, and the recorder serialises calls, so a workload replays the same
//! operations on every run.
//!
//! # What labfs promises, by part
//!
//! Without a journal (part 1) labfs writes metadata home only when something asks for
//! durability, so it is consistent only at flush points: [`plan::Coverage::Durable`]. With
//! the journal (part 2) any crash must recover: [`plan::Coverage::Unflushed`].

pub mod ace;
pub mod image;
pub mod model;
pub mod oracle;
pub mod plan;
pub mod record;
pub mod suite;
pub mod sweep;
pub mod workload;

use thiserror::Error;

use crate::backend::TargetError;
use crate::fs::dev::DevError;
use crate::fs::error::FsError;
use crate::workload::fsmark::FsmarkError;

pub use plan::{Coverage, CrashSpec, Landing};
pub use suite::{Suite, sweep_all};
pub use sweep::{Case, Failure, SweepOptions, SweepReport, rerun, sweep};
pub use workload::Workload;

/// Why the harness itself could not go on (as opposed to a crash image failing its checks,
/// which is a [`oracle::Finding`]).
#[derive(Debug, Error)]
pub enum HarnessError {
    /// The fault shim refused a request or a crash plan.
    #[error("fault device: {0}")]
    Dev(#[from] DevError),
    /// labfs failed outside a workload call (reading the starting tree).
    #[error("labfs: {0}")]
    Fs(#[from] FsError),
    /// The filesystem to record on could not be made or mounted.
    #[error("making or mounting the filesystem to record on: {0}")]
    Mount(TargetError),
    /// A workload call failed on the live filesystem.
    #[error("{call} failed: {source}")]
    Call {
        /// The call.
        call: String,
        /// What labfs said.
        #[source]
        source: TargetError,
    },
    /// The fs_mark engine stopped.
    #[error("fs_mark: {0}")]
    Fsmark(#[from] FsmarkError),
    /// labfs and the model disagree about the live filesystem.
    #[error("the model and labfs diverged: {0}")]
    Diverged(String),
    /// A read of the live filesystem returned other bytes than the model holds.
    #[error(
        "read-back of {path} at byte {offset} after {after} operations: expected {expected:?}, \
         read {found:?}"
    )]
    ReadBack {
        /// The file.
        path: String,
        /// The first differing byte.
        offset: u64,
        /// The model's byte (`None`: past the model's end of file).
        expected: Option<u8>,
        /// The byte read (`None`: the read ended before it).
        found: Option<u8>,
        /// Operations recorded before the read.
        after: usize,
    },
    /// A workload of a suite could not be recorded or swept.
    #[error("{workload}: {source}")]
    Workload {
        /// The workload's spec.
        workload: String,
        /// Why.
        #[source]
        source: Box<HarnessError>,
    },
    /// A case, workload or crash state that cannot be parsed or does not exist.
    #[error("{0}")]
    BadCase(String),
}

/// Device size for the harness's filesystems: small, so images are cheap to copy.
pub const DEVICE_SIZE: u64 = 32 << 20;

/// A workload call failed: name it.
pub(crate) fn call_err(call: impl Into<String>) -> impl FnOnce(TargetError) -> HarnessError {
    let call = call.into();
    move |source| HarnessError::Call { call, source }
}

/// The byte operation `op` writes at `pos`: never zero, and different for neighbouring
/// operations and offsets, so a stale or misplaced byte shows.
pub fn pattern_byte(op: u64, pos: u64) -> u8 {
    (op.wrapping_mul(7919).wrapping_add(pos.wrapping_mul(31)) % 251 + 1) as u8
}

/// `len` bytes of operation `op`'s pattern starting at `pos`.
pub fn pattern(op: u64, pos: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(op, pos + i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_bytes_are_never_zero_and_tell_operations_apart() {
        assert!((0..5000).all(|p| pattern_byte(3, p) != 0));
        let a = pattern(1, 0, 64);
        let b = pattern(2, 0, 64);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
    }
}
