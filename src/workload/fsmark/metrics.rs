//! fs_mark's arithmetic: per-thread figures, their aggregation into a table row, and the
//! end-of-run summary, each with fs_mark 3.3's rounding and quirks.
//!
//! - **Min with 0 as unset.** A sample replaces the minimum when the minimum is 0 or the sample
//!   is smaller ([`fold_min`]). A 0 µs sample therefore reads as "no minimum yet" and the next
//!   sample overwrites it; the same rule folds thread minimums into the row.
//! - **Per-thread rates rounded to 0.1, then summed.** fs_mark children print their rate with
//!   `%.1f` and the parent adds the printed values; the row's Files/sec is that sum, not total
//!   files over wall time. We keep rates as integer tenths ([`rate_tenths`]), so the sum is
//!   exact (fs_mark adds C floats, which can differ in the last digit for large sums).
//! - **Averages.** Per thread, creat/fsync/close/unlink are sums over files divided by the file
//!   count; write is the average of per-file write averages; sync is the single sync() time.
//!   Across threads each average is the integer mean of the thread averages. SYNC min and max
//!   are always 0 (fs_mark's children never report them).
//! - **App overhead** is the measured loop time minus the time in timed calls, summed over
//!   threads.
//! - **Summary quirk.** Each iteration's Files/sec is stored truncated to an integer; the
//!   average is the mean of those integers; the list is sorted in *descending* order and
//!   p50/p90/p99 are elements `n/2`, `9n/10`, `99n/100`, so "p90" sits near the slow end.

use hdrhistogram::Histogram;

/// Fold a sample into a minimum under fs_mark's rule: 0 means "unset".
pub fn fold_min(current: u64, sample: u64) -> u64 {
    if current == 0 || sample < current {
        sample
    } else {
        current
    }
}

/// Files per second for `files` files in `loop_us` microseconds, in tenths, rounded the way
/// `%.1f` rounds. A loop measured as 0 µs counts as 1 µs (fs_mark would print `inf`).
pub fn rate_tenths(files: u64, loop_us: u64) -> u64 {
    let rate = files as f64 * 1e6 / loop_us.max(1) as f64;
    (rate * 10.0).round() as u64
}

/// Sum, minimum (0 = unset) and maximum of one kind of timed call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// Sum of all samples (µs).
    pub sum: u64,
    /// Smallest sample under the 0-is-unset rule.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
}

impl Timing {
    /// Add one sample.
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.sum += us;
        self.max = self.max.max(us);
        self.min = fold_min(self.min, us);
    }

    /// Add a sample to the sum only (fs_mark's `-S 2` first-file fsync).
    pub fn record_sum_only(&mut self, us: u64) {
        self.sum += us;
    }
}

/// Minimum / average / maximum, one column triple of the verbose table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinAvgMax {
    /// Minimum (µs).
    pub min: u64,
    /// Average (µs).
    pub avg: u64,
    /// Maximum (µs).
    pub max: u64,
}

/// What one thread reports for one iteration (fs_mark's 19-field child log line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// Files this thread created.
    pub files: u64,
    /// Its files/sec, in tenths.
    pub rate_tenths: u64,
    /// Loop time not spent in timed calls (µs).
    pub app_overhead_us: u64,
    /// creat = open(O_CREAT|O_RDWR|O_TRUNC).
    pub creat: MinAvgMax,
    /// write().
    pub write: MinAvgMax,
    /// fsync(), including post-loop reopen/fsync/close triples.
    pub fsync: MinAvgMax,
    /// The sync() (or -S 7 syncfs()) time, not divided.
    pub sync_us: u64,
    /// close().
    pub close: MinAvgMax,
    /// unlink().
    pub unlink: MinAvgMax,
}

