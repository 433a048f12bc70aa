//! fio's human-readable report (`stat.c`: `show_thread_status_normal`, `show_ddir_status`,
//! `show_group_stats`, `show_disk_util`; `init.c`/`backend.c` for the lines before the run).
//!
//! Every format string follows fio 3.33 so that scripts grepping `WRITE: bw=` or `IOPS=` read
//! fiolike's output unchanged. Floating-point fields use the C widths (`%5.02f` is `{:5.2}`).

use std::fmt::Write;

use super::num2str::{Unit, num2str};
use super::{ctime, rate_unit};
use crate::workload::fio::job::{Ddir, JobSpec, UnitBase};
use crate::workload::fio::stats::{
    DEFAULT_PERCENTILES, GroupStats, IoStat, LatHist, Summary, ThreadStats,
};

/// The version fio's outputs carry; fiolike reproduces fio 3.33's formats.
pub const FIO_VERSION: &str = "fio-3.33";

/// The per-job line printed when the job is defined (`add_job`).
pub fn job_banner(spec: &JobSpec, groupid: u32) -> String {
    let i2p = spec.kb_base.is_pow2();
    let bs = |d: usize| num2str(spec.bs[d], 4, 1, i2p, Unit::Byte);
    format!(
        "{}: (g={}): rw={}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}\n",
        spec.name,
        groupid,
        spec.rw.name(),
        bs(0),
        bs(0),
        bs(1),
        bs(1),
        bs(2),
        bs(2),
        spec.ioengine.name(),
        spec.iodepth
    )
}

/// The "Starting ..." line (`run_threads`).
pub fn starting_line(threads: u32, processes: u32) -> String {
    let mut s = String::from("Starting ");
    if threads > 0 {
        let _ = write!(s, "{threads} thread{}", if threads > 1 { "s" } else { "" });
    }
    if processes > 0 {
        if threads > 0 {
            s.push_str(" and ");
        }
        let _ = write!(
            s,
            "{processes} process{}",
            if processes > 1 { "es" } else { "" }
        );
    }
    s.push('\n');
    s
}

/// The layout line (`setup_files`): sizes are whole MiB, truncated.
pub fn layout_line(job: &str, files: u32, total_bytes: u64) -> String {
    let many = files > 1;
    format!(
        "{job}: Laying out IO file{} ({files} file{} / {}{}MiB)\n",
        if many { "s" } else { "" },
        if many { "s" } else { "" },
        if many { "total " } else { "" },
        total_bytes >> 20
    )
}

/// Latencies in the unit fio picks for them (`display_lat`).
fn display_lat(out: &mut String, name: &str, s: Summary) {
    let (mut min, mut max, mut mean, mut dev) = (s.min, s.max, s.mean, s.dev);
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        base = "(usec)";
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, Unit::None),
        num2str(max, 6, 1, false, Unit::None)
    );
}

