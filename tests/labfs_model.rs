//! Model-based random test: the same random operations on labfs and on a plain in-memory
//! model of a filesystem; after each step the touched paths agree, every so often the whole
//! trees agree and fsck is clean, and after unmount + mount everything still agrees. The
//! operations: mkdir, write, truncate, unlink, rmdir, rename, link and symlink.

mod common;

use std::sync::Arc;

use fslab::backend::FileKind;
use fslab::fs::Fs;
use fslab::fs::check::check;
use fslab::fs::error::FsError;
use fslab::fs::inode::InodeRead;
use fslab::fs::vfs::Owner;
use fslab::rng::SplitMix64;

use common::image;
use common::model::{Model, Node, join, link_target, names, split};

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

/// labfs's answer as the errno a kernel would give.
fn outcome<T>(r: Result<T, FsError>) -> Result<T, nix::errno::Errno> {
    r.map_err(|e| e.errno())
}

/// One random step on both; returns the paths it touched.
fn step(fs: &Fs, m: &mut Model, rng: &mut SplitMix64, names: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dirs = m.dirs();
    let dir = dirs[rng.below(dirs.len() as u64) as usize].clone();
    let name = names[rng.below(names.len() as u64) as usize].as_slice();
    let path = join(&dir, name);
    let dip = fs.lookup_path(&dir).unwrap();
    let what = |op: &str| format!("{op} {}", String::from_utf8_lossy(&path));
    match rng.below(10) {
        0 => {
            let r = outcome(fs.mkdir(&dip, name, 0o755));
            assert_eq!(
                r.as_ref().map(drop).map_err(|e| *e),
                m.create_outcome(&path),
                "{}",
                what("mkdir")
            );
            if r.is_ok() {
                m.insert(path.clone(), Node::Dir);
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
                    m.write(&path, off as usize, len, byte);
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
            let r = outcome(fs.unlink(&dip, name));
            assert_eq!(r, m.unlink_outcome(&path), "{}", what("unlink"));
            if r.is_ok() {
                m.remove(&path);
            }
        }
        5 => {
            let r = outcome(fs.rmdir(&dip, name));
            assert_eq!(r, m.rmdir_outcome(&path), "{}", what("rmdir"));
            if r.is_ok() {
                m.remove(&path);
            }
        }
        6 | 7 => {
            // Rename onto a random name in a random directory.
            let ddir = dirs[rng.below(dirs.len() as u64) as usize].clone();
            let dname = names[rng.below(names.len() as u64) as usize].as_slice();
            let dpath = join(&ddir, dname);
            let ddip = fs.lookup_path(&ddir).unwrap();
            let r = outcome(fs.rename(&dip, name, &ddip, dname));
            assert_eq!(
                r,
                m.rename_outcome(&path, &dpath),
                "rename {} -> {}",
                String::from_utf8_lossy(&path),
                String::from_utf8_lossy(&dpath)
            );
            if r.is_ok() {
                m.rename(&path, &dpath);
                return vec![path, dpath, dir, ddir];
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
            let target = link_target(len, rng.below(26) as usize);
            let r = outcome(fs.symlink(&dip, name, &target, Owner::default()));
            assert_eq!(
                r.as_ref().map(drop).map_err(|e| *e),
                m.create_outcome(&path),
                "{}",
                what("symlink")
            );
            if r.is_ok() {
                m.insert(path.clone(), Node::Symlink(target));
            }
        }
        _ => {
            // Hard link an existing file under another name.
            let files = m.files_by_name();
            if files.is_empty() {
                return vec![];
            }
            let (src, id) = files[rng.below(files.len() as u64) as usize].clone();
            let ip = fs.lookup_path(&src).unwrap();
            let r = outcome(fs.link(&ip, &dip, name));
            assert_eq!(r, m.create_outcome(&path), "{}", what("link"));
            if r.is_ok() {
                m.insert(path.clone(), Node::File(id));
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