/// Raw sums a worker collects during one iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTimings {
    /// Files created.
    pub files: u64,
    /// From just before the first name to just after the last post-loop sync phase (µs).
    pub loop_us: u64,
    /// Timed creates.
    pub creat: Timing,
    /// Timed writes (every call); `sum` is the total time in write().
    pub write: Timing,
    /// Sum over files of each file's integer average write time.
    pub write_avg_sum: u64,
    /// Timed fsyncs and reopen triples.
    pub fsync: Timing,
    /// Time in sync()/syncfs() (µs).
    pub sync_us: u64,
    /// Timed closes.
    pub close: Timing,
    /// Timed unlinks.
    pub unlink: Timing,
}

impl ThreadTimings {
    /// The thread's report, as fs_mark's child computes it.
    pub fn stats(&self) -> ThreadStats {
        let n = self.files.max(1);
        let avg = |t: &Timing, sum: u64| MinAvgMax {
            min: t.min,
            avg: sum / n,
            max: t.max,
        };
        let timed =
            self.creat.sum + self.write.sum + self.fsync.sum + self.sync_us + self.close.sum;
        ThreadStats {
            files: self.files,
            rate_tenths: rate_tenths(self.files, self.loop_us),
            app_overhead_us: self.loop_us.saturating_sub(timed),
            creat: avg(&self.creat, self.creat.sum),
            write: avg(&self.write, self.write_avg_sum),
            fsync: avg(&self.fsync, self.fsync.sum),
            sync_us: self.sync_us,
            close: avg(&self.close, self.close.sum),
            unlink: avg(&self.unlink, self.unlink.sum),
        }
    }
}

/// One table row's figures: the threads of one iteration aggregated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Files created in this iteration, all threads.
    pub files: u64,
    /// Sum of the threads' rates, in tenths.
    pub rate_tenths: u64,
    /// Sum of the threads' app overheads (µs).
    pub app_overhead_us: u64,
    /// CREAT column.
    pub creat: MinAvgMax,
    /// WRITE column.
    pub write: MinAvgMax,
    /// FSYNC column.
    pub fsync: MinAvgMax,
    /// SYNC column (min and max always 0).
    pub sync: MinAvgMax,
    /// CLOSE column.
    pub close: MinAvgMax,
    /// UNLINK column.
    pub unlink: MinAvgMax,
}

impl LoopStats {
    /// Aggregate thread reports in slot order, as fs_mark's parent does.
    pub fn aggregate(threads: &[ThreadStats]) -> LoopStats {
        let mut row = LoopStats::default();
        let fold = |acc: &mut MinAvgMax, t: &MinAvgMax| {
            acc.avg += t.avg;
            acc.min = fold_min(acc.min, t.min);
            acc.max = acc.max.max(t.max);
        };
        for t in threads {
            row.files += t.files;
            row.rate_tenths += t.rate_tenths;
            row.app_overhead_us += t.app_overhead_us;
            fold(&mut row.creat, &t.creat);
            fold(&mut row.write, &t.write);
            fold(&mut row.fsync, &t.fsync);
            row.sync.avg += t.sync_us;
            fold(&mut row.close, &t.close);
            fold(&mut row.unlink, &t.unlink);
        }
        let n = threads.len().max(1) as u64;
        for col in [
            &mut row.creat,
            &mut row.write,
            &mut row.fsync,
            &mut row.sync,
            &mut row.close,
            &mut row.unlink,
        ] {
            col.avg /= n;
        }
        row
    }

    /// Files/sec truncated to an integer, as the summary stores it.
    pub fn rate_truncated(&self) -> u64 {
        self.rate_tenths / 10
    }
}

/// The four summary lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean of the truncated per-iteration rates.
    pub average: f64,
    /// Element `n/2` of the descending list.
    pub p50: u64,
    /// Element `9n/10` of the descending list.
    pub p90: u64,
    /// Element `99n/100` of the descending list.
    pub p99: u64,
}

