//! Directory tests on a real labfs (mkfs + mount on a memory device): every form, every
//! transition both ways, hash collisions, a model-based random test, stat counts.
//!
//! Entries here name made-up inode numbers: the directory layer stores numbers, it does not
//! follow them, so tests can grow directories without allocating inodes. The namespace
//! (real inodes, link counts, fsck) is exercised by `tests/dir_*.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::hash::collide;
use super::*;
use crate::fs::Fs;
use crate::fs::inode::Inode;
use crate::fs::testing::mem_fs;
use crate::fs::trans::Resv;
use crate::rng::SplitMix64;

/// A directory under test, driven one transaction per call.
struct TestDir {
    fs: Arc<Fs>,
    ip: Arc<Inode>,
}

impl TestDir {
    fn new(size: u64) -> TestDir {
        let fs = mem_fs(size);
        let root = fs.root().unwrap();
        let ip = fs.mkdir(&root, b"d", 0o755).unwrap();
        TestDir { fs, ip }
    }

    fn run<R>(&self, f: impl FnOnce(&mut Trans, InodeId) -> FsResult<R>) -> FsResult<R> {
        let mut tp = Trans::new(&self.fs, Resv::Create);
        let dp = tp.lock_inode(Arc::clone(&self.ip));
        let r = f(&mut tp, dp);
        if r.is_ok() || !tp.is_dirty() {
            tp.commit().unwrap();
        }
        r
    }

    fn add(&self, name: &[u8], ino: u64) {
        self.run(|tp, dp| add(tp, dp, name, ino, FileKind::File))
            .unwrap_or_else(|e| panic!("add {:?}: {e}", String::from_utf8_lossy(name)));
    }

    fn remove(&self, name: &[u8]) -> u64 {
        self.run(|tp, dp| remove(tp, dp, name))
            .unwrap_or_else(|e| panic!("remove {:?}: {e}", String::from_utf8_lossy(name)))
    }

    fn lookup(&self, name: &[u8]) -> Option<u64> {
        self.run(|tp, dp| lookup(tp, dp, name)).unwrap()
    }

    fn form(&self) -> Form {
        self.run(|tp, dp| form(tp, dp)).unwrap()
    }

    fn readdir(&self) -> Vec<DirEntry> {
        self.run(readdir).unwrap()
    }

    fn is_empty(&self) -> bool {
        self.run(is_empty).unwrap()
    }

    fn assert_clean(&self) {
        let f = self.run(check).unwrap();
        assert!(f.is_empty(), "check findings ({:?}): {f:#?}", self.form());
    }

    fn blocks(&self) -> u64 {
        self.run(|tp, dp| Ok(tp.ic(dp).di.nblocks)).unwrap()
    }

    fn size(&self) -> u64 {
        self.run(|tp, dp| Ok(tp.ic(dp).di.size)).unwrap()
    }
}

fn name(i: u32) -> Vec<u8> {
    format!("entry-{i:07}").into_bytes()
}

/// Add names 0.. until the directory reaches `want`; returns how many were added.
fn grow_to(d: &TestDir, from: u32, want: Form) -> u32 {
    let mut i = from;
    while d.form() != want {
        d.add(&name(i), 1000 + u64::from(i));
        i += 1;
        assert!(i < from + 200_000, "never reached {want:?}");
    }
    i
}

#[test]
fn an_empty_directory_is_shortform_with_only_dots() {
    let d = TestDir::new(64 << 20);
    assert_eq!(d.form(), Form::Short);
    assert!(d.is_empty());
    assert_eq!(d.lookup(b".."), Some(d.fs.rootino));
    assert_eq!(d.lookup(b"."), Some(d.ip.ino));
    assert_eq!(d.lookup(b"nope"), None);
    assert!(d.readdir().is_empty());
    d.assert_clean();
}

#[test]
fn shortform_grows_into_a_block_and_shrinks_back_with_hysteresis() {
    let d = TestDir::new(64 << 20);
    let n = grow_to(&d, 0, Form::Block);
    assert!(n > 5, "several entries fit in the inode first");
    assert_eq!(d.size(), BLOCK_SIZE as u64);
    assert_eq!(d.blocks(), 1);
    for i in 0..n {
        assert_eq!(d.lookup(&name(i)), Some(1000 + u64::from(i)));
    }
    assert_eq!(d.lookup(b".."), Some(d.fs.rootino));
    d.assert_clean();
    // One removal does not convert straight back (hysteresis).
    d.remove(&name(n - 1));
    assert_eq!(d.form(), Form::Block);
    let mut left = n - 1;
    while d.form() == Form::Block {
        left -= 1;
        d.remove(&name(left));
        d.assert_clean();
    }
    assert_eq!(d.form(), Form::Short);
    assert_eq!(d.blocks(), 0, "the block was freed");
    let names: Vec<Vec<u8>> = d.readdir().into_iter().map(|e| e.name).collect();
    assert_eq!(names, (0..left).map(name).collect::<Vec<_>>());
    d.assert_clean();
}

