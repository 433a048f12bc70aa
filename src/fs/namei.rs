//! Namespace operations: path lookup, create, mkdir, link, unlink, rmdir, rename.
//!
//! Each operation is one transaction that locks the inodes it changes in ascending inode
//! number (the lock order in `fs/mod.rs`), re-checks under those locks what it looked up
//! before taking them, and commits. Freeing an inode whose last link went away while no file
//! is open (inactivation) is a second transaction after the first commits, as XFS inactivates
//! inodes after the unlink transaction.

use std::sync::Arc;

use crate::fs::Fs;
use crate::fs::dcache::Cached;
use crate::fs::dir;
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::NAME_MAX;
use crate::fs::format::dinode::DinodeCore;
use crate::fs::ialloc::{ialloc, ifree};
use crate::fs::inode::{
    Inode, InodeRead, InodeWrite, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, S_ISGID, iflags,
};
use crate::fs::trans::{CHANGE_BLOCKS, InodeId, Resv, Trans};
use crate::fs::vfs::{DirEntry, FileKind, Owner, RenameMode};

/// Blocks reserved for a create or mkdir: a new inode chunk, directory growth and the tree
/// splits both may cause (XFS's `XFS_CREATE_SPACE_RES`, in spirit).
pub const CREATE_BLOCKS: u64 = 32;

/// Why [`Fs::lock_sorted`] could not lock a usable set.
enum Stale {
    /// A directory the caller named is gone.
    Gone,
    /// An inode looked up before locking was freed meanwhile: look it up again.
    Retry,
}

/// Largest link count (as XFS's MAXLINK).
pub const MAX_LINKS: u32 = (1 << 31) - 1;

/// Check one path component.
pub fn check_name(name: &[u8]) -> FsResult<()> {
    if name.is_empty() {
        return Err(FsError::NotFound);
    }
    if name.len() > NAME_MAX {
        return Err(FsError::NameTooLong);
    }
    if name.contains(&0) || name.contains(&b'/') {
        return Err(FsError::Invalid("name contains NUL or '/'"));
    }
    Ok(())
}

/// Split a path into its components, dropping empty ones and `.` (`..` is kept).
fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&c| c == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
}

impl Fs {
    /// The root directory. Its inode stays cached from the mount on, like the kernel's root
    /// dentry, so a path walk takes it without an `iget` (counted only if reclaim took it).
    pub fn root(&self) -> FsResult<Arc<Inode>> {
        match self.icache.peek(self.rootino) {
            Some(ip) => Ok(ip),
            None => self.iget(self.rootino),
        }
    }

    /// Look `name` up in directory `dir` (one component; `.` and `..` included): from the
    /// dentry cache when it knows the name, else from the directory (recording the result).
    pub fn lookup(&self, dir: &Arc<Inode>, name: &[u8]) -> FsResult<Arc<Inode>> {
        if name == b"." {
            return Ok(Arc::clone(dir));
        }
        check_name(name)?;
        if let Some(found) = self.dcache.get(dir.ino, name) {
            // Entries are kept for directories only, but the number may since have been
            // freed and reused for a file, whose stale entries must not answer.
            if InodeRead::lock(Arc::clone(dir)).is_dir() {
                return match found {
                    Cached::Negative => Err(FsError::NotFound),
                    Cached::Positive(ino) => match self.icache.peek(ino) {
                        Some(ip) => Ok(ip),
                        None => self.iget(ino),
                    },
                };
            }
        }
        let ino = {
            let mut tp = Trans::reader(self);
            let dp = tp.lock_inode_shared(Arc::clone(dir));
            if !tp.ic(dp).is_dir() {
                return Err(FsError::NotDir);
            }
            let found = dir::lookup(&mut tp, dp, name)?;
            // Recorded under the shared ILOCK, so no change to the name can be older.
            self.dcache.set(dir.ino, name, Self::cached(found));
            tp.commit()?;
            found.ok_or(FsError::NotFound)?
        };
        self.iget(ino)
    }

    /// A directory lookup's result as a dentry-cache entry.
    fn cached(found: Option<u64>) -> Cached {
        found.map_or(Cached::Negative, Cached::Positive)
    }

