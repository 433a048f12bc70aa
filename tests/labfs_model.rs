//! Model-based random test: the same random operations on labfs and on a plain in-memory
//! model of a filesystem; after each step the touched paths agree, every so often the whole
//! trees agree and fsck is clean, and after unmount + mount everything still agrees. The
//! operations: mkdir, write, truncate, unlink, rmdir, rename, link and symlink.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use fslab::backend::FileKind;
use fslab::fs::Fs;
use fslab::fs::check::check;
use fslab::fs::error::FsError;
use fslab::fs::inode::InodeRead;
use fslab::fs::vfs::Owner;
use fslab::rng::SplitMix64;

use common::image;

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Dir,
    /// A file: the id of its data in `Model::files` (hard links share it).
    File(usize),
    /// A symbolic link and its target.
    Symlink(Vec<u8>),
}

#[derive(Default)]
struct Model {
    tree: BTreeMap<Vec<u8>, Node>,
    files: Vec<Vec<u8>>,
}

impl Model {
    fn new() -> Model {
        let mut m = Model::default();
        m.tree.insert(b"/".to_vec(), Node::Dir);
        m
    }
    fn children(&self, dir: &[u8]) -> Vec<Vec<u8>> {
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
    fn dirs(&self) -> Vec<Vec<u8>> {
        self.tree
            .iter()
            .filter(|(_, n)| **n == Node::Dir)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir == b"/" {
        [b"/", name].concat()
    } else {
        [dir, b"/", name].concat()
    }
}

fn split(path: &[u8]) -> (&[u8], &[u8]) {
    let i = path.iter().rposition(|&c| c == b'/').expect("absolute");
    (if i == 0 { b"/" } else { &path[..i] }, &path[i + 1..])
}

/// Names for a run: a few short ones (small, shortform directories) or many long ones, so
/// directories grow through the block, leaf and node forms and shrink back.
fn names(many: bool) -> Vec<Vec<u8>> {
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

fn read_all(fs: &Fs, path: &[u8]) -> Vec<u8> {
    let ip = fs.lookup_path(path).unwrap();
    let size = InodeRead::lock(Arc::clone(&ip)).di.size as usize;
    let mut out = vec![0u8; size];
    assert_eq!(fs.read(&ip, 0, &mut out).unwrap(), size);
    out
}

/// Compare one path between labfs and the model.
fn compare_path(fs: &Fs, m: &Model, path: &[u8]) {
    match m.tree.get(path) {
        None => assert_eq!(
            fs.lookup_path(path).err(),
            Some(FsError::NotFound),
            "{} should not exist",
            String::from_utf8_lossy(path)
        ),
        Some(Node::Dir) => {
            let ip = fs.lookup_path(path).unwrap();
            let mut names: Vec<Vec<u8>> = fs
                .readdir(&ip)
                .unwrap()
                .into_iter()
                .map(|e| join(path, &e.name))
                .collect();
            names.sort();
            assert_eq!(
                names,
                m.children(path),
                "entries of {}",
                String::from_utf8_lossy(path)
            );
        }
        Some(Node::Symlink(target)) => {
            let ip = fs.lookup_path(path).unwrap();
            assert_eq!(
                &fs.readlink(&ip).unwrap(),
                target,
                "target of {}",
                String::from_utf8_lossy(path)
            );
        }
        Some(Node::File(id)) => {
            assert_eq!(
                read_all(fs, path),
                m.files[*id],
                "contents of {}",
                String::from_utf8_lossy(path)
            );
        }
    }
}

fn compare_all(fs: &Fs, m: &Model) {
    for path in m.tree.keys() {
        compare_path(fs, m, path);
    }
    let r = check(fs).unwrap();
    assert!(r.is_clean(), "fsck: {:#?}", r.findings);
}

/// One random step on both; returns the paths it touched.
fn step(fs: &Fs, m: &mut Model, rng: &mut SplitMix64, names: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dirs = m.dirs();
    let dir = dirs[rng.below(dirs.len() as u64) as usize].clone();
    let name = names[rng.below(names.len() as u64) as usize].as_slice();
    let path = join(&dir, name);
    let dip = fs.lookup_path(&dir).unwrap();
    match rng.below(10) {
        0 => {
            let r = fs.mkdir(&dip, name, 0o755);
            if m.tree.contains_key(&path) {
                assert_eq!(r.err(), Some(FsError::Exists));
            } else {
                r.unwrap();
                m.tree.insert(path.clone(), Node::Dir);
            }
        }
        1 | 2 => {
            // Write (creating when absent) at a random offset.
            let off = rng.below(3 * 4096 + 100);
            let len = rng.below(9000) as usize + 1;
            let byte = rng.below(255) as u8 + 1;
            match m.tree.get(&path).cloned() {
                Some(Node::Dir) => {
                    assert_eq!(
                        fs.create(&dip, name, 0o644, false).err(),
                        Some(FsError::IsDir)
                    );
                }
                Some(Node::Symlink(_)) => {
                    // labfs does not follow links: the name opens the link itself, which
                    // takes no data.
                    let (ip, created) = fs.create(&dip, name, 0o644, false).unwrap();
                    assert!(!created);
                    assert!(matches!(fs.write(&ip, off, b"x"), Err(FsError::Invalid(_))));
                }
                existing => {
                    let (ip, created) = fs.create(&dip, name, 0o644, false).unwrap();
                    assert_eq!(created, existing.is_none());
                    fs.write(&ip, off, &vec![byte; len]).unwrap();
                    let id = match existing {
                        Some(Node::File(id)) => id,
                        _ => {
                            m.files.push(Vec::new());
                            m.tree.insert(path.clone(), Node::File(m.files.len() - 1));
                            m.files.len() - 1
                        }
                    };
                    let data = &mut m.files[id];
                    let end = off as usize + len;
                    if data.len() < end {
                        data.resize(end, 0);
                    }
                    data[off as usize..end].fill(byte);
                }
            }
        }
        3 => {
            if let Some(Node::File(id)) = m.tree.get(&path).cloned() {
                let size = rng.below(3 * 4096 + 50);
                let ip = fs.lookup_path(&path).unwrap();
                fs.truncate(&ip, size).unwrap();
                m.files[id].resize(size as usize, 0);
            }
        }
        4 => {
            let r = fs.unlink(&dip, name);
            match m.tree.get(&path) {
                None => assert_eq!(r.err(), Some(FsError::NotFound)),
                Some(Node::Dir) => assert_eq!(r.err(), Some(FsError::IsDir)),
                Some(Node::File(_) | Node::Symlink(_)) => {
                    r.unwrap();
                    m.tree.remove(&path);
                }
            }
        }
        5 => {
            let r = fs.rmdir(&dip, name);
            match m.tree.get(&path) {
                None => assert_eq!(r.err(), Some(FsError::NotFound)),
                Some(Node::File(_) | Node::Symlink(_)) => {
                    assert_eq!(r.err(), Some(FsError::NotDir))
                }
                Some(Node::Dir) if !m.children(&path).is_empty() => {
                    assert_eq!(r.err(), Some(FsError::NotEmpty))
                }
                Some(Node::Dir) => {
                    r.unwrap();
                    m.tree.remove(&path);
                }
            }
        }
        6 | 7 => {
            // Rename onto a random name in a random directory.
            let ddir = dirs[rng.below(dirs.len() as u64) as usize].clone();
            let dname = names[rng.below(names.len() as u64) as usize].as_slice();
            let dpath = join(&ddir, dname);
            let ddip = fs.lookup_path(&ddir).unwrap();
            let r = fs.rename(&dip, name, &ddip, dname);
            let src = m.tree.get(&path).cloned();
            let dst = m.tree.get(&dpath).cloned();
            let into_self = dpath.starts_with(&path)
                && (dpath.len() == path.len() || dpath[path.len()] == b'/');
            let expect: Result<(), FsError> = match (&src, &dst) {
                (None, _) => Err(FsError::NotFound),
                _ if path == dpath => Ok(()),
                (Some(Node::Dir), _) if into_self => {
                    Err(FsError::Invalid("cannot move a directory into itself"))
                }
                (Some(Node::Dir), Some(Node::File(_) | Node::Symlink(_))) => Err(FsError::NotDir),
                (Some(Node::File(_) | Node::Symlink(_)), Some(Node::Dir)) => Err(FsError::IsDir),
                (Some(Node::Dir), Some(Node::Dir)) if !m.children(&dpath).is_empty() => {
                    Err(FsError::NotEmpty)
                }
                (Some(Node::File(a)), Some(Node::File(b))) if a == b => Ok(()),
                _ => Ok(()),
            };
            match expect {
                Err(e) => assert_eq!(
                    r.err(),
                    Some(e),
                    "rename {} -> {}",
                    String::from_utf8_lossy(&path),
                    String::from_utf8_lossy(&dpath)
                ),
                Ok(()) => {
                    r.unwrap();
                    let same_inode = matches!((&src, &dst), (Some(Node::File(a)), Some(Node::File(b))) if a == b);
                    if path != dpath && !same_inode {
                        // Move the subtree.
                        let moved: Vec<(Vec<u8>, Node)> = m
                            .tree
                            .iter()
                            .filter(|(k, _)| {
                                *k == &path || k.starts_with(&[path.as_slice(), b"/"].concat())
                            })
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        m.tree.remove(&dpath);
                        for (k, v) in moved {
                            m.tree.remove(&k);
                            m.tree
                                .insert([dpath.as_slice(), &k[path.len()..]].concat(), v);
                        }
                    }
                    return vec![path, dpath, dir, ddir];
                }
            }
            return vec![path, dpath];
        }
        8 => {
            // A symbolic link, its target short (inline) or long (a remote block).
            let len = if rng.below(2) == 0 {
                rng.below(60) + 1
            } else {
                rng.below(1024 - 337) + 337
            } as usize;
            let shift = rng.below(26) as usize;
            let target: Vec<u8> = (0..len).map(|i| b'a' + ((i + shift) % 26) as u8).collect();
            let r = fs.symlink(&dip, name, &target, Owner::default());
            if m.tree.contains_key(&path) {
                assert_eq!(r.err(), Some(FsError::Exists));
            } else {
                r.unwrap();
                m.tree.insert(path.clone(), Node::Symlink(target));
            }
        }
        _ => {
            // Hard link an existing file under another name.
            let files: Vec<(Vec<u8>, usize)> = m
                .tree
                .iter()
                .filter_map(|(k, v)| {
                    if let Node::File(id) = v {
                        Some((k.clone(), *id))
                    } else {
                        None
                    }
                })
                .collect();
            if files.is_empty() {
                return vec![];
            }
            let (src, id) = files[rng.below(files.len() as u64) as usize].clone();
            let ip = fs.lookup_path(&src).unwrap();
            let r = fs.link(&ip, &dip, name);
            if m.tree.contains_key(&path) {
                assert_eq!(r.err(), Some(FsError::Exists));
            } else {
                r.unwrap();
                m.tree.insert(path.clone(), Node::File(id));
            }
        }
    }
    vec![path, dir]
}

fn run(seed: u64, steps: usize, many_names: bool) {
    let names = names(many_names);
    let (img, mut fs) = image::mem(64 << 20).mount();
    let mut m = Model::new();
    let mut rng = SplitMix64::new(seed);
    for i in 0..steps {
        for p in step(&fs, &mut m, &mut rng, &names) {
            compare_path(&fs, &m, &p);
        }
        if i % 100 == 99 {
            fs.sync().unwrap();
            compare_all(&fs, &m);
        }
        if i % 500 == 499 {
            fs = img.remount(fs);
            compare_all(&fs, &m);
        }
    }
    let fs = img.remount(fs);
    compare_all(&fs, &m);
    let files = m
        .tree
        .values()
        .filter(|n| matches!(n, Node::File(_)))
        .count();
    assert!(
        files > 3 && m.dirs().len() > 3,
        "the run built a real tree ({files} files)"
    );
    if many_names {
        // Directories big enough to leave the shortform (a few long names fill it).
        let widest = m
            .dirs()
            .iter()
            .map(|d| m.children(d).len())
            .max()
            .unwrap_or(0);
        assert!(widest > 20, "widest directory has {widest} entries");
    }
    // Kinds recorded in directory entries match the inodes.
    for (path, node) in &m.tree {
        if path == b"/" {
            continue;
        }
        let (dir, name) = split(path);
        let entries = fs.readdir(&fs.lookup_path(dir).unwrap()).unwrap();
        let e = entries.iter().find(|e| e.name == name).unwrap();
        let kind = match node {
            Node::Dir => FileKind::Dir,
            Node::File(_) => FileKind::File,
            Node::Symlink(_) => FileKind::Symlink,
        };
        assert_eq!(e.kind, kind);
    }
}

#[test]
fn random_operations_agree_with_the_model_seed_1() {
    run(1, 1500, false);
}

#[test]
fn random_operations_agree_with_the_model_seed_2() {
    run(2, 1500, false);
}

#[test]
fn random_operations_agree_with_the_model_seed_3() {
    run(3, 1500, false);
}

#[test]
fn random_operations_agree_with_the_model_in_large_directories() {
    run(4, 6000, true);
}