#[test]
fn block_grows_into_leaf_form_and_shrinks_back() {
    let d = TestDir::new(64 << 20);
    let mut n = grow_to(&d, 0, Form::Leaf);
    // The hash leaf moved out of block 0, so the overflowing entry fit there.
    assert_eq!(d.size(), BLOCK_SIZE as u64);
    assert_eq!(d.blocks(), 2, "data block 0 and the leaf block");
    d.assert_clean();
    while d.size() == BLOCK_SIZE as u64 {
        d.add(&name(n), 1000 + u64::from(n));
        n += 1;
    }
    assert_eq!(d.blocks(), 3, "a second data block");
    for i in 0..n {
        assert_eq!(d.lookup(&name(i)), Some(1000 + u64::from(i)));
    }
    d.assert_clean();
    let mut left = n;
    while d.form() == Form::Leaf {
        left -= 1;
        d.remove(&name(left));
        d.assert_clean();
    }
    assert_eq!(d.form(), Form::Block);
    assert_eq!(d.blocks(), 1);
    assert!(left < n - 1, "shrinking needs slack beyond one entry");
    for i in 0..left {
        assert_eq!(d.lookup(&name(i)), Some(1000 + u64::from(i)));
    }
    d.assert_clean();
}

#[test]
fn leaf_grows_into_node_form_and_shrinks_back() {
    let d = TestDir::new(64 << 20);
    let n = grow_to(&d, 0, Form::Node);
    d.assert_clean();
    // Grow the tree past one leaf block (its root becomes a da3_node), then lose it again.
    let mut n2 = n;
    while d.run(node::tree_root).unwrap().level == 0 {
        d.add(&name(n2), 1000 + u64::from(n2));
        n2 += 1;
    }
    d.assert_clean();
    for i in 0..n2 {
        assert_eq!(d.lookup(&name(i)), Some(1000 + u64::from(i)), "entry {i}");
    }
    let mut left = n2;
    while d.form() == Form::Node {
        left -= 1;
        d.remove(&name(left));
        if left.is_multiple_of(16) {
            d.assert_clean();
        }
    }
    d.assert_clean();
    assert_eq!(d.form(), Form::Leaf);
    assert!(left < n, "shrinking back needs slack");
    for i in 0..left {
        assert_eq!(d.lookup(&name(i)), Some(1000 + u64::from(i)));
    }
    // All the way down to shortform, and empty.
    while left > 0 {
        left -= 1;
        assert_eq!(d.remove(&name(left)), 1000 + u64::from(left));
    }
    assert_eq!(d.form(), Form::Short);
    assert!(d.is_empty());
    assert_eq!(d.blocks(), 0, "every block came back");
    d.assert_clean();
}

#[test]
fn emptied_data_blocks_are_freed_and_their_slots_reused() {
    let d = TestDir::new(64 << 20);
    let n = grow_to(&d, 0, Form::Node);
    let n = n + 600;
    for i in d.readdir().len() as u32..n {
        d.add(&name(i), 1000 + u64::from(i));
    }
    let before = d.blocks();
    // Remove a run of entries that fills whole data blocks in the middle.
    for i in 100..400 {
        d.remove(&name(i));
    }
    d.assert_clean();
    assert!(d.blocks() < before, "middle data blocks were freed");
    let freed = before - d.blocks();
    for i in 100..400 {
        d.add(&name(i), 7);
    }
    d.assert_clean();
    assert!(
        d.blocks() <= before + 1,
        "holes were refilled: {} blocks, {before} before, {freed} freed",
        d.blocks()
    );
}

