//! A quick measurement, not a test assertion: 1M inserts of random directory-hash records
//! and 1M lookups through the B+tree on a `MemStore`, against `std::collections::BTreeMap`
//! doing the same in the same run, reported as ns/op and as a ratio.
//!
//! Run: `cargo test --release --lib -- --ignored --nocapture btree_vs_std`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use super::super::kinds::{DirHashRec, DirHashSpec};
use super::super::mem_store::MemStore;
use super::super::{BtreeOp, BtreeSpec, Cursor, LookupMode, count_records, create};
use super::support::UUID;
use crate::rng::SplitMix64;

#[test]
#[ignore = "benchmark; run in release with --ignored --nocapture"]
fn dirhash_btree_vs_std_btreemap_inserts_and_lookups() {
    const N: u32 = 1_000_000;
    let mut rng = SplitMix64::new(99);
    let recs: Vec<DirHashRec> = (0..N)
        .map(|i| DirHashRec {
            hash: rng.next_u64() as u32,
            addr: i,
        })
        .collect();
    let order = rng.permutation(N);

    let mut st = MemStore::new(UUID);
    st.set_check_logging(false);
    let root = create::<DirHashSpec>(&mut st, 1, 0).unwrap();
    let mut c = Cursor::<DirHashSpec>::new(root, 1);
    let t = Instant::now();
    for r in &recs {
        c.insert(&mut st, r).unwrap();
    }
    let tree_insert = t.elapsed();
    let insert_counts = c.take_counts();
    let t = Instant::now();
    let mut found = 0u32;
    for &i in &order {
        let k = DirHashSpec::key_of(&recs[i as usize]);
        found += u32::from(c.lookup(&mut st, &k, LookupMode::Eq).unwrap());
    }
    let tree_lookup = t.elapsed();
    assert_eq!(found, N);
    assert_eq!(
        count_records::<DirHashSpec>(&mut st, c.root(), 1).unwrap(),
        u64::from(N)
    );

    let mut map = BTreeMap::new();
    let t = Instant::now();
    for r in &recs {
        map.insert(DirHashSpec::key_of(r), *r);
    }
    let std_insert = t.elapsed();
    let t = Instant::now();
    let mut found = 0u32;
    for &i in &order {
        let k = DirHashSpec::key_of(&recs[i as usize]);
        found += u32::from(black_box(map.get(&k)).is_some());
    }
    let std_lookup = t.elapsed();
    assert_eq!(found, N);

    let ns = |d: std::time::Duration| d.as_nanos() as f64 / f64::from(N);
    println!(
        "btree (MemStore, {} levels): insert {:.0} ns/op, lookup {:.0} ns/op",
        c.root().level + 1,
        ns(tree_insert),
        ns(tree_lookup)
    );
    println!(
        "std BTreeMap:                insert {:.0} ns/op, lookup {:.0} ns/op",
        ns(std_insert),
        ns(std_lookup)
    );
    println!(
        "ratio btree/std:             insert {:.2}x, lookup {:.2}x",
        ns(tree_insert) / ns(std_insert),
        ns(tree_lookup) / ns(std_lookup)
    );
    println!(
        "per insert: {:.2} compares, {:.1} moves, {:.4} splits, {:.4} shifts",
        f64::from(insert_counts[BtreeOp::Compare]) / f64::from(N),
        f64::from(insert_counts[BtreeOp::Moves]) / f64::from(N),
        f64::from(insert_counts[BtreeOp::Split]) / f64::from(N),
        f64::from(insert_counts[BtreeOp::Lshift] + insert_counts[BtreeOp::Rshift]) / f64::from(N),
    );
    println!(
        "per lookup: {:.2} compares",
        f64::from(c.counts()[BtreeOp::Compare]) / f64::from(N)
    );
}
