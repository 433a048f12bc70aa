//! [`MemTarget`]: a small in-memory filesystem with a byte capacity, for workload tests.
//!
//! It has enough namespace semantics (EEXIST, ENOENT, ENOTDIR, ENOTEMPTY, EISDIR) for
//! workloads, and `statfs` / `ENOSPC` that follow the files' sizes, so fill-the-filesystem
//! behaviour is testable without a real small filesystem. It stores file sizes, not contents:
//! reads return zeroes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::backend::{
    DirEntry, FallocMode, Fd, FileKind, FileStat, FsStat, OpenFlags, Result, Target, TargetError,
};

/// Block size [`MemTarget`] reports and accounts space in.
pub const MEM_BLOCK_SIZE: u64 = 4096;

#[derive(Debug, Clone)]
struct MemInode {
    kind: FileKind,
    size: u64,
    nlink: u32,
    /// Open descriptors; an unlinked inode lives until the last one closes.
    opens: u32,
    mode: u32,
}

#[derive(Debug, Clone, Copy)]
struct MemOpen {
    ino: u64,
    offset: u64,
    flags: OpenFlags,
}

#[derive(Debug)]
struct MemState {
    /// Normalised path -> inode number; the root ("" or "/") is implicit.
    names: BTreeMap<PathBuf, u64>,
    inodes: HashMap<u64, MemInode>,
    fds: HashMap<u64, MemOpen>,
    next_ino: u64,
    next_fd: u64,
    used_blocks: u64,
}

/// An in-memory filesystem of fixed capacity (see the module docs).
#[derive(Debug)]
pub struct MemTarget {
    capacity_blocks: u64,
    state: Mutex<MemState>,
}

/// Lexically normalise a path: repeated and trailing slashes and `.` components vanish.
fn norm(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p == Path::new("/")
}

fn blocks_for(size: u64) -> u64 {
    size.div_ceil(MEM_BLOCK_SIZE)
}

impl MemTarget {
    /// An empty filesystem that can hold `capacity` bytes of file data.
    pub fn new(capacity: u64) -> Self {
        MemTarget {
            capacity_blocks: capacity / MEM_BLOCK_SIZE,
            state: Mutex::new(MemState {
                names: BTreeMap::new(),
                inodes: HashMap::new(),
                fds: HashMap::new(),
                next_ino: 2,
                next_fd: 3,
                used_blocks: 0,
            }),
        }
    }
}

impl MemState {
    fn lookup(&self, p: &Path) -> Option<(u64, &MemInode)> {
        if is_root(p) {
            return None;
        }
        let ino = *self.names.get(p)?;
        self.inodes.get(&ino).map(|i| (ino, i))
    }

    fn kind_at(&self, p: &Path) -> Option<FileKind> {
        if is_root(p) {
            return Some(FileKind::Dir);
        }
        self.lookup(p).map(|(_, i)| i.kind)
    }

    /// ENOENT if the parent is missing, ENOTDIR if it is not a directory.
    fn check_parent(&self, p: &Path) -> Result<()> {
        let parent = p.parent().unwrap_or(Path::new(""));
        match self.kind_at(parent) {
            Some(FileKind::Dir) => Ok(()),
            Some(_) => Err(Errno::ENOTDIR.into()),
            None => Err(Errno::ENOENT.into()),
        }
    }

