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
//! crate (hardware instruction), `fast` (carry-less-multiply folding, fastest on large inputs:
//! our own 256-bit fold in [`fold`] where the CPU has VPCLMULQDQ without AVX-512, the
//! `crc-fast` crate elsewhere) and a table-driven software implementation written here (the
//! reference, and the slow baseline).
//!
//! Every call fires the `crc32c` tracepoint with the structure (`site`), total length, head
//! and tail, the kind of call ([`CrcCall`]: `single`, `split` or `verify`) and engine: that is
//! what `csumhist` turns into the ilog2 histograms of thread 004. A single pass reports head
//! and tail 0, because it makes no call over either: the histograms then show exactly the
//! crc32c calls each mode makes.
//!
//! # Which instructions an engine runs
//!
//! Both accelerated engines pick their code at run time from CPU features, so the same binary
//! runs different instructions on different machines, and the thread's argument (a vectorised
//! crc32c only pays off above some size) depends on which. [`CrcEngine::path`] reports the
//! choice, derived from the features the crates' own dispatchers test ([`CpuFeatures`]), with
//! a note when an engine could not take its best path. `crc-fast` on a CPU with VPCLMULQDQ but
//! without AVX-512VL (AMD Zen 3, for one) folds only 128 bits at a time and ran at 0.75x the
//! crc32 instruction at 4 KiB, so on such CPUs `fast` runs [`fold`] instead: 256-bit folds
//! interleaved with crc32 instruction streams. [`CrcEngine::crc_fast_target`] is crc-fast's own
//! name for its choice, a cross-check the tests use.
//!
//! # Properties the tests pin
//!
//! Every engine gives the CRC-32C check value (0xE3069283 for `123456789`), agrees with the
//! others on random buffers, and satisfies the append identity (continuing a CRC over the
//! rest equals one pass) and the combine identity ([`crc32c_combine`]) at random split points;
//! single and split updates store the same CRC at any field offset, and any flipped bit fails
//! verification.

use std::fmt;
use std::str::FromStr;

use std::sync::LazyLock;

use crate::fs::error::CrcMismatch;
use crate::fs::format::BlockKind;
use crate::fs::format::endian::{get_crc, put_crc};

pub mod fold;

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

/// What one metadata checksum helper call did, as the `crc32c` tracepoint's `mode` field
/// names it.
///
/// The tracepoint fires once per helper call; the number of crc32c computations behind it
/// follows from the kind: one for a single pass (or for a range with no CRC field inside, such
/// as a log payload), three for a split update or a verify (head, four zero bytes, tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrcCall {
    /// An update in one pass over the structure with its field zeroed.
    Single,
    /// An update in three calls: head, four zero bytes, tail.
    Split,
    /// A verification (always split: it must not write to the buffer).
    Verify,
}

impl CrcCall {
    /// Every kind, in the order reports list them.
    pub const ALL: [CrcCall; 3] = [CrcCall::Single, CrcCall::Split, CrcCall::Verify];

    /// The tracepoint's `mode` value.
    pub fn name(self) -> &'static str {
        match self {
            CrcCall::Single => "single",
            CrcCall::Split => "split",
            CrcCall::Verify => "verify",
        }
    }

    /// The kind a tracepoint `mode` value names.
    pub fn from_name(name: &str) -> Option<CrcCall> {
        CrcCall::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether this call updates a CRC (as opposed to checking one).
    pub fn is_update(self) -> bool {
        !matches!(self, CrcCall::Verify)
    }
}

impl From<CksumMode> for CrcCall {
    /// The kind of call an update in `mode` makes.
    fn from(mode: CksumMode) -> CrcCall {
        match mode {
            CksumMode::Single => CrcCall::Single,
            CksumMode::Split => CrcCall::Split,
        }
    }
}

impl fmt::Display for CrcCall {
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
    /// Carry-less-multiply folding, fastest on large inputs: [`fold`] on CPUs with VPCLMULQDQ
    /// and AVX2 but no AVX-512VL, the `crc-fast` crate elsewhere.
    Fast,
    /// A slice-by-8 table implementation: no special instructions.
    Soft,
}

