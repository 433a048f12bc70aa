//! Directories through the namespace: real files created, renamed and unlinked by the
//! thousand in one directory, through every directory form and back, with the whole-
//! filesystem checker (space accounting, link counts) after every phase and across remounts.

mod common;

use std::sync::atomic::Ordering;

use fslab::fs::dir::Form;
use fslab::fs::error::FsError;

use common::dirs::form_of;
use common::image::{self, assert_clean};

fn name(i: u32) -> Vec<u8> {
    format!("file-with-a-longish-name-{i:06}").into_bytes()
}

#[test]
fn thousands_of_files_take_a_directory_through_every_form_and_back() {
    let (img, fs) = image::mem(256 << 20).mount();
    let free_before = fs.fdblocks.load(Ordering::Relaxed);
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"big", 0o755).unwrap();
    let mut seen = vec![form_of(&fs, &d)];
    let n = 3000u32;
    for i in 0..n {
        fs.create(&d, &name(i), 0o644, true).unwrap();
        let f = form_of(&fs, &d);
        if seen.last() != Some(&f) {
            assert_clean(&fs, &format!("after growing into {f:?} at {i}"));
            seen.push(f);
        }
    }
    assert_eq!(seen, [Form::Short, Form::Block, Form::Leaf, Form::Node]);
    assert_eq!(fs.readdir(&d).unwrap().len(), n as usize);

    // Survives unmount and remount.
    drop((d, root));
    let fs = img.remount(fs);
    assert_clean(&fs, "after remount");
    let d = fs.lookup_path(b"/big").unwrap();
    for i in (0..n).step_by(97) {
        let ip = fs.lookup(&d, &name(i)).unwrap();
        assert_eq!(
            fs.lookup_path(format!("/big/{}", String::from_utf8_lossy(&name(i))).as_bytes())
                .unwrap()
                .ino,
            ip.ino
        );
    }
    assert_eq!(fs.lookup(&d, b"absent").unwrap_err(), FsError::NotFound);

    // Shrink through every form back to shortform.
    let mut shrinking = vec![form_of(&fs, &d)];
    for i in (0..n).rev() {
        fs.unlink(&d, &name(i)).unwrap();
        let f = form_of(&fs, &d);
        if shrinking.last() != Some(&f) {
            assert_clean(&fs, &format!("after shrinking into {f:?} at {i}"));
            shrinking.push(f);
        }
    }
    assert_eq!(
        shrinking,
        [Form::Node, Form::Leaf, Form::Block, Form::Short]
    );
    fs.sync().unwrap();
    let root = fs.root().unwrap();
    fs.rmdir(&root, b"big").unwrap();
    fs.sync().unwrap();
    assert_clean(&fs, "after removing everything");
    assert_eq!(
        fs.fdblocks.load(Ordering::Relaxed),
        free_before,
        "every directory block came back"
    );
}

#[test]
fn renames_within_and_between_large_directories_keep_everything_consistent() {
    let (_img, fs) = image::mem(256 << 20).mount();
    let root = fs.root().unwrap();
    let a = fs.mkdir(&root, b"a", 0o755).unwrap();
    let b = fs.mkdir(&root, b"b", 0o755).unwrap();
    let n = 1500u32;
    for i in 0..n {
        fs.create(&a, &name(i), 0o644, true).unwrap();
    }
    let sub = fs.mkdir(&a, b"subdir", 0o755).unwrap();
    // Within one directory: every rename is an add and a remove in one transaction.
    for i in (0..n).step_by(3) {
        let to = format!("renamed-{i}").into_bytes();
        fs.rename(&a, &name(i), &a, &to).unwrap();
    }
    assert_clean(&fs, "after renames within a");
    // Between directories, including a subdirectory whose '..' must follow.
    for i in (1..n).step_by(3) {
        fs.rename(&a, &name(i), &b, &name(i)).unwrap();
    }
    fs.rename(&a, b"subdir", &b, b"subdir").unwrap();
    assert_eq!(fs.lookup(&sub, b"..").unwrap().ino, b.ino);
    assert_clean(&fs, "after renames between a and b");
    // Over an existing name: replace.
    fs.rename(&b, &name(1), &a, &name(2)).unwrap();
    assert_eq!(fs.lookup(&b, &name(1)).unwrap_err(), FsError::NotFound);
    assert_clean(&fs, "after a rename over an existing file");
    assert_eq!(form_of(&fs, &a), Form::Node);
    assert_eq!(form_of(&fs, &b), Form::Node);
}
