//! A device that holds something other than labfs is never formatted without `--mkfs`
//! (issue 7): the probe is `labfs mkfs`'s, over the first MiB, so a filesystem that leaves its
//! first sectors zero (ext4 keeps its superblock at 1 KiB) is found too.

use assert_cmd::Command;

/// Run fsmark; return (exit code, stderr).
fn fsmark(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fsmark"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A 16 MiB image laid out as mkfs.ext4 leaves one: the first KiB zero, the superblock at
/// 1 KiB (magic 0xEF53 at 0x38, incompat features at 0x60 with "extents" set).
fn ext4_like_image(dir: &std::path::Path) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("foreign.img");
    let mut bytes = vec![0u8; 16 << 20];
    bytes[1024 + 0x38] = 0x53;
    bytes[1024 + 0x39] = 0xef;
    bytes[1024 + 0x60] = 0x40;
    bytes[8 << 20] = 0x77;
    std::fs::write(&path, &bytes).expect("write image");
    (path, bytes)
}

#[test]
fn foreign_data_is_refused_and_left_untouched_without_mkfs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (path, before) = ext4_like_image(tmp.path());
    let device = format!("file:{}", path.display());
    let (rc, err) = fsmark(&["--device", &device, "-d", "/t", "-n", "10", "-s", "0"]);
    assert_ne!(rc, 0, "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.contains("not blank") && err.contains("--mkfs"),
        "{err:?}"
    );
    assert!(
        err.contains("an ext4 filesystem"),
        "names what it found: {err:?}"
    );
    assert!(
        std::fs::read(&path).expect("read") == before,
        "the image was written to"
    );

    // Asked for, it formats; the run then succeeds and a second run mounts what it made.
    let (rc, err) = fsmark(&[
        "--device", &device, "--mkfs", "-d", "/t", "-n", "10", "-s", "0",
    ]);
    assert_eq!(rc, 0, "{err}");
    let (rc, err) = fsmark(&["--device", &device, "-d", "/u", "-n", "10", "-s", "0"]);
    assert_eq!(rc, 0, "an existing labfs is mounted, not refused: {err}");
}

#[test]
fn an_all_zero_file_is_formatted_without_mkfs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("zero.img");
    std::fs::write(&path, vec![0u8; 16 << 20]).expect("write image");
    let device = format!("file:{}", path.display());
    let (rc, err) = fsmark(&["--device", &device, "-d", "/t", "-n", "10", "-s", "0"]);
    assert_eq!(rc, 0, "{err}");
}
