//! The dentry cache: what a (directory, name) lookup found, positive or negative, so a path
//! walk does not go back into the directory code for names it has already resolved.
//!
//! # Why labfs has one
//!
//! In the kernel the VFS answers most lookups from the dcache, and XFS sees only the misses:
//! `xfs_vn_lookup` (the `dir lookup` counter) runs once per name the dcache does not know,
//! and a positive dentry holds its inode, so no `xfs_iget` (the `ig` counters) either. fs_mark
//! resolves its whole path for every file and `mkdir`s the existing test directory before
//! each one; the kernel answers that `mkdir` with EEXIST from the dcache, without entering
//! XFS at all. Without a cache labfs walked the directory blocks and the inode cache for every
//! component of every path, and ran an empty transaction for every such `mkdir`: 6 to 12
//! directory lookups and inode-cache attempts per file where the kernel does one.
//!
//! # What it holds and who keeps it right
//!
//! An entry maps (directory inode, name) to the inode number found, or to "absent" (a
//! negative entry: the kernel keeps those too, so repeated lookups of a missing name stay
//! cheap). It holds no reference on the inode: a positive hit takes the inode from the inode
//! cache without counting an `iget` (as a dentry's pinned inode needs none) and falls back to
//! a counted `iget` when reclaim has evicted it. `..` is not cached (a rename moves it).
//!
//! Every entry is written while the directory's ILOCK is held, which is what keeps the cache
//! exact: a lookup records what it found while still holding the lock shared, and every
//! namespace operation (create, mkdir, link, unlink, rmdir, rename) updates the names it
//! changed while holding it exclusive, before its transaction commits. So no lookup can
//! record a result older than a change that already updated the entry. An operation that
//! fails after changing the cache drops the entry ([`Dcache::forget`]) and lets the next
//! lookup read the directory again.
//!
//! # Size and reclaim
//!
//! The `-o dcache=N` option bounds the entries (0 turns the cache off). Each of the shards
//! reclaims second-chance (CLOCK), like the inode cache: a hit sets an entry's referenced
//! bit, and eviction walks the shard's queue in insertion order, giving referenced entries a
//! second pass.

use std::collections::VecDeque;
use std::hash::BuildHasher;

use parking_lot::Mutex;

use crate::fs::fastmap::FastMap;

const SHARDS: usize = 16;

/// What a cached lookup says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cached {
    /// The name refers to this inode.
    Positive(u64),
    /// The name is absent.
    Negative,
}

/// What an entry's `found` holds for a negative entry: XFS's `NULLFSINO`, never an inode
/// number (a directory entry naming it is corrupt and is not cached, see [`Dcache::set`]).
const NEGATIVE: u64 = u64::MAX;

/// Longest name kept inside the entry; longer ones are boxed. fs_mark's and syncbench's
/// names (up to 20 bytes) all fit, so the cache allocates nothing per entry for them: a
/// boxed 9-byte name took a 32-byte heap chunk and a 16-byte pointer, a third of an entry.
const INLINE_NAME: usize = 22;

/// A cached name: inline when short, boxed otherwise (24 bytes either way).
#[derive(Debug)]
enum Name {
    /// `len` bytes at the start of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE_NAME] },
    /// A longer name.
    Boxed(Box<[u8]>),
}

impl Name {
    fn new(name: &[u8]) -> Name {
        if name.len() <= INLINE_NAME {
            let mut bytes = [0; INLINE_NAME];
            bytes[..name.len()].copy_from_slice(name);
            Name::Inline {
                len: name.len() as u8,
                bytes,
            }
        } else {
            Name::Boxed(name.into())
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Name::Boxed(b) => b,
        }
    }
}

