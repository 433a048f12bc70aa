//! The one seeded pseudo-random generator: everything that must replay exactly from a seed
//! (the fault shim's crash plans, randomized tests, fuzzers, model tests) draws from
//! [`SplitMix64`].
//!
//! This is a foundation module, like [`crate::units`]: labfs's fault shim uses it and so do
//! the tests of every layer; it imports nothing from the crate.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
//! OOPSLA 2014) steps a 64-bit counter by the golden-ratio increment and passes it through a
//! mixing function. It was chosen over xorshift, which several tests carried copies of,
//! because every seed works: xorshift's state 0 is a fixed point (it returns 0 for ever), so
//! a test seeded with 0 silently tested nothing. It is fast, small and has a full 2^64
//! period; it is not cryptographic, and nothing here needs it to be.
//!
//! Range reduction ([`SplitMix64::below`]) uses the multiply-high method (Lemire, "Fast
//! random integer generation in an interval", 2019) without the rejection step: the bias is
//! below `n / 2^64`, invisible to any test, and the draw costs one multiplication.

/// A seeded SplitMix64 generator: the same seed gives the same stream on every platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

/// The golden-ratio increment, `2^64 / φ` rounded to odd.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed` (any value, including 0).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next 32 random bits (the high half of a draw, the better-mixed one).
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A value in `0..n`; 0 when `n` is 0 (an empty range has no other answer).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An index into a collection of `len` elements (`0..len`; 0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True or false with equal probability.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// True with probability `percent`/100 (100 or more: always).
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of `items`, or `None` when it is empty.
    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.index(items.len()))
        }
    }

    /// Shuffle `items` in place (Fisher-Yates: every order equally likely).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }

    /// `0..n` in random order.
    pub fn permutation(&mut self, n: u32) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n).collect();
        self.shuffle(&mut v);
        v
    }

    /// Fill `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64s_reference_sequence() {
        // The published test vector for seed 1234567 (Rosetta Code's "Splitmix64" task), so
        // a change to the increment or the mixing constants cannot go unnoticed.
        let mut r = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn seed_zero_is_a_real_stream() {
        let mut r = SplitMix64::new(0);
        let a = r.next_u64();
        let b = r.next_u64();
        assert_ne!(a, 0);
        assert_ne!(a, b);
    }

    #[test]
    fn equal_seeds_replay_and_different_seeds_differ() {
        let draw = |seed| {
            let mut r = SplitMix64::new(seed);
            (0..16).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn below_stays_in_range_and_reaches_both_ends() {
        let mut r = SplitMix64::new(3);
        let mut seen = [false; 10];
        for _ in 0..2000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "{seen:?}");
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
    }

    #[test]
    fn chance_follows_its_percentage() {
        let mut r = SplitMix64::new(11);
        let hits = (0..10_000).filter(|_| r.chance(30)).count();
        assert!((2700..3300).contains(&hits), "{hits} of 10000 at 30%");
        assert!((0..100).all(|_| r.chance(100)));
        assert!((0..100).all(|_| !r.chance(0)));
    }

    #[test]
    fn permutation_holds_every_value_once() {
        let mut r = SplitMix64::new(5);
        let mut p = r.permutation(500);
        assert_ne!(p, (0..500).collect::<Vec<u32>>(), "shuffled");
        p.sort_unstable();
        assert_eq!(p, (0..500).collect::<Vec<u32>>());
    }

    #[test]
    fn fill_covers_a_ragged_tail_and_choose_handles_empty() {
        let mut r = SplitMix64::new(9);
        let mut b = [0u8; 13];
        r.fill(&mut b);
        assert!(b[8..].iter().any(|&x| x != 0), "{b:?}");
        assert_eq!(r.choose::<u8>(&[]), None);
        assert_eq!(r.choose(&[42]), Some(&42));
    }
}