    fn new_inode(&mut self, kind: FileKind, mode: u32) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(
            ino,
            MemInode {
                kind,
                size: 0,
                nlink: 1,
                opens: 0,
                mode,
            },
        );
        ino
    }

    fn resize(&mut self, ino: u64, new_size: u64, capacity: u64) -> Result<()> {
        let inode = self.inodes.get(&ino).ok_or(Errno::EBADF)?;
        let (old, new) = (blocks_for(inode.size), blocks_for(new_size));
        if new > old && self.used_blocks + (new - old) > capacity {
            return Err(Errno::ENOSPC.into());
        }
        self.used_blocks = self.used_blocks + new - old;
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.size = new_size;
        }
        Ok(())
    }

    /// Drop a name (`unlinks = 1`) or an open descriptor (`closes = 1`) from an inode, and
    /// free it once neither is left.
    fn release(&mut self, ino: u64, unlinks: u32, closes: u32) {
        let gone = match self.inodes.get_mut(&ino) {
            Some(i) => {
                i.nlink = i.nlink.saturating_sub(unlinks);
                i.opens = i.opens.saturating_sub(closes);
                i.nlink == 0 && i.opens == 0
            }
            None => false,
        };
        if gone && let Some(i) = self.inodes.remove(&ino) {
            self.used_blocks -= blocks_for(i.size);
        }
    }

    fn has_children(&self, dir: &Path) -> bool {
        self.names
            .range(dir.to_path_buf()..)
            .skip(1)
            .take_while(|(p, _)| p.starts_with(dir))
            .any(|(p, _)| p.parent() == Some(dir))
    }

    fn stat_of(ino: u64, i: &MemInode) -> FileStat {
        let type_bits = match i.kind {
            FileKind::Dir => libc::S_IFDIR,
            FileKind::Symlink => libc::S_IFLNK,
            FileKind::File | FileKind::Other => libc::S_IFREG,
        };
        FileStat {
            ino,
            kind: i.kind,
            mode: type_bits | (i.mode & 0o7777),
            nlink: i.nlink,
            uid: 0,
            gid: 0,
            size: i.size,
            blocks: blocks_for(i.size) * (MEM_BLOCK_SIZE / 512),
            blksize: MEM_BLOCK_SIZE as u32,
            atime_ns: 0,
            mtime_ns: 0,
            ctime_ns: 0,
        }
    }

    /// Account a write of `len` bytes at `offset` (all or nothing: ENOSPC if it does not fit).
    fn write_at(&mut self, open: MemOpen, len: usize, offset: u64, capacity: u64) -> Result<usize> {
        if !open.flags.writable() {
            return Err(Errno::EBADF.into());
        }
        let size = self.inodes.get(&open.ino).map_or(0, |i| i.size);
        let end = offset.saturating_add(len as u64);
        if end > size {
            self.resize(open.ino, end, capacity)?;
        }
        Ok(len)
    }

    fn open_file(&self, fd: Fd) -> Result<MemOpen> {
        self.fds
            .get(&fd.0)
            .copied()
            .ok_or_else(|| TargetError::errno(Errno::EBADF))
    }
}

impl Target for MemTarget {
    fn describe(&self) -> String {
        format!(
            "mem: in-memory fake, {} bytes",
            self.capacity_blocks * MEM_BLOCK_SIZE
        )
    }

    fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        if s.kind_at(&p).is_some() {
            return Err(Errno::EEXIST.into());
        }
        s.check_parent(&p)?;
        let ino = s.new_inode(FileKind::Dir, mode);
        s.names.insert(p, ino);
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = match s.lookup(&p) {
            Some((ino, i)) => (ino, i.kind),
            None if is_root(&p) => return Err(Errno::EBUSY.into()),
            None => return Err(Errno::ENOENT.into()),
        };
        if kind != FileKind::Dir {
            return Err(Errno::ENOTDIR.into());
        }
        if s.has_children(&p) {
            return Err(Errno::ENOTEMPTY.into());
        }
        s.names.remove(&p);
        s.release(ino, 1, 0);
        Ok(())
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd> {
        let p = norm(path);
        let mut s = self.state.lock();
        let ino = match s.lookup(&p).map(|(ino, i)| (ino, i.kind)) {
            Some(_) if flags.create && flags.exclusive => return Err(Errno::EEXIST.into()),
            Some((_, FileKind::Dir)) if flags.writable() => return Err(Errno::EISDIR.into()),
            Some((ino, _)) => {
                if flags.truncate && flags.writable() {
                    s.resize(ino, 0, self.capacity_blocks)?;
                }
                ino
            }
            None if is_root(&p) => return Err(Errno::EISDIR.into()),
            None if flags.create => {
                s.check_parent(&p)?;
                let ino = s.new_inode(FileKind::File, mode);
                s.names.insert(p, ino);
                ino
            }
            None => {
                s.check_parent(&p)?;
                return Err(Errno::ENOENT.into());
            }
        };
        let fd = s.next_fd;
        s.next_fd += 1;
        if let Some(i) = s.inodes.get_mut(&ino) {
            i.opens += 1;
        }
        s.fds.insert(
            fd,
            MemOpen {
                ino,
                offset: 0,
                flags,
            },
        );
        Ok(Fd(fd))
    }

