//! labfs: make, check, describe and decode labfs images, as xfsprogs does for XFS.
//!
//! The command line and output are `fslab::cli::labfs`'s; the work is `fslab::fs::admin`'s.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fslab::cli::memory::use_base_pages();
    fslab::cli::labfs::main()
}
