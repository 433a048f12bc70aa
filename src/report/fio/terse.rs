//! fio's terse output (`--minimal`, `--output-format=terse`; `show_thread_status_terse_all`).
//!
//! One `;`-separated line per report. Version 3 (the default) has 130 fields with one disk:
//! general info, a 41-field block for reads and one for writes (versions 2, 4 and 5 add trims;
//! 5 adds bandwidth sample counts and five IOPS fields per direction), CPU, I/O depths, the
//! µs and ms latency distributions (ns buckets folded into the first µs bucket), then the
//! disks. Latencies are integer µs, means and deviations `%f`.

use std::fmt::Write;

use super::normal::{FIO_VERSION, cpu_percentages, dist_percentages, lat_percentages};
use crate::workload::fio::job::Ddir;
use crate::workload::fio::stats::{DEFAULT_PERCENTILES, DiskUtil, GroupStats, IoStat, ThreadStats};

fn lat_fields(out: &mut String, s: &IoStat) {
    match s.summary() {
        Some(s) => {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6}",
                s.min / 1000,
                s.max / 1000,
                s.mean / 1000.0,
                s.dev / 1000.0
            );
        }
        None => out.push_str(";0;0;0.000000;0.000000"),
    }
}

fn ddir_fields(out: &mut String, ts: &ThreadStats, rs: &GroupStats, ddir: Ddir, ver: u8) {
    let d = ts.d(ddir);
    let bw = (1000 * d.io_bytes).checked_div(d.runtime_ms).unwrap_or(0) / 1024;
    let iops = (1000 * d.total_ios).checked_div(d.runtime_ms).unwrap_or(0);
    let _ = write!(out, ";{};{bw};{iops};{}", d.io_bytes >> 10, d.runtime_ms);
    lat_fields(out, &d.slat);
    lat_fields(out, &d.clat);
    let vals = if d.clat.samples > 0 {
        d.clat_hist
            .percentiles(&DEFAULT_PERCENTILES, d.clat.samples)
    } else {
        Vec::new()
    };
    // fio always prints FIO_IO_U_LIST_MAX_LEN (20) percentile fields.
    for i in 0..20 {
        match (DEFAULT_PERCENTILES.get(i), vals.get(i)) {
            (Some(p), Some(v)) => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            _ => out.push_str(";0%=0"),
        }
    }
    lat_fields(out, &d.lat);
    match d.bw.summary() {
        Some(s) => {
            let agg = rs.agg[ddir.index()];
            let p_of_agg = if agg > 0 {
                (s.mean * 100.0 / (agg / 1024) as f64).min(100.0)
            } else {
                100.0
            };
            let _ = write!(
                out,
                ";{};{};{p_of_agg:.6}%;{:.6};{:.6}",
                s.min, s.max, s.mean, s.dev
            );
        }
        None => out.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
    if ver == 5 {
        let _ = write!(out, ";{}", d.bw.samples);
        match d.iops.summary() {
            Some(s) => {
                let _ = write!(
                    out,
                    ";{};{};{:.6};{:.6};{}",
                    s.min, s.max, s.mean, s.dev, d.iops.samples
                );
            }
            None => out.push_str(";0;0;0.000000;0.000000;0"),
        }
    }
}

/// One report's terse line (with its newline).
pub fn line(ts: &ThreadStats, rs: &GroupStats, disks: &[DiskUtil], ver: u8) -> String {
    let mut out = String::new();
    if ver == 2 {
        let _ = write!(out, "2;{};{};{}", ts.name, ts.groupid, ts.error);
    } else {
        let _ = write!(
            out,
            "{ver};{FIO_VERSION};{};{};{}",
            ts.name, ts.groupid, ts.error
        );
    }
    ddir_fields(&mut out, ts, rs, Ddir::Read, ver);
    ddir_fields(&mut out, ts, rs, Ddir::Write, ver);
    if matches!(ver, 2 | 4 | 5) {
        ddir_fields(&mut out, ts, rs, Ddir::Trim, ver);
    }
    let (usr, sys) = cpu_percentages(ts);
    let _ = write!(
        out,
        ";{usr:.6}%;{sys:.6}%;{};{};{}",
        ts.ctx, ts.majf, ts.minf
    );
    let total = ts.total_rw_ios();
    for v in dist_percentages(&ts.io_u_map, total) {
        let _ = write!(out, ";{v:3.1}%");
    }
    let mut lat_u = lat_percentages(&ts.lat_u, total);
    if total > 0 {
        let ns: u64 = ts.lat_n.iter().sum();
        lat_u[0] += 100.0 * ns as f64 / total as f64;
    }
    for v in lat_u {
        let _ = write!(out, ";{v:3.2}%");
    }
    for v in lat_percentages(&ts.lat_m, total) {
        let _ = write!(out, ";{v:3.2}%");
    }
    if ver >= 3 {
        for d in disks {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:3.2}%",
                d.name,
                d.ios[0],
                d.ios[1],
                d.merges[0],
                d.merges[1],
                d.ticks[0],
                d.ticks[1],
                d.in_queue,
                d.util()
            );
        }
    }
    if let Some(desc) = &ts.description {
        if ver == 2 {
            out.push('\n');
        }
        let _ = write!(out, ";{desc}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::stats::{CloneStats, build_reports};

    #[test]
    fn v3_has_130_fields_with_one_disk_and_fios_prefix() {
        let mut ts = ThreadStats::new("mixed", 0);
        ts.dir[0].io_bytes = 2852 << 10;
        ts.dir[0].runtime_ms = 43;
        ts.dir[0].total_ios = 713;
        for v in [25_000u64, 44_000, 88_000, 572_000] {
            ts.dir[0].clat.add(v);
            ts.dir[0].clat_hist.record(v);
        }
        let (reports, groups) = build_reports(
            &[CloneStats {
                stats: ts,
                group_reporting: true,
            }],
            1,
        );
        let disk = DiskUtil {
            name: "vda".into(),
            ios: [0, 0],
            merges: [0, 0],
            ticks: [0, 0],
            in_queue: 0,
            io_ticks: 0,
            msec: 0,
        };
        let l = line(&reports[0], &groups[0], &[disk], 3);
        let fields: Vec<&str> = l.trim_end().split(';').collect();
        assert_eq!(fields.len(), 130, "{l}");
        assert_eq!(
            &fields[..9],
            &[
                "3", "fio-3.33", "mixed", "0", "0", "2852", "66325", "16581", "43"
            ]
        );
        // 25000 ns falls in the fio bucket whose midpoint is 24960 ns: 24 us.
        assert_eq!(fields[17], "1.000000%=24");
        assert!(l.trim_end().ends_with(";vda;0;0;0;0;0;0;0;0.00%"), "{l}");
        let v5_line = line(&reports[0], &groups[0], &[], 5);
        let v5: Vec<&str> = v5_line.trim_end().split(';').collect();
        // v5: three 47-field direction blocks, no disk.
        assert_eq!(v5.len(), 5 + 3 * 47 + 5 + 7 + 10 + 12);
    }
}
