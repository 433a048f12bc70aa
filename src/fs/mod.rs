//! labfs: a journaling filesystem modelled on XFS, in userspace.
//!
//! See `../shared/DESIGN.md` §3 and `../shared/LABFS.md` for the design. Module map:
//!
//! - [`format`]: geometry, block kinds, magics, CRC offsets, endian helpers, and the
//!   byte-by-byte layouts of the superblock, AG headers and inodes.
//! - [`error`]: the typed error every labfs operation returns.
//! - [`cksum`]: the one place metadata CRCs are computed and verified.
//! - [`dev`]: block devices (memory, file, stripe; latency model; fault shim).
//! - [`buf`]: the metadata buffer cache.
//! - [`btree`]: the one generic B+tree.
//! - [`stats`]: XFS-layout statistics.

pub mod btree;
pub mod buf;
pub mod cksum;
pub mod dev;
pub mod error;
pub mod format;
pub mod stats;
