//! The inode cache: every in-core inode of a mount, by inode number.
//!
//! Sharded hash maps keep lookups from many threads off one lock. Reclaim is second-chance
//! (CLOCK): a lookup sets an inode's `referenced` bit; a sweep clears it on the first pass and
//! evicts on the second, taking only inodes nobody holds (no open file, no transaction, no
//! path walk: the cache's `Arc` is the only one), that are clean and have no cached data.
//!
//! The `ig` and `vnodes` stat lines are bumped here, where XFS bumps them: `ig attempts` per
//! lookup, `found`/`missed` per outcome, `dup` when two threads read the same inode at once,
//! `reclaims` per eviction; `vnodes active` is the number of in-core inodes (a gauge), and an
//! eviction of a live inode counts once in each of `rele`, `reclaim` and `remove` (destroy,
//! mark reclaimable, free in XFS).
//!
//! A freed inode (unlinked and inactivated, [`crate::fs::inodegc`]) stays cached, as XFS
//! keeps a reclaimable inode: it counted `rele`, `remove` and `reclaim` when it was queued for
//! inactivation, so its eviction counts only `ig reclaims` and the `active` gauge. A new inode
//! given its number takes its place without an eviction (XFS recycles the in-core inode:
//! `active` stays, the lookup is `found`).

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fs::fastmap::FastSet;
use crate::fs::inode::{Inode, InodeRead};
use crate::fs::lockcheck::{LockClass, LockId, OrderedMutex};
use crate::fs::stats::{MountStats, Stat};

const SHARDS: usize = 64;

/// A cached inode as its shard's table holds it: found by its inode number, which the inode
/// itself carries. A map keyed by the number kept a second copy of it in every slot: 8 of
/// the 16 bytes per slot, ~13 bytes per cached inode at the table's usual load.
struct Cached(Arc<Inode>);

impl Borrow<u64> for Cached {
    fn borrow(&self) -> &u64 {
        &self.0.ino
    }
}

impl Hash for Cached {
    // As the `u64` it borrows as hashes: lookups by number find it.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.ino.hash(state);
    }
}

impl PartialEq for Cached {
    fn eq(&self, other: &Self) -> bool {
        self.0.ino == other.0.ino
    }
}

impl Eq for Cached {}

/// One shard of the cache.
type Shard = OrderedMutex<FastSet<Cached>>;

/// The mount's in-core inodes.
pub struct InodeCache {
    shards: Box<[Shard]>,
    /// Inodes in the cache (kept beside the shards so `iget` need not lock all of them to
    /// ask whether the cache is over its limit).
    count: AtomicUsize,
    /// Reclaim aims to keep the cache at or below this many.
    limit: usize,
    /// Reclaim starts when the cache grows past this: the limit, or more after a reclaim that
    /// could not get under it (everything held or dirty), so lookups do not sweep every time.
    sweep_at: AtomicUsize,
}

impl std::fmt::Debug for InodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InodeCache")
            .field("len", &self.len())
            .field("limit", &self.limit)
            .finish()
    }
}

/// What [`InodeCache::insert`] did.
pub enum Inserted {
    /// The inode went into a free slot (a new in-core inode).
    New(Arc<Inode>),
    /// The inode took the place of a freed one cached under its number (XFS's recycling of a
    /// reclaimable inode).
    Recycled(Arc<Inode>),
    /// Another thread inserted the same inode meanwhile: that one (`ig dup`).
    Existing(Arc<Inode>),
}

impl Inserted {
    /// The inode now cached.
    pub fn inode(self) -> Arc<Inode> {
        match self {
            Inserted::New(ip) | Inserted::Recycled(ip) | Inserted::Existing(ip) => ip,
        }
    }
}

/// Outcome of a cache lookup.
pub enum Lookup {
    /// In the cache.
    Found(Arc<Inode>),
    /// Not cached: the caller reads it and calls [`InodeCache::insert`].
    Missed,
}

