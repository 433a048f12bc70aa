//! `LabTarget`: the [`Target`] trait on labfs.
//!
//! Paths are labfs paths (absolute from its root). File descriptors index a table of open file
//! descriptions (inode, offset, flags), as the kernel's file table does; the offset of each
//! description is shared by whoever uses that fd, so `write` on one fd from two threads
//! serialises on it like on Linux.

use std::io::{IoSlice, IoSliceMut};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use super::queue::{IoQueue, QueueKind, ThreadedQueue};
use super::{
    DirEntry, FallocMode, Fd, FileStat, FsStat, OpenFlags, Result, SyncMode, Target, TargetError,
};
use crate::fs::Fs;
use crate::fs::dev::BlockDev;
use crate::fs::error::FsError;
use crate::fs::inode::{Inode, InodeRead};
use crate::fs::mkfs::mount_formatted;
use crate::fs::options::Options;

impl From<FsError> for TargetError {
    fn from(e: FsError) -> Self {
        let errno = e.errno();
        match e {
            // Plain errno errors need no words; typed corruption and I/O errors keep theirs.
            FsError::Crc { .. }
            | FsError::Corrupt { .. }
            | FsError::Io { .. }
            | FsError::ShutDownBeforeUnmount { .. }
            | FsError::BadSuperblock(_)
            | FsError::Invalid(_) => TargetError::with_detail(errno, e.to_string()),
            _ => TargetError::errno(errno),
        }
    }
}

pub use crate::fs::mkfs::Format;

struct OpenFile {
    ip: Arc<Inode>,
    flags: OpenFlags,
    pos: Mutex<u64>,
}

/// labfs behind the Target surface.
pub struct LabTarget {
    fs: Arc<Fs>,
    files: Mutex<FdTable>,
    describe: String,
}

#[derive(Default)]
struct FdTable {
    slots: Vec<Option<Arc<OpenFile>>>,
    free: Vec<usize>,
}

fn path_bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}

impl LabTarget {
    /// Mount (and if asked, first make) labfs on `dev`.
    pub fn new(dev: Arc<dyn BlockDev>, options: &Options, format: Format) -> Result<LabTarget> {
        let describe = format!("labfs on {} ({})", dev.describe(), options);
        let fs = mount_formatted(dev, options, format)?;
        Ok(LabTarget {
            fs,
            files: Mutex::new(FdTable::default()),
            describe,
        })
    }

    /// The mounted filesystem (for stats, traces and tests).
    pub fn fs(&self) -> &Arc<Fs> {
        &self.fs
    }

    /// Write everything back and record the superblock; the target must not be used after.
    pub fn unmount(&self) -> Result<()> {
        self.fs.unmount().map_err(Into::into)
    }

    fn file(&self, fd: Fd) -> Result<Arc<OpenFile>> {
        let t = self.files.lock();
        t.slots
            .get(fd.0 as usize)
            .and_then(|s| s.clone())
            .ok_or_else(|| TargetError::errno(nix::errno::Errno::EBADF))
    }

    fn insert(&self, f: OpenFile) -> Fd {
        let mut t = self.files.lock();
        let f = Some(Arc::new(f));
        match t.free.pop() {
            Some(i) => {
                t.slots[i] = f;
                Fd(i as u64)
            }
            None => {
                t.slots.push(f);
                Fd((t.slots.len() - 1) as u64)
            }
        }
    }

    fn after_write(&self, f: &OpenFile) -> Result<()> {
        match f.flags.sync {
            SyncMode::None if !f.flags.direct => Ok(()),
            SyncMode::None => self.fs.writeback(&f.ip).map(drop).map_err(Into::into),
            SyncMode::Data => self.fs.fsync(&f.ip, true).map_err(Into::into),
            SyncMode::Full => self.fs.fsync(&f.ip, false).map_err(Into::into),
        }
    }
}

impl Drop for LabTarget {
    fn drop(&mut self) {
        // Best effort: an explicit unmount() reports errors; a dropped target still writes back.
        let _ = self.fs.unmount();
    }
}

