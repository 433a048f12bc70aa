//! The cursor's contract at its edges: key-changing updates across leaf boundaries,
//! refusals that leave the tree and the cursor alone, and whole-tree destroy.

use super::super::{BtreeOp, Cursor, LookupMode, Problem, check, count_records, destroy};
use super::support::{Harness, TinyRec, TinyShort};
use crate::fs::error::FsError;
use crate::fs::format::endian;

fn rec(k: u32) -> TinyRec {
    TinyRec { key: k, val: k + 1 }
}

/// Leaves [10,20] and [30,40,50] under one root.
fn two_leaves() -> Harness<TinyShort> {
    let mut h = Harness::<TinyShort>::new(1);
    for k in [10, 20, 30, 40, 50] {
        h.insert(rec(k));
    }
    assert_eq!(h.root.level, 1);
    h
}

/// Position on `key` and try to update it to `new`.
fn update(h: &mut Harness<TinyShort>, key: u32, new: TinyRec) -> Result<(), FsError> {
    let mut c = h.cursor();
    assert!(c.lookup(&mut h.st, &key, LookupMode::Eq).unwrap());
    let r = c.update(&mut h.st, &new);
    if r.is_ok() {
        h.model.remove(&key);
        h.model.insert(new.key, new);
        assert_eq!(c.get(&h.st).unwrap(), Some(new));
    } else {
        assert_eq!(
            c.get(&h.st).unwrap(),
            Some(rec(key)),
            "refusal keeps the cursor"
        );
    }
    h.end(&c);
    r
}

#[test]
fn update_may_move_a_key_between_its_neighbours_across_leaves() {
    let mut h = two_leaves();
    // 30 is the right leaf's first record: its neighbours are 20 (left leaf) and 40.
    assert!(matches!(
        update(&mut h, 30, rec(20)),
        Err(FsError::Invalid(_))
    ));
    assert!(matches!(
        update(&mut h, 30, rec(40)),
        Err(FsError::Invalid(_))
    ));
    assert_eq!(update(&mut h, 30, rec(25)), Ok(()));
    // The parent key followed: the checker agrees and lookups route to the right leaf.
    h.verify();
    h.lookup(25, LookupMode::Eq);
    h.lookup(22, LookupMode::Ge);
    // 20 is the left leaf's last: its next neighbour, 25, is in the right leaf.
    assert!(matches!(
        update(&mut h, 20, rec(25)),
        Err(FsError::Invalid(_))
    ));
    assert_eq!(update(&mut h, 20, rec(24)), Ok(()));
    // The first and last records of the tree are bounded on one side only.
    assert_eq!(update(&mut h, 10, rec(1)), Ok(()));
    assert_eq!(update(&mut h, 50, rec(1000)), Ok(()));
    h.verify();
}

#[test]
fn update_with_the_same_key_changes_only_the_payload() {
    let mut h = two_leaves();
    let new = TinyRec { key: 40, val: 7 };
    assert_eq!(update(&mut h, 40, new), Ok(()));
    h.verify();
}

#[test]
fn duplicate_insert_is_exists_and_leaves_the_cursor_on_the_existing_record() {
    let mut h = two_leaves();
    let mut c = h.cursor();
    let dup = TinyRec { key: 40, val: 99 };
    assert_eq!(c.insert(&mut h.st, &dup), Err(FsError::Exists));
    assert_eq!(c.get(&h.st).unwrap(), Some(rec(40)));
    assert_eq!(c.counts().get(BtreeOp::Insrec), 0);
    h.end(&c);
    h.verify();
}

#[test]
fn unpositioned_cursor_refuses_steps_and_changes() {
    let mut h = two_leaves();
    let mut c = h.cursor();
    assert_eq!(c.get(&h.st).unwrap(), None);
    assert!(matches!(c.increment(&mut h.st), Err(FsError::Invalid(_))));
    assert!(matches!(c.decrement(&mut h.st), Err(FsError::Invalid(_))));
    assert!(matches!(c.delete(&mut h.st), Err(FsError::Invalid(_))));
    assert!(matches!(
        c.update(&mut h.st, &rec(10)),
        Err(FsError::Invalid(_))
    ));
    // Off the end is positioned but on no record: still no delete or update.
    assert!(!c.lookup(&mut h.st, &99, LookupMode::Ge).unwrap());
    assert!(matches!(c.delete(&mut h.st), Err(FsError::Invalid(_))));
    assert!(!c.lookup(&mut h.st, &1, LookupMode::Le).unwrap());
    assert!(matches!(
        c.update(&mut h.st, &rec(1)),
        Err(FsError::Invalid(_))
    ));
    h.end(&c);
    h.verify();
}

#[test]
fn empty_tree_lookups_fail_and_steps_find_nothing() {
    let mut h = Harness::<TinyShort>::new(1);
    for mode in [LookupMode::Eq, LookupMode::Le, LookupMode::Ge] {
        let mut c = h.cursor();
        assert!(!c.lookup(&mut h.st, &5, mode).unwrap());
        assert_eq!(c.get(&h.st).unwrap(), None);
        assert!(!c.increment(&mut h.st).unwrap());
        assert!(!c.decrement(&mut h.st).unwrap());
        h.end(&c);
    }
}

#[test]
fn destroy_frees_every_block_of_a_deep_tree() {
    let mut h = Harness::<TinyShort>::new(1);
    for k in 0..300 {
        h.insert(rec(k * 3));
    }
    assert!(h.root.level >= 3);
    let blocks = h.st.live_blocks();
    assert!(blocks > 100);
    destroy::<TinyShort>(&mut h.st, h.root, 1).unwrap();
    assert_eq!(h.st.live_blocks(), 0);
    h.st.commit().unwrap();
}

#[test]
fn destroy_of_a_corrupt_tree_frees_nothing() {
    let mut h = Harness::<TinyShort>::new(1);
    for k in 0..100 {
        h.insert(rec(k));
    }
    let blocks = h.st.live_blocks();
    // Damage the last block allocated (a leaf or node far from the root).
    let victim = *h.st.allocated().last().unwrap();
    endian::put_u32(h.st.block_mut_unlogged(victim).unwrap(), 48, 2); // owner
    h.st.restamp_crc(victim);
    assert!(matches!(
        destroy::<TinyShort>(&mut h.st, h.root, 1),
        Err(FsError::Corrupt { .. })
    ));
    assert_eq!(h.st.live_blocks(), blocks);
    let findings = check::<TinyShort>(&mut h.st, h.root, 1).unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].ptr, victim);
    assert_eq!(
        findings[0].problem,
        Problem::BadOwner {
            found: 2,
            expected: 1
        }
    );
    h.st.commit().unwrap();
}

#[test]
fn counts_accumulate_until_taken() {
    let mut h = two_leaves();
    let mut c: Cursor<TinyShort> = h.cursor();
    c.lookup(&mut h.st, &10, LookupMode::Eq).unwrap();
    c.lookup(&mut h.st, &50, LookupMode::Eq).unwrap();
    assert_eq!(c.counts().get(BtreeOp::Lookup), 2);
    let taken = c.take_counts();
    assert_eq!(taken.get(BtreeOp::Lookup), 2);
    assert!(c.counts().is_zero());
    assert_eq!(count_records::<TinyShort>(&mut h.st, h.root, 1).unwrap(), 5);
    h.end(&c);
}
