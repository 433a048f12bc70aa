//! syncbench: the cost of sync() against inode-cache size, with and without the writeback
//! list (thread 002). Everything is `fslab::cli::syncbench`.

fn main() -> std::process::ExitCode {
    fslab::cli::syncbench::main()
}
