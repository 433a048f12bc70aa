//! The control directory of a FUSE mount: `.labfs/stats/` and `.labfs/tracing/` used with
//! the shell's gestures (`cat`, `echo 1 >`, `echo ... >>`, `cat trace_pipe`).
//!
//! FUSE tests are ignored unless asked for (`tests/common/fuse.rs` says why).

mod common;

mod kernel_fuse {
    use std::fs::{self, OpenOptions};
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::common::fuse::Mounted;
    use super::common::image;
    use fslab::fs::stats::StatFile;

    fn field(text: &str, line: &str, index: usize) -> u64 {
        StatFile::parse(text)
            .unwrap_or_else(|e| panic!("stats do not parse: {e}\n{text}"))
            .get(line, index)
            .unwrap_or_else(|| panic!("no {line}[{index}] in:\n{text}"))
    }

    fn append(path: &std::path::Path, text: &str) -> std::io::Result<()> {
        OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(text.as_bytes())
    }

    fn errno_of(e: &std::io::Error) -> i32 {
        e.raw_os_error().unwrap_or(0)
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn stats_show_the_mounts_work_and_stats_clear_zeroes_them() {
        // Tracepoints are process-wide: this test's write-backs would be records in another
        // test's live trace session.
        let _serial = fslab::trace::testing::serial();
        let m = Mounted::fresh(image::mem(64 << 20));
        let stats = m.at(".labfs/stats/stats");
        let clear = m.at(".labfs/stats/stats_clear");
        fs::write(&clear, "1\n").unwrap();
        let before = fs::read_to_string(&stats).unwrap();
        assert_eq!(field(&before, "dir", 1), 0, "dir creates after a clear");
        fs::create_dir(m.at("d")).unwrap();
        for i in 0..25 {
            fs::write(m.at(&format!("d/f{i}")), b"x").unwrap();
        }
        let after = fs::read_to_string(&stats).unwrap();
        assert_eq!(field(&after, "dir", 1), 26, "one create per new name");
        assert!(field(&after, "rw", 0) >= 25, "write calls counted");
        // The text is exactly the mount's own counters.
        assert_eq!(after, m.fs.stats.mount().snapshot().render());
        // Only 1 clears, as XFS's stats_clear; anything else is EINVAL.
        for bad in ["2\n", "yes\n"] {
            let e = fs::write(&clear, bad).unwrap_err();
            assert_eq!(errno_of(&e), libc::EINVAL, "{bad:?}");
        }
        assert_eq!(field(&fs::read_to_string(&stats).unwrap(), "dir", 1), 26);
        fs::write(&clear, "1\n").unwrap();
        assert_eq!(field(&fs::read_to_string(&stats).unwrap(), "dir", 1), 0);
        // stats_clear is write-only and stats read-only, whoever asks.
        assert_eq!(errno_of(&fs::read(&clear).unwrap_err()), libc::EACCES);
        assert_eq!(errno_of(&fs::write(&stats, "1").unwrap_err()), libc::EACCES);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn tracing_files_record_the_selected_events_like_tracefs() {
        let _serial = fslab::trace::testing::serial();
        let m = Mounted::fresh(image::mem(64 << 20));
        let t = |f: &str| m.at(&format!(".labfs/tracing/{f}"));
        let available = fs::read_to_string(t("available_events")).unwrap();
        assert!(
            available
                .lines()
                .any(|l| l == "writeback:sb_mark_inode_writeback")
        );
        assert_eq!(fs::read_to_string(t("tracing_on")).unwrap(), "1\n");

        fs::write(t("set_event"), "writeback:*\n").unwrap();
        assert_eq!(
            fs::read_to_string(t("set_event")).unwrap(),
            "writeback:sb_mark_inode_writeback\nwriteback:sb_clear_inode_writeback\n"
        );
        append(&t("set_event"), "!sb_clear_inode_writeback\n").unwrap();
        assert_eq!(
            fs::read_to_string(t("set_event")).unwrap(),
            "writeback:sb_mark_inode_writeback\n"
        );
        let e = append(&t("set_event"), "no_such_event\n").unwrap_err();
        assert_eq!(errno_of(&e), libc::EINVAL);
        let enable = t("events/writeback/sb_mark_inode_writeback/enable");
        assert_eq!(fs::read_to_string(&enable).unwrap(), "1\n");

        let mut f = fs::File::create(m.at("f")).unwrap();
        f.write_all(&[1u8; 8192]).unwrap();
        f.sync_all().unwrap();
        let trace = fs::read_to_string(t("trace")).unwrap();
        assert!(trace.starts_with("# tracer: nop"), "{trace}");
        let records: Vec<&str> = trace.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(records.len(), 1, "one write-back of one file: {trace}");
        assert!(records[0].contains("sb_mark_inode_writeback:"), "{trace}");
        assert!(records[0].contains(&format!("ino {}", m.fs.lookup_path(b"/f").unwrap().ino)));

        // trace_pipe hands the records out once; non-blocking and empty is EAGAIN.
        let mut pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(t("trace_pipe"))
            .unwrap();
        let mut buf = vec![0u8; 65536];
        let n = pipe.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(
            text.contains("sb_mark_inode_writeback:") && !text.contains('#'),
            "{text}"
        );
        assert_eq!(errno_of(&pipe.read(&mut buf).unwrap_err()), libc::EAGAIN);
        assert!(
            !fs::read_to_string(t("trace"))
                .unwrap()
                .lines()
                .any(|l| !l.starts_with('#')),
            "consumed by trace_pipe"
        );

        // tracing_on 0: nothing more is recorded; `echo > trace` clears.
        fs::write(t("tracing_on"), "0\n").unwrap();
        let mut g = fs::File::create(m.at("g")).unwrap();
        g.write_all(&[2u8; 4096]).unwrap();
        g.sync_all().unwrap();
        assert_eq!(errno_of(&pipe.read(&mut buf).unwrap_err()), libc::EAGAIN);
        fs::write(t("tracing_on"), "1\n").unwrap();
        g.write_all(&[2u8; 4096]).unwrap();
        g.sync_all().unwrap();
        assert!(
            fs::read_to_string(t("trace"))
                .unwrap()
                .contains("sb_mark_inode_writeback:")
        );
        fs::write(t("trace"), "\n").unwrap();
        assert!(
            !fs::read_to_string(t("trace"))
                .unwrap()
                .lines()
                .any(|l| !l.starts_with('#')),
            "cleared"
        );
        fs::write(t("set_event"), "").unwrap();
        assert_eq!(fs::read_to_string(t("set_event")).unwrap(), "");
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn a_hist_trigger_gives_ilog2_histograms_of_crc_sizes_by_structure() {
        let _serial = fslab::trace::testing::serial();
        let m = Mounted::fresh(image::mem(64 << 20));
        let ev = m.at(".labfs/tracing/events/fslab/crc32c");
        assert_eq!(
            fs::read_to_string(ev.join("trigger")).unwrap(),
            "# Available triggers:\n# hist\n"
        );
        fs::write(ev.join("trigger"), "hist:keys=site,len.log2\n").unwrap();
        let e = append(&ev.join("trigger"), "hist:keys=len\n").unwrap_err();
        assert_eq!(errno_of(&e), libc::EINVAL, "only ilog2 histograms");
        assert_eq!(
            fs::read_to_string(ev.join("trigger")).unwrap(),
            "hist:keys=site,len.log2 [active]\n"
        );
        for i in 0..40 {
            fs::write(m.at(&format!("f{i}")), b"data").unwrap();
        }
        // A sync only forces the log; a quiesce (what a freeze does) also writes the inodes
        // (512-byte CRCs, computed as each goes home) and directory blocks (4 KiB) home.
        nix::unistd::syncfs(fs::File::open(m.path()).unwrap()).unwrap();
        m.fs.quiesce().unwrap();
        let hist = fs::read_to_string(ev.join("hist")).unwrap();
        assert!(hist.starts_with("# event histogram"), "{hist}");
        assert!(hist.contains("crc32c.len[inode]:"), "{hist}");
        assert!(hist.contains("512"), "inode CRCs cover 512 bytes: {hist}");
        assert!(hist.contains("Hits:"), "{hist}");
        append(&ev.join("trigger"), "!hist:keys=site,len.log2\n").unwrap();
        assert!(
            !fs::read_to_string(ev.join("hist"))
                .unwrap()
                .contains("crc32c.len")
        );
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn blocked_trace_pipe_readers_get_records_as_they_come_and_stop_on_a_signal() {
        let _serial = fslab::trace::testing::serial();
        // Fewer request threads than blocked readers: the readers must not hold them.
        let opts = fslab::fuse::FuseOptions {
            threads: 2,
            ..fslab::fuse::FuseOptions::default()
        };
        let m = Mounted::mount(image::mem(64 << 20).build(), &opts);
        fs::write(
            m.at(".labfs/tracing/set_event"),
            "sb_mark_inode_writeback\n",
        )
        .unwrap();
        let mut cats: Vec<_> = (0..3)
            .map(|_| {
                Command::new("cat")
                    .arg(m.at(".labfs/tracing/trace_pipe"))
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        for cat in &mut cats {
            assert!(cat.try_wait().unwrap().is_none(), "cat waits for records");
        }
        let start = Instant::now();
        for i in 0..3 {
            let mut f = fs::File::create(m.at(&format!("f{i}"))).unwrap();
            f.write_all(b"x").unwrap();
            f.sync_all().unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the mount kept serving"
        );
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        let mut out = String::new();
        for mut cat in cats {
            // SAFETY: kill only sends a signal to a child we spawned.
            unsafe { libc::kill(cat.id() as i32, libc::SIGINT) };
            assert!(!cat.wait().unwrap().success());
            cat.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "the signal ends the waits"
        );
        assert_eq!(
            out.matches("sb_mark_inode_writeback:").count(),
            3,
            "each record went to exactly one reader: {out}"
        );
    }
}
