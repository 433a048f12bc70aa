//! fio's number rules: sizes with `kb_base`, times with fio's suffixes, and ranges.
//!
//! fio 3.33 reads every number with `strtoll` (decimal, or hexadecimal when the text contains
//! `0x`), then multiplies by a suffix found after the digits (`parse.c`, `str_to_decimal`):
//!
//! - Sizes: the suffix is lower-cased and cut at the first range separator (`:` `-` `,` `/`).
//!   `k`/`m`/`g`/`t`/`p` (and anything starting with those letters, e.g. `kb`) multiply by
//!   `kb_base` to the power 1..5, while `kib`/`mib`/... use the *other* base: with the default
//!   `kb_base=1024`, `4k` is 4096 but `4KiB` is 4000, a compatibility inversion fio keeps on
//!   purpose; with `kb_base=1000` the meanings are the SI/IEC ones. An unknown suffix
//!   multiplies by 1 (`4q` is 4), and `%` marks a percentage.
//! - Times: a bare number is seconds for options fio marks "is_seconds" (`runtime`,
//!   `ramp_time`) and microseconds otherwise; `us`/`usec` and `ms`/`msec` are matched as
//!   prefixes, `s`, `m`, `h`, `d` only exactly, and anything else multiplies by 1 (so
//!   `runtime=1sec` is one microsecond, as in fio).
//!
//! Nothing here panics on user input; what fio rejects (no digits at all) is an error.

use std::fmt;

use thiserror::Error;

/// The base of `k`, `m`, ... in sizes (fio's `kb_base`); it also picks IEC or SI units in
/// the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KbBase {
    /// 1024 (fio's default): `k` = 1024, `KiB` = 1000; output leads with IEC units.
    #[default]
    Binary,
    /// 1000: `k` = 1000, `KiB` = 1024; output leads with SI units.
    Decimal,
}

impl KbBase {
    /// The multiplier of `k`.
    pub fn value(self) -> u64 {
        match self {
            KbBase::Binary => 1024,
            KbBase::Decimal => 1000,
        }
    }

    /// Whether the primary output unit is a power of two (fio's `i2p`).
    pub fn is_pow2(self) -> bool {
        matches!(self, KbBase::Binary)
    }
}

/// A number fio could not read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NumberError {
    /// No digits where a number was expected.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The value does not fit in 64 bits.
    #[error("'{0}' is out of range")]
    OutOfRange(String),
    /// A range without its separator.
    #[error("'{0}' is not a range (expected LOW-HIGH or LOW:HIGH)")]
    NotARange(String),
}

/// A size as fio reads it: bytes, or a percentage (`size=50%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeValue {
    /// A byte count.
    Bytes(u64),
    /// A percentage of the existing file or device.
    Percent(u64),
}

impl fmt::Display for SizeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeValue::Bytes(b) => write!(f, "{b}"),
            SizeValue::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// `strtoll` as fio calls it: skip leading blanks, optional sign, then digits in `radix`
/// (hexadecimal accepts a `0x` prefix). Returns the value and where the digits ended.
fn strtoll(s: &str, radix: u32) -> Option<(i64, usize)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut negative = false;
    if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
        negative = bytes[i] == b'-';
        i += 1;
    }
    if radix == 16
        && i + 1 < bytes.len()
        && bytes[i] == b'0'
        && (bytes[i + 1] == b'x' || bytes[i + 1] == b'X')
        && bytes.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        i += 2;
    }
    let start = i;
    let mut value: i64 = 0;
    while i < bytes.len() {
        let Some(d) = (bytes[i] as char).to_digit(radix) else {
            break;
        };
        // strtoll saturates on overflow; fio then rejects LONG_MAX with ERANGE.
        value = value
            .checked_mul(i64::from(radix))?
            .checked_add(i64::from(d))?;
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if negative { -value } else { value }, i))
}

/// Where the suffix starts: after the digits (and a sign before any digit), as fio scans.
fn suffix_start(s: &str) -> usize {
    let mut digit_seen = false;
    for (i, c) in s.char_indices() {
        let sign = (c == '+' || c == '-') && !digit_seen;
        if !c.is_ascii_digit() && !sign {
            return i;
        }
        digit_seen |= c.is_ascii_digit();
    }
    s.len()
}

/// The multiplier of a size suffix (fio's `__get_mult_bytes`), or `None` for a percentage.
fn size_multiplier(suffix: &str, kb_base: KbBase) -> Option<u64> {
    let lower: String = suffix
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .take_while(|c| !matches!(c, ':' | '-' | ',' | '/'))
        .collect();
    let base = kb_base.value();
    let other = match kb_base {
        KbBase::Binary => 1000,
        KbBase::Decimal => 1024,
    };
    let (pow, mult) = if lower.starts_with("pib") {
        (5, other)
    } else if lower.starts_with("tib") {
        (4, other)
    } else if lower.starts_with("gib") {
        (3, other)
    } else if lower.starts_with("mib") {
        (2, other)
    } else if lower.starts_with("kib") {
        (1, other)
    } else if lower.starts_with('p') {
        (5, base)
    } else if lower.starts_with('t') {
        (4, base)
    } else if lower.starts_with('g') {
        (3, base)
    } else if lower.starts_with('m') {
        (2, base)
    } else if lower.starts_with('k') {
        (1, base)
    } else if lower.starts_with('%') {
        return None;
    } else {
        (0, base)
    };
    Some(mult.pow(pow))
}

