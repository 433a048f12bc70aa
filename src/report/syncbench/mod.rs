//! syncbench's output: the sweep table (comfy-table), its JSON and CSV, and the SVG plot of
//! sync time against cache size ([`plot`]); the fsmark mode's side-by-side tables ([`rates`]).
//!
//! The JSON is the interface scripts rely on: `{"rows": [{"inodes": N, "cached": N,
//! "wblist_median_s": .., "all_median_s": .., ...}], ...}`, each way's `min`/`median`/`max`
//! under its own name (`wblist`/`all` on labfs, `syncfs`/`sync` on the host), so a row
//! reads the same whichever way a script looks it up. The CSV has the same columns, one row
//! per step.

pub mod plot;
pub mod rates;

use comfy_table::{CellAlignment, Table, presets};
use serde_json::{Map, Value, json};

use crate::workload::syncbench::sweep::{SweepReport, SweepRow};

/// Seconds as a person reads a short time: `850ns`, `12.4us`, `3.21ms`, `7.30s`.
pub fn format_secs(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        return format!("{:.0}ns", s * 1e9);
    };
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else if v >= 10.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.2}{unit}")
    }
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The sweep table: files populated, inodes cached, min/median/max per way, the ratio of the
/// medians.
pub fn sweep_table(r: &SweepReport) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL_CONDENSED);
    let ways = r.rows.first().map(|row| row.ways.clone());
    let (fast, slow) = ways.map_or(("fast", "slow"), |w| (w[0].way.name(), w[1].way.name()));
    let cached = match r.slab {
        Some(name) => format!("cached ({name})"),
        None => "cached".to_string(),
    };
    let mut header = vec!["inodes".to_string(), cached];
    for w in [fast, slow] {
        for s in ["min", "median", "max"] {
            header.push(format!("{w} {s}"));
        }
    }
    header.push(format!("{slow}/{fast}"));
    let n = header.len();
    t.set_header(header);
    for i in 0..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for row in &r.rows {
        let mut cells = vec![row.inodes.to_string(), count(row.cached)];
        for w in &row.ways {
            cells.push(format_secs(w.spread.min_s));
            cells.push(format_secs(w.spread.median_s));
            cells.push(format_secs(w.spread.max_s));
        }
        cells.push(
            row.ratio()
                .map_or_else(|| "-".into(), |x| format!("{x:.1}x")),
        );
        t.add_row(cells);
    }
    t
}

/// The lines around the table: what ran, and what the figures mean.
pub fn sweep_header(r: &SweepReport) -> String {
    let mut s = format!(
        "# syncbench sweep on {}\n# populate: {} ({} threads); {} timed syncs per way per step, the cache clean\n",
        r.backend, r.populate, r.threads, r.syncs
    );
    if r.prebuild_s > 0.0 {
        s.push_str(&format!(
            "# the tree was built first in {:.1} s\n",
            r.prebuild_s
        ));
    }
    s
}

/// The lines after the table: memory per inode, interruption.
pub fn sweep_footer(r: &SweepReport) -> String {
    let mut s = String::new();
    if let Some(b) = r.rss_bytes_per_inode {
        s.push_str(&format!(
            "resident memory grew {b:.0} bytes per cached inode over the sweep\n"
        ));
    } else if r.prebuild_s > 0.0 && !r.rows.is_empty() {
        s.push_str(
            "memory per cached inode not measured: the stats reused the memory this process freed \
             when it evicted the tree it built (run the sweep again on the same image for it)\n",
        );
    }
    let populate: f64 = r.rows.iter().map(|row| row.populate_s).sum();
    if let Some(last) = r.rows.last() {
        s.push_str(&format!(
            "populated {} inodes in {populate:.1} s\n",
            last.inodes
        ));
    }
    if r.interrupted {
        s.push_str("interrupted: the rows above are the steps that finished\n");
    }
    s
}

fn row_json(row: &SweepRow) -> Value {
    let mut m = Map::new();
    m.insert("inodes".into(), json!(row.inodes));
    m.insert("cached".into(), json!(row.cached));
    m.insert("populate_s".into(), json!(row.populate_s));
    for w in &row.ways {
        let name = w.way.name();
        m.insert(format!("{name}_min_s"), json!(w.spread.min_s));
        m.insert(format!("{name}_median_s"), json!(w.spread.median_s));
        m.insert(format!("{name}_max_s"), json!(w.spread.max_s));
    }
    m.insert("ratio".into(), json!(row.ratio()));
    Value::Object(m)
}

