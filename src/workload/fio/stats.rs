//! What a job clone measures, and how fio merges it into reports (`stat.c`).
//!
//! - [`IoStat`] is fio's `io_stat`: min, max, count and a running mean and sum of squared
//!   deviations (Welford's update, exactly as `add_stat_sample` does it), merged with the
//!   parallel-variance formula for group reports (`__sum_stat`) or summed plainly for
//!   bandwidth and IOPS samples.
//! - [`LatHist`] keeps every latency in an `hdrhistogram` with two significant digits, whose
//!   buckets nest inside fio's log-linear buckets (64 per power of two, exact below 128 ns), so
//!   fio's percentiles and json+ bins are recovered exactly: the reported value is the
//!   midpoint of the fio bucket where the cumulative count first reaches p% of the samples.
//! - [`ThreadStats`] is one report (a clone, or a whole group with `group_reporting`);
//!   [`GroupStats`] is one "Run status group" line set. [`build_reports`] reproduces fio's
//!   `__show_run_stats`: which clones merge into which report, and the group figures.

use hdrhistogram::Histogram;

use super::job::Ddir;
use super::job::UnitBase;
use super::number::KbBase;

/// fio's `FIO_IO_U_PLAT_BITS`: 2^6 buckets per power of two.
const PLAT_BITS: u32 = 6;
/// Buckets per group.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_NR`.
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's default percentile list.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The fio bucket of a latency (`plat_val_to_idx`).
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (u64::from(error_bits) + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value fio reports for a bucket: its midpoint (`plat_idx_to_val`).
pub fn plat_idx_to_val(idx: usize) -> u64 {
    if (idx as u64) < (PLAT_VAL << 1) {
        return idx as u64;
    }
    let error_bits = (idx as u64 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx as u64 % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// fio's `io_stat`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoStat {
    /// Smallest sample (u64::MAX when empty, as fio's ULONG_MAX).
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Number of samples.
    pub samples: u64,
    /// Running mean.
    pub mean: f64,
    /// Running sum of squared deviations.
    pub s: f64,
}

impl Default for IoStat {
    fn default() -> Self {
        IoStat {
            min: u64::MAX,
            max: 0,
            samples: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

/// min, max, mean and sample standard deviation of an [`IoStat`] (fio's `calc_lat`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Minimum.
    pub min: u64,
    /// Maximum.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub dev: f64,
}

impl IoStat {
    /// Add a sample (`add_stat_sample`).
    pub fn add(&mut self, data: u64) {
        let val = data as f64;
        if data > self.max {
            self.max = data;
        }
        if data < self.min {
            self.min = data;
        }
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// Merge latency samples of another clone (`sum_stat` without pure_sum).
    pub fn merge(&mut self, src: &IoStat) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        self.min = self.min.min(src.min);
        self.max = self.max.max(src.max);
        let (mean, s) = if first {
            (src.mean, src.s)
        } else {
            let (ns, nd) = (src.samples as f64, self.samples as f64);
            let delta = src.mean - self.mean;
            (
                (src.mean * ns + self.mean * nd) / (nd + ns),
                src.s + self.s + delta * delta * (nd * ns) / (nd + ns),
            )
        };
        self.samples += src.samples;
        self.mean = mean;
        self.s = s;
    }

    /// Add bandwidth/IOPS samples of another clone: fio sums them (`sum_stat` pure_sum).
    pub fn sum(&mut self, src: &IoStat) {
        if src.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *src;
            return;
        }
        self.min += src.min;
        self.max += src.max;
        self.samples += src.samples;
        self.mean += src.mean;
        self.s += src.s;
    }

    /// The summary, or `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        Some(Summary {
            min: self.min,
            max: self.max,
            mean: self.mean,
            dev: if n > 1.0 {
                (self.s / (n - 1.0)).sqrt()
            } else {
                0.0
            },
        })
    }
}

/// Latencies in nanoseconds (see the module docs).
#[derive(Debug, Clone)]
pub struct LatHist {
    hist: Histogram<u64>,
}

