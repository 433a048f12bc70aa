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
use super::record::{
    BB, LOG_MAGIC, Lsn, MAX_LOGBSIZE, MIN_LOGBSIZE, RecordError, check_header, decode_record,
    next_cycle, record_blocks,
};
use crate::fs::cksum::Cksum;
use crate::fs::error::FsError;
use crate::fs::format::BlockKind;
use crate::fs::format::endian::{get_u32, get_u64};

/// The valid part of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogWindow {
    /// Where replay starts: the head record's `h_tail_lsn`, or the first record after the
    /// ones `skipped`.
    pub tail: Lsn,
    /// The records from the tail to the last good one, in order.
    pub records: Vec<Record>,
    /// Where the next record would be written: the block after the last good record.
    pub next: Lsn,
    /// Records found but not part of the window (torn or after a torn one), by LSN.
    pub cut: Vec<Lsn>,
    /// Records between the head's tail LSN and `tail` that newer writes overwrote in part
    /// (their changes were on disk before the tail moved past them), by LSN.
    pub skipped: Vec<Lsn>,
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

/// Whether the bad record at `pos`, near the tail, is one that writes after the head (the
/// window ending at `head_end`) overwrote, and if so the record the tail moves to.
///
/// The tail of a full log sits right after the head in the ring, so the writes in flight at a
/// crash land on the oldest records of the window: the tail moved past them before those
/// writes were issued, so their changes are on disk and recovery may start after them, as
/// `xlog_verify_tail` does. Unlike XFS it also asks for evidence of writes in flight between
/// the head's end and the record the tail moves to (a block stamped with, or a header of, the
/// pass after the one it held), so that a record that merely rotted near a full log's head is
/// still reported. A zeroed block is no evidence: one flipped bit makes a block of zeros
/// stamped with cycle 1 all zero.
fn overwritten(
    log: &[u8],
    slots: &[Option<Slot>],
    valid: &[Lsn],
    pos: Lsn,
    head_end: Lsn,
    reach: u64,
    log_bb: u32,
) -> Option<Lsn> {
    let behind = distance(pos, head_end, log_bb)?;
    if u64::from(log_bb).checked_sub(behind)? >= reach {
        return None;
    }
    let target = *valid.iter().find(|&&l| l > pos)?;
    // Writes in flight start at the head's end and run on from there, in the pass after the
    // blocks they cover: look for them anywhere up to the record the tail would move to.
    let span = u64::from(log_bb) - distance(target, head_end, log_bb)?;
    let newer = (0..span).any(|j| {
        let at = head_end.advance(j, log_bb);
        let b = at.block() as usize;
        match &slots[b] {
            Some(slot) => slot.mine && slot.lsn.cycle() == at.cycle(),
            None => get_u32(log, b * BB) == at.cycle(),
        }
    });
    newer.then_some(target)
}

/// iclogs XFS assumes were in flight when it verifies a head or tail (`XLOG_MAX_ICLOGS`):
/// the log may have been written under another `logbufs` than the mount's.
pub const MAX_ICLOGS: u32 = 8;

