//! fs_mark 3.3's text: run header, table header, rows and summary, byte for byte.
//!
//! ```text
//! \n#  <argv0>  <arg1> ... <argN> \n            "# " then " %s " per argument
//! #\tVersion 3.3, <T> thread(s) starting at <ctime>
//! #\tSync method: <text>
//! #\tDirectories:  no subdirectories used        or "<policy> across <D> subdirectories with
//!                                                 <N> files|seconds per subdirectory."
//! #\tFile names: <p> bytes long, (<p-r> initial bytes of time stamp with <r> random bytes ...)
//! #\tFiles info: size <s> bytes, written with an IO size of <w> bytes per write
//! #\tApp overhead is time in microseconds spent in the test not doing file writing related ...
//! ```
//!
//! then either a blank line and the five-column title (`%6s %12s %12s %12s %16s`), or with
//! `-v` the line `#\tAll system call times are reported in microseconds.`, a blank line, and
//! the title with six more ` %26s` min/avg/max titles. The log file variant puts one extra `#`
//! before that part: a `#` line instead of the blank line, or `##\tAll system call times...`.
//!
//! Rows are `%6u %12u %12u %12.1f %16llu` (FSUse%, Count, Size, Files/sec, App Overhead), plus
//! 18 ` %8llu` fields with `-v` (creat, write, fsync, sync, close, unlink min/avg/max). The
//! summary (stdout only) is `Average Files/sec: %12.1f` and `p50/p90/p99 Files/sec: %llu`.

use std::io::{self, Write};

use crate::workload::WallTime;
use crate::workload::fsmark::config::FS_MARK_VERSION;
use crate::workload::fsmark::{Config, LoopStats, MinAvgMax, SubdirPolicy, Summary};

/// Where a header goes: stdout and the log file differ by one `#`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// The `-l` log file.
    LogFile,
}

use crate::report::ctime;

const TITLES: [&str; 5] = ["FSUse%", "Count", "Size", "Files/sec", "App Overhead"];
const VERBOSE_TITLES: [&str; 6] = [
    "CREAT (Min/Avg/Max)",
    "WRITE (Min/Avg/Max)",
    "FSYNC (Min/Avg/Max)",
    "SYNC (Min/Avg/Max)",
    "CLOSE (Min/Avg/Max)",
    "UNLINK (Min/Avg/Max)",
];

/// The run header and table title (see the module docs).
pub fn write_header(
    w: &mut dyn Write,
    argv: &[String],
    config: &Config,
    start: WallTime,
    verbose: bool,
    dest: Destination,
    backend: Option<&str>,
) -> io::Result<()> {
    let mut s = String::with_capacity(1024);
    s.push_str("\n# ");
    for a in argv {
        s.push(' ');
        s.push_str(a);
        s.push(' ');
    }
    s.push_str(&format!(
        "\n#\tVersion {FS_MARK_VERSION}, {} thread(s) starting at {}",
        config.threads,
        ctime(start.secs)
    ));
    s.push_str(&format!("#\tSync method: {}\n", config.sync.description()));
    match config.subdirs {
        SubdirPolicy::RoundRobin {
            subdirs,
            per_subdir,
        } => s.push_str(&format!(
            "#\tDirectories:  Round Robin between directories across {subdirs} subdirectories with {per_subdir} files per subdirectory.\n"
        )),
        SubdirPolicy::TimeHash {
            subdirs,
            secs_per_subdir,
        } => s.push_str(&format!(
            "#\tDirectories:  Time based hash between directories across {subdirs} subdirectories with {secs_per_subdir} seconds per subdirectory.\n"
        )),
        SubdirPolicy::None => s.push_str("#\tDirectories:  no subdirectories used\n"),
    }
    s.push_str(&format!(
        "#\tFile names: {} bytes long, ({} initial bytes of time stamp with {} random bytes at end of name)\n",
        config.name_len,
        i64::from(config.name_len) - i64::from(config.rand_len),
        config.rand_len
    ));
    s.push_str(&format!(
        "#\tFiles info: size {} bytes, written with an IO size of {} bytes per write\n",
        config.file_size, config.io_size
    ));
    if let Some(b) = backend {
        // fslab's one addition to the header: which filesystem ran it (a comment line, so
        // fs_mark parsers skip it). Host runs leave it out and match fs_mark exactly.
        s.push_str(&format!("#\tBackend: {b}\n"));
    }
    s.push_str("#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n");
    if dest == Destination::LogFile {
        s.push('#');
    }
    let [a, b, c, d, e] = TITLES;
    if verbose {
        s.push_str("#\tAll system call times are reported in microseconds.\n\n");
        s.push_str(&format!("{a:>6} {b:>12} {c:>12} {d:>12} {e:>16}"));
        for t in VERBOSE_TITLES {
            s.push_str(&format!(" {t:>26}"));
        }
        s.push('\n');
    } else {
        s.push('\n');
        s.push_str(&format!("{a:>6} {b:>12} {c:>12} {d:>12} {e:>16}\n"));
    }
    w.write_all(s.as_bytes())
}