    /// Whether `name` in locked directory `dp` still refers to `ino`: the dentry cache
    /// answers when it knows the name (it is exact under the ILOCK), else the directory.
    fn still_names(
        &self,
        tp: &mut Trans,
        dp: InodeId,
        dir: u64,
        name: &[u8],
        ino: u64,
    ) -> FsResult<bool> {
        Ok(self.names_now(tp, dp, dir, name)? == Some(ino))
    }

    /// The inode `name` in directory `dir` (transaction id `dp`, locked) leads to now: the
    /// dentry cache's answer when it has one (it changes only under the directory's lock, so
    /// it is as current as the directory), the directory's otherwise. The re-checks under the
    /// locks must ask the same source the unlocked lookup asked, or a cache that disagrees
    /// with the blocks (a block damaged under the mount) would send them round forever.
    fn names_now(
        &self,
        tp: &mut Trans,
        dp: InodeId,
        dir: u64,
        name: &[u8],
    ) -> FsResult<Option<u64>> {
        match self.dcache.get(dir, name) {
            Some(Cached::Positive(ino)) => Ok(Some(ino)),
            Some(Cached::Negative) => Ok(None),
            None => dir::lookup(tp, dp, name),
        }
    }

    /// Commit a transaction that changed names in the dentry cache; if the commit fails,
    /// forget those names (the next lookup reads the directory).
    fn commit_names(&self, tp: Trans, names: &[(u64, &[u8])]) -> FsResult<()> {
        let result = tp.commit();
        if result.is_err() {
            for (dir, name) in names {
                self.dcache.forget(*dir, name);
            }
        }
        result
    }

    /// Resolve a path from the root (labfs paths are absolute; a relative path is taken from
    /// the root too).
    pub fn lookup_path(&self, path: &[u8]) -> FsResult<Arc<Inode>> {
        let mut cur = self.root()?;
        for c in components(path) {
            cur = self.lookup(&cur, c)?;
        }
        if path.ends_with(b"/") && !InodeRead::lock(Arc::clone(&cur)).is_dir() {
            return Err(FsError::NotDir);
        }
        Ok(cur)
    }