impl CrcEngine {
    /// Every engine, in the order reports list them.
    pub const ALL: [CrcEngine; 3] = [CrcEngine::Crc32c, CrcEngine::Fast, CrcEngine::Soft];

    /// The instruction path this engine takes on `cpu` (see [`CpuFeatures`]).
    pub fn path_on(self, cpu: &CpuFeatures) -> EnginePath {
        let (path, fallback) = match self {
            CrcEngine::Crc32c => crc32c_crate_path(cpu),
            CrcEngine::Fast if cpu.runs_own_fold() => (
                "fslab's 256-bit VPCLMULQDQ folding (AVX2) interleaved with four crc32 \
                 instruction streams per 4 KiB block; the crc32 instruction alone below 256 bytes"
                    .to_string(),
                None,
            ),
            CrcEngine::Fast => crc_fast_path(cpu),
            CrcEngine::Soft => (
                "slice-by-8 table lookups in portable code (the reference)".to_string(),
                None,
            ),
        };
        EnginePath {
            engine: self,
            path,
            fallback,
        }
    }

    /// The instruction path this engine takes on the running CPU.
    pub fn path(self) -> EnginePath {
        self.path_on(&CpuFeatures::detect())
    }

    /// crc-fast's own name for the code it selected on this CPU (e.g.
    /// `x86_64-sse-pclmulqdq`), a cross-check on [`CrcEngine::path`] for the `fast` engine.
    pub fn crc_fast_target() -> String {
        crc_fast::get_calculator_target(crc_fast::CrcAlgorithm::Crc32Iscsi)
    }

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
            CrcEngine::Fast if *OWN_FOLD => {
                fold::append(crc, data).expect("the CPU features were detected")
            }
            // A whole buffer (most calls) takes crc-fast's one-shot entry, which skips
            // setting up a digest.
            CrcEngine::Fast if crc == 0 => {
                crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
            }
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

/// Continue-and-join for two CRC-32C values: given `crc_a` of bytes A and `crc_b` of bytes B
/// (`len_b` long), the CRC-32C of A followed by B, without reading either again.
///
/// The log needs this shape of identity (a record's CRC runs over a header, extended headers
/// and a payload that live apart); the property tests use it to check every engine's split
/// points against whole-buffer results.
pub fn crc32c_combine(crc_a: u32, crc_b: u32, len_b: usize) -> u32 {
    crc32c::crc32c_combine(crc_a, crc_b, len_b)
}

/// Whether `fast` runs [`fold`] on this CPU (decided once: the engines run per block).
static OWN_FOLD: LazyLock<bool> =
    LazyLock::new(|| CpuFeatures::detect().runs_own_fold() && fold::available());

/// The processor family the engines dispatch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuArch {
    /// x86-64.
    X86_64,
    /// 64-bit ARM.
    Aarch64,
    /// Anything else: every engine runs its portable code.
    Other,
}

/// The CPU features the three engines test at run time before choosing their code path.
///
/// [`CpuFeatures::detect`] reads the running CPU; tests build other combinations by hand to
/// check each engine's fallback. The fields are exactly the bits the engines' dispatchers
/// look at (`crc32c` 0.6: SSE4.2 on x86-64, the CRC extension on ARM; `crc-fast` 1.10:
/// SSE4.1+PCLMULQDQ, AVX-512VL, VPCLMULQDQ and SSE4.2 on x86-64; AES/PMULL and SHA3 on ARM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuFeatures {
    /// Processor family.
    pub arch: CpuArch,
    /// SSE4.1 (crc-fast's baseline for its 128-bit folding).
    pub sse41: bool,
    /// SSE4.2: the `crc32` instruction, which computes CRC-32C 1-8 bytes at a time.
    pub sse42: bool,
    /// PCLMULQDQ: 64x64-bit carry-less multiply, the basis of CRC folding.
    pub pclmulqdq: bool,
    /// AVX-512VL (crc-fast needs it for any AVX-512 path).
    pub avx512vl: bool,
    /// AVX2: 256-bit integer vectors, which [`fold`] uses with VPCLMULQDQ.
    pub avx2: bool,
    /// VPCLMULQDQ: carry-less multiply on whole vector registers.
    pub vpclmulqdq: bool,
    /// ARMv8 CRC32 extension (`crc32cx` and friends).
    pub arm_crc: bool,
    /// ARMv8 AES extension, which brings PMULL (carry-less multiply).
    pub arm_pmull: bool,
    /// ARMv8.2 SHA3 (three-way XOR, used by crc-fast's fastest ARM path).
    pub arm_sha3: bool,
}

