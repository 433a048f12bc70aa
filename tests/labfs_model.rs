//! Model-based random test: the same random operations on labfs and on the model filesystem
//! the crash harness uses (`fslab::testing::crash::model`); every labfs result, error included,
//! must be the one the model predicts. After each step the touched paths agree (names, inode
//! numbers, contents), every so often the whole trees agree and fsck is clean, and after
//! unmount + mount everything still agrees.

mod common;

use std::sync::Arc;

use fslab::backend::{Errno, FileKind};
use fslab::fs::Fs;
use fslab::fs::check::check;
use fslab::fs::error::FsError;
use fslab::fs::inode::InodeRead;
use fslab::rng::SplitMix64;
use fslab::testing::crash::model::{Change, Ino, Kind, Model};

use common::image;

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir == b"/" {
        [b"/", name].concat()
    } else {
        [dir, b"/", name].concat()
    }
}

fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
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

/// Paths of the model's directories, or of its files.
fn paths_of(m: &Model, kind: Kind) -> Vec<(Vec<u8>, Ino)> {
    let mut out = Vec::new();
    let mut stack = vec![(b"/".to_vec(), m.root())];
    if kind == Kind::Dir {
        out.push((b"/".to_vec(), m.root()));
    }
    while let Some((dir, dino)) = stack.pop() {
        for (name, &ino) in m.children(dino).into_iter().flatten() {
            let is_dir = m.children(ino).is_some();
            if is_dir || kind == Kind::File {
                let path = join(&dir, name);
                if is_dir {
                    stack.push((path.clone(), ino));
                }
                if is_dir == (kind == Kind::Dir) {
                    out.push((path, ino));
                }
            }
        }
    }
    out
}

fn read_all(fs: &Fs, path: &[u8]) -> Vec<u8> {
    let ip = fs.lookup_path(path).unwrap();
    let size = InodeRead::lock(Arc::clone(&ip)).di.size as usize;
    let mut out = vec![0u8; size];
    assert_eq!(fs.read(&ip, 0, &mut out).unwrap(), size);
    out
}

/// labfs's result and the model's prediction must agree: both succeed, or both fail with
/// the same errno.
fn agree<T>(what: &str, labfs: &Result<T, FsError>, model: &Result<Change, Errno>) {
    assert_eq!(
        labfs.as_ref().err().map(FsError::errno),
        model.as_ref().err().copied(),
        "{what}: labfs and the model disagree"
    );
}

/// Compare one path between labfs and the model.
fn compare_path(fs: &Fs, m: &Model, path: &[u8]) {
    let ino = match m.resolve(path) {
        Err(e) => {
            assert_eq!(
                fs.lookup_path(path).err().map(|e| e.errno()),
                Some(e),
                "{} should not exist",
                show(path)
            );
            return;
        }
        Ok(ino) => ino,
    };
    assert_eq!(
        fs.lookup_path(path).unwrap().ino,
        ino,
        "inode of {}",
        show(path)
    );
    if let Some(children) = m.children(ino) {
        let ip = fs.lookup_path(path).unwrap();
        let mut found: Vec<(Vec<u8>, u64)> = fs
            .readdir(&ip)
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.ino))
            .collect();
        found.sort();
        let expected: Vec<(Vec<u8>, u64)> = children.iter().map(|(n, &i)| (n.clone(), i)).collect();
        assert_eq!(found, expected, "entries of {}", show(path));
    } else {
        assert_eq!(
            read_all(fs, path),
            m.content(ino).unwrap(),
            "contents of {}",
            show(path)
        );
    }
}

fn compare_all(fs: &Fs, m: &Model) {
    for (path, _) in m.walk() {
        compare_path(fs, m, &path);
    }
    let r = check(fs).unwrap();
    assert!(r.is_clean(), "fsck: {:#?}", r.findings);
}

