//! The lock order of `fs/mod.rs` as a type, checked every time a thread is about to wait.
//!
//! Every lock labfs takes belongs to a [`LockClass`]; the classes are declared in lock order,
//! so the order is the enum's `Ord`. Before a thread *waits* for a lock it calls [`wait`],
//! which compares the lock with every lock the thread already holds (a thread-local list) and
//! panics, naming both locks, if the new one comes earlier in the order than one held, or
//! breaks its class's rule among equals (ascending inode number for inode locks, ascending AG
//! for AG headers). A lock got without waiting (a try-lock that succeeded) cannot deadlock, so
//! it is only recorded ([`tried`]), as lockdep does for trylocks. The returned [`Held`] token
//! removes the record when the lock is released; it lives inside the guard.
//!
//! This is Fxfs's `LockKey` idea (the order is a type, not a comment) with lockdep's way of
//! checking it (per thread, at acquisition, naming both sides), and it catches an inversion
//! the first time the code path runs, not only when two threads happen to interleave: the
//! AGF-then-AGI inversion of issue 7 (inactivation freeing blocks and then the inode in one
//! transaction) hung fsmark in 4 runs of 10, and panics here on the first unlink of a file
//! with data.
//!
//! ## Owned locks
//! Tree and directory blocks are not ordered against the AG headers directly: like XFS, labfs
//! relies on their *owner* to serialise them. A free-space or inode B+tree block is only
//! touched with its AG's AGF or AGI held, the AGFL with its AGF held ([`Order::OwnedByAg`],
//! [`Order::OwnedByAgf`], both checked), and a directory or extent-map block with its inode's
//! ILOCK held ([`Order::OwnedByInode`]; the buffer does not name its inode, so this one is not
//! checked). Two threads can only contend for an owned block while both hold its owner, which
//! for writers is exclusive, so owned locks take their owner's place in the order and are
//! otherwise transparent (they are not even recorded). Readers share an ILOCK and walk a tree
//! from the root down, which the cursor code guarantees. A thread that holds nothing may wait
//! for any lock: it cannot close a cycle (write-back locks each dirty buffer that way).
//!
//! ## Cost, and why it is a cargo feature
//! The check is one thread-local access for the most frequent locks (tree and directory
//! blocks, whose owner already orders them, and the leaf locks) and a scan of the few ranked
//! locks a thread holds for the others. Still, a create or an unlink takes a couple of hundred
//! locks, and `scripts/lockcheck_cost.sh` (fsmark `-S0 -s 0`, 50,000 files, built with and
//! without the checker, run alternately) measured the checker at about a tenth of the CPU time:
//! 1.10 s against 0.98 s per run (median of 9, ratio 0.89; perf puts 4-5% of the cycles in
//! the checker's own functions). That is too much to charge every release binary, whose
//! figures are compared against tmpfs and XFS, so the check is:
//! - always on in debug builds (`debug_assertions`), which covers `cargo test`;
//! - on in release builds with the `lockcheck` feature, which the documented test command
//!   turns on: `cargo test --release --features lockcheck`. Integration tests link the library
//!   built without `cfg(test)` and without debug assertions, and a package cannot enable its
//!   own feature for its tests only, so the feature is the switch; `tests/lock_order.rs` fails
//!   when the tests run without it, so a test command that forgets it does not pass silently.
//!
//! ## Adding a class
//! Add a variant where it falls in the order (the journal's CIL context, iclog state and AIL
//! locks go between [`LockClass::LogBlock`] and [`LockClass::CacheShard`]: a commit
//! inserts into the CIL while it still holds its buffers and inodes, and the AIL pusher only
//! *tries* buffer and inode locks), give it a name and an [`Order`] in [`LockClass::name`] and
//! [`LockClass::order`], call [`wait`]/[`tried`] where the lock is taken and keep the token in
//! the guard, and update the list at the top of `fs/mod.rs`.

use std::fmt;

