//! csumhist: crc32c call-size histograms per structure, single vs split checksum updates, and
//! CRC throughput by size for each engine (thread 004). Everything is `fslab::cli::csumhist`.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fslab::cli::memory::use_base_pages();
    fslab::cli::csumhist::main()
}
