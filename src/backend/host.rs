//! `HostTarget`: the [`Target`] trait on the machine's real filesystems, via system calls.
//!
//! An [`Fd`] here is the kernel's file descriptor, so no table sits between a workload and the
//! kernel: the host baseline pays exactly the system calls the real tool would.

use std::ffi::CString;
use std::io::{IoSlice, IoSliceMut};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use nix::errno::Errno;

use super::aio::AioQueue;
use super::queue::{IoQueue, QueueKind, ThreadedQueue};
use super::{
    Access, DirEntry, FallocMode, Fd, FileKind, FileStat, FsStat, OpenFlags, Result, SyncMode,
    Target, TargetError,
};

/// The host's own filesystems, reached through system calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostTarget;

impl HostTarget {
    /// A host target.
    pub fn new() -> Self {
        HostTarget
    }
}

fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| TargetError::with_detail(Errno::EINVAL, "path contains a NUL byte"))
}

/// Turn a `-1` return into the thread's errno.
fn check(ret: libc::c_int) -> Result<libc::c_int> {
    if ret < 0 {
        Err(Errno::last().into())
    } else {
        Ok(ret)
    }
}

fn check_size(ret: libc::ssize_t) -> Result<usize> {
    if ret < 0 {
        Err(Errno::last().into())
    } else {
        Ok(ret as usize)
    }
}

fn raw(fd: Fd) -> libc::c_int {
    fd.0 as libc::c_int
}

fn kind_of_mode(mode: u32) -> FileKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => FileKind::File,
        libc::S_IFDIR => FileKind::Dir,
        libc::S_IFLNK => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

fn to_file_stat(st: &libc::stat) -> FileStat {
    let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
    FileStat {
        ino: st.st_ino,
        kind: kind_of_mode(st.st_mode),
        mode: st.st_mode,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        blksize: st.st_blksize as u32,
        atime_ns: ns(st.st_atime, st.st_atime_nsec),
        mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
        ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
    }
}

fn open_flags(flags: OpenFlags) -> libc::c_int {
    let mut f = match flags.access {
        Access::Read => libc::O_RDONLY,
        Access::Write => libc::O_WRONLY,
        Access::ReadWrite => libc::O_RDWR,
    };
    if flags.create {
        f |= libc::O_CREAT;
    }
    if flags.exclusive {
        f |= libc::O_EXCL;
    }
    if flags.truncate {
        f |= libc::O_TRUNC;
    }
    if flags.append {
        f |= libc::O_APPEND;
    }
    if flags.direct {
        f |= libc::O_DIRECT;
    }
    f |= match flags.sync {
        SyncMode::None => 0,
        SyncMode::Data => libc::O_DSYNC,
        SyncMode::Full => libc::O_SYNC,
    };
    f | libc::O_CLOEXEC
}

impl Target for HostTarget {
    fn describe(&self) -> String {
        "host: the kernel's filesystems via system calls".to_string()
    }

    fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let p = cpath(path)?;
        // SAFETY: p is a valid NUL-terminated string for the duration of the call.
        check(unsafe { libc::mkdir(p.as_ptr(), mode as libc::mode_t) }).map(drop)
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        let p = cpath(path)?;
        // SAFETY: as above.
        check(unsafe { libc::rmdir(p.as_ptr()) }).map(drop)
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd> {
        let p = cpath(path)?;
        // SAFETY: as above; the mode is passed as the variadic third argument open expects.
        let fd = check(unsafe { libc::open(p.as_ptr(), open_flags(flags), mode as libc::c_uint) })?;
        Ok(Fd(fd as u64))
    }