#[test]
fn colliding_names_spanning_several_leaves_are_told_apart() {
    let d = TestDir::new(64 << 20);
    let base = b"aaaaaaaaaaaaaaaa".to_vec();
    // Every combination of 11 independent overlapping-bit flips keeps the hash.
    let pairs: Vec<usize> = vec![0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13];
    let names: Vec<Vec<u8>> = (0..1200u32)
        .map(|mask| {
            let mut n = base.clone();
            for (bit, &i) in pairs.iter().enumerate() {
                if mask >> bit & 1 == 1 {
                    n[i] ^= 0x01;
                    n[i + 1] ^= 0x80;
                }
            }
            n
        })
        .collect();
    let h = hashname(&base);
    assert!(names.iter().all(|n| hashname(n) == h));
    for (i, n) in names.iter().enumerate() {
        d.add(n, 5000 + i as u64);
    }
    assert_eq!(d.form(), Form::Node);
    assert!(d.run(node::tree_root).unwrap().level >= 1);
    d.assert_clean();
    for (i, n) in names.iter().enumerate() {
        assert_eq!(d.lookup(n), Some(5000 + i as u64));
    }
    for n in names.iter().step_by(2) {
        d.remove(n);
    }
    d.assert_clean();
    for (i, n) in names.iter().enumerate() {
        let want = (i % 2 == 1).then_some(5000 + i as u64);
        assert_eq!(d.lookup(n), want);
    }
    let other = collide(b"zz").unwrap();
    assert_eq!(d.lookup(&other), None);
}

#[test]
fn replace_repoints_entries_and_dotdot_in_every_form() {
    let d = TestDir::new(64 << 20);
    let mut next = 0;
    for want in [Form::Short, Form::Block, Form::Leaf, Form::Node] {
        next = grow_to(&d, next, want);
        if next == 0 {
            d.add(&name(0), 1000);
            next = 1;
        }
        let target = name(next / 2);
        let old = d
            .run(|tp, dp| replace(tp, dp, &target, 77, FileKind::Dir))
            .unwrap();
        assert_eq!(old, 1000 + u64::from(next / 2));
        assert_eq!(d.lookup(&target), Some(77));
        let e = d.readdir().into_iter().find(|e| e.name == target).unwrap();
        assert_eq!((e.ino, e.kind), (77, FileKind::Dir));
        d.run(|tp, dp| replace(tp, dp, &target, old, FileKind::File))
            .unwrap();
        let parent = d
            .run(|tp, dp| replace(tp, dp, b"..", 99, FileKind::Dir))
            .unwrap();
        assert_eq!(d.lookup(b".."), Some(99));
        d.run(|tp, dp| replace(tp, dp, b"..", parent, FileKind::Dir))
            .unwrap();
        assert_eq!(
            d.run(|tp, dp| replace(tp, dp, b"absent", 1, FileKind::File)),
            Err(FsError::NotFound)
        );
        assert!(!d.is_empty());
        d.assert_clean();
    }
}

#[test]
fn stat_counts_follow_the_calls() {
    let d = TestDir::new(64 << 20);
    let get = |s: Stat| d.fs.stats.mount().snapshot().get(s);
    let (l0, c0, r0, g0) = (
        get(Stat::DirLookup),
        get(Stat::DirCreate),
        get(Stat::DirRemove),
        get(Stat::DirGetdents),
    );
    let n = 700;
    for i in 0..n {
        d.add(&name(i), 1000 + u64::from(i));
    }
    for i in 0..n {
        d.lookup(&name(i));
    }
    d.lookup(b"missing");
    for i in 0..n / 2 {
        d.remove(&name(i));
    }
    d.readdir();
    d.readdir();
    assert_eq!(get(Stat::DirCreate) - c0, n);
    assert_eq!(get(Stat::DirLookup) - l0, n + 1);
    assert_eq!(get(Stat::DirRemove) - r0, n / 2);
    assert_eq!(get(Stat::DirGetdents) - g0, 2);
}

#[test]
fn bad_names_and_missing_entries_are_refused_without_changes() {
    let d = TestDir::new(64 << 20);
    let long = vec![b'x'; 256];
    for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b", &long] {
        assert!(d.run(|tp, dp| add(tp, dp, bad, 5, FileKind::File)).is_err());
    }
    assert_eq!(
        d.run(|tp, dp| remove(tp, dp, b"absent")),
        Err(FsError::NotFound)
    );
    grow_to(&d, 0, Form::Node);
    assert_eq!(
        d.run(|tp, dp| remove(tp, dp, b"absent")),
        Err(FsError::NotFound)
    );
    assert!(d.run(|tp, dp| remove(tp, dp, b"..")).is_err());
    assert!(
        d.fs.check_live().is_ok(),
        "refusals left the filesystem running"
    );
    d.assert_clean();
}

fn random_name(rng: &mut SplitMix64) -> Vec<u8> {
    // Mostly short names, sometimes up to the 255-byte limit.
    let len = if rng.below(8) == 0 {
        1 + rng.below(255)
    } else {
        1 + rng.below(24)
    } as usize;
    (0..len)
        .map(|_| {
            let b = (rng.below(254) + 1) as u8;
            if b == b'/' { b'_' } else { b }
        })
        .collect()
}