/// An entry, filed under the 64-bit hash of its (directory, name). The name is kept and
/// compared on every hit; two names with one hash share a slot, the later evicting the
/// earlier (a miss, never a wrong answer). Keyed this way, a lookup allocates nothing and
/// the queue holds no copy of the name.
#[derive(Debug)]
struct Entry {
    dir: u64,
    /// The inode number found, or [`NEGATIVE`] (one word, where a [`Cached`] takes two).
    found: u64,
    name: Name,
    /// Which queue slot is this entry's (a slot for an older entry of the same key is
    /// stale). It wraps after 2^32 sets in one shard; a stale slot mistaken for the live one
    /// only evicts the entry early or gives it a second chance (a miss, never a wrong answer).
    generation: u32,
    referenced: bool,
}

impl Entry {
    fn is(&self, dir: u64, name: &[u8]) -> bool {
        self.dir == dir && self.name.as_bytes() == name
    }

    fn found(&self) -> Cached {
        match self.found {
            NEGATIVE => Cached::Negative,
            ino => Cached::Positive(ino),
        }
    }
}

#[derive(Debug, Default)]
struct Shard {
    map: FastMap<u64, Entry>,
    /// Entry hashes in insertion order, with the generation they were queued at.
    queue: VecDeque<(u64, u32)>,
    next_generation: u32,
}

impl Shard {
    /// Evict until at most `limit` entries remain (second chance for referenced ones).
    fn reclaim(&mut self, limit: usize) {
        while self.map.len() > limit {
            let Some((key, generation)) = self.queue.pop_front() else {
                return;
            };
            let requeue = match self.map.get_mut(&key) {
                Some(e) if e.generation == generation && e.referenced => {
                    e.referenced = false;
                    true
                }
                Some(e) if e.generation == generation => {
                    self.map.remove(&key);
                    false
                }
                // A slot left behind by an entry that was replaced or forgotten.
                _ => false,
            };
            if requeue {
                self.queue.push_back((key, generation));
            }
        }
        // Forgotten and replaced entries leave slots behind; drop them once they outnumber
        // the live ones, so the queue stays proportional to the map.
        if self.queue.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.queue
                .retain(|(k, g)| map.get(k).is_some_and(|e| e.generation == *g));
        }
    }
}

/// The mount's dentry cache.
#[derive(Debug)]
pub struct Dcache {
    shards: Box<[Mutex<Shard>]>,
    /// Entries allowed per shard (0: the cache is off).
    per_shard: usize,
}