    /// Resolve all but the last component: the parent directory and the final name.
    pub fn lookup_parent<'p>(&self, path: &'p [u8]) -> FsResult<(Arc<Inode>, &'p [u8])> {
        let parts: Vec<&[u8]> = components(path).collect();
        let Some((last, dirs)) = parts.split_last() else {
            return Err(FsError::Exists); // the root itself
        };
        let mut cur = self.root()?;
        for c in dirs {
            cur = self.lookup(&cur, c)?;
        }
        if *last == b".." {
            return Err(FsError::Invalid("the last component is '..'"));
        }
        check_name(last)?;
        Ok((cur, last))
    }

    /// A fresh inode core for a new inode of `mode` made by `owner` in the locked directory
    /// `dp`. As the kernel's `inode_init_owner`: under a set-group-ID directory the new inode
    /// takes the directory's group, and a new directory inherits the set-group-ID bit.
    pub(crate) fn new_core(
        tp: &Trans,
        dp: InodeId,
        mode: u16,
        nlink: u32,
        owner: Owner,
    ) -> DinodeCore {
        let now = crate::fs::now_ns();
        let parent = &tp.ic(dp).di;
        let (gid, mode) = if parent.mode & S_ISGID != 0 {
            let inherit = if mode & S_IFMT == S_IFDIR { S_ISGID } else { 0 };
            (parent.gid, mode | inherit)
        } else {
            (owner.gid, mode)
        };
        DinodeCore {
            mode,
            nlink,
            uid: owner.uid,
            gid,
            atime: now,
            mtime: now,
            ctime: now,
            crtime: now,
            ..DinodeCore::default()
        }
    }

    /// Lock a directory exclusive for a change to its entries: it must be a directory and
    /// still linked (a removed directory takes no new entries).
    pub(crate) fn lock_live_dir(tp: &mut Trans, dir: &Arc<Inode>) -> FsResult<InodeId> {
        let dp = tp.lock_inode(Arc::clone(dir));
        if !tp.ic(dp).is_dir() {
            return Err(FsError::NotDir);
        }
        if tp.ic(dp).di.nlink == 0 {
            return Err(FsError::NotFound);
        }
        Ok(dp)
    }

    /// Stamp a directory's mtime/ctime after its entries changed.
    pub(crate) fn touch_dir(tp: &mut Trans, dp: InodeId) {
        let now = crate::fs::now_ns();
        let ic = tp.ic_mut(dp);
        ic.di.mtime = now;
        ic.di.ctime = now;
        tp.log_inode(dp);
    }

    /// Create a regular file (or open the existing one): returns it and whether it is new.
    /// With `exclusive`, an existing name is `Exists` (O_EXCL). The file belongs to root.
    pub fn create(
        &self,
        dir: &Arc<Inode>,
        name: &[u8],
        mode: u32,
        exclusive: bool,
    ) -> FsResult<(Arc<Inode>, bool)> {
        self.create_as(dir, name, mode, exclusive, Owner::default())
    }

    /// [`Fs::create`] on behalf of `owner`.
    pub fn create_as(
        &self,
        dir: &Arc<Inode>,
        name: &[u8],
        mode: u32,
        exclusive: bool,
        owner: Owner,
    ) -> FsResult<(Arc<Inode>, bool)> {
        self.check_live()?;
        check_name(name)?;
        if exclusive && matches!(self.dcache.get(dir.ino, name), Some(Cached::Positive(_))) {
            // O_EXCL on a name the dentry cache holds: EEXIST without a transaction.
            return Err(FsError::Exists);
        }
        let mut tp = Trans::new(self, Resv::Create);
        let dp = Self::lock_live_dir(&mut tp, dir)?;
        if let Some(ino) = dir::lookup(&mut tp, dp, name)? {
            self.dcache.set(dir.ino, name, Cached::Positive(ino));
            tp.commit()?;
            if exclusive {
                return Err(FsError::Exists);
            }
            let ip = self.iget(ino)?;
            if InodeRead::lock(Arc::clone(&ip)).is_dir() {
                return Err(FsError::IsDir);
            }
            return Ok((ip, false));
        }
        tp.reserve(CREATE_BLOCKS)?;
        let ino = ialloc(&mut tp, dir.ino, false)?;
        let core = Self::new_core(&tp, dp, S_IFREG | (mode as u16 & 0o7777), 1, owner);
        let w = self.new_inode(ino, core)?;
        let ip = tp.join_locked(w);
        tp.log_inode(ip);
        dir::add(&mut tp, dp, name, ino, FileKind::File)?;
        self.dcache.set(dir.ino, name, Cached::Positive(ino));
        Self::touch_dir(&mut tp, dp);
        let inode = Arc::clone(tp.inode(ip));
        self.commit_names(tp, &[(dir.ino, name)])?;
        Ok((inode, true))
    }

    /// Make a directory (belonging to root).
    pub fn mkdir(&self, dir: &Arc<Inode>, name: &[u8], mode: u32) -> FsResult<Arc<Inode>> {
        self.mkdir_as(dir, name, mode, Owner::default())
    }

    /// [`Fs::mkdir`] on behalf of `owner`.
    pub fn mkdir_as(
        &self,
        dir: &Arc<Inode>,
        name: &[u8],
        mode: u32,
        owner: Owner,
    ) -> FsResult<Arc<Inode>> {
        self.check_live()?;
        check_name(name)?;
        if matches!(self.dcache.get(dir.ino, name), Some(Cached::Positive(_))) {
            // The kernel answers mkdir of a name it has a dentry for with EEXIST before
            // the filesystem sees it (fs_mark's mkdir of its directory before every file).
            return Err(FsError::Exists);
        }
        let mut tp = Trans::new(self, Resv::Create);
        let dp = Self::lock_live_dir(&mut tp, dir)?;
        if let Some(ino) = dir::lookup(&mut tp, dp, name)? {
            self.dcache.set(dir.ino, name, Cached::Positive(ino));
            tp.commit()?;
            return Err(FsError::Exists);
        }
        if tp.ic(dp).di.nlink >= MAX_LINKS {
            return Err(FsError::TooManyLinks);
        }
        tp.reserve(CREATE_BLOCKS)?;
        let ino = ialloc(&mut tp, dir.ino, true)?;
        let core = Self::new_core(&tp, dp, S_IFDIR | (mode as u16 & 0o7777), 2, owner);
        let w = self.new_inode(ino, core)?;
        let ip = tp.join_locked(w);
        dir::init(&mut tp, ip, dir.ino)?;
        tp.log_inode(ip);
        dir::add(&mut tp, dp, name, ino, FileKind::Dir)?;
        self.dcache.set(dir.ino, name, Cached::Positive(ino));
        tp.ic_mut(dp).di.nlink += 1;
        Self::touch_dir(&mut tp, dp);
        let inode = Arc::clone(tp.inode(ip));
        self.commit_names(tp, &[(dir.ino, name)])?;
        Ok(inode)
    }

    /// A name of `ip` in directory `dp` went away: drop a link (a directory loses both of its
    /// own, and its parent the one its `..` held). Returns whether nothing refers to the
    /// inode any more, so it can be freed once this transaction commits.
    fn drop_link(tp: &mut Trans, dp: InodeId, ip: InodeId) -> bool {
        let is_dir = tp.ic(ip).is_dir();
        let ic = tp.ic_mut(ip);
        ic.di.nlink = if is_dir {
            0
        } else {
            ic.di.nlink.saturating_sub(1)
        };
        ic.di.ctime = crate::fs::now_ns();
        tp.log_inode(ip);
        if is_dir {
            let d = tp.ic_mut(dp);
            d.di.nlink = d.di.nlink.saturating_sub(1);
        }
        Self::unreferenced(tp, ip)
    }

    /// No links and no open files.
    fn unreferenced(tp: &Trans, ip: InodeId) -> bool {
        tp.ic(ip).di.nlink == 0 && tp.ic(ip).opens == 0
    }

    /// Lock `inodes` exclusive in ascending inode number (duplicates once) and join them.
    ///
    /// As XFS's `xfs_lock_inodes`: once it holds an inode whose log item is in the AIL, it
    /// only *tries* the next ones, and on a busy one lets go of all and starts again. The
    /// AIL cannot write home an inode whose lock is held, so a thread holding the inode at
    /// the log's tail while it waits for another inode would keep the tail still for as long
    /// as that inode's holder runs, and a holder that is a rolled transaction waiting for
    /// log space (`Log::regrant`) would wait for it for ever.
    ///
    /// Fails with `NotFound` if one of the first `dirs` inodes (directories the caller was
    /// given) has been freed, and with [`Stale`] if a later one (looked up by the caller
    /// before locking) was freed meanwhile: its number may already name a new inode, so the
    /// caller must look it up again.
    fn lock_sorted(
        tp: &mut Trans,
        inodes: &[&Arc<Inode>],
        dirs: usize,
    ) -> Result<Vec<InodeId>, Stale> {
        let mut order: Vec<&Arc<Inode>> = inodes.to_vec();
        order.sort_by_key(|ip| ip.ino);
        order.dedup_by_key(|ip| ip.ino);
        let log = &tp.fs().log;
        let mut attempts = 0u32;
        let locked = loop {
            let mut locked: Vec<InodeWrite> = Vec::with_capacity(order.len());
            // Once one of the held inodes is in the AIL it stays there while held (a push
            // needs its lock), so the answer is looked for only until it is yes.
            let mut holds_ail_item = false;
            for ip in &order {
                if !holds_ail_item && !locked.is_empty() {
                    holds_ail_item = log.any_inode_in_ail(locked.iter().map(InodeWrite::inode));
                }
                if holds_ail_item {
                    match InodeWrite::try_lock(Arc::clone(ip)) {
                        Some(w) => locked.push(w),
                        None => break,
                    }
                } else {
                    locked.push(InodeWrite::lock(Arc::clone(ip)));
                }
            }
            if locked.len() == order.len() {
                break locked;
            }
            drop(locked);
            // Let the holder finish; every fifth time, for a moment longer (XFS's delay).
            attempts += 1;
            if attempts.is_multiple_of(5) {
                std::thread::sleep(std::time::Duration::from_micros(100));
            } else {
                std::thread::yield_now();
            }
        };
        for w in locked {
            tp.join_locked(w);
        }
        // Freed inodes are flagged under their lock, so this check is stable now.
        for (i, ip) in inodes.iter().enumerate() {
            if ip.has_flag(iflags::FREED) {
                return Err(if i < dirs { Stale::Gone } else { Stale::Retry });
            }
        }
        Ok(inodes
            .iter()
            .map(|ip| tp.find_inode(ip.ino).expect("just locked"))
            .collect())
    }

    /// Remove a name (unlink, or rmdir when `want_dir`).
    fn remove_name(&self, dir: &Arc<Inode>, name: &[u8], want_dir: bool) -> FsResult<()> {
        self.check_live()?;
        if name == b"." || name == b".." {
            return Err(if want_dir {
                FsError::Invalid("cannot remove '.' or '..'")
            } else {
                FsError::IsDir
            });
        }
        check_name(name)?;
        loop {
            let child = self.lookup(dir, name)?;
            let mut tp = Trans::new(self, Resv::Remove);
            tp.reserve_or_dip(CHANGE_BLOCKS);
            let ids = match Self::lock_sorted(&mut tp, &[dir, &child], 1) {
                Ok(ids) => ids,
                Err(Stale::Gone) => return Err(FsError::NotFound),
                Err(Stale::Retry) => continue,
            };
            let (dp, ip) = (ids[0], ids[1]);
            // Under the locks, the name must still lead to the same inode.
            if !self.still_names(&mut tp, dp, dir.ino, name, child.ino)? {
                tp.commit()?;
                continue;
            }
            let is_dir = tp.ic(ip).is_dir();
            if want_dir && !is_dir {
                return Err(FsError::NotDir);
            }
            if !want_dir && is_dir {
                return Err(FsError::IsDir);
            }
            if is_dir && !dir::is_empty(&mut tp, ip)? {
                return Err(FsError::NotEmpty);
            }
            dir::remove(&mut tp, dp, name)?;
            self.dcache.set(dir.ino, name, Cached::Negative);
            Self::touch_dir(&mut tp, dp);
            let free_now = Self::drop_link(&mut tp, dp, ip);
            self.commit_names(tp, &[(dir.ino, name)])?;
            if free_now {
                self.inactivate(&child)?;
            }
            return Ok(());
        }
    }

    /// unlink(2).
    pub fn unlink(&self, dir: &Arc<Inode>, name: &[u8]) -> FsResult<()> {
        self.remove_name(dir, name, false)
    }

    /// rmdir(2).
    pub fn rmdir(&self, dir: &Arc<Inode>, name: &[u8]) -> FsResult<()> {
        self.remove_name(dir, name, true)
    }

    /// link(2): a new name `name` in `dir` for `ip`.
    pub fn link(&self, ip: &Arc<Inode>, dir: &Arc<Inode>, name: &[u8]) -> FsResult<()> {
        self.check_live()?;
        check_name(name)?;
        let mut tp = Trans::new(self, Resv::Link);
        let ids = Self::lock_sorted(&mut tp, &[dir, ip], 2).map_err(|_| FsError::NotFound)?;
        let (dp, id) = (ids[0], ids[1]);
        if !tp.ic(dp).is_dir() {
            return Err(FsError::NotDir);
        }
        if tp.ic(id).is_dir() {
            return Err(FsError::Invalid(
                "hard links to directories are not allowed",
            ));
        }
        if tp.ic(id).di.nlink == 0 {
            return Err(FsError::NotFound);
        }
        if tp.ic(id).di.nlink >= MAX_LINKS {
            return Err(FsError::TooManyLinks);
        }
        if let Some(existing) = dir::lookup(&mut tp, dp, name)? {
            self.dcache.set(dir.ino, name, Cached::Positive(existing));
            tp.commit()?;
            return Err(FsError::Exists);
        }
        tp.reserve(CHANGE_BLOCKS)?;
        let kind = tp.ic(id).kind();
        dir::add(&mut tp, dp, name, ip.ino, kind)?;
        self.dcache.set(dir.ino, name, Cached::Positive(ip.ino));
        Self::touch_dir(&mut tp, dp);
        let ic = tp.ic_mut(id);
        ic.di.nlink += 1;
        ic.di.ctime = crate::fs::now_ns();
        tp.log_inode(id);
        self.commit_names(tp, &[(dir.ino, name)])
    }

    /// Whether `ancestor` is `dir` or one of its ancestors (walking `..`).
    fn is_ancestor(&self, ancestor: u64, dir: &Arc<Inode>) -> FsResult<bool> {
        let mut cur = Arc::clone(dir);
        loop {
            if cur.ino == ancestor {
                return Ok(true);
            }
            if cur.ino == self.rootino {
                return Ok(false);
            }
            cur = self.lookup(&cur, b"..")?;
        }
    }

    /// rename(2): `sname` in `sdir` becomes `dname` in `ddir`, replacing what was there.
    pub fn rename(
        &self,
        sdir: &Arc<Inode>,
        sname: &[u8],
        ddir: &Arc<Inode>,
        dname: &[u8],
    ) -> FsResult<()> {
        self.rename_with(sdir, sname, ddir, dname, RenameMode::Replace)
    }

    /// renameat2(2) with the behaviours of [`RenameMode`].
    pub fn rename_with(
        &self,
        sdir: &Arc<Inode>,
        sname: &[u8],
        ddir: &Arc<Inode>,
        dname: &[u8],
        mode: RenameMode,
    ) -> FsResult<()> {
        self.check_live()?;
        for n in [sname, dname] {
            if n == b"." || n == b".." {
                return Err(FsError::Invalid("cannot rename '.' or '..'"));
            }
            check_name(n)?;
        }
        // Cross-directory renames are serialised, so the ancestry check below stays true
        // until commit (Linux's s_vfs_rename_mutex).
        let _serial = (sdir.ino != ddir.ino).then(|| self.rename_lock.lock());
        loop {
            let src = self.lookup(sdir, sname)?;
            let dst = match self.lookup(ddir, dname) {
                Ok(d) => Some(d),
                Err(FsError::NotFound) => None,
                Err(e) => return Err(e),
            };
            // A name that appears after this lookup is caught by the re-check under the
            // locks below, which starts over and lands here.
            if mode == RenameMode::NoReplace && dst.is_some() {
                return Err(FsError::Exists);
            }
            if dst.as_ref().is_some_and(|d| d.ino == src.ino) {
                return Ok(()); // same inode: rename does nothing
            }
            let src_is_dir = InodeRead::lock(Arc::clone(&src)).is_dir();
            if src_is_dir && sdir.ino != ddir.ino && self.is_ancestor(src.ino, ddir)? {
                return Err(FsError::Invalid("cannot move a directory into itself"));
            }
            // Over one of the source's own ancestors: ENOTEMPTY before any type check, as
            // the kernel's rename trap says (the ancestor holds the source, so it is not
            // empty).
            if let Some(d) = &dst
                && InodeRead::lock(Arc::clone(d)).is_dir()
                && self.is_ancestor(d.ino, sdir)?
            {
                return Err(FsError::NotEmpty);
            }
            let mut set: Vec<&Arc<Inode>> = vec![sdir, ddir, &src];
            if let Some(d) = &dst {
                set.push(d);
            }
            let mut tp = Trans::new(self, Resv::Rename);
            tp.reserve(CHANGE_BLOCKS)?;
            let ids = match Self::lock_sorted(&mut tp, &set, 2) {
                Ok(ids) => ids,
                Err(Stale::Gone) => return Err(FsError::NotFound),
                Err(Stale::Retry) => continue,
            };
            let (sdp, ddp, sp) = (ids[0], ids[1], ids[2]);
            let dp = ids.get(3).copied();
            // Re-check both names under the locks.
            if self.names_now(&mut tp, sdp, sdir.ino, sname)? != Some(src.ino)
                || self.names_now(&mut tp, ddp, ddir.ino, dname)? != dst.as_ref().map(|d| d.ino)
            {
                tp.commit()?;
                continue;
            }
            let now = crate::fs::now_ns();
            if let Some(dp) = dp {
                let dst_is_dir = tp.ic(dp).is_dir();
                match (src_is_dir, dst_is_dir) {
                    (true, false) => return Err(FsError::NotDir),
                    (false, true) => return Err(FsError::IsDir),
                    (true, true) if !dir::is_empty(&mut tp, dp)? => return Err(FsError::NotEmpty),
                    _ => {}
                }
                let kind = tp.ic(sp).kind();
                dir::replace(&mut tp, ddp, dname, src.ino, kind)?;
                Self::drop_link(&mut tp, ddp, dp);
            } else {
                if src_is_dir && sdir.ino != ddir.ino && tp.ic(ddp).di.nlink >= MAX_LINKS {
                    return Err(FsError::TooManyLinks);
                }
                let kind = tp.ic(sp).kind();
                dir::add(&mut tp, ddp, dname, src.ino, kind)?;
            }
            dir::remove(&mut tp, sdp, sname)?;
            self.dcache.set(sdir.ino, sname, Cached::Negative);
            self.dcache.set(ddir.ino, dname, Cached::Positive(src.ino));
            if src_is_dir && sdir.ino != ddir.ino {
                // The moved directory's `..` now counts toward its new parent.
                dir::replace(&mut tp, sp, b"..", ddir.ino, FileKind::Dir)?;
                let s = tp.ic_mut(sdp);
                s.di.nlink = s.di.nlink.saturating_sub(1);
                tp.ic_mut(ddp).di.nlink += 1;
            }
            tp.ic_mut(sp).di.ctime = now;
            tp.log_inode(sp);
            Self::touch_dir(&mut tp, sdp);
            Self::touch_dir(&mut tp, ddp);
            let free_dst = dp.is_some_and(|dp| Self::unreferenced(&tp, dp));
            self.commit_names(tp, &[(sdir.ino, sname), (ddir.ino, dname)])?;
            if free_dst && let Some(d) = &dst {
                self.inactivate(d)?;
            }
            return Ok(());
        }
    }

    /// Every entry of a directory except `.` and `..`.
    pub fn readdir(&self, dir: &Arc<Inode>) -> FsResult<Vec<DirEntry>> {
        let mut tp = Trans::reader(self);
        let dp = tp.lock_inode_shared(Arc::clone(dir));
        if !tp.ic(dp).is_dir() {
            return Err(FsError::NotDir);
        }
        let entries = dir::readdir(&mut tp, dp)?;
        tp.commit()?;
        Ok(entries)
    }

    /// Free an inode with no links left and no open files: its blocks, then the inode.
    ///
    /// One transaction, its log space reserved before the inode is locked (XFS's
    /// `xfs_inactive_truncate` and `xfs_inactive_ifree` each call `xfs_trans_alloc` before
    /// `xfs_ilock`) and rolled between the steps, so it never waits for log space holding the
    /// ILOCK. Two phases, as XFS's `xfs_inactive`: the data blocks go first, a batch of
    /// extents per roll, taking only AGF locks ([`Fs::free_range`]); then, after a roll that
    /// lets go of those AGFs, the inode is freed, taking the AGI and, only when the whole
    /// chunk goes, the AGF after it. The inode stays locked throughout. Freeing blocks and
    /// the inode in one step would take an AGF before an AGI, against the lock order, and
    /// deadlock with a create that holds the AGI while it allocates a new chunk.
    pub(crate) fn inactivate(&self, ip: &Arc<Inode>) -> FsResult<()> {
        let mut tp = Trans::new(self, Resv::Remove);
        let id = tp.lock_inode(Arc::clone(ip));
        let ic = tp.ic(id);
        if ic.di.nlink != 0 || ic.opens != 0 || ip.has_flag(iflags::FREED) {
            return Ok(());
        }
        if let Some(ext) = tp.ic_mut(id).ext.take() {
            crate::fs::data::drop_cache(self, &ext);
        }
        crate::fs::symlink::forget_remote(self, tp.ic(id))?;
        if !tp.ic(id).fork.extents().is_empty() {
            self.free_range(&mut tp, id, 0, u64::MAX >> crate::fs::format::BLOCK_SHIFT)?;
            if tp.is_dirty() {
                tp.roll(&mut [])?;
            }
        }
        tp.reserve_or_dip_up_to(CHANGE_BLOCKS);
        let free = ifree(&mut tp, ip.ino)?;
        {
            // The inode's last state is the free slot; its log item carries that image (and
            // the AIL writes it home unless the slot has a new owner by then, or the chunk
            // went).
            let ic = tp.ic_mut(id);
            ic.di = free.unwrap_or_default();
            ic.fork = crate::fs::inode::DataFork::default();
        }
        tp.log_inode(id);
        // Out of the cache before the AGI is released at commit: from then on the inode number
        // can be allocated again, and a new inode must not find this one cached.
        ip.set_flag(iflags::FREED);
        self.icache.remove(ip.ino, &self.stats);
        if !ip.has_flag(iflags::STALE)
            && let Some(older) = self.freed_pending.lock().insert(ip.ino, Arc::clone(ip))
        {
            // An earlier owner of the number whose free image never went home: this one's
            // later state supersedes it, and it must never be written over it.
            older.set_flag(iflags::STALE);
        }
        tp.commit()
    }

    /// A file description was opened on `ip`.
    pub fn open_inode(&self, ip: &Arc<Inode>) {
        InodeWrite::lock(Arc::clone(ip)).opens += 1;
    }

    /// A file description on `ip` was closed; an unlinked inode is freed with its last close.
    pub fn release_inode(&self, ip: &Arc<Inode>) -> FsResult<()> {
        let free = {
            let mut w = InodeWrite::lock(Arc::clone(ip));
            w.opens = w.opens.saturating_sub(1);
            w.opens == 0 && w.di.nlink == 0
        };
        if free { self.inactivate(ip) } else { Ok(()) }
    }
}