impl Summary {
    /// The summary of per-iteration truncated rates; `None` for no iterations.
    pub fn from_rates(truncated_rates: &[u64]) -> Option<Summary> {
        let n = truncated_rates.len();
        if n == 0 {
            return None;
        }
        let mut sorted = truncated_rates.to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let sum: u64 = sorted.iter().sum();
        Some(Summary {
            average: sum as f64 / n as f64,
            p50: sorted[n / 2],
            p90: sorted[(n * 9) / 10],
            p99: sorted[(n * 99) / 100],
        })
    }
}

/// The kinds of timed call, one per table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyscallKind {
    /// open(O_CREAT|O_RDWR|O_TRUNC).
    Creat,
    /// write().
    Write,
    /// fsync() in the loop, or a post-loop reopen+fsync+close triple.
    Fsync,
    /// sync() or syncfs().
    Sync,
    /// close().
    Close,
    /// unlink().
    Unlink,
}

impl SyscallKind {
    /// All kinds, in table column order.
    pub const ALL: [SyscallKind; 6] = [
        SyscallKind::Creat,
        SyscallKind::Write,
        SyscallKind::Fsync,
        SyscallKind::Sync,
        SyscallKind::Close,
        SyscallKind::Unlink,
    ];

    /// Lower-case name, as used in JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            SyscallKind::Creat => "creat",
            SyscallKind::Write => "write",
            SyscallKind::Fsync => "fsync",
            SyscallKind::Sync => "sync",
            SyscallKind::Close => "close",
            SyscallKind::Unlink => "unlink",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One latency histogram (µs) per [`SyscallKind`].
#[derive(Debug, Clone)]
pub struct LatencySet {
    hists: [Histogram<u64>; 6],
}

impl Default for LatencySet {
    fn default() -> Self {
        LatencySet::new()
    }
}

impl LatencySet {
    /// Empty histograms, auto-resizing, 3 significant figures.
    pub fn new() -> LatencySet {
        LatencySet {
            hists: std::array::from_fn(|_| {
                // 3 significant figures is always a valid precision.
                Histogram::new(3).unwrap_or_else(|_| unreachable!("sigfig 3 is valid"))
            }),
        }
    }

    /// Record one sample (the histogram grows to fit it).
    #[inline]
    pub fn record(&mut self, kind: SyscallKind, us: u64) {
        let h = &mut self.hists[kind.index()];
        if h.record(us).is_err() {
            // Growing failed (a value beyond what usize can index): clamp instead of losing it.
            h.saturating_record(us);
        }
    }

