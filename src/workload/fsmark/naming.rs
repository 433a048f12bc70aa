//! File and subdirectory names, exactly as fs_mark 3.3 makes them.
//!
//! A name is `seq_len = name_len - rand_len` characters of the current time in lowercase hex
//! (the *last* `seq_len` digits when the hex is longer; `~` padding up to `seq_len` when it is
//! shorter), then `rand_len` characters from `[0-9A-Z]`. Each random character is
//! `'0' + (random() & 0x7f)`, drawn again until it is a digit or an upper-case letter, with
//! `random()` the C library's additive-feedback generator seeded from the microseconds of the
//! thread's start time. [`Random`] is our own implementation of that generator, so for the same
//! seed it yields the same sequence and the same names fs_mark would.
//!
//! Quirk kept: when `-r` exceeds `-p` the time part is empty (fs_mark computes a start index
//! past the end of its hex string and copies nothing), so the name is `rand_len` random
//! characters.
//!
//! Subdirectories are `%02x` of their index. [`SubdirChooser`] holds one thread's choice state
//! for the round-robin (`-N`) and time-hash (`-D` alone) policies; fs_mark keeps that state per
//! forked child, so it restarts with each iteration.

use super::config::SubdirPolicy;

const RAND_DEG: usize = 31;
const RAND_SEP: usize = 3;

/// The C library's `random()` generator (additive feedback, 31 words of state).
///
/// Seeding fills the state with the Park-Miller minimal-standard sequence from the seed (0
/// counts as 1) and discards the first 310 outputs; each output is the sum of two state words
/// 3 apart, stored back, shifted right by one.
#[derive(Debug, Clone)]
pub struct Random {
    state: [u32; RAND_DEG],
    front: usize,
    rear: usize,
}

impl Random {
    /// A generator seeded like `srandom(seed)`.
    pub fn new(seed: u32) -> Random {
        let mut state = [0u32; RAND_DEG];
        let mut word = if seed == 0 { 1 } else { seed as i32 as i64 };
        state[0] = word as u32;
        for slot in state.iter_mut().skip(1) {
            // 16807 * word mod (2^31 - 1), via Schrage's method to stay in 32 bits.
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        let mut r = Random {
            state,
            front: RAND_SEP,
            rear: 0,
        };
        for _ in 0..RAND_DEG * 10 {
            r.next_value();
        }
        r
    }

    /// The next value in `0..2^31`, like `random()`.
    pub fn next_value(&mut self) -> u32 {
        let sum = self.state[self.front].wrapping_add(self.state[self.rear]);
        self.state[self.front] = sum;
        self.front += 1;
        self.rear += 1;
        if self.front == RAND_DEG {
            self.front = 0;
        } else if self.rear == RAND_DEG {
            self.rear = 0;
        }
        sum >> 1
    }

    /// One name character from `[0-9A-Z]`, drawn fs_mark's way.
    pub fn name_char(&mut self) -> u8 {
        loop {
            let c = b'0' + (self.next_value() & 0x7f) as u8;
            if c.is_ascii_digit() || c.is_ascii_uppercase() {
                return c;
            }
        }
    }
}

/// The `-p`/`-r` name layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameLayout {
    /// Total name length (`-p`).
    pub name_len: u32,
    /// Random characters at the end (`-r`).
    pub rand_len: u32,
}

impl NameLayout {
    /// Number of time-stamp characters the header announces (negative when `-r` > `-p`).
    pub fn seq_len(self) -> i64 {
        i64::from(self.name_len) - i64::from(self.rand_len)
    }

    /// Append a name for wall-clock second `secs` to `out`, drawing from `rng`.
    pub fn push_name(self, out: &mut Vec<u8>, secs: u64, rng: &mut Random) {
        let mut hex = [0u8; 16];
        let hex = hex_digits(secs, &mut hex);
        let seq_len = self.seq_len();
        if seq_len > 0 {
            let seq_len = seq_len as usize;
            if hex.len() > seq_len {
                out.extend_from_slice(&hex[hex.len() - seq_len..]);
            } else {
                out.extend_from_slice(hex);
                out.resize(out.len() + (seq_len - hex.len()), b'~');
            }
        }
        for _ in 0..self.rand_len {
            out.push(rng.name_char());
        }
    }
}