impl Fs {
    /// symlink(2): a new symbolic link `name` in `dir` whose target is `target`, made by
    /// `owner`. The target is stored inline or in a remote block ([`crate::fs::symlink`]).
    pub fn symlink(
        &self,
        dir: &Arc<Inode>,
        name: &[u8],
        target: &[u8],
        owner: Owner,
    ) -> FsResult<Arc<Inode>> {
        self.check_live()?;
        check_name(name)?;
        crate::fs::symlink::check_target(target)?;
        let mut tp = Trans::new(self, Resv::Create);
        let dp = Self::lock_live_dir(&mut tp, dir)?;
        if let Some(found) = dir::lookup(&mut tp, dp, name)? {
            self.dcache.set(dir.ino, name, Cached::Positive(found));
            tp.commit()?;
            return Err(FsError::Exists);
        }
        // One more block than a create, for a remote target.
        tp.reserve(CREATE_BLOCKS + 1)?;
        let ino = ialloc(&mut tp, dir.ino, false)?;
        let core = Self::new_core(&tp, dp, S_IFLNK | 0o777, 1, owner);
        let w = self.new_inode(ino, core)?;
        let ip = tp.join_locked(w);
        crate::fs::symlink::store(&mut tp, ip, target)?;
        dir::add(&mut tp, dp, name, ino, FileKind::Symlink)?;
        // A negative entry left by a lookup before the link existed must not outlive it.
        self.dcache.set(dir.ino, name, Cached::Positive(ino));
        Self::touch_dir(&mut tp, dp);
        let inode = Arc::clone(tp.inode(ip));
        self.commit_names(tp, &[(dir.ino, name)])?;
        Ok(inode)
    }
}

