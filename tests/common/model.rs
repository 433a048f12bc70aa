//! The model filesystem of the model-based random tests: a plain tree of names, file data and
//! link targets, and what each operation must do to it (its errno, or its new state).
//!
//! `labfs_model` drives labfs's own calls with it; `fuse_model` drives the same operations
//! through a FUSE mountpoint with `std::fs`. Both ask the model what should happen, so the
//! two can only disagree with labfs, never with each other.

use std::collections::BTreeMap;

use nix::errno::Errno;

/// One name in the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A directory.
    Dir,
    /// A file: the id of its data in [`Model::files`] (hard links share it).
    File(usize),
    /// A symbolic link and its target.
    Symlink(Vec<u8>),
}

/// The model: absolute paths to nodes, and each file's contents.
#[derive(Default)]
pub struct Model {
    /// Every name, `/` included.
    pub tree: BTreeMap<Vec<u8>, Node>,
    /// File contents by id.
    pub files: Vec<Vec<u8>>,
}

/// `dir/name`, for an absolute `dir`.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir == b"/" {
        [b"/", name].concat()
    } else {
        [dir, b"/", name].concat()
    }
}

/// The directory and the last name of an absolute path.
pub fn split(path: &[u8]) -> (&[u8], &[u8]) {
    let i = path.iter().rposition(|&c| c == b'/').expect("absolute");
    (if i == 0 { b"/" } else { &path[..i] }, &path[i + 1..])
}

/// Names for a run: a few short ones (small, shortform directories) or many long ones, so
/// directories grow through the block, leaf and node forms and shrink back.
pub fn names(many: bool) -> Vec<Vec<u8>> {
    if many {
        (0..400u32)
            .map(|i| format!("{i:03}-{}", "x".repeat((i as usize * 7) % 90)).into_bytes())
            .collect()
    } else {
        [&b"a"[..], b"b", b"c", b"dd", b"eee", b"f0"]
            .iter()
            .map(|n| n.to_vec())
            .collect()
    }
}

/// A symlink target of `len` letters starting at letter `shift`.
pub fn link_target(len: usize, shift: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + ((i + shift) % 26) as u8).collect()
}

impl Model {
    /// An empty filesystem: the root directory.
    pub fn new() -> Model {
        let mut m = Model::default();
        m.tree.insert(b"/".to_vec(), Node::Dir);
        m
    }

    /// The paths of a directory's entries, sorted.
    pub fn children(&self, dir: &[u8]) -> Vec<Vec<u8>> {
        let prefix = if dir == b"/" {
            b"/".to_vec()
        } else {
            [dir, b"/"].concat()
        };
        self.tree
            .keys()
            .filter(|k| {
                k.starts_with(&prefix)
                    && k.len() > prefix.len()
                    && !k[prefix.len()..].contains(&b'/')
            })
            .cloned()
            .collect()
    }

    /// Every directory.
    pub fn dirs(&self) -> Vec<Vec<u8>> {
        self.tree
            .iter()
            .filter(|(_, n)| **n == Node::Dir)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every file name with its data id.
    pub fn files_by_name(&self) -> Vec<(Vec<u8>, usize)> {
        self.tree
            .iter()
            .filter_map(|(k, v)| match v {
                Node::File(id) => Some((k.clone(), *id)),
                _ => None,
            })
            .collect()
    }

    /// A new name (mkdir, symlink, link) at `path`: EEXIST if taken.
    pub fn create_outcome(&self, path: &[u8]) -> Result<(), Errno> {
        if self.tree.contains_key(path) {
            Err(Errno::EEXIST)
        } else {
            Ok(())
        }
    }

    /// Add `node` at `path`.
    pub fn insert(&mut self, path: Vec<u8>, node: Node) {
        self.tree.insert(path, node);
    }

    /// Write `len` bytes of `byte` at `off` into the file at `path`, creating it when absent.
    pub fn write(&mut self, path: &[u8], off: usize, len: usize, byte: u8) {
        let id = match self.tree.get(path) {
            Some(Node::File(id)) => *id,
            _ => {
                self.files.push(Vec::new());
                let id = self.files.len() - 1;
                self.tree.insert(path.to_vec(), Node::File(id));
                id
            }
        };
        let data = &mut self.files[id];
        if data.len() < off + len {
            data.resize(off + len, 0);
        }
        data[off..off + len].fill(byte);
    }

    /// unlink(2): ENOENT, EISDIR for a directory.
    pub fn unlink_outcome(&self, path: &[u8]) -> Result<(), Errno> {
        match self.tree.get(path) {
            None => Err(Errno::ENOENT),
            Some(Node::Dir) => Err(Errno::EISDIR),
            Some(_) => Ok(()),
        }
    }

    /// rmdir(2): ENOENT, ENOTDIR, ENOTEMPTY.
    pub fn rmdir_outcome(&self, path: &[u8]) -> Result<(), Errno> {
        match self.tree.get(path) {
            None => Err(Errno::ENOENT),
            Some(Node::Dir) if !self.children(path).is_empty() => Err(Errno::ENOTEMPTY),
            Some(Node::Dir) => Ok(()),
            Some(_) => Err(Errno::ENOTDIR),
        }
    }

    /// Remove one name (after a successful unlink or rmdir).
    pub fn remove(&mut self, path: &[u8]) {
        self.tree.remove(path);
    }

    /// rename(2) of `path` to `dpath`.
    pub fn rename_outcome(&self, path: &[u8], dpath: &[u8]) -> Result<(), Errno> {
        let src = self.tree.get(path);
        let dst = self.tree.get(dpath);
        let under = |a: &[u8], b: &[u8]| {
            // Whether `a` is `b` or inside it.
            a.starts_with(b) && (a.len() == b.len() || b == b"/" || a[b.len()] == b'/')
        };
        match (src, dst) {
            (None, _) => Err(Errno::ENOENT),
            _ if path == dpath => Ok(()),
            (Some(Node::Dir), _) if under(dpath, path) => Err(Errno::EINVAL),
            // Onto an ancestor of the source: the kernel's rename trap.
            (_, Some(Node::Dir)) if under(path, dpath) => Err(Errno::ENOTEMPTY),
            (Some(Node::Dir), Some(Node::File(_) | Node::Symlink(_))) => Err(Errno::ENOTDIR),
            (Some(Node::File(_) | Node::Symlink(_)), Some(Node::Dir)) => Err(Errno::EISDIR),
            (Some(Node::Dir), Some(Node::Dir)) if !self.children(dpath).is_empty() => {
                Err(Errno::ENOTEMPTY)
            }
            _ => Ok(()),
        }
    }

    /// Apply a successful rename: the subtree at `path` moves to `dpath`. Two names of one
    /// file stay as they are (rename does nothing then).
    pub fn rename(&mut self, path: &[u8], dpath: &[u8]) {
        let same_inode = matches!(
            (self.tree.get(path), self.tree.get(dpath)),
            (Some(Node::File(a)), Some(Node::File(b))) if a == b
        );
        if path == dpath || same_inode {
            return;
        }
        let sub = [path, b"/"].concat();
        let moved: Vec<(Vec<u8>, Node)> = self
            .tree
            .iter()
            .filter(|(k, _)| *k == path || k.starts_with(&sub))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.tree.remove(dpath);
        for (k, v) in moved {
            self.tree.remove(&k);
            self.tree.insert([dpath, &k[path.len()..]].concat(), v);
        }
    }
}
