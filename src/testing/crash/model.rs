//! The model filesystem: a plain in-memory tree of directories and files that the harness
//! drives beside labfs, and the record of how each operation changed it.
//!
//! Inodes are named by the inode numbers labfs gave them (the recorder learns them from
//! `stat`), so a crashed image can be compared entry by entry: "entry `bar` of directory 128
//! names inode 133". Every operation returns what it changed as a [`Change`]: directory
//! entries that appeared, vanished or were replaced ([`EntryChange`]), bytes of files
//! ([`DataChange`]) and inodes born. The crash oracle replays those changes to get the tree
//! after any prefix of the operations.
//!
//! The model also predicts errors the way Linux reports them (`EEXIST` from mkdir over a
//! name, `ENOTEMPTY` from rmdir of a non-empty directory, `EINVAL` from moving a directory
//! into itself, ...), so a workload generator can ask it whether an operation is valid before
//! running it, and the recorder can flag a labfs result that disagrees.

use std::collections::{BTreeMap, HashMap};

use crate::backend::{Errno, FallocMode, FileKind};

/// An inode number.
pub type Ino = u64;

/// Inode numbers the model invents for operations it only predicts (never labfs's).
const FIRST_FAKE_INO: Ino = 1 << 62;

/// The kinds of inode the model holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

impl Kind {
    /// The VFS kind a directory entry reports for this inode.
    pub fn file_kind(self) -> FileKind {
        match self {
            Kind::File => FileKind::File,
            Kind::Dir => FileKind::Dir,
        }
    }
}

/// One directory entry an operation changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryChange {
    /// The directory.
    pub dir: Ino,
    /// The entry's name.
    pub name: Vec<u8>,
    /// The inode it named before (`None`: it did not exist).
    pub before: Option<Ino>,
    /// The inode it names after (`None`: it was removed).
    pub after: Option<Ino>,
}

impl EntryChange {
    /// Whether the change involves inode `ino`: as the directory, or as the inode named.
    pub fn involves(&self, ino: Ino) -> bool {
        self.dir == ino || self.before == Some(ino) || self.after == Some(ino)
    }
}

/// What an operation did to one file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataChange {
    /// Bytes written at an offset (the file grows to cover them).
    Write {
        /// Byte offset.
        offset: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The size set (truncate, or a size-extending fallocate): bytes past the old size that
    /// the new size covers read as zero.
    Resize {
        /// The new size.
        size: u64,
    },
    /// A range reads as zero from now on (hole punch, zero range); the size is unchanged.
    Zero {
        /// Byte offset.
        offset: u64,
        /// Length in bytes (clipped to the size when applied).
        len: u64,
    },
}

impl DataChange {
    /// Apply the change to a file's contents.
    pub fn apply(&self, data: &mut Vec<u8>) {
        match self {
            DataChange::Write {
                offset,
                data: bytes,
            } => {
                let start = *offset as usize;
                let end = start + bytes.len();
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[start..end].copy_from_slice(bytes);
            }
            DataChange::Resize { size } => data.resize(*size as usize, 0),
            DataChange::Zero { offset, len } => {
                let start = (*offset as usize).min(data.len());
                let end = (offset.saturating_add(*len) as usize).min(data.len());
                data[start..end].fill(0);
            }
        }
    }

    /// The size a file of `size` bytes has after the change.
    pub fn size_after(&self, size: u64) -> u64 {
        match self {
            DataChange::Write { offset, data } => size.max(offset + data.len() as u64),
            DataChange::Resize { size: new } => *new,
            DataChange::Zero { .. } => size,
        }
    }

