//! The fiolike binary: the seed job files on labfs and host directories, every output format,
//! refusals (exit status, fio's words), logs; and, where fio 3.33 is installed, the same jobs
//! through fio and fiolike compared (module `needs_fio`, ignored by default, run by
//! `.ci/run` with `cargo test --release -- --ignored needs_fio`).

use std::path::Path;

use assert_cmd::Command;

fn fiolike() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fiolike"))
}

/// Run fiolike in `cwd` with `env`; return (exit code, stdout, stderr).
fn run(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut c = fiolike();
    c.current_dir(cwd).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn workload(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(name)
        .display()
        .to_string()
}

/// A report line reduced to what does not depend on timing: numbers become `N`, units and
/// their prefixes go, the date after `pid=` goes, blanks collapse. Lines whose presence
/// depends on timing (latency buckets, bandwidth samples) are dropped.
fn shape(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let lat_distribution = t.starts_with("lat (") && t.contains(")   :");
        if lat_distribution || t.starts_with("bw (") || t.starts_with("iops ") {
            continue;
        }
        let mut s = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || *c == '.')
                {
                    chars.next();
                }
                // Unit prefixes after a number: Ki Mi Gi Ti k M G T.
                let rest: String = chars.clone().take(2).collect();
                for p in ["Ki", "Mi", "Gi", "Ti"] {
                    if rest.starts_with(p) {
                        chars.next();
                        chars.next();
                    }
                }
                if let Some(&p) = chars.peek()
                    && "kMGT".contains(p)
                {
                    chars.next();
                }
                s.push('N');
            } else {
                s.push(c);
            }
        }
        let s = s
            .replace("(nsec)", "(U)")
            .replace("(usec)", "(U)")
            .replace("(msec)", "(U)");
        let s = match s.find("pid=N:") {
            Some(i) => s[..i + 6].to_string(),
            None => s,
        };
        let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        // `%5.02f` pads small figures: "avg= 6.18".
        let s = s.replace("[ N]", "[N]").replace("= N", "=N");
        // A percentile block wraps by the width of its largest value (a timing matter): keep
        // its entries, not its lines.
        match (s.strip_prefix("| "), out.last_mut()) {
            (Some(entries), Some(prev)) if prev.starts_with("| ") => {
                prev.push(' ');
                prev.push_str(entries);
            }
            _ => out.push(s),
        }
    }
    out
}

const SEED_000_ENV: [(&str, &str); 4] = [
    ("NUM_JOBS", "2"),
    ("FILE_SIZE", "1m"),
    ("FSYNC_FREQ", "1"),
    ("MNT", "/mnt/sdk"),
];

#[test]
fn seed_000_job_file_runs_on_labfs_with_fios_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &SEED_000_ENV,
        &[&workload("000_log_tree_contention.fio")],
    );
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "writers: (g=0): rw=write, bs=(R) 64.0KiB-64.0KiB, (W) 64.0KiB-64.0KiB, (T) 64.0KiB-64.0KiB, ioengine=sync, iodepth=1"
    );
    assert_eq!(lines[1], "...");
    assert_eq!(lines[2], "fio-3.33");
    assert_eq!(lines[3], "Starting 2 processes");
    assert_eq!(lines[4], "writers: Laying out IO file (1 file / 1MiB)");
    assert_eq!(lines[5], "writers: Laying out IO file (1 file / 1MiB)");
    assert!(
        out.contains("writers: (groupid=0, jobs=2): err= 0: pid="),
        "{out}"
    );
    // 16 writes per clone, no fsync after the last: 15 each.
    assert!(
        out.contains("     issued rwts: total=0,32,0,30 short=0,0,0,0 dropped=0,0,0,0\n"),
        "{out}"
    );
    assert!(
        out.contains("  fsync/fdatasync/sync_file_range:\n"),
        "{out}"
    );
    let last = lines.last().unwrap();
    assert!(last.starts_with("  WRITE: bw="), "{last}");
    assert!(last.contains(", io=2048KiB (2097kB), run="), "{last}");
    assert!(
        !out.contains("Disk stats"),
        "labfs has no kernel block device"
    );
}