impl CpuFeatures {
    /// Whether the `fast` engine runs [`fold`] here: it has what the fold needs, and crc-fast
    /// would fold only 128 bits at a time (it takes 512 bits with AVX-512VL).
    pub fn runs_own_fold(&self) -> bool {
        self.arch == CpuArch::X86_64
            && self.avx2
            && self.vpclmulqdq
            && self.pclmulqdq
            && self.sse42
            && !self.avx512vl
    }

    /// A CPU of family `arch` with none of the features the engines look for.
    pub const fn bare(arch: CpuArch) -> CpuFeatures {
        CpuFeatures {
            arch,
            sse41: false,
            sse42: false,
            pclmulqdq: false,
            avx512vl: false,
            avx2: false,
            vpclmulqdq: false,
            arm_crc: false,
            arm_pmull: false,
            arm_sha3: false,
        }
    }

    /// The running CPU's features.
    pub fn detect() -> CpuFeatures {
        let none = CpuFeatures::bare(CpuArch::Other);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            CpuFeatures {
                arch: CpuArch::X86_64,
                sse41: has!("sse4.1"),
                sse42: has!("sse4.2"),
                pclmulqdq: has!("pclmulqdq"),
                avx512vl: has!("avx512vl"),
                avx2: has!("avx2"),
                vpclmulqdq: has!("vpclmulqdq"),
                ..none
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            use std::arch::is_aarch64_feature_detected as has;
            CpuFeatures {
                arch: CpuArch::Aarch64,
                arm_crc: has!("crc"),
                arm_pmull: has!("aes"),
                arm_sha3: has!("sha3"),
                ..none
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            none
        }
    }

    /// The features as a short list (`sse4.2 pclmulqdq ...`), for report headers.
    pub fn summary(&self) -> String {
        let flags: [(bool, &str); 9] = [
            (self.sse41, "sse4.1"),
            (self.sse42, "sse4.2"),
            (self.pclmulqdq, "pclmulqdq"),
            (self.avx512vl, "avx512vl"),
            (self.avx2, "avx2"),
            (self.vpclmulqdq, "vpclmulqdq"),
            (self.arm_crc, "crc"),
            (self.arm_pmull, "pmull"),
            (self.arm_sha3, "sha3"),
        ];
        let on: Vec<&str> = flags.iter().filter(|(b, _)| *b).map(|(_, n)| *n).collect();
        let arch = match self.arch {
            CpuArch::X86_64 => "x86_64",
            CpuArch::Aarch64 => "aarch64",
            CpuArch::Other => "other",
        };
        if on.is_empty() {
            format!("{arch}: none of the CRC features")
        } else {
            format!("{arch}: {}", on.join(" "))
        }
    }
}

/// The instruction path one engine takes on a given CPU, and whether that is a fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnginePath {
    /// The engine.
    pub engine: CrcEngine,
    /// What computes the CRC, in words: instructions and how they are used.
    pub path: String,
    /// Set when the engine could not take its best path on this CPU: what it fell back to
    /// and which feature was missing.
    pub fallback: Option<String>,
}

impl fmt::Display for EnginePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.engine, self.path)?;
        if let Some(why) = &self.fallback {
            write!(f, " (fell back: {why})")?;
        }
        Ok(())
    }
}

