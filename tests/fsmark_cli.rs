//! The fsmark binary's command line: help, bad input (exit code and one line), options' visible
//! effects on a real directory, the JSON and latency extensions, and a closed stdout.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use assert_cmd::Command;

/// The binary, on the host's filesystems (these tests check fs_mark behaviour on real
/// directories; labfs runs are tested in `fsmark_lab.rs`).
fn fsmark() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fsmark"));
    c.args(["--fs", "host"]);
    c
}

/// Run in `cwd`; return (exit code, stdout, stderr).
fn run_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = fsmark().current_dir(cwd).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Assert a refused run: `code`, nothing on stdout, one `fsmark: ...` line on stderr that
/// contains `needle`.
fn assert_refused(args: &[&str], code: i32, needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run_in(tmp.path(), args);
    assert_eq!(rc, code, "{args:?}: stderr {err:?}");
    assert!(out.is_empty(), "{args:?}: stdout {out:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
    assert!(err.starts_with("fsmark: "), "{err:?}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(!err.contains("panicked"));
}

#[test]
fn help_goes_to_stdout_exits_0_and_mentions_threads_s7_and_extensions() {
    for flag in ["-h", "--help"] {
        let tmp = tempfile::tempdir().unwrap();
        let (rc, out, err) = run_in(tmp.path(), &[flag]);
        assert_eq!(rc, 0);
        assert!(err.is_empty());
        for needle in [
            "Usage",
            "-S",
            "7  fslab extension",
            "syncfs",
            "threads",
            "--json",
            "--latency",
            "exits 1",
            "-d",
        ] {
            assert!(out.contains(needle), "help lacks {needle:?}");
        }
    }
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["-x", "-d", "a"], "unexpected argument '-x'"),
        (&["-d", "a", "-n"], "a value is required for '-n'"),
        (&["-d", "a", "-n", "abc"], "invalid value 'abc' for '-n'"),
        (&["-d", "a", "-t", "two"], "invalid value 'two' for '-t'"),
        (&["-d", "a", "-s", "4q"], "invalid value '4q' for '-s'"),
        (&["-d", "a", "-n", "-3"], "invalid value '-3' for '-n'"),
        (&["-d", "a", "-n", "1000001"], "Max files is 1000000"),
        (&["-d", "a", "-n", "0"], "-n 0"),
        (&["-d", "a", "-p", "129"], "Max filename size is 128"),
        (&["-d", "a", "-r", "200"], "-r 200"),
        (&["-d", "a", "-t", "65"], "Max threads is 64"),
        (
            &["-d", "a", "-w", "1048577"],
            "MAX IO buffer size is 1048576",
        ),
        (&["-d", "a", "-w", "0"], "-w 0"),
        (&["-d", "a", "-S", "8"], "-S 8"),
        (
            &["-d", "a", "-D", "1"],
            "Number of subdirs needs to be greater than 1",
        ),
        (
            &["-d", "a", "-N", "4"],
            "Must specify at more than 1 subdirectory with -D",
        ),
        (
            &["-n", "5"],
            "Must specify at least one directory with -d switch",
        ),
        (
            &["-d", "a", "-d", "b", "-t", "3"],
            "Threads (3) must be an even multiple the number of directories (2)",
        ),
    ];
    for (args, needle) in cases {
        assert_refused(args, 2, needle);
    }
    let many: Vec<String> = (0..65)
        .flat_map(|i| ["-d".to_string(), format!("d{i}")])
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_refused(&many, 2, "Max number of threads (and directories) is 64");
}

#[test]
fn unusable_directories_exit_1_with_one_line_and_no_table() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let missing = tmp.path().join("no/such/parent");
    assert_refused(
        &["-d", missing.to_str().unwrap(), "-n", "2"],
        1,
        "No such file or directory",
    );
    assert_refused(
        &["-d", file.to_str().unwrap(), "-n", "2"],
        1,
        "is not a directory",
    );
    // /proc takes no new files, even from root.
    assert_refused(
        &["-d", "/proc", "-n", "2"],
        1,
        "cannot create files in /proc",
    );
}

#[test]
fn unopenable_log_file_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("missing/log.txt");
    let d = tmp.path().join("d");
    assert_refused(
        &[
            "-d",
            d.to_str().unwrap(),
            "-n",
            "2",
            "-l",
            log.to_str().unwrap(),
        ],
        1,
        "cannot open log file",
    );
}

#[test]
fn long_paths_are_fine() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = tmp.path().to_path_buf();
    while d.as_os_str().len() < 1100 {
        d.push("a_rather_long_directory_name_to_pass_fs_marks_limit");
    }
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    let (rc, out, err) = run_in(
        tmp.path(),
        &["-d", d.to_str().unwrap(), "-n", "2", "-S", "0"],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("p99 Files/sec"));
}

fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn options_change_what_is_created_and_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    let ds = d.to_str().unwrap();

    // Default: files are unlinked; -k keeps them, with -s bytes each and -p/-r names.
    let (rc, out, _) = run_in(tmp.path(), &["-d", ds, "-n", "3", "-s", "0", "-S", "0"]);
    assert_eq!(rc, 0);
    assert!(files_under(&d).is_empty());
    assert!(out.contains("#\tSync method: NO SYNC"));
    let (rc, out, _) = run_in(
        tmp.path(),
        &[
            "-d", ds, "-n", "3", "-s", "1234", "-w", "100", "-S", "0", "-k", "-p", "20", "-r", "4",
        ],
    );
    assert_eq!(rc, 0);
    let files = files_under(&d);
    assert_eq!(files.len(), 3);
    for f in &files {
        assert_eq!(std::fs::metadata(f).unwrap().len(), 1234);
        let name = f.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 20);
        assert_eq!(&name[8..16], "~~~~~~~~");
    }
    assert!(
        out.contains("File names: 20 bytes long, (16 initial bytes of time stamp with 4 random")
    );
    assert!(out.contains("Files info: size 1234 bytes, written with an IO size of 100 bytes"));

    // -L 3: three rows, cumulative count, files kept; -t 2 in one dir.
    let e = tmp.path().join("e");
    let es = e.to_str().unwrap();
    let (rc, out, _) = run_in(
        tmp.path(),
        &[
            "-d", es, "-t", "2", "-n", "4", "-s", "0", "-S", "0", "-L", "3",
        ],
    );
    assert_eq!(rc, 0);
    let r = rows(&out);
    assert_eq!(r.len(), 3);
    assert_eq!(
        r.iter().map(|r| r[1].as_str()).collect::<Vec<_>>(),
        ["8", "16", "24"]
    );
    assert!(out.contains("Version 3.3, 2 thread(s) starting at"));
    assert_eq!(files_under(&e).len(), 24);

    // -D without -N: time hash into %02x subdirectories.
    let f = tmp.path().join("f");
    let (rc, out, _) = run_in(
        tmp.path(),
        &[
            "-d",
            f.to_str().unwrap(),
            "-n",
            "5",
            "-s",
            "0",
            "-S",
            "0",
            "-k",
            "-D",
            "16",
        ],
    );
    assert_eq!(rc, 0);
    assert!(out.contains("Time based hash between directories across 16 subdirectories with 180 seconds per subdirectory."));
    let sub = std::fs::read_dir(&f).unwrap().next().unwrap().unwrap();
    let name = sub.file_name().into_string().unwrap();
    assert!(name.len() == 2 && u8::from_str_radix(&name, 16).unwrap() < 16);

    // -v: 23 numbers per row; -S 2: SYNC min and max are 0.
    let (rc, out, _) = run_in(
        tmp.path(),
        &["-d", ds, "-n", "3", "-s", "0", "-S", "2", "-v"],
    );
    assert_eq!(rc, 0);
    let r = &rows(&out)[0];
    assert_eq!(r.len(), 23);
    assert_eq!((r[14].as_str(), r[16].as_str()), ("0", "0"));
}

#[test]
fn fill_mode_on_a_full_filesystem_is_an_error_and_prints_no_table() {
    // No filesystem here has 1000 x 1 PiB free: the first check fails, in -F too.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    assert_refused(
        &["-d", d.to_str().unwrap(), "-n", "1000", "-s", "1p", "-F"],
        1,
        "Insufficient free space in",
    );
}

#[test]
fn json_file_has_one_entry_per_loop_and_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("out.json");
    let (rc, out, err) = run_in(
        tmp.path(),
        &[
            "-d",
            "d",
            "-n",
            "5",
            "-s",
            "100",
            "-S",
            "4",
            "-L",
            "2",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(!out.contains("latency"), "--json alone leaves stdout alone");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["tool"], "fsmark");
    assert_eq!(v["config"]["sync_method"], 4);
    let loops = v["loops"].as_array().unwrap();
    assert_eq!(loops.len(), 2);
    assert_eq!(loops[1]["count"], 10);
    assert_eq!(loops[0]["files"], 5);
    assert_eq!(loops[0]["latency_us"]["creat"]["samples"], 5);
    assert_eq!(loops[0]["latency_us"]["fsync"]["samples"], 5);
    assert_eq!(loops[0]["latency_us"]["sync"]["samples"], 1);
    assert!(
        loops[0]["latency_us"]["unlink"]["p50"].is_null(),
        "-L keeps files"
    );
    for k in ["p50", "p90", "p99", "p99_9", "max"] {
        assert!(loops[0]["latency_us"]["write"][k].is_u64(), "{k}");
    }
    let rate = rows(&out)[0][3].parse::<f64>().unwrap();
    assert_eq!(loops[0]["files_per_sec"].as_f64().unwrap(), rate);
    assert_eq!(v["summary"]["ended_by"], "completed");
    assert!(v["summary"]["p50_files_per_sec"].is_u64());
}

#[test]
fn latency_flag_prints_a_table_after_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, _) = run_in(
        tmp.path(),
        &["-d", "d", "-n", "4", "-s", "0", "-S", "1", "--latency"],
    );
    assert_eq!(rc, 0);
    let summary = out.find("p99 Files/sec").unwrap();
    let table = out.find("p99.9 (us)").unwrap();
    assert!(table > summary);
    for k in ["creat", "write", "fsync", "close", "unlink"] {
        assert!(out[table..].contains(k), "{k}");
    }
    assert!(!out[table..].contains("| sync "), "no sync() under -S 1");
}

#[test]
fn no_progress_output_when_stderr_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, _, err) = run_in(tmp.path(), &["-d", "d", "-n", "20", "-s", "0", "-S", "0"]);
    assert_eq!(rc, 0);
    assert!(err.is_empty());
}

#[test]
fn closed_stdout_ends_the_run_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fsmark"))
        .current_dir(tmp.path())
        .args([
            "--fs", "host", "-d", "d", "-n", "3000", "-s", "0", "-S", "0", "-L", "50",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone: the next row hits a broken pipe.
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
