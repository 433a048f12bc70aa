//! The recovery scan: which records in a raw log region are the log, from its tail to its
//! head, and where the next record goes.
//!
//! XFS finds the head by binary-searching cycle stamps and then re-reads the last few
//! records to check their CRCs (`xlog_find_head`, `xlog_verify_head`). labfs's log is small
//! enough to read whole at mount, so the scan is simpler and checks more: every sector that
//! starts with the magic is a header candidate (stamping guarantees no other block can), the
//! CRC-valid record with the highest LSN is the head, and the chain of records from the head's
//! tail LSN to the head must be complete. A gap within the last `logbufs` records is what a
//! crash with several iclogs in flight leaves (a later record reached the disk, an earlier one
//! did not): the window is cut before it, as XFS moves its head back to the first bad record.
//! A gap further back cannot come from a crash, so it is corruption and mount must refuse.

use thiserror::Error;

pub use super::record::Record;
use super::record::{BB, LOG_MAGIC, Lsn, RecordError, check_header, decode_record, next_cycle};
use crate::fs::cksum::Cksum;
use crate::fs::error::FsError;
use crate::fs::format::BlockKind;
use crate::fs::format::endian::{get_u32, get_u64};

/// The valid part of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogWindow {
    /// The head record's `h_tail_lsn`: where replay starts.
    pub tail: Lsn,
    /// The records from the tail to the last good one, in order.
    pub records: Vec<Record>,
    /// Where the next record would be written: the block after the last good record.
    pub next: Lsn,
    /// Records found but not part of the window (torn or after a torn one), by LSN.
    pub cut: Vec<Lsn>,
}

/// Why a log region has no usable window.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScanError {
    /// The region is not a whole number of blocks (or is empty, or too large).
    #[error("log region of {len} bytes is not a whole number of 512-byte blocks")]
    Region {
        /// The region's length.
        len: usize,
    },
    /// No sector holds a CRC-valid record of this filesystem.
    #[error("no valid log record ({headers} header sectors of this filesystem, none valid)")]
    NoRecords {
        /// Sectors that looked like this filesystem's record headers.
        headers: usize,
    },
    /// A record between the tail and the head is missing or damaged, too far from the head
    /// to be a torn write.
    #[error(
        "log record {cycle}/{block} is bad ({why}); {to_head} records from it to the head {head}"
    )]
    Corrupt {
        /// The block where the record should start.
        block: u32,
        /// The cycle it should have.
        cycle: u32,
        /// What is wrong with it.
        why: String,
        /// The head record.
        head: Lsn,
        /// Records from it to the head, itself and the head included.
        to_head: usize,
    },
}

impl ScanError {
    /// The mount error, with the block made absolute (`log_daddr`: the log's first sector).
    pub fn at(self, log_daddr: u64) -> FsError {
        match self {
            ScanError::Region { .. } => FsError::Invalid("log region is not whole blocks"),
            ScanError::NoRecords { .. } => FsError::Corrupt {
                kind: BlockKind::LogRecord,
                daddr: log_daddr,
                what: self.to_string(),
            },
            ScanError::Corrupt { block, .. } => FsError::Corrupt {
                kind: BlockKind::LogRecord,
                daddr: log_daddr + u64::from(block),
                what: self.to_string(),
            },
        }
    }
}

impl From<ScanError> for FsError {
    /// The mount error with `daddr` relative to the log's start (see [`ScanError::at`]).
    fn from(e: ScanError) -> FsError {
        e.at(0)
    }
}

/// What a sector starting with the magic holds.
struct Slot {
    /// `h_lsn` as written (meaningful only when `mine`).
    lsn: Lsn,
    /// This filesystem's header, and at its own block: a record or a torn one.
    mine: bool,
    /// The decoded record, or why not.
    result: Result<Record, RecordError>,
}

/// Forward distance in blocks from `from` to `to`, if `to` is at most one cycle on.
fn distance(from: Lsn, to: Lsn, log_bb: u32) -> Option<u64> {
    if from.cycle() == to.cycle() {
        to.block().checked_sub(from.block()).map(u64::from)
    } else if next_cycle(from.cycle()) == to.cycle() {
        Some(u64::from(log_bb - from.block()) + u64::from(to.block()))
    } else {
        None
    }
}