/// The largest latency kept apart (2^45 ns, about 9.8 hours); longer ones count as this.
const HIST_MAX_NS: u64 = 1 << 45;

impl Default for LatHist {
    fn default() -> Self {
        LatHist::new()
    }
}

impl LatHist {
    /// An empty histogram.
    pub fn new() -> LatHist {
        // Two significant digits: buckets no wider than 1/128 of their value, half of fio's
        // width, so every hdr bucket lies inside one fio bucket.
        let hist = Histogram::new_with_max(HIST_MAX_NS, 2)
            .unwrap_or_else(|_| unreachable!("constant bounds are valid"));
        LatHist { hist }
    }

    /// Record one latency.
    pub fn record(&mut self, ns: u64) {
        // Saturates at the bound instead of failing: a latency beyond ~10 hours is reported
        // in the last bucket, as fio's last bucket collects everything above its range.
        self.hist.saturating_record(ns.min(HIST_MAX_NS));
    }

    /// Add another histogram's samples.
    pub fn merge(&mut self, other: &LatHist) {
        // Same bounds and precision on both sides, so the add cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Non-empty fio buckets as (bucket index, count), in order.
    pub fn fio_buckets(&self) -> Vec<(usize, u64)> {
        let mut out: Vec<(usize, u64)> = Vec::new();
        for v in self.hist.iter_recorded() {
            let low = self.hist.lowest_equivalent(v.value_iterated_to());
            let idx = plat_val_to_idx(low);
            let count = v.count_at_value();
            match out.last_mut() {
                Some((i, c)) if *i == idx => *c += count,
                _ => out.push((idx, count)),
            }
        }
        out
    }

    /// fio's percentiles (`calc_clat_percentiles`) of `list` (sorted ascending), over `n`
    /// samples: for each p, the value of the first bucket whose cumulative count reaches p%.
    pub fn percentiles(&self, list: &[f64], n: u64) -> Vec<u64> {
        let buckets = self.fio_buckets();
        let mut out = Vec::with_capacity(list.len());
        let mut sum: u64 = 0;
        let mut j = 0;
        for (idx, count) in buckets {
            sum += count;
            while j < list.len() && sum as f64 >= list[j] / 100.0 * n as f64 {
                out.push(plat_idx_to_val(idx));
                j += 1;
            }
            if j == list.len() {
                break;
            }
        }
        out
    }
}

/// Per-direction figures of a report.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Bytes transferred.
    pub io_bytes: u64,
    /// I/Os issued.
    pub total_ios: u64,
    /// I/Os that transferred less than asked.
    pub short_ios: u64,
    /// I/Os dropped.
    pub drop_ios: u64,
    /// Run time in ms (fio rounds each pass up to a whole ms).
    pub runtime_ms: u64,
    /// Submission latency (async engines).
    pub slat: IoStat,
    /// Completion latency.
    pub clat: IoStat,
    /// Total latency.
    pub lat: IoStat,
    /// Bandwidth samples in KiB/s.
    pub bw: IoStat,
    /// IOPS samples.
    pub iops: IoStat,
    /// Completion latency histogram.
    pub clat_hist: LatHist,
}

