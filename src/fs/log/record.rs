//! The on-disk log record: header sector(s), cycle stamping and the record CRC, as XFS's
//! `xlog_rec_header` / `xlog_pack_data` / `xlog_cksum`.
//!
//! A record is one header sector (328 bytes of `xlog_rec_header`, the rest zero), one extended
//! header sector per further 32 KiB of payload, then the payload. Recovery has to tell a
//! record written in this pass over the log from the stale bytes of an earlier pass and from a
//! write that was torn, so the first word of every 512-byte block carries the cycle (pass
//! number) it was written in; the words it displaced are kept in the headers' cycle arrays.
//! Because a cycle number is never [`LOG_MAGIC`], only a header sector can start with the
//! magic, and a scan can find headers without knowing where records start. The CRC covers
//! the header (with `h_crc` zero), the extended headers and the stamped payload, so any
//! damage to what recovery replays is caught before the stamped words are restored.

use std::fmt;

use thiserror::Error;

use crate::fs::cksum::Cksum;
use crate::fs::error::CrcMismatch;
use crate::fs::format::endian::{get_u32, get_u64, put_u32, put_u64};

/// `h_magicno`; also never used as a cycle number.
pub const LOG_MAGIC: u32 = 0xFEED_BABE;
/// One header (or extended header) sector.
pub const HEADER_SIZE: usize = 512;
/// Bytes of `xlog_rec_header` covered by the CRC.
pub const REC_HEADER_LEN: usize = 328;
/// Bytes of `xlog_rec_ext_header` covered by the CRC.
pub const EXT_HEADER_LEN: usize = 260;
/// Payload bytes whose cycle words one header sector's array holds.
pub const CYCLE_SIZE: usize = 32768;
/// `h_version`: v2 logs (extended headers, h_size).
pub const VERSION: u32 = 2;
/// `h_fmt`: a little-endian Linux host wrote the log items.
pub const FMT_LE: u32 = 1;
/// Smallest iclog (`logbsize`).
pub const MIN_LOGBSIZE: u32 = 16384;
/// Largest iclog, and the largest payload a record may carry.
pub const MAX_LOGBSIZE: u32 = 262144;
/// A basic block: the unit of LSN blocks and of cycle stamping.
pub const BB: usize = 512;

/// The crc32c tracepoint site of a record header (csumhist's "log record header").
pub const SITE_HEADER: &str = "log_rec_header";
/// The crc32c tracepoint site of an extended header.
pub const SITE_EXT_HEADER: &str = "log_ext_header";
/// The crc32c tracepoint site of a record's payload.
pub const SITE_PAYLOAD: &str = "log_payload";

const OFF_MAGIC: usize = 0;
const OFF_CYCLE: usize = 4;
const OFF_VERSION: usize = 8;
const OFF_LEN: usize = 12;
const OFF_LSN: usize = 16;
const OFF_TAIL_LSN: usize = 24;
const OFF_CRC: usize = 32;
const OFF_PREV_BLOCK: usize = 36;
const OFF_NUM_LOGOPS: usize = 40;
const OFF_CYCLE_DATA: usize = 44;
const OFF_FMT: usize = 300;
const OFF_UUID: usize = 304;
const OFF_SIZE: usize = 320;
/// `xh_cycle_data` inside an extended header, after `xh_cycle`.
const OFF_EXT_CYCLE_DATA: usize = 4;
/// Saved words per header sector (`XLOG_HEADER_CYCLE_SIZE / BBSIZE`).
const WORDS_PER_HEADER: usize = CYCLE_SIZE / BB;

/// A log sequence number: (cycle << 32) | block, block in 512-byte units from the log start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The LSN of `block` in pass `cycle`.
    pub const fn new(cycle: u32, block: u32) -> Lsn {
        Lsn(((cycle as u64) << 32) | block as u64)
    }

    /// The pass over the log.
    pub const fn cycle(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The block within the log.
    pub const fn block(self) -> u32 {
        self.0 as u32
    }

    /// The position `blocks` further on in a log of `log_bb` blocks, the cycle bumped at
    /// every wrap (as `xlog_state_switch_iclogs` moves `l_curr_block`).
    pub fn advance(self, blocks: u64, log_bb: u32) -> Lsn {
        assert!(log_bb > 0, "a log has at least one block");
        let pos = u64::from(self.block()) + blocks;
        let mut cycle = self.cycle();
        for _ in 0..pos / u64::from(log_bb) {
            cycle = next_cycle(cycle);
        }
        Lsn::new(cycle, (pos % u64::from(log_bb)) as u32)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.cycle(), self.block())
    }
}