fn leading_number(s: &str) -> Result<i64, NumberError> {
    let radix = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    strtoll(s, radix)
        .map(|(v, _)| v)
        .ok_or_else(|| NumberError::NotANumber(s.to_string()))
}

/// Read a size with fio's rules (see the module docs).
pub fn parse_size(s: &str, kb_base: KbBase) -> Result<SizeValue, NumberError> {
    let value = leading_number(s)?;
    let trimmed = s.trim_start();
    let suffix = &trimmed[suffix_start(trimmed)..];
    // fio only looks at the suffix when it starts with a letter or '%'.
    let first = suffix.chars().next();
    let mult = match first {
        Some(c) if c.is_ascii_alphabetic() || c == '%' => size_multiplier(suffix, kb_base),
        _ => Some(1),
    };
    let value = u64::try_from(value).map_err(|_| NumberError::OutOfRange(s.to_string()))?;
    match mult {
        None => Ok(SizeValue::Percent(value)),
        Some(m) => value
            .checked_mul(m)
            .map(SizeValue::Bytes)
            .ok_or_else(|| NumberError::OutOfRange(s.to_string())),
    }
}

/// Read a size that must be bytes (a percentage is an error for options that cannot use it).
pub fn parse_bytes(s: &str, kb_base: KbBase) -> Result<u64, NumberError> {
    match parse_size(s, kb_base)? {
        SizeValue::Bytes(b) => Ok(b),
        SizeValue::Percent(_) => Err(NumberError::NotANumber(s.to_string())),
    }
}

/// Whether a bare number means seconds (`runtime`) or microseconds (most other times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// A bare number is seconds.
    Seconds,
    /// A bare number is microseconds.
    Micros,
}

/// Read a time with fio's rules, in microseconds (see the module docs).
pub fn parse_time_us(s: &str, bare: TimeUnit) -> Result<u64, NumberError> {
    let value = leading_number(s)?;
    let trimmed = s.trim_start();
    let suffix = &trimmed[suffix_start(trimmed)..];
    let mult: u64 = match suffix.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => {
            let lower = suffix.to_ascii_lowercase();
            if lower.starts_with("us") {
                1
            } else if lower.starts_with("ms") {
                1_000
            } else {
                match lower.as_str() {
                    "s" => 1_000_000,
                    "m" => 60_000_000,
                    "h" => 3_600_000_000,
                    "d" => 86_400_000_000,
                    _ => 1,
                }
            }
        }
        _ => match bare {
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Micros => 1,
        },
    };
    let value = u64::try_from(value).map_err(|_| NumberError::OutOfRange(s.to_string()))?;
    value
        .checked_mul(mult)
        .ok_or_else(|| NumberError::OutOfRange(s.to_string()))
}

/// Read a plain integer (with fio's size suffixes applied, as fio does for integer options).
pub fn parse_int(s: &str, kb_base: KbBase) -> Result<u64, NumberError> {
    parse_bytes(s, kb_base)
}

/// Read a boolean the way fio's `check_int` does: any integer, non-zero is true.
pub fn parse_bool(s: &str) -> Result<bool, NumberError> {
    let radix = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    strtoll(s, radix)
        .map(|(v, _)| v != 0)
        .ok_or_else(|| NumberError::NotANumber(s.to_string()))
}

/// Read a size range `LOW-HIGH` or `LOW:HIGH` (the two are swapped if given high first).
pub fn parse_size_range(s: &str, kb_base: KbBase) -> Result<(u64, u64), NumberError> {
    let cut = s.split(',').next().unwrap_or(s).trim_start().to_string();
    // The separator is the first '-' or ':' after the first character (a leading sign is not one).
    let sep = cut
        .char_indices()
        .skip(1)
        .find(|(_, c)| *c == '-' || *c == ':')
        .map(|(i, _)| i);
    let Some(i) = sep else {
        let v = parse_bytes(&cut, kb_base)?;
        return Ok((v, v));
    };
    let lo = parse_bytes(&cut[..i], kb_base)?;
    let hi = parse_bytes(&cut[i + 1..], kb_base)?;
    Ok(if lo <= hi { (lo, hi) } else { (hi, lo) })
}