/// One report: a clone's figures, or a group's with `group_reporting`.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    /// Job name.
    pub name: String,
    /// `description=`.
    pub description: Option<String>,
    /// Reporting group.
    pub groupid: u32,
    /// The "pid" fio prints (fiolike: the process id, per clone thread the same).
    pub pid: u32,
    /// errno of the first error, 0 if none.
    pub error: i32,
    /// What failed, for `err=%2d (%s)`.
    pub verror: String,
    /// Clones merged into this report.
    pub members: u32,
    /// read, write, trim.
    pub dir: [DirStats; 3],
    /// fsync/fdatasync latencies.
    pub sync: IoStat,
    /// Their histogram.
    pub sync_hist: LatHist,
    /// fsyncs issued (fdatasyncs are not counted, as in fio).
    pub sync_total: u64,
    /// User CPU time, ms.
    pub usr_ms: u64,
    /// System CPU time, ms.
    pub sys_ms: u64,
    /// Context switches.
    pub ctx: u64,
    /// Major faults.
    pub majf: u64,
    /// Minor faults.
    pub minf: u64,
    /// I/O depth distribution (1, 2, 4, 8, 16, 32, >=64).
    pub io_u_map: [u64; 7],
    /// Submit batch sizes (0, 4, 8, 16, 32, 64, >=64).
    pub io_u_submit: [u64; 7],
    /// Completion batch sizes.
    pub io_u_complete: [u64; 7],
    /// Submit calls.
    pub total_submit: u64,
    /// Completion calls.
    pub total_complete: u64,
    /// clat distribution below 1 µs (2, 4, 10, ... 1000 ns).
    pub lat_n: [u64; 10],
    /// clat distribution in µs.
    pub lat_u: [u64; 10],
    /// clat distribution in ms (... 2000, >=2000).
    pub lat_m: [u64; 12],
    /// Wall time of the job, ms.
    pub total_run_time_ms: u64,
    /// Output base.
    pub kb_base: KbBase,
    /// Bits or bytes.
    pub unit_base: UnitBase,
    /// Significant figures of num2str.
    pub sig_figs: usize,
    /// `iodepth` (fio's latency_depth).
    pub latency_depth: u32,
    /// The job's own options (JSON "job options").
    pub job_options: Vec<(String, Option<String>)>,
}

impl ThreadStats {
    /// An empty report for a job.
    pub fn new(name: &str, groupid: u32) -> ThreadStats {
        ThreadStats {
            name: name.to_string(),
            description: None,
            groupid,
            pid: std::process::id(),
            error: 0,
            verror: String::new(),
            members: 0,
            dir: Default::default(),
            sync: IoStat::default(),
            sync_hist: LatHist::new(),
            sync_total: 0,
            usr_ms: 0,
            sys_ms: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            io_u_map: [0; 7],
            io_u_submit: [0; 7],
            io_u_complete: [0; 7],
            total_submit: 0,
            total_complete: 0,
            lat_n: [0; 10],
            lat_u: [0; 10],
            lat_m: [0; 12],
            total_run_time_ms: 0,
            kb_base: KbBase::Binary,
            unit_base: UnitBase::Bytes,
            sig_figs: 4,
            latency_depth: 1,
            job_options: Vec::new(),
        }
    }

    /// The direction's figures.
    pub fn d(&self, d: Ddir) -> &DirStats {
        &self.dir[d.index()]
    }

    /// Count a completion latency in the distribution buckets (`io_u_mark_latency`).
    pub fn mark_latency(&mut self, ns: u64) {
        fn bucket(v: u64) -> usize {
            match v {
                0..=1 => 0,
                2..=3 => 1,
                4..=9 => 2,
                10..=19 => 3,
                20..=49 => 4,
                50..=99 => 5,
                100..=249 => 6,
                250..=499 => 7,
                500..=749 => 8,
                750..=999 => 9,
                1000..=1999 => 10,
                _ => 11,
            }
        }
        if ns < 1000 {
            self.lat_n[bucket(ns)] += 1;
        } else if ns < 1_000_000 {
            self.lat_u[bucket(ns / 1000)] += 1;
        } else {
            self.lat_m[bucket(ns / 1_000_000)] += 1;
        }
    }