#[test]
fn seed_001_random_writes_and_seed_003_libaio_run_on_labfs() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &[
            ("NUM_JOBS", "2"),
            ("FILE_SIZE", "256k"),
            ("FSYNC_FREQ", "4"),
            ("BLOCK_SIZE", "4k"),
            ("MNT", "/mnt/nvme0n1"),
        ],
        &[&workload("001_fsync_log_mutex.fio")],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("rw=randwrite, bs=(R) 4096B-4096B"), "{out}");
    // 64 writes per clone, an fsync after every 4th but the last: 15 each.
    assert!(out.contains("issued rwts: total=0,128,0,30 "), "{out}");

    let (rc, out, err) = run(
        tmp.path(),
        &[("FILESIZE", "8m"), ("RUNTIME", "300ms"), ("MNT", "/mnt")],
        &[
            "--device",
            "stripe:6,su=64k,mem:128m",
            &workload("003_striped_checksum.fio"),
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("ioengine=libaio, iodepth=32"), "{out}");
    assert!(out.contains("Starting 6 processes"), "{out}");
    assert!(out.contains("writer: (groupid=0, jobs=6)"), "{out}");
    assert!(
        out.contains("    slat ("),
        "queue engines record submission latency: {out}"
    );
    assert!(out.contains("latency   : target=0, window=0, percentile=100.00%, depth=32"));
}

#[test]
fn json_is_the_only_thing_on_stdout_and_has_fios_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &SEED_000_ENV,
        &[
            "--output-format=json+",
            "--stats",
            &workload("000_log_tree_contention.fio"),
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains("xfs stats"), "statistics go to stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    assert_eq!(v["fio version"], "fio-3.33");
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "writers");
    assert_eq!(job["job options"]["numjobs"], "2");
    assert_eq!(job["job options"]["directory"], "/mnt/sdk");
    assert_eq!(job["write"]["io_bytes"], 2 << 20);
    assert_eq!(job["write"]["total_ios"], 32);
    assert_eq!(job["sync"]["total_ios"], 30);
    assert_eq!(job["sync"]["lat_ns"]["N"], 30);
    assert!(
        !job["write"]["clat_ns"]["bins"]
            .as_object()
            .unwrap()
            .is_empty()
    );
    assert!(job["write"]["clat_ns"]["percentile"]["99.990000"].is_u64());
    assert_eq!(job["iodepth_level"]["1"].as_f64().unwrap().round(), 194.0);
    assert!(v.get("disk_util").is_none());
    // fio's own layout: `"key" : value`, two-space indents.
    assert!(
        out.starts_with("{\n  \"fio version\" : \"fio-3.33\",\n"),
        "{out}"
    );
}

#[test]
fn terse_and_normal_together_print_terse_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &[],
        &[
            "--output-format=terse,normal",
            "--name=t",
            "--rw=read",
            "--size=256k",
            "--directory=/d",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let first_report_line = out
        .lines()
        .find(|l| l.starts_with("3;fio-3.33;t;0;0;256;"))
        .expect("a terse line");
    // No disk on labfs: 130 fields less the 9 of one disk.
    assert_eq!(first_report_line.split(';').count(), 121);
    let terse_at = out.find("3;fio-3.33").unwrap();
    let normal_at = out.find("t: (groupid=0").unwrap();
    assert!(terse_at < normal_at);
}

