//! The model-based random test through a FUSE mountpoint: random mkdir, write, truncate,
//! unlink, rmdir, rename, link and symlink made with `std::fs` on the mount and on the model
//! (`tests/common/model.rs`, shared with `labfs_model`); after each step the touched paths
//! agree, every so often the whole tree agrees, and across unmount, fsck and a new mount
//! everything still agrees.
//!
//! FUSE tests are ignored unless asked for (`tests/common/fuse.rs` says why).

mod common;

mod kernel_fuse {
    use std::ffi::OsStr;
    use std::fs::{self, OpenOptions};
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::PathBuf;

    use fslab::fuse::FuseOptions;
    use fslab::fuse::control::CONTROL_DIR;
    use fslab::rng::SplitMix64;
    use nix::errno::Errno;

    use super::common::fuse::Mounted;
    use super::common::image::{self, assert_clean};
    use super::common::model::{Model, Node, join, link_target, names};

    fn host(m: &Mounted, path: &[u8]) -> PathBuf {
        m.path().join(OsStr::from_bytes(&path[1..]))
    }

    /// The errno of a std::fs result.
    fn outcome<T>(r: std::io::Result<T>) -> Result<T, Errno> {
        r.map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))
    }

    fn compare_path(mnt: &Mounted, m: &Model, path: &[u8]) {
        let p = host(mnt, path);
        let shown = String::from_utf8_lossy(path);
        match m.tree.get(path) {
            None => assert_eq!(
                outcome(fs::symlink_metadata(&p)).err(),
                Some(Errno::ENOENT),
                "{shown} should not exist"
            ),
            Some(Node::Dir) => {
                let mut names: Vec<Vec<u8>> = fs::read_dir(&p)
                    .unwrap_or_else(|e| panic!("read_dir {shown}: {e}"))
                    .map(|e| e.unwrap().file_name().as_bytes().to_vec())
                    .filter(|n| !(path == b"/" && n == CONTROL_DIR.as_bytes()))
                    .map(|n| join(path, &n))
                    .collect();
                names.sort();
                assert_eq!(names, m.children(path), "entries of {shown}");
            }
            Some(Node::Symlink(target)) => {
                let t = fs::read_link(&p).unwrap_or_else(|e| panic!("readlink {shown}: {e}"));
                assert_eq!(t.as_os_str().as_bytes(), &target[..], "target of {shown}");
            }
            Some(Node::File(id)) => {
                let data = fs::read(&p).unwrap_or_else(|e| panic!("read {shown}: {e}"));
                assert!(data == m.files[*id], "contents of {shown}");
            }
        }
    }

    fn compare_all(mnt: &Mounted, m: &Model) {
        for path in m.tree.keys() {
            compare_path(mnt, m, path);
        }
    }

    fn step(mnt: &Mounted, m: &mut Model, rng: &mut SplitMix64, names: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let dirs = m.dirs();
        let dir = dirs[rng.below(dirs.len() as u64) as usize].clone();
        let name = names[rng.below(names.len() as u64) as usize].as_slice();
        let path = join(&dir, name);
        let p = host(mnt, &path);
        let what = |op: &str| format!("{op} {}", String::from_utf8_lossy(&path));
        match rng.below(10) {
            0 => {
                let r = outcome(fs::create_dir(&p));
                assert_eq!(r, m.create_outcome(&path), "{}", what("mkdir"));
                if r.is_ok() {
                    m.insert(path.clone(), Node::Dir);
                }
            }
            1 | 2 => {
                let off = rng.below(3 * 4096 + 100);
                let len = rng.below(9000) as usize + 1;
                let byte = rng.below(255) as u8 + 1;
                // O_NOFOLLOW: a link is not written through (its target may be anywhere).
                let f = outcome(
                    OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&p),
                );
                match m.tree.get(&path) {
                    Some(Node::Dir) => assert_eq!(f.err(), Some(Errno::EISDIR), "{}", what("open")),
                    Some(Node::Symlink(_)) => {
                        assert_eq!(f.err(), Some(Errno::ELOOP), "{}", what("open"))
                    }
                    _ => {
                        let mut f = f.unwrap_or_else(|e| panic!("{}: {e}", what("open")));
                        f.seek(SeekFrom::Start(off)).unwrap();
                        f.write_all(&vec![byte; len]).unwrap();
                        m.write(&path, off as usize, len, byte);
                    }
                }
            }
            3 => {
                if let Some(Node::File(id)) = m.tree.get(&path).cloned() {
                    let size = rng.below(3 * 4096 + 50);
                    OpenOptions::new()
                        .write(true)
                        .open(&p)
                        .unwrap()
                        .set_len(size)
                        .unwrap();
                    m.files[id].resize(size as usize, 0);
                }
            }
            4 => {
                let r = outcome(fs::remove_file(&p));
                assert_eq!(r, m.unlink_outcome(&path), "{}", what("unlink"));
                if r.is_ok() {
                    m.remove(&path);
                }
            }
            5 => {
                let r = outcome(fs::remove_dir(&p));
                assert_eq!(r, m.rmdir_outcome(&path), "{}", what("rmdir"));
                if r.is_ok() {
                    m.remove(&path);
                }
            }
            6 | 7 => {
                let ddir = dirs[rng.below(dirs.len() as u64) as usize].clone();
                let dname = names[rng.below(names.len() as u64) as usize].as_slice();
                let dpath = join(&ddir, dname);
                let r = outcome(fs::rename(&p, host(mnt, &dpath)));
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
                let len = if rng.below(2) == 0 {
                    rng.below(60) + 1
                } else {
                    rng.below(1024 - 337) + 337
                } as usize;
                let target = link_target(len, rng.below(26) as usize);
                let r = outcome(std::os::unix::fs::symlink(OsStr::from_bytes(&target), &p));
                assert_eq!(r, m.create_outcome(&path), "{}", what("symlink"));
                if r.is_ok() {
                    m.insert(path.clone(), Node::Symlink(target));
                }
            }
            _ => {
                let files = m.files_by_name();
                if files.is_empty() {
                    return vec![];
                }
                let (src, id) = files[rng.below(files.len() as u64) as usize].clone();
                let r = outcome(fs::hard_link(host(mnt, &src), &p));
                assert_eq!(r, m.create_outcome(&path), "{}", what("link"));
                if r.is_ok() {
                    m.insert(path.clone(), Node::File(id));
                }
            }
        }
        vec![path, dir]
    }

    /// Unmount, check the image with fsck, mount again.
    fn cycle(mnt: Mounted) -> Mounted {
        let img = mnt.unmount();
        let fs = img.mount();
        assert_clean(&fs, "after unmounting the FUSE mount");
        fs.unmount().unwrap();
        drop(fs);
        Mounted::mount(img, &FuseOptions::default())
    }

    fn run(seed: u64, steps: usize, many_names: bool) {
        let names = names(many_names);
        let mut mnt = Mounted::fresh(image::mem(64 << 20));
        let mut m = Model::new();
        let mut rng = SplitMix64::new(seed);
        for i in 0..steps {
            for p in step(&mnt, &mut m, &mut rng, &names) {
                compare_path(&mnt, &m, &p);
            }
            if i % 150 == 149 {
                compare_all(&mnt, &m);
            }
            if i % 400 == 399 {
                mnt = cycle(mnt);
                compare_all(&mnt, &m);
            }
        }
        mnt = cycle(mnt);
        compare_all(&mnt, &m);
        let count = |f: fn(&Node) -> bool| m.tree.values().filter(|n| f(n)).count();
        assert!(
            count(|n| matches!(n, Node::File(_))) > 3
                && count(|n| *n == Node::Dir) > 3
                && count(|n| matches!(n, Node::Symlink(_))) > 0,
            "the run built a real tree"
        );
        drop(mnt);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn random_operations_through_the_mount_agree_with_the_model_seed_1() {
        run(11, 1200, false);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn random_operations_through_the_mount_agree_with_the_model_seed_2() {
        run(12, 1200, false);
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn random_operations_through_the_mount_agree_with_the_model_in_large_directories() {
        run(13, 2500, true);
    }
}
