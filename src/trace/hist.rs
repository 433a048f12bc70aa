//! Power-of-two (ilog2) histograms of byte sizes, with the byte range on every row.
//!
//! A value `v` lands in the bucket of `floor(log2(v))`: bucket 9 holds `[512, 1024)`. Zero has
//! no logarithm and gets a bucket of its own. Each bucket keeps the number of values *and*
//! their sum, because the question these histograms answer (seed 004, "larger batches for
//! crc32c") is both "how many calls are small?" and "how many bytes go through small calls?".
//!
//! Why every rendering names the range: in seed 004 the column headed "ilog2" was really
//! `fls(v)` (one higher: a 4-byte head sat under 3, a 100-byte inode head under 7), and the
//! thread spent a round trip establishing which convention was meant. Here the table prints the
//! index (`floor(log2)`; `fls` is that plus one) next to the half-open byte range, and the
//! bpftrace-style rendering prints only ranges, so no reader has to guess.
//!
//! Sums are kept in `u128`: a `u64` sum of `u64` values overflows after two large ones.

use std::fmt::Write as _;

/// Number of buckets: one for zero plus one per bit of a `u64`.
pub const BUCKETS: usize = 65;

/// Width of the bar in [`Log2Hist::render_bpftrace`], as in bpftrace's `hist()` output.
const BAR_WIDTH: u64 = 52;

/// An ilog2 histogram of `u64` values: count and byte sum per power-of-two bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log2Hist {
    counts: [u64; BUCKETS],
    sums: [u128; BUCKETS],
}

impl Default for Log2Hist {
    fn default() -> Self {
        Log2Hist::new()
    }
}

/// One bucket of a [`Log2Hist`], with its range and its share of the totals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// `floor(log2(v))` for the values in this bucket; `None` for the zero bucket.
    pub ilog2: Option<u32>,
    /// Smallest value in the bucket (inclusive).
    pub lo: u64,
    /// One past the largest value in the bucket (exclusive; `2^64` for the top bucket).
    pub hi: u128,
    /// How many values fell in the bucket.
    pub count: u64,
    /// Sum of those values.
    pub bytes: u128,
    /// `count` as a percentage of all values (0 when the histogram is empty).
    pub count_pct: f64,
    /// `bytes` as a percentage of the sum of all values (0 when that sum is 0).
    pub bytes_pct: f64,
}

impl Bucket {
    /// The range as exact numbers, e.g. `[512, 1024)`.
    pub fn range_label(&self) -> String {
        format!("[{}, {})", self.lo, self.hi)
    }

    /// The range as bpftrace prints it: `[0]`, `[1]`, `[2, 4)`, `[512, 1K)`, `[1M, 2M)`.
    pub fn bpftrace_label(&self) -> String {
        if self.hi == u128::from(self.lo) + 1 {
            format!("[{}]", self.lo)
        } else {
            format!("[{}, {})", si_power(u128::from(self.lo)), si_power(self.hi))
        }
    }
}

/// Print a power of two with a binary suffix when it is a whole multiple of one (`1K`, `16E`).
fn si_power(v: u128) -> String {
    const SUFFIXES: [(u32, &str); 6] = [
        (60, "E"),
        (50, "P"),
        (40, "T"),
        (30, "G"),
        (20, "M"),
        (10, "K"),
    ];
    for (shift, suffix) in SUFFIXES {
        let unit = 1u128 << shift;
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{}{}", v / unit, suffix);
        }
    }
    v.to_string()
}