/// A kind of lock, declared in lock order: a thread may wait for a lock only when every lock
/// it holds comes before it (or is an owned lock, see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockClass {
    /// The mount's cross-directory rename mutex (Linux's `s_vfs_rename_mutex`), taken before
    /// any inode of the rename.
    RenameSerial,
    /// Waiting for log space ([`crate::fs::log::Log::reserve`], XFS's `xfs_trans_alloc`): a
    /// transaction reserves before it locks anything, because space comes back only when
    /// the AIL writes items home, and the AIL only *tries* the locks of the inodes and
    /// buffers it writes. A thread that waits for space holding an ILOCK, an AG header or a
    /// buffer can be holding the very item at the log's tail: nothing moves the tail, and
    /// every reservation waits for ever. Not a lock one holds: the record lasts the wait.
    LogSpace,
    /// An inode's ILOCK, shared or exclusive; several in ascending inode number.
    Ilock,
    /// An AG's AGI buffer (inode allocation); several in ascending AG.
    Agi,
    /// An AG's AGF buffer (block allocation); several in ascending AG.
    Agf,
    /// An AG's AGFL buffer: only with the same AG's AGF held.
    Agfl,
    /// A superblock sector (mkfs and unmount write every AG's copy); ascending AG.
    Superblock,
    /// A block of an AG's free-space or inode B+trees: only with that AG's AGF or AGI held.
    AgTreeBlock,
    /// A directory, symlink or extent-map block: only with its inode's ILOCK held.
    InodeBlock,
    /// An inode cluster buffer (32 on-disk inodes); several in ascending disk address.
    InodeCluster,
    /// A block of the log region got through the buffer cache; several in ascending disk
    /// address. (The journal's own locks are to be added beside it.)
    LogBlock,
    /// The journal's checkpoint mutex: one CIL push (formatting a checkpoint into iclogs)
    /// at a time. Taken holding buffers and inodes (a forced push from a transaction), never
    /// held while waiting for a buffer or inode.
    LogPush,
    /// The CIL's current context (items committed since the last checkpoint): held briefly.
    LogCil,
    /// The iclog ring's state; waits on its condition variable release it.
    LogIclog,
    /// The AIL's index of items by LSN: held briefly.
    LogAil,
    /// The log-space grant heads: held briefly; waits for space release it.
    LogGrant,
    /// A shard of the buffer or inode cache index: held briefly, never while waiting.
    CacheShard,
    /// A list lock (dirty buffers, dirty inodes, the writeback list, ...): held briefly,
    /// never while waiting.
    List,
}

/// How locks of one class order among themselves, or whose lock covers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// At most one at a time.
    Single,
    /// Several, in ascending key.
    Ascending,
    /// Covered by the AGF or AGI of the AG its key names.
    OwnedByAg,
    /// Covered by the AGF of the AG its key names.
    OwnedByAgf,
    /// Covered by its inode's ILOCK (not checked: the buffer does not name its inode).
    OwnedByInode,
}

impl LockClass {
    /// What the lock is, for messages.
    pub fn name(self) -> &'static str {
        match self {
            LockClass::RenameSerial => "the rename mutex",
            LockClass::LogSpace => "log space",
            LockClass::Ilock => "ILOCK",
            LockClass::Agi => "AGI",
            LockClass::Agf => "AGF",
            LockClass::Agfl => "AGFL",
            LockClass::Superblock => "superblock",
            LockClass::AgTreeBlock => "AG B+tree block",
            LockClass::InodeBlock => "directory/extent-map block",
            LockClass::InodeCluster => "inode cluster buffer",
            LockClass::LogBlock => "log block",
            LockClass::LogPush => "the CIL push mutex",
            LockClass::LogCil => "the CIL context",
            LockClass::LogIclog => "the iclog ring",
            LockClass::LogAil => "the AIL",
            LockClass::LogGrant => "the log grant heads",
            LockClass::CacheShard => "cache shard",
            LockClass::List => "list lock",
        }
    }

    /// The class's rule among locks of the same class.
    pub fn order(self) -> Order {
        match self {
            LockClass::RenameSerial
            | LockClass::LogSpace
            | LockClass::CacheShard
            | LockClass::List
            | LockClass::LogPush
            | LockClass::LogCil
            | LockClass::LogIclog
            | LockClass::LogAil
            | LockClass::LogGrant => Order::Single,
            LockClass::Ilock
            | LockClass::Agi
            | LockClass::Agf
            | LockClass::Superblock
            | LockClass::InodeCluster
            | LockClass::LogBlock => Order::Ascending,
            LockClass::Agfl => Order::OwnedByAgf,
            LockClass::AgTreeBlock => Order::OwnedByAg,
            LockClass::InodeBlock => Order::OwnedByInode,
        }
    }

    /// Whether the class is a leaf: held briefly, never while waiting for anything.
    pub fn is_leaf(self) -> bool {
        matches!(self, LockClass::CacheShard | LockClass::List)
    }

    /// Whether the class takes its owner's place in the order.
    pub fn is_owned(self) -> bool {
        matches!(
            self.order(),
            Order::OwnedByAg | Order::OwnedByAgf | Order::OwnedByInode
        )
    }

    /// What the key of this class counts, for messages.
    fn key_name(self) -> &'static str {
        match self {
            LockClass::Ilock => "inode",
            LockClass::Agi
            | LockClass::Agf
            | LockClass::Agfl
            | LockClass::Superblock
            | LockClass::AgTreeBlock => "AG",
            LockClass::InodeBlock | LockClass::InodeCluster | LockClass::LogBlock => "daddr",
            LockClass::RenameSerial
            | LockClass::LogSpace
            | LockClass::CacheShard
            | LockClass::List
            | LockClass::LogPush
            | LockClass::LogCil
            | LockClass::LogIclog
            | LockClass::LogAil
            | LockClass::LogGrant => "",
        }
    }
}

