//! Exact operation counts for small scripted sequences.
//!
//! Most scripts use [`TinyShort`] (4 entries per block, minimum 2) so that every count can
//! be derived by hand from the algorithm; the derivation is written next to each
//! expectation. Keys are multiples of 10.

use super::super::block::SpecGeom;
use super::super::kinds::{BnoSpec, FreeExtent};
use super::super::{BtreeOp, Cursor, LookupMode, OpCounts};
use super::support::{Harness, Model, TinyDa, TinyRec, TinyShort};

fn rec(k: u32) -> TinyRec {
    TinyRec { key: k, val: k + 1 }
}

/// Counts from a list of (op, count); everything else zero.
fn counts(pairs: &[(BtreeOp, u32)]) -> OpCounts {
    let mut c = OpCounts::default();
    for &(op, n) in pairs {
        c.add(op, n);
    }
    c
}

/// Run `f` on a fresh cursor of `h` in one transaction and return its counts.
fn measure<S: super::support::Model>(
    h: &mut Harness<S>,
    f: impl FnOnce(&mut Cursor<S>, &mut super::super::mem_store::MemStore),
) -> OpCounts {
    let mut c = h.cursor();
    f(&mut c, &mut h.st);
    let got = *c.counts();
    h.end(&c);
    got
}

fn tiny_with(keys: &[u32]) -> Harness<TinyShort> {
    tiny_in(keys)
}

/// A tiny tree of spec `S` (any layout) holding `keys`, inserted in order.
fn tiny_in<S: Model<Rec = TinyRec, Key = u32>>(keys: &[u32]) -> Harness<S> {
    let mut h = Harness::<S>::new(5);
    for &k in keys {
        h.insert(rec(k));
    }
    h
}

/// The leaves of a two-level tiny tree, left to right, as key lists.
fn leaves<S: Model<Rec = TinyRec, Key = u32>>(h: &mut Harness<S>) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = Vec::new();
    let mut c = h.cursor();
    let first = *h.model.keys().next().expect("tree not empty");
    assert!(c.lookup(&mut h.st, &first, LookupMode::Ge).unwrap());
    let mut leaf = vec![first];
    let mut prev_incs = 0;
    while c.increment(&mut h.st).unwrap() {
        let k = c.get(&h.st).unwrap().unwrap().key;
        // A counted increment is exactly a step into the next leaf.
        let incs = c.counts().get(BtreeOp::Increment);
        if incs != prev_incs {
            out.push(std::mem::take(&mut leaf));
            prev_incs = incs;
        }
        leaf.push(k);
    }
    out.push(leaf);
    h.end(&c);
    out
}

#[test]
fn lookup_in_one_leaf_counts_one_lookup_and_a_binary_search_of_compares() {
    // 255 = 2^8 - 1 records: a binary search that misses probes exactly 8 keys.
    let n = 255u32;
    let mut h = Harness::<BnoSpec>::new(0);
    {
        let mut c = h.cursor();
        for i in 0..n {
            let r = FreeExtent {
                start: 10 * (i + 1),
                len: 1,
            };
            c.insert(&mut h.st, &r).unwrap();
            h.model.insert(r.start, r);
        }
        h.end(&c);
    }
    assert_eq!(h.root.level, 0);
    let probes = (n + 1).ilog2();
    for missing in [5, 15, 1275, 2555] {
        let got = measure(&mut h, |c, st| {
            assert!(!c.lookup(st, &missing, LookupMode::Eq).unwrap());
        });
        assert_eq!(
            got,
            counts(&[(BtreeOp::Lookup, 1), (BtreeOp::Compare, probes)]),
            "miss {missing}"
        );
    }
    // A hit stops as soon as it probes the key: the middle key is found at the first probe.
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &(10 * n.div_ceil(2)), LookupMode::Eq).unwrap());
    });
    assert_eq!(got, counts(&[(BtreeOp::Lookup, 1), (BtreeOp::Compare, 1)]));
}

