//! fsmark: fs_mark 3.3 compatible metadata benchmark (filled in by the foundation issue).
fn main() {}
