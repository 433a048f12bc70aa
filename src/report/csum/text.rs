//! csumhist's text: the thread's size table, the per-structure breakdown, the single-vs-split
//! comparison, the engine table and the stat block, as comfy-table tables.

use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};

use super::{RunView, mode_stats};
use crate::fs::cksum::EnginePath;
use crate::workload::csum::bench::BenchReport;
use crate::workload::csum::calls::{SeedRow, SiteSummary};
use crate::workload::csum::counters::{CounterKind, Reading};
use crate::workload::csum::run::Measured;

fn table(header: Vec<String>, right_from: usize) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL_CONDENSED);
    let n = header.len();
    t.set_header(header);
    for i in right_from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn pct(v: f64) -> String {
    format!("{v:.2}")
}

/// Thread 004's table: ilog2 bucket and byte range, frequency % and bytes % of total, head and
/// tail.
pub fn seed_table(rows: &[SeedRow]) -> Table {
    let header = [
        "ilog2",
        "range",
        "freq% total",
        "freq% head",
        "freq% tail",
        "bytes% total",
        "bytes% head",
        "bytes% tail",
    ];
    let mut t = table(header.map(String::from).to_vec(), 2);
    if let Some(c) = t.column_mut(0) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    for r in rows {
        let mut cells = vec![
            r.ilog2.map_or_else(|| "-".to_string(), |k| k.to_string()),
            r.range_label(),
        ];
        cells.extend(r.freq_pct.iter().map(|&v| pct(v)));
        cells.extend(r.bytes_pct.iter().map(|&v| pct(v)));
        t.add_row(cells);
    }
    t
}