impl Target for LabTarget {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let (dir, name) = self.fs.lookup_parent(path_bytes(path))?;
        self.fs.mkdir(&dir, name, mode)?;
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        let (dir, name) = self.fs.lookup_parent(path_bytes(path))?;
        Ok(self.fs.rmdir(&dir, name)?)
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd> {
        let p = path_bytes(path);
        let (ip, created) = if flags.create {
            let (dir, name) = self.fs.lookup_parent(p)?;
            self.fs.create(&dir, name, mode, flags.exclusive)?
        } else {
            (self.fs.lookup_path(p)?, false)
        };
        let is_dir = InodeRead::lock(Arc::clone(&ip)).is_dir();
        if is_dir && flags.writable() {
            return Err(FsError::IsDir.into());
        }
        if flags.truncate && flags.writable() && !created && !is_dir {
            self.fs.truncate(&ip, 0)?;
        }
        self.fs.open_inode(&ip);
        Ok(self.insert(OpenFile {
            ip,
            flags,
            pos: Mutex::new(0),
        }))
    }

    fn close(&self, fd: Fd) -> Result<()> {
        let f = {
            let mut t = self.files.lock();
            let f = t.slots.get_mut(fd.0 as usize).and_then(Option::take);
            if f.is_some() {
                t.free.push(fd.0 as usize);
            }
            f
        };
        let f = f.ok_or_else(|| TargetError::errno(nix::errno::Errno::EBADF))?;
        Ok(self.fs.release_inode(&f.ip)?)
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.writable() {
            return Err(FsError::BadFd.into());
        }
        let mut pos = f.pos.lock();
        if f.flags.append {
            *pos = InodeRead::lock(Arc::clone(&f.ip)).di.size;
        }
        let n = self.fs.write(&f.ip, *pos, buf)?;
        *pos += n as u64;
        drop(pos);
        self.after_write(&f)?;
        Ok(n)
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.writable() {
            return Err(FsError::BadFd.into());
        }
        let n = self.fs.write(&f.ip, offset, buf)?;
        self.after_write(&f)?;
        Ok(n)
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.readable() {
            return Err(FsError::BadFd.into());
        }
        let mut pos = f.pos.lock();
        let n = self.fs.read(&f.ip, *pos, buf)?;
        *pos += n as u64;
        Ok(n)
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.readable() {
            return Err(FsError::BadFd.into());
        }
        Ok(self.fs.read(&f.ip, offset, buf)?)
    }

    fn fsync(&self, fd: Fd) -> Result<()> {
        let f = self.file(fd)?;
        Ok(self.fs.fsync(&f.ip, false)?)
    }

    fn fdatasync(&self, fd: Fd) -> Result<()> {
        let f = self.file(fd)?;
        Ok(self.fs.fsync(&f.ip, true)?)
    }