#[test]
fn root_split_counts_split_two_allocs_newroot_and_the_moved_half() {
    let mut h = Harness::<BnoSpec>::new(0);
    let max = BnoSpec::GEOM.leaf_max as u32;
    {
        let mut c = h.cursor();
        for i in 1..=max {
            let r = FreeExtent { start: i, len: 1 };
            c.insert(&mut h.st, &r).unwrap();
            h.model.insert(i, r);
        }
        h.end(&c);
    }
    assert_eq!(h.root.level, 0, "a full leaf is still one block");
    let next = FreeExtent {
        start: max + 1,
        len: 1,
    };
    // The lookup part of the insert costs what a lookup of the same key costs.
    let probe = measure(&mut h, |c, st| {
        assert!(!c.lookup(st, &next.start, LookupMode::Eq).unwrap());
    });
    let got = measure(&mut h, |c, st| c.insert(st, &next).unwrap());
    h.model.insert(next.start, next);
    // Full leaf of `max` (odd) entries, inserting past its end: no siblings to shift to,
    // so split. The new right block takes max/2 entries (the odd one stays left because
    // the insert point is in the right half) and the record is appended there (0 moves).
    // The split root gets a new root above it: a second allocation.
    let mut want = probe;
    want.merge(&counts(&[
        (BtreeOp::Insrec, 1),
        (BtreeOp::Split, 1),
        (BtreeOp::Alloc, 2),
        (BtreeOp::Newroot, 1),
        (BtreeOp::Moves, max / 2),
    ]));
    assert_eq!(got, want);
    assert_eq!(h.root.level, 1);
    h.insert(next); // duplicate: Exists, tree unchanged
    h.verify();
}

#[test]
fn tiny_root_split_then_exact_lookup_skips_the_leaf_search() {
    let mut h = tiny_with(&[10, 20, 30, 40]);
    let got = measure(&mut h, |c, st| c.insert(st, &rec(50)).unwrap());
    h.model.insert(50, rec(50));
    // Lookup of 50 in [10,20,30,40]: probes 20, 30, 40 (3 compares), insert point 5.
    // Full, no siblings: split 2/2, cursor follows into the right block at 3, insert
    // there moves nothing; new root above [10,20] and [30,40,50].
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 3),
            (BtreeOp::Insrec, 1),
            (BtreeOp::Split, 1),
            (BtreeOp::Alloc, 2),
            (BtreeOp::Newroot, 1),
            (BtreeOp::Moves, 2),
        ])
    );
    assert_eq!(leaves(&mut h), vec![vec![10, 20], vec![30, 40, 50]]);
    // Lookup of 30: root [10,30] probes 10 then 30, an exact hit, so the leaf's first
    // entry is the answer without searching it: 2 compares.
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &30, LookupMode::Eq).unwrap());
        assert_eq!(c.get(st).unwrap(), Some(rec(30)));
    });
    assert_eq!(got, counts(&[(BtreeOp::Lookup, 1), (BtreeOp::Compare, 2)]));
}

#[test]
fn insert_into_full_leaf_shifts_its_last_record_right() {
    // Leaves [10,15,17,20] (full) and [30,40,50].
    let mut h = tiny_with(&[10, 20, 30, 40, 50, 15, 17]);
    assert_eq!(leaves(&mut h), vec![vec![10, 15, 17, 20], vec![30, 40, 50]]);
    let got = measure(&mut h, |c, st| c.insert(st, &rec(12)).unwrap());
    h.model.insert(12, rec(12));
    // Lookup 12: root [10,30] probes 10, 30 -> child 1; leaf probes 15, 10 -> point 2.
    // Full: rshift moves 20 to the front of the right leaf (3 entries slid up), and a
    // temporary cursor steps into the right leaf to fix its parent key (1 increment).
    // Insert at 2 of 3 slides 2 entries.
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Insrec, 1),
            (BtreeOp::Rshift, 1),
            (BtreeOp::Increment, 1),
            (BtreeOp::Moves, 3 + 2),
        ])
    );
    assert_eq!(
        leaves(&mut h),
        vec![vec![10, 12, 15, 17], vec![20, 30, 40, 50]]
    );
    h.verify();
}

