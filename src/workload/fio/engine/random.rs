//! Random numbers and fio's random map.
//!
//! fio seeds each job's generators from `randseed` (0x89 by default) so that with
//! `randrepeat=1` a run repeats itself; each clone gets its own stream. fiolike draws from the
//! crate's one seeded generator ([`crate::rng::SplitMix64`]); fio's Tausworthe sequence is not
//! reproduced, only its repeatability.
//!
//! The random map (`axmap` in fio) remembers which blocks a pass has touched, so random I/O
//! visits every block of a file exactly once per pass: a random block is drawn, and if it was
//! already used the next free one after it is taken (wrapping), as fio's `axmap_next_free`.

/// The crate's seeded generator ([`crate::rng::SplitMix64`]), the one every engine uses.
pub use crate::rng::SplitMix64 as Rng;

/// A value in `lo..=hi` (fio's `rand_between`).
pub fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// Which blocks of a file a pass has used.
#[derive(Debug, Clone)]
pub struct RandMap {
    words: Vec<u64>,
    blocks: u64,
    used: u64,
}

impl RandMap {
    /// A map of `blocks` blocks, all free.
    pub fn new(blocks: u64) -> RandMap {
        RandMap {
            words: vec![0; blocks.div_ceil(64) as usize],
            blocks,
            used: 0,
        }
    }

    /// Number of blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Whether every block is used.
    pub fn full(&self) -> bool {
        self.used >= self.blocks
    }

    /// Forget the pass.
    pub fn clear(&mut self) {
        self.words.fill(0);
        self.used = 0;
    }

    fn is_set(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    /// The first free block at or after `from`, wrapping; `None` when the map is full.
    fn next_free(&self, from: u64) -> Option<u64> {
        if self.full() {
            return None;
        }
        let n = self.words.len();
        let start_word = (from / 64) as usize;
        for step in 0..=n {
            let wi = (start_word + step) % n;
            let mut free = !self.words[wi];
            if step == 0 {
                // Only bits at or after `from` in the first word.
                free &= u64::MAX << (from % 64);
            }
            while free != 0 {
                let bit = free.trailing_zeros() as u64;
                let b = wi as u64 * 64 + bit;
                if b < self.blocks {
                    return Some(b);
                }
                free &= free - 1;
            }
        }
        // Wrapped back into the first word: bits before `from`.
        let wi = start_word;
        let mut free = !self.words[wi] & !(u64::MAX << (from % 64));
        while free != 0 {
            let b = wi as u64 * 64 + u64::from(free.trailing_zeros());
            if b < self.blocks {
                return Some(b);
            }
            free &= free - 1;
        }
        None
    }

    /// Take a random free block (drawn, or the next free one after the draw).
    pub fn take(&mut self, rng: &mut Rng) -> Option<u64> {
        if self.blocks == 0 {
            return None;
        }
        let r = rng.below(self.blocks);
        let b = if self.is_set(r) {
            self.next_free(r)?
        } else {
            r
        };
        self.words[(b / 64) as usize] |= 1 << (b % 64);
        self.used += 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_visits_every_block_once() {
        for blocks in [1u64, 63, 64, 65, 1000, 4099] {
            let mut m = RandMap::new(blocks);
            let mut rng = Rng::new(0x89);
            let mut seen = vec![false; blocks as usize];
            for _ in 0..blocks {
                let b = m.take(&mut rng).unwrap();
                assert!(!seen[b as usize], "block {b} twice");
                seen[b as usize] = true;
            }
            assert!(m.full());
            assert_eq!(m.take(&mut rng), None);
            m.clear();
            assert!(m.take(&mut rng).is_some());
        }
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
        let mut r = Rng::new(1);
        assert!((0..1000).all(|_| (1..=100).contains(&between(&mut r, 1, 100))));
        let mut buf = [0u8; 13];
        r.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
    }
}
