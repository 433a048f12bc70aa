//! `fsmark --fs host --stats` on a real XFS filesystem: the kernel's own counters for the run.
//!
//! Needs the xfs module, root, loop devices and mkfs.xfs (xfsprogs), so it is ignored unless
//! asked for: `cargo test --release -- --ignored kernel_xfs` (see `tests/common`). Asked for
//! on a machine that cannot mount XFS, it fails saying why.

mod common;

mod kernel_xfs {
    use std::process::Command;

    use super::common::xfs::XfsMount;

    fn field(text: &str, line: &str, index: usize) -> u64 {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(line))
            .and_then(|l| l.split_whitespace().nth(index + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {line}[{index}] in:\n{text}"))
    }

    #[test]
    #[ignore = "kernel XFS: needs root, loop devices and mkfs.xfs; run with --ignored kernel_xfs"]
    fn fsmark_on_xfs_reports_the_kernels_counters_for_the_run() {
        let m = XfsMount::new(512 << 20);
        let work = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
            .current_dir(work.path())
            .args(["--fs", "host", "-d"])
            .arg(m.path().join("t"))
            .args([
                "-s",
                "4096",
                "-n",
                "300",
                "-S",
                "1",
                "--stats",
                "--stats-decode",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // Without --stats-clear, fslab reports the difference between before and after the run;
        // on the kernel's counters that is this run's work: 300 creates and 300 removes (the
        // unlink pass), one log force per fsync.
        let run = stderr
            .split("# xfs stats for the run")
            .nth(1)
            .expect("run block");
        assert!(run.contains("dir:"), "decoded form names lines: {run}");
        let raw = Command::new(env!("CARGO_BIN_EXE_fsmark"))
            .current_dir(work.path())
            .args(["--fs", "host", "-d"])
            .arg(m.path().join("u"))
            .args(["-s", "4096", "-n", "300", "-S", "1", "--stats-out"])
            .arg(work.path().join("stats.txt"))
            .output()
            .unwrap();
        assert!(raw.status.success());
        let text = std::fs::read_to_string(work.path().join("stats.txt")).unwrap();
        assert!(field(&text, "dir", 1) >= 300, "creates:\n{text}");
        assert!(field(&text, "dir", 2) >= 300, "removes:\n{text}");
        assert!(field(&text, "log", 3) >= 300, "log forces:\n{text}");
    }
}
