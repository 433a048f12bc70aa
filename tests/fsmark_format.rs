//! Format tests: fsmark's stdout and log file against real fs_mark 3.3 captures.
//!
//! Times, rates, dates and argv differ from run to run, so lines are compared by shape:
//! right-aligned lines (table rows, the Average line) by the end column and digit pattern of
//! each field, so column positions must match exactly; other lines with each run of digits
//! collapsed; the argv line only by its framing; the date by its ctime layout.

use std::path::Path;

use assert_cmd::Command;

/// fs_mark 3.3's real output (captured from runs of the real binary), as escaped literals so
/// tabs and the argv line's trailing space stay visible.
mod captures {
    /// `fs_mark_basic_stdout.txt`.
    pub const BASIC_STDOUT: &str = concat!(
        "\n",
        "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20 \n",
        "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:35:36 2026\n",
        "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
        "#\tDirectories:  no subdirectories used\n",
        "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
        "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
        "\n",
        "FSUse%        Count         Size    Files/sec     App Overhead\n",
        "    68           20         4096       1664.2              134\n",
        "Average Files/sec:       1664.0\n",
        "p50 Files/sec: 1664\n",
        "p90 Files/sec: 1664\n",
        "p99 Files/sec: 1664\n",
    );
    /// `fs_mark_verbose_4thr_stdout.txt`.
    pub const VERBOSE_4THR_STDOUT: &str = concat!(
        "\n",
        "#  fs_mark  -d  /mnt/test/d1  -d  /mnt/test/d2  -t  4  -s  1000  -w  300  -n  10  -D  3  -N  4  -k  -L  2  -v  -S  3  -l  /mnt/test/my.log \n",
        "#\tVersion 3.3, 4 thread(s) starting at Mon Nov 30 06:35:38 2026\n",
        "#\tSync method: POST REVERSE: Reopen and fsync() each file in reverse order after main write loop.\n",
        "#\tDirectories:  Round Robin between directories across 3 subdirectories with 4 files per subdirectory.\n",
        "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
        "#\tFiles info: size 1000 bytes, written with an IO size of 300 bytes per write\n",
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
        "#\tAll system call times are reported in microseconds.\n",
        "\n",
        "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
        "    68           40         1000       8159.3              716       48       61      207        0        1       31      190      420     2423        0        0        0        1        1        3        0        0        0\n",
        "    68           80         1000       8356.6              306       48       60      130        0        2       18      162      412     2472        0        0        0        1        1        3        0        0        0\n",
        "Average Files/sec:       8257.5\n",
        "p50 Files/sec: 8159\n",
        "p90 Files/sec: 8159\n",
        "p99 Files/sec: 8159\n",
    );
    /// `fs_mark_L2_verbose_stdout.txt`.
    pub const L2_VERBOSE_STDOUT: &str = concat!(
        "\n",
        "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20  -L  2  -v  -l  captures/fs_mark_log_verbose.txt \n",
        "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:39:41 2026\n",
        "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
        "#\tDirectories:  no subdirectories used\n",
        "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
        "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
        "#\tAll system call times are reported in microseconds.\n",
        "\n",
        "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
        "    68           20         4096       3508.8              179       25       28       33        9       23       31      170      220      468        0        0        0        3        3        6        0        0        0\n",
        "    68           40         4096       3607.5              176       26       29       36        9        9       15      188      225      311        0        0        0        2        3        6        0        0        0\n",
        "Average Files/sec:       3557.5\n",
        "p50 Files/sec: 3508\n",
        "p90 Files/sec: 3508\n",
        "p99 Files/sec: 3508\n",
    );
    /// `fs_mark_log_verbose.txt`.
    pub const L2_VERBOSE_LOG: &str = concat!(
        "\n",
        "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20  -L  2  -v  -l  captures/fs_mark_log_verbose.txt \n",
        "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:39:41 2026\n",
        "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
        "#\tDirectories:  no subdirectories used\n",
        "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
        "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
        "##\tAll system call times are reported in microseconds.\n",
        "\n",
        "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
        "    68           20         4096       3508.8              179       25       28       33        9       23       31      170      220      468        0        0        0        3        3        6        0        0        0\n",
        "    68           40         4096       3607.5              176       26       29       36        9        9       15      188      225      311        0        0        0        2        3        6        0        0        0\n",
    );
}

/// The binary, on the host's filesystems (these tests check fs_mark behaviour on real
/// directories; labfs runs are tested in `fsmark_lab.rs`).
fn fsmark() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fsmark"));
    c.args(["--fs", "host"]);
    c
}

/// `Mon Nov 30 06:35:36 2026`
fn is_ctime(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b[3] == b' '
        && b[7] == b' '
        && b[10] == b' '
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b' '
        && s[20..].bytes().all(|c| c.is_ascii_digit())
}

fn collapse_digits(s: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_num {
                out.push('9');
            }
            in_num = true;
        } else {
            out.push(c);
            in_num = false;
        }
    }
    out
}

/// Each field's end column and digit pattern, plus the line length.
fn field_ends(line: &str) -> String {
    let mut fields = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (c == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                fields.push(format!("{i}:{}", collapse_digits(&line[s..i])));
                start = None;
            }
            _ => {}
        }
    }
    format!("{} len={}", fields.join(" "), line.len())
}