/// Split an option value into fio's per-direction parts (read, write, trim): `a,b,c`, and for
/// number options also `a:b` or `a-b`. A missing later part repeats the last given one; an
/// empty part (`,8k`) leaves that direction unset (`None`).
pub fn split_directions(s: &str) -> [Option<String>; 3] {
    let s = s.strip_suffix(',').unwrap_or(s);
    let sep = if s.contains(',') {
        ','
    } else if s.contains(':') {
        ':'
    } else if s.trim_start().get(1..).is_some_and(|r| r.contains('-')) {
        '-'
    } else {
        ','
    };
    let parts: Vec<&str> = s.splitn(3, sep).collect();
    let mut out: [Option<String>; 3] = [None, None, None];
    let mut last: Option<String> = None;
    for (i, slot) in out.iter_mut().enumerate() {
        match parts.get(i) {
            Some(p) if !p.trim().is_empty() => {
                *slot = Some(p.to_string());
                last = Some(p.to_string());
            }
            Some(_) => {}
            None => *slot = last.clone(),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> u64 {
        parse_bytes(s, KbBase::Binary).unwrap()
    }

    #[test]
    fn kb_base_1024_inverts_iec_suffixes() {
        assert_eq!(b("4k"), 4096);
        assert_eq!(b("4K"), 4096);
        assert_eq!(b("4kb"), 4096);
        assert_eq!(b("4KB"), 4096);
        assert_eq!(b("4ki"), 4096, "only the full `kib` selects the other base");
        assert_eq!(b("4KiB"), 4000);
        assert_eq!(b("1m"), 1 << 20);
        assert_eq!(b("1MiB"), 1_000_000);
        assert_eq!(b("1g"), 1 << 30);
        assert_eq!(b("2t"), 2 << 40);
    }

    #[test]
    fn kb_base_1000_uses_true_units() {
        let d = |s| parse_bytes(s, KbBase::Decimal).unwrap();
        assert_eq!(d("4k"), 4000);
        assert_eq!(d("4kib"), 4096);
        assert_eq!(d("1m"), 1_000_000);
    }

    #[test]
    fn hex_unknown_suffixes_and_blanks_follow_strtoll() {
        assert_eq!(b("0x2000"), 0x2000);
        assert_eq!(b(" 4k"), 4096, "fio tolerates blanks before a number");
        assert_eq!(b("4q"), 4, "an unknown suffix multiplies by one");
        assert_eq!(b("4096"), 4096);
        assert_eq!(
            b("1.5k"),
            1,
            "strtoll stops at the dot and no suffix follows it"
        );
        assert!(matches!(
            parse_bytes("k", KbBase::Binary),
            Err(NumberError::NotANumber(_))
        ));
        assert!(parse_bytes("", KbBase::Binary).is_err());
        assert!(matches!(
            parse_bytes("99999999999p", KbBase::Binary),
            Err(NumberError::OutOfRange(_))
        ));
    }

    #[test]
    fn percent_is_its_own_kind() {
        assert_eq!(
            parse_size("50%", KbBase::Binary).unwrap(),
            SizeValue::Percent(50)
        );
        assert!(parse_bytes("50%", KbBase::Binary).is_err());
    }

    #[test]
    fn times_use_fios_suffix_rules() {
        let s = |v| parse_time_us(v, TimeUnit::Seconds).unwrap();
        assert_eq!(s("30"), 30_000_000);
        assert_eq!(s("300ms"), 300_000);
        assert_eq!(s("300msec"), 300_000);
        assert_eq!(s("20us"), 20);
        assert_eq!(s("2s"), 2_000_000);
        assert_eq!(s("2S"), 2_000_000);
        assert_eq!(s("1m"), 60_000_000);
        assert_eq!(s("1h"), 3_600_000_000);
        assert_eq!(s("1sec"), 1, "fio reads 1sec as one microsecond");
        assert_eq!(parse_time_us("250", TimeUnit::Micros).unwrap(), 250);
        assert!(parse_time_us("soon", TimeUnit::Seconds).is_err());
    }

    #[test]
    fn ranges_and_direction_lists() {
        assert_eq!(
            parse_size_range("1k-4k", KbBase::Binary).unwrap(),
            (1024, 4096)
        );
        assert_eq!(
            parse_size_range("8k:4k", KbBase::Binary).unwrap(),
            (4096, 8192)
        );
        assert_eq!(
            parse_size_range("64k", KbBase::Binary).unwrap(),
            (65536, 65536)
        );
        let d = split_directions("8k,32k");
        assert_eq!(
            d,
            [Some("8k".into()), Some("32k".into()), Some("32k".into())]
        );
        let d = split_directions(",8k");
        assert_eq!(d, [None, Some("8k".into()), Some("8k".into())]);
        let d = split_directions("4k");
        assert_eq!(d, [Some("4k".into()), Some("4k".into()), Some("4k".into())]);
        let d = split_directions("4k-8k");
        assert_eq!(d, [Some("4k".into()), Some("8k".into()), Some("8k".into())]);
    }

    #[test]
    fn booleans_are_integers() {
        assert!(parse_bool("1").unwrap());
        assert!(!parse_bool("0").unwrap());
        assert!(parse_bool("2").unwrap());
        assert!(parse_bool("yes").is_err());
    }
}