/// The percentile block (`show_clat_percentiles`).
pub fn percentile_block(out: &mut String, hist: &LatHist, samples: u64, pre: &str) {
    let list = &DEFAULT_PERCENTILES;
    let vals = hist.percentiles(list, samples);
    if vals.len() != list.len() {
        return;
    }
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let precision = 2usize;
    let scaled_max = maxv / divisor;
    let width = if scaled_max == 0 {
        5
    } else {
        (((scaled_max as f64).log10() + 1.0) as usize).max(5)
    };
    let per_line = (80 - 7) / (precision + 10 + width);
    for (j, (p, v)) in list.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == list.len() - 1;
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {p:5.2}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' }
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

fn summary(s: &IoStat) -> Option<Summary> {
    s.summary()
}

fn ddir_status(out: &mut String, rs: &GroupStats, ts: &ThreadStats, ddir: Ddir) {
    let d = ts.d(ddir);
    if d.runtime_ms == 0 {
        return;
    }
    let i2p = rs.kb_base.is_pow2();
    let runt = d.runtime_ms;
    let bw = 1000 * d.io_bytes / runt;
    let unit = rate_unit(ts.unit_base);
    let io_p = num2str(d.io_bytes, ts.sig_figs, 1, i2p, Unit::Byte);
    let bw_p = num2str(bw, ts.sig_figs, 1, i2p, unit);
    let bw_alt = num2str(bw, ts.sig_figs, 1, !i2p, unit);
    let iops = 1000 * d.total_ios / runt;
    let iops_p = num2str(iops, ts.sig_figs, 1, false, Unit::None);
    let post = if ddir == Ddir::Write {
        "; 0 zone resets"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  {}: IOPS={iops_p}, BW={bw_p} ({bw_alt})({io_p}/{runt}msec){post}",
        ddir.name()
    );
    if let Some(s) = summary(&d.slat) {
        display_lat(out, "slat", s);
    }
    if let Some(s) = summary(&d.clat) {
        display_lat(out, "clat", s);
    }
    if let Some(s) = summary(&d.lat) {
        display_lat(out, " lat", s);
    }
    if d.clat.samples > 0 {
        percentile_block(out, &d.clat_hist, d.clat.samples, "clat");
    }
    if let Some(s) = summary(&d.bw) {
        let kb = rs.kb_base.value() as f64;
        let mut bw_str = match (rs.unit_base, i2p) {
            (UnitBase::Bits, true) => "Kibit",
            (UnitBase::Bits, false) => "kbit",
            (UnitBase::Bytes, true) => "KiB",
            (UnitBase::Bytes, false) => "kB",
        };
        let p_of_agg = agg_percent(rs, ddir, s.mean as i64 as f64);
        let (mut min, mut max, mut mean, mut dev) = (s.min as f64, s.max as f64, s.mean, s.dev);
        if rs.unit_base == UnitBase::Bits {
            min *= 8.0;
            max *= 8.0;
            mean *= 8.0;
            dev *= 8.0;
        }
        if mean > kb * kb {
            min /= kb;
            max /= kb;
            mean /= kb;
            dev /= kb;
            bw_str = if rs.unit_base == UnitBase::Bits {
                "Mibit"
            } else {
                "MiB"
            };
        }
        let _ = writeln!(
            out,
            "   bw ({bw_str:>5}/s): min={:5}, max={:5}, per={p_of_agg:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            min as u64, max as u64, d.bw.samples
        );
    }
    if let Some(s) = summary(&d.iops) {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            s.min, s.max, s.mean, s.dev, d.iops.samples
        );
    }
}