/// The per-structure breakdown.
pub fn sites_table(sites: &[SiteSummary], total_bytes: u128) -> Table {
    let header = [
        "site",
        "structure",
        "calls",
        "bytes",
        "bytes%",
        "len",
        "head",
        "tail",
        "crc32c calls",
        "verifies",
    ];
    let mut t = table(header.map(String::from).to_vec(), 2);
    for s in sites {
        let share = if total_bytes == 0 {
            0.0
        } else {
            s.bytes as f64 * 100.0 / total_bytes as f64
        };
        let heads = if s.heads.is_empty() {
            "-".to_string()
        } else {
            s.heads
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        t.add_row(vec![
            s.site.clone(),
            s.structure.to_string(),
            s.calls.to_string(),
            s.bytes.to_string(),
            pct(share),
            s.len.to_string(),
            heads,
            s.tail.to_string(),
            s.crc_calls.to_string(),
            s.verifies.to_string(),
        ]);
    }
    t
}

/// Each engine's instruction path, one line each, with the CPU's features.
pub fn engine_paths(paths: &[EnginePath], cpu_summary: &str, crc_fast_target: &str) -> String {
    let mut out = format!("cpu:      {cpu_summary}\n");
    for p in paths {
        let _ = writeln!(out, "engine:   {p}");
    }
    let _ = writeln!(
        out,
        "          (crc-fast reports its code path as {crc_fast_target})"
    );
    out
}

fn ratio(a: f64, b: f64) -> String {
    if a == 0.0 {
        "-".to_string()
    } else {
        format!("{:.2}", b / a)
    }
}

/// The run report: header, then per mode its table and breakdown, then (two modes) the
/// side-by-side comparison.
pub fn run_report(view: &RunView<'_>) -> String {
    let mut out = String::new();
    let Some(first) = view.runs.first() else {
        return out;
    };
    let _ = writeln!(out, "csumhist: {}", view.workload);
    let _ = writeln!(out, "backend:  {}", first.backend);
    let path = first.engine.path();
    let _ = writeln!(out, "engine:   {path}");
    let _ = writeln!(
        out,
        "counting: {} calls; small calls are those under {} bytes",
        view.filter,
        view.small_below.bytes()
    );
    for m in view.runs {
        out.push('\n');
        out.push_str(&mode_section(view, m));
    }
    if let [a, b] = view.runs {
        out.push('\n');
        let _ = writeln!(
            out,
            "cksum={} vs cksum={} (the same workload, so the same structures; both after an \
             unreported warm-up run):",
            a.mode, b.mode
        );
        let _ = writeln!(out, "{}", comparison_table(view, a, b));
    }
    out
}

fn mode_section(view: &RunView<'_>, m: &Measured) -> String {
    let mut out = String::new();
    let s = mode_stats(view, m);
    let interrupted = if m.workload.interrupted {
        " (interrupted)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "== cksum={}: {} in {:.3} s{interrupted}",
        m.mode,
        m.workload.summary,
        m.workload.elapsed.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{} checksums of {} bytes made {} crc32c calls ({:.0} per second of workload); {} \
         calls ({:.1}%) and {} bytes ({:.1}%) were under {} bytes",
        s.calls.helper_calls,
        s.calls.bytes,
        s.calls.crc_calls,
        s.calls_per_sec,
        s.calls.small_calls,
        s.small_calls_pct,
        s.calls.small_bytes,
        s.small_bytes_pct,
        s.calls.small_below,
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "crc32c sizes by ilog2 bucket (freq%: share of the column's calls; bytes%: share of \
         all bytes checksummed; ilog2 is floor(log2), thread 004 printed fls, one more):"
    );
    let rows = m.calls.seed_rows(view.filter);
    if rows.is_empty() {
        let _ = writeln!(out, "(no {} calls)", view.filter);
    } else {
        let _ = writeln!(out, "{}", seed_table(&rows));
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "by structure (calls, bytes, sizes: {} calls; verifies counted apart; ~ marks a mean):",
        view.filter
    );
    let sites = m.calls.sites(view.filter);
    let _ = writeln!(out, "{}", sites_table(&sites, s.calls.bytes));
    out
}

/// The side-by-side comparison of two runs (`b` over `a` in the last column).
pub fn comparison_table(view: &RunView<'_>, a: &Measured, b: &Measured) -> Table {
    let (sa, sb) = (mode_stats(view, a), mode_stats(view, b));
    let header = vec![
        "".to_string(),
        format!("cksum={}", a.mode),
        format!("cksum={}", b.mode),
        format!("{}/{}", b.mode, a.mode),
    ];
    let mut t = table(header, 1);
    let below = view.small_below.bytes();
    let rows: Vec<(String, f64, f64, String, String)> = vec![
        (
            "workload time (s)".into(),
            a.workload.elapsed.as_secs_f64(),
            b.workload.elapsed.as_secs_f64(),
            format!("{:.3}", a.workload.elapsed.as_secs_f64()),
            format!("{:.3}", b.workload.elapsed.as_secs_f64()),
        ),
        count_row(
            "checksums (structures)",
            sa.calls.helper_calls,
            sb.calls.helper_calls,
        ),
        count_row("crc32c calls", sa.calls.crc_calls, sb.calls.crc_calls),
        (
            "crc32c calls per second".into(),
            sa.calls_per_sec,
            sb.calls_per_sec,
            format!("{:.0}", sa.calls_per_sec),
            format!("{:.0}", sb.calls_per_sec),
        ),
        count_row(
            "bytes checksummed",
            sa.calls.bytes as u64,
            sb.calls.bytes as u64,
        ),
        count_row(
            &format!("calls under {below} bytes"),
            sa.calls.small_calls,
            sb.calls.small_calls,
        ),
        count_row(
            &format!("bytes in calls under {below} bytes"),
            sa.calls.small_bytes as u64,
            sb.calls.small_bytes as u64,
        ),
    ];
    for (name, va, vb, ta, tb) in rows {
        t.add_row(vec![name, ta, tb, ratio(va, vb)]);
    }
    t
}

fn count_row(name: &str, a: u64, b: u64) -> (String, f64, f64, String, String) {
    (
        name.to_string(),
        a as f64,
        b as f64,
        a.to_string(),
        b.to_string(),
    )
}

/// The stat block of a measured run and its decoded form.
pub fn stat_report(workload: &str, m: &Measured) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "csumhist: {workload}");
    let _ = writeln!(out, "backend:  {}", m.backend);
    let _ = writeln!(
        out,
        "statistics of the measured phase ({} in {:.3} s), cleared at its start as by stats_clear:",
        m.workload.summary,
        m.workload.elapsed.as_secs_f64()
    );
    out.push('\n');
    out.push_str(&m.stats.render_raw());
    out.push('\n');
    out.push_str(&m.stats.decode());
    out
}

