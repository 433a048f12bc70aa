//! `labfs mount` and `labfs umount`, the real binary: issue 14's "done when" run as a user
//! would (mkfs, mount in the background, fio, the stats files, umount, check), the foreground
//! mount ending cleanly on SIGINT and SIGTERM, and the refusals.
//!
//! Mounting needs FUSE, so those tests are in `kernel_fuse` and ignored unless asked for
//! (`tests/common/fuse.rs` says why); the refusals need no FUSE and always run.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn labfs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_labfs"))
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `labfs mkfs` of a new image file of `size`.
fn mkfs(img: &Path, size: &str) {
    let out = labfs()
        .arg("mkfs")
        .arg(img)
        .args(["-s", size])
        .output()
        .unwrap();
    assert!(out.status.success(), "mkfs: {}", stderr_of(&out));
}

#[test]
fn refusals_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, vec![0x5a; 4 << 20]).unwrap();
    let missing = dir.path().join("missing.img");
    let dev_missing = std::ffi::OsString::from(format!("file:{}", missing.display()));
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        // The background mount's daemon fails before mounting: its line is the only one.
        (
            vec!["mount".as_ref(), junk.as_os_str(), mnt.as_os_str()],
            "junk.img",
        ),
        (
            vec!["mount".as_ref(), junk.as_os_str(), "/no/such/dir".as_ref()],
            "not a directory",
        ),
        (vec!["mount".as_ref(), mnt.as_os_str()], "what to mount"),
        (
            vec!["mount".as_ref(), missing.as_os_str(), mnt.as_os_str()],
            "missing.img: no such file (labfs mkfs IMAGE -s SIZE makes one)",
        ),
        (
            vec![
                "mount".as_ref(),
                "--device".as_ref(),
                dev_missing.as_os_str(),
                mnt.as_os_str(),
            ],
            "cannot use",
        ),
        (
            vec!["mount".as_ref(), mnt.as_os_str(), mnt.as_os_str()],
            "not a regular file or a block device",
        ),
        (
            vec![
                "mount".as_ref(),
                "--device".as_ref(),
                "mem:64m".as_ref(),
                mnt.as_os_str(),
                "-o".as_ref(),
                "threads=0".as_ref(),
            ],
            "threads",
        ),
        (
            vec!["umount".as_ref(), mnt.as_os_str()],
            "not a labfs mount",
        ),
    ];
    for (args, says) in cases {
        let out = labfs().args(&args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.starts_with("labfs: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    // Nothing was mounted by any of them.
    assert!(fslab::fuse::labfs_mountpoint_of(&mnt).is_none());
}

mod kernel_fuse {
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use fslab::fs::stats::StatFile;
    use fslab::fuse::labfs_mountpoint_of;

    use super::common::fuse::run;
    use super::{labfs, mkfs, stderr_of};

    fn is_mounted(mnt: &Path) -> bool {
        let mnt = mnt.canonicalize().unwrap();
        labfs_mountpoint_of(&mnt).as_deref() == Some(mnt.as_path())
    }

    /// Unmounts `0` if a failed test left it mounted (the background daemon outlives a
    /// panic).
    struct UnmountOnDrop<'a>(&'a Path);

    impl Drop for UnmountOnDrop<'_> {
        fn drop(&mut self) {
            if is_mounted(self.0) {
                let _ = labfs().arg("umount").arg(self.0).status();
            }
        }
    }

    fn wait_mounted(mnt: &Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_mounted(mnt) {
            assert!(Instant::now() < deadline, "{} never mounted", mnt.display());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A temporary directory holding a fresh labfs image of `size` (`lab.img`) and an empty
    /// mount point (`mnt`); the directory lives as long as the returned guard.
    fn fresh_image(size: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (img, mnt) = (dir.path().join("lab.img"), dir.path().join("mnt"));
        std::fs::create_dir(&mnt).unwrap();
        mkfs(&img, size);
        (dir, img, mnt)
    }

    /// `labfs mount -f IMG MNT`, once the mount is in place.
    fn mount_foreground(img: &Path, mnt: &Path) -> std::process::Child {
        let child = labfs()
            .args(["mount", "-f"])
            .arg(img)
            .arg(mnt)
            .spawn()
            .unwrap();
        wait_mounted(mnt);
        child
    }

    fn stats(mnt: &Path) -> StatFile {
        let text = std::fs::read_to_string(mnt.join(".labfs/stats/stats")).unwrap();
        StatFile::parse(&text).unwrap_or_else(|e| panic!("stats: {e}\n{text}"))
    }

    fn counter(s: &StatFile, line: &str, field: &str) -> u64 {
        s.field(line, field)
            .unwrap_or_else(|| panic!("no {line}.{field}"))
    }

    /// `labfs check IMAGE`: clean, nothing on stdout.
    fn assert_checks_clean(img: &Path) {
        let out = labfs().arg("check").arg(img).output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "labfs check: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr_of(&out)
        );
    }

    fn fio_present() {
        let ok = Command::new("fio")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "this FUSE test runs fio, which is not installed (apt-get install fio)"
        );
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root, and fio (cargo test --release -- --ignored kernel_fuse)"]
    fn done_when_mkfs_mount_fio_stats_clear_umount_check() {
        fio_present();
        let (_dir, img, mnt) = fresh_image("256m");
        let _cleanup = UnmountOnDrop(&mnt);

        // In the background: the command returns once the mount is in place.
        run(labfs().arg("mount").arg(&img).arg(&mnt));
        assert!(is_mounted(&mnt), "mounted when `labfs mount` returns");

        run(Command::new("fio").args([
            "--name=w",
            &format!("--directory={}", mnt.display()),
            "--rw=write",
            "--bs=64k",
            "--size=64m",
            "--fsync=1",
        ]));
        let s = stats(&mnt);
        assert!(
            counter(&s, "rw", "write_calls") >= 1024,
            "64m in 64k writes"
        );
        assert!(counter(&s, "xpc", "write_bytes") >= 64 << 20);
        // With the journal, fsync forces the log (it does not write the inode home).
        assert!(
            counter(&s, "log", "force") >= 1023,
            "each of fio's 1023 fsyncs forced the log"
        );
        assert!(
            counter(&s, "log", "writes") >= 1023,
            "each force wrote a log record: every fsync changed the inode's size"
        );
        std::fs::write(mnt.join(".labfs/stats/stats_clear"), "1\n").unwrap();
        let s = stats(&mnt);
        for (line, field) in [
            ("rw", "write_calls"),
            ("xpc", "write_bytes"),
            ("log", "force"),
        ] {
            assert_eq!(counter(&s, line, field), 0, "{line}.{field} after a clear");
        }

        run(labfs().arg("umount").arg(&mnt));
        assert!(!is_mounted(&mnt), "unmounted when `labfs umount` returns");
        assert_checks_clean(&img);

        // The data is there on the next mount.
        run(labfs().arg("mount").arg(&img).arg(&mnt));
        let len = std::fs::metadata(mnt.join("w.0.0")).unwrap().len();
        run(labfs().arg("umount").arg(&mnt));
        assert_eq!(len, 64 << 20);
        assert_checks_clean(&img);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn a_signal_with_a_file_open_detaches_the_mount_and_the_mount_exits_once_it_closes() {
        let (_dir, img, mnt) = fresh_image("64m");
        let _cleanup = UnmountOnDrop(&mnt);
        let mut child = mount_foreground(&img, &mnt);
        let mut held = std::fs::File::create(mnt.join("held")).unwrap();
        std::io::Write::write_all(&mut held, b"kept").unwrap();
        // SAFETY: kill only sends a signal to the child we spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        // The open file makes umount(2) fail with EBUSY; the mount must leave anyway.
        let deadline = Instant::now() + Duration::from_secs(20);
        while is_mounted(&mnt) {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("still mounted 20 s after SIGINT, with a file open");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the mount process did not exit once its last file closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{status}");
        assert_checks_clean(&img);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn a_foreground_mount_unmounts_cleanly_on_sigint_and_sigterm() {
        let (_dir, img, mnt) = fresh_image("64m");
        let _cleanup = UnmountOnDrop(&mnt);
        for (i, signal) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
            let mut child = mount_foreground(&img, &mnt);
            std::fs::write(mnt.join(format!("f{i}")), vec![i as u8 + 1; 100_000]).unwrap();
            // SAFETY: kill only sends a signal to the child we spawned.
            unsafe { libc::kill(child.id() as i32, signal) };
            let status = child.wait().unwrap();
            assert!(status.success(), "signal {signal}: {status}");
            assert!(!is_mounted(&mnt), "signal {signal} unmounted");
            assert_checks_clean(&img);
        }
        // Both files were written back before each exit.
        run(labfs().arg("mount").arg(&img).arg(&mnt));
        let files: Vec<Vec<u8>> = (0..2)
            .map(|i| std::fs::read(mnt.join(format!("f{i}"))).unwrap())
            .collect();
        run(labfs().arg("umount").arg(&mnt));
        for (i, data) in files.iter().enumerate() {
            assert_eq!(data, &vec![i as u8 + 1; 100_000], "f{i}");
        }
    }
}