/// One lock: its class and which one of the class (inode number, AG number or disk address,
/// as [`LockClass`] says; 0 for classes with one lock per thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockId {
    /// The class.
    pub class: LockClass,
    /// Which lock of the class.
    pub key: u64,
}

impl LockId {
    /// The lock `key` of `class`.
    pub const fn new(class: LockClass, key: u64) -> LockId {
        LockId { class, key }
    }
}

impl fmt::Display for LockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class.key_name() {
            "" => f.write_str(self.class.name()),
            k => write!(f, "{} of {k} {}", self.class.name(), self.key),
        }
    }
}

/// Why waiting for `new` could deadlock, given the locks `held` (`None` when it cannot).
/// `held` lists every lock the thread holds; the checker itself leaves owned locks out of
/// its record, since no rule looks at them.
pub fn violation(new: LockId, held: &[LockId]) -> Option<String> {
    // A thread that holds nothing cannot close a cycle by waiting (write-back locks each
    // dirty buffer this way, owned or not).
    if held.is_empty() {
        return None;
    }
    // Leaf locks are held briefly and never while waiting for anything, even another leaf.
    if let Some(h) = held.iter().find(|h| h.class.is_leaf()) {
        return Some(format!("waiting for {new} while holding {h}"));
    }
    order_violation(new, held)
}

/// [`violation`] for a thread holding no leaf lock: the order and ownership rules.
fn order_violation(new: LockId, held: &[LockId]) -> Option<String> {
    match new.class.order() {
        Order::OwnedByAg | Order::OwnedByAgf => {
            let owner = |h: &&LockId| {
                h.key == new.key
                    && (h.class == LockClass::Agf
                        || (new.class.order() == Order::OwnedByAg && h.class == LockClass::Agi))
            };
            if !held.iter().any(|h| owner(&h)) {
                let who = if new.class.order() == Order::OwnedByAg {
                    "AGF or AGI"
                } else {
                    "AGF"
                };
                return Some(format!(
                    "waiting for {new} without holding its AG's {who} (held: {})",
                    list(held)
                ));
            }
            None
        }
        Order::OwnedByInode => None,
        Order::Single | Order::Ascending => held
            .iter()
            .filter(|h| !h.class.is_owned())
            .find(|h| {
                h.class > new.class
                    || (h.class == new.class
                        && (new.class.order() == Order::Single || h.key >= new.key))
            })
            .map(|h| format!("waiting for {new} while holding {h}")),
    }
}

fn list(held: &[LockId]) -> String {
    if held.is_empty() {
        return "nothing".into();
    }
    held.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(any(debug_assertions, feature = "lockcheck"))]
mod imp {
    use std::cell::{Cell, RefCell};
    use std::marker::PhantomData;