    /// Add another clone's figures (`sum_thread_stats`).
    pub fn sum(&mut self, src: &ThreadStats) {
        for (d, s) in self.dir.iter_mut().zip(&src.dir) {
            d.clat.merge(&s.clat);
            d.slat.merge(&s.slat);
            d.lat.merge(&s.lat);
            d.bw.sum(&s.bw);
            d.iops.sum(&s.iops);
            d.io_bytes += s.io_bytes;
            d.runtime_ms = d.runtime_ms.max(s.runtime_ms);
            d.total_ios += s.total_ios;
            d.short_ios += s.short_ios;
            d.drop_ios += s.drop_ios;
            d.clat_hist.merge(&s.clat_hist);
        }
        self.sync.merge(&src.sync);
        self.sync_hist.merge(&src.sync_hist);
        self.sync_total += src.sync_total;
        self.usr_ms += src.usr_ms;
        self.sys_ms += src.sys_ms;
        self.ctx += src.ctx;
        self.majf += src.majf;
        self.minf += src.minf;
        for k in 0..7 {
            self.io_u_map[k] += src.io_u_map[k];
            self.io_u_submit[k] += src.io_u_submit[k];
            self.io_u_complete[k] += src.io_u_complete[k];
        }
        for k in 0..10 {
            self.lat_n[k] += src.lat_n[k];
            self.lat_u[k] += src.lat_u[k];
        }
        for k in 0..12 {
            self.lat_m[k] += src.lat_m[k];
        }
        self.total_run_time_ms += src.total_run_time_ms;
        self.total_submit += src.total_submit;
        self.total_complete += src.total_complete;
    }

    /// Reads plus writes plus trims issued (fio's `ddir_rw_sum(total_io_u)`).
    pub fn total_rw_ios(&self) -> u64 {
        self.dir.iter().map(|d| d.total_ios).sum()
    }

    /// Bytes over all directions.
    pub fn total_rw_bytes(&self) -> u64 {
        self.dir.iter().map(|d| d.io_bytes).sum()
    }
}

/// The figures of one reporting group ("Run status group").
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStats {
    /// The group.
    pub groupid: u32,
    /// Output base.
    pub kb_base: KbBase,
    /// Bits or bytes.
    pub unit_base: UnitBase,
    /// Significant figures.
    pub sig_figs: usize,
    /// Shortest report runtime per direction, ms.
    pub min_run: [u64; 3],
    /// Longest report runtime per direction, ms.
    pub max_run: [u64; 3],
    /// Lowest report bandwidth per direction, B/s.
    pub min_bw: [u64; 3],
    /// Highest report bandwidth per direction, B/s.
    pub max_bw: [u64; 3],
    /// Bytes per direction.
    pub io_bytes: [u64; 3],
    /// Aggregate bandwidth per direction, B/s (bytes * 1000 / max_run).
    pub agg: [u64; 3],
}

impl GroupStats {
    fn new(groupid: u32) -> GroupStats {
        GroupStats {
            groupid,
            kb_base: KbBase::Binary,
            unit_base: UnitBase::Bytes,
            sig_figs: 4,
            min_run: [u64::MAX; 3],
            max_run: [0; 3],
            min_bw: [u64::MAX; 3],
            max_bw: [0; 3],
            io_bytes: [0; 3],
            agg: [0; 3],
        }
    }
}

/// One block device's counters over the run, as fio's "Disk stats" reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskUtil {
    /// Device name (`vda`, `nvme0n1`).
    pub name: String,
    /// Completed I/Os, read and write.
    pub ios: [u64; 2],
    /// Merged I/Os, read and write.
    pub merges: [u64; 2],
    /// Time spent in I/O, read and write, ms.
    pub ticks: [u64; 2],
    /// Weighted time in queue, ms.
    pub in_queue: u64,
    /// Time the device had I/O in flight, ms.
    pub io_ticks: u64,
    /// Wall time the counters cover, ms.
    pub msec: u64,
}

impl DiskUtil {
    /// Utilisation in percent (`io_ticks / wall time`, at most 100).
    pub fn util(&self) -> f64 {
        if self.msec == 0 {
            return 0.0;
        }
        (100.0 * self.io_ticks as f64 / self.msec as f64).min(100.0)
    }
}