/// One random step on both; returns the paths it touched.
fn step(fs: &Fs, m: &mut Model, rng: &mut SplitMix64, names: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dirs = paths_of(m, Kind::Dir);
    let dir = dirs[rng.below(dirs.len() as u64) as usize].0.clone();
    let name = names[rng.below(names.len() as u64) as usize].as_slice();
    let path = join(&dir, name);
    let dip = fs.lookup_path(&dir).unwrap();
    match rng.below(10) {
        0 => {
            let r = fs.mkdir(&dip, name, 0o755);
            let mr = m.mkdir(&path, r.as_ref().ok().map(|ip| ip.ino));
            agree(&format!("mkdir {}", show(&path)), &r, &mr);
        }
        1 | 2 => {
            // Write (creating when absent) at a random offset.
            let off = rng.below(3 * 4096 + 100);
            let len = rng.below(9000) as usize + 1;
            let byte = rng.below(255) as u8 + 1;
            let r = fs.create(&dip, name, 0o644, false);
            let mr = m.create(&path, false, r.as_ref().ok().map(|(ip, _)| ip.ino));
            let what = format!("create {}", show(&path));
            assert_eq!(
                r.as_ref().err().map(FsError::errno),
                mr.as_ref().err().copied(),
                "{what}"
            );
            if let (Ok((ip, created)), Ok((ino, change))) = (r, mr) {
                assert_eq!(created, change.born.is_some(), "{what}");
                assert_eq!(ip.ino, ino, "{what}");
                fs.write(&ip, off, &vec![byte; len]).unwrap();
                m.write(ino, off, &vec![byte; len]).unwrap();
            }
        }
        3 => {
            if let Some(ino) = m.resolve(&path).ok().filter(|&i| m.content(i).is_some()) {
                let size = rng.below(3 * 4096 + 50);
                let ip = fs.lookup_path(&path).unwrap();
                fs.truncate(&ip, size).unwrap();
                m.truncate(ino, size).unwrap();
            }
        }
        4 => {
            let r = fs.unlink(&dip, name);
            agree(&format!("unlink {}", show(&path)), &r, &m.unlink(&path));
        }
        5 => {
            let r = fs.rmdir(&dip, name);
            agree(&format!("rmdir {}", show(&path)), &r, &m.rmdir(&path));
        }
        6 | 7 => {
            // Rename onto a random name in a random directory.
            let ddir = dirs[rng.below(dirs.len() as u64) as usize].0.clone();
            let dname = names[rng.below(names.len() as u64) as usize].as_slice();
            let dpath = join(&ddir, dname);
            let ddip = fs.lookup_path(&ddir).unwrap();
            let r = fs.rename(&dip, name, &ddip, dname);
            let mr = m.rename(&path, &dpath);
            agree(
                &format!("rename {} -> {}", show(&path), show(&dpath)),
                &r,
                &mr,
            );
            if r.is_ok() {
                return vec![path, dpath, dir, ddir];
            }
            return vec![path, dpath];
        }
        _ => {
            // Hard link an existing file under another name.
            let files = paths_of(m, Kind::File);
            if files.is_empty() {
                return vec![];
            }
            let (src, _) = files[rng.below(files.len() as u64) as usize].clone();
            let ip = fs.lookup_path(&src).unwrap();
            let r = fs.link(&ip, &dip, name);
            let mr = m.link(&src, &path);
            agree(&format!("link {} {}", show(&src), show(&path)), &r, &mr);
        }
    }
    vec![path, dir]
}

fn run(seed: u64, steps: usize, many_names: bool) {
    let names = names(many_names);
    let (img, mut fs) = image::mem(64 << 20).mount();
    let mut m = Model::new(fs.root().unwrap().ino);
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
    let files = paths_of(&m, Kind::File).len();
    let dirs = paths_of(&m, Kind::Dir);
    assert!(
        files > 3 && dirs.len() > 3,
        "the run built a real tree ({files} files)"
    );
    if many_names {
        // Directories big enough to leave the shortform (a few long names fill it).
        let widest = dirs
            .iter()
            .filter_map(|(_, d)| m.children(*d).map(|c| c.len()))
            .max()
            .unwrap_or(0);
        assert!(widest > 20, "widest directory has {widest} entries");
    }
    // Kinds recorded in directory entries match the inodes.
    for (dir, dino) in &dirs {
        let entries = fs.readdir(&fs.lookup_path(dir).unwrap()).unwrap();
        for e in entries {
            let kind = m
                .children(*dino)
                .and_then(|c| c.get(&e.name))
                .and_then(|&i| m.node(i))
                .map(|n| n.kind.file_kind());
            assert_eq!(Some(e.kind), kind, "{}", show(&join(dir, &e.name)));
            assert_ne!(e.kind, FileKind::Other);
        }
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