/// fio's `convert_agg_kbytes_percent`: the report's mean bandwidth as a share of the group's.
pub fn agg_percent(rs: &GroupStats, ddir: Ddir, mean: f64) -> f64 {
    let agg = rs.agg[ddir.index()];
    if agg > 1024 {
        (mean * 100.0 / (agg as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// The percentages of a latency distribution (`stat_calc_lat`): 0.01 at least when non-zero.
pub fn lat_percentages(counts: &[u64], total: u64) -> Vec<f64> {
    counts
        .iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c > 0 { 0.01 } else { v }
        })
        .collect()
}

/// The percentages of a depth distribution (`stat_calc_dist`): 0.1 at least when non-zero.
pub fn dist_percentages(counts: &[u64; 7], total: u64) -> [f64; 7] {
    let mut out = [0.0; 7];
    for (o, &c) in out.iter_mut().zip(counts) {
        if total > 0 {
            let v = c as f64 / total as f64 * 100.0;
            *o = if v < 0.1 && c > 0 { 0.1 } else { v };
        }
    }
    out
}

const LAT_RANGES: [&str; 12] = [
    "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000=",
];

fn show_lat(out: &mut String, pct: &[f64], unit: &str) {
    let mut new_line = true;
    let mut line = 0;
    let mut shown = false;
    for (i, v) in pct.iter().enumerate() {
        if *v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line > 0 {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
            new_line = false;
            line = 0;
        }
        if line > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}{v:3.2}%", LAT_RANGES[i]);
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        out.push('\n');
    }
}

/// CPU percentages of a report (usr, sys).
pub fn cpu_percentages(ts: &ThreadStats) -> (f64, f64) {
    if ts.total_run_time_ms == 0 {
        return (0.0, 0.0);
    }
    let runt = ts.total_run_time_ms as f64;
    (
        ts.usr_ms as f64 * 100.0 / runt,
        ts.sys_ms as f64 * 100.0 / runt,
    )
}

/// One report's block (`show_thread_status_normal`); empty when it did no I/O.
pub fn thread_status(ts: &ThreadStats, rs: &GroupStats, now_secs: i64) -> String {
    let mut out = String::new();
    if ts.total_rw_bytes() == 0 && ts.total_rw_ios() == 0 {
        return out;
    }
    let when = ctime(now_secs);
    if ts.error == 0 {
        let _ = write!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {when}",
            ts.name, ts.groupid, ts.members, ts.error, ts.pid
        );
    } else {
        let _ = write!(
            out,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={}: {when}",
            ts.name, ts.groupid, ts.members, ts.error, ts.verror, ts.pid
        );
    }
    if let Some(desc) = &ts.description {
        let _ = writeln!(out, "  Description  : [{desc}]");
    }
    for ddir in Ddir::ALL {
        if ts.d(ddir).io_bytes > 0 {
            ddir_status(&mut out, rs, ts, ddir);
        }
    }
    let total = ts.total_rw_ios();
    show_lat(&mut out, &lat_percentages(&ts.lat_n, total), "nsec");
    show_lat(&mut out, &lat_percentages(&ts.lat_u, total), "usec");
    show_lat(&mut out, &lat_percentages(&ts.lat_m, total), "msec");
    if let Some(s) = ts.sync.summary() {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(&mut out, "sync", s);
        percentile_block(&mut out, &ts.sync_hist, ts.sync.samples, "sync");
    }
    let (usr, sys) = cpu_percentages(ts);
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:3.2}%, sys={sys:3.2}%, ctx={}, majf={}, minf={}",
        ts.ctx, ts.majf, ts.minf
    );
    let d = dist_percentages(&ts.io_u_map, total);
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    let d = dist_percentages(&ts.io_u_submit, ts.total_submit);
    let _ = writeln!(
        out,
        "     submit    : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    let d = dist_percentages(&ts.io_u_complete, ts.total_complete);
    let _ = writeln!(
        out,
        "     complete  : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    let [r, w, t] = &ts.dir;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        r.total_ios,
        w.total_ios,
        t.total_ios,
        ts.sync_total,
        r.short_ios,
        w.short_ios,
        t.short_ios,
        r.drop_ios,
        w.drop_ios,
        t.drop_ios
    );
    if ts.latency_depth > 0 {
        let _ = writeln!(
            out,
            "     latency   : target=0, window=0, percentile=100.00%, depth={}",
            ts.latency_depth
        );
    }
    out
}

