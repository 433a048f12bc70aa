//! labfs's block devices: the one seam between the filesystem and storage.
//!
//! Everything labfs persists goes through [`BlockDev`]: byte-addressed reads and writes in
//! whole 512-byte sectors, a per-write FUA flag, and a cache flush. The contract is the Linux
//! block layer's, reduced to what a journaling filesystem relies on:
//!
//! - A completed write is *visible* to every later read, but it is *durable* (survives a
//!   crash) only once a later [`BlockDev::flush`] has returned (`REQ_PREFLUSH`), or at once
//!   if it was issued with `fua` (`REQ_FUA`). XFS's log writes rely on exactly these two
//!   tools, so labfs's log can be tested against a device that really drops what was not made
//!   durable.
//! - Calls may come from many threads at once, on the same or different ranges. Each call is
//!   atomic per 512-byte sector with respect to every other call: a sector read concurrently
//!   with a write returns either all old or all new bytes, never a mix. Nothing larger than a
//!   sector is atomic (a crash can tear a multi-sector write; see [`fault`]).
//! - Offsets and lengths are multiples of 512; anything else is a [`DevError::Misaligned`],
//!   anything past the end a [`DevError::OutOfRange`]. Errors name the device and the request.
//!
//! The devices (selected by a `--device` spec, see [`crate::fs::dev::spec`]):
//!
//! - [`mem::MemDev`] (`mem:SIZE`, the default): sparse 4 KiB pages behind a lock-free page
//!   table, with a volatile write cache modelled as an undo set, so [`mem::MemDev::crash`]
//!   drops exactly the writes that were never made durable.
//! - [`file::FileDev`] (`file:PATH`): a regular file or a block device, via pread/pwrite and
//!   fdatasync, optionally `O_DIRECT`.
//! - [`stripe::StripeDev`] (`stripe:N,...`): RAID0 over N members.
//! - [`latency::LatencyDev`] (`lat=`, `bw=`, `flush=` on any device): a queue model that
//!   really delays I/O, so the cost of a cache flush, and hence fsync batching, is visible.
//! - [`overlay::OverlayDev`]: writes kept in memory over a device left untouched (`labfs
//!   check` replays a dirty log this way).
//! - [`fault::FaultDev`] (tests only): records writes and flushes, builds the crash image at
//!   any flush point (optionally torn), flips bits and injects I/O errors.
//!
//! [`open`] turns a parsed [`DeviceSpec`] into a device.

pub mod fault;
pub mod file;
pub mod latency;
pub mod mem;
pub mod overlay;
pub mod signature;
pub mod spec;
pub mod stripe;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

use crate::fs::dev::spec::{DeviceSpec, FileSpec, MemSpec, MemberSpec};

pub use fault::FaultDev;
pub use file::FileDev;
pub use latency::{LatencyDev, LatencyParams};
pub use mem::MemDev;
pub use stripe::StripeDev;

/// Bytes in a sector, the unit of alignment and of atomicity.
pub const SECTOR_SIZE: u64 = 512;

/// The smallest device any spec may describe: one 4 KiB filesystem block. (labfs's mkfs
/// enforces its own, larger minimum; this only keeps nonsense like `mem:512` out.)
pub const MIN_DEVICE_SIZE: u64 = 4096;

/// A block device labfs can live on.
pub trait BlockDev: Send + Sync {
    /// Size in bytes (a multiple of 512).
    fn size(&self) -> u64;
    /// Logical sector size; 512 for every device here.
    fn sector_size(&self) -> u32 {
        512
    }
    /// Read `buf.len()` bytes at byte `offset` (both multiples of 512).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError>;
    /// Write at `offset` (multiples of 512). With `fua`, the write is durable when this returns
    /// (REQ_FUA); otherwise it may sit in the device's volatile cache until `flush`.
    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError>;
    /// Make every completed write durable (REQ_PREFLUSH / fdatasync).
    fn flush(&self) -> Result<(), DevError>;
    /// One line for report headers, e.g. "mem:1GiB lat=20us bw=2GiB/s flush=100us".
    fn describe(&self) -> String;
    /// Whether a read costs no more than a copy from memory (a memory device with no read
    /// latency modelled). The page cache then keeps no clean pages once they are written
    /// back, as Linux keeps no page cache over DAX memory: a second copy would only cost the
    /// memory (and, first touched, the page faults) and save nothing.
    fn reads_at_memory_speed(&self) -> bool {
        false
    }
}

