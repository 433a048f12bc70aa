//! The csumhist binary: its tables, JSON, stat block, bench, plot, and refusals.

use assert_cmd::Command;
use serde_json::Value;

fn csumhist() -> Command {
    Command::cargo_bin("csumhist").expect("binary")
}

fn stdout_of(args: &[&str]) -> String {
    let out = csumhist().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json_of(args: &[&str]) -> Value {
    serde_json::from_str(&stdout_of(args)).expect("json on stdout")
}

/// The table row whose first cell is `first`, split into cells.
fn row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    text.lines()
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .find(|cells| cells.first() == Some(&first))
        .unwrap_or_else(|| panic!("no row {first} in\n{text}"))
}

#[test]
fn run_split_prints_the_seeds_table_and_structures() {
    let text = stdout_of(&["run", "--cksum", "split", "--ops", "120"]);
    assert!(
        text.contains("csumhist: fsmark -d /csumhist -n 120 -s 4096 -S 1"),
        "{text}"
    );
    assert!(text.contains("== cksum=split: 120 files of 4096 bytes created (-S 1), removed"));
    for h in [
        "freq% total",
        "freq% head",
        "freq% tail",
        "bytes% total",
        "bytes% head",
        "bytes% tail",
    ] {
        assert!(text.contains(h), "{h}");
    }
    // Buckets are labelled with their byte range.
    let r = row(&text, "6");
    assert_eq!(r[1], "[64, 128)");
    assert_ne!(r[3], "0.00", "100-byte inode heads");
    let r = row(&text, "2");
    assert_eq!(r[1], "[4, 8)");
    assert_ne!(r[3], "0.00", "4-byte dir heads");
    // The per-structure breakdown: inode 512 = 100 + 4 + 408, three crc32c calls each.
    let inode = row(&text, "inode");
    assert_eq!(&inode[5..8], &["512", "100", "408"]);
    let calls: u64 = inode[2].parse().expect("calls");
    assert_eq!(inode[8], (3 * calls).to_string());
    let dir = row(&text, "dir3_data");
    assert_eq!(&dir[5..8], &["4096", "4", "4088"]);
    assert!(!text.contains("vs cksum="), "one mode, no comparison");
}

