//! fsmark on labfs (the default target): the run works, the header names the backend, and the
//! XFS statistics it prints count exactly the work the run did.

use assert_cmd::Command;

fn fsmark(cwd: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fsmark"));
    c.current_dir(cwd);
    c
}

/// Field `index` of stat line `line` in a `/proc/fs/xfs/stat`-layout text.
fn field(text: &str, line: &str, index: usize) -> u64 {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(line))
        .and_then(|l| l.split_whitespace().nth(index + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {line}[{index}] in:\n{text}"))
}

#[test]
fn stats_count_the_runs_work_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let stats = tmp.path().join("stats.txt");
    let n = 500u64;
    let out = fsmark(tmp.path())
        .args([
            "-d",
            "/mnt/t",
            "-S",
            "1",
            "-s",
            "4096",
            "-n",
            &n.to_string(),
            "--stats-out",
        ])
        .arg(&stats)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("#\tBackend: labfs on mem:1GiB"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())),
        "a table row: {stdout}"
    );
    let s = std::fs::read_to_string(&stats).unwrap();
    // One directory entry created and one removed per file, plus the run's own setup: the
    // mkdir of /mnt/t (as fs_mark's children do) and fsmark's trial create/unlink that proves
    // the directory writable before printing the header.
    assert_eq!(field(&s, "dir", 1), n + 2, "dir creates");
    assert_eq!(field(&s, "dir", 2), n + 1, "dir removes");
    // One write() per 4 KiB file, one delayed-allocation conversion (xstrat) of 4096 bytes
    // each, and every byte written counted in xpc.
    assert_eq!(field(&s, "rw", 0), n, "write calls");
    assert_eq!(field(&s, "xstrat", 0), n, "xstrat quick");
    assert_eq!(field(&s, "xpc", 0), n * 4096, "xstrat bytes");
    assert_eq!(field(&s, "xpc", 1), n * 4096, "write bytes");
    // Each file's data block is allocated and freed; inode chunks come and go too.
    assert!(field(&s, "extent_alloc", 0) >= n && field(&s, "extent_alloc", 2) >= n);
    // What stays allocated after the unlink pass is only the directory's own blocks and its
    // inode chunk, a few dozen blocks, not the files' data.
    let kept = field(&s, "extent_alloc", 1) - field(&s, "extent_alloc", 3);
    assert!(kept < 64, "{kept} blocks still allocated");
    // The free-space and inode trees were really used.
    assert!(field(&s, "abtb2", 0) > 0 && field(&s, "abtc2", 2) > 0);
    assert!(field(&s, "ibt2", 0) > 0 && field(&s, "fibt2", 0) > 0);
    // Every file was created and then reclaimed from the inode cache when freed.
    assert!(field(&s, "vnodes", 4) >= n, "vnodes rele");
}

#[test]
fn a_file_device_keeps_files_between_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("lab.img");
    let dev = format!("file:{},size=64m", img.display());
    fsmark(tmp.path())
        .args([
            "--device", &dev, "-d", "/keep", "-k", "-s", "100", "-n", "50", "-S", "0",
        ])
        .assert()
        .success();
    // The second run mounts the same image: the 50 kept files are still there, and -k keeps
    // 50 more; both sets fit in the FSUse% arithmetic without a fresh mkfs.
    let out = fsmark(tmp.path())
        .args([
            "--device",
            &dev,
            "-d",
            "/keep",
            "-k",
            "-s",
            "100",
            "-n",
            "50",
            "-S",
            "0",
            "--stats-out",
        ])
        .arg(tmp.path().join("s.txt"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(tmp.path().join("s.txt")).unwrap();
    // 50 files plus fsmark's trial file; /keep already exists.
    assert_eq!(field(&s, "dir", 1), 51);
    assert_eq!(field(&s, "dir", 2), 1, "-k removes only the trial file");
}

#[test]
fn bad_target_flags_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["-d", "/x", "-o", "cksum=triple"], "cksum=triple"),
        (vec!["-d", "/x", "--device", "floppy:1"], "floppy"),
        (
            vec!["-d", "/x", "--fs", "host", "-o", "cksum=split"],
            "labfs only",
        ),
        (vec!["-d", "/x", "--fs", "zfs"], "zfs"),
    ] {
        let out = fsmark(tmp.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(needle) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn trace_records_writeback_list_events_and_counts_crc_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.txt");
    let out = fsmark(tmp.path())
        .args([
            "-d",
            "/t",
            "-S",
            "1",
            "-s",
            "4096",
            "-n",
            "20",
            "--trace",
            "sb_*_inode_writeback",
            "--trace-out",
        ])
        .arg(&trace)
        .args(["--trace-hist", "crc32c.len/site"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(t.starts_with("# tracer: nop"), "{t}");
    let marks = t
        .lines()
        .filter(|l| l.contains("sb_mark_inode_writeback:"))
        .count();
    let clears = t
        .lines()
        .filter(|l| l.contains("sb_clear_inode_writeback:"))
        .count();
    assert_eq!((marks, clears), (20, 20), "one write-back per fsync'd file");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("# histogram crc32c.len/site") && err.contains("[512, 1024)"),
        "{err}"
    );
}