/// The three kinds of block I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    /// A read.
    Read,
    /// A write (FUA or not).
    Write,
    /// A cache flush.
    Flush,
}

impl fmt::Display for IoKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoKind::Read => "read",
            IoKind::Write => "write",
            IoKind::Flush => "flush",
        })
    }
}

/// One I/O request as errors report it: what, where, how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IoReq {
    /// Read, write or flush.
    pub kind: IoKind,
    /// Byte offset on the device (0 for a flush).
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
    /// Whether a write carried FUA.
    pub fua: bool,
}

impl IoReq {
    /// A read of `len` bytes at `offset`.
    pub fn read(offset: u64, len: usize) -> IoReq {
        IoReq {
            kind: IoKind::Read,
            offset,
            len: len as u64,
            fua: false,
        }
    }

    /// A write of `len` bytes at `offset`.
    pub fn write(offset: u64, len: usize, fua: bool) -> IoReq {
        IoReq {
            kind: IoKind::Write,
            offset,
            len: len as u64,
            fua,
        }
    }

    /// A cache flush.
    pub fn flush() -> IoReq {
        IoReq {
            kind: IoKind::Flush,
            offset: 0,
            len: 0,
            fua: false,
        }
    }
}

impl fmt::Display for IoReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            IoKind::Flush => f.write_str("flush"),
            kind => write!(
                f,
                "{}{kind} of {} bytes at byte {}",
                if self.fua { "FUA " } else { "" },
                self.len,
                self.offset
            ),
        }
    }
}

/// Everything a block device can fail with. Each variant names the device and the request.
#[derive(Debug, Clone, Error)]
pub enum DevError {
    /// Offset or length not a multiple of the 512-byte sector.
    #[error("{req} on {dev} is misaligned: offset and length must be multiples of 512")]
    Misaligned {
        /// The device, as [`BlockDev::describe`] names it.
        dev: String,
        /// The offending request.
        req: IoReq,
    },
    /// The request runs past the end of the device.
    #[error("{req} on {dev} runs past the end of the device ({size} bytes)")]
    OutOfRange {
        /// The device.
        dev: String,
        /// The offending request.
        req: IoReq,
        /// The device size in bytes.
        size: u64,
    },
    /// The underlying file or device failed the request.
    #[error("{req} on {dev} failed: {source}")]
    Io {
        /// The device.
        dev: String,
        /// The failed request.
        req: IoReq,
        /// What the operating system said.
        #[source]
        source: Arc<io::Error>,
    },
    /// A [`fault::FaultDev`] rule failed this request on purpose.
    #[error(
        "injected {} error on {req} ({dev}, {} {kind} since the rule was armed)",
        if *.sticky { "sticky" } else { "one-shot" }, ordinal(*.nth), kind = .req.kind
    )]
    Injected {
        /// The device.
        dev: String,
        /// The request that was failed.
        req: IoReq,
        /// Which request of its kind this was, counted from when the rule was armed (for a
        /// sticky failure after the device died, the count of that kind since arming).
        nth: u64,
        /// Whether the device now fails every request until the faults are cleared.
        sticky: bool,
    },
    /// A [`fault::FaultDev`] failed by an earlier [`fault::AfterFail::FailAll`] rule refuses
    /// every request until its faults are cleared.
    #[error("{req} on {dev} refused: the device failed after an injected error")]
    InjectedDead {
        /// The device.
        dev: String,
        /// The refused request.
        req: IoReq,
    },
    /// A file or block device could not be opened as a device.
    #[error("cannot use {path} as a device: {reason}", path = .path.display())]
    Open {
        /// The path given in the spec.
        path: PathBuf,
        /// Why not, in words (including the system's error text where there is one).
        reason: String,
    },
    /// A device could not be built from its parameters (size limits, stripe geometry).
    #[error("bad device configuration: {0}")]
    Config(String),
    /// A [`fault::FaultDev`] crash plan asks for something the log cannot provide.
    #[error("bad crash plan: {0}")]
    CrashPlan(String),
}

