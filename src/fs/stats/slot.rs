//! Thread slots: which counter shard a thread may bump without an atomic read-modify-write.
//!
//! A thread takes a slot number the first time it bumps a counter and gives it back when it
//! exits; the lowest free number is handed out first, so slot numbers stay below the most
//! threads ever alive at once. While a thread holds a slot, no other live thread has it: the
//! shard of that number in every [`XfsStats`](super::XfsStats) is written by that thread
//! alone, and a plain load and store is a correct add (readers only load). A thread that
//! exits leaves its counts in the shard for the next holder to add to.

use std::sync::Mutex;

/// Slot numbers handed out and given back.
struct Pool {
    /// Numbers below this have been handed out at least once.
    next: usize,
    /// Numbers given back by threads that exited, reused lowest first.
    free: Vec<usize>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    next: 0,
    free: Vec::new(),
});

/// A slot held by the current thread until it exits.
struct Lease(usize);

impl Lease {
    fn take() -> Lease {
        // A counter bump never panics while holding the pool, so poison is only another
        // thread's unrelated panic: the pool's state is still whole.
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match pool.free.iter().enumerate().min_by_key(|&(_, &s)| s) {
            Some((i, _)) => pool.free.swap_remove(i),
            None => {
                pool.next += 1;
                pool.next - 1
            }
        };
        Lease(slot)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.free.push(self.0);
    }
}

thread_local! {
    static LEASE: Lease = Lease::take();
}

/// The current thread's slot, exclusively its own while it lives; `None` while the thread is
/// being torn down (its slot may already be back in the pool, so its bumps must be shared).
pub(super) fn current() -> Option<usize> {
    LEASE.try_with(|l| l.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn threads_alive_at_once_hold_different_slots() {
        const THREADS: usize = 8;
        let all_alive = Arc::new(Barrier::new(THREADS + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let all_alive = Arc::clone(&all_alive);
                std::thread::spawn(move || {
                    let slot = current().unwrap();
                    // Nobody exits (giving a slot back) before every slot has been taken.
                    all_alive.wait();
                    slot
                })
            })
            .collect();
        let mine = current().unwrap();
        all_alive.wait();
        let mut slots: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        slots.push(mine);
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), THREADS + 1, "two live threads shared a slot");
    }
}
