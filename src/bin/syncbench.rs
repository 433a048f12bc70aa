//! syncbench: the cost of sync() against inode-cache size, with and without the writeback
//! list (thread 002). Everything is `fslab::cli::syncbench`.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fslab::cli::memory::use_base_pages();
    fslab::cli::syncbench::main()
}
