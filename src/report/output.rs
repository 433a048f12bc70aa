//! Output files named on a command line (`-l`, `--json`, `--stats-out`, `--trace-out`),
//! created before a run starts.
//!
//! A benchmark that runs for an hour and then cannot write its results has wasted the hour,
//! so every tool opens each file it will write before any work: a bad path (a missing
//! directory, a directory where a file should be, no permission) is one line naming the file,
//! before the device is even opened. fs_mark does the same with its log (`fopen(..., "a")`
//! first thing after parsing).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// An output file could not be created or opened.
#[derive(Debug, Error)]
#[error("cannot open {what} {}: {source}", path.display())]
pub struct OutputError {
    /// What the file is for, as the user knows it: `log file`, `--json file`, ...
    pub what: &'static str,
    /// The path as given.
    pub path: PathBuf,
    /// Why it could not be opened.
    pub source: std::io::Error,
}

/// An open output file and the path it was opened at.
#[derive(Debug)]
pub struct OutputFile {
    /// What the file is for (`log file`, `--stats-out file`, ...), for later error messages.
    pub what: &'static str,
    /// The path as given on the command line.
    pub path: PathBuf,
    /// The open file.
    pub file: File,
}

impl OutputFile {
    /// Create (or truncate) `path` for writing.
    pub fn create(what: &'static str, path: &Path) -> Result<OutputFile, OutputError> {
        Self::open(
            what,
            path,
            OpenOptions::new().write(true).create(true).truncate(true),
        )
    }

    /// Open `path` for appending, creating it if needed (fs_mark's log).
    pub fn append(what: &'static str, path: &Path) -> Result<OutputFile, OutputError> {
        Self::open(what, path, OpenOptions::new().append(true).create(true))
    }

    fn open(what: &'static str, path: &Path, how: &OpenOptions) -> Result<OutputFile, OutputError> {
        let file = how.open(path).map_err(|source| OutputError {
            what,
            path: path.to_path_buf(),
            source,
        })?;
        Ok(OutputFile {
            what,
            path: path.to_path_buf(),
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn create_truncates_append_appends_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        std::fs::write(&p, "old contents").unwrap();
        OutputFile::create("--json file", &p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        let mut a = OutputFile::append("log file", &p).unwrap();
        a.file.write_all(b"one").unwrap();
        let mut a = OutputFile::append("log file", &p).unwrap();
        a.file.write_all(b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "onetwo");

        let missing = dir.path().join("no/such/dir/f");
        let e = OutputFile::create("--stats-out file", &missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot open --stats-out file {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        let e = OutputFile::create("--json file", dir.path()).unwrap_err();
        assert!(e.to_string().contains("Is a directory"), "{e}");
    }
}