    /// Whether the change can leave byte `value` at `pos` in a file that was `size_before`
    /// bytes long when it was applied.
    pub fn can_leave(&self, pos: u64, value: u8, size_before: u64) -> bool {
        match self {
            DataChange::Write { offset, data } => {
                pos >= *offset && pos < offset + data.len() as u64
                    && data[(pos - offset) as usize] == value
                    // A write past the end leaves zeroes in the gap it opens.
                    || value == 0 && pos >= size_before && pos < *offset
            }
            // Cut bytes read as zero if the file grows back over them; an extension reads
            // zero.
            DataChange::Resize { size } => value == 0 && (pos >= *size || pos >= size_before),
            DataChange::Zero { offset, len } => {
                value == 0 && pos >= *offset && pos < offset.saturating_add(*len)
            }
        }
    }
}

/// Everything one operation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Directory entries, in the order they changed.
    pub entries: Vec<EntryChange>,
    /// File contents, in order.
    pub data: Vec<(Ino, DataChange)>,
    /// An inode the operation created.
    pub born: Option<(Ino, Kind)>,
}

/// One inode of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// File or directory.
    pub kind: Kind,
    /// A file's bytes (empty for a directory).
    pub data: Vec<u8>,
    /// A directory's entries (empty for a file).
    pub entries: BTreeMap<Vec<u8>, Ino>,
    /// Names pointing at it (a directory's own `.` and its children's `..` are not counted).
    pub names: u32,
}

impl Node {
    fn new(kind: Kind) -> Node {
        Node {
            kind,
            data: Vec::new(),
            entries: BTreeMap::new(),
            names: 0,
        }
    }
}

/// The model filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    root: Ino,
    nodes: HashMap<Ino, Node>,
    next_fake: Ino,
}

/// Split an absolute or relative path into its non-empty components.
fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&c| c == b'/').filter(|c| !c.is_empty())
}

impl Model {
    /// An empty filesystem whose root directory is inode `root`.
    pub fn new(root: Ino) -> Model {
        let mut nodes = HashMap::new();
        nodes.insert(root, Node::new(Kind::Dir));
        Model {
            root,
            nodes,
            next_fake: FIRST_FAKE_INO,
        }
    }

    /// The root directory's inode.
    pub fn root(&self) -> Ino {
        self.root
    }

    /// An inode, if it is live.
    pub fn node(&self, ino: Ino) -> Option<&Node> {
        self.nodes.get(&ino)
    }

    /// Every live inode.
    pub fn nodes(&self) -> impl Iterator<Item = (Ino, &Node)> {
        self.nodes.iter().map(|(&i, n)| (i, n))
    }

    /// Every directory entry, as `((directory, name), inode)`.
    pub fn entries(&self) -> impl Iterator<Item = ((Ino, &[u8]), Ino)> {
        self.nodes.iter().flat_map(|(&dir, n)| {
            n.entries
                .iter()
                .map(move |(name, &ino)| ((dir, name.as_slice()), ino))
        })
    }

    /// Add an inode that already exists on the filesystem the model starts from, under an
    /// existing directory. Used to describe a filesystem as found.
    pub fn adopt(&mut self, dir: Ino, name: &[u8], ino: Ino, kind: Kind, data: Vec<u8>) {
        let node = self.nodes.entry(ino).or_insert_with(|| Node::new(kind));
        node.names += 1;
        if kind == Kind::File {
            node.data = data;
        }
        if let Some(d) = self.nodes.get_mut(&dir) {
            d.entries.insert(name.to_vec(), ino);
        }
    }

    /// The inode a path names.
    pub fn resolve(&self, path: &[u8]) -> Result<Ino, Errno> {
        let mut ino = self.root;
        for c in components(path) {
            let node = &self.nodes[&ino];
            if node.kind != Kind::Dir {
                return Err(Errno::ENOTDIR);
            }
            ino = *node.entries.get(c).ok_or(Errno::ENOENT)?;
        }
        Ok(ino)
    }

