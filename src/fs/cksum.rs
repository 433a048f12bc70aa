//! The one place labfs computes metadata CRCs.
//!
//! XFS protects every v5 metadata structure with a CRC-32C (Castagnoli) over the structure with
//! its CRC field taken as zero, stored little-endian (`xfs_cksum.h`: `xfs_start_cksum_*`,
//! `xfs_end_cksum`). There
//! are two ways to compute that value, and thread 004 is about the difference between them:
//!
//! - **split** (XFS before 4.10, and every *verify* since): three crc32c calls, over the bytes
//!   before the field (the *head*), four zero bytes, and the bytes after it (the *tail*). The
//!   buffer is never modified, but small heads (4 bytes for directory blocks, 12 for da
//!   blocks) make many tiny, slow crc32c calls.
//! - **single** (XFS since 4.10, "xfs: optimise CRC updates"): the writer owns the buffer, so it
//!   zeroes the field and makes one pass over the whole structure.
//!
//! Both give the same value. [`Cksum::update`] uses the mount's mode (`-o cksum=single|split`);
//! [`Cksum::verify`] is always split, because a verifier must not write to a buffer others may
//! be reading. The CRC engine is a mount option too (`-o crc=crc32c|fast|soft`): the `crc32c`
//! crate (hardware instruction), `crc-fast` (vector folding, fastest on large inputs) and a
//! table-driven software implementation written here (the reference, and the slow baseline).
//!
//! Every call fires the `crc32c` tracepoint with the structure (`site`), total length, head
//! and tail, mode and engine: that is what `csumhist` turns into the ilog2 histograms of
//! thread 004.

use std::fmt;
use std::str::FromStr;

use crate::fs::format::BlockKind;
use crate::fs::format::endian::{get_crc, put_crc};

/// How CRC updates are computed (`-o cksum=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CksumMode {
    /// Zero the field, one crc32c pass (XFS since 4.10).
    #[default]
    Single,
    /// Head, four zero bytes, tail: three crc32c calls (XFS before 4.10).
    Split,
}

impl CksumMode {
    /// The option value and tracepoint spelling.
    pub fn name(self) -> &'static str {
        match self {
            CksumMode::Single => "single",
            CksumMode::Split => "split",
        }
    }
}

impl FromStr for CksumMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "single" => Ok(CksumMode::Single),
            "split" => Ok(CksumMode::Split),
            _ => Err(format!(
                "unknown cksum mode '{s}' (expected single or split)"
            )),
        }
    }
}