fn shape(line: &str) -> String {
    if line.starts_with("#  ") {
        assert!(
            line.ends_with(' '),
            "argv line keeps its trailing space: {line:?}"
        );
        return "#  <argv> ".into();
    }
    if let Some(i) = line.find("starting at ") {
        let date = &line[i + 12..];
        assert!(is_ctime(date), "ctime layout: {date:?}");
        return format!("{}<date>", collapse_digits(&line[..i + 12]));
    }
    let right_aligned =
        line.starts_with("Average") || line.trim_start().starts_with(|c: char| c.is_ascii_digit());
    if right_aligned {
        field_ends(line)
    } else {
        collapse_digits(line)
    }
}

fn assert_same_shape(ours: &str, theirs: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.split('\n').collect(), theirs.split('\n').collect());
    assert_eq!(
        a.len(),
        b.len(),
        "line count\nours:\n{ours}\ntheirs:\n{theirs}"
    );
    for (n, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            shape(x),
            shape(y),
            "line {}\nours:   {x:?}\ntheirs: {y:?}",
            n + 1
        );
    }
}

/// The log-file variant of a stdout capture: a `#` before the table part, no summary.
fn log_variant(stdout: &str) -> String {
    let mut lines: Vec<&str> = stdout.split('\n').collect();
    let title = lines.iter().position(|l| l.starts_with("FSUse%")).unwrap();
    let verbose = lines[title - 2].starts_with("#\tAll system call");
    let hashed;
    if verbose {
        hashed = format!("#{}", lines[title - 2]);
        lines[title - 2] = &hashed;
    } else {
        lines[title - 1] = "#";
    }
    let summary = lines.iter().position(|l| l.starts_with("Average")).unwrap();
    lines.truncate(summary);
    lines.join("\n") + "\n"
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += count_files(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

#[test]
fn basic_run_matches_the_capture_and_writes_fs_log_txt_in_the_cwd() {
    let tmp = tempfile::tempdir().unwrap();
    let d1 = tmp.path().join("d1");
    let stdout = run_ok(fsmark().current_dir(tmp.path()).args([
        "-d",
        d1.to_str().unwrap(),
        "-s",
        "4096",
        "-n",
        "20",
    ]));
    assert_same_shape(&stdout, captures::BASIC_STDOUT);
    let log = std::fs::read_to_string(tmp.path().join("fs_log.txt")).unwrap();
    assert_same_shape(&log, &log_variant(captures::BASIC_STDOUT));
    assert_eq!(count_files(&d1), 0, "files are unlinked without -k");
}

#[test]
fn verbose_four_thread_round_robin_run_matches_the_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("my.log");
    let stdout = run_ok(fsmark().current_dir(tmp.path()).args([
        "-d",
        "d1",
        "-d",
        "d2",
        "-t",
        "4",
        "-s",
        "1000",
        "-w",
        "300",
        "-n",
        "10",
        "-D",
        "3",
        "-N",
        "4",
        "-k",
        "-L",
        "2",
        "-v",
        "-S",
        "3",
        "-l",
        log.to_str().unwrap(),
    ]));
    assert_same_shape(&stdout, captures::VERBOSE_4THR_STDOUT);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_same_shape(&logged, &log_variant(captures::VERBOSE_4THR_STDOUT));
    // Two threads per directory, 10 files each, two iterations, all kept.
    for d in ["d1", "d2"] {
        assert_eq!(count_files(&tmp.path().join(d)), 40);
        let subdirs: Vec<_> = std::fs::read_dir(tmp.path().join(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            subdirs
                .iter()
                .all(|s| ["00", "01", "02"].contains(&s.as_str()))
        );
    }
}

#[test]
fn two_loop_verbose_run_matches_stdout_and_log_captures() {
    let tmp = tempfile::tempdir().unwrap();
    let d1 = tmp.path().join("d1");
    let log = tmp.path().join("log.txt");
    let stdout = run_ok(fsmark().current_dir(tmp.path()).args([
        "-d",
        d1.to_str().unwrap(),
        "-s",
        "4096",
        "-n",
        "20",
        "-L",
        "2",
        "-v",
        "-l",
        log.to_str().unwrap(),
    ]));
    assert_same_shape(&stdout, captures::L2_VERBOSE_STDOUT);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_same_shape(&logged, captures::L2_VERBOSE_LOG);
    assert_eq!(
        log_variant(captures::L2_VERBOSE_STDOUT),
        captures::L2_VERBOSE_LOG
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("    ")).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].split_whitespace().nth(1) == Some("20"));
    assert!(
        rows[1].split_whitespace().nth(1) == Some("40"),
        "Count is cumulative"
    );
}

#[test]
fn log_file_is_appended_not_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        run_ok(
            fsmark()
                .current_dir(tmp.path())
                .args(["-d", "d1", "-s", "4096", "-n", "20"]),
        );
    }
    let log = std::fs::read_to_string(tmp.path().join("fs_log.txt")).unwrap();
    let second = log[1..].find("\n#  ").unwrap() + 1;
    let expected = log_variant(captures::BASIC_STDOUT);
    assert_same_shape(&log[..second], &expected);
    assert_same_shape(&log[second..], &expected);
}
