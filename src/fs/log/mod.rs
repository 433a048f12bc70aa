//! The metadata journal; here so far only its on-disk record format and the recovery scan
//! that finds the valid window of records, both pure functions over bytes.

pub mod record;
pub mod scan;
