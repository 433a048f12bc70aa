//! Latency percentiles from an `hdrhistogram`, as data (for JSON) and as a table.
//!
//! Every tool that times calls keeps one histogram per call kind and reports the same five
//! figures: p50, p90, p99, p99.9 and max. An empty histogram has no percentiles (`None`, JSON
//! `null`) rather than zeroes that would read as "instant".

use comfy_table::{CellAlignment, Table, presets};
use hdrhistogram::Histogram;
use serde::Serialize;

/// The five figures of one histogram plus its sample count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    /// Number of samples.
    pub samples: u64,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// 99.9th percentile.
    #[serde(rename = "p99_9")]
    pub p99_9: Option<u64>,
    /// Largest sample.
    pub max: Option<u64>,
}

impl Percentiles {
    /// The figures of `h` (values are whatever unit the histogram recorded).
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        let samples = h.len();
        let q = |p: f64| (samples > 0).then(|| h.value_at_quantile(p));
        Percentiles {
            samples,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            max: (samples > 0).then(|| h.max()),
        }
    }
}

/// A table with one row per named histogram that has samples: name, samples, p50, p90, p99,
/// p99.9, max (`unit` goes in the heading, e.g. "µs").
pub fn table<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a Histogram<u64>)>,
    unit: &str,
) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "syscall".to_string(),
        "samples".to_string(),
        format!("p50 ({unit})"),
        format!("p90 ({unit})"),
        format!("p99 ({unit})"),
        format!("p99.9 ({unit})"),
        format!("max ({unit})"),
    ]);
    for (name, h) in rows {
        let p = Percentiles::of(h);
        if p.samples == 0 {
            continue;
        }
        let figures = [p.p50, p.p90, p.p99, p.p99_9, p.max].map(|v| v.unwrap_or(0).to_string());
        let mut row = vec![name.to_string(), p.samples.to_string()];
        row.extend(figures);
        t.add_row(row);
    }
    for i in 1..7 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = Histogram::new(3).unwrap();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn percentiles_of_one_to_thousand() {
        let p = Percentiles::of(&hist(1..=1000));
        assert_eq!(p.samples, 1000);
        assert_eq!(p.p50, Some(500));
        assert_eq!(p.p90, Some(900));
        assert_eq!(p.p99, Some(990));
        assert_eq!(p.p99_9, Some(999));
        assert_eq!(p.max, Some(1000));
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        let p = Percentiles::of(&hist([]));
        assert_eq!(p.samples, 0);
        assert_eq!(p.p50, None);
        assert_eq!(p.max, None);
    }

    #[test]
    fn table_lists_only_kinds_with_samples() {
        let (a, b) = (hist([5, 7]), hist([]));
        let s = table([("creat", &a), ("unlink", &b)], "us").to_string();
        assert!(s.contains("creat") && s.contains("p99.9 (us)"));
        assert!(!s.contains("unlink"));
    }
}
