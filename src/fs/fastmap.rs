//! The one hasher labfs's in-memory indexes use: maps and sets keyed by block addresses,
//! inode numbers, object addresses and directory names.
//!
//! The standard library's SipHash resists collision flooding by untrusted keys, at a cost
//! that showed in every profile (each buffer get, CIL insert and AIL move hashes a number).
//! These keys are numbers labfs itself hands out or reads from its own image, so FxHash (a
//! multiply and rotate per word) is enough; rustc-hash 2's final rotation spreads keys that
//! are multiples of 8 (block addresses, pointers) over the table's low bits.

/// A `HashMap` with the fast, non-cryptographic hasher.
pub type FastMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;

/// A `HashSet` with the fast, non-cryptographic hasher.
pub type FastSet<K> = std::collections::HashSet<K, rustc_hash::FxBuildHasher>;