    fn close(&self, fd: Fd) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.fds.remove(&fd.0).ok_or(Errno::EBADF)?;
        s.release(open.ino, 0, 1);
        Ok(())
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let offset = if open.flags.append { size } else { open.offset };
        let n = s.write_at(open, buf.len(), offset, self.capacity_blocks)?;
        if let Some(o) = s.fds.get_mut(&fd.0) {
            o.offset = offset + n as u64;
        }
        Ok(n)
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        s.write_at(open, buf.len(), offset, self.capacity_blocks)
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize> {
        let offset = self.state.lock().open_file(fd)?.offset;
        let n = self.pread(fd, buf, offset)?;
        if let Some(o) = self.state.lock().fds.get_mut(&fd.0) {
            o.offset += n as u64;
        }
        Ok(n)
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize> {
        let s = self.state.lock();
        let open = s.open_file(fd)?;
        if !open.flags.readable() {
            return Err(Errno::EBADF.into());
        }
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let n = size.saturating_sub(offset).min(buf.len() as u64) as usize;
        buf[..n].fill(0);
        Ok(n)
    }

    fn fsync(&self, fd: Fd) -> Result<()> {
        self.state.lock().open_file(fd).map(drop)
    }

    fn fdatasync(&self, fd: Fd) -> Result<()> {
        self.state.lock().open_file(fd).map(drop)
    }

    fn fstat(&self, fd: Fd) -> Result<FileStat> {
        let s = self.state.lock();
        let open = s.open_file(fd)?;
        let inode = s.inodes.get(&open.ino).ok_or(Errno::EBADF)?;
        Ok(MemState::stat_of(open.ino, inode))
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        if !open.flags.writable() {
            return Err(Errno::EINVAL.into());
        }
        s.resize(open.ino, len, self.capacity_blocks)
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let end = offset.saturating_add(len);
        // Space is accounted by file size, so only size-extending modes change anything.
        match mode {
            FallocMode::Allocate | FallocMode::ZeroRange if end > size => {
                s.resize(open.ino, end, self.capacity_blocks)
            }
            _ => Ok(()),
        }
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&p)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EISDIR.into());
        }
        s.names.remove(&p);
        s.release(ino, 1, 0);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (f, t) = (norm(from), norm(to));
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&f)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        s.check_parent(&t)?;
        if kind == FileKind::Dir {
            // Directory renames would have to move every descendant name; workloads here
            // never rename directories.
            return Err(TargetError::with_detail(
                Errno::EXDEV,
                "MemTarget does not rename directories",
            ));
        }
        if let Some((old, old_kind)) = s.lookup(&t).map(|(i, n)| (i, n.kind)) {
            if old_kind == FileKind::Dir {
                return Err(Errno::EISDIR.into());
            }
            s.release(old, 1, 0);
        }
        s.names.remove(&f);
        s.names.insert(t, ino);
        Ok(())
    }

    fn link(&self, existing: &Path, new: &Path) -> Result<()> {
        let (e, n) = (norm(existing), norm(new));
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&e)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EPERM.into());
        }
        if s.kind_at(&n).is_some() {
            return Err(Errno::EEXIST.into());
        }
        s.check_parent(&n)?;
        if let Some(i) = s.inodes.get_mut(&ino) {
            i.nlink += 1;
        }
        s.names.insert(n, ino);
        Ok(())
    }

    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let p = norm(path);
        let s = self.state.lock();
        match s.kind_at(&p) {
            Some(FileKind::Dir) => {}
            Some(_) => return Err(Errno::ENOTDIR.into()),
            None => return Err(Errno::ENOENT.into()),
        }
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (name, &ino) in &s.names {
            if name.parent() == Some(p.as_path()) && seen.insert(name.clone()) {
                let kind = s.inodes.get(&ino).map_or(FileKind::Other, |i| i.kind);
                let leaf = name.file_name().unwrap_or_default();
                out.push(DirEntry {
                    name: std::os::unix::ffi::OsStrExt::as_bytes(leaf).to_vec(),
                    ino,
                    kind,
                });
            }
        }
        Ok(out)
    }

    fn stat(&self, path: &Path) -> Result<FileStat> {
        let p = norm(path);
        let s = self.state.lock();
        if is_root(&p) {
            let root = MemInode {
                kind: FileKind::Dir,
                size: 0,
                nlink: 2,
                opens: 0,
                mode: 0o755,
            };
            return Ok(MemState::stat_of(1, &root));
        }
        let (ino, inode) = s.lookup(&p).ok_or(Errno::ENOENT)?;
        Ok(MemState::stat_of(ino, inode))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&p)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EISDIR.into());
        }
        s.resize(ino, len, self.capacity_blocks)
    }

    fn statfs(&self, path: &Path) -> Result<FsStat> {
        let p = norm(path);
        let s = self.state.lock();
        if s.kind_at(&p).is_none() {
            return Err(Errno::ENOENT.into());
        }
        let free = self.capacity_blocks.saturating_sub(s.used_blocks);
        Ok(FsStat {
            bsize: MEM_BLOCK_SIZE,
            blocks: self.capacity_blocks,
            bfree: free,
            bavail: free,
            files: 1 << 32,
            ffree: (1u64 << 32).saturating_sub(s.inodes.len() as u64),
            namelen: 255,
        })
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        if self.state.lock().kind_at(&p).is_none() {
            return Err(Errno::ENOENT.into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> &Path {
        Path::new(s)
    }

    #[test]
    fn mem_target_namespace_errors_match_posix() {
        let t = MemTarget::new(1 << 20);
        t.mkdir(p("/a"), 0o777).unwrap();
        assert_eq!(t.mkdir(p("/a/"), 0o777).unwrap_err().errno, Errno::EEXIST);
        assert_eq!(t.mkdir(p("/x/y"), 0o777).unwrap_err().errno, Errno::ENOENT);
        let fd = t
            .open(p("/a//f"), OpenFlags::create_truncate(), 0o666)
            .unwrap();
        assert_eq!(t.write(fd, &[0; 10]).unwrap(), 10);
        t.close(fd).unwrap();
        assert_eq!(t.stat(p("/a/f")).unwrap().size, 10);
        assert_eq!(
            t.open(p("/a/f/g"), OpenFlags::create_truncate(), 0o666)
                .unwrap_err()
                .errno,
            Errno::ENOTDIR
        );
        assert_eq!(
            t.open(p("/a/missing"), OpenFlags::read_only(), 0)
                .unwrap_err()
                .errno,
            Errno::ENOENT
        );
        assert_eq!(t.rmdir(p("/a")).unwrap_err().errno, Errno::ENOTEMPTY);
        assert_eq!(t.unlink(p("/a")).unwrap_err().errno, Errno::EISDIR);
        let names: Vec<_> = t
            .readdir(p("/a"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec![b"f".to_vec()]);
        t.unlink(p("/a/f")).unwrap();
        t.rmdir(p("/a")).unwrap();
        assert_eq!(t.stat(p("/a")).unwrap_err().errno, Errno::ENOENT);
    }

    #[test]
    fn mem_target_statfs_and_enospc_follow_file_sizes() {
        let t = MemTarget::new(4 * MEM_BLOCK_SIZE);
        t.mkdir(p("/d"), 0o777).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 4);
        let fd = t
            .open(p("/d/f"), OpenFlags::create_truncate(), 0o666)
            .unwrap();
        t.write(fd, &[0; 5000]).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 2);
        assert_eq!(t.write(fd, &[0; 12000]).unwrap_err().errno, Errno::ENOSPC);
        t.close(fd).unwrap();
        t.unlink(p("/d/f")).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 4);
    }
}
