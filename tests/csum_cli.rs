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
        text.contains("csumhist: fsmark -d /csumhist -n 120 -s 4096 -S 1 -k"),
        "{text}"
    );
    assert!(text.contains("== cksum=split: 120 files of 4096 bytes created (-S 1), kept"));
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
    let r = row(&text, "5");
    assert_eq!(r[1], "[32, 64)");
    assert_ne!(r[3], "0.00", "32-byte log record header heads");
    let r = row(&text, "8");
    assert_eq!(r[1], "[256, 512)");
    assert_ne!(r[2], "0.00", "328-byte log record headers");
    // The per-structure breakdown: inode 512 = 100 + 4 + 408, three crc32c calls each.
    let calls = |r: &[&str]| -> u64 { r[2].parse().expect("calls") };
    let inode = row(&text, "inode");
    assert_eq!(&inode[5..8], &["512", "100", "408"]);
    assert_eq!(inode[8], (3 * calls(&inode)).to_string());
    // A log record per fsync: its 328-byte header split 32 + 4 + 292 (a mean: 328 is no
    // bucket bound), its payload one whole call.
    let header = row(&text, "log_rec_header");
    assert_eq!(header[1], "log record header");
    assert_eq!(&header[5..8], &["~328", "32", "~292"]);
    assert!(calls(&header) >= 120, "{header:?}");
    assert_eq!(header[8], (3 * calls(&header)).to_string());
    let payload = row(&text, "log_payload");
    assert_eq!(&payload[6..8], &["-", "-"]);
    assert_eq!(calls(&payload), calls(&header), "one payload per record");
    assert_eq!(payload[8], payload[2]);
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
    // Three calls per structure with a CRC field, one per log payload (no field).
    let sites = |r: &Value| r["sites"].as_array().expect("sites").clone();
    let whole: u64 = sites(split)
        .iter()
        .filter(|s| s["heads"].as_array().is_some_and(Vec::is_empty))
        .inspect(|s| assert_eq!(s["crc32c_calls"], s["calls"], "{s}"))
        .map(|s| n(&s["calls"]))
        .sum();
    let payload = sites(split)
        .into_iter()
        .find(|s| s["site"] == "log_payload")
        .expect("log payload");
    assert_eq!(
        n(&payload["calls"]),
        whole,
        "no other structure lacks a field"
    );
    assert_eq!(
        n(&split["crc32c_calls"]),
        3 * n(&single["crc32c_calls"]) - 2 * whole
    );
    assert_eq!(n(&single["crc32c_calls"]), n(&single["checksums"]));
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
    let header = sites(split)
        .into_iter()
        .find(|s| s["site"] == "log_rec_header")
        .expect("log record header");
    assert_eq!(header["len"], serde_json::json!({"mean": 328.0}));
    assert_eq!(header["heads"], serde_json::json!([32]));
    assert_eq!(doc["small_below"], 512);
    assert_eq!(doc["calls"], "update");
}

#[test]
fn both_modes_print_the_side_by_side_comparison() {
    let text = stdout_of(&["run", "--ops", "60", "--small-below", "1k"]);
    assert!(text.contains("cksum=single vs cksum=split"), "{text}");
    // Split makes three calls per structure with a CRC field; the log payloads (the first
    // structure table's row: the same workload in both modes) stay one call each.
    let calls = row(&text, "crc32c calls");
    let [single, split]: [u64; 2] = [1, 2].map(|i| calls[i].parse().expect("calls"));
    let payloads: u64 = row(&text, "log_payload")[2].parse().expect("calls");
    assert!(payloads > 0);
    assert_eq!(split, 3 * single - 2 * payloads, "{calls:?}");
    assert_eq!(calls[3], format!("{:.2}", split as f64 / single as f64));
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
    // The kept files' directory (one block) goes home at the end of the measured phase.
    let dir = row(&text, "dir3_block");
    assert_eq!(&dir[5..8], &["4096", "4", "4088"]);
}

#[test]
fn any_fiolike_command_line_runs_after_the_separator() {
    let text = stdout_of(&[
        "run",
        "--cksum",
        "split",
        "--",
        "fiolike",
        "--name=j",
        "--rw=randwrite",
        "--bs=16k",
        "--size=1m",
        "--fsync=2",
    ]);
    assert!(
        text.contains("csumhist: fiolike --name=j --rw=randwrite --bs=16k --size=1m --fsync=2"),
        "{text}"
    );
    assert!(text.contains("0 reads, 64 writes"), "{text}");
    let inode = row(&text, "inode");
    assert_eq!(&inode[5..8], &["512", "100", "408"]);
}

#[test]
fn a_fio_job_file_runs_after_the_separator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("j.fio");
    std::fs::write(
        &file,
        "[global]\nbs=4k\nsize=512k\n[w]\nrw=write\nfsync=8\n",
    )
    .expect("job file");
    let path = file.to_str().expect("utf-8 path");
    let text = stdout_of(&["run", "--cksum", "single", "--", "fiolike", path]);
    assert!(text.contains("0 reads, 128 writes"), "{text}");
    let inode = row(&text, "inode");
    assert_eq!(inode[5], "512");
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
        &[
            "run",
            "--",
            "fiolike",
            "--name=j",
            "--rw=sideways",
            "--size=1m",
        ],
        &["run", "--", "fiolike", "--frobnicate"],
        &[
            "run",
            "--",
            "fiolike",
            "--name=j",
            "--size=1m",
            "--output=x",
        ],
        &["run", "--", "fiolike", "/nonexistent/job.fio"],
        &[
            "run",
            "--ops",
            "5",
            "--",
            "fiolike",
            "--name=j",
            "--size=1m",
        ],
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
