//! Ctrl-C on the real binary: SIGINT sent to a running fsmark.
//!
//! The first stops the run after the file in hand: the iteration's unlink pass still runs,
//! its row counts the files made, the summary follows, and the exit status is 0 (fs_mark's,
//! after an interrupted run). The second ends the process at once with status 130.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for fsmark to end before calling it hung (each run here ends in
/// seconds when it behaves).
const WATCHDOG: Duration = Duration::from_secs(120);

fn spawn(args: &[&str], cwd: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fsmark"))
        .current_dir(cwd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsmark starts")
}

/// Read stdout lines until the table title: the run is under way (the SIGINT handler is in
/// place before the header is printed). Returns what was read.
fn read_until_title(out: &mut BufReader<ChildStdout>) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).expect("stdout");
        assert!(n > 0, "fsmark ended before its table title: {seen}");
        seen.push_str(&line);
        if line.starts_with("FSUse%") {
            return seen;
        }
    }
}

fn sigint(child: &Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) with a valid pid and signal number has no memory effects.
    let rc = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Wait for the child, killing it and failing if it outlives the watchdog.
fn wait_or_fail(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fsmark did not end within {WATCHDOG:?} of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn first_ctrl_c_stops_at_the_next_file_cleans_up_and_prints_what_was_done() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path().join("d");
    let total = 1_000_000u64;
    let mut child = spawn(
        &[
            "--fs",
            "host",
            "-d",
            d.to_str().expect("utf-8"),
            "-n",
            &total.to_string(),
            "-s",
            "0",
            "-S",
            "0",
        ],
        tmp.path(),
    );
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    read_until_title(&mut out);
    sigint(&child);
    let status = wait_or_fail(&mut child);
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("stdout");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");

    assert_eq!(status.code(), Some(0), "stdout {rest}\nstderr {err}");
    assert!(err.contains("fsmark: interrupted"), "{err}");
    let row: Vec<&str> = rest
        .lines()
        .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("a row for the interrupted iteration: {rest}"))
        .split_whitespace()
        .collect();
    let count: u64 = row[1].parse().expect("Count column");
    assert!(
        count > 0 && count < total,
        "stopped early, counted: {count}"
    );
    assert!(rest.contains("Average Files/sec:") && rest.contains("p99 Files/sec:"));
    // Cleaned up as the iteration would have been: its unlink pass ran.
    let left = std::fs::read_dir(&d).expect("d exists").count();
    assert_eq!(left, 0, "files left behind");
}

#[test]
fn second_ctrl_c_exits_at_once_with_130() {
    // Every cache flush takes 3 s, so after the first Ctrl-C the run still has seconds of
    // work (the fsync in hand, then the unmount's flushes): the second lands while it runs.
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = spawn(
        &[
            "-d",
            "/bench",
            "-n",
            "1000",
            "-s",
            "0",
            "-S",
            "1",
            "--device",
            "mem:64m,flush=3s",
        ],
        tmp.path(),
    );
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    read_until_title(&mut out);
    sigint(&child);
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut notice = String::new();
    err.read_line(&mut notice).expect("stderr");
    assert!(
        notice.starts_with("fsmark: interrupted") && notice.contains("Ctrl-C again"),
        "{notice:?}"
    );
    sigint(&child);
    let status = wait_or_fail(&mut child);
    assert_eq!(status.code(), Some(130), "{status:?}");
}