/// A group's "Run status group" lines (`show_group_stats`).
pub fn group_status(rs: &GroupStats) -> String {
    let mut out = String::new();
    let _ = write!(out, "\nRun status group {} (all jobs):\n", rs.groupid);
    let labels = ["   READ", "  WRITE", "   TRIM"];
    let i2p = rs.kb_base.is_pow2();
    let unit = rate_unit(rs.unit_base);
    for (i, label) in labels.iter().enumerate() {
        if rs.max_run[i] == 0 {
            continue;
        }
        let f = |v: u64, p: bool, u: Unit| num2str(v, rs.sig_figs, 1, p, u);
        let _ = writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            f(rs.agg[i], i2p, unit),
            f(rs.agg[i], !i2p, unit),
            f(rs.min_bw[i], i2p, unit),
            f(rs.max_bw[i], i2p, unit),
            f(rs.min_bw[i], !i2p, unit),
            f(rs.max_bw[i], !i2p, unit),
            f(rs.io_bytes[i], i2p, Unit::Byte),
            f(rs.io_bytes[i], !i2p, Unit::Byte),
            rs.min_run[i],
            rs.max_run[i]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::job::{IoEngineKind, RwMode};
    use crate::workload::fio::stats::{CloneStats, build_reports};

    #[test]
    fn banner_and_run_lines_match_the_captures() {
        let mut spec = JobSpec {
            name: "seqw".into(),
            bs: [65536; 3],
            rw: RwMode {
                read: false,
                write: true,
                random: false,
            },
            ..JobSpec::default()
        };
        spec.ioengine = IoEngineKind::Psync;
        assert_eq!(
            job_banner(&spec, 0),
            "seqw: (g=0): rw=write, bs=(R) 64.0KiB-64.0KiB, (W) 64.0KiB-64.0KiB, (T) 64.0KiB-64.0KiB, ioengine=psync, iodepth=1\n"
        );
        assert_eq!(starting_line(0, 1), "Starting 1 process\n");
        assert_eq!(starting_line(0, 2), "Starting 2 processes\n");
        assert_eq!(starting_line(1, 2), "Starting 1 thread and 2 processes\n");
        assert_eq!(
            layout_line("seqw", 1, 8 << 20),
            "seqw: Laying out IO file (1 file / 8MiB)\n"
        );
        assert_eq!(
            layout_line("c", 1, 512 << 10),
            "c: Laying out IO file (1 file / 0MiB)\n"
        );
        assert_eq!(
            layout_line("m", 2, 4 << 20),
            "m: Laying out IO files (2 files / total 4MiB)\n"
        );
    }

    #[test]
    fn group_line_matches_the_capture() {
        // fio_write_fsync1_normal.txt: 8 MiB written in 24 ms.
        let mut ts = ThreadStats::new("seqw", 0);
        ts.dir[1].io_bytes = 8 << 20;
        ts.dir[1].runtime_ms = 24;
        ts.dir[1].total_ios = 128;
        let (reports, groups) = build_reports(
            &[CloneStats {
                stats: ts,
                group_reporting: false,
            }],
            1,
        );
        assert_eq!(
            group_status(&groups[0]),
            "\nRun status group 0 (all jobs):\n  WRITE: bw=333MiB/s (350MB/s), 333MiB/s-333MiB/s (350MB/s-350MB/s), io=8192KiB (8389kB), run=24-24msec\n"
        );
        let block = thread_status(&reports[0], &groups[0], 0);
        assert!(
            block.contains(
                "  write: IOPS=5333, BW=333MiB/s (350MB/s)(8192KiB/24msec); 0 zone resets\n"
            ),
            "{block}"
        );
    }

    #[test]
    fn percentile_block_layout_matches_the_capture() {
        // The sync block of fio_write_fsync1_normal.txt has values 143..1090 us; a histogram
        // with those bucket values prints the same layout.
        let mut h = LatHist::new();
        for v in [
            142_000u64, 145_000, 149_000, 155_000, 157_000, 159_000, 161_000, 161_500, 163_000,
            165_000, 178_000, 200_000, 553_000, 1_085_000,
        ] {
            h.record(v);
        }
        let mut out = String::new();
        percentile_block(&mut out, &h, h.len(), "sync");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "    sync percentiles (usec):");
        assert_eq!(lines.len(), 6);
        assert!(
            lines[1].starts_with("     |  1.00th=[  143],  5.00th=[  "),
            "{out}"
        );
        assert!(lines[5].starts_with("     | 99.99th=[ 1090]"), "{out}");
    }

    #[test]
    fn lat_distribution_wraps_after_five_entries() {
        let mut out = String::new();
        show_lat(
            &mut out,
            &[0.0, 16.99, 10.84, 1.07, 16.60, 42.97, 11.33, 0.20, 0.0, 0.0],
            "usec",
        );
        assert_eq!(
            out,
            "  lat (usec)   : 4=16.99%, 10=10.84%, 20=1.07%, 50=16.60%, 100=42.97%\n  lat (usec)   : 250=11.33%, 500=0.20%\n"
        );
    }
}