    fn close(&self, fd: Fd) -> Result<()> {
        // SAFETY: closing a descriptor this target issued.
        check(unsafe { libc::close(raw(fd)) }).map(drop)
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        check_size(unsafe { libc::write(raw(fd), buf.as_ptr().cast(), buf.len()) })
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        check_size(unsafe {
            libc::pwrite(
                raw(fd),
                buf.as_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        })
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: buf is valid and writable for buf.len() bytes.
        check_size(unsafe { libc::read(raw(fd), buf.as_mut_ptr().cast(), buf.len()) })
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize> {
        // SAFETY: buf is valid and writable for buf.len() bytes.
        check_size(unsafe {
            libc::pread(
                raw(fd),
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        })
    }

    fn fsync(&self, fd: Fd) -> Result<()> {
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::fsync(raw(fd)) }).map(drop)
    }

    fn fdatasync(&self, fd: Fd) -> Result<()> {
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::fdatasync(raw(fd)) }).map(drop)
    }

    fn fstat(&self, fd: Fd) -> Result<FileStat> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: st is writable storage for one stat struct.
        check(unsafe { libc::fstat(raw(fd), st.as_mut_ptr()) })?;
        // SAFETY: fstat succeeded, so it filled st.
        let st = unsafe { st.assume_init() };
        Ok(to_file_stat(&st))
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()> {
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::ftruncate(raw(fd), len as libc::off_t) }).map(drop)
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()> {
        let m = match mode {
            FallocMode::Allocate => 0,
            FallocMode::KeepSize => libc::FALLOC_FL_KEEP_SIZE,
            FallocMode::PunchHole => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            FallocMode::ZeroRange => libc::FALLOC_FL_ZERO_RANGE,
        };
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::fallocate(raw(fd), m, offset as libc::off_t, len as libc::off_t) })
            .map(drop)
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        let p = cpath(path)?;
        // SAFETY: p is a valid C string.
        check(unsafe { libc::unlink(p.as_ptr()) }).map(drop)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (f, t) = (cpath(from)?, cpath(to)?);
        // SAFETY: both are valid C strings.
        check(unsafe { libc::rename(f.as_ptr(), t.as_ptr()) }).map(drop)
    }

    fn link(&self, existing: &Path, new: &Path) -> Result<()> {
        let (e, n) = (cpath(existing)?, cpath(new)?);
        // SAFETY: both are valid C strings.
        check(unsafe { libc::link(e.as_ptr(), n.as_ptr()) }).map(drop)
    }

    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let dir = std::fs::read_dir(path).map_err(io_to_target)?;
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry.map_err(io_to_target)?;
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => FileKind::Dir,
                Ok(t) if t.is_file() => FileKind::File,
                Ok(t) if t.is_symlink() => FileKind::Symlink,
                _ => FileKind::Other,
            };
            use std::os::unix::fs::DirEntryExt;
            out.push(DirEntry {
                name: entry.file_name().as_bytes().to_vec(),
                ino: entry.ino(),
                kind,
            });
        }
        Ok(out)
    }

    fn stat(&self, path: &Path) -> Result<FileStat> {
        let p = cpath(path)?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: p is a valid C string and st writable storage for one stat struct.
        check(unsafe { libc::stat(p.as_ptr(), st.as_mut_ptr()) })?;
        // SAFETY: stat succeeded, so it filled st.
        let st = unsafe { st.assume_init() };
        Ok(to_file_stat(&st))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let p = cpath(path)?;
        // SAFETY: p is a valid C string.
        check(unsafe { libc::truncate(p.as_ptr(), len as libc::off_t) }).map(drop)
    }

    fn statfs(&self, path: &Path) -> Result<FsStat> {
        let s = nix::sys::statfs::statfs(path)?;
        Ok(FsStat {
            bsize: s.block_size() as u64,
            blocks: s.blocks(),
            bfree: s.blocks_free(),
            bavail: s.blocks_available(),
            files: s.files(),
            ffree: s.files_free(),
            namelen: s.maximum_name_length() as u64,
        })
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        Ok(())
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        let p = cpath(path)?;
        // SAFETY: p is a valid C string.
        let fd = check(unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?;
        // SAFETY: fd was just opened and is closed right after.
        let ret = check(unsafe { libc::syncfs(fd) });
        // SAFETY: as above.
        unsafe { libc::close(fd) };
        ret.map(drop)
    }

    fn lseek(&self, fd: Fd, offset: u64) -> Result<u64> {
        // SAFETY: plain syscall on a descriptor.
        let ret = unsafe { libc::lseek(raw(fd), offset as libc::off_t, libc::SEEK_SET) };
        if ret < 0 {
            Err(Errno::last().into())
        } else {
            Ok(ret as u64)
        }
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> Result<usize> {
        let n = libc::c_int::try_from(bufs.len()).map_err(|_| Errno::EINVAL)?;
        // SAFETY: IoSliceMut is ABI-compatible with struct iovec, and each slice is valid and
        // writable for its length.
        check_size(unsafe {
            libc::preadv(raw(fd), bufs.as_mut_ptr().cast(), n, offset as libc::off_t)
        })
    }

    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> Result<usize> {
        let n = libc::c_int::try_from(bufs.len()).map_err(|_| Errno::EINVAL)?;
        // SAFETY: IoSlice is ABI-compatible with struct iovec, each slice valid for reads.
        check_size(unsafe {
            libc::pwritev(raw(fd), bufs.as_ptr().cast(), n, offset as libc::off_t)
        })
    }

    fn io_queue(self: Arc<Self>, kind: QueueKind, depth: u32) -> Result<Box<dyn IoQueue>> {
        match kind {
            QueueKind::Libaio => Ok(Box::new(AioQueue::new(depth)?)),
            QueueKind::IoUring => Err(TargetError::with_detail(
                Errno::ENOSYS,
                "io_uring is not implemented on host directories; ioengine=libaio is the \
                 queue-depth engine there",
            )),
            QueueKind::Threads => Ok(Box::new(ThreadedQueue::new(self, depth)?)),
        }
    }
}

fn io_to_target(e: std::io::Error) -> TargetError {
    match e.raw_os_error() {
        Some(code) => Errno::from_raw(code).into(),
        None => TargetError::with_detail(Errno::EIO, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_on_a_temp_dir() {
        let dir = tempfile::tempdir().unwrap();
        let t = HostTarget::new();
        let sub = dir.path().join("d");
        t.mkdir(&sub, 0o777).unwrap();
        assert_eq!(t.mkdir(&sub, 0o777).unwrap_err().errno, Errno::EEXIST);
        let f = sub.join("f");
        let fd = t.open(&f, OpenFlags::create_truncate(), 0o666).unwrap();
        assert_eq!(t.write(fd, b"hello").unwrap(), 5);
        t.fsync(fd).unwrap();
        let mut buf = [0u8; 5];
        assert_eq!(t.pread(fd, &mut buf, 0).unwrap(), 5);
        assert_eq!(&buf, b"hello");
        assert_eq!(t.fstat(fd).unwrap().size, 5);
        t.close(fd).unwrap();
        let names: Vec<_> = t
            .readdir(&sub)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec![b"f".to_vec()]);
        t.unlink(&f).unwrap();
        assert_eq!(t.stat(&f).unwrap_err().errno, Errno::ENOENT);
        let g = dir.path().join("g");
        let fd = t.open(&g, OpenFlags::create_truncate(), 0o644).unwrap();
        let n = t
            .pwritev(fd, &[IoSlice::new(b"ab"), IoSlice::new(b"cde")], 10)
            .unwrap();
        assert_eq!(n, 5);
        let (mut x, mut y) = ([0u8; 2], [0u8; 3]);
        let n = t
            .preadv(
                fd,
                &mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)],
                10,
            )
            .unwrap();
        assert_eq!((n, &x, &y), (5, b"ab", b"cde"));
        assert_eq!(t.lseek(fd, 2).unwrap(), 2);
        t.write(fd, b"Q").unwrap();
        let mut one = [0u8; 1];
        t.pread(fd, &mut one, 2).unwrap();
        assert_eq!(&one, b"Q");
        t.close(fd).unwrap();
        assert!(t.statfs(dir.path()).unwrap().blocks > 0);
    }
}