/// Read sector `s`'s header candidate, and if it is one, the whole record behind it.
fn read_slot(cksum: &Cksum, log: &[u8], s: u32, uuid: &[u8; 16], log_bb: u32) -> Option<Slot> {
    let at = s as usize * BB;
    let sector = &log[at..at + BB];
    if get_u32(sector, 0) != LOG_MAGIC {
        return None;
    }
    let lsn = Lsn(get_u64(sector, 16));
    let mine = sector[304..320] == uuid[..] && lsn.block() == s;
    let result = check_header(sector, uuid, log_bb).and_then(|hdr| {
        let bytes = hdr.blocks() * BB;
        if at + bytes <= log.len() {
            decode_record(cksum, &log[at..at + bytes], uuid, log_bb)
        } else {
            // The record wraps: gather it in order.
            let mut v = log[at..].to_vec();
            v.extend_from_slice(&log[..bytes - (log.len() - at)]);
            decode_record(cksum, &v, uuid, log_bb)
        }
    });
    Some(Slot { lsn, mine, result })
}

/// Find the window of valid records in `log` (the whole log region) of filesystem `uuid`,
/// written with up to `logbufs` iclogs in flight.
pub fn find_window(
    cksum: &Cksum,
    log: &[u8],
    uuid: &[u8; 16],
    logbufs: u32,
) -> Result<LogWindow, ScanError> {
    if log.is_empty() || log.len() % BB != 0 || log.len() / BB > u32::MAX as usize {
        return Err(ScanError::Region { len: log.len() });
    }
    let log_bb = (log.len() / BB) as u32;
    let slots: Vec<Option<Slot>> = (0..log_bb)
        .map(|s| read_slot(cksum, log, s, uuid, log_bb))
        .collect();
    let mine = || slots.iter().flatten().filter(|s| s.mine);
    let valid: Vec<Lsn> = {
        let mut v: Vec<Lsn> = mine().filter(|s| s.result.is_ok()).map(|s| s.lsn).collect();
        v.sort();
        v
    };
    let Some(&head_lsn) = valid.last() else {
        return Err(ScanError::NoRecords {
            headers: mine().count(),
        });
    };
    let record_at = |lsn: Lsn| -> Result<&Record, String> {
        match &slots[lsn.block() as usize] {
            None => Err(format!(
                "no record header (first word {:#010x})",
                get_u32(log, lsn.block() as usize * BB)
            )),
            Some(slot) if !slot.mine => Err("a header of another filesystem or block".into()),
            Some(slot) if slot.lsn != lsn => Err(format!("a header of record {}", slot.lsn)),
            Some(Slot { result: Err(e), .. }) => Err(e.to_string()),
            Some(Slot { result: Ok(r), .. }) => Ok(r),
        }
    };
    let head = record_at(head_lsn).expect("the head is a valid record");
    let head_end = head_lsn.advance(head.header.blocks() as u64, log_bb);
    let tail = head.header.tail_lsn;
    let to_head = |at: Lsn| 1 + valid.iter().filter(|&&l| l > at && l <= head_lsn).count();
    let corrupt = |at: Lsn, why: String| ScanError::Corrupt {
        block: at.block(),
        cycle: at.cycle(),
        why,
        head: head_lsn,
        to_head: to_head(at),
    };
    if tail.block() >= log_bb
        || tail > head_lsn
        || distance(tail, head_end, log_bb).is_none_or(|d| d > u64::from(log_bb))
    {
        return Err(corrupt(
            head_lsn,
            format!("its tail lsn {tail} is not within one pass of the log behind it"),
        ));
    }

    // Headers past the head are newer writes that did not complete.
    let mut cut: Vec<Lsn> = mine()
        .filter(|s| s.result.is_err() && s.lsn > head_lsn)
        .map(|s| s.lsn)
        .collect();
    let mut records = Vec::new();
    let mut pos = tail;
    let next = loop {
        if pos > head_lsn {
            return Err(corrupt(pos, "the records before it run past the head".into()));
        }
        match record_at(pos) {
            Ok(r) => {
                records.push(r.clone());
                let end = pos.advance(r.header.blocks() as u64, log_bb);
                if pos == head_lsn {
                    break end;
                }
                pos = end;
            }
            Err(why) => {
                if to_head(pos) > logbufs as usize {
                    return Err(corrupt(pos, why));
                }
                cut.push(pos);
                cut.extend(valid.iter().filter(|&&l| l > pos && l <= head_lsn));
                break pos;
            }
        }
    };
    debug_assert!(records.is_empty() || next <= head_end);
    cut.sort();
    cut.dedup();
    Ok(LogWindow {
        tail,
        records,
        next,
        cut,
    })
}
