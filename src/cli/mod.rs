//! What every binary shares on its command line: exit codes, unit parsers, and (as the
//! observability and labfs layers land) the `--fs`, `--device`, `-o`, `--trace` and `--stats`
//! flag groups, each defined once here and flattened into each binary's parser.

pub mod observe;
pub mod target_args;

/// Exit status for a completed run.
pub const EXIT_OK: i32 = 0;
/// Exit status when the run failed (I/O error, full filesystem, corrupt image).
pub const EXIT_FAILURE: i32 = 1;
/// Exit status for bad command-line usage.
pub const EXIT_USAGE: i32 = 2;
