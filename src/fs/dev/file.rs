//! `file:PATH`: a regular file or a block device, through pread/pwrite and fdatasync.
//!
//! - Reads and writes are `pread(2)`/`pwrite(2)` at the request's offset, so requests from
//!   many threads need no lock here: the kernel serialises overlapping writes to a file per
//!   request, which gives the per-sector atomicity [`BlockDev`] promises.
//! - [`BlockDev::flush`] is `fdatasync(2)`: it writes back the file's dirty pages and, on a
//!   filesystem or device with a volatile cache, issues a cache flush. A flush with no write
//!   completed since the last one began has nothing to make durable and makes no call: the
//!   host's fdatasync would still flush its disk's cache, 50-300 us on this VM's disk,
//!   which was all of a clean `sync()` on labfs.
//! - A FUA write is a write followed by `fdatasync(2)`. Userspace has no per-request FUA on
//!   a plain `pwrite`; the fdatasync makes the request durable before the call returns, at the
//!   price of also flushing any other dirty data of the file (a stronger guarantee than FUA,
//!   never a weaker one).
//! - `direct` opens with `O_DIRECT`, bypassing the page cache. The kernel then wants the
//!   buffer, not just the offset, aligned; a caller's buffer that is not 4 KiB-aligned goes
//!   through an aligned bounce buffer. (A device with 4 KiB logical sectors also refuses
//!   512-byte requests under `O_DIRECT`; that comes back as an I/O error naming the request.)
//! - `size=SIZE` creates a missing regular file, or extends a shorter one, to SIZE bytes; a
//!   longer file is never truncated: the device is then its first SIZE bytes. A block
//!   device's size comes from the `BLKGETSIZE64` ioctl; `size=` may only shrink it.
//! - [`FileDev::open_read_only`] opens an existing image for inspection only (the admin
//!   tool's `check`, `info` and `print`, which must work on images the user may only read and
//!   must never change one): every write is refused with `EROFS`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::fs::dev::{BlockDev, DevError, IoReq, MIN_DEVICE_SIZE, SECTOR_SIZE, check_io};
use crate::units::format_size_iec;

/// Alignment of `O_DIRECT` bounce buffers: a page, which satisfies every logical block size.
const DIRECT_ALIGN: usize = 4096;

/// The image files among some paths that do not exist yet: the ones an open will create
/// (exclusively, so never a file that appears meanwhile), noted before the open so that a
/// tool whose mkfs or mount then fails can remove them and leave nothing behind.
#[derive(Debug)]
pub struct NewFiles(Vec<PathBuf>);