    use super::{LockId, Order, order_violation};

    /// What this thread holds: the leaf lock, if any (leaves never nest, so one slot and a
    /// cheap check, for the most frequent locks), and the other locks.
    struct State {
        leaf: Cell<Option<LockId>>,
        held: RefCell<Vec<LockId>>,
    }

    thread_local! {
        static STATE: State = const {
            State {
                leaf: Cell::new(None),
                held: RefCell::new(Vec::new()),
            }
        };
    }

    /// A lock this thread holds, recorded until the token is dropped (with the lock).
    /// Not `Send`: the record is per thread, so the lock must be released where it was taken.
    #[derive(Debug)]
    #[must_use = "the record lasts as long as the token"]
    pub struct Held {
        /// The lock, if it was recorded: owned locks are not, since no rule looks at them
        /// once they are held (they are transparent and own nothing).
        id: Option<LockId>,
        _per_thread: PhantomData<*const ()>,
    }

    impl Drop for Held {
        fn drop(&mut self) {
            let Some(id) = self.id else { return };
            // During thread teardown the state may already be gone; nothing to keep then.
            let _ = STATE.try_with(|s| {
                if id.class.is_leaf() {
                    s.leaf.set(None);
                    return;
                }
                let mut h = s.held.borrow_mut();
                if let Some(i) = h.iter().rposition(|x| *x == id) {
                    h.swap_remove(i);
                }
            });
        }
    }

    /// Record `id` as held, first checking the wait for it if `check`; the reason if the
    /// wait is against the order (then nothing is recorded).
    fn take(id: LockId, check: bool) -> Result<Held, String> {
        let recorded = Held {
            id: Some(id),
            _per_thread: PhantomData,
        };
        let unrecorded = Held {
            id: None,
            _per_thread: PhantomData,
        };
        let outcome = STATE.try_with(|s| {
            if let Some(leaf) = s.leaf.get()
                && check
            {
                return Err(format!("waiting for {id} while holding {leaf}"));
            }
            if id.class.is_leaf() {
                s.leaf.set(Some(id));
                return Ok(true);
            }
            let owned = id.class.is_owned();
            if owned && (!check || id.class.order() == Order::OwnedByInode) {
                // Nothing to check and nothing to remember: the common case (tree and
                // directory blocks) costs one thread-local access.
                return Ok(false);
            }
            let mut h = s.held.borrow_mut();
            if check
                && !h.is_empty()
                && let Some(why) = order_violation(id, &h)
            {
                return Err(why);
            }
            if !owned {
                h.push(id);
            }
            Ok(!owned)
        });
        match outcome {
            Ok(Ok(true)) => Ok(recorded),
            Ok(Ok(false)) | Err(_) => Ok(unrecorded),
            Ok(Err(why)) => Err(why),
        }
    }

    /// About to wait for `id`: panic if that is against the lock order, else record it.
    #[track_caller]
    pub fn wait(id: LockId) -> Held {
        match take(id, true) {
            Ok(held) => held,
            Err(why) => panic!("lock order violation: {why} (see the lock order in fs/mod.rs)"),
        }
    }

    /// Got `id` without waiting (a try-lock): record it only.
    pub fn tried(id: LockId) -> Held {
        take(id, false).unwrap_or(Held {
            id: None,
            _per_thread: PhantomData,
        })
    }

    /// The locks this thread holds now (for tests and diagnostics).
    pub fn held() -> Vec<LockId> {
        STATE
            .try_with(|s| {
                let mut v = s.held.borrow().clone();
                v.extend(s.leaf.get());
                v
            })
            .unwrap_or_default()
    }

    /// Whether the checker is compiled in.
    pub fn enabled() -> bool {
        true
    }
}

#[cfg(not(any(debug_assertions, feature = "lockcheck")))]
mod imp {
    use std::marker::PhantomData;

    use super::LockId;

    /// Without the checker, a zero-sized stand-in (still not `Send`, so code that compiles
    /// without the checker compiles with it).
    #[derive(Debug)]
    pub struct Held {
        _per_thread: PhantomData<*const ()>,
    }