    /// The directory holding a path's last component, and that component.
    pub fn resolve_parent<'p>(&self, path: &'p [u8]) -> Result<(Ino, &'p [u8]), Errno> {
        let parts: Vec<&[u8]> = components(path).collect();
        let (name, dirs) = parts.split_last().ok_or(Errno::EINVAL)?;
        let mut ino = self.root;
        for c in dirs {
            let node = &self.nodes[&ino];
            if node.kind != Kind::Dir {
                return Err(Errno::ENOTDIR);
            }
            ino = *node.entries.get(*c).ok_or(Errno::ENOENT)?;
        }
        if self.nodes[&ino].kind != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        Ok((ino, name))
    }

    /// Every reachable name with the inode it names, as absolute paths (`/` first, then
    /// depth-first in name order).
    pub fn walk(&self) -> Vec<(Vec<u8>, Ino)> {
        let mut out = vec![(b"/".to_vec(), self.root)];
        let mut stack = vec![(self.root, Vec::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for (name, &child) in self.nodes[&dir].entries.iter().rev() {
                let path = [prefix.as_slice(), b"/", name].concat();
                if self.nodes[&child].kind == Kind::Dir {
                    stack.push((child, path.clone()));
                }
                out.push((path, child));
            }
        }
        out
    }

    /// A path naming `ino`, if it is reachable (the first name found, for display).
    pub fn path_of(&self, ino: Ino) -> Option<Vec<u8>> {
        if ino == self.root {
            return Some(b"/".to_vec());
        }
        let mut stack = vec![(self.root, Vec::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for (name, &child) in &self.nodes[&dir].entries {
                let path = [prefix.as_slice(), b"/", name].concat();
                if child == ino {
                    return Some(path);
                }
                if self.nodes[&child].kind == Kind::Dir {
                    stack.push((child, path));
                }
            }
        }
        None
    }

    fn fresh(&mut self, ino: Option<Ino>) -> Ino {
        ino.unwrap_or_else(|| {
            self.next_fake += 1;
            self.next_fake
        })
    }

    /// Whether `ino` is `dir` or one of its descendants.
    fn is_within(&self, ino: Ino, dir: Ino) -> bool {
        if ino == dir {
            return true;
        }
        self.nodes[&dir]
            .entries
            .values()
            .any(|&c| self.nodes[&c].kind == Kind::Dir && self.is_within(ino, c))
    }

    fn set_entry(&mut self, dir: Ino, name: &[u8], after: Option<Ino>, change: &mut Change) {
        let entries = &mut self.nodes.get_mut(&dir).expect("live directory").entries;
        let before = match after {
            Some(ino) => entries.insert(name.to_vec(), ino),
            None => entries.remove(name),
        };
        if let Some(ino) = after {
            self.nodes.get_mut(&ino).expect("live inode").names += 1;
        }
        if let Some(old) = before {
            let node = self.nodes.get_mut(&old).expect("live inode");
            node.names -= 1;
            if node.names == 0 {
                // No name left: the inode is gone (the harness never holds one open past
                // its last unlink).
                self.nodes.remove(&old);
            }
        }
        change.entries.push(EntryChange {
            dir,
            name: name.to_vec(),
            before,
            after,
        });
    }

    /// mkdir(2). `ino` is the new directory's number (`None`: invent one).
    pub fn mkdir(&mut self, path: &[u8], ino: Option<Ino>) -> Result<Change, Errno> {
        let (dir, name) = self.resolve_parent(path)?;
        if self.nodes[&dir].entries.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let ino = self.fresh(ino);
        self.nodes.insert(ino, Node::new(Kind::Dir));
        let mut change = Change {
            born: Some((ino, Kind::Dir)),
            ..Change::default()
        };
        self.set_entry(dir, name, Some(ino), &mut change);
        Ok(change)
    }

    /// open(2) with O_CREAT (and O_EXCL if `exclusive`): create a file if the name is free.
    /// Returns the file's inode and what changed (nothing for an existing file).
    pub fn create(
        &mut self,
        path: &[u8],
        exclusive: bool,
        ino: Option<Ino>,
    ) -> Result<(Ino, Change), Errno> {
        let (dir, name) = self.resolve_parent(path)?;
        if let Some(&existing) = self.nodes[&dir].entries.get(name) {
            if exclusive {
                return Err(Errno::EEXIST);
            }
            if self.nodes[&existing].kind == Kind::Dir {
                return Err(Errno::EISDIR);
            }
            return Ok((existing, Change::default()));
        }
        let ino = self.fresh(ino);
        self.nodes.insert(ino, Node::new(Kind::File));
        let mut change = Change {
            born: Some((ino, Kind::File)),
            ..Change::default()
        };
        self.set_entry(dir, name, Some(ino), &mut change);
        Ok((ino, change))
    }

    /// unlink(2).
    pub fn unlink(&mut self, path: &[u8]) -> Result<Change, Errno> {
        let (dir, name) = self.resolve_parent(path)?;
        let ino = *self.nodes[&dir].entries.get(name).ok_or(Errno::ENOENT)?;
        if self.nodes[&ino].kind == Kind::Dir {
            return Err(Errno::EISDIR);
        }
        let mut change = Change::default();
        self.set_entry(dir, name, None, &mut change);
        Ok(change)
    }

    /// rmdir(2).
    pub fn rmdir(&mut self, path: &[u8]) -> Result<Change, Errno> {
        let (dir, name) = self.resolve_parent(path)?;
        let ino = *self.nodes[&dir].entries.get(name).ok_or(Errno::ENOENT)?;
        let node = &self.nodes[&ino];
        if node.kind != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        if !node.entries.is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        let mut change = Change::default();
        self.set_entry(dir, name, None, &mut change);
        Ok(change)
    }

    /// link(2).
    pub fn link(&mut self, existing: &[u8], new: &[u8]) -> Result<Change, Errno> {
        let ino = self.resolve(existing)?;
        if self.nodes[&ino].kind == Kind::Dir {
            return Err(Errno::EPERM);
        }
        let (dir, name) = self.resolve_parent(new)?;
        if self.nodes[&dir].entries.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let mut change = Change::default();
        self.set_entry(dir, name, Some(ino), &mut change);
        Ok(change)
    }

    /// rename(2).
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Result<Change, Errno> {
        let (sdir, sname) = self.resolve_parent(from)?;
        let src = *self.nodes[&sdir].entries.get(sname).ok_or(Errno::ENOENT)?;
        let (ddir, dname) = self.resolve_parent(to)?;
        let dst = self.nodes[&ddir].entries.get(dname).copied();
        if sdir == ddir && sname == dname {
            return Ok(Change::default());
        }
        let src_kind = self.nodes[&src].kind;
        if src_kind == Kind::Dir && self.is_within(ddir, src) {
            return Err(Errno::EINVAL);
        }
        if let Some(dst) = dst {
            if dst == src {
                // Two names of one inode: rename does nothing (POSIX).
                return Ok(Change::default());
            }
            let dst_node = &self.nodes[&dst];
            // Over one of the source's own ancestors: ENOTEMPTY before any type check (the
            // kernel's rename trap: that directory holds the source, so it is not empty).
            if dst_node.kind == Kind::Dir && self.is_within(sdir, dst) {
                return Err(Errno::ENOTEMPTY);
            }
            match (src_kind, dst_node.kind) {
                (Kind::Dir, Kind::File) => return Err(Errno::ENOTDIR),
                (Kind::File, Kind::Dir) => return Err(Errno::EISDIR),
                (Kind::Dir, Kind::Dir) if !dst_node.entries.is_empty() => {
                    return Err(Errno::ENOTEMPTY);
                }
                _ => {}
            }
        }
        let mut change = Change::default();
        // The new name first, so the inode never has no name in between.
        self.set_entry(ddir, dname, Some(src), &mut change);
        self.set_entry(sdir, sname, None, &mut change);
        Ok(change)
    }

    fn file_mut(&mut self, ino: Ino) -> Result<&mut Node, Errno> {
        match self.nodes.get_mut(&ino) {
            Some(n) if n.kind == Kind::File => Ok(n),
            Some(_) => Err(Errno::EISDIR),
            None => Err(Errno::EBADF),
        }
    }

    fn data_change(&mut self, ino: Ino, dc: DataChange) -> Result<Change, Errno> {
        dc.apply(&mut self.file_mut(ino)?.data);
        Ok(Change {
            data: vec![(ino, dc)],
            ..Change::default()
        })
    }

    /// pwrite(2) of `data` at `offset`.
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<Change, Errno> {
        self.data_change(
            ino,
            DataChange::Write {
                offset,
                data: data.to_vec(),
            },
        )
    }

    /// truncate(2).
    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<Change, Errno> {
        self.data_change(ino, DataChange::Resize { size })
    }

    /// fallocate(2) as labfs implements its modes: allocation and zero-range extend the size
    /// (no KEEP_SIZE), a hole punch keeps it, KEEP_SIZE changes nothing a read can see.
    pub fn fallocate(
        &mut self,
        ino: Ino,
        mode: FallocMode,
        offset: u64,
        len: u64,
    ) -> Result<Change, Errno> {
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let size = self.file_mut(ino)?.data.len() as u64;
        let end = offset.saturating_add(len);
        let mut change = Change::default();
        if matches!(mode, FallocMode::PunchHole | FallocMode::ZeroRange) && offset < size {
            change.data.extend(
                self.data_change(ino, DataChange::Zero { offset, len })?
                    .data,
            );
        }
        if matches!(mode, FallocMode::Allocate | FallocMode::ZeroRange) && end > size {
            change.data.extend(
                self.data_change(ino, DataChange::Resize { size: end })?
                    .data,
            );
        }
        Ok(change)
    }

    /// A file's bytes.
    pub fn content(&self, ino: Ino) -> Option<&[u8]> {
        self.nodes
            .get(&ino)
            .filter(|n| n.kind == Kind::File)
            .map(|n| n.data.as_slice())
    }

    /// The entries of a directory, by name.
    pub fn children(&self, dir: Ino) -> Option<&BTreeMap<Vec<u8>, Ino>> {
        self.nodes
            .get(&dir)
            .filter(|n| n.kind == Kind::Dir)
            .map(|n| &n.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        let mut m = Model::new(1);
        m.mkdir(b"/A", Some(2)).expect("mkdir");
        m.mkdir(b"/B", Some(3)).expect("mkdir");
        m.create(b"/A/foo", false, Some(4)).expect("create");
        m
    }

    #[test]
    fn namespace_errors_follow_linux() {
        let mut m = model();
        assert_eq!(m.mkdir(b"/A", None), Err(Errno::EEXIST));
        assert_eq!(m.mkdir(b"/X/y", None), Err(Errno::ENOENT));
        assert_eq!(m.mkdir(b"/A/foo/z", None), Err(Errno::ENOTDIR));
        assert_eq!(m.create(b"/A", false, None).err(), Some(Errno::EISDIR));
        assert_eq!(m.create(b"/A/foo", true, None).err(), Some(Errno::EEXIST));
        assert_eq!(m.unlink(b"/A"), Err(Errno::EISDIR));
        assert_eq!(m.rmdir(b"/A/foo"), Err(Errno::ENOTDIR));
        assert_eq!(m.rmdir(b"/A"), Err(Errno::ENOTEMPTY));
        assert_eq!(m.link(b"/A", b"/C"), Err(Errno::EPERM));
        assert_eq!(m.link(b"/A/foo", b"/A/foo"), Err(Errno::EEXIST));
        assert_eq!(m.rename(b"/A", b"/A/sub"), Err(Errno::EINVAL));
        assert_eq!(m.rename(b"/A/foo", b"/B"), Err(Errno::EISDIR));
        assert_eq!(m.rename(b"/B", b"/A/foo"), Err(Errno::ENOTDIR));
        assert_eq!(m.rename(b"/B", b"/A"), Err(Errno::ENOTEMPTY));
        // A file over its own parent: the rename trap answers before the type check.
        assert_eq!(m.rename(b"/A/foo", b"/A"), Err(Errno::ENOTEMPTY));
        assert_eq!(m.rename(b"/nope", b"/x"), Err(Errno::ENOENT));
    }

    #[test]
    fn rename_over_a_file_replaces_it_and_reports_both_entries() {
        let mut m = model();
        m.create(b"/B/bar", false, Some(5)).expect("create");
        let c = m.rename(b"/A/foo", b"/B/bar").expect("rename");
        assert_eq!(
            c.entries,
            vec![
                EntryChange {
                    dir: 3,
                    name: b"bar".to_vec(),
                    before: Some(5),
                    after: Some(4)
                },
                EntryChange {
                    dir: 2,
                    name: b"foo".to_vec(),
                    before: Some(4),
                    after: None
                },
            ]
        );
        assert!(m.node(5).is_none(), "the replaced file is gone");
        assert_eq!(m.resolve(b"/B/bar"), Ok(4));
        assert_eq!(m.path_of(4), Some(b"/B/bar".to_vec()));
        let mut paths: Vec<Vec<u8>> = m.walk().into_iter().map(|(p, _)| p).collect();
        paths.sort();
        assert_eq!(paths, [&b"/"[..], b"/A", b"/B", b"/B/bar"]);
    }

    #[test]
    fn hard_links_share_data_and_renaming_one_onto_the_other_does_nothing() {
        let mut m = model();
        m.link(b"/A/foo", b"/B/foo").expect("link");
        m.write(4, 0, b"abc").expect("write");
        assert_eq!(
            m.content(m.resolve(b"/B/foo").expect("there")),
            Some(&b"abc"[..])
        );
        assert_eq!(m.rename(b"/A/foo", b"/B/foo"), Ok(Change::default()));
        m.unlink(b"/A/foo").expect("unlink");
        assert_eq!(m.node(4).map(|n| n.names), Some(1));
    }

    #[test]
    fn data_changes_follow_posix_sizes() {
        let mut m = model();
        m.write(4, 10, b"xy").expect("write");
        assert_eq!(m.content(4).map(<[u8]>::len), Some(12));
        m.fallocate(4, FallocMode::KeepSize, 0, 100)
            .expect("keep size");
        assert_eq!(m.content(4).map(<[u8]>::len), Some(12));
        m.fallocate(4, FallocMode::PunchHole, 10, 1).expect("punch");
        assert_eq!(&m.content(4).expect("file")[10..], b"\0y");
        m.fallocate(4, FallocMode::Allocate, 0, 20)
            .expect("allocate");
        assert_eq!(m.content(4).map(<[u8]>::len), Some(20));
        m.truncate(4, 11).expect("truncate");
        assert_eq!(m.content(4).map(<[u8]>::len), Some(11));
        m.fallocate(4, FallocMode::ZeroRange, 0, 30)
            .expect("zero range");
        assert_eq!(m.content(4), Some(&[0u8; 30][..]));
    }

    #[test]
    fn can_leave_accounts_for_gaps_cuts_and_holes() {
        let w = DataChange::Write {
            offset: 8,
            data: vec![7, 7],
        };
        assert!(w.can_leave(8, 7, 0));
        assert!(!w.can_leave(8, 6, 0));
        assert!(w.can_leave(3, 0, 2), "the gap a write past the end opens");
        assert!(
            !w.can_leave(1, 0, 2),
            "bytes before the old end keep their value"
        );
        let cut = DataChange::Resize { size: 4 };
        assert!(cut.can_leave(5, 0, 10));
        assert!(!cut.can_leave(3, 0, 10));
        let grow = DataChange::Resize { size: 20 };
        assert!(grow.can_leave(12, 0, 10));
        let hole = DataChange::Zero { offset: 2, len: 2 };
        assert!(hole.can_leave(3, 0, 10) && !hole.can_leave(4, 0, 10));
    }
}