impl NewFiles {
    /// Note which of `paths` do not exist now.
    pub fn among<'a>(paths: impl IntoIterator<Item = &'a Path>) -> NewFiles {
        NewFiles(
            paths
                .into_iter()
                .filter(|p| !p.exists())
                .map(Path::to_path_buf)
                .collect(),
        )
    }

    /// Remove them (after the failure, with the device closed). Best effort: the failure is
    /// what the caller reports.
    pub fn remove(self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How to open a file device (the `size=` and `direct` options of `file:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// Create or extend a regular file to this size; the device is this big.
    pub size: Option<u64>,
    /// Open with `O_DIRECT`.
    pub direct: bool,
}

/// A device backed by a regular file or a block device.
#[derive(Debug)]
pub struct FileDev {
    file: File,
    path: PathBuf,
    size: u64,
    direct: bool,
    block_device: bool,
    read_only: bool,
    /// A write completed since the last flush began (set after the write, cleared as a
    /// flush starts: a write its caller saw complete before a flush is always covered).
    unflushed: AtomicBool,
    /// fdatasync calls made (flushes and FUA writes).
    syncs: AtomicU64,
}

/// The size of the block device open as `file`, from `BLKGETSIZE64`.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "s390x"
))]
fn block_device_size(file: &File) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    // _IOR(0x12, 114, size_t) in the asm-generic ioctl encoding these architectures share:
    // direction read (2) in bits 30-31, argument size 8 in bits 16-29, type 0x12, number 114.
    const BLKGETSIZE64: libc::c_ulong = (2 << 30) | (8 << 16) | (0x12 << 8) | 114;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points at `size`, a
    // live u64; the fd is valid for the duration of the call because `file` is borrowed.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut size as *mut u64) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// The size of the block device open as `file`: where its end is (architectures whose ioctl
/// encoding differs from asm-generic's).
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "s390x"
)))]
fn block_device_size(file: &File) -> io::Result<u64> {
    use std::io::Seek;
    let mut f = file;
    f.seek(io::SeekFrom::End(0))
}

impl FileDev {
    /// Open `path` as a device; see the module docs for what `opts` do and what is refused.
    pub fn open(path: &Path, opts: &FileOptions) -> Result<FileDev, DevError> {
        FileDev::open_as(path, opts, true)
    }

    /// Open an existing image or block device for reading only; writes fail with `EROFS`.
    pub fn open_read_only(path: &Path) -> Result<FileDev, DevError> {
        FileDev::open_as(path, &FileOptions::default(), false)
    }

    fn open_as(path: &Path, opts: &FileOptions, writable: bool) -> Result<FileDev, DevError> {
        let refuse = |reason: String| DevError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(size) = opts.size {
            check_size(size).map_err(|r| refuse(format!("size={size}: {r}")))?;
        }
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(refuse(format!("cannot inspect it: {e}"))),
        };
        let block_device = meta
            .as_ref()
            .is_some_and(|m| m.file_type().is_block_device());
        if let Some(m) = &meta {
            if !m.is_file() && !block_device {
                return Err(refuse("not a regular file or a block device".to_string()));
            }
        } else if opts.size.is_none() {
            // Only a writable open can create the file, so only it gets the hint.
            return Err(refuse(if writable {
                "no such file (add size=SIZE to create it)".to_string()
            } else {
                "no such file".to_string()
            }));
        }

        let mut oo = OpenOptions::new();
        oo.read(true).write(writable);
        if meta.is_none() {
            // Exclusively: a file that appeared since the look above is someone's, and a
            // caller that removes the files it created after a failure must never take it.
            oo.create_new(true);
        }
        if opts.direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        let file = oo.open(path).map_err(|e| {
            let reason = match e.raw_os_error() {
                Some(libc::EINVAL) if opts.direct => {
                    format!("its filesystem does not support O_DIRECT ({e})")
                }
                _ if e.kind() == io::ErrorKind::PermissionDenied && writable => {
                    format!("cannot open it for reading and writing ({e})")
                }
                _ if e.kind() == io::ErrorKind::PermissionDenied => {
                    format!("cannot open it for reading ({e})")
                }
                _ => format!("cannot open it: {e}"),
            };
            refuse(reason)
        })?;

        let size = if block_device {
            let dev_size = block_device_size(&file)
                .map_err(|e| refuse(format!("cannot read the block device's size: {e}")))?;
            match opts.size {
                Some(s) if s > dev_size => {
                    return Err(refuse(format!(
                        "size={} is larger than the block device ({})",
                        format_size_iec(s),
                        format_size_iec(dev_size)
                    )));
                }
                Some(s) => s,
                None => dev_size,
            }
        } else {
            let len = file
                .metadata()
                .map_err(|e| refuse(format!("cannot read its size: {e}")))?
                .len();
            match opts.size {
                Some(s) if s > len => {
                    file.set_len(s).map_err(|e| {
                        refuse(format!("cannot extend it to {}: {e}", format_size_iec(s)))
                    })?;
                    s
                }
                Some(s) => s,
                None => len,
            }
        };
        check_size(size).map_err(|r| refuse(format!("its size {size} is {r}")))?;
        Ok(FileDev {
            file,
            path: path.to_path_buf(),
            size,
            direct: opts.direct,
            block_device,
            read_only: !writable,
            // Whatever reached the file before this descriptor is covered by the first flush.
            unflushed: AtomicBool::new(true),
            syncs: AtomicU64::new(0),
        })
    }

    /// The path the device was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the path is a block device (rather than a regular file).
    pub fn is_block_device(&self) -> bool {
        self.block_device
    }

    fn io_err(&self, req: IoReq, e: io::Error) -> DevError {
        DevError::io(self.describe(), req, e)
    }

    fn sync(&self, req: IoReq) -> Result<(), DevError> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.file.sync_data().map_err(|e| self.io_err(req, e))
    }

    /// How many `fdatasync(2)` calls the device has made.
    pub fn syncs_issued(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}

/// Why a device size is unusable, if it is.
fn check_size(size: u64) -> Result<(), String> {
    if !size.is_multiple_of(SECTOR_SIZE) {
        return Err("not a multiple of 512".to_string());
    }
    if size < MIN_DEVICE_SIZE {
        return Err(format!(
            "too small (a device needs at least {})",
            format_size_iec(MIN_DEVICE_SIZE)
        ));
    }
    Ok(())
}

/// A zeroed buffer of `len` bytes starting at a `DIRECT_ALIGN` boundary: a vector with
/// slack, and the offset of the aligned start in it.
fn aligned_buffer(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + DIRECT_ALIGN];
    let start = v.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
    (v, start)
}

fn is_aligned(p: *const u8) -> bool {
    p.align_offset(DIRECT_ALIGN) == 0
}

impl BlockDev for FileDev {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        let req = IoReq::read(offset, buf.len());
        check_io(self.size, req, || self.describe())?;
        if self.direct && !is_aligned(buf.as_ptr()) {
            let (mut v, start) = aligned_buffer(buf.len());
            let bounce = &mut v[start..start + buf.len()];
            self.file
                .read_exact_at(bounce, offset)
                .map_err(|e| self.io_err(req, e))?;
            buf.copy_from_slice(bounce);
            return Ok(());
        }
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| self.io_err(req, e))
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        let req = IoReq::write(offset, buf.len(), fua);
        check_io(self.size, req, || self.describe())?;
        if self.read_only {
            return Err(self.io_err(req, io::Error::from_raw_os_error(libc::EROFS)));
        }
        if self.direct && !is_aligned(buf.as_ptr()) {
            let (mut v, start) = aligned_buffer(buf.len());
            let bounce = &mut v[start..start + buf.len()];
            bounce.copy_from_slice(buf);
            self.file
                .write_all_at(bounce, offset)
                .map_err(|e| self.io_err(req, e))?;
        } else {
            self.file
                .write_all_at(buf, offset)
                .map_err(|e| self.io_err(req, e))?;
        }
        self.unflushed.store(true, Ordering::Release);
        if fua { self.sync(req) } else { Ok(()) }
    }

    fn flush(&self) -> Result<(), DevError> {
        if self.read_only {
            // Nothing was written through this descriptor, so nothing can be in flight.
            return Ok(());
        }
        if !self.unflushed.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.sync(IoReq::flush()).inspect_err(|_| {
            // Not made durable: the next flush must try again.
            self.unflushed.store(true, Ordering::Release);
        })
    }

    fn describe(&self) -> String {
        format!(
            "file:{} {}{}{}",
            self.path.display(),
            format_size_iec(self.size),
            if self.direct { " direct" } else { "" },
            if self.read_only { " read-only" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_with_no_write_since_the_last_makes_no_call() {
        let dir = tempfile::tempdir().unwrap();
        let opts = FileOptions {
            size: Some(1 << 20),
            direct: false,
        };
        let dev = FileDev::open(&dir.path().join("d.img"), &opts).unwrap();
        dev.flush().unwrap();
        assert_eq!(
            dev.syncs_issued(),
            1,
            "the first flush covers what came before"
        );
        dev.flush().unwrap();
        assert_eq!(dev.syncs_issued(), 1);
        dev.write_at(&[7u8; 512], 4096, false).unwrap();
        dev.flush().unwrap();
        assert_eq!(dev.syncs_issued(), 2);
        dev.flush().unwrap();
        assert_eq!(dev.syncs_issued(), 2);
        dev.write_at(&[8u8; 512], 0, true).unwrap();
        assert_eq!(dev.syncs_issued(), 3, "a FUA write syncs at once");
        let mut back = [0u8; 512];
        dev.read_at(&mut back, 4096).unwrap();
        assert_eq!(back, [7u8; 512]);
    }

    #[test]
    fn aligned_buffer_starts_on_a_page() {
        for len in [512, 4096, 12288] {
            let (v, start) = aligned_buffer(len);
            assert!(is_aligned(v[start..].as_ptr()));
            assert!(v.len() >= start + len);
        }
    }

    #[test]
    fn a_read_only_device_reads_and_refuses_writes() {
        let dir = tempfile::tempdir().expect("scratch dir");
        let path = dir.path().join("ro.img");
        let rw = FileDev::open(
            &path,
            &FileOptions {
                size: Some(64 << 10),
                direct: false,
            },
        )
        .expect("create");
        rw.write_at(&[7u8; 512], 4096, false).expect("write");
        drop(rw);
        let ro = FileDev::open_read_only(&path).expect("open read-only");
        let mut b = [0u8; 512];
        ro.read_at(&mut b, 4096).expect("read");
        assert_eq!(b, [7u8; 512]);
        let err = ro.write_at(&b, 0, false).expect_err("read-only");
        assert!(err.to_string().contains("Read-only"), "{err}");
        assert!(ro.flush().is_ok());
        assert!(ro.describe().ends_with(" read-only"), "{}", ro.describe());
        let mut back = [0u8; 512];
        ro.read_at(&mut back, 0).expect("read");
        assert_eq!(back, [0u8; 512], "the refused write changed nothing");
    }

    #[test]
    fn check_size_names_the_problem() {
        assert_eq!(check_size(4097), Err("not a multiple of 512".to_string()));
        assert_eq!(
            check_size(1024),
            Err("too small (a device needs at least 4KiB)".to_string())
        );
        assert_eq!(check_size(8192), Ok(()));
    }
}