    fn fstat(&self, fd: Fd) -> Result<FileStat> {
        let f = self.file(fd)?;
        let r = InodeRead::lock(Arc::clone(&f.ip));
        Ok(r.stat(f.ip.ino))
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()> {
        let f = self.file(fd)?;
        if !f.flags.writable() {
            return Err(FsError::Invalid("file not open for writing").into());
        }
        Ok(self.fs.truncate(&f.ip, len)?)
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()> {
        let f = self.file(fd)?;
        if !f.flags.writable() {
            return Err(FsError::BadFd.into());
        }
        Ok(self.fs.fallocate(&f.ip, mode, offset, len)?)
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        let (dir, name) = self.fs.lookup_parent(path_bytes(path))?;
        Ok(self.fs.unlink(&dir, name)?)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (sdir, sname) = self.fs.lookup_parent(path_bytes(from))?;
        let (ddir, dname) = self.fs.lookup_parent(path_bytes(to))?;
        Ok(self.fs.rename(&sdir, sname, &ddir, dname)?)
    }

    fn link(&self, existing: &Path, new: &Path) -> Result<()> {
        let ip = self.fs.lookup_path(path_bytes(existing))?;
        let (dir, name) = self.fs.lookup_parent(path_bytes(new))?;
        Ok(self.fs.link(&ip, &dir, name)?)
    }

    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let dir = self.fs.lookup_path(path_bytes(path))?;
        Ok(self.fs.readdir(&dir)?)
    }

    fn stat(&self, path: &Path) -> Result<FileStat> {
        let ip = self.fs.lookup_path(path_bytes(path))?;
        let r = InodeRead::lock(Arc::clone(&ip));
        Ok(r.stat(ip.ino))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let ip = self.fs.lookup_path(path_bytes(path))?;
        Ok(self.fs.truncate(&ip, len)?)
    }

    fn statfs(&self, path: &Path) -> Result<FsStat> {
        self.fs.lookup_path(path_bytes(path))?;
        Ok(self.fs.statfs())
    }

    fn sync(&self) -> Result<()> {
        Ok(self.fs.sync()?)
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        self.fs.lookup_path(path_bytes(path))?;
        Ok(self.fs.sync()?)
    }

    fn lseek(&self, fd: Fd, offset: u64) -> Result<u64> {
        let f = self.file(fd)?;
        *f.pos.lock() = offset;
        Ok(offset)
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.readable() {
            return Err(FsError::BadFd.into());
        }
        let mut done = 0usize;
        for b in bufs.iter_mut() {
            let n = self.fs.read(&f.ip, offset + done as u64, b)?;
            done += n;
            if n < b.len() {
                break;
            }
        }
        Ok(done)
    }

    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> Result<usize> {
        let f = self.file(fd)?;
        if !f.flags.writable() {
            return Err(FsError::BadFd.into());
        }
        let mut done = 0usize;
        for b in bufs {
            let n = self.fs.write(&f.ip, offset + done as u64, b)?;
            done += n;
            if n < b.len() {
                break;
            }
        }
        self.after_write(&f)?;
        Ok(done)
    }

    /// labfs has no kernel AIO or io_uring: every kind is served by fslab's worker-thread
    /// queue, which keeps `depth` requests in flight against labfs's own locking.
    fn io_queue(self: Arc<Self>, _kind: QueueKind, depth: u32) -> Result<Box<dyn IoQueue>> {
        Ok(Box::new(ThreadedQueue::new(self, depth)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::queue::{IoBuf, IoKind, IoRequest};
    use crate::fs::dev::mem::MemDev;

    fn lab() -> Arc<LabTarget> {
        let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(64 << 20).unwrap());
        Arc::new(LabTarget::new(dev, &Options::default(), Format::Always).unwrap())
    }

    #[test]
    fn vectored_io_seek_and_the_worker_queue() {
        let t = lab();
        let fd = t
            .open(Path::new("/f"), OpenFlags::create_truncate(), 0o644)
            .unwrap();
        let (a, b) = ([1u8; 1000], [2u8; 3000]);
        let n = t
            .pwritev(fd, &[IoSlice::new(&a), IoSlice::new(&b)], 4096)
            .unwrap();
        assert_eq!(n, 4000);
        let (mut x, mut y) = ([0u8; 1000], [0u8; 3000]);
        let n = t
            .preadv(
                fd,
                &mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)],
                4096,
            )
            .unwrap();
        assert_eq!(n, 4000);
        assert!(x.iter().all(|&v| v == 1) && y.iter().all(|&v| v == 2));
        assert_eq!(t.lseek(fd, 8096).unwrap(), 8096);
        t.write(fd, b"z").unwrap();
        assert_eq!(t.fstat(fd).unwrap().size, 8097);

        let mut q = Arc::clone(&t).io_queue(QueueKind::Libaio, 8).unwrap();
        for i in 0..16u64 {
            let mut buf = IoBuf::zeroed(4096);
            buf.fill(7);
            q.submit(IoRequest {
                token: i,
                fd,
                kind: if i == 15 {
                    IoKind::Fsync
                } else {
                    IoKind::Write
                },
                offset: (i + 4) * 4096,
                buf,
            })
            .unwrap();
        }
        let mut out = Vec::new();
        while q.in_flight() > 0 {
            q.reap(1, 8, &mut out).unwrap();
        }
        assert_eq!(out.len(), 16);
        assert!(out.iter().all(|c| c.result.is_ok()));
        drop(q);
        assert_eq!(
            t.fstat(fd).unwrap().size,
            19 * 4096,
            "the last write (i = 14) ends at block 19"
        );
        t.close(fd).unwrap();
    }
}
