//! A CLOCK (second-chance) ring: a keyed set whose eviction costs O(1) amortised steps.
//!
//! The buffer cache keeps one per index shard ([`crate::fs::buf`]). Each entry has a
//! *referenced* bit, set when the entry is looked up. The hand walks the ring: a referenced
//! entry has its bit cleared and is passed over (its second chance); an unreferenced one is
//! offered to the caller, who says whether it may go (clean and unheld) and how many bytes
//! that frees. An entry that may not go (dirty or held) is passed over without losing
//! anything. So an entry is examined at most twice per eviction it survives, and finding
//! victims never rescans the whole set the way a `retain` over the map did.
//!
//! The ring is a `Vec` of slots plus a key → slot index; removal swaps the last slot into
//! the hole (O(1), one index update), and insertion puts the new entry just behind the hand,
//! so it is the last one the hand reaches, as CLOCK prescribes.

use crate::fs::fastmap::FastMap;

struct Slot<V> {
    key: u64,
    value: V,
    referenced: bool,
}

/// A set of values keyed by `u64`, in CLOCK order.
pub struct Clock<V> {
    index: FastMap<u64, usize>,
    slots: Vec<Slot<V>>,
    /// The next slot the hand examines (always `< slots.len()` unless the ring is empty).
    hand: usize,
}

/// What a [`Clock::sweep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Slots the hand examined.
    pub steps: u64,
    /// Entries evicted.
    pub evicted: u64,
    /// Bytes the evicted entries held, as the caller's verdicts said.
    pub freed: u64,
}

impl<V> Default for Clock<V> {
    fn default() -> Self {
        Clock {
            index: FastMap::default(),
            slots: Vec::new(),
            hand: 0,
        }
    }
}

impl<V> Clock<V> {
    /// An empty ring.
    pub fn new() -> Clock<V> {
        Clock::default()
    }

    /// Entries in the ring.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Look `key` up and mark it referenced (a use: it survives the hand's next pass).
    pub fn touch(&mut self, key: u64) -> Option<&V> {
        let &i = self.index.get(&key)?;
        let slot = &mut self.slots[i];
        slot.referenced = true;
        Some(&slot.value)
    }

    /// Look `key` up without counting it as a use.
    pub fn peek(&self, key: u64) -> Option<&V> {
        self.index.get(&key).map(|&i| &self.slots[i].value)
    }

    /// Add `value` under `key` (which must not be present), referenced, just behind the hand.
    pub fn insert(&mut self, key: u64, value: V) {
        debug_assert!(!self.index.contains_key(&key), "key {key} inserted twice");
        let new = self.slots.len();
        self.slots.push(Slot {
            key,
            value,
            referenced: true,
        });
        self.index.insert(key, new);
        if new > 0 {
            // Swap it into the hand's place and step the hand past it: the entry that was
            // next moves to the end of this lap, the new one is reached last.
            let at = self.hand;
            self.slots.swap(at, new);
            self.index.insert(key, at);
            self.index.insert(self.slots[new].key, new);
            self.hand = (at + 1) % self.slots.len();
        }
    }

    /// Remove `key`, returning its value.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        let i = self.index.remove(&key)?;
        Some(self.take_slot(i))
    }

    /// Remove the slot at `i` (its index entry already gone), filling the hole with the last.
    fn take_slot(&mut self, i: usize) -> V {
        let slot = self.slots.swap_remove(i);
        if i < self.slots.len() {
            self.index.insert(self.slots[i].key, i);
        }
        if self.hand >= self.slots.len() {
            self.hand = 0;
        }
        slot.value
    }

    /// Advance the hand at most `max_steps` slots, evicting entries until `want` bytes are
    /// freed. `verdict` is asked about each unreferenced entry: `Some(bytes)` evicts it
    /// (dropping the value), `None` keeps it (dirty or in use).
    pub fn sweep(
        &mut self,
        max_steps: u64,
        want: u64,
        mut verdict: impl FnMut(&V) -> Option<u64>,
    ) -> Sweep {
        let mut done = Sweep::default();
        while done.steps < max_steps && done.freed < want && !self.slots.is_empty() {
            done.steps += 1;
            let i = self.hand;
            let slot = &mut self.slots[i];
            if slot.referenced {
                slot.referenced = false;
            } else if let Some(bytes) = verdict(&slot.value) {
                let key = slot.key;
                self.index.remove(&key);
                // The last slot fills the hole and is examined next: the hand stays put.
                drop(self.take_slot(i));
                done.evicted += 1;
                done.freed += bytes;
                continue;
            }
            self.hand = (i + 1) % self.slots.len();
        }
        done
    }

    /// Keep only the entries `keep` accepts (a full pass, for unmount and tests).
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        let mut i = 0;
        while i < self.slots.len() {
            if keep(&self.slots[i].value) {
                i += 1;
            } else {
                let key = self.slots[i].key;
                self.index.remove(&key);
                drop(self.take_slot(i));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: u64) -> Clock<u64> {
        let mut c = Clock::new();
        for k in 0..n {
            c.insert(k, k);
        }
        c
    }

    fn consistent(c: &Clock<u64>) {
        assert_eq!(c.index.len(), c.slots.len());
        for (k, &i) in &c.index {
            assert_eq!(c.slots[i].key, *k);
            assert_eq!(c.slots[i].value, *k);
        }
        assert!(c.slots.is_empty() || c.hand < c.slots.len());
    }

    #[test]
    fn insert_remove_and_lookup_keep_the_index_consistent() {
        let mut c = ring(100);
        consistent(&c);
        for k in (0..100).step_by(3) {
            assert_eq!(c.remove(k), Some(k));
            consistent(&c);
        }
        assert_eq!(c.remove(0), None);
        assert_eq!(c.peek(1), Some(&1));
        assert_eq!(c.touch(2), Some(&2));
        assert_eq!(c.len(), 66);
    }

    #[test]
    fn a_referenced_entry_gets_a_second_chance() {
        let mut c = ring(4);
        // Every new entry is referenced: the first lap only clears bits.
        let s = c.sweep(4, u64::MAX, |_| Some(1));
        assert_eq!((s.steps, s.evicted), (4, 0));
        c.touch(2);
        let mut gone = Vec::new();
        c.sweep(u64::MAX, 3, |&v| {
            gone.push(v);
            Some(1)
        });
        consistent(&c);
        assert!(!gone.contains(&2), "{gone:?}");
        assert_eq!(c.len(), 1);
        assert_eq!(c.peek(2), Some(&2));
    }

    #[test]
    fn kept_entries_are_passed_over_and_the_sweep_stops_at_its_budget() {
        let mut c = ring(10);
        let s = c.sweep(1000, u64::MAX, |&v| (v % 2 == 0).then_some(1));
        consistent(&c);
        assert_eq!(s.evicted, 5);
        assert!(s.steps <= 1000);
        // Only odd keys left, all refused: the sweep ends at its budget, not in a loop.
        let s = c.sweep(7, u64::MAX, |&v| (v % 2 == 0).then_some(1));
        assert_eq!((s.steps, s.evicted), (7, 0));
        c.retain(|&v| v > 5);
        consistent(&c);
        assert_eq!(c.len(), 2);
    }
}
