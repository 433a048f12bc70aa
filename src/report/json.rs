//! JSON documents written to a file atomically.
//!
//! A long run rewrites its JSON after each step; writing to a temporary file beside the target
//! and renaming it over the old one means a reader (or a crash) never sees half a document.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Write `value` as pretty JSON (with a final newline) to `path`, replacing it atomically.
pub fn write_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> io::Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = io::BufWriter::new(fs::File::create(&tmp)?);
        serde_json::to_writer_pretty(&mut f, value).map_err(io::Error::other)?;
        f.write_all(b"\n")?;
        f.into_inner().map_err(|e| e.into_error())?.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_replaces_the_whole_document_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, &vec![1, 2, 3]).unwrap();
        write_atomic(&p, &vec![4]).unwrap();
        let v: Vec<u32> = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v, vec![4]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn unwritable_destination_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing").join("out.json");
        assert!(write_atomic(&p, &1).is_err());
    }
}
