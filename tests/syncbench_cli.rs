//! The syncbench binary: a small sweep on labfs and on the host (the CI-sized run), its JSON,
//! CSV, table and plot, stat population, and refusals.

use assert_cmd::Command;
use serde_json::Value;

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").expect("binary")
}

fn stdout_of(args: &[&str]) -> String {
    let out = syncbench().args(args).output().expect("runs");
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

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().expect("rows")
}

#[test]
fn a_small_labfs_sweep_reports_both_modes_at_every_step() {
    let v = json_of(&[
        "sweep",
        "--max-inodes",
        "3000",
        "--steps",
        "3",
        "--syncs",
        "2",
        "--json",
        "-",
    ]);
    assert_eq!(v["ways"], serde_json::json!(["wblist", "all"]));
    let rows = rows(&v);
    let inodes: Vec<u64> = rows.iter().map(|r| r["inodes"].as_u64().unwrap()).collect();
    assert_eq!(inodes, vec![30, 300, 3000]);
    for r in rows {
        let n = r["inodes"].as_u64().unwrap();
        let cached = r["cached"].as_u64().unwrap();
        // Every file, its directory, the tree's root and labfs's root are cached.
        assert!(cached >= n + 2 && cached <= n + 5, "{r}");
        for way in ["wblist", "all"] {
            let (min, med, max) = (
                r[format!("{way}_min_s")].as_f64().unwrap(),
                r[format!("{way}_median_s")].as_f64().unwrap(),
                r[format!("{way}_max_s")].as_f64().unwrap(),
            );
            assert!(min > 0.0 && min <= med && med <= max, "{way}: {r}");
        }
        assert!(r["ratio"].as_f64().is_some(), "{r}");
    }
    assert_eq!(v["interrupted"], false);
}

#[test]
fn the_table_csv_and_plot_come_from_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("s.csv");
    let svg = dir.path().join("s.svg");
    let json = dir.path().join("s.json");
    let text = stdout_of(&[
        "sweep",
        "--max-inodes",
        "200",
        "--steps",
        "2",
        "--syncs",
        "1",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(text.contains("wblist median"), "{text}");
    assert!(text.contains("all/wblist"), "{text}");
    assert!(text.contains("populated 200 inodes"), "{text}");
    let csv = std::fs::read_to_string(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("inodes,cached,populate_s,wblist_min_s"));
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[2].starts_with("200,"), "{csv}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("wblist") && svg.contains("all"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(rows(&v).len(), 2);
}

#[test]
fn stat_population_refills_an_emptied_cache() {
    let v = json_of(&[
        "sweep",
        "--populate",
        "stat",
        "--max-inodes",
        "2000",
        "--min-inodes",
        "500",
        "--steps",
        "2",
        "--syncs",
        "1",
        "--json",
        "-",
    ]);
    assert!(
        v["prebuild_s"].as_f64().unwrap() > 0.0,
        "the tree was built"
    );
    let rows = rows(&v);
    let first = &rows[0];
    assert_eq!(first["inodes"], 500);
    // The build's 2000 inodes were evicted: the cache holds what the stats read back.
    let cached = first["cached"].as_u64().unwrap();
    assert!((502..=510).contains(&cached), "{first}");
    assert_eq!(rows[1]["inodes"], 2000);
}

#[test]
fn a_host_sweep_times_sync_and_syncfs_in_a_real_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("sb");
    let v = json_of(&[
        "sweep",
        "--fs",
        "host",
        "-d",
        tree.to_str().unwrap(),
        "--max-inodes",
        "300",
        "--steps",
        "2",
        "--syncs",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(v["ways"], serde_json::json!(["syncfs", "sync"]));
    let rows = rows(&v);
    assert_eq!(rows.len(), 2);
    assert!(rows[1]["syncfs_median_s"].as_f64().unwrap() > 0.0);
    assert!(rows[1]["sync_median_s"].as_f64().unwrap() > 0.0);
    let made = std::fs::read_dir(tree.join("d00000")).unwrap().count();
    assert_eq!(made, 300);
    // The slab column is there when the kernel's slabinfo is readable (root).
    if std::fs::read_to_string("/proc/slabinfo").is_ok() && !v["slab"].is_null() {
        assert!(rows[1]["cached"].as_u64().is_some(), "{v}");
    }
}

#[test]
fn refusals_are_one_line_and_exit_2() {
    for args in [
        &["sweep", "--max-inodes", "0"][..],
        &["sweep", "--max-inodes", "10", "--fs", "host"][..],
        &["sweep"][..],
        &["sweep", "--max-inodes", "10", "--syncs", "0"][..],
    ] {
        let out = syncbench().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("syncbench: "), "{err}");
    }
}

#[test]
fn a_bad_output_path_fails_before_any_work() {
    let out = syncbench()
        .args([
            "sweep",
            "--max-inodes",
            "100",
            "--json",
            "/nonexistent/dir/x.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--json file /nonexistent/dir/x.json"), "{err}");
}

#[test]
fn the_fsmark_mode_prints_both_modes_tables_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("rate.svg");
    let text = stdout_of(&[
        "fsmark",
        "--preload",
        "500",
        "--plot",
        svg.to_str().unwrap(),
        "--",
        "-d",
        "/f/0",
        "-d",
        "/f/1",
        "-n",
        "20",
        "-s",
        "0",
        "-S",
        "4",
        "-L",
        "3",
    ]);
    let head = text
        .lines()
        .find(|l| l.starts_with("sync_wait=all"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(head.contains("sync_wait=wblist"), "{text}");
    let titles = text
        .lines()
        .find(|l| l.starts_with("FSUse%"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(titles.matches("Files/sec").count(), 2, "{text}");
    // Three loops of 2 x 20 files: Count 40, 80, 120 in both halves.
    for count in ["40", "80", "120"] {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(count))
            .unwrap_or_else(|| panic!("no Count {count} in\n{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.len(), 11, "{row}");
        assert_eq!(cells[7], count, "{row}");
    }
    assert!(text.contains("files/sec in loop 1"), "{text}");
    assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
}

#[test]
fn the_fsmark_mode_refuses_a_line_without_sync() {
    let out = syncbench()
        .args(["fsmark", "--", "-d", "/x", "-S", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-S 1 makes no sync() call"), "{err}");
}
