//! Sizes, durations and rates as users type them (`4k`, `1GiB`, `20us`, `2g` per second) and
//! as fslab prints them back. Each parser returns a one-line error naming what it could not
//! read.
//!
//! This is a foundation module: labfs (device sizes, `-o` values) and every layer above it use
//! it, and it imports nothing from the crate.
//!
//! Sizes use binary multiples (`k` = 1024) whatever the spelling (`k`, `K`, `KiB`, `kb`), the
//! way storage people use them on command lines; fio's `kb_base` rules live with the fio job
//! parser, not here.

use std::time::Duration;

use thiserror::Error;

/// A value that could not be read as a size, duration or rate.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// Nothing to parse.
    #[error("empty value")]
    Empty,
    /// The number part is not a number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The suffix is not one this parser knows.
    #[error("unknown unit '{unit}' in '{value}'")]
    UnknownUnit {
        /// The whole value as typed.
        value: String,
        /// The suffix that was not understood.
        unit: String,
    },
    /// The value does not fit in 64 bits.
    #[error("'{0}' is too large")]
    Overflow(String),
}

fn split_number(s: &str) -> Result<(f64, &str), UnitError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let n: f64 = num
        .parse()
        .map_err(|_| UnitError::NotANumber(s.to_string()))?;
    Ok((n, unit.trim()))
}

/// Parse a byte size: `4096`, `4k`, `16KiB`, `1g`, `2T`.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let (n, unit) = split_number(s)?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => {
            return Err(UnitError::UnknownUnit {
                value: s.to_string(),
                unit: unit.to_string(),
            });
        }
    };
    let v = n * (1u64 << shift) as f64;
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err(UnitError::Overflow(s.to_string()));
    }
    Ok(v.round() as u64)
}

/// Parse a duration: `100us`, `1.5ms`, `2s`, `250ns`; a bare number is microseconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (n, unit) = split_number(s)?;
    let nanos_per = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "" | "us" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        _ => {
            return Err(UnitError::UnknownUnit {
                value: s.to_string(),
                unit: unit.to_string(),
            });
        }
    };
    let ns = n * nanos_per;
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(UnitError::Overflow(s.to_string()));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Parse a bandwidth in bytes per second: `2g` (= 2 GiB/s), `500m`, `500m/s`.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    parse_size(t)
}

/// A size in the spec's canonical spelling: the largest binary unit that divides it exactly
/// (`1g`, `64k`, `1536`).
pub fn format_size_spec(bytes: u64) -> String {
    for (shift, unit) in [(50, "p"), (40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A size for people: the largest IEC unit that divides it exactly (`1GiB`, `1536B`).
pub fn format_size_iec(bytes: u64) -> String {
    for (shift, unit) in [
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// A duration in the largest unit that holds it exactly (`20us`, `1500us`, `2s`, `250ns`).
pub fn format_duration_spec(d: Duration) -> String {
    let ns = d.as_nanos();
    for (per, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns != 0 && ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_multiples() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("16KiB").unwrap(), 16384);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5M").unwrap(), 3 << 19);
        assert!(matches!(
            parse_size("4q"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_size("k"), Err(UnitError::NotANumber(_))));
        assert_eq!(parse_size(""), Err(UnitError::Empty));
        assert!(matches!(
            parse_size("99999999P"),
            Err(UnitError::Overflow(_))
        ));
    }

    #[test]
    fn durations_default_to_microseconds() {
        assert_eq!(parse_duration("20").unwrap(), Duration::from_micros(20));
        assert_eq!(parse_duration("20us").unwrap(), Duration::from_micros(20));
        assert_eq!(
            parse_duration("1.5ms").unwrap(),
            Duration::from_micros(1500)
        );
        assert_eq!(parse_duration("250ns").unwrap(), Duration::from_nanos(250));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("2 fortnights").is_err());
    }

    #[test]
    fn rates_accept_per_second_suffix() {
        assert_eq!(parse_rate("2g").unwrap(), 2 << 30);
        assert_eq!(parse_rate("500m/s").unwrap(), 500 << 20);
    }

    #[test]
    fn size_spec_uses_largest_exact_unit() {
        assert_eq!(format_size_spec(1 << 30), "1g");
        assert_eq!(format_size_spec(64 << 10), "64k");
        assert_eq!(format_size_spec(1536), "1536");
        assert_eq!(format_size_spec(3 << 29), "1536m");
        assert_eq!(format_size_spec(0), "0");
        assert_eq!(format_size_iec(1 << 30), "1GiB");
        assert_eq!(format_size_iec(512), "512B");
    }

    #[test]
    fn duration_spec_uses_largest_exact_unit() {
        assert_eq!(format_duration_spec(Duration::from_micros(20)), "20us");
        assert_eq!(format_duration_spec(Duration::from_micros(1500)), "1500us");
        assert_eq!(format_duration_spec(Duration::from_secs(2)), "2s");
        assert_eq!(format_duration_spec(Duration::from_nanos(250)), "250ns");
        assert_eq!(format_duration_spec(Duration::ZERO), "0ns");
    }
}