#[test]
fn refusals_use_fios_words_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("bad.fio");
    std::fs::write(&job, "[x]\nsize=1m\nfsycn=1\n").unwrap();
    let (rc, out, err) = run(tmp.path(), &[], &[job.to_str().unwrap()]);
    assert_eq!(rc, 2);
    assert!(out.is_empty());
    assert_eq!(
        err,
        "fiolike: Bad option <fsycn=1>\nDid you mean fsync?\nfio: job x dropped\n"
    );
    let (rc, _, err) = run(tmp.path(), &[], &["--name=x", "--verify=md5"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("option <verify> is a fio option that fiolike does not implement"),
        "{err}"
    );
    let (rc, _, err) = run(tmp.path(), &[], &["--nmae=x"]);
    assert_eq!(rc, 2);
    assert!(err.contains("unrecognized option '--nmae=x'"), "{err}");
    assert!(err.contains("Did you mean name?"), "{err}");
    let (rc, _, err) = run(tmp.path(), &[], &["--name=x", "--rw=write"]);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("x: you need to specify size="), "{err}");
    let (rc, _, err) = run(tmp.path(), &[], &[]);
    assert_eq!(rc, 2);
    assert!(err.contains("No job(s) defined"), "{err}");
    let (rc, _, err) = run(tmp.path(), &[], &["nope.fio"]);
    assert_eq!(rc, 2);
    assert!(err.contains("unable to open 'nope.fio' job file"), "{err}");
    let (rc, _, err) = run(
        tmp.path(),
        &[],
        &[
            "--fs",
            "host",
            "--name=x",
            "--size=4k",
            "--directory=/nonexistent/fio",
        ],
    );
    assert_eq!(rc, 1);
    assert!(
        err.contains("fio: /nonexistent/fio is not a directory"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn parse_only_section_and_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("two.fio");
    std::fs::write(
        &job,
        "[global]\nsize=128k\ndirectory=/d\n[a]\nrw=write\n[b]\nrw=read\n",
    )
    .unwrap();
    let j = job.to_str().unwrap();
    let (rc, out, err) = run(tmp.path(), &[], &["--parse-only", j]);
    assert_eq!((rc, out.as_str(), err.as_str()), (0, "", ""));
    let (rc, out, err) = run(tmp.path(), &[], &["--section=b", "--output=report.txt", j]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.is_empty(), "{out}");
    let report = std::fs::read_to_string(tmp.path().join("report.txt")).unwrap();
    assert!(report.starts_with("b: (g=0): rw=read"), "{report}");
    assert!(!report.contains("a: (g=0)"));
    assert!(report.contains("   READ: bw="));
}

#[test]
fn logs_are_written_in_fios_names_and_format() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, _, err) = run(
        tmp.path(),
        &[],
        &[
            "--name=lg",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--directory=/d",
            "--write_bw_log",
            "--write_lat_log=lat",
            "--write_iops_log=io",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let bw = std::fs::read_to_string(tmp.path().join("lg_bw.1.log")).unwrap();
    assert_eq!(bw.lines().count(), 16);
    for l in bw.lines() {
        let f: Vec<&str> = l.split(", ").collect();
        assert_eq!(f.len(), 5, "{l}");
        assert_eq!(&f[2..], &["1", "4096", "0"], "{l}");
    }
    for name in [
        "lat_lat.1.log",
        "lat_clat.1.log",
        "lat_slat.1.log",
        "io_iops.1.log",
    ] {
        assert!(tmp.path().join(name).exists(), "{name}");
    }
}

#[test]
fn host_directories_run_with_the_same_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &[],
        &[
            "--fs",
            "host",
            "--name=h",
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4k",
            "--size=512k",
            "--fdatasync=8",
            "--numjobs=2",
            "--group_reporting",
            &format!("--directory={dir}"),
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(tmp.path().join("h.0.0").exists() && tmp.path().join("h.1.0").exists());
    assert!(out.contains("h: (groupid=0, jobs=2)"), "{out}");
    assert!(
        out.contains("   READ: bw=") && out.contains("  WRITE: bw="),
        "{out}"
    );
}

#[test]
fn a_job_that_fails_mid_run_reports_its_error_beside_the_others_results() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &[],
        &[
            "--device=mem:16m",
            "--name=small",
            "--rw=write",
            "--size=1m",
            "--directory=/a",
            "--name=filler",
            "--stonewall",
            "--rw=write",
            "--fallocate=none",
            "--size=64m",
            "--directory=/b",
        ],
    );
    assert_eq!(rc, 1, "{err}");
    assert!(
        out.contains("small: (groupid=0, jobs=1): err= 0: pid="),
        "{out}"
    );
    assert!(
        out.contains("filler: (groupid=1, jobs=1): err=28 ("),
        "the failed job keeps what it did and its error: {out}"
    );
    assert!(
        out.contains("Run status group 0 (all jobs):\n  WRITE: bw="),
        "{out}"
    );
    assert!(err.contains("fio: pid="), "{err}");
    assert!(err.contains("err=28/"), "{err}");
    assert!(err.contains("fiolike: 1 of 2 job clone(s) failed"), "{err}");
}

#[test]
fn status_interval_prints_the_report_while_running() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        tmp.path(),
        &[],
        &[
            "--status-interval=300ms",
            "--name=st",
            "--rw=write",
            "--size=1m",
            "--time_based",
            "--runtime=1s",
            "--directory=/s",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let reports = out.matches("Run status group 0 (all jobs):").count();
    assert!(
        reports >= 3,
        "interval reports plus the final one: {reports}\n{out}"
    );
}

