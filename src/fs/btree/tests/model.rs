//! Model-based tests: random operations against a `BTreeMap`, every operation its own
//! log-checked transaction, the checker and full scans run every few operations; then deep
//! trees grown and shrunk back to a single leaf.

use super::super::block::SpecGeom;
use super::super::kinds::{BmbtSpec, BnoSpec, CntSpec, DirHashSpec, FinoSpec, InoSpec};
use super::super::{BtreeOp, LookupMode};
use super::support::{Harness, Model, TinyDa, TinyLong, TinyShort};
use crate::rng::SplitMix64;

/// Drive `ops` random operations over keys drawn from `0..space`: a growing phase biased
/// to inserts, then a shrinking phase biased to deletes, then delete whatever is left.
/// Verifies fully every `every` operations and at the end; returns the harness.
fn random_ops<S: Model>(seed: u64, ops: u32, space: u32, every: u32) -> Harness<S> {
    let mut rng = SplitMix64::new(seed);
    let mut h = Harness::<S>::new(7);
    let mut max_level = 0;
    for i in 0..ops {
        let growing = i < ops * 3 / 5;
        let roll = rng.below(100);
        let insert_pct = if growing { 55 } else { 15 };
        let delete_pct = if growing { 15 } else { 55 };
        if roll < insert_pct {
            let rec = S::rec(rng.below(u64::from(space)) as u32, rng.next_u64() as u32);
            h.insert(rec);
        } else if roll < insert_pct + delete_pct {
            if !h.model.is_empty() {
                let nth = rng.below(h.model.len() as u64) as usize;
                let k = *h.model.keys().nth(nth).expect("nth < len");
                h.delete(k);
            }
        } else if roll < insert_pct + delete_pct + 8 {
            if !h.model.is_empty() {
                let nth = rng.below(h.model.len() as u64) as usize;
                let k = *h.model.keys().nth(nth).expect("nth < len");
                h.update(k, rng.next_u64() as u32);
            }
        } else {
            let mode = [LookupMode::Eq, LookupMode::Le, LookupMode::Ge][rng.below(3) as usize];
            let k = if rng.chance(50) && !h.model.is_empty() {
                let nth = rng.below(h.model.len() as u64) as usize;
                *h.model.keys().nth(nth).expect("nth < len")
            } else {
                Harness::<S>::key(&mut rng, space)
            };
            h.lookup(k, mode);
        }
        max_level = max_level.max(h.root.level);
        if i % every == every - 1 {
            h.verify();
        }
    }
    h.verify();
    let keys: Vec<_> = h.model.keys().copied().collect();
    for k in keys {
        h.delete(k);
    }
    h.verify();
    assert_eq!(h.root.level, 0, "an emptied tree is one leaf again");
    assert_eq!(h.st.live_blocks(), 1, "every other block was freed");
    assert!(max_level >= 1, "the run never grew the tree past one block");
    h
}

/// Tiny blocks: deep trees (5+ levels) from a few hundred records, every rebalancing path.
fn tiny_run<S: Model>(seed: u64) {
    let h = random_ops::<S>(seed, 6000, 700, 97);
    for op in [
        BtreeOp::Split,
        BtreeOp::Join,
        BtreeOp::Lshift,
        BtreeOp::Rshift,
        BtreeOp::Newroot,
        BtreeOp::Killroot,
        BtreeOp::Increment,
        BtreeOp::Decrement,
    ] {
        assert!(h.counts.get(op) > 0, "{op} never happened");
    }
    // Every block allocated was freed again except the final leaf.
    assert_eq!(h.counts.get(BtreeOp::Alloc), h.counts.get(BtreeOp::Free));
}

#[test]
fn tiny_short_tree_matches_model_through_every_rebalancing_path() {
    tiny_run::<TinyShort>(1);
}

#[test]
fn tiny_long_tree_matches_model_through_every_rebalancing_path() {
    tiny_run::<TinyLong>(2);
}

#[test]
fn tiny_da_tree_matches_model_through_every_rebalancing_path() {
    tiny_run::<TinyDa>(3);
}

#[test]
fn bno_tree_matches_model() {
    random_ops::<BnoSpec>(11, 4000, 3000, 500);
}

#[test]
fn cnt_tree_matches_model() {
    random_ops::<CntSpec>(12, 4000, 3000, 500);
}

#[test]
fn ino_tree_matches_model() {
    random_ops::<InoSpec>(13, 4000, 3000, 500);
}

#[test]
fn fino_tree_matches_model() {
    random_ops::<FinoSpec>(14, 4000, 3000, 500);
}

#[test]
fn bmbt_tree_matches_model() {
    random_ops::<BmbtSpec>(15, 4000, 3000, 500);
}

#[test]
fn dirhash_tree_with_colliding_hashes_matches_model() {
    random_ops::<DirHashSpec>(16, 4000, 3000, 500);
}

/// Grow a tree to more records than two levels can hold however full their blocks
/// (`node_max * leaf_max`, plus 10%) inserted in random order (transactions of `BATCH`
/// operations, one cursor each), check it has three levels, then delete every record in
/// another random order and check it is one leaf again with every other block freed.
fn deep<S: Model>(seed: u64) {
    const BATCH: usize = 4096;
    let g = S::GEOM;
    let n = (g.node_max * g.leaf_max * 11 / 10) as u32;
    let mut rng = SplitMix64::new(seed);
    let mut h = Harness::<S>::new(3);
    for chunk in rng.permutation(n).chunks(BATCH) {
        let mut c = h.cursor();
        for &k in chunk {
            let rec = S::rec(k, k);
            c.insert(&mut h.st, &rec).expect("insert");
            h.model.insert(S::key_of(&rec), rec);
        }
        h.end(&c);
    }
    assert_eq!(h.root.level, 2, "{n} records");
    h.verify();
    let keys: Vec<_> = h.model.keys().copied().collect();
    for chunk in rng.permutation(n).chunks(BATCH) {
        let mut c = h.cursor();
        for &i in chunk {
            let k = keys[i as usize];
            assert!(c.lookup(&mut h.st, &k, LookupMode::Eq).unwrap());
            c.delete(&mut h.st).expect("delete");
            h.model.remove(&k);
        }
        h.end(&c);
    }
    h.verify();
    assert_eq!(h.root.level, 0);
    assert_eq!(h.st.live_blocks(), 1);
    assert!(h.counts.get(BtreeOp::Killroot) >= 2);
    assert_eq!(h.counts.get(BtreeOp::Alloc), h.counts.get(BtreeOp::Free));
}

#[test]
fn bno_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<BnoSpec>(21);
}

#[test]
fn cnt_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<CntSpec>(22);
}

#[test]
fn ino_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<InoSpec>(23);
}

#[test]
fn fino_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<FinoSpec>(24);
}

#[test]
fn bmbt_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<BmbtSpec>(25);
}

#[test]
fn dirhash_tree_grows_to_three_levels_and_shrinks_to_one_leaf() {
    deep::<DirHashSpec>(26);
}
