//! CRC-32C by 256-bit carry-less-multiply folding (x86-64 with AVX2 and VPCLMULQDQ).
//!
//! The crc32 instruction retires eight bytes per instruction, and one stream of them is
//! bound by its latency; folding instead multiplies 128-bit chunks of the message forward by
//! precomputed powers of x modulo the polynomial, so the work is independent carry-less
//! multiplies that a vector unit runs side by side (Intel's "Fast CRC Computation for Generic
//! Polynomials Using PCLMULQDQ" describes the method). VPCLMULQDQ does two such multiplies per
//! 256-bit register, and CPUs that have it without AVX-512 (AMD Zen 3, for one) otherwise
//! fold only 128 bits at a time in the crates labfs uses: this is the path they miss.
//!
//! The fold keeps four 256-bit accumulators (128 bytes in flight), folds them together, then
//! reduces the last 128 bits with two crc32 instructions and finishes any bytes short of a
//! whole 16 with the instruction too, so no Barrett reduction is needed.
//!
//! The multiplier alone leaves the crc32 unit idle, and on Zen 3 it is busy enough that the
//! fold by itself ran only about 1.4x the crc32 instruction at 4 KiB. So whole 4 KiB blocks
//! (the size of a directory block, a log buffer page, a data page) are split: the first half
//! is folded while four crc32 instruction streams run over the second half in the same loop,
//! and the streams' states are then moved past the bytes that follow them (a fold by the
//! right power of x) and joined. That measured 2.0-2.3x the crc32 instruction at 4 KiB.
//!
//! # The constants
//!
//! The CRC is reflected: a chunk loaded little-endian holds the coefficient of x^(127-k) in
//! bit k. A carry-less multiply of two reflected 64-bit values yields their product times x
//! in that 128-bit frame. To move a 128-bit chunk A = Ahi·x^64 + Alo forward by D bits, its
//! first 64 bits (the low qword, Ahi) are multiplied by x^(63+D) mod P and its last 64 bits by
//! x^(D-1) mod P; the extra factor x of the reflected multiply completes the powers. Each
//! constant is the 32-bit remainder bit-reversed into the top half of a 64-bit lane.

/// CRC-32C's polynomial without its x^32 term, most significant bit first.
const POLY: u32 = 0x1edc_6f41;

/// x^n mod P, most significant bit first.
const fn x_pow_mod(n: u32) -> u32 {
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        let carry = r & 0x8000_0000 != 0;
        r <<= 1;
        if carry {
            r ^= POLY;
        }
        i += 1;
    }
    r
}

/// x^n mod P as a reflected 64-bit multiplier (see the module doc).
const fn multiplier(n: u32) -> u64 {
    (x_pow_mod(n).reverse_bits() as u64) << 32
}

/// The (first-half, second-half) multipliers that move a 128-bit chunk forward by `bits`.
const fn fold_by(bits: u32) -> (u64, u64) {
    (multiplier(63 + bits), multiplier(bits - 1))
}

const FOLD_1024: (u64, u64) = fold_by(1024);
const FOLD_256: (u64, u64) = fold_by(256);
const FOLD_128: (u64, u64) = fold_by(128);

/// Bytes in one interleaved block (see [`x86::raw_append`]): half folded, half in four crc32
/// instruction streams.
const BLOCK: usize = 4096;
/// Bytes in each of the block's four instruction streams.
const STREAM: usize = 512;
/// Moves the folded half's residue past the streams' 2048 bytes.
const PAST_STREAMS: (u64, u64) = fold_by(8 * 2048);
/// Move a stream's state past the 3, 2 or 1 streams after it (a 32-bit state sits 96 bits into
/// a 128-bit chunk, hence the 128 less).
const PAST_3: (u64, u64) = fold_by(8 * 3 * STREAM as u32 - 128);
const PAST_2: (u64, u64) = fold_by(8 * 2 * STREAM as u32 - 128);
const PAST_1: (u64, u64) = fold_by(8 * STREAM as u32 - 128);

/// Inputs shorter than this go straight to the crc32 instruction: below it the fold's set-up
/// and reduction cost more than they save.
pub const MIN_FOLD_LEN: usize = 256;