    /// About to wait for a lock (nothing is checked in this build).
    #[inline(always)]
    pub fn wait(_id: LockId) -> Held {
        Held {
            _per_thread: PhantomData,
        }
    }

    /// Got a lock without waiting (nothing is recorded in this build).
    #[inline(always)]
    pub fn tried(_id: LockId) -> Held {
        Held {
            _per_thread: PhantomData,
        }
    }

    /// The locks this thread holds (always empty in this build).
    pub fn held() -> Vec<LockId> {
        Vec::new()
    }

    /// Whether the checker is compiled in.
    pub fn enabled() -> bool {
        false
    }
}

pub use imp::{Held, enabled, held, tried, wait};

/// A mutex that is one lock of the order (a cache shard, a list, the rename mutex): every
/// `lock` is checked and recorded like any other lock.
pub struct OrderedMutex<T> {
    id: LockId,
    inner: parking_lot::Mutex<T>,
}

impl<T> OrderedMutex<T> {
    /// A mutex that is lock `id`.
    pub const fn new(id: LockId, value: T) -> OrderedMutex<T> {
        OrderedMutex {
            id,
            inner: parking_lot::Mutex::new(value),
        }
    }

    /// Lock it, waiting if needed.
    #[track_caller]
    pub fn lock(&self) -> OrderedGuard<'_, T> {
        let held = wait(self.id);
        OrderedGuard {
            guard: self.inner.lock(),
            _held: held,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for OrderedMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrderedMutex")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// An [`OrderedMutex`] held.
pub struct OrderedGuard<'a, T> {
    guard: parking_lot::MutexGuard<'a, T>,
    _held: Held,
}

impl<T> std::ops::Deref for OrderedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> std::ops::DerefMut for OrderedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> OrderedGuard<'_, T> {
    /// Wait on `cv`, releasing the mutex meanwhile. The lock stays in the thread's record: a
    /// waiter takes nothing else until it wakes holding the mutex again.
    pub fn wait(&mut self, cv: &parking_lot::Condvar) {
        cv.wait(&mut self.guard);
    }

    /// Run `f` with the mutex released (slow work such as device I/O), taking it back after.
    pub fn unlocked<R>(this: &mut Self, f: impl FnOnce() -> R) -> R {
        parking_lot::MutexGuard::unlocked(&mut this.guard, f)
    }