/// Which per-job log a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// Bandwidth (KiB/s averaged over `log_avg_msec`, or per I/O).
    Bw,
    /// IOPS.
    Iops,
    /// Total latency, ns.
    Lat,
    /// Submission latency, ns.
    Slat,
    /// Completion latency, ns.
    Clat,
}

impl LogKind {
    /// The word in the file name (`job_bw.1.log`).
    pub fn name(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Lat => "lat",
            LogKind::Slat => "slat",
            LogKind::Clat => "clat",
        }
    }
}

/// One log line: time since the job started (ms), value, direction, block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSample {
    /// Milliseconds since the job's start.
    pub time_ms: u64,
    /// The value (KiB/s, IOPS or ns).
    pub value: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Block size of the I/O (0 for averaged samples of mixed sizes).
    pub bs: u64,
}

/// A clone's log of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLog {
    /// Which log.
    pub kind: LogKind,
    /// The file name prefix (the job name unless the option named one).
    pub prefix: String,
    /// fio's thread number of the clone (1-based).
    pub thread_number: u32,
    /// `per_job_logs`: the thread number goes in the file name.
    pub per_job: bool,
    /// The samples, in time order.
    pub samples: Vec<LogSample>,
}

/// One clone's figures with what fio needs to place it in a report.
#[derive(Debug, Clone)]
pub struct CloneStats {
    /// The figures.
    pub stats: ThreadStats,
    /// `group_reporting` of its job.
    pub group_reporting: bool,
}

