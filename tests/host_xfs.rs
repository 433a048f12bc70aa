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

    /// The kernel name of the block device mounted at `mnt` (`loop3`), read with findmnt.
    fn device_name(mnt: &std::path::Path) -> String {
        let out = Command::new("findmnt")
            .args(["-n", "-o", "SOURCE"])
            .arg(mnt)
            .output()
            .expect("findmnt");
        let source = String::from_utf8_lossy(&out.stdout).trim().to_string();
        source
            .rsplit('/')
            .next()
            .expect("a device path")
            .to_string()
    }

    /// Read `path` until two readings 200 ms apart agree on all lines but push_ail.
    fn settled(path: &str) -> String {
        let moving = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with("push_ail "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut last = std::fs::read_to_string(path).unwrap();
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let now = std::fs::read_to_string(path).unwrap();
            if moving(&now) == moving(&last) {
                return now;
            }
            last = now;
        }
        panic!("{path} did not settle in 20 s");
    }

    #[test]
    #[ignore = "kernel XFS: needs root, loop devices and mkfs.xfs; run with --ignored kernel_xfs"]
    fn fsmark_host_stats_are_the_mounts_own_settled_difference() {
        let m = XfsMount::new(512 << 20);
        let dev = device_name(m.path());
        let stat_path = format!("/sys/fs/xfs/{dev}/stats/stats");
        let work = tempfile::tempdir().unwrap();
        let before = std::fs::read_to_string(&stat_path).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
            .current_dir(work.path())
            .args(["--fs", "host", "-d"])
            .arg(m.path().join("t"))
            .args(["-s", "4096", "-n", "500", "-S", "0", "--stats-out"])
            .arg(work.path().join("stats.txt"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("# per-mount {stat_path} ")),
            "the header names the mount's stats: {stderr}"
        );
        assert!(stderr.contains("settled after"), "{stderr}");
        // The manual reading: sync the filesystem, wait until the counters stop moving.
        let sync = Command::new("sync")
            .arg("-f")
            .arg(m.path())
            .status()
            .unwrap();
        assert!(sync.success());
        let after = settled(&stat_path);
        let reported = std::fs::read_to_string(work.path().join("stats.txt")).unwrap();
        // The run's work, including what the kernel finishes in the background after the
        // unlink pass (inodegc frees the files' extents and inodes): fsmark's settled block
        // and the manual before/after difference agree exactly.
        for (line, index) in [
            ("dir", 1),
            ("dir", 2),
            ("extent_alloc", 0),
            ("extent_alloc", 1),
            ("extent_alloc", 2),
            ("extent_alloc", 3),
            ("rw", 0),
            ("xstrat", 0),
            ("vnodes", 4),
        ] {
            let manual = field(&after, line, index) - field(&before, line, index);
            assert_eq!(
                field(&reported, line, index),
                manual,
                "{line}[{index}]: fsmark reported vs manual per-mount difference\n{reported}"
            );
        }
        assert!(field(&reported, "dir", 1) >= 500, "{reported}");
    }
}