impl Dcache {
    /// A cache of at most about `capacity` entries; 0 turns it off.
    pub fn new(capacity: usize) -> Dcache {
        Dcache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: capacity.div_ceil(SHARDS),
        }
    }

    /// Whether the cache keeps anything.
    pub fn enabled(&self) -> bool {
        self.per_shard > 0
    }

    /// The entry's hash and its shard.
    fn slot(&self, dir: u64, name: &[u8]) -> (u64, &Mutex<Shard>) {
        let h = rustc_hash::FxBuildHasher.hash_one((dir, name));
        // The middle bits pick the shard; the shard's table hashes the hash again.
        (h, &self.shards[(h >> 32) as usize % SHARDS])
    }

    /// What is cached for `name` in directory `dir`, if anything.
    pub fn get(&self, dir: u64, name: &[u8]) -> Option<Cached> {
        if !self.enabled() || name == b".." {
            return None;
        }
        let (h, shard) = self.slot(dir, name);
        let mut shard = shard.lock();
        let e = shard.map.get_mut(&h).filter(|e| e.is(dir, name))?;
        e.referenced = true;
        Some(e.found())
    }

    /// Record what `name` in `dir` refers to. The caller holds `dir`'s ILOCK (shared for a
    /// lookup's result, exclusive for a change), see the module docs.
    pub fn set(&self, dir: u64, name: &[u8], found: Cached) {
        if !self.enabled() || name == b".." || name == b"." {
            return;
        }
        let found = match found {
            Cached::Positive(NEGATIVE) => return self.forget(dir, name),
            Cached::Positive(ino) => ino,
            Cached::Negative => NEGATIVE,
        };
        let (h, shard) = self.slot(dir, name);
        let mut shard = shard.lock();
        let generation = shard.next_generation;
        shard.next_generation = generation.wrapping_add(1);
        shard.queue.push_back((h, generation));
        match shard.map.get_mut(&h) {
            // The same name again: keep its allocation.
            Some(e) if e.is(dir, name) => {
                e.found = found;
                e.referenced = false;
                e.generation = generation;
            }
            _ => {
                shard.map.insert(
                    h,
                    Entry {
                        dir,
                        found,
                        name: Name::new(name),
                        generation,
                        referenced: false,
                    },
                );
            }
        }
        let limit = self.per_shard;
        shard.reclaim(limit);
    }

    /// Drop what is cached for `name` in `dir` (the next lookup reads the directory).
    pub fn forget(&self, dir: u64, name: &[u8]) {
        if !self.enabled() {
            return;
        }
        let (h, shard) = self.slot(dir, name);
        let mut shard = shard.lock();
        if shard.map.get(&h).is_some_and(|e| e.is(dir, name)) {
            shard.map.remove(&h);
        }
    }

    /// Entries cached now.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_positive_or_negative_and_replaced_by_the_latest() {
        let d = Dcache::new(100);
        assert_eq!(d.get(1, b"a"), None);
        d.set(1, b"a", Cached::Negative);
        assert_eq!(d.get(1, b"a"), Some(Cached::Negative));
        d.set(1, b"a", Cached::Positive(42));
        assert_eq!(d.get(1, b"a"), Some(Cached::Positive(42)));
        assert_eq!(d.get(2, b"a"), None, "keyed by directory too");
        d.forget(1, b"a");
        assert_eq!(d.get(1, b"a"), None);
        assert!(d.is_empty());
    }

    #[test]
    fn dot_dot_is_never_cached_and_zero_capacity_caches_nothing() {
        let d = Dcache::new(100);
        d.set(1, b"..", Cached::Positive(7));
        assert_eq!(d.get(1, b".."), None);
        let off = Dcache::new(0);
        off.set(1, b"a", Cached::Positive(7));
        assert_eq!(off.get(1, b"a"), None);
        assert!(!off.enabled());
    }

    #[test]
    fn short_and_long_names_are_kept_whole() {
        let d = Dcache::new(100);
        let fits = [b'x'; INLINE_NAME];
        let long = [b'y'; 255];
        d.set(1, &fits, Cached::Positive(5));
        d.set(1, &long, Cached::Positive(6));
        d.set(1, b"", Cached::Negative);
        assert_eq!(d.get(1, &fits), Some(Cached::Positive(5)));
        assert_eq!(d.get(1, &long), Some(Cached::Positive(6)));
        assert_eq!(
            d.get(1, &fits[..INLINE_NAME - 1]),
            None,
            "a prefix is another name"
        );
        assert_eq!(d.get(1, &long[..254]), None);
        assert_eq!(d.get(1, b""), Some(Cached::Negative));
        // A table slot is the hash and the entry: 56 bytes, no heap chunk for a short name.
        assert!(std::mem::size_of::<(u64, Entry)>() <= 56);
    }

    #[test]
    fn the_negative_marker_is_never_cached_as_an_inode() {
        let d = Dcache::new(100);
        d.set(1, b"a", Cached::Positive(3));
        d.set(1, b"a", Cached::Positive(NEGATIVE));
        assert_eq!(d.get(1, b"a"), None, "dropped, not read back as absent");
    }

    #[test]
    fn reclaim_keeps_the_cache_bounded_and_spares_referenced_entries() {
        let d = Dcache::new(SHARDS * 4);
        for i in 0..10_000u64 {
            d.set(1, format!("n{i}").as_bytes(), Cached::Positive(i));
            // Keep touching one name: the second chance keeps it.
            assert_eq!(d.get(1, b"n0"), Some(Cached::Positive(0)));
        }
        assert!(d.len() <= SHARDS * 4, "{} entries", d.len());
        for shard in d.shards.iter() {
            let s = shard.lock();
            assert!(s.queue.len() <= 2 * s.map.len() + 64 + 1);
        }
    }
}
