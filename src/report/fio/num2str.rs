//! fio's number formatting (`lib/num2str.c`): `333MiB/s`, `20.0MiB/s`, `18.3k`, `8192KiB`.
//!
//! The value is divided by 1000 (SI) or 1024 (IEC) until it has at most `maxlen` digits,
//! stepping the prefix each time. If no division happened the integer is printed as is.
//! Otherwise, when the integer part leaves fewer than two places, the remainder only rounds
//! the integer up (at half); else `maxlen - digits - 1` decimals of remainder/base are shown,
//! and a decimal part that rounds to 1.0 carries into the integer, as fio's "carry rounding
//! error" does.

/// The unit after the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// No unit (IOPS, latencies).
    None,
    /// Bytes: `B`.
    Byte,
    /// Bits: `bit` (the value is multiplied by 8).
    Bit,
    /// `B/s`.
    BytePerSec,
    /// `bit/s` (the value is multiplied by 8).
    BitPerSec,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Byte => "B",
            Unit::Bit => "bit",
            Unit::BytePerSec => "B/s",
            Unit::BitPerSec => "bit/s",
        }
    }
}

const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// fio's `num2str(num, maxlen, base, pow2, units)`.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: Unit) -> String {
    let prefixes = if pow2 { &IEC } else { &SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post_index = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post_index += 1;
    }
    let mut num = match unit {
        Unit::Bit | Unit::BitPerSec => num.wrapping_mul(8),
        _ => num,
    };
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= prefixes.len() {
        post_index = 0;
    }
    let done = |n: u64, idx: usize| format!("{n}{}{}", prefixes[idx], unit.suffix());
    let Some(modulo) = modulo else {
        return done(num, post_index);
    };
    let digits = num.to_string().len();
    if maxlen.saturating_sub(digits) <= 1 {
        if carry {
            num += 1;
        }
        return done(num, post_index);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    // frac is "0.xyz" (or "1.000" after rounding up): keep the digits after the point.
    let tail = frac.get(2..).unwrap_or("");
    format!("{num}.{tail}{}{}", prefixes[post_index], unit.suffix())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_the_captured_figures() {
        // Every figure here appears in a real fio 3.33 capture (reference/captures).
        // 8 MiB in 24 ms (fio_write_fsync1_normal.txt).
        let mib = 8_388_608 * 1000 / 24;
        assert_eq!(num2str(mib, 4, 1, true, Unit::BytePerSec), "333MiB/s");
        assert_eq!(num2str(mib, 4, 1, false, Unit::BytePerSec), "350MB/s");
        assert_eq!(num2str(8_388_608, 4, 1, true, Unit::Byte), "8192KiB");
        assert_eq!(num2str(8_388_608, 4, 1, false, Unit::Byte), "8389kB");
        assert_eq!(num2str(65536, 4, 1, true, Unit::Byte), "64.0KiB");
        assert_eq!(num2str(4096, 4, 1, true, Unit::Byte), "4096B");
        assert_eq!(num2str(5333, 4, 1, false, Unit::None), "5333");
        assert_eq!(num2str(18_282, 4, 1, false, Unit::None), "18.3k");
        assert_eq!(num2str(256_000, 4, 1, false, Unit::None), "256k");
        assert_eq!(num2str(32_000, 4, 1, false, Unit::None), "32.0k");
        // 2048 KiB over 1 ms.
        assert_eq!(
            num2str(2_097_152_000, 4, 1, true, Unit::BytePerSec),
            "2000MiB/s"
        );
        assert_eq!(
            num2str(2_097_152_000, 4, 1, false, Unit::BytePerSec),
            "2097MB/s"
        );
        // 20.0 MiB in 1001 ms (fio_timebased_normal.txt).
        assert_eq!(num2str(20 << 20, 4, 1, true, Unit::Byte), "20.0MiB");
        assert_eq!(num2str(20 << 20, 4, 1, false, Unit::Byte), "21.0MB");
        assert_eq!(num2str(1024 << 30, 4, 1, true, Unit::Byte), "1024GiB");
        assert_eq!(num2str(16 << 30, 4, 1, true, Unit::Byte), "16.0GiB");
        assert_eq!(num2str(16 << 30, 4, 1, false, Unit::Byte), "17.2GB");
    }

    #[test]
    fn latency_min_max_use_six_digits_without_unit() {
        assert_eq!(num2str(10626, 6, 1, false, Unit::None), "10626");
        assert_eq!(num2str(841_777, 6, 1, false, Unit::None), "841777");
        assert_eq!(num2str(6_896_039, 6, 1, false, Unit::None), "6896.0k");
    }

    #[test]
    fn bits_multiply_by_eight() {
        assert_eq!(num2str(1000, 4, 1, false, Unit::BitPerSec), "8000bit/s");
        assert_eq!(num2str(0, 4, 1, true, Unit::BytePerSec), "0B/s");
    }
}