/// The sweep as JSON (see the module docs).
pub fn sweep_json(r: &SweepReport) -> Value {
    json!({
        "backend": r.backend,
        "populate": r.populate,
        "threads": r.threads,
        "syncs_per_step": r.syncs,
        "ways": r.rows.first().map(|row| [row.ways[0].way.name(), row.ways[1].way.name()]),
        "slab": r.slab,
        "prebuild_s": r.prebuild_s,
        "rss_bytes_per_inode": r.rss_bytes_per_inode,
        "interrupted": r.interrupted,
        "rows": r.rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

/// The sweep as CSV: a header line, then one line per step (the JSON rows' keys).
pub fn sweep_csv(r: &SweepReport) -> String {
    let Some(first) = r.rows.first() else {
        return "inodes,cached,populate_s,ratio\n".to_string();
    };
    let mut cols = vec!["inodes".to_string(), "cached".into(), "populate_s".into()];
    for w in &first.ways {
        for s in ["min", "median", "max"] {
            cols.push(format!("{}_{s}_s", w.way.name()));
        }
    }
    cols.push("ratio".into());
    let mut out = cols.join(",");
    out.push('\n');
    for row in &r.rows {
        let mut cells = vec![
            row.inodes.to_string(),
            row.cached.map(|c| c.to_string()).unwrap_or_default(),
            format!("{:.6}", row.populate_s),
        ];
        for w in &row.ways {
            for v in [w.spread.min_s, w.spread.median_s, w.spread.max_s] {
                cells.push(format!("{v:.9}"));
            }
        }
        cells.push(row.ratio().map(|x| format!("{x:.3}")).unwrap_or_default());
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::syncbench::sweep::{Spread, SyncWay, WayTimes};

    fn report() -> SweepReport {
        let spread = |m: f64| Spread {
            min_s: m / 2.0,
            median_s: m,
            max_s: m * 2.0,
        };
        SweepReport {
            backend: "labfs".into(),
            populate: "create",
            threads: 2,
            syncs: 3,
            slab: None,
            prebuild_s: 0.0,
            rows: vec![SweepRow {
                inodes: 1000,
                cached: Some(1003),
                populate_s: 0.5,
                ways: [
                    WayTimes {
                        way: SyncWay::Wblist,
                        spread: spread(0.000_01),
                    },
                    WayTimes {
                        way: SyncWay::All,
                        spread: spread(0.001),
                    },
                ],
            }],
            interrupted: false,
            rss_bytes_per_inode: None,
        }
    }

    #[test]
    fn json_rows_carry_each_ways_figures_under_its_name() {
        let v = sweep_json(&report());
        let row = &v["rows"][0];
        assert_eq!(row["inodes"], 1000);
        assert_eq!(row["wblist_median_s"], 0.000_01);
        assert_eq!(row["all_max_s"], 0.002);
        assert!((row["ratio"].as_f64().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn csv_has_a_header_and_a_line_per_row() {
        let csv = sweep_csv(&report());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "inodes,cached,populate_s,wblist_min_s,wblist_median_s,wblist_max_s,all_min_s,all_median_s,all_max_s,ratio"
        );
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1].starts_with("1000,1003,0.500000,0.000005000,"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with(",100.000"), "{}", lines[1]);
    }

    #[test]
    fn footer_gives_memory_per_inode_only_when_the_sweep_measured_it() {
        let mut r = report();
        r.rss_bytes_per_inode = Some(250.4);
        assert!(sweep_footer(&r).contains("grew 250 bytes per cached inode"));
        r.rss_bytes_per_inode = None;
        assert!(!sweep_footer(&r).contains("per cached inode"));
        r.prebuild_s = 90.0;
        assert!(sweep_footer(&r).contains("memory per cached inode not measured"));
    }

    #[test]
    fn table_names_the_ways_and_the_ratio() {
        let text = sweep_table(&report()).to_string();
        assert!(text.contains("wblist median"), "{text}");
        assert!(text.contains("all/wblist"), "{text}");
        assert!(text.contains("100.0x"), "{text}");
        assert!(text.contains("10.0us"), "{text}");
    }

    #[test]
    fn seconds_format_in_the_unit_that_reads() {
        assert_eq!(format_secs(7.3), "7.30s");
        assert_eq!(format_secs(0.04), "40.0ms");
        assert_eq!(format_secs(0.000_123), "123us");
        assert_eq!(format_secs(0.000_000_85), "850ns");
    }
}
