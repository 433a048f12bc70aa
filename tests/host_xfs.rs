//! `fsmark --fs host --stats` on a real XFS filesystem: the kernel's own counters for the run.
//!
//! Needs root, loop devices and mkfs.xfs (xfsprogs); the test says why and passes without
//! checking anything when the machine cannot mount XFS (a container without privileges).

use std::path::Path;
use std::process::Command;

/// A loop-mounted XFS image, unmounted and removed on drop.
struct XfsMount {
    dir: tempfile::TempDir,
}

impl XfsMount {
    fn new() -> Result<XfsMount, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let img = dir.path().join("xfs.img");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        let f = std::fs::File::create(&img).map_err(|e| e.to_string())?;
        f.set_len(512 << 20).map_err(|e| e.to_string())?;
        let run = |cmd: &mut Command| -> Result<(), String> {
            match cmd.output() {
                Ok(o) if o.status.success() => Ok(()),
                Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
                Err(e) => Err(format!("{:?}: {e}", cmd.get_program())),
            }
        };
        run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&img))?;
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&mnt))?;
        Ok(XfsMount { dir })
    }

    fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for XfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).output();
    }
}

fn field(text: &str, line: &str, index: usize) -> u64 {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(line))
        .and_then(|l| l.split_whitespace().nth(index + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {line}[{index}] in:\n{text}"))
}

#[test]
fn fsmark_on_xfs_reports_the_kernels_counters_for_the_run() {
    if !Path::new("/proc/fs/xfs/stat").exists() {
        eprintln!("skipped: XFS is not loaded on this kernel");
        return;
    }
    let m = match XfsMount::new() {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: cannot loop-mount an XFS image here ({why})");
            return;
        }
    };
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
        .current_dir(work.path())
        .args(["--fs", "host", "-d"])
        .arg(m.mnt().join("t"))
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
        .arg(m.mnt().join("u"))
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