#[test]
fn random_operations_agree_with_a_model() {
    let d = TestDir::new(128 << 20);
    let mut rng = SplitMix64::new(0x9e37_79b9_7f4a_7c15);
    let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut forms_seen = std::collections::HashSet::new();
    let mut next_ino = 10_000u64;
    // Phases: grow (mostly adds) then shrink (mostly removes), twice, so every transition
    // happens in both directions with random names in between.
    let phases = [(0.8, 1500), (0.25, 1700), (0.75, 900), (0.1, 1200)];
    let mut step = 0;
    for (add_share, ops) in phases {
        for _ in 0..ops {
            step += 1;
            let r = rng.below(1000) as f64 / 1000.0;
            let keys: Vec<&Vec<u8>> = model.keys().collect();
            if r < add_share || keys.is_empty() {
                // Add: a fresh name, or (sometimes) a collision partner of an existing one.
                let name = match keys.is_empty() || rng.below(5) != 0 {
                    true => random_name(&mut rng),
                    false => {
                        let k = keys[rng.below(keys.len() as u64) as usize];
                        collide(k).unwrap_or_else(|| random_name(&mut rng))
                    }
                };
                if model.contains_key(&name) || name == b"." || name == b".." {
                    continue;
                }
                next_ino += 1;
                d.add(&name, next_ino);
                model.insert(name, next_ino);
            } else {
                let k = keys[rng.below(keys.len() as u64) as usize].clone();
                match rng.below(4) {
                    0 => {
                        next_ino += 1;
                        let old = d
                            .run(|tp, dp| replace(tp, dp, &k, next_ino, FileKind::File))
                            .unwrap();
                        assert_eq!(Some(&old), model.get(&k));
                        model.insert(k, next_ino);
                    }
                    1 => {
                        assert_eq!(d.lookup(&k), model.get(&k).copied());
                        let absent = random_name(&mut rng);
                        assert_eq!(d.lookup(&absent), model.get(&absent).copied());
                    }
                    _ => {
                        let ino = d.remove(&k);
                        assert_eq!(Some(ino), model.remove(&k));
                    }
                }
            }
            forms_seen.insert(format!("{:?}", d.form()));
            if step % 150 == 0 {
                if step % 600 == 0 {
                    // Write everything home and drop the cache: what follows reads the disk.
                    d.fs.sync_metadata().unwrap();
                    d.fs.bufs.purge_clean();
                }
                d.assert_clean();
                let mut got: Vec<(Vec<u8>, u64)> =
                    d.readdir().into_iter().map(|e| (e.name, e.ino)).collect();
                got.sort();
                let want: Vec<(Vec<u8>, u64)> =
                    model.iter().map(|(k, v)| (k.clone(), *v)).collect();
                assert_eq!(got, want, "step {step}");
                assert_eq!(d.is_empty(), model.is_empty());
            }
        }
    }
    d.assert_clean();
    for (k, v) in &model {
        assert_eq!(d.lookup(k), Some(*v));
    }
    assert_eq!(
        forms_seen.len(),
        4,
        "every form was visited: {forms_seen:?}"
    );
}

#[test]
fn readdir_order_is_stable_for_an_unchanged_directory() {
    let d = TestDir::new(64 << 20);
    for want in [Form::Short, Form::Block, Form::Leaf, Form::Node] {
        let n = d.readdir().len() as u32;
        grow_to(&d, n, want);
        assert_eq!(d.readdir(), d.readdir());
    }
}

#[test]
fn a_rename_across_each_conversion_point_stays_consistent_on_disk() {
    // An add that converts the directory and a remove in the same transaction (what rename
    // does): the conversion's frees come after every allocation, and the result reads back
    // from disk intact.
    for (from, want) in [
        (Form::Short, Form::Block),
        (Form::Block, Form::Leaf),
        (Form::Leaf, Form::Node),
    ] {
        let scratch = TestDir::new(64 << 20);
        let c = grow_to(&scratch, 0, want);
        let d = TestDir::new(64 << 20);
        for i in 0..c - 1 {
            d.add(&name(i), 1000 + u64::from(i));
        }
        assert_eq!(d.form(), from);
        let (new, victim) = (name(c - 1), name((c - 1) / 2));
        d.run(|tp, dp| {
            add(tp, dp, &new, 7, FileKind::File)?;
            remove(tp, dp, &victim)
        })
        .unwrap();
        assert_eq!(
            d.form(),
            want,
            "the add converted, the remove did not undo it"
        );
        d.fs.sync_metadata().unwrap();
        d.fs.bufs.purge_clean();
        d.assert_clean();
        assert_eq!(d.lookup(&new), Some(7));
        assert_eq!(d.lookup(&victim), None);
        assert_eq!(d.readdir().len() as u32, c - 1);
    }
}
