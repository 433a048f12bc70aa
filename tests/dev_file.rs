//! The `file:` device: persistence, size handling, O_DIRECT and every refusal.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fslab::fs::dev::file::FileOptions;
use fslab::fs::dev::spec::DeviceSpec;
use fslab::fs::dev::{self, BlockDev, DevError, FileDev};

const MIB: u64 = 1 << 20;

/// A scratch directory on the filesystem holding `target/` (a disk filesystem, so O_DIRECT
/// works there, unlike on tmpfs).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("scratch dir")
}

fn sized(size: u64) -> FileOptions {
    FileOptions {
        size: Some(size),
        direct: false,
    }
}

fn open_err(path: &Path, opts: &FileOptions) -> String {
    match FileDev::open(path, opts) {
        Ok(_) => panic!("{} opened but should have been refused", path.display()),
        Err(e) => {
            assert!(matches!(e, DevError::Open { .. }), "{e:?}");
            e.to_string()
        }
    }
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i / 7) as u8)).collect()
}

#[test]
fn file_device_persists_across_reopen() {
    let dir = scratch();
    let path = dir.path().join("dev.img");
    let data = pattern(3, 12288);
    {
        let d = FileDev::open(&path, &sized(4 * MIB)).expect("created");
        assert_eq!(d.size(), 4 * MIB);
        d.write_at(&data, 3 * MIB + 512, false).expect("write");
        d.write_at(&[7u8; 512], 0, true).expect("fua write");
        d.flush().expect("flush");
    }
    let d = FileDev::open(&path, &FileOptions::default()).expect("reopened");
    assert_eq!(d.size(), 4 * MIB);
    let mut got = vec![0u8; data.len()];
    d.read_at(&mut got, 3 * MIB + 512).expect("read");
    assert_eq!(got, data);
    let mut first = [0u8; 512];
    d.read_at(&mut first, 0).expect("read");
    assert_eq!(first, [7u8; 512]);
    assert_eq!(d.describe(), format!("file:{} 4MiB", path.display()));
}

#[test]
fn size_option_extends_a_short_file_and_never_truncates_a_long_one() {
    let dir = scratch();
    let path = dir.path().join("dev.img");
    std::fs::write(&path, vec![5u8; 8192]).expect("seed file");
    let d = FileDev::open(&path, &sized(MIB)).expect("extended");
    assert_eq!(d.size(), MIB);
    let mut b = vec![0u8; 1024];
    d.read_at(&mut b, 7680).expect("read across the old end");
    assert!(b[..512].iter().all(|&x| x == 5) && b[512..].iter().all(|&x| x == 0));
    drop(d);
    let d = FileDev::open(&path, &sized(64 << 10)).expect("smaller view");
    assert_eq!(d.size(), 64 << 10);
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), MIB);
    assert!(matches!(
        d.read_at(&mut b, 64 << 10),
        Err(DevError::OutOfRange { .. })
    ));
}

#[test]
fn misaligned_requests_on_a_file_are_refused() {
    let dir = scratch();
    let d = FileDev::open(&dir.path().join("dev.img"), &sized(MIB)).expect("created");
    let mut b = vec![0u8; 700];
    assert!(matches!(
        d.read_at(&mut b, 0),
        Err(DevError::Misaligned { .. })
    ));
    assert!(matches!(
        d.write_at(&b[..512], 256, false),
        Err(DevError::Misaligned { .. })
    ));
}

#[test]
fn missing_file_without_size_is_refused_with_a_hint() {
    let dir = scratch();
    let path = dir.path().join("absent.img");
    let msg = open_err(&path, &FileOptions::default());
    assert_eq!(
        msg,
        format!(
            "cannot use {} as a device: no such file (add size=SIZE to create it)",
            path.display()
        )
    );
    // A read-only open can never create the file, so it gets no hint to.
    let msg = FileDev::open_read_only(&path)
        .expect_err("a missing file opened")
        .to_string();
    assert_eq!(
        msg,
        format!("cannot use {} as a device: no such file", path.display())
    );
    assert!(!path.exists());
}