impl InodeCache {
    /// A cache that starts reclaiming beyond `limit` inodes.
    pub fn new(limit: usize) -> InodeCache {
        InodeCache {
            shards: (0..SHARDS)
                .map(|_| {
                    OrderedMutex::new(LockId::new(LockClass::CacheShard, 0), FastSet::default())
                })
                .collect(),
            count: AtomicUsize::new(0),
            limit,
            sweep_at: AtomicUsize::new(limit),
        }
    }

    fn shard(&self, ino: u64) -> &Shard {
        let h = ino.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        &self.shards[h as usize % SHARDS]
    }

    /// Look up an inode (counts `ig attempts` and `found`/`missed`).
    pub fn lookup(&self, ino: u64, stats: &MountStats) -> Lookup {
        stats.inc(Stat::IgAttempts);
        match self.shard(ino).lock().get(&ino) {
            Some(Cached(ip)) => {
                stats.inc(Stat::IgFound);
                ip.referenced.store(true, Ordering::Relaxed);
                Lookup::Found(Arc::clone(ip))
            }
            None => {
                stats.inc(Stat::IgMissed);
                Lookup::Missed
            }
        }
    }

    /// The cached inode `ino`, if it is cached and not freed, without counting an `iget`:
    /// for a path walk that found the inode number in the dentry cache, as the kernel's
    /// dentry holds its inode and needs no `xfs_iget`.
    pub fn peek(&self, ino: u64) -> Option<Arc<Inode>> {
        let shard = self.shard(ino).lock();
        let Cached(ip) = shard.get(&ino)?;
        if ip.has_flag(crate::fs::inode::iflags::FREED) {
            return None;
        }
        ip.referenced.store(true, Ordering::Relaxed);
        Some(Arc::clone(ip))
    }

    /// The cached inode `ino` if it is cached and not freed, neither counted as an `iget`
    /// nor marked used (the AIL flushing a cluster's other inodes is no use of them).
    pub fn peek_quiet(&self, ino: u64) -> Option<Arc<Inode>> {
        let shard = self.shard(ino).lock();
        shard
            .get(&ino)
            .filter(|c| !c.0.has_flag(crate::fs::inode::iflags::FREED))
            .map(|c| Arc::clone(&c.0))
    }

    /// Insert a freshly read or allocated inode. If another thread inserted the same inode
    /// meanwhile, that one wins and is returned (`ig dup`).
    pub fn insert(&self, ip: Arc<Inode>, stats: &MountStats) -> Arc<Inode> {
        self.insert_counted(ip, stats).inode()
    }