/// What `setattr` changes (chmod, chown, utimes); `None` leaves a field alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (the type bits are kept).
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time, ns.
    pub atime: Option<i64>,
    /// New modification time, ns.
    pub mtime: Option<i64>,
}

impl Fs {
    /// Change an inode's attributes (XFS's `xfs_setattr_nonsize`; size changes are
    /// [`Fs::truncate`]). Counts `ig attrchg` as XFS does.
    pub fn setattr(&self, ip: &Arc<Inode>, attr: &SetAttr) -> FsResult<()> {
        self.check_live()?;
        let mut tp = Trans::new(self, Resv::Ichange);
        let id = tp.lock_inode(Arc::clone(ip));
        ip.check_allocated()?;
        let ic = tp.ic_mut(id);
        if let Some(m) = attr.mode {
            ic.di.mode = (ic.di.mode & crate::fs::inode::S_IFMT) | (m as u16 & 0o7777);
        }
        if let Some(u) = attr.uid {
            ic.di.uid = u;
        }
        if let Some(g) = attr.gid {
            ic.di.gid = g;
        }
        if let Some(a) = attr.atime {
            ic.di.atime = a;
        }
        if let Some(m) = attr.mtime {
            ic.di.mtime = m;
        }
        ic.di.ctime = crate::fs::now_ns();
        tp.log_inode(id);
        self.stats.inc(crate::fs::stats::Stat::IgAttrchg);
        tp.commit()
    }
}
