//! The fsmark mode's output: each mode's fs_mark table (fs_mark's own row format, from
//! `report::fsmark::text`) side by side, as thread 002 compared them, and one line per mode
//! from the first loop's rate to the last's.

use crate::report::fsmark::text::write_row;
use crate::workload::syncbench::degrade::ModeRun;

/// fs_mark's table title, as its rows are laid out (`%6u %12u %12u %12.1f %16llu`).
const TITLE: &str = "FSUse%        Count         Size    Files/sec     App Overhead";

/// One mode's rows as fs_mark prints them (without their newline).
fn lines(run: &ModeRun, file_size: u64) -> Vec<String> {
    run.rows
        .iter()
        .map(|r| {
            let mut buf = Vec::new();
            // Writing into a Vec cannot fail.
            let _ = write_row(
                &mut buf,
                r.report.fs_use_pct,
                r.report.count,
                file_size,
                &r.report.stats,
                false,
            );
            String::from_utf8_lossy(&buf).trim_end().to_string()
        })
        .collect()
}

/// The modes' fs_mark tables side by side, each under `sync_wait=MODE` (or the kernel's).
pub fn side_by_side(runs: &[ModeRun], file_size: u64) -> String {
    let width = TITLE.len();
    let gap = "   |   ";
    let columns: Vec<Vec<String>> = runs.iter().map(|r| lines(r, file_size)).collect();
    let heads: Vec<String> = runs
        .iter()
        .map(|r| {
            let name = match r.mode {
                "kernel" => "the host kernel".to_string(),
                m => format!("sync_wait={m}"),
            };
            let cached = r
                .cached_at_start
                .map(|c| format!(" ({c} inodes cached at start)"))
                .unwrap_or_default();
            format!("{name}{cached}")
        })
        .collect();
    let mut out = String::new();
    let join = |cells: Vec<String>| {
        let padded: Vec<String> = cells.iter().map(|c| format!("{c:<width$}")).collect();
        let mut line = padded.join(gap);
        line.truncate(line.trim_end().len());
        line.push('\n');
        line
    };
    out.push_str(&join(heads));
    out.push_str(&join(runs.iter().map(|_| TITLE.to_string()).collect()));
    let n = columns.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..n {
        out.push_str(&join(
            columns
                .iter()
                .map(|c| c.get(i).cloned().unwrap_or_default())
                .collect(),
        ));
    }
    out
}

/// Per mode: files/sec in the first and the last loop, and the last as a share of the first.
pub fn trend(runs: &[ModeRun]) -> String {
    let mut out = String::new();
    for r in runs {
        let (Some(first), Some(last)) = (r.rows.first(), r.rows.last()) else {
            continue;
        };
        let rate = |row: &crate::workload::syncbench::degrade::RateRow| {
            row.report.stats.rate_tenths as f64 / 10.0
        };
        let (a, b) = (rate(first), rate(last));
        let share = if a > 0.0 { b / a * 100.0 } else { 0.0 };
        out.push_str(&format!(
            "{:>8}: {a:.1} files/sec in loop 1, {b:.1} in loop {} ({share:.0}% of the first)\n",
            r.mode,
            r.rows.len()
        ));
    }
    out
}