fn reading(r: Reading) -> String {
    match r {
        Reading::Value(v) => format!("{v:.3}"),
        Reading::NotSupported => "<not supported>".to_string(),
        Reading::NotCounted => "<not counted>".to_string(),
    }
}

/// Throughput per size: one column per engine in GB/s, and the ratio of the second engine to
/// the first.
pub fn bench_table(r: &BenchReport) -> Table {
    let engines: Vec<_> = r.paths.iter().map(|p| p.engine).collect();
    let mut header = vec!["size".to_string(), "structure".to_string()];
    header.extend(engines.iter().map(|e| format!("{e} GB/s")));
    if engines.len() >= 2 {
        header.push(format!("{}/{}", engines[1], engines[0]));
    }
    let mut t = table(header, 2);
    if let Some(c) = t.column_mut(0) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    for row in &r.rows {
        let mut cells = vec![
            row.size.bytes.to_string(),
            row.size.label.unwrap_or("").to_string(),
        ];
        for e in &engines {
            cells.push(row.gbps(*e).map_or("-".into(), |g| format!("{g:.2}")));
        }
        if engines.len() >= 2 {
            cells.push(match (row.gbps(engines[0]), row.gbps(engines[1])) {
                (Some(a), Some(b)) => ratio(a, b),
                _ => "-".into(),
            });
        }
        t.add_row(cells);
    }
    t
}

/// CPU counters per byte: for each engine, cycles, instructions and task-clock ns.
pub fn counters_table(r: &BenchReport) -> Table {
    let engines: Vec<_> = r.paths.iter().map(|p| p.engine).collect();
    let mut header = vec!["size".to_string()];
    for e in &engines {
        for k in CounterKind::ALL {
            let unit = match k {
                CounterKind::TaskClock => "task-clock ns/B",
                CounterKind::Cycles => "cycles/B",
                CounterKind::Instructions => "instructions/B",
            };
            header.push(format!("{e} {unit}"));
        }
    }
    let mut t = table(header, 0);
    for row in &r.rows {
        let mut cells = vec![row.size.bytes.to_string()];
        for e in &engines {
            for k in CounterKind::ALL {
                cells.push(
                    row.result(*e)
                        .map_or("-".into(), |res| reading(res.per_byte.get(k))),
                );
            }
        }
        t.add_row(cells);
    }
    t
}

/// The bench report: engine paths, the throughput table, the breakeven, and the counters.
pub fn bench_report(r: &BenchReport) -> String {
    let mut out = engine_paths(&r.paths, &r.cpu.summary(), &r.crc_fast_target);
    out.push('\n');
    let _ = writeln!(
        out,
        "throughput (10^9 bytes per second of {}; best of the rounds):",
        r.timebase.name()
    );
    let _ = writeln!(out, "{}", bench_table(r));
    let engines: Vec<_> = r.paths.iter().map(|p| p.engine).collect();
    for (a, b, size) in r.breakevens() {
        let _ = writeln!(
            out,
            "breakeven: {b} is at least as fast as {a} from {size} bytes up"
        );
    }
    if let (Some(&a), Some(&b)) = (engines.first(), engines.get(1))
        && r.breakeven(a, b).is_none()
    {
        let _ = writeln!(
            out,
            "breakeven: {b} never stays at least as fast as {a} up to the largest size"
        );
    }
    if let (Some(&a), Some(&b)) = (engines.first(), engines.get(1))
        && let Some(x) = r.ratio_at(4096, a, b)
    {
        let _ = writeln!(out, "at 4096 bytes: {b} runs {x:.2}x {a}");
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "CPU counters per byte (perf_event, this thread, user space):"
    );
    for f in &r.unsupported {
        let _ = writeln!(out, "  {}: <not supported> ({})", f.kind.name(), f.reason());
    }
    let _ = writeln!(out, "{}", counters_table(r));
    out
}