// `io::Error` is neither `PartialEq` nor `Clone` (hence the `Arc`), so equality is by the
// message: it names the device, the request and the system's error text, which is all a
// caller can observe of a device error. Comparing only the variant or the `io::ErrorKind`
// would call failures of two different requests equal. This lets `FsError`, which carries a
// `DevError`, keep deriving `PartialEq`/`Eq` for tests that compare whole errors.
impl PartialEq for DevError {
    fn eq(&self, other: &DevError) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for DevError {}

impl DevError {
    /// Wrap an operating-system error for `req` on `dev`.
    pub fn io(dev: String, req: IoReq, source: io::Error) -> DevError {
        DevError::Io {
            dev,
            req,
            source: Arc::new(source),
        }
    }
}

/// "1st", "2nd", "3rd", "4th", ... for error messages.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Check a read or write against the device's alignment and size rules.
///
/// Every device calls this first, so the errors are the same everywhere. `dev` is only
/// called on failure (it usually formats [`BlockDev::describe`]).
pub fn check_io(size: u64, req: IoReq, dev: impl FnOnce() -> String) -> Result<(), DevError> {
    if !req.offset.is_multiple_of(SECTOR_SIZE) || !req.len.is_multiple_of(SECTOR_SIZE) {
        return Err(DevError::Misaligned { dev: dev(), req });
    }
    match req.offset.checked_add(req.len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(DevError::OutOfRange {
            dev: dev(),
            req,
            size,
        }),
    }
}

/// Open the device a `--device` spec describes.
///
/// Latency options wrap the device in a [`LatencyDev`]; a stripe keeps one latency model per
/// member inside the [`StripeDev`] so that a write split over members waits for the slowest
/// member only, not for the sum of them.
pub fn open(spec: &DeviceSpec) -> Result<Arc<dyn BlockDev>, DevError> {
    let with_model = |dev: Arc<dyn BlockDev>, latency: LatencyParams| -> Arc<dyn BlockDev> {
        if latency.is_none() {
            dev
        } else {
            Arc::new(LatencyDev::new(dev, latency))
        }
    };
    match spec {
        DeviceSpec::Mem(m) => Ok(with_model(open_mem(m)?, m.latency)),
        DeviceSpec::File(f) => Ok(with_model(open_file(f)?, f.latency)),
        DeviceSpec::Stripe(s) => {
            let mut members = Vec::with_capacity(s.members.len());
            for m in &s.members {
                let (dev, latency) = match m {
                    MemberSpec::Mem(m) => (open_mem(m)?, m.latency),
                    MemberSpec::File(f) => (open_file(f)?, f.latency),
                };
                members.push(stripe::StripeMember { dev, latency });
            }
            Ok(Arc::new(StripeDev::new(members, s.su)?))
        }
    }
}

fn open_mem(spec: &MemSpec) -> Result<Arc<dyn BlockDev>, DevError> {
    Ok(Arc::new(MemDev::new(spec.size)?))
}

fn open_file(spec: &FileSpec) -> Result<Arc<dyn BlockDev>, DevError> {
    let opts = file::FileOptions {
        size: spec.size,
        direct: spec.direct,
    };
    Ok(Arc::new(FileDev::open(&spec.path, &opts)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_io_rejects_misaligned_offset_and_length() {
        let name = || "mem:1MiB".to_string();
        assert!(check_io(1 << 20, IoReq::read(512, 1024), name).is_ok());
        assert!(matches!(
            check_io(1 << 20, IoReq::read(100, 512), name),
            Err(DevError::Misaligned { .. })
        ));
        assert!(matches!(
            check_io(1 << 20, IoReq::write(512, 100, false), name),
            Err(DevError::Misaligned { .. })
        ));
    }

    #[test]
    fn check_io_rejects_past_end_and_overflow() {
        let name = || "mem:1MiB".to_string();
        assert!(check_io(1 << 20, IoReq::read((1 << 20) - 512, 512), name).is_ok());
        assert!(matches!(
            check_io(1 << 20, IoReq::read(1 << 20, 512), name),
            Err(DevError::OutOfRange { size, .. }) if size == 1 << 20
        ));
        assert!(matches!(
            check_io(1 << 20, IoReq::read(u64::MAX - 511, 1024), name),
            Err(DevError::OutOfRange { .. })
        ));
    }

    #[test]
    fn errors_name_device_and_request() {
        let e = check_io(4096, IoReq::write(8192, 512, true), || "mem:4KiB".into())
            .expect_err("past the end");
        assert_eq!(
            e.to_string(),
            "FUA write of 512 bytes at byte 8192 on mem:4KiB runs past the end of the device (4096 bytes)"
        );
        let e = DevError::Injected {
            dev: "fault(mem:4KiB)".into(),
            req: IoReq::flush(),
            nth: 2,
            sticky: false,
        };
        assert_eq!(
            e.to_string(),
            "injected one-shot error on flush (fault(mem:4KiB), 2nd flush since the rule was armed)"
        );
    }

    #[test]
    fn ordinals_follow_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
                "111th"
            ]
        );
    }
}