    /// [`OrderedGuard::wait`] for at most `timeout`; returns whether it timed out.
    pub fn wait_for(&mut self, cv: &parking_lot::Condvar, timeout: std::time::Duration) -> bool {
        cv.wait_for(&mut self.guard, timeout).timed_out()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(class: LockClass, key: u64) -> LockId {
        LockId::new(class, key)
    }

    #[test]
    fn the_order_is_the_declaration_order() {
        assert!(LockClass::RenameSerial < LockClass::Ilock);
        assert!(LockClass::Ilock < LockClass::Agi);
        assert!(LockClass::Agi < LockClass::Agf);
        assert!(LockClass::Agf < LockClass::InodeCluster);
        assert!(LockClass::InodeCluster < LockClass::CacheShard);
    }

    #[test]
    fn an_agi_after_an_agf_is_a_violation_naming_both() {
        let why = violation(id(LockClass::Agi, 0), &[id(LockClass::Agf, 0)]).unwrap();
        assert!(
            why.contains("AGI of AG 0") && why.contains("AGF of AG 0"),
            "{why}"
        );
        assert_eq!(
            violation(id(LockClass::Agf, 0), &[id(LockClass::Agi, 0)]),
            None
        );
    }

    #[test]
    fn log_space_is_waited_for_before_any_lock_but_the_rename_mutex() {
        let space = id(LockClass::LogSpace, 0);
        assert!(LockClass::RenameSerial < LockClass::LogSpace);
        assert!(LockClass::LogSpace < LockClass::Ilock);
        assert_eq!(violation(space, &[]), None);
        assert_eq!(violation(space, &[id(LockClass::RenameSerial, 0)]), None);
        let why = violation(space, &[id(LockClass::Ilock, 42)]).unwrap();
        assert!(
            why.contains("waiting for log space") && why.contains("ILOCK of inode 42"),
            "{why}"
        );
        for held in [
            id(LockClass::Agi, 1),
            id(LockClass::Agf, 1),
            id(LockClass::InodeCluster, 64),
            id(LockClass::LogBlock, 8),
            id(LockClass::List, 0),
        ] {
            assert!(violation(space, &[held]).is_some(), "{held}");
        }
        // A transaction that has its space may then lock anything.
        assert_eq!(violation(id(LockClass::Ilock, 42), &[space]), None);
    }

    #[test]
    fn same_class_locks_must_ascend() {
        let held = [id(LockClass::Ilock, 10)];
        assert_eq!(violation(id(LockClass::Ilock, 11), &held), None);
        let why = violation(id(LockClass::Ilock, 9), &held).unwrap();
        assert!(why.contains("inode 9") && why.contains("inode 10"), "{why}");
        // Waiting for a lock already held deadlocks on itself.
        assert!(violation(id(LockClass::Ilock, 10), &held).is_some());
        assert!(violation(id(LockClass::Agf, 1), &[id(LockClass::Agf, 2)]).is_some());
        assert_eq!(
            violation(id(LockClass::Agf, 2), &[id(LockClass::Agf, 1)]),
            None
        );
    }

    #[test]
    fn owned_blocks_need_their_owner_and_are_otherwise_transparent() {
        let tree = id(LockClass::AgTreeBlock, 3);
        assert!(
            violation(tree, &[id(LockClass::Ilock, 7)])
                .unwrap()
                .contains("without holding")
        );
        // Holding nothing, a thread cannot close a cycle: write-back locks buffers this way.
        assert_eq!(violation(tree, &[]), None);
        assert_eq!(violation(tree, &[id(LockClass::Agi, 3)]), None);
        assert!(violation(tree, &[id(LockClass::Agi, 2)]).is_some());
        let agfl = id(LockClass::Agfl, 1);
        assert!(violation(agfl, &[id(LockClass::Agi, 1)]).is_some());
        assert_eq!(violation(agfl, &[id(LockClass::Agf, 1)]), None);
        // Holding an owned block does not stop a later AGF, although it ranks after AGFs.
        assert_eq!(
            violation(
                id(LockClass::Agf, 1),
                &[id(LockClass::Ilock, 5), id(LockClass::InodeBlock, 800)]
            ),
            None
        );
    }

    #[test]
    fn nothing_is_waited_for_under_a_leaf_lock() {
        let held = [id(LockClass::CacheShard, 0)];
        assert!(violation(id(LockClass::List, 0), &held).is_some());
        assert!(violation(id(LockClass::InodeBlock, 8), &held).is_some());
        assert!(violation(id(LockClass::Ilock, 8), &held).is_some());
        assert_eq!(
            violation(id(LockClass::CacheShard, 0), &[id(LockClass::Agf, 0)]),
            None
        );
    }

    #[test]
    #[cfg_attr(
        not(any(debug_assertions, feature = "lockcheck")),
        ignore = "the lock-order checker is not compiled into this build"
    )]
    // Without the checker `Held` is an empty token with no Drop; the drops below are the
    // releases under test when it is compiled in.
    #[allow(clippy::drop_non_drop)]
    fn tokens_record_and_release_per_thread() {
        let a = wait(id(LockClass::Ilock, 1));
        let b = tried(id(LockClass::Ilock, 0));
        assert_eq!(held().len(), 2);
        drop(a);
        assert_eq!(held(), vec![id(LockClass::Ilock, 0)]);
        drop(b);
        assert!(held().is_empty());
        std::thread::spawn(|| assert!(held().is_empty()))
            .join()
            .unwrap();
    }

    #[test]
    #[cfg_attr(
        not(any(debug_assertions, feature = "lockcheck")),
        ignore = "the lock-order checker is not compiled into this build"
    )]
    fn waiting_out_of_order_panics_with_both_names() {
        let r = std::thread::spawn(|| {
            let _agf = wait(id(LockClass::Agf, 2));
            let _agi = wait(id(LockClass::Agi, 2));
        })
        .join();
        let msg = r.unwrap_err();
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("lock order violation")
                && msg.contains("AGI of AG 2")
                && msg.contains("AGF of AG 2"),
            "{msg}"
        );
    }
}
