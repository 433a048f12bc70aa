//! The fio engine: lay out every job's files, then run the jobs, one thread per clone.
//!
//! - [`files`]: names, sizes and the layout of a clone's files.
//! - [`random`]: the random generator and fio's random map.
//! - [`worker`]: one clone's I/O loop with fio's counting rules.

pub mod files;
pub mod random;
pub mod worker;