#[test]
fn insert_into_full_da_leaf_splits_it_and_leaves_the_siblings_alone() {
    // The same tree and insert as the rshift test, in the da layout: XFS's da btree splits
    // a full leaf (`xfs_da3_split`) where its generic btrees pass an entry to a sibling.
    let mut h = tiny_in::<TinyDa>(&[10, 20, 30, 40, 50, 15, 17]);
    assert_eq!(leaves(&mut h), vec![vec![10, 15, 17, 20], vec![30, 40, 50]]);
    let got = measure(&mut h, |c, st| c.insert(st, &rec(12)).unwrap());
    h.model.insert(12, rec(12));
    assert_eq!(got.get(BtreeOp::Rshift) + got.get(BtreeOp::Lshift), 0);
    assert_eq!(got.get(BtreeOp::Split), 1);
    // The upper half [17,20] moves to a new leaf; 12 goes into the lower half; the right
    // sibling keeps its three records.
    assert_eq!(
        leaves(&mut h),
        vec![vec![10, 12, 15], vec![17, 20], vec![30, 40, 50]]
    );
    h.verify();
}

#[test]
fn insert_into_full_last_leaf_shifts_its_first_record_left() {
    // Leaves [10,20] and [30,40,50,60] (full, no right sibling).
    let mut h = tiny_with(&[10, 20, 30, 40, 50, 60]);
    assert_eq!(leaves(&mut h), vec![vec![10, 20], vec![30, 40, 50, 60]]);
    let got = measure(&mut h, |c, st| c.insert(st, &rec(45)).unwrap());
    h.model.insert(45, rec(45));
    // Lookup 45: root [10,30] probes 10, 30 -> child 2; leaf probes 40, 50 -> point 3.
    // Full, no right sibling: lshift copies 30 to the left leaf (1 move) and slides the
    // other 3 down, counted as 3 - 1 = 2 as XFS counts it; the parent key becomes 40.
    // Insert at 2 of 3 slides 2.
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Insrec, 1),
            (BtreeOp::Lshift, 1),
            (BtreeOp::Moves, 1 + 2 + 2),
        ])
    );
    assert_eq!(leaves(&mut h), vec![vec![10, 20, 30], vec![40, 45, 50, 60]]);
    h.verify();
}

#[test]
fn split_below_the_root_inserts_the_new_block_into_the_parent() {
    // Leaves [10,20,25,30] and [40,45,50,60], both full.
    let mut h = tiny_with(&[10, 20, 30, 40, 50, 60, 45, 25]);
    assert_eq!(
        leaves(&mut h),
        vec![vec![10, 20, 25, 30], vec![40, 45, 50, 60]]
    );
    let got = measure(&mut h, |c, st| c.insert(st, &rec(55)).unwrap());
    h.model.insert(55, rec(55));
    // Lookup 55: root [10,40] probes 10, 40; leaf probes 45, 50, 60 -> point 4.
    // No right sibling, left sibling full: split 2/2 (2 moves), cursor to the new block
    // at 2, insert slides 1. The new block's entry goes into the root after the split
    // block's (point 3 of 2: 0 moves): 2 insrecs, 1 alloc.
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 5),
            (BtreeOp::Insrec, 2),
            (BtreeOp::Split, 1),
            (BtreeOp::Alloc, 1),
            (BtreeOp::Moves, 2 + 1),
        ])
    );
    assert_eq!(
        leaves(&mut h),
        vec![vec![10, 20, 25, 30], vec![40, 45], vec![50, 55, 60]]
    );
    h.verify();
}