/// fio's `__show_run_stats` bookkeeping: merge clones into reports (one per clone, or one per
/// group when `group_reporting`), then compute each group's figures.
pub fn build_reports(clones: &[CloneStats], ngroups: u32) -> (Vec<ThreadStats>, Vec<GroupStats>) {
    let mut reports: Vec<ThreadStats> = Vec::new();
    let mut last_group: Option<u32> = None;
    let mut open = false;
    for c in clones {
        let g = c.stats.groupid;
        let starts_new = !open || !c.group_reporting || last_group != Some(g);
        if starts_new {
            let mut ts = ThreadStats::new(&c.stats.name, g);
            ts.description = c.stats.description.clone();
            ts.pid = c.stats.pid;
            ts.kb_base = c.stats.kb_base;
            ts.unit_base = c.stats.unit_base;
            ts.sig_figs = c.stats.sig_figs;
            ts.job_options = c.stats.job_options.clone();
            reports.push(ts);
        }
        open = c.group_reporting;
        last_group = Some(g);
        let Some(ts) = reports.last_mut() else {
            continue;
        };
        if ts.error == 0 && c.stats.error != 0 {
            ts.error = c.stats.error;
            ts.verror = c.stats.verror.clone();
        }
        ts.latency_depth = c.stats.latency_depth;
        ts.sum(&c.stats);
        ts.members += 1;
    }
    let mut groups: Vec<GroupStats> = (0..ngroups).map(GroupStats::new).collect();
    for ts in &reports {
        let Some(rs) = groups.get_mut(ts.groupid as usize) else {
            continue;
        };
        rs.kb_base = ts.kb_base;
        rs.unit_base = ts.unit_base;
        rs.sig_figs = ts.sig_figs;
        for j in 0..3 {
            let d = &ts.dir[j];
            if d.runtime_ms == 0 {
                continue;
            }
            if d.runtime_ms < rs.min_run[j] || rs.min_run[j] == 0 {
                rs.min_run[j] = d.runtime_ms;
            }
            rs.max_run[j] = rs.max_run[j].max(d.runtime_ms);
            let bw = d.io_bytes * 1000 / d.runtime_ms;
            rs.min_bw[j] = rs.min_bw[j].min(bw);
            rs.max_bw[j] = rs.max_bw[j].max(bw);
            rs.io_bytes[j] += d.io_bytes;
        }
    }
    for rs in &mut groups {
        for j in 0..3 {
            rs.agg[j] = (rs.io_bytes[j] * 1000)
                .checked_div(rs.max_run[j])
                .unwrap_or(0);
        }
    }
    (reports, groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_buckets_match_fios_arithmetic() {
        assert_eq!(plat_val_to_idx(0), 0);
        assert_eq!(plat_val_to_idx(127), 127);
        assert_eq!(plat_val_to_idx(128), 128);
        // The capture's max clat 77695 ns is reported as 77312 at the top percentiles.
        assert_eq!(plat_idx_to_val(plat_val_to_idx(77695)), 77312);
        // A 475775 ns max is reported as 477184 (capture fio_write_fsync1.json).
        assert_eq!(plat_idx_to_val(plat_val_to_idx(475_775)), 477_184);
        assert_eq!(plat_idx_to_val(plat_val_to_idx(6_896_039)), 6_914_048);
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn hdr_buckets_nest_in_fio_buckets() {
        // Every value maps to the same fio bucket whether taken directly or through the hdr
        // bucket it was recorded in.
        let mut h = LatHist::new();
        let mut v = 1u64;
        let mut expected = std::collections::BTreeMap::new();
        while v < (1 << 40) {
            for x in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                h.record(x);
                *expected.entry(plat_val_to_idx(x)).or_insert(0u64) += 1;
            }
            v *= 2;
        }
        let got: std::collections::BTreeMap<usize, u64> = h.fio_buckets().into_iter().collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn percentiles_pick_the_first_bucket_reaching_p() {
        let mut h = LatHist::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let p = h.percentiles(&[1.0, 50.0, 99.0, 99.99], 100);
        assert_eq!(p, vec![1, 50, 99, 100]);
    }

    #[test]
    fn welford_and_merge_agree_with_a_direct_computation() {
        let xs: Vec<u64> = (1..=1000).map(|i| (i * 7919) % 1013).collect();
        let mut all = IoStat::default();
        let (mut a, mut b) = (IoStat::default(), IoStat::default());
        for (i, x) in xs.iter().enumerate() {
            all.add(*x);
            if i % 3 == 0 { a.add(*x) } else { b.add(*x) }
        }
        a.merge(&b);
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|x| (*x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        for s in [all, a] {
            let sm = s.summary().unwrap();
            assert!((sm.mean - mean).abs() < 1e-9);
            assert!((sm.dev - var.sqrt()).abs() < 1e-6);
            assert_eq!(sm.min, *xs.iter().min().unwrap());
            assert_eq!(sm.max, *xs.iter().max().unwrap());
        }
        assert!(IoStat::default().summary().is_none());
    }

    fn clone_stats(name: &str, g: u32, bytes: u64, runtime: u64, gr: bool) -> CloneStats {
        let mut s = ThreadStats::new(name, g);
        s.dir[1].io_bytes = bytes;
        s.dir[1].runtime_ms = runtime;
        s.dir[1].total_ios = bytes / 4096;
        CloneStats {
            stats: s,
            group_reporting: gr,
        }
    }

    #[test]
    fn group_reporting_merges_clones_and_groups_take_the_longest_runtime() {
        let clones = vec![
            clone_stats("w", 0, 4 << 20, 100, true),
            clone_stats("w", 0, 4 << 20, 200, true),
            clone_stats("x", 1, 1 << 20, 10, false),
            clone_stats("x", 1, 1 << 20, 20, false),
        ];
        let (reports, groups) = build_reports(&clones, 2);
        assert_eq!(reports.len(), 3);
        assert_eq!(reports[0].members, 2);
        assert_eq!(reports[0].dir[1].io_bytes, 8 << 20);
        assert_eq!(reports[0].dir[1].runtime_ms, 200);
        assert_eq!(groups[0].agg[1], (8u64 << 20) * 1000 / 200);
        assert_eq!(groups[1].min_run[1], 10);
        assert_eq!(groups[1].max_run[1], 20);
        assert_eq!(groups[1].max_bw[1], (1u64 << 20) * 1000 / 10);
        assert_eq!(groups[1].min_bw[1], (1u64 << 20) * 1000 / 20);
    }
}