    /// [`InodeCache::insert`], saying whether the inode was new, took a freed inode's place,
    /// or lost to another thread's.
    pub fn insert_counted(&self, ip: Arc<Inode>, stats: &MountStats) -> Inserted {
        let mut shard = self.shard(ip.ino).lock();
        if let Some(Cached(existing)) = shard.get(&ip.ino)
            && !existing.has_flag(crate::fs::inode::iflags::FREED)
        {
            stats.inc(Stat::IgDup);
            return Inserted::Existing(Arc::clone(existing));
        }
        let replaced = shard.replace(Cached(Arc::clone(&ip)));
        drop(shard);
        if replaced.is_some() {
            // A freed inode still cached under the number: this one is it, recycled.
            return Inserted::Recycled(ip);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        stats.inc(Stat::VnActive);
        Inserted::New(ip)
    }

    /// Count the eviction of `ip` from the cache.
    fn count_eviction(ip: &Inode, stats: &MountStats) {
        stats.dec(Stat::VnActive);
        stats.inc(Stat::IgReclaims);
        if !ip.has_flag(crate::fs::inode::iflags::FREED) {
            // A freed inode counted these when it was queued for inactivation.
            stats.inc(Stat::VnRele);
            stats.inc(Stat::VnRemove);
            stats.inc(Stat::VnReclaim);
        }
    }

    /// In-core inodes.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the cache has grown enough past its limit to reclaim.
    pub fn over_limit(&self) -> bool {
        self.len() > self.sweep_at.load(Ordering::Relaxed)
    }

    /// One CLOCK pass over every shard: evict clean, unheld inodes whose referenced bit is
    /// already clear; clear the bit on the others. Returns how many were evicted.
    pub fn sweep(&self, stats: &MountStats) -> usize {
        let mut evicted = 0;
        for shard in self.shards.iter() {
            let mut map = shard.lock();
            map.retain(|Cached(ip)| {
                if ip.has_flag(crate::fs::inode::iflags::NEED_INACTIVE) {
                    return true;
                }
                if Arc::strong_count(ip) != 1 || ip.referenced.swap(false, Ordering::Relaxed) {
                    return true;
                }
                let Some(core) = InodeRead::try_lock(Arc::clone(ip)) else {
                    return true;
                };
                let keep = ip.is_dirty() || core.ext.is_some() || core.opens > 0;
                if !keep {
                    evicted += 1;
                    Self::count_eviction(ip, stats);
                }
                keep
            });
        }
        self.count.fetch_sub(evicted, Ordering::Relaxed);
        evicted
    }

    /// Sweep until under the limit or nothing more can go.
    pub fn reclaim(&self, stats: &MountStats) {
        // Two passes evict everything evictable: the first clears referenced bits.
        for _ in 0..2 {
            if self.len() <= self.limit {
                break;
            }
            self.sweep(stats);
        }
        // What could not go stays; sweep again only after a sixteenth of the limit more.
        let next = self.len().max(self.limit) + (self.limit / 16).max(64);
        self.sweep_at.store(
            if self.len() <= self.limit {
                self.limit
            } else {
                next
            },
            Ordering::Relaxed,
        );
    }

    /// Every cached inode (for sync's walk of all inodes, and unmount).
    pub fn all(&self) -> Vec<Arc<Inode>> {
        let mut v = Vec::new();
        for s in self.shards.iter() {
            v.extend(s.lock().iter().map(|c| Arc::clone(&c.0)));
        }
        v
    }

    /// Visit every cached inode without collecting them (sync_wait=all walks this way).
    pub fn for_each(&self, mut f: impl FnMut(&Arc<Inode>)) {
        for s in self.shards.iter() {
            for c in s.lock().iter() {
                f(&c.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::inode::{InodeCore, InodeWrite};

    #[test]
    fn lookup_insert_and_dup() {
        let stats = MountStats::new();
        let c = InodeCache::new(10);
        assert!(matches!(c.lookup(7, &stats), Lookup::Missed));
        let a = c.insert(Arc::new(Inode::new(7, InodeCore::default())), &stats);
        let b = c.insert(Arc::new(Inode::new(7, InodeCore::default())), &stats);
        assert!(Arc::ptr_eq(&a, &b), "second insert returns the first inode");
        assert!(matches!(c.lookup(7, &stats), Lookup::Found(ip) if Arc::ptr_eq(&ip, &a)));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn reclaim_takes_only_clean_unheld_inodes() {
        let stats = MountStats::new();
        let c = InodeCache::new(0);
        for ino in 0..10 {
            c.insert(Arc::new(Inode::new(ino, InodeCore::default())), &stats);
        }
        let held = match c.lookup(3, &stats) {
            Lookup::Found(ip) => ip,
            Lookup::Missed => unreachable!(),
        };
        let dirty = match c.lookup(4, &stats) {
            Lookup::Found(ip) => ip,
            Lookup::Missed => unreachable!(),
        };
        InodeWrite::lock(Arc::clone(&dirty)).set_dirty(true);
        drop(dirty);
        c.reclaim(&stats);
        let mut left: Vec<u64> = c.all().iter().map(|ip| ip.ino).collect();
        left.sort();
        assert_eq!(left, vec![3, 4]);
        drop(held);
    }
}
