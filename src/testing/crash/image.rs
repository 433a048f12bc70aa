//! What a mounted image holds: its tree, every directory entry and every regular file's
//! bytes, read through the filesystem. The recorder starts its model from it and the oracle
//! judges it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::backend::FileKind;
use crate::fs::Fs;
use crate::fs::error::FsError;
use crate::fs::inode::InodeRead;
use crate::testing::crash::model::{Ino, Kind, Model};

/// A file as found in an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileImage {
    /// Its size.
    pub size: u64,
    /// Its bytes (as many as a read of `size` bytes returned).
    pub data: Vec<u8>,
}

/// The tree found in a mounted image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actual {
    /// The root directory's inode.
    pub root: Ino,
    /// Every directory entry reachable from the root: `(directory, name) -> (inode, kind)`.
    pub entries: HashMap<(Ino, Vec<u8>), (Ino, FileKind)>,
    /// Every regular file reachable from the root.
    pub files: HashMap<Ino, FileImage>,
}

impl Actual {
    /// Walk a mounted filesystem from its root, reading every file.
    pub fn read(fs: &Fs) -> Result<Actual, FsError> {
        let root = fs.root()?;
        let mut actual = Actual {
            root: root.ino,
            ..Actual::default()
        };
        let mut seen = HashSet::from([root.ino]);
        let mut queue = VecDeque::from([root]);
        while let Some(dir) = queue.pop_front() {
            for e in fs.readdir(&dir)? {
                actual
                    .entries
                    .insert((dir.ino, e.name.clone()), (e.ino, e.kind));
                if !seen.insert(e.ino) {
                    continue;
                }
                let ip = fs.iget(e.ino)?;
                match e.kind {
                    FileKind::Dir => queue.push_back(ip),
                    FileKind::File => {
                        let size = InodeRead::lock(Arc::clone(&ip)).di.size;
                        let mut data = vec![0u8; size as usize];
                        let n = fs.read(&ip, 0, &mut data)?;
                        data.truncate(n);
                        actual.files.insert(e.ino, FileImage { size, data });
                    }
                    FileKind::Symlink | FileKind::Other => {}
                }
            }
        }
        Ok(actual)
    }

    /// The model of this tree, every file's bytes as found (the starting point of a
    /// recording on an existing filesystem).
    pub fn to_model(&self) -> Model {
        let mut m = Model::new(self.root);
        let mut queue = VecDeque::from([self.root]);
        type Children<'a> = Vec<(&'a Vec<u8>, Ino, FileKind)>;
        let mut by_dir: HashMap<Ino, Children<'_>> = HashMap::new();
        for ((dir, name), &(ino, kind)) in &self.entries {
            by_dir.entry(*dir).or_default().push((name, ino, kind));
        }
        let mut seen = HashSet::from([self.root]);
        while let Some(dir) = queue.pop_front() {
            let mut children = by_dir.remove(&dir).unwrap_or_default();
            children.sort_by(|a, b| a.0.cmp(b.0));
            for (name, ino, kind) in children {
                let (kind, data) = match kind {
                    FileKind::Dir => (Kind::Dir, Vec::new()),
                    _ => (
                        Kind::File,
                        self.files
                            .get(&ino)
                            .map(|f| f.data.clone())
                            .unwrap_or_default(),
                    ),
                };
                m.adopt(dir, name, ino, kind, data);
                if kind == Kind::Dir && seen.insert(ino) {
                    queue.push_back(ino);
                }
            }
        }
        m
    }
}
