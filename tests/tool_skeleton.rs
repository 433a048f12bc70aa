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
