//! Test support: tiny instantiations (4 entries per block, so a few hundred records make
//! deep trees), the crate's seeded PRNG, and a harness that runs every tree operation in its
//! own transaction against a `BTreeMap` model.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

use super::super::kinds::{
    BmbtRec, BmbtSpec, BnoSpec, CntSpec, DirHashRec, DirHashSpec, FinoSpec, FreeExtent, InoRec,
    InoSpec,
};
use super::super::mem_store::MemStore;
use super::super::{
    BtreeSpec, Cursor, Layout, LookupMode, OpCounts, Root, check, count_records, create,
    for_each_record,
};
use crate::fs::error::FsError;
use crate::fs::format::{BlockKind, endian};
use crate::rng::SplitMix64;

/// The filesystem UUID of every test store.
pub const UUID: [u8; 16] = *b"fslab-btree-test";

/// Record of the tiny specs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TinyRec {
    pub key: u32,
    pub val: u32,
}

macro_rules! tiny_spec {
    ($(#[$doc:meta])* $name:ident, $layout:expr, $rec_len:expr, $key_len:expr, $kind:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name;

        impl BtreeSpec for $name {
            const LAYOUT: Layout = $layout;
            type Rec = TinyRec;
            type Key = u32;
            const REC_LEN: usize = $rec_len;
            const KEY_LEN: usize = $key_len;

            fn kind(level: u16) -> BlockKind {
                $kind(level)
            }
            fn encode_rec(r: &TinyRec, out: &mut [u8]) {
                out.fill(0);
                endian::put_u32(out, 0, r.key);
                endian::put_u32(out, 4, r.val);
            }
            fn decode_rec(b: &[u8]) -> TinyRec {
                TinyRec {
                    key: endian::get_u32(b, 0),
                    val: endian::get_u32(b, 4),
                }
            }
            fn encode_key(k: &u32, out: &mut [u8]) {
                out.fill(0);
                endian::put_u32(out, 0, *k);
            }
            fn decode_key(b: &[u8]) -> u32 {
                endian::get_u32(b, 0)
            }
            fn key_of(r: &TinyRec) -> u32 {
                r.key
            }
        }
    };
}

tiny_spec!(
    /// Short layout, 4 records per leaf and 4 keys per node.
    TinyShort,
    Layout::Short,
    1000,
    1000,
    |_| BlockKind::BnoBtree
);
tiny_spec!(
    /// Long layout, 4 records per leaf and 4 keys per node.
    TinyLong,
    Layout::Long,
    1000,
    990,
    |_| BlockKind::BmapBtree
);
tiny_spec!(
    /// Da layout, 4 records per leaf and 4 keys per node.
    TinyDa,
    Layout::Da,
    1000,
    1000,
    |l: u16| if l == 0 {
        BlockKind::DirLeafN
    } else {
        BlockKind::DaNode
    }
);

/// How the model tests make records of a spec.
pub trait Model: BtreeSpec<Rec: PartialEq> {
    /// A record whose key is determined by `k` (distinct `k`, distinct key unless the spec
    /// deliberately collides) with payload `v`.
    fn rec(k: u32, v: u32) -> Self::Rec;
    /// The same key with another payload, if the record has more than its key.
    fn with_payload(r: &Self::Rec, v: u32) -> Option<Self::Rec>;
}

macro_rules! tiny_model {
    ($name:ident) => {
        impl Model for $name {
            fn rec(k: u32, v: u32) -> TinyRec {
                TinyRec { key: k, val: v }
            }
            fn with_payload(r: &TinyRec, v: u32) -> Option<TinyRec> {
                Some(TinyRec { key: r.key, val: v })
            }
        }
    };
}

tiny_model!(TinyShort);
tiny_model!(TinyLong);
tiny_model!(TinyDa);

impl Model for BnoSpec {
    fn rec(k: u32, v: u32) -> FreeExtent {
        FreeExtent {
            start: k + 1,
            len: v % 1000 + 1,
        }
    }
    fn with_payload(r: &FreeExtent, v: u32) -> Option<FreeExtent> {
        Some(FreeExtent {
            start: r.start,
            len: v % 1000 + 1,
        })
    }
}

impl Model for CntSpec {
    fn rec(k: u32, v: u32) -> FreeExtent {
        // Many equal lengths, told apart by start.
        FreeExtent {
            start: k + 1,
            len: v % 64 + 1,
        }
    }
    fn with_payload(_: &FreeExtent, _: u32) -> Option<FreeExtent> {
        None
    }
}

fn ino(k: u32, v: u32) -> InoRec {
    InoRec {
        startino: k * 64,
        holemask: (v & 0xffff) as u16,
        count: 64,
        freecount: (v % 65) as u8,
        free: u64::from(v).wrapping_mul(0x0101_0101_0101_0101),
    }
}

impl Model for InoSpec {
    fn rec(k: u32, v: u32) -> InoRec {
        ino(k, v)
    }
    fn with_payload(r: &InoRec, v: u32) -> Option<InoRec> {
        Some(ino(r.startino / 64, v))
    }
}

impl Model for FinoSpec {
    fn rec(k: u32, v: u32) -> InoRec {
        ino(k, v)
    }
    fn with_payload(r: &InoRec, v: u32) -> Option<InoRec> {
        Some(ino(r.startino / 64, v))
    }
}

fn bmbt(k: u32, v: u32) -> BmbtRec {
    BmbtRec {
        startoff: u64::from(k) * 16,
        startblock: u64::from(v) * 7 + 100,
        blockcount: v % 16 + 1,
        unwritten: v.is_multiple_of(3),
    }
}

impl Model for BmbtSpec {
    fn rec(k: u32, v: u32) -> BmbtRec {
        bmbt(k, v)
    }
    fn with_payload(r: &BmbtRec, v: u32) -> Option<BmbtRec> {
        Some(bmbt((r.startoff / 16) as u32, v))
    }
}

impl Model for DirHashSpec {
    fn rec(k: u32, v: u32) -> DirHashRec {
        // Names hash alike four at a time; the address tells them apart.
        DirHashRec {
            hash: k / 4,
            addr: v,
        }
    }
    fn with_payload(_: &DirHashRec, _: u32) -> Option<DirHashRec> {
        None
    }
}

/// A tree in a `MemStore`, its `BTreeMap` model, and the counts of everything done to it.
/// Every operation runs in its own transaction, committed (and so log-checked) at its end.
pub struct Harness<S: Model> {
    pub st: MemStore,
    pub root: Root,
    pub owner: u64,
    pub model: BTreeMap<S::Key, S::Rec>,
    pub counts: OpCounts,
}

impl<S: Model> Harness<S> {
    pub fn new(owner: u64) -> Self {
        let mut st = MemStore::new(UUID);
        let root = create::<S>(&mut st, owner, 0).expect("create");
        st.commit().expect("create logged its changes");
        Harness {
            st,
            root,
            owner,
            model: BTreeMap::new(),
            counts: OpCounts::default(),
        }
    }

    pub fn cursor(&self) -> Cursor<S> {
        Cursor::new(self.root, self.owner)
    }

    /// End the transaction of cursor `c`.
    pub fn end(&mut self, c: &Cursor<S>) {
        c.assert_path_consistent(&self.st);
        self.root = c.root();
        self.counts.merge(c.counts());
        self.st.commit().expect("every change was logged");
    }

    pub fn insert(&mut self, rec: S::Rec) {
        let mut c = self.cursor();
        let r = c.insert(&mut self.st, &rec);
        let k = S::key_of(&rec);
        if self.model.contains_key(&k) {
            assert_eq!(r, Err(FsError::Exists), "duplicate {k:?}");
        } else {
            r.expect("insert");
            assert_eq!(c.get(&self.st).unwrap(), Some(rec), "cursor after insert");
            self.model.insert(k, rec);
        }
        self.end(&c);
    }

    pub fn delete(&mut self, k: S::Key) {
        let mut c = self.cursor();
        let found = c.lookup(&mut self.st, &k, LookupMode::Eq).unwrap();
        assert_eq!(
            found,
            self.model.contains_key(&k),
            "lookup {k:?} before delete"
        );
        if found {
            c.delete(&mut self.st).expect("delete");
            self.model.remove(&k);
            let succ = self.model.range((Excluded(k), Unbounded)).next();
            assert_eq!(
                c.get(&self.st).unwrap(),
                succ.map(|(_, r)| *r),
                "cursor after deleting {k:?}"
            );
        }
        self.end(&c);
    }

    pub fn update(&mut self, k: S::Key, v: u32) {
        let mut c = self.cursor();
        if c.lookup(&mut self.st, &k, LookupMode::Eq).unwrap() {
            let old = self.model[&k];
            if let Some(new) = S::with_payload(&old, v) {
                c.update(&mut self.st, &new).expect("update");
                assert_eq!(c.get(&self.st).unwrap(), Some(new));
                self.model.insert(k, new);
            }
        }
        self.end(&c);
    }

    /// Look `k` up per `mode`, compare with the model, and step around the result.
    pub fn lookup(&mut self, k: S::Key, mode: LookupMode) {
        let mut c = self.cursor();
        let found = c.lookup(&mut self.st, &k, mode).unwrap();
        let want = match mode {
            LookupMode::Eq => self.model.get_key_value(&k),
            LookupMode::Le => self.model.range(..=k).next_back(),
            LookupMode::Ge => self.model.range(k..).next(),
        };
        assert_eq!(found, want.is_some(), "{mode:?} {k:?}");
        match want {
            Some((&wk, &wr)) => {
                assert_eq!(c.get(&self.st).unwrap(), Some(wr), "{mode:?} {k:?}");
                let next = self.model.range((Excluded(wk), Unbounded)).next();
                let stepped = c.increment(&mut self.st).unwrap();
                assert_eq!(stepped, next.is_some());
                assert_eq!(c.get(&self.st).unwrap(), next.map(|(_, r)| *r));
                assert!(c.decrement(&mut self.st).unwrap());
                assert_eq!(c.get(&self.st).unwrap(), Some(wr));
                let prev = self.model.range(..wk).next_back();
                assert_eq!(c.decrement(&mut self.st).unwrap(), prev.is_some());
                assert_eq!(c.get(&self.st).unwrap(), prev.map(|(_, r)| *r));
            }
            None if mode == LookupMode::Le => {
                assert_eq!(c.get(&self.st).unwrap(), None);
                let first = self.model.values().next().copied();
                assert_eq!(c.increment(&mut self.st).unwrap(), first.is_some());
                assert_eq!(c.get(&self.st).unwrap(), first);
            }
            None if mode == LookupMode::Ge => {
                assert_eq!(c.get(&self.st).unwrap(), None);
                let last = self.model.values().next_back().copied();
                assert_eq!(c.decrement(&mut self.st).unwrap(), last.is_some());
                assert_eq!(c.get(&self.st).unwrap(), last);
            }
            None => {}
        }
        self.end(&c);
    }

    /// Full comparison: the checker finds nothing, a walk and a cursor scan in both
    /// directions see exactly the model.
    pub fn verify(&mut self) {
        let findings = check::<S>(&mut self.st, self.root, self.owner).unwrap();
        assert!(findings.is_empty(), "check found: {findings:#?}");
        let mut walked = Vec::new();
        for_each_record::<S>(&mut self.st, self.root, self.owner, |r| walked.push(*r)).unwrap();
        let want: Vec<S::Rec> = self.model.values().copied().collect();
        assert_eq!(walked, want, "walk differs from the model");
        assert_eq!(
            count_records::<S>(&mut self.st, self.root, self.owner).unwrap(),
            want.len() as u64
        );
        let mut c = self.cursor();
        if let Some(first) = self.model.keys().next() {
            assert!(c.lookup(&mut self.st, first, LookupMode::Ge).unwrap());
            let mut scanned = vec![c.get(&self.st).unwrap().unwrap()];
            while c.increment(&mut self.st).unwrap() {
                scanned.push(c.get(&self.st).unwrap().unwrap());
            }
            assert_eq!(scanned, want, "forward scan differs from the model");
            let mut back = Vec::new();
            while c.decrement(&mut self.st).unwrap() {
                back.push(c.get(&self.st).unwrap().unwrap());
            }
            back.reverse();
            assert_eq!(back, want, "backward scan differs from the model");
        }
        self.end(&c);
    }

    /// A random key drawn around the model's key space.
    pub fn key(rng: &mut SplitMix64, space: u32) -> S::Key {
        S::key_of(&S::rec(
            rng.below(u64::from(space)) as u32,
            rng.next_u64() as u32,
        ))
    }
}
