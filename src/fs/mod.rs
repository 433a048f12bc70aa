//! labfs: a journaling filesystem modelled on XFS, in userspace.
//!
//! See `../shared/DESIGN.md` §3 and `../shared/LABFS.md` for the design. Module map:
//!
//! - [`format`]: geometry, block kinds, magics, CRC offsets, endian helpers.
//! - [`error`]: the typed error every labfs operation returns.
//! - [`btree`]: the one generic CRC'd B+tree (free space, inodes, extent maps, directory hashes).

pub mod btree;
pub mod error;
pub mod format;
