//! The directory name hash: XFS's `xfs_da_hashname`, implemented from its description.
//!
//! The hash folds the name into a 32-bit accumulator four bytes at a time: each group of four
//! bytes is spread over 28 bits (7-bit steps: byte 0 at bit 21, byte 1 at 14, byte 2 at 7,
//! byte 3 at 0) and XORed into the accumulator rotated left by 28. A final group of one to
//! three bytes is spread the same way with 7-bit steps ending at bit 0, and XORed into the
//! accumulator rotated left by 7 per byte. Bytes are 8 bits wide but the steps are 7, so
//! neighbouring bytes overlap by one bit: flipping the lowest bit of one byte and the highest
//! bit of the next byte in the same group leaves the hash unchanged. That is what makes
//! collisions easy to craft ([`collide`]) and why every lookup compares names, not only hashes.

/// XFS's directory/attribute name hash (`xfs_da_hashname`).
pub fn hashname(name: &[u8]) -> u32 {
    let mut hash: u32 = 0;
    let mut groups = name.chunks_exact(4);
    for g in &mut groups {
        hash = (u32::from(g[0]) << 21)
            ^ (u32::from(g[1]) << 14)
            ^ (u32::from(g[2]) << 7)
            ^ u32::from(g[3])
            ^ hash.rotate_left(28);
    }
    let tail = groups.remainder();
    let spread = tail.iter().fold(0u32, |acc, &b| (acc << 7) ^ u32::from(b));
    spread ^ hash.rotate_left(7 * tail.len() as u32)
}

/// A different valid name (no NUL, no `/`) of the same length with the same hash as `name`,
/// if one can be made by the overlapping-bit trick; for tests of hash collisions.
pub fn collide(name: &[u8]) -> Option<Vec<u8>> {
    let ok = |b: u8| b != 0 && b != b'/';
    let groups = name.len().div_ceil(4);
    for g in 0..groups {
        let start = g * 4;
        let end = (start + 4).min(name.len());
        for i in start..end.saturating_sub(1) {
            let (a, b) = (name[i] ^ 0x01, name[i + 1] ^ 0x80);
            if ok(a) && ok(b) {
                let mut out = name.to_vec();
                out[i] = a;
                out[i + 1] = b;
                return Some(out);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straight from the description: one byte at a time, for the tail, and the 4-byte loop.
    fn reference(name: &[u8]) -> u32 {
        let mut h: u32 = 0;
        let mut rest = name;
        while rest.len() >= 4 {
            h = (u32::from(rest[0]) << 21)
                ^ (u32::from(rest[1]) << 14)
                ^ (u32::from(rest[2]) << 7)
                ^ u32::from(rest[3])
                ^ h.rotate_left(28);
            rest = &rest[4..];
        }
        match rest.len() {
            3 => {
                (u32::from(rest[0]) << 14)
                    ^ (u32::from(rest[1]) << 7)
                    ^ u32::from(rest[2])
                    ^ h.rotate_left(21)
            }
            2 => (u32::from(rest[0]) << 7) ^ u32::from(rest[1]) ^ h.rotate_left(14),
            1 => u32::from(rest[0]) ^ h.rotate_left(7),
            _ => h,
        }
    }

    #[test]
    fn short_names_hash_to_their_spread_bytes() {
        assert_eq!(hashname(b""), 0);
        assert_eq!(hashname(b"."), 0x2e);
        assert_eq!(hashname(b".."), (0x2e << 7) ^ 0x2e);
        assert_eq!(
            hashname(b"abcd"),
            (0x61 << 21) ^ (0x62 << 14) ^ (0x63 << 7) ^ 0x64
        );
    }

    #[test]
    fn matches_the_described_algorithm_for_every_tail_length() {
        let name: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37) | 1).collect();
        for len in 0..name.len() {
            assert_eq!(hashname(&name[..len]), reference(&name[..len]), "len {len}");
        }
    }

    #[test]
    fn collide_makes_a_different_name_with_the_same_hash() {
        for name in [
            &b"ab"[..],
            b"abc",
            b"file0001",
            b"x",
            b"hello world, long name",
        ] {
            match collide(name) {
                Some(other) => {
                    assert_ne!(other, name);
                    assert_eq!(other.len(), name.len());
                    assert_eq!(hashname(&other), hashname(name));
                    assert!(!other.contains(&0) && !other.contains(&b'/'));
                }
                None => assert_eq!(name.len(), 1, "only one-byte names have no partner"),
            }
        }
    }
}
