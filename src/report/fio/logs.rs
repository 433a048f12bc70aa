//! The per-job logs (`write_bw_log`, `write_iops_log`, `write_lat_log`), in fio's file names
//! and line format so that `fio_generate_plots` and `fiologparser` read them.
//!
//! A file is `<prefix>_<kind>.<thread number>.log` (`<prefix>_<kind>.log` with
//! `per_job_logs=0`) in the current directory; each line is
//! `time (ms), value, direction (0 read, 1 write, 2 trim), block size, priority` as fio 3.33's
//! `flush_samples` prints it (priority is 0: fiolike does not set I/O priorities).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::workload::fio::stats::JobLog;

/// The file a log is written to, under `dir`.
pub fn file_name(log: &JobLog, dir: &Path) -> PathBuf {
    let name = if log.per_job {
        format!(
            "{}_{}.{}.log",
            log.prefix,
            log.kind.name(),
            log.thread_number
        )
    } else {
        format!("{}_{}.log", log.prefix, log.kind.name())
    };
    dir.join(name)
}

/// The log's text.
pub fn render(log: &JobLog) -> String {
    let mut out = String::with_capacity(log.samples.len() * 24);
    for s in &log.samples {
        let _ = writeln!(out, "{}, {}, {}, {}, 0", s.time_ms, s.value, s.ddir, s.bs);
    }
    out
}

/// Write every log under `dir`; logs of clones sharing a file (`per_job_logs=0`) are
/// appended in clone order, as fio does.
pub fn write_all(logs: &[JobLog], dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written: Vec<PathBuf> = Vec::new();
    for log in logs {
        let path = file_name(log, dir);
        let text = render(log);
        if written.contains(&path) {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path)?;
            f.write_all(text.as_bytes())?;
        } else {
            std::fs::write(&path, text)?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::stats::{LogKind, LogSample};

    fn log(kind: LogKind, n: u32, per_job: bool) -> JobLog {
        JobLog {
            kind,
            prefix: "seqw".into(),
            thread_number: n,
            per_job,
            samples: vec![
                LogSample {
                    time_ms: 500,
                    value: 20608,
                    ddir: 1,
                    bs: 65536,
                },
                LogSample {
                    time_ms: 1000,
                    value: 20480,
                    ddir: 1,
                    bs: 65536,
                },
            ],
        }
    }

    #[test]
    fn names_and_lines_follow_fio() {
        let d = Path::new("/x");
        assert_eq!(
            file_name(&log(LogKind::Bw, 1, true), d),
            Path::new("/x/seqw_bw.1.log")
        );
        assert_eq!(
            file_name(&log(LogKind::Clat, 3, false), d),
            Path::new("/x/seqw_clat.log")
        );
        assert_eq!(
            render(&log(LogKind::Bw, 1, true)),
            "500, 20608, 1, 65536, 0\n1000, 20480, 1, 65536, 0\n"
        );
    }

    #[test]
    fn shared_files_are_appended_in_clone_order() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_all(
            &[log(LogKind::Iops, 1, false), log(LogKind::Iops, 2, false)],
            dir.path(),
        )
        .unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(
            std::fs::read_to_string(&files[0]).unwrap().lines().count(),
            4
        );
    }
}
