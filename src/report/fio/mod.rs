//! fio 3.33's outputs, byte for byte where scripts read them.
//!
//! - [`num2str`]: fio's number formatting (`333MiB/s`, `18.3k`).
//! - [`normal`]: the human-readable report and the lines printed before a run.
//! - [`json`]: `json` and `json+` in fio's own JSON layout.
//! - [`terse`]: the `;`-separated lines (versions 2 to 5, 3 by default).
//! - [`logs`]: the per-job bandwidth, IOPS and latency logs fio's plotting scripts read.
//!
//! The statistics themselves (what is measured and how clones merge into reports) live in
//! [`crate::workload::fio::stats`]; this module only formats them.

pub mod eta;
pub mod json;
pub mod logs;
pub mod normal;
pub mod num2str;
pub mod terse;

use std::fmt::Write;

use crate::workload::fio::cmdline::OutputFormats;
use crate::workload::fio::job::UnitBase;
use crate::workload::fio::stats::{DiskUtil, GroupStats, ThreadStats};
use json::JsonClock;
use num2str::Unit;

/// Everything the end-of-run report shows.
#[derive(Debug, Clone, Copy)]
pub struct Final<'a> {
    /// One entry per report (clone, or group with `group_reporting`).
    pub reports: &'a [ThreadStats],
    /// One entry per reporting group.
    pub groups: &'a [GroupStats],
    /// JSON "global options".
    pub global_options: &'a [(String, Option<String>)],
    /// Host disks ("Disk stats").
    pub disks: &'a [DiskUtil],
    /// Which formats.
    pub formats: OutputFormats,
    /// `--terse-version`.
    pub terse_version: u8,
    /// Times for the JSON header and the report lines.
    pub clock: JsonClock,
}

/// The report in every requested format, in fio's order: terse lines, then the JSON
/// document, then the normal text (fio fills one buffer per format and prints them in that
/// order, `__show_run_stats`).
pub fn render(f: &Final<'_>) -> String {
    let mut out = String::new();
    if f.formats.terse {
        for ts in f.reports {
            if let Some(rs) = f.groups.get(ts.groupid as usize) {
                out.push_str(&terse::line(ts, rs, f.disks, f.terse_version));
            }
        }
    }
    if f.formats.any_json() {
        out.push_str(&json::document(
            f.reports,
            f.groups,
            f.global_options,
            f.disks,
            &f.clock,
            f.formats.json_plus,
        ));
    }
    if f.formats.normal {
        out.push('\n');
        for ts in f.reports {
            if let Some(rs) = f.groups.get(ts.groupid as usize) {
                out.push_str(&normal::thread_status(ts, rs, f.clock.now_secs));
            }
        }
        for rs in f.groups {
            out.push_str(&normal::group_status(rs));
        }
        out.push_str(&disk_stats(f.disks));
    }
    out
}

/// The unit of rates for a `unit_base`.
pub fn rate_unit(u: UnitBase) -> Unit {
    match u {
        UnitBase::Bytes => Unit::BytePerSec,
        UnitBase::Bits => Unit::BitPerSec,
    }
}

/// `ctime(3)` (the crate's one), in fio's signed seconds.
pub fn ctime(secs: i64) -> String {
    crate::report::ctime(u64::try_from(secs).unwrap_or(0))
}

/// The "Disk stats" block of the normal report (empty without disks).
pub fn disk_stats(disks: &[DiskUtil]) -> String {
    let mut out = String::new();
    if disks.is_empty() {
        return out;
    }
    out.push_str("\nDisk stats (read/write):\n");
    for d in disks {
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_has_fios_shape() {
        let s = ctime(1_796_020_552);
        // Weekday, month, day padded to 3, time, year, newline; the zone decides the rest.
        assert_eq!(s.len(), 25, "{s:?}");
        assert!(s.ends_with(" 2026\n"), "{s:?}");
        assert_eq!(&s[3..4], " ");
        assert_eq!(&s[13..14], ":");
    }

    #[test]
    fn disk_line_matches_the_capture() {
        let d = DiskUtil {
            name: "vda".into(),
            ios: [0, 4],
            merges: [0, 0],
            ticks: [0, 10],
            in_queue: 9,
            io_ticks: 8,
            msec: 1000,
        };
        assert_eq!(
            disk_stats(&[d]),
            "\nDisk stats (read/write):\n  vda: ios=0/4, merge=0/0, ticks=0/10, in_queue=9, util=0.80%\n"
        );
    }
}
