//! fsmark: fs_mark 3.3 compatible metadata benchmark, on labfs or the host.
//!
//! Everything around the run (the command line, output files, the backend, statistics and
//! traces, Ctrl-C, exit codes) is the tool skeleton's, `fslab::cli::tool`; fs_mark's options
//! and output are `fslab::cli::fsmark`'s.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fslab::cli::memory::use_base_pages();
    fslab::cli::tool::main::<fslab::cli::fsmark::Fsmark>()
}