/// The cycle after `cycle`: the magic would make a stamped block look like a header, and 0
/// is what a never-written log holds, so neither is ever used.
pub fn next_cycle(cycle: u32) -> u32 {
    let mut c = cycle.wrapping_add(1);
    while c == LOG_MAGIC || c == 0 {
        c = c.wrapping_add(1);
    }
    c
}

/// Header sectors a record with `len` payload bytes has: one, plus an extended header per
/// further 32 KiB (the count `xlog_cksum` derives from `h_len`).
pub fn header_sectors(len: usize) -> usize {
    len.div_ceil(CYCLE_SIZE).max(1)
}

/// Blocks a record with `len` payload bytes occupies on disk: headers and payload.
pub fn record_blocks(len: usize) -> usize {
    header_sectors(len) + len.div_ceil(BB)
}

/// The fields of a record header that are not derived from the payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    /// `h_cycle`: the pass this record was written in (the cycle of `lsn`).
    pub cycle: u32,
    /// `h_len`: payload bytes, a multiple of 512.
    pub len: u32,
    /// `h_lsn`: where the record starts.
    pub lsn: Lsn,
    /// `h_tail_lsn`: the log's tail when the record was written.
    pub tail_lsn: Lsn,
    /// `h_prev_block`: the block of the previous record.
    pub prev_block: u32,
    /// `h_num_logops`: log operations in the payload.
    pub num_logops: u32,
    /// `h_size`: the iclog size that wrote it.
    pub size: u32,
    /// `h_fs_uuid`.
    pub uuid: [u8; 16],
}

impl RecordHeader {
    /// Write the header into the first [`HEADER_SIZE`] bytes of `sector`, the rest of the
    /// sector zero, `h_crc` and the cycle array zero (encode_record fills them).
    pub fn encode(&self, sector: &mut [u8]) {
        let s = &mut sector[..HEADER_SIZE];
        s.fill(0);
        put_u32(s, OFF_MAGIC, LOG_MAGIC);
        put_u32(s, OFF_CYCLE, self.cycle);
        put_u32(s, OFF_VERSION, VERSION);
        put_u32(s, OFF_LEN, self.len);
        put_u64(s, OFF_LSN, self.lsn.0);
        put_u64(s, OFF_TAIL_LSN, self.tail_lsn.0);
        put_u32(s, OFF_PREV_BLOCK, self.prev_block);
        put_u32(s, OFF_NUM_LOGOPS, self.num_logops);
        put_u32(s, OFF_FMT, FMT_LE);
        s[OFF_UUID..OFF_UUID + 16].copy_from_slice(&self.uuid);
        put_u32(s, OFF_SIZE, self.size);
    }

    /// Read a header sector, checking what can be checked without the rest of the record:
    /// magic, version, format and that the bytes after the header are zero.
    pub fn decode(sector: &[u8]) -> Result<RecordHeader, RecordError> {
        if sector.len() < HEADER_SIZE {
            return Err(RecordError::Short {
                need: HEADER_SIZE,
                have: sector.len(),
            });
        }
        let magic = get_u32(sector, OFF_MAGIC);
        if magic != LOG_MAGIC {
            return Err(RecordError::Magic(magic));
        }
        let version = get_u32(sector, OFF_VERSION);
        if version != VERSION {
            return Err(RecordError::Version(version));
        }
        let fmt = get_u32(sector, OFF_FMT);
        if fmt != FMT_LE {
            return Err(RecordError::Format(fmt));
        }
        nonzero_pad(sector, 0, REC_HEADER_LEN)?;
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&sector[OFF_UUID..OFF_UUID + 16]);
        Ok(RecordHeader {
            cycle: get_u32(sector, OFF_CYCLE),
            len: get_u32(sector, OFF_LEN),
            lsn: Lsn(get_u64(sector, OFF_LSN)),
            tail_lsn: Lsn(get_u64(sector, OFF_TAIL_LSN)),
            prev_block: get_u32(sector, OFF_PREV_BLOCK),
            num_logops: get_u32(sector, OFF_NUM_LOGOPS),
            size: get_u32(sector, OFF_SIZE),
            uuid,
        })
    }

    /// Blocks this record occupies on disk.
    pub fn blocks(&self) -> usize {
        record_blocks(self.len as usize)
    }
}