#[test]
fn file_whose_size_is_not_a_multiple_of_512_is_refused() {
    let dir = scratch();
    let path = dir.path().join("odd.img");
    std::fs::write(&path, vec![0u8; 10_000]).expect("seed file");
    let msg = open_err(&path, &FileOptions::default());
    assert!(
        msg.ends_with("its size 10000 is not a multiple of 512"),
        "{msg}"
    );
    let msg = open_err(&dir.path().join("new.img"), &sized(10_000));
    assert!(msg.ends_with("size=10000: not a multiple of 512"), "{msg}");
}

#[test]
fn file_smaller_than_a_block_is_refused() {
    let dir = scratch();
    let path = dir.path().join("tiny.img");
    std::fs::write(&path, vec![0u8; 1024]).expect("seed file");
    let msg = open_err(&path, &FileOptions::default());
    assert!(
        msg.ends_with("its size 1024 is too small (a device needs at least 4KiB)"),
        "{msg}"
    );
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").expect("seed file");
    assert!(open_err(&empty, &FileOptions::default()).contains("too small"));
}

#[test]
fn directory_is_refused() {
    let dir = scratch();
    let msg = open_err(dir.path(), &sized(MIB));
    assert!(
        msg.ends_with("not a regular file or a block device"),
        "{msg}"
    );
}

/// A file this process cannot open for writing: a read-only file, or for root (who may
/// write any file) a read-only sysfs attribute, which the kernel refuses even to root.
fn unwritable_file(dir: &Path) -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let path = dir.join("readonly.img");
        std::fs::write(&path, vec![0u8; 8192]).expect("seed file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        path
    } else {
        PathBuf::from("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
    }
}

#[test]
fn unwritable_file_is_refused() {
    let dir = scratch();
    let path = unwritable_file(dir.path());
    let msg = open_err(&path, &FileOptions::default());
    assert!(
        msg.contains("cannot open it for reading and writing"),
        "{msg}"
    );
}

#[test]
fn direct_io_reads_back_through_aligned_and_unaligned_buffers() {
    let dir = scratch();
    let path = dir.path().join("direct.img");
    let opts = FileOptions {
        size: Some(MIB),
        direct: true,
    };
    let d = FileDev::open(&path, &opts).expect("O_DIRECT on a disk filesystem");
    assert!(d.describe().ends_with(" direct"));
    // A Vec<u8> has no alignment guarantee; slicing at 1 byte forces the bounce path.
    let mut backing = pattern(9, 8192 + 1);
    let unaligned = &mut backing[1..];
    d.write_at(unaligned, 4096, false).expect("unaligned write");
    d.flush().expect("flush");
    let mut out = vec![0u8; 8192 + 1];
    d.read_at(&mut out[1..], 4096).expect("unaligned read");
    assert_eq!(&out[1..], &pattern(9, 8192 + 1)[1..]);
    drop(d);
    let again = FileDev::open(&path, &FileOptions::default()).expect("buffered reopen");
    let mut plain = vec![0u8; 8192];
    again.read_at(&mut plain, 4096).expect("read");
    assert_eq!(plain, &pattern(9, 8192 + 1)[1..]);
}

#[test]
fn open_builds_a_file_device_from_its_spec() {
    let dir = scratch();
    let path = dir.path().join("spec,with comma.img");
    let spec = DeviceSpec::File(fslab::fs::dev::spec::FileSpec {
        path: path.clone(),
        size: Some(2 * MIB),
        direct: false,
        latency: Default::default(),
    });
    let text = spec.to_string();
    let reparsed: DeviceSpec = text.parse().expect("canonical spec parses");
    let d = dev::open(&reparsed).expect("opens");
    assert_eq!(d.size(), 2 * MIB);
    assert_eq!(std::fs::metadata(&path).expect("created").len(), 2 * MIB);
}

#[test]
fn open_reports_a_bad_file_spec_naming_the_path() {
    let dir = scratch();
    let path = dir.path().join("missing.img");
    let spec: DeviceSpec = format!("file:{}", path.display())
        .parse()
        .expect("valid spec");
    match dev::open(&spec) {
        Ok(_) => panic!("a missing file without size= opened"),
        Err(e) => assert_eq!(
            e.to_string(),
            format!(
                "cannot use {} as a device: no such file (add size=SIZE to create it)",
                path.display()
            )
        ),
    }
    let striped: DeviceSpec = format!("stripe:2,mem:1m,file:{}", path.display())
        .parse()
        .expect("valid spec");
    assert!(matches!(dev::open(&striped), Err(DevError::Open { .. })));
}