/// Tenths as `%.1f` prints the sum they stand for.
fn tenths(t: u64) -> String {
    format!("{}.{}", t / 10, t % 10)
}

/// One table row.
pub fn write_row(
    w: &mut dyn Write,
    fs_use_pct: u32,
    count: u64,
    file_size: u64,
    stats: &LoopStats,
    verbose: bool,
) -> io::Result<()> {
    let mut s = format!(
        "{fs_use_pct:>6} {count:>12} {file_size:>12} {:>12} {:>16}",
        tenths(stats.rate_tenths),
        stats.app_overhead_us
    );
    if verbose {
        let cols: [&MinAvgMax; 6] = [
            &stats.creat,
            &stats.write,
            &stats.fsync,
            &stats.sync,
            &stats.close,
            &stats.unlink,
        ];
        for c in cols {
            s.push_str(&format!(" {:>8} {:>8} {:>8}", c.min, c.avg, c.max));
        }
    }
    s.push('\n');
    w.write_all(s.as_bytes())
}

/// The four summary lines.
pub fn write_summary(w: &mut dyn Write, summary: &Summary) -> io::Result<()> {
    write!(
        w,
        "Average Files/sec: {:>12.1}\np50 Files/sec: {}\np90 Files/sec: {}\np99 Files/sec: {}\n",
        summary.average, summary.p50, summary.p90, summary.p99
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fsmark::SyncMethod;

    fn header(config: &Config, verbose: bool, dest: Destination) -> String {
        let mut out = Vec::new();
        let argv: Vec<String> = ["fs_mark", "-d", "/mnt/test/d1"].map(String::from).to_vec();
        let start = WallTime { secs: 0, micros: 0 };
        write_header(&mut out, &argv, config, start, verbose, dest, None).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn argv_line_has_double_spaces_and_a_trailing_space() {
        let h = header(&Config::new("d"), false, Destination::Stdout);
        assert!(h.starts_with(
            "\n#  fs_mark  -d  /mnt/test/d1 \n#\tVersion 3.3, 1 thread(s) starting at "
        ));
    }

    #[test]
    fn log_header_adds_a_hash_before_the_table_title() {
        let plain = header(&Config::new("d"), false, Destination::LogFile);
        assert!(plain.contains("system calls.\n#\nFSUse%"));
        let verbose = header(&Config::new("d"), true, Destination::LogFile);
        assert!(verbose.contains(
            "system calls.\n##\tAll system call times are reported in microseconds.\n\nFSUse%"
        ));
    }

    #[test]
    fn directory_line_names_the_policy() {
        let mut c = Config::new("d");
        c.subdirs = SubdirPolicy::TimeHash {
            subdirs: 1000,
            secs_per_subdir: 180,
        };
        c.sync = SyncMethod::SyncPostReverse;
        let h = header(&c, false, Destination::Stdout);
        assert!(h.contains("#\tDirectories:  Time based hash between directories across 1000 subdirectories with 180 seconds per subdirectory.\n"));
        assert!(h.contains("#\tSync method: SYNC POST REVERSE: Issue sync()"));
    }

    #[test]
    fn negative_time_stamp_length_is_printed_like_fs_mark() {
        let mut c = Config::new("d");
        c.name_len = 10;
        c.rand_len = 20;
        let h = header(&c, false, Destination::Stdout);
        assert!(h.contains(
            "File names: 10 bytes long, (-10 initial bytes of time stamp with 20 random bytes"
        ));
    }

    #[test]
    fn rows_have_fs_mark_widths() {
        let stats = LoopStats {
            rate_tenths: 16642,
            app_overhead_us: 134,
            creat: MinAvgMax {
                min: 25,
                avg: 28,
                max: 33,
            },
            ..LoopStats::default()
        };
        let mut out = Vec::new();
        write_row(&mut out, 68, 20, 4096, &stats, false).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "    68           20         4096       1664.2              134\n"
        );
        let mut out = Vec::new();
        write_row(&mut out, 68, 20, 4096, &stats, true).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("    68           20         4096       1664.2              134       25       28       33        0"));
        assert_eq!(s.len(), 6 + 13 * 3 + 17 + 18 * 9 + 1);
    }

    #[test]
    fn summary_lines_match_fs_mark() {
        let mut out = Vec::new();
        let s = Summary {
            average: 8257.5,
            p50: 8159,
            p90: 8159,
            p99: 8159,
        };
        write_summary(&mut out, &s).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Average Files/sec:       8257.5\np50 Files/sec: 8159\np90 Files/sec: 8159\np99 Files/sec: 8159\n"
        );
    }

    #[test]
    fn ctime_has_asctime_layout() {
        let s = ctime(1_795_000_000);
        assert_eq!(s.len(), 25);
        assert!(s.ends_with('\n'));
        assert_eq!(&s[3..4], " ");
        assert_eq!(&s[13..14], ":");
    }
}