/// Find the window of valid records in `log` (the whole log region) of filesystem `uuid`,
/// written with up to `logbufs` iclogs in flight (pass [`MAX_ICLOGS`] unless the writer's
/// count is known).
pub fn find_window(
    cksum: &Cksum,
    log: &[u8],
    uuid: &[u8; 16],
    logbufs: u32,
) -> Result<LogWindow, ScanError> {
    if log.is_empty() || !log.len().is_multiple_of(BB) || log.len() / BB > u32::MAX as usize {
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
    // How far past the head writes in flight can reach: `logbufs` whole iclogs.
    let iclog = head.header.size.clamp(MIN_LOGBSIZE, MAX_LOGBSIZE) as usize;
    let reach = u64::from(logbufs) * record_blocks(iclog) as u64;
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    let mut tail = tail;
    let mut pos = tail;
    let next = loop {
        if pos > head_lsn {
            return Err(corrupt(
                pos,
                "the records before it run past the head".into(),
            ));
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
                    match overwritten(log, &slots, &valid, pos, head_end, reach, log_bb) {
                        Some(target) => {
                            skipped.extend(records.drain(..).map(|r: Record| r.header.lsn));
                            skipped.push(pos);
                            skipped
                                .extend(mine().map(|s| s.lsn).filter(|&l| l > pos && l < target));
                            (tail, pos) = (target, target);
                            continue;
                        }
                        None => return Err(corrupt(pos, why)),
                    }
                }
                cut.push(pos);
                cut.extend(valid.iter().filter(|&&l| l > pos && l <= head_lsn));
                break pos;
            }
        }
    };
    cut.sort();
    cut.dedup();
    skipped.sort();
    skipped.dedup();
    Ok(LogWindow {
        tail,
        records,
        next,
        cut,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::record::{RecordHeader, encode_record};
    use super::*;

    const UUID: [u8; 16] = *b"labfs-log-uuid!!";

    /// A writer filling a log as the journal does: records back to back, the cycle bumped
    /// at each wrap, the tail moved forward only as far as the next record needs (keeping
    /// `slack` blocks free).
    struct Ring {
        ck: Cksum,
        log: Vec<u8>,
        log_bb: u32,
        next: Lsn,
        prev: u32,
        slack: u64,
        recs: Vec<Record>,
        tail_idx: usize,
    }

    impl Ring {
        fn new(log_bb: u32, slack: u64) -> Ring {
            Ring {
                ck: Cksum::default(),
                log: vec![0; log_bb as usize * BB],
                log_bb,
                next: Lsn::new(1, 0),
                prev: 0,
                slack,
                recs: Vec::new(),
                tail_idx: 0,
            }
        }

        fn write(&mut self, blocks: usize) -> Lsn {
            let len = blocks * BB;
            let end = self.next.advance(record_blocks(len) as u64, self.log_bb);
            let room = u64::from(self.log_bb) - self.slack;
            while self.tail_idx < self.recs.len()
                && distance(self.recs[self.tail_idx].header.lsn, end, self.log_bb)
                    .is_none_or(|d| d > room)
            {
                self.tail_idx += 1;
            }
            let tail = self
                .recs
                .get(self.tail_idx)
                .map_or(self.next, |r| r.header.lsn);
            let header = RecordHeader {
                cycle: self.next.cycle(),
                len: len as u32,
                lsn: self.next,
                tail_lsn: tail,
                prev_block: self.prev,
                num_logops: blocks as u32,
                size: 32768,
                uuid: UUID,
            };
            let seed = self.recs.len() as u8;
            let payload: Vec<u8> = (0..len)
                .map(|i| (i as u8).wrapping_mul(13) ^ seed.wrapping_mul(101))
                .collect();
            let image = encode_record(&self.ck, &header, &payload, self.log_bb);
            self.place(self.next.block(), &image);
            self.recs.push(Record { header, payload });
            self.prev = self.next.block();
            self.next = end;
            header.lsn
        }

        fn place(&mut self, block: u32, image: &[u8]) {
            for (i, b) in image.chunks(BB).enumerate() {
                let at = (block as usize + i) % self.log_bb as usize * BB;
                self.log[at..at + BB].copy_from_slice(b);
            }
        }

        /// The window a scan should find now.
        fn window(&self) -> LogWindow {
            let last = self.recs.last().expect("a record");
            let records: Vec<Record> = self
                .recs
                .iter()
                .filter(|r| r.header.lsn >= last.header.tail_lsn)
                .cloned()
                .collect();
            LogWindow {
                tail: last.header.tail_lsn,
                records,
                next: self.next,
                cut: vec![],
                skipped: vec![],
            }
        }

        fn scan(&self, logbufs: u32) -> Result<LogWindow, ScanError> {
            find_window(&self.ck, &self.log, &UUID, logbufs)
        }

        /// Blocks a record occupies, as log byte ranges.
        fn extent(&self, r: &Record) -> Vec<std::ops::Range<usize>> {
            (0..r.header.blocks())
                .map(|i| {
                    let at = (r.header.lsn.block() as usize + i) % self.log_bb as usize * BB;
                    at..at + BB
                })
                .collect()
        }
    }

    fn sizes(i: usize) -> usize {
        [1, 3, 2, 7, 1, 5, 4, 2, 9, 1][i % 10]
    }

    #[test]
    fn the_window_follows_a_ring_through_wraps_and_overwrites() {
        for slack in [0, 20] {
            let mut ring = Ring::new(64, slack);
            assert_eq!(ring.scan(8), Err(ScanError::NoRecords { headers: 0 }));
            for i in 0..60 {
                ring.write(sizes(i));
                let want = ring.window();
                assert_eq!(ring.scan(8).as_ref(), Ok(&want), "slack {slack} after {i}");
            }
            assert!(ring.next.cycle() >= 4, "several passes: {}", ring.next);
        }
    }

    #[test]
    fn a_record_of_256k_and_a_wrapping_one_are_found() {
        let mut ring = Ring::new(1200, 0);
        for _ in 0..5 {
            ring.write(512);
            assert_eq!(ring.scan(8), Ok(ring.window()));
        }
        let w = ring.scan(8).expect("window");
        assert_eq!(w.records.last().unwrap().payload.len(), 262144);
        assert!(
            ring.recs.iter().any(|r| {
                r.header.lsn.block() as usize + r.header.blocks() > ring.log_bb as usize
            })
        );
    }

    /// Tear the newest record (`how` damages its last sector, given what was there before
    /// it was written) and check the window is the one before it, less any records at its
    /// tail that the torn write overwrote.
    fn torn_newest(slack: u64, how: fn(&mut [u8], &[u8])) {
        let mut overwrote = 0;
        for n in 5..40 {
            let mut ring = Ring::new(64, slack);
            for i in 0..n - 1 {
                ring.write(sizes(i));
            }
            let before = ring.window();
            let old = ring.log.clone();
            let lsn = ring.write(sizes(n - 1));
            let newest = ring.recs.last().unwrap().clone();
            let last = ring.extent(&newest).pop().unwrap();
            how(&mut ring.log[last.clone()], &old[last]);
            let got = ring.scan(4).unwrap_or_else(|e| panic!("n {n}: {e}"));
            // Records of the old window the torn write changed cannot be replayed.
            let damaged = before
                .records
                .iter()
                .rposition(|r| {
                    ring.extent(r)
                        .into_iter()
                        .any(|e| ring.log[e.clone()] != old[e])
                })
                .map_or(0, |i| i + 1);
            let skipped: Vec<Lsn> = before.records[..damaged]
                .iter()
                .map(|r| r.header.lsn)
                .collect();
            assert_eq!(got.records, before.records[damaged..], "n {n}");
            // The scan names the damaged records it can still see.
            assert_eq!(got.skipped.is_empty(), skipped.is_empty(), "n {n}");
            assert!(got.skipped.iter().all(|l| skipped.contains(l)), "n {n}");
            assert_eq!(got.cut, vec![lsn], "n {n}");
            assert_eq!(got.next, lsn, "n {n}");
            if damaged == 0 {
                assert_eq!(got.tail, before.tail);
            } else {
                overwrote += 1;
            }
        }
        // A full log puts the tail where the torn write lands.
        assert_eq!(overwrote > 0, slack == 0, "{overwrote} tails overwritten");
    }

    #[test]
    fn a_torn_newest_record_is_cut() {
        for slack in [0, 20] {
            torn_newest(slack, |sector, _| sector.fill(0));
            torn_newest(slack, |sector, old| sector.copy_from_slice(old));
        }
    }

    #[test]
    fn a_torn_record_under_a_later_one_cuts_both() {
        let mut ring = Ring::new(128, 30);
        for i in 0..12 {
            ring.write(sizes(i));
        }
        let before = ring.window();
        let a = ring.write(3);
        let b = ring.write(2);
        // The older of the two in-flight records lost a sector; the newer one landed.
        let torn = ring.extent(&ring.recs[ring.recs.len() - 2])[2].clone();
        ring.log[torn].fill(0);
        let got = ring.scan(4).expect("window");
        assert_eq!(got.records, before.records);
        assert_eq!((got.cut, got.next), (vec![a, b], a));
        // With one iclog the newer record cannot have been in flight with it.
        assert!(matches!(ring.scan(1), Err(ScanError::Corrupt { .. })));
    }

    #[test]
    fn damage_far_from_the_head_is_corruption() {
        for slack in [0, 20] {
            let mut ring = Ring::new(64, slack);
            for i in 0..30 {
                ring.write(sizes(i));
            }
            let w = ring.window();
            assert!(w.records.len() > 6, "{}", w.records.len());
            let victim = &w.records[1];
            let at = ring.extent(victim)[1].start + 100;
            ring.log[at] ^= 0x40;
            match ring.scan(4) {
                Err(ScanError::Corrupt {
                    block,
                    cycle,
                    to_head,
                    ..
                }) => {
                    assert_eq!(Lsn::new(cycle, block), victim.header.lsn);
                    assert_eq!(to_head, w.records.len() - 1);
                }
                other => panic!("slack {slack}: {other:?}"),
            }
            let e: FsError = ring.scan(4).unwrap_err().into();
            assert!(matches!(
                e,
                FsError::Corrupt { kind: BlockKind::LogRecord, daddr, .. }
                    if daddr == u64::from(victim.header.lsn.block())
            ));
        }
    }

    #[test]
    fn a_rotted_tail_record_of_a_full_log_is_corruption_not_an_overwrite() {
        let mut ring = Ring::new(64, 0);
        for i in 0..30 {
            ring.write(sizes(i));
        }
        let w = ring.window();
        let tail = &w.records[0];
        // The tail sits right after the head, within reach of writes in flight, but nothing
        // of a newer pass is there.
        let gap = (tail.header.lsn.block() + ring.log_bb - ring.next.block()) % ring.log_bb;
        assert!(gap < 16, "{gap} blocks from the head's end to the tail");
        let at = ring.extent(tail)[1].start + 7;
        ring.log[at] ^= 0x01;
        match ring.scan(MAX_ICLOGS) {
            Err(ScanError::Corrupt { block, cycle, .. }) => {
                assert_eq!(Lsn::new(cycle, block), tail.header.lsn)
            }
            other => panic!("{other:?}"),
        }
    }

    /// Flip every bit of every record in the window in turn: the scan returns untouched
    /// records or a typed error.
    fn every_bit_flip(slack: u64, log_bb: u32, n: usize) {
        let mut ring = Ring::new(log_bb, slack);
        for i in 0..n {
            ring.write(sizes(i) % 3 + 1);
        }
        let orig = ring.window();
        assert_eq!(ring.scan(4).as_ref(), Ok(&orig));
        let (mut cut, mut corrupt, mut skipped) = (0, 0, 0);
        for r in &orig.records {
            for range in ring.extent(r) {
                for bit in range.start * 8..range.end * 8 {
                    let mut log = ring.log.clone();
                    log[bit / 8] ^= 1 << (bit % 8);
                    match find_window(&ring.ck, &log, &UUID, 4) {
                        Ok(w) => {
                            let start = orig
                                .records
                                .iter()
                                .position(|o| Some(o) == w.records.first())
                                .unwrap_or(0);
                            assert_eq!(
                                w.records,
                                orig.records[start..start + w.records.len()],
                                "bit {bit}: records changed"
                            );
                            assert!(w.records.len() < orig.records.len(), "bit {bit} unseen");
                            if start > 0 || w.records.is_empty() && !w.skipped.is_empty() {
                                assert!(slack == 0 && !w.skipped.is_empty(), "bit {bit}");
                                skipped += 1;
                            } else {
                                cut += 1;
                            }
                        }
                        Err(ScanError::Corrupt { .. } | ScanError::NoRecords { .. }) => {
                            corrupt += 1
                        }
                        Err(e) => panic!("bit {bit}: {e}"),
                    }
                }
            }
        }
        assert!(cut > 0 && corrupt > 0, "cut {cut} corrupt {corrupt}");
        // Only a stamp flipped to the next pass's cycle forges the evidence of an overwrite.
        assert!(skipped < cut / 10, "skipped {skipped} cut {cut}");
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        every_bit_flip(40, 96, 8);
        every_bit_flip(0, 40, 14);
    }

    /// A log of random sectors, some made to look like this filesystem's headers.
    fn random_log() -> impl Strategy<Value = Vec<u8>> {
        (1usize..48).prop_flat_map(|n| {
            (
                proptest::collection::vec(any::<u8>(), n * BB),
                proptest::collection::vec((0..n, 0u32..4, 0u32..70, 0u32..n as u32), 0..12),
            )
                .prop_map(move |(mut log, fakes)| {
                    for (s, cycle, blocks, tail) in fakes {
                        let at = s * BB;
                        let h = RecordHeader {
                            cycle,
                            len: blocks * BB as u32,
                            lsn: Lsn::new(cycle, s as u32),
                            tail_lsn: Lsn::new(cycle, tail),
                            prev_block: 0,
                            num_logops: 1,
                            size: 32768,
                            uuid: UUID,
                        };
                        h.encode(&mut log[at..at + BB]);
                    }
                    log
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_logs_never_panic(log in random_log(), logbufs in 0u32..10) {
            let _ = find_window(&Cksum::default(), &log, &UUID, logbufs);
            let _ = find_window(&Cksum::default(), &log[..log.len() - 1], &UUID, logbufs);
        }
    }
}