#[test]
fn both_modes_in_json_have_the_same_totals_and_single_has_no_head_or_tail() {
    let doc = json_of(&["run", "--ops", "80", "--json", "-"]);
    let runs = doc["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    let (single, split) = (&runs[0], &runs[1]);
    assert_eq!(single["cksum"], "single");
    assert_eq!(split["cksum"], "split");
    assert_eq!(single["checksums"], split["checksums"]);
    assert_eq!(single["bytes"], split["bytes"]);
    let n = |v: &Value| v.as_u64().expect("number");
    assert_eq!(n(&split["crc32c_calls"]), 3 * n(&single["crc32c_calls"]));
    assert!(n(&single["small_calls"]) < n(&split["small_calls"]));
    for b in single["buckets"].as_array().expect("buckets") {
        assert_eq!(b["calls"]["head"], 0, "{b}");
        assert_eq!(b["calls"]["tail"], 0, "{b}");
    }
    // The same total column, bucket for bucket.
    let totals = |r: &Value| -> Vec<(u64, u64)> {
        r["buckets"]
            .as_array()
            .expect("buckets")
            .iter()
            .filter(|b| n(&b["calls"]["total"]) > 0)
            .map(|b| (n(&b["lo"]), n(&b["calls"]["total"])))
            .collect()
    };
    assert_eq!(totals(single), totals(split));
    let inode = split["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .find(|s| s["site"] == "inode")
        .expect("inode");
    assert_eq!(inode["len"], 512);
    assert_eq!(inode["heads"], serde_json::json!([100]));
    assert_eq!(inode["tail"], 408);
    assert_eq!(doc["small_below"], 512);
    assert_eq!(doc["calls"], "update");
}

#[test]
fn both_modes_print_the_side_by_side_comparison() {
    let text = stdout_of(&["run", "--ops", "60", "--small-below", "1k"]);
    assert!(text.contains("cksum=single vs cksum=split"), "{text}");
    let calls = row(&text, "crc32c calls");
    assert_eq!(
        calls[3], "3.00",
        "split makes three calls per structure: {calls:?}"
    );
    let bytes = row(&text, "bytes checksummed");
    assert_eq!(bytes[1], bytes[2]);
    assert_eq!(bytes[3], "1.00");
    assert!(text.contains("calls under 1024 bytes"));
    assert!(text.contains("crc32c calls per second"));
}

#[test]
fn any_fsmark_command_line_runs_after_the_separator() {
    let text = stdout_of(&[
        "run", "--cksum", "split", "--", "fsmark", "-d", "/t/x", "-n", "30", "-s", "0", "-S", "1",
        "-k",
    ]);
    assert!(
        text.contains("csumhist: fsmark -d /t/x -n 30 -s 0 -S 1 -k"),
        "{text}"
    );
    assert!(
        text.contains("30 files of 0 bytes created (-S 1), kept"),
        "{text}"
    );
    let inode = row(&text, "inode");
    assert_eq!(&inode[5..8], &["512", "100", "408"]);
}

#[test]
fn oltp_profile_runs_on_labfs() {
    let text = stdout_of(&[
        "run",
        "--profile",
        "oltp",
        "--ops",
        "64",
        "--cksum",
        "split",
    ]);
    assert!(text.contains("64 writes"), "{text}");
    let inode = row(&text, "inode");
    assert_eq!(&inode[5..8], &["512", "100", "408"]);
}

#[test]
fn stat_prints_the_block_and_its_decoding() {
    let text = stdout_of(&["stat", "--ops", "40"]);
    let dir = text
        .lines()
        .find(|l| l.starts_with("dir "))
        .expect("dir line");
    let fields: Vec<u64> = dir
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().expect("number"))
        .collect();
    assert_eq!(fields[1], 41, "40 files and fs_mark's probe created: {dir}");
    assert!(text.contains("create = 41"), "{text}");
}

#[test]
fn bench_writes_json_rows_breakeven_and_an_svg_plot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("crc.svg");
    let svg_arg = svg.to_str().expect("path");
    let doc = json_of(&[
        "bench", "--time", "1ms", "--rounds", "1", "--json", "-", "--plot", svg_arg,
    ]);
    let rows = doc["rows"].as_array().expect("rows");
    let sizes: Vec<u64> = rows
        .iter()
        .map(|r| r["size"].as_u64().expect("size"))
        .collect();
    assert_eq!(sizes.first(), Some(&4));
    assert_eq!(sizes.last(), Some(&(1 << 20)));
    assert!(sizes.contains(&328) && sizes.contains(&4096));
    for r in rows {
        for e in ["crc32c", "fast", "soft"] {
            assert!(
                r[format!("{e}_gbps")].as_f64().is_some_and(|g| g > 0.0),
                "{r}"
            );
        }
    }
    assert!(doc.get("breakeven").is_some());
    assert_eq!(
        doc["breakeven_engines"],
        serde_json::json!(["crc32c", "fast"])
    );
    let plot = std::fs::read_to_string(&svg).expect("svg written");
    assert!(plot.starts_with("<svg"), "{}", &plot[..plot.len().min(80)]);
    assert!(plot.contains("crc32c") && plot.contains("fast") && plot.contains("soft"));
}

#[test]
fn bench_text_reports_paths_breakeven_and_unsupported_counters() {
    let text = stdout_of(&["bench", "--time", "1ms", "--rounds", "1"]);
    assert!(text.contains("engine:   crc32c: "), "{text}");
    assert!(text.contains("engine:   fast: "));
    assert!(text.contains("breakeven: fast "));
    assert!(text.contains("crc32c GB/s") && text.contains("fast/crc32c"));
    assert!(text.contains("task-clock ns/B"));
}

#[test]
fn refusals_are_one_line_and_exit_2() {
    for args in [
        &["run", "--small-below", "500"][..],
        &["run", "--fs", "host"],
        &["run", "--cksum", "sideways"],
        &["run", "--profile", "tpcc"],
        &["run", "--", "-d", "/x", "-n", "0"],
        &["bench", "--rounds", "0"],
        &["bench", "--time", "0"],
        &["frobnicate"],
    ] {
        let out = csumhist().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("csumhist: "), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn an_unwritable_output_fails_before_any_work() {
    let out = csumhist()
        .args(["run", "--json", "/nonexistent/dir/out.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot open --json file /nonexistent/dir/out.json"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let out = csumhist()
        .args(["bench", "--plot", "/nonexistent/dir/p.svg"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open --plot file"));
}
