//! [`LabFuse`]: the FUSE operations, each mapped onto the labfs call a kernel VFS would make.
//!
//! | FUSE | labfs |
//! |------|-------|
//! | lookup, forget | [`Fs::lookup`]; the [`NodeTable`] keeps what the kernel holds |
//! | getattr, setattr | [`InodeCore::stat`](crate::fs::inode::InodeCore::stat); [`Fs::setattr`] (mode, owner, times), [`Fs::truncate`] (size) |
//! | create, mknod, mkdir, symlink, link | [`Fs::create_as`], [`Fs::mkdir_as`], [`Fs::symlink`], [`Fs::link`], owned by the caller |
//! | unlink, rmdir, rename | [`Fs::unlink`], [`Fs::rmdir`], [`Fs::rename_with`] (`RENAME_NOREPLACE`; other flags `EINVAL`) |
//! | readlink | [`Fs::readlink`] |
//! | open, release | [`Fs::open_inode`], [`Fs::release_inode`] (an unlinked file is freed at its last release) |
//! | read, write | [`Fs::read`], [`Fs::write`]; an `O_DIRECT` open writes back after each write |
//! | flush | nothing: labfs has no per-close work (as XFS, whose `->flush` is empty) |
//! | fsync, fsyncdir | [`Fs::fsync`] (data or full) |
//! | fallocate | [`Fs::fallocate`]; modes labfs lacks are `EOPNOTSUPP` |
//! | statfs | [`Fs::statfs`] |
//! | opendir, readdir, readdirplus | [`Fs::readdir`], listed from a snapshot taken when a listing starts |
//! | xattrs | `ENOSYS` (the kernel then answers `EOPNOTSUPP` itself and stops asking): labfs has none |
//!
//! Special files (fifos, sockets, devices) are `EPERM` from mknod, as from a kernel
//! filesystem without them. Errors are labfs's typed errors mapped by [`FsError::errno`].
//!
//! Every write reaches labfs: the mount never asks for the kernel's writeback cache, so
//! `write` calls, page-cache dirtying and their counters happen exactly as in-process. Reads
//! may be served from the kernel's page cache unless the mount uses `-o direct_io`.
//!
//! Requests run on several threads at once (labfs is thread-safe); the only shared state
//! here is the node table and the handle table, each behind short locks.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use parking_lot::Mutex;

use crate::fs::Fs;
use crate::fs::error::FsError;
use crate::fs::inode::{Inode, InodeRead};
use crate::fs::namei::SetAttr;
use crate::fs::vfs::{FallocMode, FileKind, FileStat, Owner, RenameMode};
use crate::fuse::control::{CONTROL_DIR, CtlNode};
use crate::fuse::nodes::{NodeTable, ROOT_NODE, node_of};
use crate::fuse::tracefs::{TraceCtl, TraceCtlError, parse_number};

/// How long the kernel may cache entries and attributes. Every change to labfs goes through
/// this mount, so the kernel's caches stay right; a short TTL still bounds staleness should
/// anything else touch the device.
const TTL: Duration = Duration::from_secs(1);

/// How often a blocked `trace_pipe` read looks for new records.
const PIPE_POLL: Duration = Duration::from_millis(20);

/// The outcome of the final write-back when the connection ends.
pub type Outcome = Arc<Mutex<Option<Result<(), FsError>>>>;

/// One open file, directory or control file.
enum Handle {
    File {
        ip: Arc<Inode>,
        writable: bool,
        direct: bool,
    },
    Dir {
        node: u64,
        listing: Mutex<Vec<Slot>>,
    },
    Ctl {
        node: CtlNode,
        /// Rendered contents (read files) or records taken from the rings but not yet read
        /// (`trace_pipe`).
        content: Mutex<Vec<u8>>,
        nonblock: bool,
    },
}

/// One directory entry of a listing.
#[derive(Clone)]
struct Slot {
    name: Vec<u8>,
    node: u64,
    kind: FileType,
}

#[derive(Default)]
struct Handles {
    slots: Vec<Option<Arc<Handle>>>,
    free: Vec<usize>,
}