/// Reject a header sector whose unused bytes (from `from` on) are not zero: they are outside
/// the CRC, so a nonzero byte there is damage the CRC cannot see.
fn nonzero_pad(sector: &[u8], index: usize, from: usize) -> Result<(), RecordError> {
    match sector[from..HEADER_SIZE].iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(RecordError::Padding {
            sector: index,
            offset: from + at,
        }),
    }
}

/// One decoded record: its header and its payload with the stamped words restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The header.
    pub header: RecordHeader,
    /// `h_len` bytes of payload, as the writer handed them in.
    pub payload: Vec<u8>,
}

/// Why bytes are not a valid log record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordError {
    /// Fewer bytes than the record needs.
    #[error("record truncated: {need} bytes needed, {have} present")]
    Short {
        /// Bytes the header says the record has.
        need: usize,
        /// Bytes given.
        have: usize,
    },
    /// Not a record header.
    #[error("bad magic {0:#010x}")]
    Magic(u32),
    /// A header version labfs does not write.
    #[error("bad header version {0}")]
    Version(u32),
    /// `h_fmt` is not little-endian Linux.
    #[error("bad header format {0}")]
    Format(u32),
    /// A header sector has nonzero bytes where it must be zero.
    #[error("header sector {sector} has a nonzero byte at offset {offset}")]
    Padding {
        /// Header sector within the record (0: the record header).
        sector: usize,
        /// Byte offset within the sector.
        offset: usize,
    },
    /// The record belongs to another filesystem.
    #[error("record of filesystem {found} (expected {expected})")]
    Uuid {
        /// The UUID in the header, as hex.
        found: String,
        /// This filesystem's UUID, as hex.
        expected: String,
    },
    /// `h_lsn` does not fit the log, or `h_cycle` disagrees with it.
    #[error("bad lsn {lsn} with h_cycle {cycle} in a log of {log_bb} blocks")]
    Lsn {
        /// `h_lsn`.
        lsn: Lsn,
        /// `h_cycle`.
        cycle: u32,
        /// The log's size in blocks.
        log_bb: u32,
    },
    /// `h_len` is not a payload length this log can hold.
    #[error("bad h_len {len}: {why}")]
    Len {
        /// `h_len`.
        len: u32,
        /// Which bound it breaks.
        why: &'static str,
    },
    /// A block's first word is not the cycle the record was written in: a torn write, or a
    /// block still holding an earlier pass.
    #[error("block {index} of the record carries cycle {found}, expected {expected}")]
    Cycle {
        /// Block within the record (header sectors count).
        index: usize,
        /// The cycle word found.
        found: u32,
        /// The cycle the record's writer stamped.
        expected: u32,
    },
    /// The record's CRC does not match its contents.
    #[error("crc mismatch: contents give {expected:#010x}, header says {found:#010x}")]
    Crc {
        /// Computed over the contents.
        expected: u32,
        /// Stored in `h_crc`.
        found: u32,
    },
}