fn pct(part: u128, whole: u128) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl Log2Hist {
    /// An empty histogram.
    pub fn new() -> Self {
        Log2Hist {
            counts: [0; BUCKETS],
            sums: [0; BUCKETS],
        }
    }

    /// The bucket index of a value: 0 for zero, `floor(log2(v)) + 1` otherwise.
    pub fn index_of(v: u64) -> usize {
        match v.checked_ilog2() {
            None => 0,
            Some(l) => l as usize + 1,
        }
    }

    /// Count one value.
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Count `n` occurrences of the same value.
    pub fn record_n(&mut self, v: u64, n: u64) {
        let i = Self::index_of(v);
        self.counts[i] = self.counts[i].saturating_add(n);
        self.sums[i] = self.sums[i].saturating_add(u128::from(v) * u128::from(n));
    }

    /// Add another histogram's counts and sums into this one.
    pub fn merge(&mut self, other: &Log2Hist) {
        for i in 0..BUCKETS {
            self.counts[i] = self.counts[i].saturating_add(other.counts[i]);
            self.sums[i] = self.sums[i].saturating_add(other.sums[i]);
        }
    }

    /// Number of values recorded.
    pub fn total_count(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// Sum of all values recorded.
    pub fn total_bytes(&self) -> u128 {
        self.sums.iter().fold(0u128, |a, &s| a.saturating_add(s))
    }

    /// True when nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// The bucket at `index` (0 = zero bucket, `k + 1` = `[2^k, 2^(k+1))`), or `None` past
    /// the last bucket.
    pub fn bucket(&self, index: usize) -> Option<Bucket> {
        if index >= BUCKETS {
            return None;
        }
        let (ilog2, lo, hi) = if index == 0 {
            (None, 0u64, 1u128)
        } else {
            let k = (index - 1) as u32;
            (Some(k), 1u64 << k, 1u128 << (k + 1))
        };
        Some(Bucket {
            ilog2,
            lo,
            hi,
            count: self.counts[index],
            bytes: self.sums[index],
            count_pct: pct(
                u128::from(self.counts[index]),
                u128::from(self.total_count()),
            ),
            bytes_pct: pct(self.sums[index], self.total_bytes()),
        })
    }

    /// The bucket a value falls in.
    pub fn bucket_of(&self, v: u64) -> Bucket {
        let index = Self::index_of(v);
        Bucket {
            ilog2: v.checked_ilog2(),
            lo: if index == 0 { 0 } else { 1u64 << (index - 1) },
            hi: 1u128 << index,
            count: self.counts[index],
            bytes: self.sums[index],
            count_pct: pct(
                u128::from(self.counts[index]),
                u128::from(self.total_count()),
            ),
            bytes_pct: pct(self.sums[index], self.total_bytes()),
        }
    }

    /// The buckets from the lowest to the highest non-empty one, empty ones in between
    /// included (so gaps show); nothing when the histogram is empty.
    pub fn span(&self) -> Vec<Bucket> {
        let first = self.counts.iter().position(|&c| c != 0);
        let last = self.counts.iter().rposition(|&c| c != 0);
        match (first, last) {
            (Some(a), Some(b)) => (a..=b).filter_map(|i| self.bucket(i)).collect(),
            _ => Vec::new(),
        }
    }

    /// A table whose every row names the bucket index and its byte range:
    ///
    /// ```text
    /// ilog2  range          count  count%  bytes  bytes%
    ///     9  [512, 1024)        3  100.00   1536  100.00
    /// total                     3  100.00   1536  100.00
    /// ```
    ///
    /// `ilog2` is `floor(log2(v))` (`-` for the zero bucket); `fls(v)`, the convention of seed
    /// 004's table, is one more. Columns are separated by two spaces, numbers right-aligned.
    pub fn render_table(&self) -> String {
        let header = ["ilog2", "range", "count", "count%", "bytes", "bytes%"];
        let mut rows: Vec<[String; 6]> = self
            .span()
            .iter()
            .map(|b| {
                [
                    b.ilog2.map_or_else(|| "-".to_string(), |k| k.to_string()),
                    b.range_label(),
                    b.count.to_string(),
                    format!("{:.2}", b.count_pct),
                    b.bytes.to_string(),
                    format!("{:.2}", b.bytes_pct),
                ]
            })
            .collect();
        let total_pct = |nonzero: bool| if nonzero { "100.00" } else { "0.00" };
        rows.push([
            "total".to_string(),
            String::new(),
            self.total_count().to_string(),
            total_pct(self.total_count() != 0).to_string(),
            self.total_bytes().to_string(),
            total_pct(self.total_bytes() != 0).to_string(),
        ]);
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row.iter()) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = String::new();
        let header_cells = header.map(str::to_string);
        for row in std::iter::once(&header_cells).chain(rows.iter()) {
            let line = row
                .iter()
                .enumerate()
                .map(|(col, cell)| {
                    if col == 1 {
                        format!("{cell:<width$}", width = widths[col])
                    } else {
                        format!("{cell:>width$}", width = widths[col])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ");
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// bpftrace's `hist()` rendering: an `@name:` line, one row per bucket from the lowest to
    /// the highest non-empty one (`[512, 1K)   123 |@@@@@   |`, the bar scaled to the fullest
    /// bucket), then a blank line.
    pub fn render_bpftrace(&self, name: &str) -> String {
        let mut out = format!("@{name}:\n");
        let span = self.span();
        let max = span.iter().map(|b| b.count).max().unwrap_or(0);
        for b in &span {
            let len = if max == 0 {
                0
            } else {
                (u128::from(b.count) * u128::from(BAR_WIDTH) / u128::from(max)) as usize
            };
            let bar = format!(
                "{}{}",
                "@".repeat(len),
                " ".repeat(BAR_WIDTH as usize - len)
            );
            // Writing into a String cannot fail.
            let _ = writeln!(out, "{:<16}{:>8} |{}|", b.bpftrace_label(), b.count, bar);
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_floor_log2_buckets_with_zero_apart() {
        assert_eq!(Log2Hist::index_of(0), 0);
        assert_eq!(Log2Hist::index_of(1), 1);
        assert_eq!(Log2Hist::index_of(2), 2);
        assert_eq!(Log2Hist::index_of(3), 2);
        assert_eq!(Log2Hist::index_of(511), 9);
        assert_eq!(Log2Hist::index_of(512), 10);
        assert_eq!(Log2Hist::index_of(1023), 10);
        assert_eq!(Log2Hist::index_of(u64::MAX), 64);

        let mut h = Log2Hist::new();
        for v in [0, 4, 100, 408, 512, 1023] {
            h.record(v);
        }
        // A 4-byte head is ilog2 2 (seed 004 listed it under 3, its fls).
        assert_eq!(h.bucket_of(4).ilog2, Some(2));
        assert_eq!((h.bucket_of(4).lo, h.bucket_of(4).hi), (4, 8));
        // A 100-byte inode head is ilog2 6 (004: 7).
        assert_eq!(h.bucket_of(100).ilog2, Some(6));
        assert_eq!(h.bucket_of(100).range_label(), "[64, 128)");
        let b = h.bucket_of(600);
        assert_eq!((b.ilog2, b.count, b.bytes), (Some(9), 2, 512 + 1023));
        assert_eq!(h.bucket_of(0).ilog2, None);
        assert_eq!(h.bucket_of(0).count, 1);
        assert_eq!(h.bucket_of(0).range_label(), "[0, 1)");
    }

    #[test]
    fn every_bucket_range_is_contiguous_and_covers_u64() {
        let h = Log2Hist::new();
        let mut next: u128 = 0;
        for i in 0..BUCKETS {
            let b = h.bucket(i).expect("bucket in range");
            assert_eq!(
                u128::from(b.lo),
                next,
                "bucket {i} starts where {} ended",
                i.max(1) - 1
            );
            assert!(b.hi > u128::from(b.lo));
            // Both ends of the range map back to this bucket.
            assert_eq!(Log2Hist::index_of(b.lo), i);
            assert_eq!(Log2Hist::index_of((b.hi - 1) as u64), i);
            next = b.hi;
        }
        assert_eq!(next, 1u128 << 64);
        assert!(h.bucket(BUCKETS).is_none());
    }

    #[test]
    fn totals_and_percentages_follow_counts_and_bytes() {
        let mut h = Log2Hist::new();
        h.record_n(512, 3); // 1536 bytes in bucket 9
        h.record(4); // 4 bytes in bucket 2
        assert_eq!(h.total_count(), 4);
        assert_eq!(h.total_bytes(), 1540);
        let big = h.bucket_of(512);
        assert_eq!(big.count_pct, 75.0);
        assert!((big.bytes_pct - 1536.0 * 100.0 / 1540.0).abs() < 1e-9);
        let sum: f64 = h.span().iter().map(|b| b.bytes_pct).sum();
        assert!((sum - 100.0).abs() < 1e-9);
        // An empty histogram reports 0 %, not NaN.
        let e = Log2Hist::new();
        assert!(e.is_empty());
        assert_eq!(e.bucket_of(7).count_pct, 0.0);
        assert_eq!(e.bucket_of(7).bytes_pct, 0.0);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let values_a = [0u64, 1, 7, 512, 4096, u64::MAX];
        let values_b = [3u64, 512, 513, 65536];
        let mut a = Log2Hist::new();
        let mut b = Log2Hist::new();
        let mut all = Log2Hist::new();
        values_a.iter().for_each(|&v| a.record(v));
        values_b.iter().for_each(|&v| b.record(v));
        values_a
            .iter()
            .chain(&values_b)
            .for_each(|&v| all.record(v));
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(a.total_count(), 10);
        assert_eq!(
            a.total_bytes(),
            values_a
                .iter()
                .chain(&values_b)
                .map(|&v| u128::from(v))
                .sum::<u128>()
        );
    }

    #[test]
    fn sums_do_not_overflow_u64() {
        let mut h = Log2Hist::new();
        h.record(u64::MAX);
        h.record(u64::MAX);
        assert_eq!(h.total_bytes(), 2 * u128::from(u64::MAX));
    }

    #[test]
    fn span_keeps_interior_empty_buckets_and_trims_the_ends() {
        let mut h = Log2Hist::new();
        h.record(4);
        h.record(32);
        let span: Vec<_> = h.span().iter().map(|b| (b.ilog2, b.count)).collect();
        assert_eq!(
            span,
            vec![(Some(2), 1), (Some(3), 0), (Some(4), 0), (Some(5), 1)]
        );
        assert!(Log2Hist::new().span().is_empty());
    }

    #[test]
    fn table_rows_name_index_and_byte_range() {
        let mut h = Log2Hist::new();
        h.record_n(512, 3);
        h.record(4);
        h.record(0);
        let expected = "\
ilog2  range        count  count%  bytes  bytes%
    -  [0, 1)           1   20.00      0    0.00
    0  [1, 2)           0    0.00      0    0.00
    1  [2, 4)           0    0.00      0    0.00
    2  [4, 8)           1   20.00      4    0.26
    3  [8, 16)          0    0.00      0    0.00
    4  [16, 32)         0    0.00      0    0.00
    5  [32, 64)         0    0.00      0    0.00
    6  [64, 128)        0    0.00      0    0.00
    7  [128, 256)       0    0.00      0    0.00
    8  [256, 512)       0    0.00      0    0.00
    9  [512, 1024)      3   60.00   1536   99.74
total                   5  100.00   1540  100.00
";
        assert_eq!(h.render_table(), expected);
    }

    #[test]
    fn empty_table_has_header_and_zero_total() {
        let expected = "\
ilog2  range  count  count%  bytes  bytes%
total             0    0.00      0    0.00
";
        assert_eq!(Log2Hist::new().render_table(), expected);
    }

    #[test]
    fn bpftrace_rendering_matches_hist_layout() {
        let mut h = Log2Hist::new();
        h.record_n(600, 4);
        h.record_n(1500, 2);
        h.record(1);
        h.record_n(3 << 20, 1);
        let text = h.render_bpftrace("crc32c.len");
        let bar = |n: usize| format!("|{}{}|", "@".repeat(n), " ".repeat(52 - n));
        let mut expected = String::from("@crc32c.len:\n");
        let rows: [(&str, u64, usize); 22] = [
            ("[1]", 1, 13),
            ("[2, 4)", 0, 0),
            ("[4, 8)", 0, 0),
            ("[8, 16)", 0, 0),
            ("[16, 32)", 0, 0),
            ("[32, 64)", 0, 0),
            ("[64, 128)", 0, 0),
            ("[128, 256)", 0, 0),
            ("[256, 512)", 0, 0),
            ("[512, 1K)", 4, 52),
            ("[1K, 2K)", 2, 26),
            ("[2K, 4K)", 0, 0),
            ("[4K, 8K)", 0, 0),
            ("[8K, 16K)", 0, 0),
            ("[16K, 32K)", 0, 0),
            ("[32K, 64K)", 0, 0),
            ("[64K, 128K)", 0, 0),
            ("[128K, 256K)", 0, 0),
            ("[256K, 512K)", 0, 0),
            ("[512K, 1M)", 0, 0),
            ("[1M, 2M)", 0, 0),
            ("[2M, 4M)", 1, 13),
        ];
        for (label, count, len) in rows {
            expected.push_str(&format!("{label:<16}{count:>8} {}\n", bar(len)));
        }
        expected.push('\n');
        assert_eq!(text, expected);
        // One literal row, so the layout itself is pinned too.
        assert!(text.contains(
            "[512, 1K)              4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
        ));
    }

    #[test]
    fn bpftrace_labels_zero_one_and_top_bucket() {
        let mut h = Log2Hist::new();
        h.record(0);
        assert_eq!(h.bucket_of(0).bpftrace_label(), "[0]");
        assert_eq!(h.bucket_of(1).bpftrace_label(), "[1]");
        assert_eq!(h.bucket_of(5).bpftrace_label(), "[4, 8)");
        assert_eq!(h.bucket_of(u64::MAX).bpftrace_label(), "[8E, 16E)");
        assert_eq!(
            h.bucket_of(u64::MAX).range_label(),
            format!("[{}, {})", 1u64 << 63, 1u128 << 64)
        );
        assert_eq!(Log2Hist::new().render_bpftrace("empty"), "@empty:\n\n");
    }
}