#[test]
fn delete_refills_from_the_right_sibling_by_left_shift() {
    // Leaves [10,20] and [30,40,50].
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &20, LookupMode::Eq).unwrap());
        c.delete(st).unwrap();
        assert_eq!(c.get(st).unwrap(), Some(rec(30)), "cursor on the successor");
    });
    // Lookup 20: root probes 10, 30; leaf probes 10, 20 (hit): 4 compares.
    // Delete the last of 2 (0 moves) leaves 1 < min 2. A temporary cursor steps into the
    // right sibling (1 increment), which can spare one: lshift of 30 (1 + (2 - 1) moves).
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Delrec, 1),
            (BtreeOp::Increment, 1),
            (BtreeOp::Lshift, 1),
            (BtreeOp::Moves, 2),
        ])
    );
    assert_eq!(leaves(&mut h), vec![vec![10, 30], vec![40, 50]]);
    h.model.remove(&20);
    h.verify();
}

#[test]
fn delete_refills_from_the_left_sibling_by_right_shift() {
    // Leaves [10,15,20] and [40,50] (30 deleted from the right leaf's front).
    let mut h = tiny_with(&[10, 20, 30, 40, 50, 15]);
    h.delete(30);
    assert_eq!(leaves(&mut h), vec![vec![10, 15, 20], vec![40, 50]]);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &50, LookupMode::Eq).unwrap());
        c.delete(st).unwrap();
        assert_eq!(c.get(st).unwrap(), None, "50 was the last record");
    });
    // Lookup 50: root [10,40] probes 10, 40; leaf probes 40, 50: 4 compares.
    // Delete the last of 2 leaves 1; no right sibling. A temporary cursor steps left
    // (1 decrement); the left leaf can spare one: rshift of 20 slides our 1 entry up
    // (1 move) and its own temporary cursor steps back right to fix our parent key
    // (1 increment).
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Delrec, 1),
            (BtreeOp::Decrement, 1),
            (BtreeOp::Rshift, 1),
            (BtreeOp::Increment, 1),
            (BtreeOp::Moves, 1),
        ])
    );
    assert_eq!(leaves(&mut h), vec![vec![10, 15], vec![20, 40]]);
    h.model.remove(&50);
    h.verify();
}

#[test]
fn delete_that_joins_the_last_two_leaves_kills_the_root() {
    // Leaves [10,30] and [40,50] (after the left-shift delete above).
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    h.delete(20);
    assert_eq!(leaves(&mut h), vec![vec![10, 30], vec![40, 50]]);
    assert_eq!(h.st.live_blocks(), 3);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &30, LookupMode::Eq).unwrap());
        c.delete(st).unwrap();
        assert_eq!(c.get(st).unwrap(), Some(rec(40)), "cursor on the successor");
    });
    // Lookup 30: root [10,40] probes 10, 40; leaf probes 10, 30: 4 compares.
    // Delete leaves [10]; the temporary cursor steps right (1 increment) but [40,50]
    // cannot spare one, so join: 2 entries copied left, the right leaf freed. One level
    // up, the right leaf's entry is deleted (2nd delrec, 0 moves), leaving the root one
    // child: killroot frees it too.
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Delrec, 2),
            (BtreeOp::Increment, 1),
            (BtreeOp::Join, 1),
            (BtreeOp::Killroot, 1),
            (BtreeOp::Free, 2),
            (BtreeOp::Moves, 2),
        ])
    );
    assert_eq!(h.root.level, 0);
    assert_eq!(h.st.live_blocks(), 1);
    h.model.remove(&30);
    h.verify();
}

#[test]
fn steps_count_only_when_they_cross_into_a_sibling_block() {
    // Leaves [10,20] and [30,40,50].
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &10, LookupMode::Eq).unwrap());
        let lookup = *c.counts();
        c.take_counts();
        let mut seen = vec![];
        while c.increment(st).unwrap() {
            seen.push(c.get(st).unwrap().unwrap().key);
        }
        assert_eq!(seen, vec![20, 30, 40, 50]);
        assert_eq!(
            *c.counts(),
            counts(&[(BtreeOp::Increment, 1)]),
            "only 20 -> 30 crosses a block; falling off the end is not a step"
        );
        while c.decrement(st).unwrap() {}
        assert_eq!(c.counts().get(BtreeOp::Decrement), 1);
        assert_eq!(lookup.get(BtreeOp::Lookup), 1);
    });
    assert_eq!(
        got,
        counts(&[(BtreeOp::Increment, 1), (BtreeOp::Decrement, 1)])
    );
}

