//! fio 3.33's job language and engine, written once over [`crate::backend::Target`].
//!
//! fiolike runs the job files people already have, unchanged, on labfs or on host
//! directories, and prints fio's reports. This module owns the input side and the engine:
//!
//! - [`number`]: fio's number rules (`kb_base` and its inverted IEC suffixes, time suffixes).
//! - [`jobfile`]: the job-file grammar (sections, comments, `include`, `${VAR}`, keywords).
//! - [`cmdline`]: the command-line form (`--name=... --rw=...`, job files, fio's switches).
//! - [`options`]: the option table with fio's semantics, refusals by name, suggestions.
//! - [`job`]: a job as typed data ([`job::JobSpec`]).
//! - [`jobset`]: command line + job files into numbered jobs with reporting groups.
//!
//! The report side (normal, JSON, terse, logs) is [`crate::report::fio`].

pub mod cmdline;
pub mod engine;
pub mod fio_names;
pub mod job;
pub mod jobfile;
pub mod jobset;
pub mod number;
pub mod options;
pub mod stats;
