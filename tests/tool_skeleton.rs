//! The tool skeleton as a user meets it through fsmark: output files are created before any
//! work, and flags that make no sense together are refused with one line and exit 2 before
//! anything is touched.

use std::path::Path;

use assert_cmd::Command;

/// Run fsmark in `cwd`; return (exit code, stdout, stderr).
fn run_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One line on stderr, `fsmark: ...`, containing `needle`; nothing on stdout.
fn assert_one_line(args: &[&str], rc: i32, out: &str, err: &str, code: i32, needle: &str) {
    assert_eq!(rc, code, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?}: stdout {out:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
    assert!(err.starts_with("fsmark: "), "{err:?}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
}

#[test]
fn every_output_file_is_created_before_any_work() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("lab.img");
    let device = format!("file:{},size=16m", image.display());
    let bad = tmp.path().join("missing/dir/out");
    let bad = bad.to_str().expect("utf-8 path");
    let cases: [(&[&str], &str); 4] = [
        (&["--stats-out", bad], "cannot open --stats-out file"),
        (
            &["--trace", "xfs_log_force", "--trace-out", bad],
            "cannot open --trace-out file",
        ),
        (&["--json", bad], "cannot open --json file"),
        (&["-l", bad], "cannot open log file"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["-d", "/bench", "-n", "100", "-s", "0", "--device", &device];
        args.extend_from_slice(extra);
        let (rc, out, err) = run_in(tmp.path(), &args);
        assert_one_line(&args, rc, &out, &err, 1, needle);
        assert!(err.contains(bad), "names the file: {err}");
        // Refused before the device was opened: the image was never created.
        assert!(!image.exists(), "{extra:?}: the device was opened");
    }
}

#[test]
fn flags_that_make_no_sense_together_are_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path().join("d");
    let d = d.to_str().expect("utf-8 path");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--fs", "host", "--device", "mem:4g"],
            "--device applies to labfs only",
        ),
        (
            &["--fs", "host", "-o", "cksum=split"],
            "-o applies to labfs only",
        ),
        (&["--fs", "host", "--mkfs"], "--mkfs applies to labfs only"),
        (&["--trace-out", "t.txt"], "--trace-out needs --trace"),
        (&["--trace", ""], "--trace '' selects no events"),
        (&["--trace", ",,,"], "--trace ',,,' selects no events"),
        (&["--trace", "!crc32c"], "selects no events"),
        (
            &["--trace", "xfs_nosuch"],
            "no trace event matches 'xfs_nosuch'",
        ),
        (
            &["--trace", "crc32c", "--trace-buffer", "0"],
            "--trace-buffer 0",
        ),
        (&["-t", "0"], "-t 0: at least 1 thread"),
        (&["-p", "0"], "-p 0 -r 24:"),
        (&["-p", "40", "-r", "41"], "-p 40 -r 41:"),
        (
            &["-r", "0"],
            "-r 0: names made in the same second would all be the same",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["--fs", "host", "-d", d, "-n", "10", "-s", "0"];
        if extra.first() == Some(&"--fs") {
            args.drain(..2);
        }
        args.extend_from_slice(extra);
        let (rc, out, err) = run_in(tmp.path(), &args);
        assert_one_line(&args, rc, &out, &err, 2, needle);
        assert!(!Path::new(d).exists(), "{args:?}: the run started");
        assert!(!tmp.path().join("t.txt").exists());
        assert!(
            !tmp.path().join("fs_log.txt").exists(),
            "{args:?}: log opened"
        );
    }
}