impl Handles {
    fn insert(&mut self, h: Handle) -> FileHandle {
        let h = Some(Arc::new(h));
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = h;
                i
            }
            None => {
                self.slots.push(h);
                self.slots.len() - 1
            }
        };
        FileHandle(i as u64)
    }

    fn get(&self, fh: FileHandle) -> Option<Arc<Handle>> {
        self.slots.get(fh.0 as usize).and_then(Clone::clone)
    }

    fn remove(&mut self, fh: FileHandle) -> Option<Arc<Handle>> {
        let h = self.slots.get_mut(fh.0 as usize).and_then(Option::take);
        if h.is_some() {
            self.free.push(fh.0 as usize);
        }
        h
    }
}

/// labfs behind FUSE.
pub struct LabFuse {
    fs: Arc<Fs>,
    root: Arc<Inode>,
    nodes: NodeTable,
    handles: Mutex<Handles>,
    trace: Arc<Mutex<TraceCtl>>,
    /// Owner of the control files: the user who mounted.
    owner: Owner,
    mounted_at: SystemTime,
    direct_io: bool,
    stopping: Arc<AtomicBool>,
    outcome: Outcome,
}

fn errno(e: &FsError) -> Errno {
    Errno::from_i32(e.errno() as i32)
}

fn nix_errno(e: nix::errno::Errno) -> Errno {
    Errno::from_i32(e as i32)
}

fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Dir => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        // labfs makes no other kinds; an inode with other type bits (corruption) is shown as
        // a file so it can at least be listed and removed.
        FileKind::File | FileKind::Other => FileType::RegularFile,
    }
}

fn time_of(ns: i64) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(ns.unsigned_abs())
    }
}

