//! TEMPORARY integration shim, replaced by the btree branch on merge.
pub mod store;
