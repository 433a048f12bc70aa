//! Tests of the B+tree: model-based random operations, deep trees, exact operation counts,
//! corruption handling, the on-disk format, and a benchmark (ignored by default).

mod bench;
mod corrupt;
mod counts;
mod cursor;
mod format;
mod model;
mod support;