fn ns_of(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

fn attr_of(node: u64, st: &FileStat) -> FileAttr {
    FileAttr {
        ino: INodeNo(node),
        size: st.size,
        blocks: st.blocks,
        atime: time_of(st.atime_ns),
        mtime: time_of(st.mtime_ns),
        ctime: time_of(st.ctime_ns),
        crtime: time_of(st.ctime_ns),
        kind: file_type(st.kind),
        perm: (st.mode & 0o7777) as u16,
        nlink: st.nlink,
        uid: st.uid,
        gid: st.gid,
        rdev: 0,
        blksize: st.blksize,
        flags: 0,
    }
}

fn bytes(name: &OsStr) -> &[u8] {
    name.as_bytes()
}

fn owner_of(req: &Request) -> Owner {
    Owner {
        uid: req.uid(),
        gid: req.gid(),
    }
}

/// Whether thread `tid` has a signal pending that it neither blocks nor ignores (what makes
/// a blocked tracefs read return `EINTR`). A thread that is gone counts as signalled.
fn signal_pending(tid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        return true;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let pending = field("SigPnd:") | field("ShdPnd:");
    pending & !(field("SigBlk:") | field("SigIgn:")) != 0
}

/// A `trace_pipe` read: what was taken earlier, else what the rings hold, else (when
/// `block`) wait for records, returning `EINTR` when the reader is signalled; `EAGAIN` when
/// there is nothing and it must not wait.
fn read_pipe(
    trace: &Mutex<TraceCtl>,
    stopping: &AtomicBool,
    content: &Mutex<Vec<u8>>,
    size: usize,
    block: Option<u32>,
) -> Result<Vec<u8>, Errno> {
    loop {
        {
            let mut pending = content.lock();
            if pending.is_empty() {
                *pending = trace.lock().drain().map_err(|e| nix_errno(e.errno()))?;
            }
            if !pending.is_empty() {
                let n = size.min(pending.len());
                return Ok(pending.drain(..n).collect());
            }
        }
        let Some(tid) = block else {
            return Err(Errno::EAGAIN);
        };
        if stopping.load(Ordering::Acquire) {
            return Ok(Vec::new());
        }
        if signal_pending(tid) {
            return Err(Errno::EINTR);
        }
        std::thread::sleep(PIPE_POLL);
    }
}

impl LabFuse {
    /// Serve `fs` (mounted, and unmounted by this when the connection ends: the result goes
    /// to `outcome`). `direct_io` makes every open bypass the kernel's page cache.
    pub fn new(fs: Arc<Fs>, direct_io: bool, outcome: Outcome) -> Result<LabFuse, FsError> {
        let root = fs.root()?;
        Ok(LabFuse {
            fs,
            root,
            nodes: NodeTable::new(),
            handles: Mutex::new(Handles::default()),
            trace: Arc::new(Mutex::new(TraceCtl::default())),
            owner: Owner {
                uid: nix::unistd::geteuid().as_raw(),
                gid: nix::unistd::getegid().as_raw(),
            },
            mounted_at: SystemTime::now(),
            direct_io,
            stopping: Arc::new(AtomicBool::new(false)),
            outcome,
        })
    }

    /// The inode behind a (non-control) node.
    fn inode(&self, node: u64) -> Result<Arc<Inode>, Errno> {
        if node == ROOT_NODE {
            return Ok(Arc::clone(&self.root));
        }
        self.nodes.get(&self.fs, node).map_err(|e| errno(&e))
    }

    fn attr(&self, ip: &Arc<Inode>) -> (FileAttr, Generation) {
        let r = InodeRead::lock(Arc::clone(ip));
        let node = node_of(&self.fs, ip.ino);
        (
            attr_of(node, &r.stat(ip.ino)),
            Generation(u64::from(r.di.generation)),
        )
    }

    /// Reply with an entry for `ip`, which the kernel now holds once more.
    fn entry(&self, ip: &Arc<Inode>, reply: ReplyEntry) {
        let (attr, generation) = self.attr(ip);
        if ip.ino != self.fs.rootino {
            self.nodes.remember(attr.ino.0, ip);
        }
        reply.entry(&TTL, &attr, generation);
    }

    fn ctl_attr(&self, n: CtlNode) -> FileAttr {
        FileAttr {
            ino: INodeNo(n.node_id()),
            size: 0,
            blocks: 0,
            atime: self.mounted_at,
            mtime: self.mounted_at,
            ctime: self.mounted_at,
            crtime: self.mounted_at,
            kind: if n.is_dir() {
                FileType::Directory
            } else {
                FileType::RegularFile
            },
            perm: n.perm(),
            nlink: if n.is_dir() { 2 } else { 1 },
            uid: self.owner.uid,
            gid: self.owner.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// The reserved control name in the root.
    fn is_control_name(parent: u64, name: &[u8]) -> bool {
        parent == ROOT_NODE && name == CONTROL_DIR.as_bytes()
    }

    /// A new directory listing: `.`, `..`, then the entries.
    fn listing(&self, node: u64) -> Result<Vec<Slot>, Errno> {
        let dot = |name: &[u8], node: u64| Slot {
            name: name.to_vec(),
            node,
            kind: FileType::Directory,
        };
        if let Some(c) = CtlNode::from_node_id(node) {
            let parent = c.parent().map_or(ROOT_NODE, CtlNode::node_id);
            let mut v = vec![dot(b".", node), dot(b"..", parent)];
            v.extend(c.children().into_iter().map(|(name, k)| Slot {
                name: name.into_bytes(),
                node: k.node_id(),
                kind: if k.is_dir() {
                    FileType::Directory
                } else {
                    FileType::RegularFile
                },
            }));
            return Ok(v);
        }
        let dir = self.inode(node)?;
        let parent = self.fs.lookup(&dir, b"..").map_err(|e| errno(&e))?;
        let entries = self.fs.readdir(&dir).map_err(|e| errno(&e))?;
        let mut v = vec![dot(b".", node), dot(b"..", node_of(&self.fs, parent.ino))];
        if node == ROOT_NODE {
            v.push(dot(CONTROL_DIR.as_bytes(), CtlNode::Root.node_id()));
        }
        v.extend(
            entries
                .into_iter()
                .filter(|e| !Self::is_control_name(node, &e.name))
                .map(|e| Slot {
                    node: node_of(&self.fs, e.ino),
                    kind: file_type(e.kind),
                    name: e.name,
                }),
        );
        Ok(v)
    }

    /// The listing of an open directory from `offset`: refreshed when a listing starts over.
    fn slots_from(&self, fh: FileHandle, offset: u64) -> Result<Vec<(u64, Slot)>, Errno> {
        let h = self.handles.lock().get(fh).ok_or(Errno::EBADF)?;
        let Handle::Dir { node, listing } = &*h else {
            return Err(Errno::EBADF);
        };
        let mut l = listing.lock();
        if offset == 0 || l.is_empty() {
            *l = self.listing(*node)?;
        }
        Ok(l.iter()
            .enumerate()
            .skip(offset as usize)
            .map(|(i, s)| (i as u64 + 1, s.clone()))
            .collect())
    }

    /// Render a readable control file.
    fn ctl_render(&self, n: CtlNode) -> Result<Vec<u8>, Errno> {
        let ctl_err = |e: TraceCtlError| nix_errno(e.errno());
        Ok(match n {
            CtlNode::Pid => format!("{}\n", std::process::id()).into_bytes(),
            CtlNode::Stats => self.fs.stats.mount().snapshot().render().into_bytes(),
            CtlNode::AvailableEvents => TraceCtl::available_events().into_bytes(),
            CtlNode::SetEvent => self.trace.lock().set_event_text().into_bytes(),
            CtlNode::TracingOn => self.trace.lock().tracing_on_text().into_bytes(),
            CtlNode::Trace => self.trace.lock().trace_text().map_err(ctl_err)?,
            CtlNode::EventEnable(_) | CtlNode::EventTrigger(_) | CtlNode::EventHist(_) => {
                let name = n.event().map(|e| e.name()).ok_or(Errno::ENOENT)?;
                let t = self.trace.lock();
                match n {
                    CtlNode::EventEnable(_) => t.enable_text(name),
                    CtlNode::EventTrigger(_) => t.trigger_text(name),
                    _ => t.hist_text(name),
                }
                .into_bytes()
            }
            _ => Vec::new(),
        })
    }

    /// Apply a write to a control file.
    fn ctl_write(&self, n: CtlNode, data: &[u8]) -> Result<(), Errno> {
        let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        let ctl_err = |e: TraceCtlError| nix_errno(e.errno());
        match n {
            CtlNode::StatsClear => {
                // As XFS's stats_clear_store: a number, and only 1 clears.
                if parse_number(text).map_err(ctl_err)? != 1 {
                    return Err(Errno::EINVAL);
                }
                self.fs.stats.mount().clear();
                Ok(())
            }
            CtlNode::SetEvent => self.trace.lock().write_set_event(text).map_err(ctl_err),
            CtlNode::TracingOn => self.trace.lock().write_tracing_on(text).map_err(ctl_err),
            // tracefs ignores what is written to `trace`; truncating it clears.
            CtlNode::Trace => Ok(()),
            CtlNode::EventEnable(_) | CtlNode::EventTrigger(_) => {
                let name = n.event().map(|e| e.name()).ok_or(Errno::ENOENT)?;
                let mut t = self.trace.lock();
                match n {
                    CtlNode::EventEnable(_) => t.write_enable(name, text),
                    _ => t.write_trigger(name, text),
                }
                .map_err(ctl_err)
            }
            _ => Err(Errno::EACCES),
        }
    }

    /// Whether a control file can be opened for reading / writing.
    fn ctl_access(n: CtlNode) -> (bool, bool) {
        match n {
            CtlNode::StatsClear => (false, true),
            CtlNode::SetEvent
            | CtlNode::TracingOn
            | CtlNode::Trace
            | CtlNode::EventEnable(_)
            | CtlNode::EventTrigger(_) => (true, true),
            _ => (true, false),
        }
    }

    fn file_of(&self, fh: FileHandle) -> Result<(Arc<Inode>, bool, bool), Errno> {
        match self.handles.lock().get(fh).as_deref() {
            Some(Handle::File {
                ip,
                writable,
                direct,
            }) => Ok((Arc::clone(ip), *writable, *direct)),
            _ => Err(Errno::EBADF),
        }
    }

    /// Open a labfs inode: a handle, counted as an open file description.
    fn open_file(&self, ip: Arc<Inode>, flags: i32) -> (FileHandle, FopenFlags) {
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let direct = flags & libc::O_DIRECT != 0 || self.direct_io;
        self.fs.open_inode(&ip);
        let fh = self.handles.lock().insert(Handle::File {
            ip,
            writable,
            direct,
        });
        // A user's O_DIRECT already bypasses the kernel's page cache (and keeps O_SYNC's
        // fsync); FOPEN_DIRECT_IO is only for a whole mount with -o direct_io.
        let fopen = if self.direct_io {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::empty()
        };
        (fh, fopen)
    }

    /// The final write-back: close what the kernel left open, then unmount labfs.
    fn shut_down(&self) {
        self.stopping.store(true, Ordering::Release);
        let left: Vec<Arc<Handle>> = {
            let mut h = self.handles.lock();
            h.free.clear();
            h.slots.drain(..).flatten().collect()
        };
        for h in left {
            if let Handle::File { ip, .. } = &*h {
                // An unlinked file still open is freed now, as at its last close.
                let _ = self.fs.release_inode(ip);
            }
        }
        self.nodes.clear();
        // Dropped, not finished: a finished session would print to stderr.
        *self.trace.lock() = TraceCtl::default();
        let result = self.fs.unmount();
        *self.outcome.lock() = Some(result);
    }
}

impl Filesystem for LabFuse {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Optional speed-ups, each only if the kernel has it: attributes with listings, and
        // lookups and listings in one directory in parallel (labfs locks per inode).
        for flag in [
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_READDIRPLUS_AUTO,
            InitFlags::FUSE_PARALLEL_DIROPS,
        ] {
            let _ = config.add_capabilities(flag);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        self.shut_down();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = bytes(name);
        if let Some(c) = CtlNode::from_node_id(parent.0) {
            let found = if name == b".." {
                c.parent()
            } else {
                std::str::from_utf8(name).ok().and_then(|n| c.lookup(n))
            };
            match found {
                Some(n) => reply.entry(&TTL, &self.ctl_attr(n), Generation(0)),
                None if name == b".." => self.entry(&self.root, reply),
                None => reply.error(Errno::ENOENT),
            }
            return;
        }
        if Self::is_control_name(parent.0, name) {
            reply.entry(&TTL, &self.ctl_attr(CtlNode::Root), Generation(0));
            return;
        }
        let result = self
            .inode(parent.0)
            .and_then(|d| self.fs.lookup(&d, name).map_err(|e| errno(&e)));
        match result {
            Ok(ip) => self.entry(&ip, reply),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.nodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        if let Some(c) = CtlNode::from_node_id(ino.0) {
            reply.attr(&TTL, &self.ctl_attr(c));
            return;
        }
        // An open file answers for itself (it may be unlinked and forgotten by name).
        let ip = match fh.map(|fh| self.file_of(fh)) {
            Some(Ok((ip, _, _))) => Ok(ip),
            _ => self.inode(ino.0),
        };
        match ip {
            Ok(ip) => reply.attr(&TTL, &self.attr(&ip).0),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(c) = CtlNode::from_node_id(ino.0) {
            // Truncation (open with O_TRUNC, `>` in a shell) is how tracefs files are reset.
            let r = match (c, size) {
                (CtlNode::SetEvent, Some(0)) => self.trace.lock().clear_set_event(),
                (CtlNode::Trace, Some(0)) => self.trace.lock().clear_trace(),
                _ => Ok(()),
            };
            match r {
                Err(e) => reply.error(nix_errno(e.errno())),
                Ok(()) if mode.is_some() || uid.is_some() || gid.is_some() => {
                    reply.error(Errno::EPERM)
                }
                Ok(()) => reply.attr(&TTL, &self.ctl_attr(c)),
            }
            return;
        }
        let ip = match fh.map(|fh| self.file_of(fh)) {
            Some(Ok((ip, _, _))) => Ok(ip),
            _ => self.inode(ino.0),
        };
        let ip = match ip {
            Ok(ip) => ip,
            Err(e) => return reply.error(e),
        };
        let when = |t: TimeOrNow| match t {
            TimeOrNow::SpecificTime(t) => ns_of(t),
            TimeOrNow::Now => crate::fs::now_ns(),
        };
        let attr = SetAttr {
            mode,
            uid,
            gid,
            atime: atime.map(when),
            mtime: mtime.map(when),
        };
        let result = (|| {
            if let Some(size) = size {
                self.fs.truncate(&ip, size)?;
            }
            if attr != SetAttr::default() {
                self.fs.setattr(&ip, &attr)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => reply.attr(&TTL, &self.attr(&ip).0),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .inode(ino.0)
            .and_then(|ip| self.fs.readlink(&ip).map_err(|e| errno(&e)))
        {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        let name = bytes(name);
        if CtlNode::from_node_id(parent.0).is_some() {
            return reply.error(Errno::EACCES);
        }
        if Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EEXIST);
        }
        if mode & libc::S_IFMT != libc::S_IFREG {
            // labfs has no special files: what a kernel filesystem without ->mknod says.
            return reply.error(Errno::EPERM);
        }
        let r = self.inode(parent.0).and_then(|d| {
            self.fs
                .create_as(&d, name, mode, true, owner_of(req))
                .map_err(|e| errno(&e))
        });
        match r {
            Ok((ip, _)) => self.entry(&ip, reply),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let name = bytes(name);
        if CtlNode::from_node_id(parent.0).is_some() {
            return reply.error(Errno::EACCES);
        }
        if Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EEXIST);
        }
        let r = self.inode(parent.0).and_then(|d| {
            self.fs
                .mkdir_as(&d, name, mode, owner_of(req))
                .map_err(|e| errno(&e))
        });
        match r {
            Ok(ip) => self.entry(&ip, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = bytes(name);
        if CtlNode::from_node_id(parent.0).is_some() || Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EPERM);
        }
        match self
            .inode(parent.0)
            .and_then(|d| self.fs.unlink(&d, name).map_err(|e| errno(&e)))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = bytes(name);
        if CtlNode::from_node_id(parent.0).is_some() || Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EPERM);
        }
        match self
            .inode(parent.0)
            .and_then(|d| self.fs.rmdir(&d, name).map_err(|e| errno(&e)))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let name = bytes(link_name);
        if CtlNode::from_node_id(parent.0).is_some() {
            return reply.error(Errno::EACCES);
        }
        if Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EEXIST);
        }
        let r = self.inode(parent.0).and_then(|d| {
            self.fs
                .symlink(&d, name, target.as_os_str().as_bytes(), owner_of(req))
                .map_err(|e| errno(&e))
        });
        match r {
            Ok(ip) => self.entry(&ip, reply),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (name, newname) = (bytes(name), bytes(newname));
        let mode = if flags.is_empty() {
            RenameMode::Replace
        } else if flags == RenameFlags::RENAME_NOREPLACE {
            RenameMode::NoReplace
        } else {
            // RENAME_EXCHANGE and RENAME_WHITEOUT: labfs has neither.
            return reply.error(Errno::EINVAL);
        };
        if CtlNode::from_node_id(parent.0).is_some()
            || CtlNode::from_node_id(newparent.0).is_some()
            || Self::is_control_name(parent.0, name)
            || Self::is_control_name(newparent.0, newname)
        {
            return reply.error(Errno::EPERM);
        }
        let r = self.inode(parent.0).and_then(|s| {
            let d = self.inode(newparent.0)?;
            self.fs
                .rename_with(&s, name, &d, newname, mode)
                .map_err(|e| errno(&e))
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let name = bytes(newname);
        if CtlNode::from_node_id(ino.0).is_some() || CtlNode::from_node_id(newparent.0).is_some() {
            return reply.error(Errno::EPERM);
        }
        if Self::is_control_name(newparent.0, name) {
            return reply.error(Errno::EEXIST);
        }
        let r = self.inode(ino.0).and_then(|ip| {
            let d = self.inode(newparent.0)?;
            self.fs.link(&ip, &d, name).map_err(|e| errno(&e))?;
            Ok(ip)
        });
        match r {
            Ok(ip) => self.entry(&ip, reply),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if let Some(c) = CtlNode::from_node_id(ino.0) {
            if c.is_dir() {
                return reply.error(Errno::EISDIR);
            }
            let (can_read, can_write) = Self::ctl_access(c);
            let acc = flags.0 & libc::O_ACCMODE;
            if (acc != libc::O_WRONLY && !can_read) || (acc != libc::O_RDONLY && !can_write) {
                return reply.error(Errno::EACCES);
            }
            // Contents are rendered once per open, so a reader that reads in pieces sees one
            // consistent snapshot (as a seq_file does).
            let content = if acc != libc::O_WRONLY && c != CtlNode::TracePipe {
                match self.ctl_render(c) {
                    Ok(v) => v,
                    Err(e) => return reply.error(e),
                }
            } else {
                Vec::new()
            };
            let fh = self.handles.lock().insert(Handle::Ctl {
                node: c,
                content: Mutex::new(content),
                nonblock: flags.0 & libc::O_NONBLOCK != 0,
            });
            let mut fopen = FopenFlags::FOPEN_DIRECT_IO;
            if c == CtlNode::TracePipe {
                fopen |= FopenFlags::FOPEN_NONSEEKABLE;
            }
            return reply.opened(fh, fopen);
        }
        match self.inode(ino.0) {
            Ok(ip) => {
                if InodeRead::lock(Arc::clone(&ip)).is_dir()
                    && flags.0 & libc::O_ACCMODE != libc::O_RDONLY
                {
                    return reply.error(Errno::EISDIR);
                }
                let (fh, fopen) = self.open_file(ip, flags.0);
                reply.opened(fh, fopen);
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(h) = self.handles.lock().get(fh) else {
            return reply.error(Errno::EBADF);
        };
        match &*h {
            Handle::File { ip, .. } => {
                let mut buf = vec![0u8; size as usize];
                match self.fs.read(ip, offset, &mut buf) {
                    Ok(n) => reply.data(&buf[..n]),
                    Err(e) => reply.error(errno(&e)),
                }
            }
            Handle::Ctl {
                node: CtlNode::TracePipe,
                content,
                nonblock,
            } => {
                let size = size as usize;
                match read_pipe(&self.trace, &self.stopping, content, size, None) {
                    Ok(v) => reply.data(&v),
                    Err(e) if e != Errno::EAGAIN || *nonblock => reply.error(e),
                    // Nothing yet: wait on a thread of its own, so a reader blocked in
                    // trace_pipe never holds one of the threads serving the mount (which
                    // must stay free to do the work that makes the records).
                    Err(_) => {
                        let (trace, stopping) =
                            (Arc::clone(&self.trace), Arc::clone(&self.stopping));
                        let tid = req.pid();
                        let waiter = std::thread::Builder::new()
                            .name("labfs-trace-pipe".into())
                            .spawn(move || {
                                let Handle::Ctl { content, .. } = &*h else {
                                    return reply.error(Errno::EBADF);
                                };
                                match read_pipe(&trace, &stopping, content, size, Some(tid)) {
                                    Ok(v) => reply.data(&v),
                                    Err(e) => reply.error(e),
                                }
                            });
                        // If no thread could be started, the reply dropped with the closure
                        // answers EIO.
                        drop(waiter);
                    }
                }
            }
            Handle::Ctl { content, .. } => {
                let c = content.lock();
                let start = (offset as usize).min(c.len());
                let end = start.saturating_add(size as usize).min(c.len());
                reply.data(&c[start..end]);
            }
            Handle::Dir { .. } => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Some(h) = self.handles.lock().get(fh) else {
            return reply.error(Errno::EBADF);
        };
        match &*h {
            Handle::File {
                ip,
                writable,
                direct,
            } => {
                if !writable {
                    return reply.error(Errno::EBADF);
                }
                let r = self.fs.write(ip, offset, data).and_then(|n| {
                    // O_DIRECT: the data goes to the device now, not into labfs's page cache
                    // for later.
                    if *direct {
                        self.fs.writeback(ip)?;
                    }
                    Ok(n)
                });
                match r {
                    Ok(n) => reply.written(n as u32),
                    Err(e) => reply.error(errno(&e)),
                }
            }
            Handle::Ctl { node, .. } => match self.ctl_write(*node, data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            },
            Handle::Dir { .. } => reply.error(Errno::EISDIR),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let h = self.handles.lock().remove(fh);
        match h.as_deref() {
            Some(Handle::File { ip, .. }) => match self.fs.release_inode(ip) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(&e)),
            },
            _ => reply.ok(),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if CtlNode::from_node_id(ino.0).is_some() {
            return reply.ok();
        }
        let ip = match self.file_of(fh) {
            Ok((ip, _, _)) => Ok(ip),
            Err(_) => self.inode(ino.0),
        };
        match ip.and_then(|ip| self.fs.fsync(&ip, datasync).map_err(|e| errno(&e))) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if CtlNode::from_node_id(ino.0).is_some_and(|c| !c.is_dir()) {
            return reply.error(Errno::ENOTDIR);
        }
        if CtlNode::from_node_id(ino.0).is_none() {
            match self.inode(ino.0) {
                Ok(ip) if InodeRead::lock(Arc::clone(&ip)).is_dir() => {}
                Ok(_) => return reply.error(Errno::ENOTDIR),
                Err(e) => return reply.error(e),
            }
        }
        let fh = self.handles.lock().insert(Handle::Dir {
            node: ino.0,
            listing: Mutex::new(Vec::new()),
        });
        reply.opened(fh, FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.slots_from(fh, offset) {
            Ok(slots) => {
                for (next, s) in slots {
                    if reply.add(INodeNo(s.node), next, s.kind, OsStr::from_bytes(&s.name)) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let slots = match self.slots_from(fh, offset) {
            Ok(s) => s,
            Err(e) => return reply.error(e),
        };
        for (next, s) in slots {
            let dots = s.name == b"." || s.name == b"..";
            let (attr, generation, ip) = if let Some(c) = CtlNode::from_node_id(s.node) {
                (self.ctl_attr(c), Generation(0), None)
            } else {
                match self.inode(s.node) {
                    Ok(ip) => {
                        let (a, g) = self.attr(&ip);
                        (a, g, Some(ip))
                    }
                    // Removed since the listing was taken: leave it out.
                    Err(_) => continue,
                }
            };
            if reply.add(
                INodeNo(s.node),
                next,
                OsStr::from_bytes(&s.name),
                &TTL,
                &attr,
                generation,
            ) {
                break;
            }
            // The kernel takes a reference to every entry but `.` and `..`.
            if let (false, Some(ip)) = (dots, ip)
                && s.node != ROOT_NODE
            {
                self.nodes.remember(s.node, &ip);
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.handles.lock().remove(fh);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if CtlNode::from_node_id(ino.0).is_some() {
            return reply.ok();
        }
        match self
            .inode(ino.0)
            .and_then(|ip| self.fs.fsync(&ip, datasync).map_err(|e| errno(&e)))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let s = self.fs.statfs();
        reply.statfs(
            s.blocks,
            s.bfree,
            s.bavail,
            s.files,
            s.ffree,
            s.bsize as u32,
            s.namelen as u32,
            s.bsize as u32,
        );
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        // labfs has no extended attributes: ENOSYS makes the kernel answer EOPNOTSUPP.
        reply.error(Errno::ENOSYS);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let name = bytes(name);
        if CtlNode::from_node_id(parent.0).is_some() {
            return reply.error(Errno::EACCES);
        }
        if Self::is_control_name(parent.0, name) {
            return reply.error(Errno::EEXIST);
        }
        let r = self.inode(parent.0).and_then(|d| {
            self.fs
                .create_as(&d, name, mode, flags & libc::O_EXCL != 0, owner_of(req))
                .map_err(|e| errno(&e))
        });
        match r {
            Ok((ip, _)) => {
                let (attr, generation) = self.attr(&ip);
                self.nodes.remember(attr.ino.0, &ip);
                let (fh, fopen) = self.open_file(ip, flags);
                reply.created(&TTL, &attr, generation, fh, fopen);
            }
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let keep = libc::FALLOC_FL_KEEP_SIZE;
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let m = match mode {
            0 => FallocMode::Allocate,
            m if m == keep => FallocMode::KeepSize,
            m if m == punch => FallocMode::PunchHole,
            m if m == libc::FALLOC_FL_ZERO_RANGE => FallocMode::ZeroRange,
            // Collapse, insert, unshare, zero-range keeping the size: labfs has none.
            _ => return reply.error(Errno::EOPNOTSUPP),
        };
        let r = self.file_of(fh).and_then(|(ip, writable, _)| {
            if !writable {
                return Err(Errno::EBADF);
            }
            self.fs
                .fallocate(&ip, m, offset, length)
                .map_err(|e| errno(&e))
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
