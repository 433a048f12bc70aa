//! One directory with a million entries: creates must keep finding room through the free
//! index (not by scanning data blocks), lookups must stay O(log n) through the hash tree.
//! Release-only (`cargo test --release --test dir_scale -- --nocapture` prints ns/op); the
//! directory layer is driven directly, with made-up inode numbers, so the figures are the
//! directory's own cost per operation (one transaction each), not inode allocation's.

mod common;

use std::sync::atomic::Ordering;
use std::time::Instant;

use fslab::backend::FileKind;
use fslab::fs::Fs;
use fslab::fs::btree::Root;
use fslab::fs::dir::{self, Form};
use fslab::rng::SplitMix64;

use common::dirs::{dir_findings, in_dir_trans};
use common::image;

fn name(i: u64) -> Vec<u8> {
    format!("f{i:07}").into_bytes()
}

#[test]
#[cfg_attr(debug_assertions, ignore = "a million entries: run with --release")]
fn a_million_entries_keep_creates_and_lookups_fast() {
    const N: u64 = 1_000_000;
    const LOOKUPS: u64 = 1_000_000;
    let (_img, fs) = image::mem(1 << 30).mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"huge", 0o755).unwrap();

    let t = Instant::now();
    for i in 0..N {
        in_dir_trans(&fs, &d, |tp, dp| {
            dir::add(tp, dp, &name(i), 1_000_000 + i, FileKind::File)
        })
        .unwrap();
    }
    let create_ns = t.elapsed().as_nanos() as f64 / N as f64;

    let mut rng = SplitMix64::new(0x2545_f491_4f6c_dd1d);
    let t = Instant::now();
    let mut found = 0u64;
    for _ in 0..LOOKUPS {
        let i = rng.below(N + N / 10); // one in eleven is absent
        let got = in_dir_trans(&fs, &d, |tp, dp| dir::lookup(tp, dp, &name(i))).unwrap();
        assert_eq!(got, (i < N).then_some(1_000_000 + i), "name {i}");
        found += u64::from(got.is_some());
    }
    let lookup_ns = t.elapsed().as_nanos() as f64 / LOOKUPS as f64;
    println!(
        "dir_scale: {N} entries: create {create_ns:.0} ns/op, lookup {lookup_ns:.0} ns/op ({found} hits)"
    );

    let (form, root_level, blocks) = in_dir_trans(&fs, &d, |tp, dp| {
        let f = dir::form(tp, dp).unwrap();
        let r: Root = dir::node::tree_root(tp, dp).unwrap();
        (f, r.level, tp.ic(dp).di.nblocks)
    });
    assert_eq!(form, Form::Node);
    assert!(root_level >= 2, "a million hashes need a three-level tree");
    println!("dir_scale: hash tree root level {root_level}, {blocks} directory blocks");
    let findings = dir_findings(&fs, &d).unwrap();
    assert!(
        findings.is_empty(),
        "{:#?}",
        &findings[..findings.len().min(10)]
    );
    assert_eq!(in_dir_trans(&fs, &d, dir::readdir).unwrap().len() as u64, N);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "150,000 entries: run with --release")]
fn a_three_level_tree_shrinks_back_to_shortform_in_random_order() {
    const N: u64 = 150_000;
    let (_img, fs) = image::mem(512 << 20).mount();
    let root = fs.root().unwrap();
    let free_before = fs.fdblocks.load(Ordering::Relaxed);
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    for i in 0..N {
        in_dir_trans(&fs, &d, |tp, dp| {
            dir::add(tp, dp, &name(i), 1_000_000 + i, FileKind::File)
        })
        .unwrap();
    }
    let level = |fs: &Fs| {
        in_dir_trans(fs, &d, |tp, dp| match dir::form(tp, dp).unwrap() {
            Form::Node => Some(dir::node::tree_root(tp, dp).unwrap().level),
            _ => None,
        })
    };
    assert_eq!(level(&fs), Some(2));
    let mut order: Vec<u64> = (0..N).collect();
    SplitMix64::new(0x9e37_79b9_7f4a_7c15).shuffle(&mut order);
    let mut last = level(&fs);
    let mut levels_seen = vec![last];
    for (k, &i) in order.iter().enumerate() {
        let ino = in_dir_trans(&fs, &d, |tp, dp| dir::remove(tp, dp, &name(i))).unwrap();
        assert_eq!(ino, 1_000_000 + i);
        if k % 512 == 0 || k + 1 == order.len() {
            let now = level(&fs);
            if now != last {
                let findings = dir_findings(&fs, &d).unwrap();
                assert!(findings.is_empty(), "at {k} ({now:?}): {findings:#?}");
                levels_seen.push(now);
                last = now;
            }
        }
    }
    assert_eq!(levels_seen, [Some(2), Some(1), Some(0), None]);
    assert_eq!(
        in_dir_trans(&fs, &d, |tp, dp| dir::form(tp, dp)).unwrap(),
        Form::Short
    );
    drop(d);
    fs.rmdir(&root, b"d").unwrap();
    fs.sync().unwrap();
    assert_eq!(
        fs.fdblocks.load(Ordering::Relaxed),
        free_before,
        "every directory and extent-tree block came back"
    );
}
