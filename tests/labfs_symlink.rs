//! labfs symbolic links (inline and remote targets), owners of new inodes, and
//! rename(RENAME_NOREPLACE).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fslab::fs::Fs;
use fslab::fs::check::{Location, check};
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::error::FsError;
use fslab::fs::format::dinode::LITERAL_SIZE;
use fslab::fs::format::{BLOCK_SIZE, BlockKind};
use fslab::fs::inode::{DataFork, InodeRead};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fs::symlink::SYMLINK_MAXLEN;
use fslab::fs::vfs::{FileKind, Owner, RenameMode};

fn fresh() -> (Arc<dyn BlockDev>, Arc<Fs>) {
    let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(64 << 20).unwrap());
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).unwrap();
    let fs = Fs::mount(Arc::clone(&dev), opts.mount).unwrap();
    (dev, fs)
}

fn remount(dev: &Arc<dyn BlockDev>, fs: Arc<Fs>) -> Arc<Fs> {
    fs.unmount().unwrap();
    drop(fs);
    Fs::mount(Arc::clone(dev), Options::default().mount).unwrap()
}

fn assert_clean(fs: &Fs) {
    let r = check(fs).unwrap();
    assert!(r.is_clean(), "fsck findings: {:#?}", r.findings);
}

fn target(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

const ROOT: Owner = Owner { uid: 0, gid: 0 };

#[test]
fn short_and_long_targets_read_back_before_and_after_remount() {
    let (dev, fs) = fresh();
    let root = fs.root().unwrap();
    let lens = [1, 17, LITERAL_SIZE, LITERAL_SIZE + 1, 700, SYMLINK_MAXLEN];
    for (i, &len) in lens.iter().enumerate() {
        let name = format!("l{i}");
        let ip = fs
            .symlink(&root, name.as_bytes(), &target(len), ROOT)
            .unwrap();
        let r = InodeRead::lock(Arc::clone(&ip));
        assert!(r.is_symlink());
        assert_eq!(r.di.size, len as u64);
        assert_eq!(r.di.mode & 0o7777, 0o777);
        let inline = matches!(r.fork, DataFork::Local(_));
        assert_eq!(inline, len <= LITERAL_SIZE, "{len}-byte target inline?");
        assert_eq!(
            r.di.nblocks,
            u64::from(!inline),
            "remote targets take one block"
        );
    }
    let entries = fs.readdir(&root).unwrap();
    assert!(entries.iter().all(|e| e.kind == FileKind::Symlink));
    let fs = remount(&dev, fs);
    for (i, &len) in lens.iter().enumerate() {
        let ip = fs.lookup_path(format!("/l{i}").as_bytes()).unwrap();
        assert_eq!(fs.readlink(&ip).unwrap(), target(len));
    }
    assert_clean(&fs);
}

#[test]
fn bad_targets_are_refused_with_the_kernels_errors() {
    let (_dev, fs) = fresh();
    let root = fs.root().unwrap();
    let e = |t: &[u8]| fs.symlink(&root, b"x", t, ROOT).err();
    assert_eq!(e(b""), Some(FsError::NotFound));
    assert_eq!(e(&target(SYMLINK_MAXLEN + 1)), Some(FsError::NameTooLong));
    assert!(matches!(e(b"a\0b"), Some(FsError::Invalid(_))));
    fs.symlink(&root, b"x", b"t", ROOT).unwrap();
    assert_eq!(e(b"t2"), Some(FsError::Exists));
    assert_clean(&fs);
}

#[test]
fn symlinks_are_not_files() {
    let (_dev, fs) = fresh();
    let root = fs.root().unwrap();
    let l = fs.symlink(&root, b"l", &target(500), ROOT).unwrap();
    let (f, _) = fs.create(&root, b"f", 0o644, true).unwrap();
    assert!(matches!(fs.readlink(&f), Err(FsError::Invalid(_))));
    assert!(matches!(fs.write(&l, 0, b"x"), Err(FsError::Invalid(_))));
    assert!(matches!(fs.truncate(&l, 0), Err(FsError::Invalid(_))));
    assert_eq!(fs.readlink(&l).unwrap(), target(500));
    // A hard link to a symlink is allowed (as on Linux) and counted.
    fs.link(&l, &root, b"l2").unwrap();
    assert_eq!(InodeRead::lock(Arc::clone(&l)).di.nlink, 2);
    assert_clean(&fs);
}

#[test]
fn removing_a_remote_link_frees_its_block_and_never_writes_it_again() {
    let (dev, fs) = fresh();
    let root = fs.root().unwrap();
    let free = || fs.fdblocks.load(Ordering::Relaxed);
    fs.sync().unwrap();
    let before = free();
    // Created and removed without a sync in between: its block's buffer is still dirty
    // when the block is freed.
    let l = fs.symlink(&root, b"l", &target(900), ROOT).unwrap();
    let old_block = InodeRead::lock(Arc::clone(&l)).fork.extents()[0].startblock;
    drop(l);
    fs.unlink(&root, b"l").unwrap();
    // Freed by the inodegc worker, in the background: finish it.
    fs.inodegc_flush().unwrap();
    assert_eq!(free(), before, "the link's block is free again");
    // A file takes the freed block for its data (written straight to the device).
    let (f, _) = fs.create(&root, b"f", 0o644, true).unwrap();
    let data = vec![0x5a; BLOCK_SIZE];
    fs.write(&f, 0, &data).unwrap();
    fs.fsync(&f, false).unwrap();
    let new_block = InodeRead::lock(Arc::clone(&f)).fork.extents()[0].startblock;
    assert_eq!(new_block, old_block, "the allocator reuses the freed block");
    drop(f);
    fs.sync().unwrap();
    let fs = remount(&dev, fs);
    let f = fs.lookup_path(b"/f").unwrap();
    let mut back = vec![0u8; BLOCK_SIZE];
    fs.read(&f, 0, &mut back).unwrap();
    assert_eq!(
        back, data,
        "no stale symlink block was written over the data"
    );
    assert_clean(&fs);
}

#[test]
fn a_corrupt_remote_block_is_a_typed_crc_error_and_fsck_names_it() {
    let (dev, fs) = fresh();
    let root = fs.root().unwrap();
    let l = fs.symlink(&root, b"l", &target(800), ROOT).unwrap();
    let fsb = InodeRead::lock(Arc::clone(&l)).fork.extents()[0].startblock;
    fs.unmount().unwrap();
    drop((l, root, fs));
    let mut b = vec![0u8; BLOCK_SIZE];
    dev.read_at(&mut b, fsb * BLOCK_SIZE as u64).unwrap();
    b[100] ^= 1;
    dev.write_at(&b, fsb * BLOCK_SIZE as u64, false).unwrap();
    let fs = Fs::mount(Arc::clone(&dev), Options::default().mount).unwrap();
    let l = fs.lookup_path(b"/l").unwrap();
    match fs.readlink(&l) {
        Err(FsError::Crc { kind, .. }) => assert_eq!(kind, BlockKind::Symlink),
        other => panic!("expected a symlink CRC error, got {other:?}"),
    }
    let r = check(&fs).unwrap();
    assert!(
        r.findings
            .iter()
            .any(|f| f.location == Location::Inode { ino: l.ino }
                && f.problem.contains("unreadable symlink")
                && f.problem.contains("symlink CRC")),
        "{:#?}",
        r.findings
    );
}

#[test]
fn new_inodes_belong_to_their_creator_and_inherit_a_setgid_directorys_group() {
    let (dev, fs) = fresh();
    let root = fs.root().unwrap();
    let me = Owner {
        uid: 1000,
        gid: 100,
    };
    let (f, _) = fs.create_as(&root, b"f", 0o644, true, me).unwrap();
    let d = fs
        .mkdir_as(&root, b"d", 0o2775, Owner { uid: 7, gid: 50 })
        .unwrap();
    let owner = |ip| {
        let r = InodeRead::lock(ip);
        (r.di.uid, r.di.gid, r.di.mode & 0o7777)
    };
    assert_eq!(owner(Arc::clone(&f)), (1000, 100, 0o644));
    // Inside the set-group-ID directory: the directory's group, and subdirectories keep
    // the bit.
    let (g, _) = fs.create_as(&d, b"g", 0o600, true, me).unwrap();
    let sub = fs.mkdir_as(&d, b"sub", 0o755, me).unwrap();
    let l = fs.symlink(&d, b"l", b"g", me).unwrap();
    assert_eq!(owner(Arc::clone(&g)), (1000, 50, 0o600));
    assert_eq!(owner(Arc::clone(&sub)), (1000, 50, 0o2755));
    assert_eq!(owner(Arc::clone(&l)), (1000, 50, 0o777));
    let fs = remount(&dev, fs);
    let sub = fs.lookup_path(b"/d/sub").unwrap();
    assert_eq!(owner(sub), (1000, 50, 0o2755));
    assert_clean(&fs);
}

#[test]
fn rename_noreplace_refuses_an_existing_name_and_otherwise_renames() {
    let (_dev, fs) = fresh();
    let root = fs.root().unwrap();
    fs.create(&root, b"a", 0o644, true).unwrap();
    fs.create(&root, b"b", 0o644, true).unwrap();
    let r = fs.rename_with(&root, b"a", &root, b"b", RenameMode::NoReplace);
    assert_eq!(r, Err(FsError::Exists));
    // Even onto itself: the name exists.
    let r = fs.rename_with(&root, b"a", &root, b"a", RenameMode::NoReplace);
    assert_eq!(r, Err(FsError::Exists));
    fs.rename_with(&root, b"a", &root, b"c", RenameMode::NoReplace)
        .unwrap();
    let mut names: Vec<Vec<u8>> = fs
        .readdir(&root)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, vec![b"b".to_vec(), b"c".to_vec()]);
    assert_clean(&fs);
}

#[test]
fn a_symlink_made_after_a_failed_lookup_is_found_by_name() {
    // The kernel looks a name up before symlink(2); that miss must not hide the new link
    // (it would let rename(RENAME_NOREPLACE) replace it, and lookups say ENOENT).
    let (_dev, fs) = fresh();
    let root = fs.lookup_path(b"/").unwrap();
    assert!(matches!(fs.lookup(&root, b"l"), Err(FsError::NotFound)));
    let l = fs
        .symlink(&root, b"l", &target(10), Owner::default())
        .unwrap();
    assert_eq!(fs.lookup(&root, b"l").unwrap().ino, l.ino);
    fs.mkdir(&root, b"d", 0o755).unwrap();
    assert!(matches!(
        fs.rename_with(&root, b"d", &root, b"l", RenameMode::NoReplace),
        Err(FsError::Exists)
    ));
    assert!(matches!(
        fs.symlink(&root, b"l", &target(3), Owner::default()),
        Err(FsError::Exists)
    ));
    assert_clean(&fs);
}