impl From<CrcMismatch> for RecordError {
    fn from(m: CrcMismatch) -> RecordError {
        RecordError::Crc {
            expected: m.expected,
            found: m.found,
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The cycle stamped into block `index` of a record starting at `lsn`: blocks past the
/// physical end of the log were written in the next pass.
fn stamp_for(lsn: Lsn, index: usize, log_bb: u32) -> u32 {
    if u64::from(lsn.block()) + index as u64 >= u64::from(log_bb) {
        next_cycle(lsn.cycle())
    } else {
        lsn.cycle()
    }
}

/// Where payload block `i`'s displaced word is kept: (header sector, byte offset).
fn saved_word_at(i: usize) -> (usize, usize) {
    let (sector, slot) = (i / WORDS_PER_HEADER, i % WORDS_PER_HEADER);
    let base = if sector == 0 {
        OFF_CYCLE_DATA
    } else {
        OFF_EXT_CYCLE_DATA
    };
    (sector, base + 4 * slot)
}

/// The CRC pieces after the record header: extended headers, then the payload.
fn crc_pieces(rest: &[u8], heads: usize, len: usize) -> Vec<(&'static str, &[u8])> {
    let mut pieces: Vec<(&'static str, &[u8])> = (1..heads)
        .map(|h| {
            let at = (h - 1) * HEADER_SIZE;
            (SITE_EXT_HEADER, &rest[at..at + EXT_HEADER_LEN])
        })
        .collect();
    let at = (heads - 1) * HEADER_SIZE;
    pieces.push((SITE_PAYLOAD, &rest[at..at + len]));
    pieces
}

/// The on-disk image of a record: header sector(s), then `payload` (a multiple of 512 bytes,
/// `hdr.len` long) with every block's first word replaced by the cycle, CRC filled in.
///
/// A record that runs past the end of a log of `log_bb` blocks has the blocks after the wrap
/// stamped with the next cycle; the caller writes the image in two pieces.
///
/// # Panics
/// If the payload is not `hdr.len` bytes, not a multiple of 512, larger than
/// [`MAX_LOGBSIZE`], does not fit the log, or `hdr.cycle` is not the cycle of `hdr.lsn`:
/// those are writer bugs, not disk contents.
pub fn encode_record(cksum: &Cksum, hdr: &RecordHeader, payload: &[u8], log_bb: u32) -> Vec<u8> {
    assert_eq!(
        payload.len(),
        hdr.len as usize,
        "h_len is the payload length"
    );
    let mut image = Vec::new();
    encode_record_into(cksum, hdr, payload, log_bb, &mut image);
    image
}

/// [`encode_record`] into `image` (its allocation reused: the log writes one record per
/// iclog, and two fresh 32 KiB buffers per record showed in profiles), from a payload not
/// yet padded: the zeros up to `hdr.len` are added here.
///
/// # Panics
/// As [`encode_record`], and if the payload needs more or less than `hdr.len` once padded.
pub fn encode_record_into(
    cksum: &Cksum,
    hdr: &RecordHeader,
    payload: &[u8],
    log_bb: u32,
    image: &mut Vec<u8>,
) {
    let len = hdr.len as usize;
    assert_eq!(len % BB, 0, "h_len is a whole number of blocks");
    assert_eq!(
        payload.len().div_ceil(BB) * BB,
        len,
        "h_len is the padded payload length"
    );
    assert!(len <= MAX_LOGBSIZE as usize, "payload larger than an iclog");
    assert_eq!(hdr.cycle, hdr.lsn.cycle(), "h_cycle is the cycle of h_lsn");
    let heads = header_sectors(len);
    let total = heads + len / BB;
    assert!(
        hdr.lsn.block() < log_bb && total as u64 <= u64::from(log_bb),
        "record {} of {total} blocks does not fit a log of {log_bb} blocks",
        hdr.lsn
    );

    image.clear();
    image.resize(heads * BB, 0);
    image.extend_from_slice(payload);
    image.resize(total * BB, 0);
    hdr.encode(&mut image[..HEADER_SIZE]);
    for h in 1..heads {
        put_u32(&mut image[h * BB..], 0, stamp_for(hdr.lsn, h, log_bb));
    }
    for i in 0..len / BB {
        let block = (heads + i) * BB;
        let (sector, off) = saved_word_at(i);
        let word: [u8; 4] = image[block..block + 4].try_into().expect("4 bytes");
        image[sector * BB + off..sector * BB + off + 4].copy_from_slice(&word);
        put_u32(
            &mut image[block..],
            0,
            stamp_for(hdr.lsn, heads + i, log_bb),
        );
    }

    let (first, rest) = image.split_at_mut(HEADER_SIZE);
    let pieces = crc_pieces(rest, heads, len);
    cksum.update_pieces(SITE_HEADER, &mut first[..REC_HEADER_LEN], OFF_CRC, &pieces);
}

/// Decode one record from `bytes` (its header sector(s) and payload in order, gathered
/// across the wrap if it wrapped; bytes after the record are ignored), checking everything a
/// record of filesystem `uuid` in a log of `log_bb` blocks must satisfy before trusting it.
pub fn decode_record(
    cksum: &Cksum,
    bytes: &[u8],
    uuid: &[u8; 16],
    log_bb: u32,
) -> Result<Record, RecordError> {
    let hdr = check_header(bytes, uuid, log_bb)?;
    let len = hdr.len as usize;
    let heads = header_sectors(len);
    let total = heads + len / BB;
    if bytes.len() < total * BB {
        return Err(RecordError::Short {
            need: total * BB,
            have: bytes.len(),
        });
    }
    // The stamps are inside the CRC, so the CRC alone would catch a bad one; checking them
    // first names the block a torn write left behind.
    for index in 1..total {
        let found = get_u32(bytes, index * BB);
        let expected = stamp_for(hdr.lsn, index, log_bb);
        if found != expected {
            return Err(RecordError::Cycle {
                index,
                found,
                expected,
            });
        }
    }
    for h in 1..heads {
        nonzero_pad(&bytes[h * BB..], h, EXT_HEADER_LEN)?;
    }
    let pieces = crc_pieces(&bytes[HEADER_SIZE..], heads, len);
    cksum.verify_pieces(SITE_HEADER, &bytes[..REC_HEADER_LEN], OFF_CRC, &pieces)?;

    let mut payload = bytes[heads * BB..total * BB].to_vec();
    for i in 0..len / BB {
        let (sector, off) = saved_word_at(i);
        let at = sector * BB + off;
        payload[i * BB..i * BB + 4].copy_from_slice(&bytes[at..at + 4]);
    }
    Ok(Record {
        header: hdr,
        payload,
    })
}

/// The header checks that need no payload: format, filesystem, and an LSN and length that
/// fit a log of `log_bb` blocks.
pub fn check_header(
    bytes: &[u8],
    uuid: &[u8; 16],
    log_bb: u32,
) -> Result<RecordHeader, RecordError> {
    let hdr = RecordHeader::decode(bytes)?;
    if hdr.uuid != *uuid {
        return Err(RecordError::Uuid {
            found: hex(&hdr.uuid),
            expected: hex(uuid),
        });
    }
    let cycle = hdr.lsn.cycle();
    if hdr.lsn.block() >= log_bb || hdr.cycle != cycle || cycle == 0 || cycle == LOG_MAGIC {
        return Err(RecordError::Lsn {
            lsn: hdr.lsn,
            cycle: hdr.cycle,
            log_bb,
        });
    }
    let why = if !(hdr.len as usize).is_multiple_of(BB) {
        Some("not a multiple of 512")
    } else if hdr.len > MAX_LOGBSIZE {
        Some("larger than the largest iclog")
    } else if hdr.blocks() as u64 > u64::from(log_bb) {
        Some("the record is larger than the log")
    } else {
        None
    };
    match why {
        Some(why) => Err(RecordError::Len { len: hdr.len, why }),
        None => Ok(hdr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::cksum::CksumMode;

    const UUID: [u8; 16] = *b"labfs-log-uuid!!";

    fn header(cycle: u32, block: u32, len: usize) -> RecordHeader {
        RecordHeader {
            cycle,
            len: len as u32,
            lsn: Lsn::new(cycle, block),
            tail_lsn: Lsn::new(cycle, 0),
            prev_block: block.saturating_sub(1),
            num_logops: 3,
            size: 32768,
            uuid: UUID,
        }
    }

    /// A payload whose every block starts with a word that is not the cycle, so a missed
    /// restore shows.
    fn payload(len: usize, seed: u32) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8 ^ 0xa5)
            .collect()
    }

    fn modes() -> [Cksum; 2] {
        [
            Cksum::default(),
            Cksum {
                mode: CksumMode::Split,
                ..Cksum::default()
            },
        ]
    }

    #[test]
    fn lsns_print_and_advance_as_xfs() {
        let l = Lsn::new(3, 17);
        assert_eq!((l.cycle(), l.block()), (3, 17));
        assert_eq!(l.0, (3 << 32) | 17);
        assert_eq!(l.to_string(), "3/17");
        assert_eq!(l.advance(10, 100), Lsn::new(3, 27));
        assert_eq!(l.advance(83, 100), Lsn::new(4, 0));
        assert_eq!(l.advance(283, 100), Lsn::new(6, 0));
        assert_eq!(
            Lsn::new(LOG_MAGIC - 1, 99).advance(1, 100),
            Lsn::new(LOG_MAGIC + 1, 0),
            "the magic is never a cycle"
        );
        assert_eq!(next_cycle(u32::MAX), 1);
        assert!(Lsn::new(2, 0) > Lsn::new(1, 99));
    }

    #[test]
    fn header_sectors_follow_h_len() {
        assert_eq!(header_sectors(0), 1);
        assert_eq!(header_sectors(512), 1);
        assert_eq!(header_sectors(32768), 1);
        assert_eq!(header_sectors(32768 + 512), 2);
        assert_eq!(header_sectors(262144), 8);
        assert_eq!(record_blocks(262144), 8 + 512);
    }

    #[test]
    fn header_layout_is_xfs() {
        let h = header(5, 9, 1024);
        let mut s = vec![0xffu8; 512];
        h.encode(&mut s);
        assert_eq!(&s[0..4], &[0xfe, 0xed, 0xba, 0xbe]);
        assert_eq!(get_u32(&s, 4), 5);
        assert_eq!(get_u32(&s, 8), 2);
        assert_eq!(get_u32(&s, 12), 1024);
        assert_eq!(get_u64(&s, 16), (5 << 32) | 9);
        assert_eq!(get_u32(&s, 300), 1);
        assert_eq!(&s[304..320], &UUID);
        assert_eq!(get_u32(&s, 320), 32768);
        assert!(s[328..].iter().all(|&b| b == 0));
        assert_eq!(RecordHeader::decode(&s), Ok(h));
    }

    fn round_trip(ck: &Cksum, block: u32, len: usize, log_bb: u32) -> Vec<u8> {
        let h = header(7, block, len);
        let p = payload(len, block);
        let image = encode_record(ck, &h, &p, log_bb);
        assert_eq!(image.len(), record_blocks(len) * BB);
        let rec = decode_record(ck, &image, &UUID, log_bb).expect("decodes");
        assert_eq!(rec.header, h);
        assert_eq!(rec.payload, p, "len {len}");
        image
    }

    #[test]
    fn records_round_trip_with_extended_headers() {
        for ck in modes() {
            for blocks in [0, 1, 63, 64, 65, 128, 129, 512] {
                let image = round_trip(&ck, 4, blocks * BB, 4096);
                let heads = header_sectors(blocks * BB);
                // Every block after the first header starts with the cycle.
                for b in 1..image.len() / BB {
                    assert_eq!(get_u32(&image, b * BB), 7, "block {b} of {blocks}");
                }
                assert_eq!(heads, (blocks.div_ceil(64)).max(1));
            }
        }
    }

    #[test]
    fn a_wrapped_record_stamps_the_next_cycle_after_the_wrap() {
        for ck in modes() {
            // 65 payload blocks and 2 headers from block 90 of 100: 10 before the wrap.
            let image = round_trip(&ck, 90, 65 * BB, 100);
            for b in 1..image.len() / BB {
                let want = if b < 10 { 7 } else { 8 };
                assert_eq!(get_u32(&image, b * BB), want, "block {b}");
            }
            // A wrap inside the extended headers: the second header is after it.
            let image = round_trip(&ck, 99, 65 * BB, 100);
            assert_eq!(get_u32(&image, BB), 8);
        }
    }

    #[test]
    fn the_crc_is_crc32c_of_header_ext_headers_and_payload() {
        for ck in modes() {
            for blocks in [1, 64, 65, 200, 512] {
                let len = blocks * BB;
                let image = encode_record(&ck, &header(2, 0, len), &payload(len, 1), 8192);
                let heads = header_sectors(len);
                let mut covered = image[..REC_HEADER_LEN].to_vec();
                covered[32..36].fill(0);
                for h in 1..heads {
                    covered.extend_from_slice(&image[h * BB..h * BB + EXT_HEADER_LEN]);
                }
                covered.extend_from_slice(&image[heads * BB..]);
                let want = crc32c::crc32c(&covered);
                assert_eq!(&image[32..36], &want.to_le_bytes(), "{blocks} blocks");
            }
        }
    }

    #[test]
    fn decode_rejects_damage_with_the_reason() {
        let ck = Cksum::default();
        let len = 70 * BB;
        let image = encode_record(&ck, &header(3, 10, len), &payload(len, 2), 1000);
        let decode = |img: &[u8]| decode_record(&ck, img, &UUID, 1000);
        let mut bad = image.clone();
        bad[0] ^= 1;
        assert!(matches!(decode(&bad), Err(RecordError::Magic(_))));
        let mut bad = image.clone();
        bad[304] ^= 1;
        assert!(matches!(decode(&bad), Err(RecordError::Uuid { .. })));
        let mut bad = image.clone();
        bad[400] = 1;
        assert!(matches!(
            decode(&bad),
            Err(RecordError::Padding {
                sector: 0,
                offset: 400
            })
        ));
        let mut bad = image.clone();
        bad[BB + 300] = 1;
        assert!(matches!(
            decode(&bad),
            Err(RecordError::Padding { sector: 1, .. })
        ));
        let mut bad = image.clone();
        bad[5 * BB..6 * BB].fill(0);
        assert_eq!(
            decode(&bad),
            Err(RecordError::Cycle {
                index: 5,
                found: 0,
                expected: 3
            })
        );
        let mut bad = image.clone();
        bad[5 * BB + 100] ^= 0x10;
        assert!(matches!(decode(&bad), Err(RecordError::Crc { .. })));
        let mut bad = image.clone();
        bad[60] ^= 0x10; // a saved cycle word
        assert!(matches!(decode(&bad), Err(RecordError::Crc { .. })));
        assert!(matches!(
            decode(&image[..image.len() - 1]),
            Err(RecordError::Short { .. })
        ));
        assert!(matches!(
            decode_record(&ck, &image, &UUID, 50),
            Err(RecordError::Len { .. })
        ));
        assert!(matches!(
            decode_record(&ck, &image, &UUID, 10),
            Err(RecordError::Lsn { .. })
        ));
        let mut bad = image.clone();
        put_u32(&mut bad, OFF_LEN, 100);
        assert!(matches!(decode(&bad), Err(RecordError::Len { .. })));
        assert!(decode(&image).is_ok());
    }

    #[test]
    fn the_tracepoint_sees_each_piece_with_csumhists_shapes() {
        use crate::trace::{HistSpec, TraceConfig};
        let _serial = crate::trace::testing::serial();
        let session = TraceConfig {
            histograms: vec![
                HistSpec::new("crc32c", "head")
                    .grouped_by("site")
                    .grouped_by("mode"),
                HistSpec::new("crc32c", "tail")
                    .grouped_by("site")
                    .grouped_by("mode"),
                HistSpec::new("crc32c", "len")
                    .grouped_by("site")
                    .grouped_by("mode"),
            ],
            ..TraceConfig::default()
        }
        .start()
        .expect("session");
        let len = 65 * BB;
        let [single, split] = modes();
        let image = encode_record(&single, &header(1, 0, len), &payload(len, 0), 1000);
        encode_record(&split, &header(1, 0, len), &payload(len, 0), 1000);
        decode_record(&single, &image, &UUID, 1000).expect("decodes");
        let summary = session.finish().expect("finish");
        let h = |field: &str, key: &str| {
            let g = summary
                .histogram(&format!("crc32c.{field}/site,mode"))
                .expect("hist")
                .group(key)
                .unwrap_or_else(|| panic!("group {key}"));
            (g.total_count(), g.total_bytes())
        };
        // The scan tests encode records at the same time and fire these sites too, so each
        // group is checked per call (every call of a site has the same shape) rather than by
        // count.
        let each = |field: &str, key: &str, want: u128| {
            let (n, bytes) = h(field, key);
            assert!(
                n >= 1 && bytes == u128::from(n) * want,
                "{field} {key}: {n} {bytes}"
            );
        };
        each("len", "log_rec_header,single", 328);
        each("head", "log_rec_header,single", 0);
        each("tail", "log_rec_header,single", 0);
        each("len", "log_rec_header,split", 328);
        each("head", "log_rec_header,split", 32);
        each("tail", "log_rec_header,split", 292);
        each("head", "log_rec_header,verify", 32);
        each("tail", "log_rec_header,verify", 292);
        for mode in ["single", "split", "verify"] {
            each("len", &format!("log_ext_header,{mode}"), 260);
            each("head", &format!("log_ext_header,{mode}"), 0);
            each("tail", &format!("log_ext_header,{mode}"), 0);
            each("head", &format!("log_payload,{mode}"), 0);
            each("tail", &format!("log_payload,{mode}"), 0);
        }
    }
}
