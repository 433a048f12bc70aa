//! fiolike: fio 3.33 job files and command lines, on labfs or host directories, with fio's
//! outputs.
//!
//! fio's arguments, its reports and the shared fslab flags are `fslab::cli::fiolike`'s; the
//! run goes through the tool skeleton like every fslab binary.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fslab::cli::memory::use_base_pages();
    fslab::cli::fiolike::main()
}
