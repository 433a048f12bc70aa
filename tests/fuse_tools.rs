//! Unmodified tools on a labfs FUSE mount: real fio jobs (write with fsync=1, randwrite, a
//! crc32c verify job) with the mount's statistics advancing and the data surviving unmount,
//! fsck and a new mount; `fsmark --fs host` counting exactly what it counts in-process; and
//! fio's client/server mode driving two mounts from one client (the multi-host recipe on one
//! machine).
//!
//! FUSE tests are ignored unless asked for (`tests/common/fuse.rs` says why); these also need
//! fio, which CI installs.

mod common;

mod kernel_fuse {
    use std::net::{TcpListener, TcpStream};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use fslab::fs::stats::StatFile;
    use fslab::fuse::FuseOptions;
    use serde_json::Value;

    use super::common::fuse::{Mounted, run};
    use super::common::image::{self, assert_clean};

    /// fio, demanded: a test asked to run without it fails saying so.
    fn fio() -> Command {
        let ok = Command::new("fio")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "this FUSE test runs fio, which is not installed (apt-get install fio)"
        );
        Command::new("fio")
    }

    /// The JSON report of a fio run (client mode prints text lines before it).
    fn fio_json(cmd: &mut Command) -> Value {
        let out = run(cmd.arg("--output-format=json"));
        let start = out
            .find("\n{")
            .map(|i| i + 1)
            .or_else(|| out.starts_with('{').then_some(0))
            .unwrap_or_else(|| panic!("no JSON in fio's output:\n{out}"));
        serde_json::from_str(&out[start..]).unwrap_or_else(|e| panic!("fio JSON: {e}\n{out}"))
    }

    fn stat(m: &Mounted, line: &str, index: usize) -> u64 {
        let text = std::fs::read_to_string(m.at(".labfs/stats/stats")).unwrap();
        StatFile::parse(&text)
            .unwrap()
            .get(line, index)
            .unwrap_or_else(|| panic!("no {line}[{index}] in:\n{text}"))
    }

    fn job<'a>(report: &'a Value, name: &str) -> &'a Value {
        report["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["jobname"] == name))
            .unwrap_or_else(|| panic!("no job {name} in {report}"))
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root, and fio (cargo test --release -- --ignored kernel_fuse)"]
    fn fio_jobs_run_on_the_mount_and_their_data_survives_remount_and_fsck() {
        let m = Mounted::mount(image::file(256 << 20).build(), &FuseOptions::default());
        let dir = m.path();
        std::fs::write(m.at(".labfs/stats/stats_clear"), "1\n").unwrap();

        // Sequential writes, fsync after every one.
        let r = fio_json(fio().current_dir(&dir).args([
            "--name=w",
            "--rw=write",
            "--bs=64k",
            "--size=8m",
            "--fsync=1",
        ]));
        let w = job(&r, "w");
        assert_eq!(w["error"], 0);
        assert_eq!(w["write"]["io_bytes"], 8 << 20);
        // fio counts every fsync but the one it issues when it closes the file.
        assert_eq!(w["sync"]["total_ios"], 127, "one fsync per write");
        assert!(stat(&m, "rw", 0) >= 128, "labfs counted the writes");
        assert!(stat(&m, "xpc", 1) >= 8 << 20, "and their bytes");
        // fio lays the file out with fallocate first: the blocks come from it, not from
        // delayed allocation at fsync.
        assert!(
            stat(&m, "extent_alloc", 1) >= 2048,
            "8 MiB of blocks allocated"
        );

        // Random writes.
        let before = stat(&m, "rw", 0);
        let r = fio_json(fio().current_dir(&dir).args([
            "--name=rw",
            "--rw=randwrite",
            "--bs=4k",
            "--size=4m",
            "--randrepeat=1",
        ]));
        assert_eq!(job(&r, "rw")["error"], 0);
        assert_eq!(stat(&m, "rw", 0) - before, 1024, "4 MiB in 4 KiB writes");

        // Writes with crc32c verify headers, read back and checked by fio.
        let verify = [
            "--name=v",
            "--rw=write",
            "--bs=4k",
            "--size=4m",
            "--verify=crc32c",
        ];
        let r = fio_json(fio().current_dir(&dir).args(verify));
        let v = job(&r, "v");
        assert_eq!(v["error"], 0);
        assert_eq!(
            v["read"]["io_bytes"],
            4 << 20,
            "fio read everything back to verify"
        );

        // Unmount: the image is clean; mount again: fio's verify finds every block intact.
        let img = m.unmount();
        let fs = img.mount();
        assert_clean(&fs, "after the fio runs");
        fs.unmount().unwrap();
        drop(fs);
        let m = Mounted::mount(img, &FuseOptions::default());
        let r = fio_json(
            fio()
                .current_dir(m.path())
                .args(verify)
                .arg("--verify_only"),
        );
        let v = job(&r, "v");
        assert_eq!(v["error"], 0, "{v}");
        assert_eq!(v["read"]["io_bytes"], 4 << 20);
        assert_eq!(std::fs::metadata(m.at("w.0.0")).unwrap().len(), 8 << 20);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn fsmark_on_the_mount_counts_what_it_counts_in_process() {
        let m = Mounted::fresh(image::mem(256 << 20));
        let tmp = tempfile::tempdir().unwrap();
        let stats = tmp.path().join("stats.txt");
        let n = 200u64;
        let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
            .current_dir(tmp.path())
            .args(["--fs", "host", "-d"])
            .arg(m.at("t"))
            .args(["-S", "1", "-s", "4096", "-n", &n.to_string(), "--stats-out"])
            .arg(&stats)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())),
            "a table row: {stdout}"
        );
        let s = StatFile::parse(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let get = |line: &str, i: usize| s.get(line, i).unwrap();
        // The same figures tests/fsmark_lab.rs pins for the in-process run: the mount's
        // statistics, cleared at the start, count exactly fsmark's work.
        assert_eq!(get("dir", 1), n + 2, "dir creates");
        assert_eq!(get("dir", 2), n + 1, "dir removes");
        assert_eq!(get("rw", 0), n, "write calls");
        assert_eq!(get("xstrat", 0), n, "xstrat quick");
        assert_eq!(get("xpc", 0), n * 4096, "xstrat bytes");
        assert_eq!(get("xpc", 1), n * 4096, "write bytes");
    }

    /// A TCP port free on the loopback address now.
    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port")
    }

    /// `fio --server` on a loopback port, killed on drop.
    struct FioServer {
        child: Child,
        port: u16,
    }

    impl FioServer {
        fn start() -> FioServer {
            let port = free_port();
            let child = fio()
                .arg(format!("--server=ip:127.0.0.1,{port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start fio --server");
            let deadline = Instant::now() + Duration::from_secs(10);
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "fio --server did not listen on {port}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            FioServer { child, port }
        }
    }

    impl Drop for FioServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A job file writing 2 MiB with an fsync every 4 writes into `target`.
    fn job_file(dir: &Path, name: &str, target: &Path) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(
            &p,
            format!(
                "[w]\ndirectory={}\nrw=write\nbs=4k\nsize=2m\nfsync=4\n",
                target.display()
            ),
        )
        .unwrap();
        p
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root, and fio (cargo test --release -- --ignored kernel_fuse)"]
    fn one_fio_client_drives_two_mounts_through_two_fio_servers() {
        let a = Mounted::fresh(image::mem(128 << 20));
        let b = Mounted::fresh(image::mem(128 << 20));
        for m in [&a, &b] {
            std::fs::create_dir(m.at("host")).unwrap();
            std::fs::write(m.at(".labfs/stats/stats_clear"), "1\n").unwrap();
        }
        let (sa, sb) = (FioServer::start(), FioServer::start());
        let jobs = tempfile::tempdir().unwrap();
        let ja = job_file(jobs.path(), "a.fio", &a.at("host"));
        let jb = job_file(jobs.path(), "b.fio", &b.at("host"));
        let r = fio_json(
            fio()
                .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
                .arg(&ja)
                .arg(format!("--client=ip:127.0.0.1,{}", sb.port))
                .arg(&jb),
        );
        let clients = r["client_stats"]
            .as_array()
            .expect("client_stats in client mode");
        assert_eq!(clients.len(), 3, "two hosts and the combined block: {r}");
        let per_host: Vec<&Value> = clients.iter().filter(|c| c["jobname"] == "w").collect();
        let mut ports: Vec<u64> = per_host
            .iter()
            .map(|c| c["port"].as_u64().unwrap())
            .collect();
        ports.sort_unstable();
        let mut want = vec![u64::from(sa.port), u64::from(sb.port)];
        want.sort_unstable();
        assert_eq!(ports, want, "one report per server");
        let all = clients
            .iter()
            .find(|c| c["jobname"] == "All clients")
            .expect("the combined block");
        for c in &per_host {
            assert_eq!(c["error"], 0);
            assert_eq!(c["write"]["io_bytes"], 2 << 20);
        }
        assert_eq!(
            all["write"]["io_bytes"],
            4 << 20,
            "the client sums both hosts"
        );
        assert_eq!(
            all["sync"]["total_ios"],
            per_host[0]["sync"]["total_ios"].as_u64().unwrap()
                + per_host[1]["sync"]["total_ios"].as_u64().unwrap()
        );
        // Each server wrote into its own labfs, which counted it.
        for m in [&a, &b] {
            assert_eq!(stat(m, "rw", 0), 512, "2 MiB in 4 KiB writes");
            let files = std::fs::read_dir(m.at("host")).unwrap().count();
            assert_eq!(files, 1);
        }
    }
}
