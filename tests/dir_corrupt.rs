//! Corrupt directory blocks: flip a byte of a block-form block, a data block, a leaf1 block,
//! a hash-tree node and leaf, and a free-index block on the device (after unmount), remount,
//! and check that the operations touching the block fail with a typed CRC error naming its
//! kind, that nothing panics, and that the rest of the directory stays usable.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dir::{FREE_FIRST, Form, LEAF_FIRST};
use fslab::fs::error::FsError;
use fslab::fs::format::{BLOCK_SIZE, BlockKind};
use fslab::fs::inode::Inode;

use common::dirs::{dir_block_address, dir_findings, form_of, make_dir_of_files};
use common::image::{self, Image};

fn name(i: u32) -> Vec<u8> {
    format!("some-file-name-{i:05}").into_bytes()
}

/// A filesystem whose directory `/d` holds `n` files, unmounted.
fn build(n: u32) -> Image {
    let img = image::mem(128 << 20).build();
    make_dir_of_files(&img, b"d", (0..n).map(name));
    img
}

fn mount(img: &Image) -> (Arc<Fs>, Arc<Inode>) {
    let fs = img.mount();
    let d = fs.lookup_path(b"/d").unwrap();
    (fs, d)
}

/// Corrupt directory block `lblk` of `/d` on the unmounted image (one bit of byte `off`),
/// then mount again.
fn corrupt(img: &Image, lblk: u64, off: usize) -> (Arc<Fs>, Arc<Inode>) {
    let (fs, d) = mount(img);
    let fsb = dir_block_address(&d, lblk);
    fs.unmount().unwrap();
    drop((fs, d));
    img.flip(fsb * BLOCK_SIZE as u64 + off as u64, 0x20);
    mount(img)
}

fn is_crc(e: &FsError, kind: BlockKind) -> bool {
    matches!(e, FsError::Crc { kind: k, .. } if *k == kind)
}

/// Look every name up: how many failed with a CRC error on `kind`, how many succeeded.
/// Any other outcome fails the test.
fn lookups(fs: &Fs, d: &Arc<Inode>, n: u32, kind: BlockKind) -> (u32, u32) {
    let (mut bad, mut good) = (0, 0);
    for i in 0..n {
        match fs.lookup(d, &name(i)) {
            Ok(_) => good += 1,
            Err(e) if is_crc(&e, kind) => bad += 1,
            Err(e) => panic!("lookup {i}: unexpected {e}"),
        }
    }
    (bad, good)
}

fn assert_fsck_names(fs: &Fs, d: &Arc<Inode>, kind: BlockKind) {
    let findings = dir_findings(fs, d).unwrap();
    assert!(
        findings.iter().any(|f| f.contains(kind.name())),
        "the directory check does not name {kind}: {findings:#?}"
    );
    // '..' is read straight from data block 0, so damage elsewhere does not hide it.
    if kind != BlockKind::DirBlock {
        assert_eq!(fs.lookup(d, b"..").unwrap().ino, fs.rootino);
    }
}

#[test]
fn a_corrupt_block_form_block_is_a_typed_crc_error() {
    let img = build(40);
    let (fs, d) = mount(&img);
    assert_eq!(form_of(&fs, &d), Form::Block);
    drop((fs, d));
    let (fs, d) = corrupt(&img, 0, 300);
    assert_eq!(lookups(&fs, &d, 40, BlockKind::DirBlock), (40, 0));
    let e = fs.create(&d, b"new", 0o644, true).unwrap_err();
    assert!(is_crc(&e, BlockKind::DirBlock), "{e}");
    assert!(
        fs.check_live().is_ok(),
        "a read error does not shut the filesystem down"
    );
    assert_fsck_names(&fs, &d, BlockKind::DirBlock);
    // Other directories are unaffected.
    let root = fs.root().unwrap();
    fs.create(&root, b"elsewhere", 0o644, true).unwrap();
}

#[test]
fn a_corrupt_data_block_fails_only_the_names_it_holds() {
    let img = build(300);
    let (fs, d) = mount(&img);
    assert_eq!(form_of(&fs, &d), Form::Leaf);
    drop((fs, d));
    let (fs, d) = corrupt(&img, 1, 1000);
    let (bad, good) = lookups(&fs, &d, 300, BlockKind::DirData);
    assert!(bad > 0 && good > 0, "bad {bad} good {good}");
    assert_fsck_names(&fs, &d, BlockKind::DirData);
    assert!(fs.readdir(&d).is_err());
    assert!(fs.check_live().is_ok());
}

#[test]
fn a_corrupt_leaf1_block_fails_every_lookup() {
    let img = build(300);
    let (fs, d) = mount(&img);
    assert_eq!(form_of(&fs, &d), Form::Leaf);
    drop((fs, d));
    let (fs, d) = corrupt(&img, LEAF_FIRST, 200);
    assert_eq!(lookups(&fs, &d, 300, BlockKind::DirLeaf1), (300, 0));
    assert_fsck_names(&fs, &d, BlockKind::DirLeaf1);
    // readdir reads only data blocks.
    assert_eq!(fs.readdir(&d).unwrap().len(), 300);
}

fn node_dir(n: u32) -> Image {
    let img = build(n);
    let (fs, d) = mount(&img);
    assert_eq!(form_of(&fs, &d), Form::Node);
    img
}

#[test]
fn a_corrupt_hash_tree_root_fails_every_lookup() {
    let n = 1500;
    let img = node_dir(n);
    // The root is a da3_node: the tree has more than one leaf.
    let (fs, d) = corrupt(&img, LEAF_FIRST, 100);
    assert_eq!(lookups(&fs, &d, n, BlockKind::DaNode), (n, 0));
    assert_fsck_names(&fs, &d, BlockKind::DaNode);
    assert_eq!(fs.readdir(&d).unwrap().len(), n as usize);
}

#[test]
fn a_corrupt_hash_tree_leaf_fails_only_the_hashes_it_holds() {
    let n = 1500;
    let img = node_dir(n);
    let (fs, d) = corrupt(&img, LEAF_FIRST + 1, 600);
    let (bad, good) = lookups(&fs, &d, n, BlockKind::DirLeafN);
    assert!(bad > 0 && good > 0, "bad {bad} good {good}");
    assert_fsck_names(&fs, &d, BlockKind::DirLeafN);
    assert!(fs.check_live().is_ok());
}

#[test]
fn a_corrupt_free_index_fails_creates_and_removes_not_lookups() {
    let n = 1500;
    let img = node_dir(n);
    let (fs, d) = corrupt(&img, FREE_FIRST, 70);
    assert_eq!(lookups(&fs, &d, n, BlockKind::DirFree), (0, n));
    let e = fs.unlink(&d, &name(7)).unwrap_err();
    assert!(is_crc(&e, BlockKind::DirFree), "{e}");
    assert!(
        fs.check_live().is_ok(),
        "the unlink failed before changing anything"
    );
    assert!(
        fs.lookup(&d, &name(7)).is_ok(),
        "the failed unlink removed nothing"
    );
    assert_fsck_names(&fs, &d, BlockKind::DirFree);
    // A create allocates its inode before it reaches the directory, so its failure cancels
    // a dirty transaction (and the filesystem shuts down, as XFS does); the error is typed.
    let e = fs.create(&d, b"one-more", 0o644, true).unwrap_err();
    assert!(is_crc(&e, BlockKind::DirFree), "{e}");
}
