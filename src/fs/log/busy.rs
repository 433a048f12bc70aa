//! Busy extents: blocks freed by a checkpoint that is not yet stable on the log (XFS's
//! `xfs_extent_busy`). Writing data into such blocks before the free is stable would let a
//! crash bring back the old owner's mapping over the new owner's data, so an allocation that
//! lands on them forces the log first.
//!
//! Kept as non-overlapping ranges in a map ordered by first block (an overlap query walks
//! only the ranges that can touch it) plus a queue in the order ranges were added, so ranges
//! whose checkpoint became stable leave in amortised O(1) each. Before, one vector was
//! rescanned on every free and every allocation: quadratic in an unlink storm with no forces.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};

/// One busy range as the map holds it (keyed by its first block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Busy {
    /// The block after the range's last.
    end: u64,
    /// Checkpoint sequence whose stability frees the range.
    seq: u64,
}

/// The set of busy extents of one log.
#[derive(Debug, Default)]
pub(crate) struct BusyExtents {
    /// First block → range, non-overlapping.
    ranges: BTreeMap<u64, Busy>,
    /// (first block, sequence) in the order ranges went in: the expiry queue. An entry whose
    /// range has since been merged into another is skipped when it reaches the front.
    order: VecDeque<(u64, u64)>,
}

impl BusyExtents {
    /// Drop every range whose checkpoint sequence is at or below `stable`.
    ///
    /// Sequences go in nearly in order (commits of one CIL context share one), so the queue's
    /// front is the oldest; an out-of-order entry only waits behind an older one, which is
    /// safe because queries also compare sequences against `stable`.
    pub(crate) fn expire(&mut self, stable: u64) {
        while let Some(&(start, seq)) = self.order.front() {
            if seq > stable {
                break;
            }
            self.order.pop_front();
            if let Entry::Occupied(e) = self.ranges.entry(start)
                && e.get().seq == seq
            {
                e.remove();
            }
        }
    }

    /// Mark `start..start+len` busy until checkpoint `seq` is stable. Ranges it overlaps are
    /// merged into one that lasts until the latest of their sequences: forcing further than
    /// one block needs is safe, forcing less is not. (Overlaps are rare: a block is freed
    /// again while busy only if it was reused as metadata, which needs no force.)
    pub(crate) fn insert(&mut self, start: u64, len: u32, seq: u64) {
        if len == 0 {
            return;
        }
        let mut merged = Busy {
            end: start + u64::from(len),
            seq,
        };
        let mut first = start;
        // Ranges do not overlap, so the ones this overlaps are the last few that begin
        // before its end; each one merged can only move `first` down past ranges that end
        // at or before it.
        while let Some((&s, &b)) = self.ranges.range(..merged.end).next_back()
            && b.end > first
        {
            self.ranges.remove(&s);
            first = first.min(s);
            merged.end = merged.end.max(b.end);
            merged.seq = merged.seq.max(b.seq);
        }
        self.ranges.insert(first, merged);
        self.order.push_back((first, merged.seq));
    }

    /// The latest checkpoint sequence above `stable` that freed any block of
    /// `start..start+len`, if any: the sequence the log must be forced to before the blocks
    /// may hold new data.
    pub(crate) fn needs(&self, start: u64, len: u32, stable: u64) -> Option<u64> {
        self.ranges
            .range(..start + u64::from(len))
            .rev()
            .take_while(|(_, b)| b.end > start)
            .map(|(_, b)| b.seq)
            .filter(|&seq| seq > stable)
            .max()
    }

    /// Ranges held (merged), for tests.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ranges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_is_busy_until_its_checkpoint_is_stable() {
        let mut b = BusyExtents::default();
        b.insert(100, 8, 5);
        assert_eq!(b.needs(104, 1, 4), Some(5));
        assert_eq!(b.needs(100, 8, 5), None, "stable at 5: nothing to force");
        assert_eq!(b.needs(108, 4, 0), None, "the block after the range");
        assert_eq!(b.needs(96, 4, 0), None, "the blocks before it");
        assert_eq!(
            b.needs(96, 5, 0),
            Some(5),
            "the query's last block is the range's first"
        );
        b.expire(5);
        assert_eq!(b.len(), 0);
        assert_eq!(b.needs(100, 8, 0), None);
    }

    #[test]
    fn a_query_spanning_several_ranges_gets_the_latest_sequence() {
        let mut b = BusyExtents::default();
        b.insert(10, 2, 3);
        b.insert(20, 2, 7);
        b.insert(30, 2, 4);
        assert_eq!(b.needs(0, 40, 0), Some(7));
        assert_eq!(b.needs(0, 40, 6), Some(7));
        assert_eq!(b.needs(0, 15, 0), Some(3));
        assert_eq!(b.needs(25, 15, 3), Some(4));
        assert_eq!(b.needs(25, 15, 4), None);
    }

    #[test]
    fn overlapping_frees_merge_and_keep_the_latest_sequence() {
        let mut b = BusyExtents::default();
        b.insert(10, 10, 2);
        b.insert(15, 10, 6);
        b.insert(25, 5, 3);
        assert_eq!(b.len(), 2, "the range that only touches stays apart");
        assert_eq!(b.needs(10, 1, 0), Some(6));
        assert_eq!(b.needs(24, 1, 0), Some(6));
        assert_eq!(b.needs(29, 1, 0), Some(3));
        // The merged range outlives the entries it absorbed.
        b.expire(3);
        assert_eq!(b.needs(12, 1, 3), Some(6));
        assert_eq!(
            b.needs(27, 1, 3),
            None,
            "stable, though still queued behind seq 6"
        );
        b.expire(6);
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn expiry_removes_only_ranges_whose_checkpoint_is_stable() {
        let mut b = BusyExtents::default();
        for i in 0..1000u64 {
            b.insert(i * 10, 1, i / 100 + 1);
        }
        b.expire(5);
        assert_eq!(b.len(), 500);
        assert_eq!(b.needs(0, 500, 0), None);
        assert_eq!(b.needs(5000, 1, 0), Some(6));
        assert_eq!(b.needs(9990, 1, 0), Some(10));
    }
}