impl fmt::Display for CksumMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which CRC-32C implementation computes the checksums (`-o crc=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrcEngine {
    /// The `crc32c` crate: the SSE4.2/ARMv8 crc32c instruction.
    #[default]
    Crc32c,
    /// The `crc-fast` crate: carry-less-multiply folding, fastest on large inputs.
    Fast,
    /// A slice-by-8 table implementation: no special instructions.
    Soft,
}

impl CrcEngine {
    /// The option value and tracepoint spelling.
    pub fn name(self) -> &'static str {
        match self {
            CrcEngine::Crc32c => "crc32c",
            CrcEngine::Fast => "fast",
            CrcEngine::Soft => "soft",
        }
    }

    /// Continue a standard CRC-32C (`crc` is the finished value of the bytes so far; 0 for
    /// none) over `data`.
    pub fn append(self, crc: u32, data: &[u8]) -> u32 {
        match self {
            CrcEngine::Crc32c => crc32c::crc32c_append(crc, data),
            CrcEngine::Fast => {
                let mut d = crc_fast::Digest::new_with_init_state(
                    crc_fast::CrcAlgorithm::Crc32Iscsi,
                    u64::from(!crc),
                );
                d.update(data);
                d.finalize() as u32
            }
            CrcEngine::Soft => soft::append(crc, data),
        }
    }

    /// Standard CRC-32C of `data`.
    pub fn checksum(self, data: &[u8]) -> u32 {
        self.append(0, data)
    }
}

impl FromStr for CrcEngine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "crc32c" => Ok(CrcEngine::Crc32c),
            "fast" => Ok(CrcEngine::Fast),
            "soft" => Ok(CrcEngine::Soft),
            _ => Err(format!(
                "unknown crc engine '{s}' (expected crc32c, fast or soft)"
            )),
        }
    }
}

impl fmt::Display for CrcEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A CRC that did not verify: what the contents give and what the block says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcMismatch {
    /// CRC computed over the contents.
    pub expected: u32,
    /// CRC stored in the structure.
    pub found: u32,
}

/// A mount's checksum configuration: the one entry point for every metadata CRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cksum {
    /// Update mode.
    pub mode: CksumMode,
    /// Engine.
    pub engine: CrcEngine,
}

impl Cksum {
    /// Compute the CRC of `buf` as if the 4 bytes at `off` were zero, without writing to it
    /// (three calls: head, zeroes, tail).
    fn split(&self, buf: &[u8], off: usize) -> u32 {
        let crc = self.engine.append(0, &buf[..off]);
        let crc = self.engine.append(crc, &[0u8; 4]);
        self.engine.append(crc, &buf[off + 4..])
    }

    /// Fire the crc32c tracepoint for one helper call.
    #[inline(always)]
    fn trace(&self, site: &'static str, len: usize, off: usize, mode: CksumMode) {
        crate::trace::events::crc32c(
            site,
            len as u32,
            off as u32,
            (len - off - 4) as u32,
            mode.name(),
            self.engine.name(),
        );
    }

    /// Checksum a structure of `kind` in place: `buf` is exactly the bytes the CRC covers.
    pub fn update(&self, kind: BlockKind, buf: &mut [u8]) {
        self.update_at(kind.name(), buf, kind.crc_offset());
    }

    /// Checksum `buf` in place with the CRC field at `off` (for structures whose length is
    /// not fixed, such as log records).
    pub fn update_at(&self, site: &'static str, buf: &mut [u8], off: usize) {
        self.trace(site, buf.len(), off, self.mode);
        let crc = match self.mode {
            CksumMode::Single => {
                put_crc(buf, off, 0);
                self.engine.checksum(buf)
            }
            CksumMode::Split => self.split(buf, off),
        };
        put_crc(buf, off, crc);
    }

    /// Verify a structure of `kind`; never modifies `buf`.
    pub fn verify(&self, kind: BlockKind, buf: &[u8]) -> Result<(), CrcMismatch> {
        self.verify_at(kind.name(), buf, kind.crc_offset())
    }

    /// Verify `buf` whose CRC field is at `off`; never modifies `buf`.
    pub fn verify_at(&self, site: &'static str, buf: &[u8], off: usize) -> Result<(), CrcMismatch> {
        self.trace(site, buf.len(), off, CksumMode::Split);
        let expected = self.split(buf, off);
        let found = get_crc(buf, off);
        if expected == found {
            Ok(())
        } else {
            Err(CrcMismatch { expected, found })
        }
    }
}

/// Table-driven CRC-32C (reflected polynomial 0x82F63B78), slice-by-8.
mod soft {
    const POLY: u32 = 0x82f6_3b78;

    const fn make_tables() -> [[u32; 256]; 8] {
        let mut t = [[0u32; 256]; 8];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
                k += 1;
            }
            t[0][i] = c;
            i += 1;
        }
        let mut i = 0;
        while i < 256 {
            let mut s = 1;
            while s < 8 {
                let prev = t[s - 1][i];
                t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
                s += 1;
            }
            i += 1;
        }
        t
    }

    static TABLES: [[u32; 256]; 8] = make_tables();

    /// Continue a finished CRC-32C value over `data`.
    pub fn append(crc: u32, data: &[u8]) -> u32 {
        let t = &TABLES;
        let mut c = !crc;
        let mut chunks = data.chunks_exact(8);
        for ch in &mut chunks {
            let lo = u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]) ^ c;
            let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
            c = t[7][(lo & 0xff) as usize]
                ^ t[6][((lo >> 8) & 0xff) as usize]
                ^ t[5][((lo >> 16) & 0xff) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][(hi & 0xff) as usize]
                ^ t[2][((hi >> 8) & 0xff) as usize]
                ^ t[1][((hi >> 16) & 0xff) as usize]
                ^ t[0][(hi >> 24) as usize];
        }
        for &b in chunks.remainder() {
            c = (c >> 8) ^ t[0][((c ^ u32::from(b)) & 0xff) as usize];
        }
        !c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENGINES: [CrcEngine; 3] = [CrcEngine::Crc32c, CrcEngine::Fast, CrcEngine::Soft];

    #[test]
    fn engines_agree_with_the_crc32c_check_value() {
        // The standard CRC-32C check value of "123456789".
        for e in ENGINES {
            assert_eq!(e.checksum(b"123456789"), 0xe306_9283, "{e}");
        }
    }

    #[test]
    fn engines_agree_when_appending_in_pieces() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        let whole = CrcEngine::Crc32c.checksum(&data);
        for e in ENGINES {
            for cut in [0, 1, 4, 100, 4095, 5000] {
                let c = e.append(e.checksum(&data[..cut]), &data[cut..]);
                assert_eq!(c, whole, "{e} cut {cut}");
            }
        }
    }

    #[test]
    fn single_and_split_store_the_same_crc_and_verify() {
        for kind in BlockKind::ALL {
            let mut a: Vec<u8> = (0..kind.crc_len()).map(|i| (i * 7) as u8).collect();
            let mut b = a.clone();
            for engine in ENGINES {
                Cksum {
                    mode: CksumMode::Single,
                    engine,
                }
                .update(kind, &mut a);
                Cksum {
                    mode: CksumMode::Split,
                    engine,
                }
                .update(kind, &mut b);
                assert_eq!(a, b, "{kind} {engine}");
                assert!(
                    Cksum {
                        mode: CksumMode::Split,
                        engine
                    }
                    .verify(kind, &a)
                    .is_ok()
                );
            }
        }
    }

    #[test]
    fn verify_reports_both_crcs_and_leaves_the_buffer_alone() {
        let ck = Cksum::default();
        let mut buf = vec![0x5au8; 512];
        ck.update(BlockKind::Inode, &mut buf);
        buf[200] ^= 1;
        let before = buf.clone();
        let err = ck.verify(BlockKind::Inode, &buf).unwrap_err();
        assert_ne!(err.expected, err.found);
        assert_eq!(err.found, get_crc(&buf, 100));
        assert_eq!(buf, before);
    }

    #[test]
    fn stored_crc_is_standard_crc32c_of_zeroed_field_little_endian() {
        let ck = Cksum::default();
        let mut buf = vec![1u8; 512];
        ck.update(BlockKind::Agf, &mut buf);
        let mut zeroed = buf.clone();
        zeroed[216..220].fill(0);
        let want = CrcEngine::Soft.checksum(&zeroed);
        assert_eq!(&buf[216..220], &want.to_le_bytes());
    }

    #[test]
    fn option_values_parse() {
        assert_eq!("split".parse::<CksumMode>().unwrap(), CksumMode::Split);
        assert_eq!("fast".parse::<CrcEngine>().unwrap(), CrcEngine::Fast);
        assert!(
            "sse"
                .parse::<CrcEngine>()
                .unwrap_err()
                .contains("expected crc32c")
        );
    }
}