#[test]
fn out_of_range_options_and_too_small_devices_are_refused_where_typed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases: &[(&[&str], &str)] = &[
        (
            &["-o", "logsize=0"],
            "bad mount option 'logsize=0': must be 256k..2g",
        ),
        (&["-o", "logsize=1t"], "bad mount option 'logsize=1t'"),
        (
            &["-o", "bufcache=0"],
            "bad mount option 'bufcache=0': must be at least 1m",
        ),
        (&["-o", "dirty=0"], "bad mount option 'dirty=0'"),
        (&["--device", "mem:4k"], "smaller than the 1MiB labfs needs"),
        (
            &["--device", "stripe:2,mem:256k"],
            "holds 512KiB, less than the 1MiB labfs needs",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["-d", "/bench", "-n", "10", "-s", "0"];
        args.extend_from_slice(extra);
        let (rc, out, err) = run_in(tmp.path(), &args);
        assert_one_line(&args, rc, &out, &err, 2, needle);
    }
    // The smallest device the grammar accepts is one mkfs can make, and the run works.
    let (rc, out, err) = run_in(
        tmp.path(),
        &["-d", "/bench", "-n", "10", "-s", "0", "--device", "mem:1m"],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("p99 Files/sec"), "{out}");
    // A geometry that cannot fit the device is refused by mkfs (a run failure), not shrunk.
    let (rc, out, err) = run_in(
        tmp.path(),
        &["-d", "/b", "--device", "mem:16m", "-o", "agcount=17"],
    );
    assert_one_line(&[], rc, &out, &err, 1, "agcount too large for this device");
}

#[test]
fn stats_decode_warns_when_counters_go_backwards_and_refuses_a_cut_line() {
    use fslab::fs::stats::{Stat, XfsStats};
    let tmp = tempfile::tempdir().expect("tempdir");
    let st = XfsStats::with_shards(1);
    st.add(Stat::Allocx, 120_000);
    let old = tmp.path().join("old.txt");
    std::fs::write(&old, st.snapshot().render()).expect("write");
    st.add(Stat::Allocx, 17_238);
    let new = tmp.path().join("new.txt");
    std::fs::write(&new, st.snapshot().render()).expect("write");
    let (old, new) = (old.to_str().expect("utf-8"), new.to_str().expect("utf-8"));

    // In order: the difference, no warning.
    let (rc, out, err) = run_in(tmp.path(), &["--stats-decode", old, new]);
    assert_eq!((rc, err.as_str()), (0, ""));
    assert!(out.contains("extent_alloc: allocx = 17238 "), "{out}");

    // Swapped: still decoded (the user may want to see it), with one warning line.
    let (rc, out, err) = run_in(tmp.path(), &["--stats-decode", new, old]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("allocx = 4294950058"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "fsmark: warning: 1 counter went backwards (extent_alloc allocx 137238 -> 120000)"
        ) && err.contains("swapped or from different boots"),
        "{err}"
    );

    // Cut short (the last line lost its end): refused, naming the line.
    let text = st.snapshot().render();
    let cut = tmp.path().join("cut.txt");
    std::fs::write(&cut, &text[..text.len() - 4]).expect("write");
    let args = ["--stats-decode", cut.to_str().expect("utf-8")];
    let (rc, out, err) = run_in(tmp.path(), &args);
    assert_one_line(&args, rc, &out, &err, 1, "line 31 is cut short");
}

/// The `# xfs stats for ...` titles on stderr, in order.
fn stat_blocks(err: &str) -> Vec<&str> {
    err.lines()
        .filter_map(|l| l.strip_prefix("# xfs stats for "))
        .collect()
}

#[test]
fn stats_print_one_block_for_one_loop_and_one_per_loop_plus_the_run_for_several() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = ["-d", "/bench", "-n", "20", "-s", "0", "-S", "0", "--stats"];
    let (rc, _, err) = run_in(tmp.path(), &base);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(stat_blocks(&err), ["the run"], "{err}");

    let mut looped = base.to_vec();
    looped.extend_from_slice(&["-L", "3"]);
    let (rc, _, err) = run_in(tmp.path(), &looped);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        stat_blocks(&err),
        ["loop 1", "loop 2", "loop 3", "the run"],
        "{err}"
    );
}
