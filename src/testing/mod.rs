//! Test doubles: a recording target, an in-memory target and a virtual clock.
//!
//! Engines are tested by running them on these instead of a real filesystem: a
//! [`RecordingTarget`] logs every call an engine makes (an strace of the workload), a
//! [`MemTarget`] gives it a namespace and a capacity without a device, and a [`VirtualClock`]
//! makes every time it measures a sum of costs the test chose.
//!
//! This module is public so that integration tests and benchmarks can use it, but production
//! code never imports it: a binary's run goes through [`crate::backend`] and
//! [`crate::workload::SystemClock`] only. The test below keeps that true.

mod clock;
mod mem;
mod recording;

pub use clock::VirtualClock;
pub use mem::{MEM_BLOCK_SIZE, MemTarget};
pub use recording::{Call, Op, Record, RecordingTarget};

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Production code (everything outside `src/testing` and before a file's `#[cfg(test)]`
    /// module, comments aside: docs may point readers here) names no test double.
    #[test]
    fn production_code_does_not_import_the_test_doubles() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        assert!(files.len() > 50, "found the sources");
        let testing = src.join("testing");
        let mut offenders = Vec::new();
        for file in files.iter().filter(|f| !f.starts_with(&testing)) {
            let text = std::fs::read_to_string(file).expect("source is readable");
            let production = text.split("#[cfg(test)]").next().unwrap_or("");
            let code = production
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"));
            for line in code {
                if line.contains("crate::testing") || line.contains("fslab::testing") {
                    offenders.push(format!("{}: {}", file.display(), line.trim()));
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