    /// The histogram of one kind.
    pub fn get(&self, kind: SyscallKind) -> &Histogram<u64> {
        &self.hists[kind.index()]
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &LatencySet) {
        for (mine, theirs) in self.hists.iter_mut().zip(&other.hists) {
            // Auto-resizing histograms accept any other histogram's range.
            let _ = mine.add(theirs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_treats_zero_as_unset() {
        let mut t = Timing::default();
        for s in [5, 0, 7, 3] {
            t.record(s);
        }
        // 5 -> 0 (smaller) -> 7 (0 counts as unset) -> 3.
        assert_eq!(t.min, 3);
        let mut t = Timing::default();
        for s in [4, 0] {
            t.record(s);
        }
        assert_eq!(t.min, 0, "a trailing 0 sample stays");
        assert_eq!(fold_min(0, 9), 9);
        assert_eq!(fold_min(2, 9), 2);
    }

    #[test]
    fn per_thread_rates_round_to_tenths_before_summing() {
        // 10 files in 3 s = 3.333.. -> 3.3 each; three threads sum to 9.9, not 10.0.
        let t = ThreadStats {
            rate_tenths: rate_tenths(10, 3_000_000),
            ..ThreadStats::default()
        };
        assert_eq!(t.rate_tenths, 33);
        let row = LoopStats::aggregate(&[t, t, t]);
        assert_eq!(row.rate_tenths, 99);
        assert_eq!(rate_tenths(2, 1_200_000), 17, "1.666.. rounds up");
        assert_eq!(rate_tenths(5, 0), 50_000_000, "0 µs counts as 1 µs");
    }

    #[test]
    fn thread_stats_split_loop_time_into_calls_and_overhead() {
        let mut t = ThreadTimings {
            files: 4,
            loop_us: 1_000,
            ..Default::default()
        };
        for _ in 0..4 {
            t.creat.record(10);
            t.close.record(20);
        }
        t.write.record(30);
        t.write_avg_sum = 30;
        t.fsync.record_sum_only(100);
        t.sync_us = 200;
        let s = t.stats();
        assert_eq!(s.app_overhead_us, 1_000 - 40 - 80 - 30 - 100 - 200);
        assert_eq!(
            s.creat,
            MinAvgMax {
                min: 10,
                avg: 10,
                max: 10
            }
        );
        assert_eq!(s.write.avg, 7, "per-file write averages over 4 files");
        assert_eq!(
            s.fsync,
            MinAvgMax {
                min: 0,
                avg: 25,
                max: 0
            }
        );
        assert_eq!(s.rate_tenths, 40_000);
    }

    #[test]
    fn aggregation_means_averages_and_folds_min_max_and_sync() {
        let a = ThreadStats {
            files: 10,
            app_overhead_us: 5,
            creat: MinAvgMax {
                min: 0,
                avg: 10,
                max: 30,
            },
            sync_us: 100,
            ..ThreadStats::default()
        };
        let b = ThreadStats {
            files: 10,
            app_overhead_us: 7,
            creat: MinAvgMax {
                min: 4,
                avg: 15,
                max: 20,
            },
            sync_us: 51,
            ..ThreadStats::default()
        };
        let row = LoopStats::aggregate(&[a, b]);
        assert_eq!(row.files, 20);
        assert_eq!(row.app_overhead_us, 12);
        assert_eq!(
            row.creat,
            MinAvgMax {
                min: 4,
                avg: 12,
                max: 30
            }
        );
        assert_eq!(
            row.sync,
            MinAvgMax {
                min: 0,
                avg: 75,
                max: 0
            }
        );
    }

    #[test]
    fn summary_percentiles_index_a_descending_truncated_list() {
        // Ten iterations 100..=1000: descending [1000, 900, ..., 100].
        let rates: Vec<u64> = (1..=10).map(|i| i * 100).collect();
        let s = Summary::from_rates(&rates).unwrap();
        assert_eq!(s.p50, 500, "element 5 of the descending list");
        assert_eq!(s.p90, 100, "element 9: the slow end");
        assert_eq!(s.p99, 100);
        assert_eq!(s.average, 550.0);
        let s = Summary::from_rates(&[8159, 8356]).unwrap();
        assert_eq!((s.p50, s.p90, s.p99), (8159, 8159, 8159));
        assert_eq!(s.average, 8257.5);
        assert!(Summary::from_rates(&[]).is_none());
    }

    #[test]
    fn truncated_rate_drops_the_tenths() {
        let row = LoopStats {
            rate_tenths: 83_566,
            ..LoopStats::default()
        };
        assert_eq!(row.rate_truncated(), 8_356);
    }

    #[test]
    fn latency_sets_merge_per_kind() {
        let mut a = LatencySet::new();
        let mut b = LatencySet::new();
        a.record(SyscallKind::Fsync, 100);
        b.record(SyscallKind::Fsync, 3_000_000);
        b.record(SyscallKind::Creat, 7);
        a.merge(&b);
        assert_eq!(a.get(SyscallKind::Fsync).len(), 2);
        assert_eq!(a.get(SyscallKind::Creat).max(), 7);
        let max = a.get(SyscallKind::Fsync).max();
        assert!(
            (2_999_000..=3_001_000).contains(&max),
            "grows to fit: {max}"
        );
        assert_eq!(a.get(SyscallKind::Unlink).len(), 0);
    }
}