/// The `crc32c` crate's choice (0.6: `crc32c_append`).
fn crc32c_crate_path(cpu: &CpuFeatures) -> (String, Option<String>) {
    const TABLES: &str = "software slice-by-8 tables";
    match cpu.arch {
        CpuArch::X86_64 if cpu.sse42 => (
            "SSE4.2 crc32 instruction, 8 bytes at a time in three interleaved streams \
             joined with shift tables"
                .into(),
            None,
        ),
        CpuArch::X86_64 => (
            TABLES.into(),
            Some("no SSE4.2, so no crc32 instruction".into()),
        ),
        CpuArch::Aarch64 if cpu.arm_crc => (
            "ARMv8 crc32c instructions, 8 bytes at a time in three interleaved streams".into(),
            None,
        ),
        CpuArch::Aarch64 => (TABLES.into(), Some("no ARMv8 CRC extension".into())),
        CpuArch::Other => (
            TABLES.into(),
            Some("no crc32c instruction on this architecture".into()),
        ),
    }
}

/// crc-fast 1.10's choice for CRC-32/ISCSI: a performance tier from the folding features,
/// then, where the CPU also has a crc32c instruction, its "fusion" code (the instruction for
/// inputs up to 256 bytes; instruction streams interleaved with carry-less-multiply folding
/// above that).
fn crc_fast_path(cpu: &CpuFeatures) -> (String, Option<String>) {
    const TABLES: &str = "software tables";
    match cpu.arch {
        CpuArch::X86_64 => {
            let pclmul = cpu.sse41 && cpu.pclmulqdq;
            let avx512 = pclmul && cpu.avx512vl;
            let vpclmul = avx512 && cpu.vpclmulqdq;
            let folding = if vpclmul {
                "AVX-512 VPCLMULQDQ folding (512-bit)"
            } else if avx512 {
                "AVX-512 PCLMULQDQ folding"
            } else if pclmul {
                "SSE PCLMULQDQ folding (128-bit)"
            } else {
                return (
                    TABLES.into(),
                    Some("no SSE4.1+PCLMULQDQ, so no carry-less multiply".into()),
                );
            };
            let fallback = if cpu.vpclmulqdq && !cpu.avx512vl {
                Some(
                    "VPCLMULQDQ is present but crc-fast uses it only with AVX-512VL, so it \
                     folds 128 bits at a time"
                        .into(),
                )
            } else if !vpclmul {
                Some("no AVX-512VL+VPCLMULQDQ, so no 512-bit folding".into())
            } else {
                None
            };
            if cpu.sse42 {
                (
                    format!(
                        "SSE4.2 crc32 instruction up to 256 bytes; above, crc32 instruction \
                         streams fused with {folding}"
                    ),
                    fallback,
                )
            } else {
                let why = "no SSE4.2, so no crc32 instruction to fuse with";
                (
                    folding.to_string(),
                    Some(match fallback {
                        Some(f) => format!("{why}; {f}"),
                        None => why.into(),
                    }),
                )
            }
        }
        CpuArch::Aarch64 if cpu.arm_pmull => {
            let folding = if cpu.arm_sha3 {
                "NEON PMULL folding with SHA3 three-way XOR"
            } else {
                "NEON PMULL folding"
            };
            let fallback = (!cpu.arm_sha3).then(|| "no SHA3 three-way XOR".to_string());
            (
                format!("ARMv8 crc32c instructions fused with {folding}"),
                fallback,
            )
        }
        CpuArch::Aarch64 => (
            TABLES.into(),
            Some("no AES/PMULL, so no carry-less multiply".into()),
        ),
        CpuArch::Other => (
            TABLES.into(),
            Some("no vector CRC code for this architecture".into()),
        ),
    }
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

    /// Fire the crc32c tracepoint for one helper call. A single pass has no head or tail
    /// (one crc32c call over everything), so it reports 0 for both; a split update and a
    /// verify report the bytes before and after the field.
    #[inline(always)]
    fn trace(&self, site: &'static str, len: usize, off: usize, call: impl Into<CrcCall>) {
        let call = call.into();
        let (head, tail) = match call {
            CrcCall::Single => (0, 0),
            CrcCall::Split | CrcCall::Verify => (off as u32, (len - off - 4) as u32),
        };
        crate::trace::events::crc32c(
            site,
            len as u32,
            head,
            tail,
            call.name(),
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

    /// Checksum a structure covered in pieces, as a log record is (`xlog_cksum`): `header`
    /// with its field at `off` taken as zero, then each of `rest` whole, in order; the CRC
    /// is stored in `header`.
    ///
    /// One tracepoint per piece, so csumhist sees the header's head and tail in split mode
    /// while the pieces without a field (extended headers, payload) report neither.
    pub fn update_pieces(
        &self,
        site: &'static str,
        header: &mut [u8],
        off: usize,
        rest: &[(&'static str, &[u8])],
    ) {
        self.trace(site, header.len(), off, self.mode);
        let crc = match self.mode {
            CksumMode::Single => {
                put_crc(header, off, 0);
                self.engine.checksum(header)
            }
            CksumMode::Split => self.split(header, off),
        };
        let crc = self.append_pieces(crc, rest, self.mode.into());
        put_crc(header, off, crc);
    }

    /// Verify a structure covered in pieces (see [`Cksum::update_pieces`]); never modifies
    /// anything.
    pub fn verify_pieces(
        &self,
        site: &'static str,
        header: &[u8],
        off: usize,
        rest: &[(&'static str, &[u8])],
    ) -> Result<(), CrcMismatch> {
        self.trace(site, header.len(), off, CrcCall::Verify);
        let crc = self.split(header, off);
        let expected = self.append_pieces(crc, rest, CrcCall::Verify);
        let found = get_crc(header, off);
        if expected == found {
            Ok(())
        } else {
            Err(CrcMismatch { expected, found })
        }
    }

    /// Continue `crc` over pieces that hold no CRC field: one whole crc32c call each, so
    /// each reports head and tail 0 whatever the kind of call.
    fn append_pieces(&self, crc: u32, rest: &[(&'static str, &[u8])], call: CrcCall) -> u32 {
        rest.iter().fold(crc, |crc, &(site, piece)| {
            crate::trace::events::crc32c(
                site,
                piece.len() as u32,
                0,
                0,
                call.name(),
                self.engine.name(),
            );
            self.engine.append(crc, piece)
        })
    }

    /// Verify a structure of `kind`; never modifies `buf`.
    pub fn verify(&self, kind: BlockKind, buf: &[u8]) -> Result<(), CrcMismatch> {
        self.verify_at(kind.name(), buf, kind.crc_offset())
    }

    /// Verify `buf` whose CRC field is at `off`; never modifies `buf`.
    pub fn verify_at(&self, site: &'static str, buf: &[u8], off: usize) -> Result<(), CrcMismatch> {
        self.trace(site, buf.len(), off, CrcCall::Verify);
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
    use proptest::prelude::*;

    use super::*;

    const ENGINES: [CrcEngine; 3] = CrcEngine::ALL;

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

    /// A buffer and a cut point inside it (0..=len).
    fn buffer_and_cut() -> impl Strategy<Value = (Vec<u8>, usize)> {
        proptest::collection::vec(any::<u8>(), 0..9000).prop_flat_map(|buf| {
            let len = buf.len();
            (Just(buf), 0..=len)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn engines_agree_on_random_buffers(buf in proptest::collection::vec(any::<u8>(), 0..70000)) {
            let reference = CrcEngine::Soft.checksum(&buf);
            for e in ENGINES {
                prop_assert_eq!(e.checksum(&buf), reference, "{}", e);
            }
        }

        #[test]
        fn appending_at_any_split_point_equals_one_pass((buf, cut) in buffer_and_cut()) {
            let whole = CrcEngine::Soft.checksum(&buf);
            for e in ENGINES {
                let head = e.checksum(&buf[..cut]);
                prop_assert_eq!(e.append(head, &buf[cut..]), whole, "{} cut {}", e, cut);
            }
        }

        #[test]
        fn combining_two_parts_equals_one_pass((buf, cut) in buffer_and_cut()) {
            let whole = CrcEngine::Soft.checksum(&buf);
            for e in ENGINES {
                let (a, b) = (e.checksum(&buf[..cut]), e.checksum(&buf[cut..]));
                prop_assert_eq!(crc32c_combine(a, b, buf.len() - cut), whole, "{}", e);
            }
            // crc-fast's own combine agrees with ours.
            let (a, b) = (
                CrcEngine::Soft.checksum(&buf[..cut]),
                CrcEngine::Soft.checksum(&buf[cut..]),
            );
            let theirs = crc_fast::checksum_combine(
                crc_fast::CrcAlgorithm::Crc32Iscsi,
                u64::from(a),
                u64::from(b),
                (buf.len() - cut) as u64,
            );
            prop_assert_eq!(theirs as u32, whole);
        }

        #[test]
        fn single_and_split_updates_agree_at_any_field_offset(
            (mut buf, off) in proptest::collection::vec(any::<u8>(), 4..5000)
                .prop_flat_map(|b| { let n = b.len(); (Just(b), 0..=n - 4) }),
            flip in any::<usize>(),
        ) {
            let mut split = buf.clone();
            for engine in ENGINES {
                Cksum { mode: CksumMode::Single, engine }.update_at("inode", &mut buf, off);
                Cksum { mode: CksumMode::Split, engine }.update_at("inode", &mut split, off);
                prop_assert_eq!(&buf, &split, "{}", engine);
                let ck = Cksum { mode: CksumMode::Split, engine };
                prop_assert!(ck.verify_at("inode", &buf, off).is_ok());
                // Any single flipped bit, field included, fails verification.
                let bit = flip % (buf.len() * 8);
                let mut bad = buf.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                prop_assert!(ck.verify_at("inode", &bad, off).is_err(), "bit {}", bit);
            }
        }
    }

    fn cpu(arch: CpuArch) -> CpuFeatures {
        CpuFeatures::bare(arch)
    }

    #[test]
    fn engine_paths_follow_each_crates_dispatch() {
        // This VM's shape: SSE4.2, PCLMULQDQ and VPCLMULQDQ but no AVX-512.
        let vm = CpuFeatures {
            sse41: true,
            sse42: true,
            pclmulqdq: true,
            vpclmulqdq: true,
            ..cpu(CpuArch::X86_64)
        };
        let p = CrcEngine::Crc32c.path_on(&vm);
        assert!(
            p.path.contains("SSE4.2 crc32 instruction") && p.fallback.is_none(),
            "{p}"
        );
        let p = CrcEngine::Fast.path_on(&vm);
        assert!(
            p.path
                .contains("fused with SSE PCLMULQDQ folding (128-bit)"),
            "{p}"
        );
        // With AVX2 as well (Zen 3), `fast` runs our own 256-bit fold and does not fall back.
        let zen3 = CpuFeatures { avx2: true, ..vm };
        let own = CrcEngine::Fast.path_on(&zen3);
        assert!(
            own.path.contains("256-bit VPCLMULQDQ") && own.fallback.is_none(),
            "{own}"
        );
        let wide = CrcEngine::Fast.path_on(&CpuFeatures {
            avx512vl: true,
            ..zen3
        });
        assert!(
            wide.path.contains("512-bit"),
            "with AVX-512VL crc-fast is faster: {wide}"
        );
        assert!(
            p.fallback
                .as_deref()
                .is_some_and(|f| f.contains("AVX-512VL")),
            "{p}"
        );
        let full = CpuFeatures {
            avx512vl: true,
            ..vm
        };
        let p = CrcEngine::Fast.path_on(&full);
        assert!(
            p.path.contains("VPCLMULQDQ folding (512-bit)") && p.fallback.is_none(),
            "{p}"
        );

        // Without SSE4.2 the crc32c crate drops to tables; crc-fast still folds, unfused.
        let old = CpuFeatures {
            sse42: false,
            vpclmulqdq: false,
            ..vm
        };
        let p = CrcEngine::Crc32c.path_on(&old);
        assert!(p.path.contains("tables") && p.fallback.is_some(), "{p}");
        let p = CrcEngine::Fast.path_on(&old);
        assert_eq!(p.path, "SSE PCLMULQDQ folding (128-bit)");
        assert!(
            p.fallback.as_deref().is_some_and(|f| f.contains("SSE4.2")),
            "{p}"
        );
        let p = CrcEngine::Fast.path_on(&cpu(CpuArch::X86_64));
        assert!(p.path.contains("tables") && p.fallback.is_some(), "{p}");

        let arm = CpuFeatures {
            arm_crc: true,
            arm_pmull: true,
            arm_sha3: true,
            ..cpu(CpuArch::Aarch64)
        };
        assert!(CrcEngine::Crc32c.path_on(&arm).fallback.is_none());
        assert!(CrcEngine::Fast.path_on(&arm).path.contains("SHA3"));
        assert!(
            CrcEngine::Crc32c
                .path_on(&cpu(CpuArch::Aarch64))
                .fallback
                .is_some()
        );
        for c in [vm, old, arm, cpu(CpuArch::Other)] {
            assert!(
                CrcEngine::Soft.path_on(&c).fallback.is_none(),
                "soft never falls back"
            );
        }
    }

    #[test]
    fn the_fast_path_reported_matches_crc_fasts_own_choice() {
        let target = CrcEngine::crc_fast_target();
        let path = CrcEngine::Fast.path().path;
        let expect = if CpuFeatures::detect().runs_own_fold() {
            "256-bit VPCLMULQDQ"
        } else if target.contains("avx512-vpclmulqdq") {
            "VPCLMULQDQ folding"
        } else if target.contains("avx512-pclmulqdq") {
            "AVX-512 PCLMULQDQ folding"
        } else if target.contains("sse-pclmulqdq") {
            "SSE PCLMULQDQ folding"
        } else if target.contains("pmull") {
            "PMULL folding"
        } else {
            "tables"
        };
        assert!(
            path.contains(expect),
            "crc-fast says {target}, we say {path}"
        );
    }

    #[test]
    fn the_tracepoint_reports_head_and_tail_only_for_split_calls() {
        use crate::trace::{HistSpec, TraceConfig};
        // Other tests in this binary checksum labfs structures at the same time, without the
        // lock; a site of this test's own keeps their calls out of the groups read here.
        const SITE: &str = "cksum_tracepoint_test";
        let _serial = crate::trace::testing::serial();
        let session = TraceConfig {
            histograms: vec![
                HistSpec::new("crc32c", "head")
                    .grouped_by("site")
                    .grouped_by("mode"),
                HistSpec::new("crc32c", "tail")
                    .grouped_by("site")
                    .grouped_by("mode"),
            ],
            ..TraceConfig::default()
        }
        .start()
        .expect("session");
        let mut buf = vec![7u8; 512];
        let single = Cksum::default();
        let split = Cksum {
            mode: CksumMode::Split,
            ..single
        };
        single.update_at(SITE, &mut buf, 100);
        split.update_at(SITE, &mut buf, 100);
        split.update_at(SITE, &mut buf, 100);
        single.verify_at(SITE, &buf, 100).expect("verifies");
        let summary = session.finish().expect("finish");
        let head = summary.histogram("crc32c.head/site,mode").expect("head");
        let tail = summary.histogram("crc32c.tail/site,mode").expect("tail");
        let one = |h: &crate::trace::HistResult, mode: &str| {
            let g = h.group(&format!("{SITE},{mode}")).expect("group");
            (g.total_count(), g.total_bytes())
        };
        assert_eq!(one(head, "single"), (1, 0));
        assert_eq!(one(tail, "single"), (1, 0));
        assert_eq!(one(head, "split"), (2, 200));
        assert_eq!(one(tail, "split"), (2, 816));
        assert_eq!(one(head, "verify"), (1, 100));
        assert_eq!(one(tail, "verify"), (1, 408));
    }

    #[test]
    fn call_kinds_round_trip_their_names() {
        for c in CrcCall::ALL {
            assert_eq!(CrcCall::from_name(c.name()), Some(c));
        }
        assert_eq!(CrcCall::from_name("both"), None);
        assert!(CrcCall::Split.is_update() && !CrcCall::Verify.is_update());
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