#[test]
fn repositioning_after_a_split_counts_nothing_extra() {
    // A deep tiny tree where many inserts split; each insert's counts must equal a lookup
    // of the same key plus structural work, never a second lookup.
    let mut h = tiny_with(&[]);
    for k in 1..200u32 {
        let got = measure(&mut h, |c, st| c.insert(st, &rec(k * 10)).unwrap());
        assert_eq!(got.get(BtreeOp::Lookup), 1, "insert of {k}");
        h.model.insert(k * 10, rec(k * 10));
    }
    assert!(h.root.level >= 3);
    h.verify();
}

#[test]
fn insert_here_after_a_lookup_and_a_step_counts_one_lookup_and_lands_where_the_step_left() {
    // Leaves [10,20] and [30,40,50]: the free-extent pattern of xfs_free_ag_extent, a
    // lookup of the greatest key <= 25 and a step right, then the insert where the cursor
    // stands. The step crosses into the right leaf (1 increment), so 25 goes in at its
    // front (2 entries slid, and the parent key becomes 25), not at the end of the left
    // leaf where a fresh lookup would have put it.
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &25, LookupMode::Le).unwrap());
        assert!(c.increment(st).unwrap());
        assert_eq!(c.get(st).unwrap().unwrap().key, 30);
        c.insert_here(st, &rec(25)).unwrap();
        assert_eq!(
            c.get(st).unwrap().unwrap().key,
            25,
            "cursor on the new record"
        );
    });
    h.model.insert(25, rec(25));
    // Lookup 25: root [10,30] probes 10, 30 -> child 1; leaf [10,20] probes 10, 20.
    assert_eq!(
        got,
        counts(&[
            (BtreeOp::Lookup, 1),
            (BtreeOp::Compare, 4),
            (BtreeOp::Increment, 1),
            (BtreeOp::Insrec, 1),
            (BtreeOp::Moves, 3),
        ])
    );
    assert_eq!(leaves(&mut h), vec![vec![10, 20], vec![25, 30, 40, 50]]);
    h.verify();
}

#[test]
fn insert_here_refuses_a_key_that_does_not_belong_at_the_cursor() {
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    let mut c = h.cursor();
    assert!(c.lookup(&mut h.st, &20, LookupMode::Eq).unwrap());
    // At 20's place only a key between 10 and 20 fits.
    for k in [5, 20, 25, 60] {
        assert!(
            matches!(
                c.insert_here(&mut h.st, &rec(k)),
                Err(crate::fs::error::FsError::Invalid(_))
            ),
            "{k}"
        );
    }
    c.insert_here(&mut h.st, &rec(15)).unwrap();
    h.model.insert(15, rec(15));
    h.end(&c);
    h.verify();
}

#[test]
fn the_last_leaf_and_a_move_to_a_leafs_start_count_nothing() {
    // Leaves [10,20] and [30,40,50].
    let mut h = tiny_with(&[10, 20, 30, 40, 50]);
    let got = measure(&mut h, |c, st| {
        assert!(c.lookup(st, &20, LookupMode::Eq).unwrap());
        assert!(!c.in_last_leaf(st).unwrap());
        assert!(c.lookup(st, &40, LookupMode::Eq).unwrap());
        assert!(c.in_last_leaf(st).unwrap());
        c.take_counts();
        c.to_leaf_start().unwrap();
        assert_eq!(c.get(st).unwrap().unwrap().key, 30);
    });
    assert!(got.is_zero(), "{got}");
}