/// Whether this CPU can run [`append`]'s folding path (detected once).
pub fn available() -> bool {
    static AVAILABLE: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("vpclmulqdq")
                && std::arch::is_x86_feature_detected!("pclmulqdq")
                && std::arch::is_x86_feature_detected!("sse4.2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    });
    *AVAILABLE
}

/// Continue a finished CRC-32C `crc` over `data`; `None` when the CPU lacks the instructions
/// (see [`available`]), so the caller picks another engine.
pub fn append(crc: u32, data: &[u8]) -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    {
        if available() {
            // SAFETY: the features the function is compiled for were just detected.
            return Some(!unsafe { x86::raw_append(!crc, data) });
        }
    }
    let _ = (crc, data);
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{
        BLOCK, FOLD_128, FOLD_256, FOLD_1024, MIN_FOLD_LEN, PAST_1, PAST_2, PAST_3, PAST_STREAMS,
        STREAM,
    };

    /// Raw (uninverted) CRC state continued over `data` with the crc32 instruction.
    #[target_feature(enable = "sse4.2")]
    fn crc32_bytes(mut state: u32, data: &[u8]) -> u32 {
        let mut words = data.chunks_exact(8);
        let mut s = u64::from(state);
        for w in &mut words {
            let v = u64::from_le_bytes(w.try_into().expect("chunks_exact gives 8 bytes"));
            s = _mm_crc32_u64(s, v);
        }
        state = s as u32;
        for &b in words.remainder() {
            state = _mm_crc32_u8(state, b);
        }
        state
    }

    /// Both 128-bit lanes of `acc` moved forward by the distance `k` was made for.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn fold256(acc: __m256i, k: __m256i) -> __m256i {
        _mm256_xor_si256(
            _mm256_clmulepi64_epi128(acc, k, 0x00),
            _mm256_clmulepi64_epi128(acc, k, 0x11),
        )
    }

    /// `acc` moved forward by the distance `k` was made for.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    fn fold128(acc: __m128i, k: __m128i) -> __m128i {
        _mm_xor_si128(
            _mm_clmulepi64_si128(acc, k, 0x00),
            _mm_clmulepi64_si128(acc, k, 0x11),
        )
    }

    fn splat256((first, second): (u64, u64)) -> __m256i {
        // SAFETY: AVX is implied by the caller's AVX2; this only builds a register.
        unsafe { _mm256_set_epi64x(second as i64, first as i64, second as i64, first as i64) }
    }

    fn pair((first, second): (u64, u64)) -> __m128i {
        // SAFETY: SSE2 is part of x86-64; this only builds a register.
        unsafe { _mm_set_epi64x(second as i64, first as i64) }
    }

    /// The raw state of a 128-bit residue: two crc32 instructions from state 0.
    #[inline]
    #[target_feature(enable = "sse4.2")]
    fn reduce(y: __m128i) -> u32 {
        let lo = _mm_cvtsi128_si64(y) as u64;
        let hi = _mm_extract_epi64(y, 1) as u64;
        _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32
    }

    /// Raw `state` continued over as many zero bytes as `k` was made for.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.2")]
    fn shift(state: u32, k: __m128i) -> u32 {
        reduce(fold128(_mm_cvtsi32_si128(state as i32), k))
    }

    /// Raw CRC state continued over one [`BLOCK`]: its first half folded, its second half in
    /// four crc32 instruction streams run in the same loop. The multiplier and the crc32 unit
    /// are separate, so the two halves overlap; the streams then join the folded half's state,
    /// each moved past the bytes after it.
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
    fn raw_block(state: u32, block: &[u8; BLOCK]) -> u32 {
        let p = block.as_ptr();
        let load = |at: usize| -> __m256i {
            // SAFETY: `at` + 32 <= BLOCK / 2 at every call below.
            unsafe { _mm256_loadu_si256(p.add(at).cast()) }
        };
        let word = |at: usize| -> u64 {
            // SAFETY: `at` + 8 <= BLOCK at every call below.
            unsafe { p.add(at).cast::<u64>().read_unaligned() }
        };
        let half = BLOCK / 2;
        let k1024 = splat256(FOLD_1024);
        let k256 = splat256(FOLD_256);
        let mut x0 = _mm256_xor_si256(load(0), _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, state as i32));
        let mut x1 = load(32);
        let mut x2 = load(64);
        let mut x3 = load(96);
        let mut streams = [0u64; 4];
        for round in 0..STREAM / 32 {
            for (j, s) in streams.iter_mut().enumerate() {
                let at = half + j * STREAM + round * 32;
                *s = _mm_crc32_u64(*s, word(at));
                *s = _mm_crc32_u64(*s, word(at + 8));
                *s = _mm_crc32_u64(*s, word(at + 16));
                *s = _mm_crc32_u64(*s, word(at + 24));
            }
            let at = (round + 1) * 128;
            if at < half {
                x0 = _mm256_xor_si256(fold256(x0, k1024), load(at));
                x1 = _mm256_xor_si256(fold256(x1, k1024), load(at + 32));
                x2 = _mm256_xor_si256(fold256(x2, k1024), load(at + 64));
                x3 = _mm256_xor_si256(fold256(x3, k1024), load(at + 96));
            }
        }
        x1 = _mm256_xor_si256(fold256(x0, k256), x1);
        x2 = _mm256_xor_si256(fold256(x1, k256), x2);
        let x = _mm256_xor_si256(fold256(x2, k256), x3);
        let y = _mm_xor_si128(
            fold128(_mm256_castsi256_si128(x), pair(FOLD_128)),
            _mm256_extracti128_si256(x, 1),
        );
        reduce(fold128(y, pair(PAST_STREAMS)))
            ^ shift(streams[0] as u32, pair(PAST_3))
            ^ shift(streams[1] as u32, pair(PAST_2))
            ^ shift(streams[2] as u32, pair(PAST_1))
            ^ streams[3] as u32
    }

    /// Raw CRC state continued over `data` (the caller checked the CPU features).
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(super) fn raw_append(mut state: u32, mut data: &[u8]) -> u32 {
        while let Some((block, rest)) = data.split_first_chunk::<BLOCK>() {
            state = raw_block(state, block);
            data = rest;
        }
        if data.len() < MIN_FOLD_LEN {
            return crc32_bytes(state, data);
        }
        let load = |at: usize| -> __m256i {
            debug_assert!(at + 32 <= data.len());
            // SAFETY: every call below stays within `data` (checked by the loop bounds).
            unsafe { _mm256_loadu_si256(data.as_ptr().add(at).cast()) }
        };
        let k1024 = splat256(FOLD_1024);
        let k256 = splat256(FOLD_256);
        // The state enters as the first four message bytes XORed with it.
        let mut x0 = _mm256_xor_si256(load(0), _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, state as i32));
        let mut x1 = load(32);
        let mut x2 = load(64);
        let mut x3 = load(96);
        let mut at = 128;
        while data.len() - at >= 128 {
            x0 = _mm256_xor_si256(fold256(x0, k1024), load(at));
            x1 = _mm256_xor_si256(fold256(x1, k1024), load(at + 32));
            x2 = _mm256_xor_si256(fold256(x2, k1024), load(at + 64));
            x3 = _mm256_xor_si256(fold256(x3, k1024), load(at + 96));
            at += 128;
        }
        x1 = _mm256_xor_si256(fold256(x0, k256), x1);
        x2 = _mm256_xor_si256(fold256(x1, k256), x2);
        let mut x = _mm256_xor_si256(fold256(x2, k256), x3);
        while data.len() - at >= 32 {
            x = _mm256_xor_si256(fold256(x, k256), load(at));
            at += 32;
        }
        let k128 = pair(FOLD_128);
        let mut y = _mm_xor_si128(
            fold128(_mm256_castsi256_si128(x), k128),
            _mm256_extracti128_si256(x, 1),
        );
        if data.len() - at >= 16 {
            // SAFETY: at least 16 bytes remain past `at`.
            let next = unsafe { _mm_loadu_si128(data.as_ptr().add(at).cast()) };
            y = _mm_xor_si128(fold128(y, k128), next);
            at += 16;
        }
        crc32_bytes(reduce(y), &data[at..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn constants_are_powers_of_x_modulo_the_polynomial() {
        // x^32 mod P is P's low terms; x^31 is itself.
        assert_eq!(x_pow_mod(32), POLY);
        assert_eq!(x_pow_mod(31), 0x8000_0000);
        assert_eq!(multiplier(31), 1 << 32);
    }

    #[test]
    fn the_fold_agrees_with_the_crc32_instruction_at_every_length_and_boundary() {
        if !available() {
            assert_eq!(append(0, b"123456789"), None);
            return;
        }
        assert_eq!(append(0, b"123456789"), Some(0xe306_9283));
        let mut rng = SplitMix64::new(0x5eed);
        let buf: Vec<u8> = (0..3 * BLOCK + 700).map(|_| rng.next_u64() as u8).collect();
        let mut lengths: Vec<usize> = (0..=600).collect();
        for edge in [BLOCK, 2 * BLOCK, 3 * BLOCK] {
            lengths.extend(edge - 130..edge + 130);
        }
        lengths.extend((0..200).map(|_| rng.below(buf.len() as u64 - 3) as usize));
        for len in lengths {
            for offset in [0, 1, 3] {
                let data = &buf[offset..offset + len];
                let init = rng.next_u64() as u32;
                assert_eq!(
                    append(init, data),
                    Some(crc32c::crc32c_append(init, data)),
                    "length {len}, offset {offset}"
                );
            }
        }
    }
}