#[test]
fn ctrl_c_stops_the_jobs_and_reports_what_was_done() {
    let tmp = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fiolike"))
        .current_dir(tmp.path())
        .args([
            "--name=long",
            "--rw=write",
            "--size=1m",
            "--time_based",
            "--runtime=60s",
            "--directory=/l",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling a child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 10, "stopped promptly");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("long: (groupid=0, jobs=1): err= 0"), "{text}");
    assert!(text.contains("  WRITE: bw="), "{text}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn shape_keeps_labels_and_drops_figures() {
    let a = shape("  write: IOPS=5333, BW=333MiB/s (350MB/s)(8192KiB/24msec); 0 zone resets");
    let b = shape("  write: IOPS=18.3k, BW=9764KiB/s (9998kB/s)(8192KiB/839msec); 0 zone resets");
    assert_eq!(a, b);
    assert_eq!(
        a[0],
        "write: IOPS=N, BW=NB/s (NB/s)(NB/Nmsec); N zone resets"
    );
}

mod needs_fio {
    //! Where fio 3.33 is installed: the same jobs through fio and fiolike (`--fs host`, each
    //! in a fresh directory), compared on what does not depend on timing.

    use super::*;

    fn fio(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
        let mut c = std::process::Command::new("fio");
        c.current_dir(cwd).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c
            .output()
            .expect("fio 3.33 must be installed for these tests (apt-get install fio)");
        assert!(out.status.success(), "fio failed: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// JSON shape: every key path with its type, numbers' exact values where named.
    fn keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    // Percentile and bin keys are values, not structure.
                    if path.ends_with("/percentile") || path.ends_with("/bins") {
                        continue;
                    }
                    keys(x, &format!("{path}/{k}"), out);
                }
                out.push(format!("{path}: object"));
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    keys(x, &format!("{path}[]"), out);
                }
                out.push(format!("{path}: array"));
            }
            serde_json::Value::Number(n) if n.is_f64() => out.push(format!("{path}: float")),
            serde_json::Value::Number(_) => out.push(format!("{path}: int")),
            serde_json::Value::String(_) => out.push(format!("{path}: string")),
            other => out.push(format!("{path}: {other}")),
        }
    }

    /// Which figures must be equal: all of them, or (for random read/write mixes, whose split
    /// follows each tool's random generator) the totals over both directions.
    #[derive(Clone, Copy, PartialEq)]
    enum Figures {
        Exact,
        Totals,
    }

    fn compare(env: &[(&str, &str)], job_args: &[&str], figures: Figures) {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let with_dir = |d: &Path| {
            let mut v: Vec<String> = job_args.iter().map(|s| s.to_string()).collect();
            v.push(format!("--directory={}", d.display()));
            v
        };
        let fa = with_dir(a.path());
        let fa: Vec<&str> = fa.iter().map(String::as_str).collect();
        let fb = with_dir(b.path());
        let mut lb: Vec<&str> = vec!["--fs", "host"];
        lb.extend(fb.iter().map(String::as_str));
        // Normal output.
        let f_out = fio(a.path(), env, &fa);
        let (rc, l_out, err) = run(b.path(), env, &lb);
        assert_eq!(rc, 0, "{err}");
        assert_eq!(
            shape(&f_out),
            shape(&l_out),
            "fio:\n{f_out}\nfiolike:\n{l_out}"
        );
        // JSON (fresh directories again, so both lay out).
        let (c, d) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // Switches go first: fio prints a job's line as soon as the next --name is read, in
        // the output format in force at that moment.
        let mut fc: Vec<String> = vec!["--output-format=json".into()];
        fc.extend(with_dir(c.path()));
        let fc: Vec<&str> = fc.iter().map(String::as_str).collect();
        let mut fd = vec![
            "--fs".to_string(),
            "host".to_string(),
            "--output-format=json".to_string(),
        ];
        fd.extend(with_dir(d.path()));
        let fd: Vec<&str> = fd.iter().map(String::as_str).collect();
        let fj: serde_json::Value = serde_json::from_str(&fio(c.path(), env, &fc)).unwrap();
        let (rc, lj, err) = run(d.path(), env, &fd);
        assert_eq!(rc, 0, "{err}");
        let lj: serde_json::Value = serde_json::from_str(&lj).unwrap();
        let (mut kf, mut kl) = (Vec::new(), Vec::new());
        keys(&fj, "", &mut kf);
        keys(&lj, "", &mut kl);
        kf.sort();
        kl.sort();
        assert_eq!(kf, kl, "JSON keys and types");
        for (i, (jf, jl)) in fj["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(lj["jobs"].as_array().unwrap())
            .enumerate()
        {
            assert_eq!(
                jf["sync"]["total_ios"], jl["sync"]["total_ios"],
                "job {i} sync"
            );
            if figures == Figures::Totals {
                for k in ["io_bytes", "total_ios"] {
                    let sum = |j: &serde_json::Value| {
                        j["read"][k].as_u64().unwrap() + j["write"][k].as_u64().unwrap()
                    };
                    assert_eq!(sum(jf), sum(jl), "job {i} read+write {k}");
                }
                continue;
            }
            for dir in ["read", "write", "trim"] {
                for k in ["io_bytes", "total_ios", "short_ios"] {
                    assert_eq!(jf[dir][k], jl[dir][k], "job {i} {dir}.{k}");
                }
            }
            assert_eq!(
                jf["sync"]["lat_ns"]["N"], jl["sync"]["lat_ns"]["N"],
                "job {i} sync N"
            );
        }
    }

    #[test]
    #[ignore = "needs fio 3.33: apt-get install fio; cargo test --release -- --ignored needs_fio"]
    fn sequential_write_with_fsync_matches_fio() {
        compare(
            &[],
            &[
                "--name=seqw",
                "--rw=write",
                "--bs=64k",
                "--size=8m",
                "--fsync=1",
            ],
            Figures::Exact,
        );
    }

    #[test]
    #[ignore = "needs fio 3.33: apt-get install fio; cargo test --release -- --ignored needs_fio"]
    fn mixed_random_group_with_fdatasync_matches_fio() {
        compare(
            &[],
            &[
                "--name=mixed",
                "--ioengine=sync",
                "--rw=randrw",
                "--rwmixread=70",
                "--bs=4k",
                "--size=2m",
                "--numjobs=2",
                "--group_reporting",
                "--fdatasync=8",
                "--end_fsync=1",
            ],
            Figures::Totals,
        );
    }

    #[test]
    #[ignore = "needs fio 3.33: apt-get install fio; cargo test --release -- --ignored needs_fio"]
    fn libaio_queue_depth_and_two_groups_match_fio() {
        compare(
            &[],
            &[
                "--name=aio",
                "--ioengine=libaio",
                "--iodepth=8",
                "--rw=randwrite",
                "--bs=4k",
                "--size=1m",
                "--fsync=32",
                "--name=rd",
                "--stonewall",
                "--ioengine=pvsync",
                "--rw=read",
                "--bs=16k",
                "--size=1m",
            ],
            Figures::Exact,
        );
    }

    #[test]
    #[ignore = "needs fio 3.33: apt-get install fio; cargo test --release -- --ignored needs_fio"]
    fn seed_jobs_match_fio() {
        // The job files take their directory from MNT: each run gets its own.
        let runs = [
            (
                workload("000_log_tree_contention.fio"),
                vec![("NUM_JOBS", "2"), ("FILE_SIZE", "2m"), ("FSYNC_FREQ", "1")],
            ),
            (
                workload("001_fsync_log_mutex.fio"),
                vec![
                    ("NUM_JOBS", "2"),
                    ("FILE_SIZE", "1m"),
                    ("FSYNC_FREQ", "4"),
                    ("BLOCK_SIZE", "4k"),
                ],
            ),
        ];
        for (job, env) in runs {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (pa, pb) = (
                a.path().display().to_string(),
                b.path().display().to_string(),
            );
            let mut ea = env.clone();
            ea.push(("MNT", &pa));
            let mut eb = env.clone();
            eb.push(("MNT", &pb));
            let f_out = fio(a.path(), &ea, &[&job]);
            let (rc, l_out, err) = run(b.path(), &eb, &["--fs", "host", &job]);
            assert_eq!(rc, 0, "{err}");
            assert_eq!(
                shape(&f_out),
                shape(&l_out),
                "fio:\n{f_out}\nfiolike:\n{l_out}"
            );
        }
    }
}