/// `%lx` of `v` into `buf`, returning the digits.
fn hex_digits(mut v: u64, buf: &mut [u8; 16]) -> &[u8] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = DIGITS[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Append `%02x` of a subdirectory index to `out`.
pub fn push_subdir_name(out: &mut Vec<u8>, index: u32) {
    let mut buf = [0u8; 16];
    let digits = hex_digits(u64::from(index), &mut buf);
    if digits.len() < 2 {
        out.push(b'0');
    }
    out.extend_from_slice(digits);
}

/// One thread's subdirectory choice (see the module docs).
#[derive(Debug, Clone)]
pub struct SubdirChooser {
    policy: SubdirPolicy,
    current: u32,
    files_in_subdir: u32,
    start_secs: Option<u64>,
}

impl SubdirChooser {
    /// State for a thread that started at wall-clock second `start_secs`: with subdirectories,
    /// the first one is `start_secs % subdirs`, so short runs do not all crowd into `00`.
    pub fn new(policy: SubdirPolicy, start_secs: u64) -> SubdirChooser {
        let n = u64::from(policy.subdirs());
        SubdirChooser {
            policy,
            current: if n > 0 { (start_secs % n) as u32 } else { 0 },
            files_in_subdir: 0,
            start_secs: None,
        }
    }

    /// The subdirectory for the next file, created at wall-clock second `now_secs`; `None`
    /// without subdirectories.
    pub fn next(&mut self, now_secs: u64) -> Option<u32> {
        // fs_mark records the time of the first name, whatever the policy.
        let start = *self.start_secs.get_or_insert(now_secs);
        match self.policy {
            SubdirPolicy::None => None,
            SubdirPolicy::RoundRobin {
                subdirs,
                per_subdir,
            } => {
                if per_subdir > 0 {
                    if self.files_in_subdir >= per_subdir {
                        self.current = self.current.wrapping_add(1);
                        self.files_in_subdir = 0;
                    }
                    self.current %= subdirs;
                    self.files_in_subdir += 1;
                }
                Some(self.current)
            }
            SubdirPolicy::TimeHash {
                subdirs,
                secs_per_subdir,
            } => {
                if now_secs.saturating_sub(start) > secs_per_subdir {
                    self.current = (self.current + 1) % subdirs;
                    self.start_secs = Some(now_secs);
                }
                Some(self.current)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs of glibc's `srandom(seed); random()` for a few seeds.
    #[test]
    fn random_matches_the_c_library_sequence() {
        let first5 = |seed| {
            let mut r = Random::new(seed);
            [(); 5].map(|_| r.next_value())
        };
        let glibc_seed1 = [1804289383, 846930886, 1681692777, 1714636915, 1957747793];
        assert_eq!(first5(1), glibc_seed1);
        assert_eq!(first5(0), glibc_seed1, "seed 0 counts as 1");
        assert_eq!(
            first5(999_999),
            [706537975, 609836718, 1285015328, 1704370339, 783456926]
        );
        assert_eq!(
            first5(123_456),
            [1303402199, 1406886723, 391888296, 1607856518, 940034812]
        );
    }

    fn name(layout: NameLayout, secs: u64, seed: u32) -> String {
        let mut out = Vec::new();
        layout.push_name(&mut out, secs, &mut Random::new(seed));
        String::from_utf8(out).unwrap()
    }

    const DEFAULT: NameLayout = NameLayout {
        name_len: 40,
        rand_len: 24,
    };

    #[test]
    fn default_name_is_hex_time_tilde_padding_and_24_random_chars() {
        // fs_mark with srandom(999999) draws these 24 characters first.
        assert_eq!(
            name(DEFAULT, 0x6b0d193a, 999_999),
            "6b0d193a~~~~~~~~PSNHWHIHP0HB0HN9VY2B1BFI"
        );
        assert_eq!(
            name(DEFAULT, 0x6b0d193a, 123_456),
            "6b0d193a~~~~~~~~X6QNYF876XDWP4EYXR7MVYB5"
        );
    }

    #[test]
    fn short_time_part_keeps_the_last_hex_digits() {
        let l = NameLayout {
            name_len: 12,
            rand_len: 8,
        };
        let n = name(l, 0x6b0d2038, 5);
        assert_eq!(&n[..4], "2038");
        assert_eq!(n.len(), 12);
    }

    #[test]
    fn equal_p_and_r_give_purely_random_names() {
        let l = NameLayout {
            name_len: 30,
            rand_len: 30,
        };
        let n = name(l, 0x6b0d2038, 5);
        assert_eq!(n.len(), 30);
        assert!(
            n.bytes()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
    }

    #[test]
    fn rand_len_over_name_len_gives_only_random_chars() {
        let l = NameLayout {
            name_len: 10,
            rand_len: 20,
        };
        let n = name(l, 0x6b0d2038, 7);
        assert_eq!(n.len(), 20);
        assert!(!n.contains('~') && !n.contains("2038"));
        assert_eq!(l.seq_len(), -10);
    }

    #[test]
    fn no_random_part_gives_only_time_and_padding() {
        let l = NameLayout {
            name_len: 12,
            rand_len: 0,
        };
        assert_eq!(name(l, 0x6b0d2038, 7), "6b0d2038~~~~");
    }

    #[test]
    fn subdir_names_are_two_digit_lowercase_hex() {
        let mut out = Vec::new();
        for i in [0, 0xf, 0x10, 0xff, 0x100] {
            push_subdir_name(&mut out, i);
            out.push(b' ');
        }
        assert_eq!(out, b"00 0f 10 ff 100 ");
    }

    #[test]
    fn round_robin_fills_k_files_per_subdir_from_the_time_based_start() {
        let p = SubdirPolicy::RoundRobin {
            subdirs: 3,
            per_subdir: 2,
        };
        let mut c = SubdirChooser::new(p, 4); // starts at 4 % 3 = 1
        let got: Vec<_> = (0..8).map(|_| c.next(4).unwrap()).collect();
        assert_eq!(got, [1, 1, 2, 2, 0, 0, 1, 1]);
    }

    #[test]
    fn round_robin_with_zero_per_subdir_never_moves() {
        let p = SubdirPolicy::RoundRobin {
            subdirs: 3,
            per_subdir: 0,
        };
        let mut c = SubdirChooser::new(p, 5);
        assert!((0..5).all(|_| c.next(5) == Some(2)));
    }

    #[test]
    fn time_hash_moves_on_after_more_than_180_seconds() {
        let p = SubdirPolicy::TimeHash {
            subdirs: 2,
            secs_per_subdir: 180,
        };
        let mut c = SubdirChooser::new(p, 1000); // 1000 % 2 = 0
        assert_eq!(c.next(1000), Some(0));
        assert_eq!(c.next(1180), Some(0), "exactly 180 s stays");
        assert_eq!(c.next(1181), Some(1));
        assert_eq!(c.next(1300), Some(1));
        assert_eq!(c.next(1362), Some(0), "wraps and restarts the timer");
    }

    #[test]
    fn no_policy_means_no_subdir() {
        let mut c = SubdirChooser::new(SubdirPolicy::None, 9);
        assert_eq!(c.next(9), None);
    }
}
