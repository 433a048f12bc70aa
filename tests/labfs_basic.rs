//! labfs end to end: mkfs, mount, namespace and data operations, unmount, remount, fsck.

mod common;

use fslab::fs::error::FsError;

use common::image::{self, assert_clean};

#[test]
fn a_fresh_filesystem_is_clean_and_has_an_empty_root() {
    let (_img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    assert!(fs.readdir(&root).unwrap().is_empty());
    assert_clean(&fs, "fresh");
}

#[test]
fn files_and_data_survive_unmount_and_remount() {
    let (img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    let (f, created) = fs.create(&d, b"f", 0o644, true).unwrap();
    assert!(created);
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(fs.write(&f, 0, &data).unwrap(), data.len());
    assert_eq!(fs.write(&f, 20_000, b"tail").unwrap(), 4);
    drop((f, d, root));
    let fs = img.remount(fs);
    let f = fs.lookup_path(b"/d/f").unwrap();
    let mut back = vec![0u8; 20_004];
    assert_eq!(fs.read(&f, 0, &mut back).unwrap(), 20_004);
    assert_eq!(&back[..10_000], &data[..]);
    assert!(
        back[10_000..20_000].iter().all(|&b| b == 0),
        "the hole reads as zeroes"
    );
    assert_eq!(&back[20_000..], b"tail");
    assert_clean(&fs, "after remount");
}

#[test]
fn unlink_frees_inodes_and_blocks() {
    let (_img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    let free_before = fs.fdblocks.load(std::sync::atomic::Ordering::Relaxed);
    let (f, _) = fs.create(&root, b"big", 0o644, true).unwrap();
    fs.write(&f, 0, &vec![7u8; 1 << 20]).unwrap();
    fs.fsync(&f, false).unwrap();
    drop(f);
    fs.unlink(&root, b"big").unwrap();
    assert_eq!(fs.lookup(&root, b"big").unwrap_err(), FsError::NotFound);
    fs.sync().unwrap();
    assert_clean(&fs, "after unlink and sync");
    let free_after = fs.fdblocks.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        free_after, free_before,
        "every block came back (chunk freed too)"
    );
}

#[test]
fn setattr_changes_mode_owner_and_times_and_persists() {
    let (img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    let (f, _) = fs.create(&root, b"f", 0o600, true).unwrap();
    let attr = fslab::fs::namei::SetAttr {
        mode: Some(0o751),
        uid: Some(7),
        gid: Some(8),
        atime: Some(11),
        mtime: Some(22),
    };
    fs.setattr(&f, &attr).unwrap();
    assert_eq!(
        fs.stats
            .mount()
            .snapshot()
            .get(fslab::fs::stats::Stat::IgAttrchg),
        1
    );
    drop((f, root));
    let fs = img.remount(fs);
    let f = fs.lookup_path(b"/f").unwrap();
    let c = fslab::fs::inode::InodeRead::lock(f);
    assert_eq!(u32::from(c.di.mode), 0o100751);
    assert_eq!((c.di.uid, c.di.gid, c.di.atime, c.di.mtime), (7, 8, 11, 22));
}
