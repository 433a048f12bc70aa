//! Resident memory per cached clean inode, at 1,000,000 cached inodes:
//! `cargo bench --bench labfs_inode_memory [-- N]` (N inodes, default 1,000,000).
//!
//! labfs runs on a file device in /dev/shm, so the device's contents are page cache, not this
//! process's memory. The filesystem is populated (1000 directories of N/1000 empty files),
//! unmounted and mounted again with empty caches and a small buffer cache; then every inode
//! is looked up and stays cached, in a fresh process (so memory the allocator kept from the
//! populating phase cannot hide the growth). The growth of the process's resident set divided by the
//! inodes cached is the figure (it includes the cache's index, allocator overhead, and the
//! clean metadata buffers the buffer cache keeps, at most its 16 MiB limit). The image and
//! the inode cache's limit grow with N.
//!
//! Measured 2026-12-04: 147 bytes per inode at 1,000,000 (with the system allocator, as every
//! bench), once a cached inode and its `Arc` header take 160 bytes, not 176. 2026-12-03: 166, since the inode cache's shards hold
//! the inodes alone (not a copy of each number beside it) and a B+tree fork's root is boxed
//! out of every inode (201 before, in the same run, populated in 8.6 s); 238 at 10,000,000
//! before those two (populated in 99 s, one thread, on a busy machine); 249 at 1M before the
//! journal.

use std::sync::Arc;
use std::time::Instant;

use fslab::fs::Fs;
use fslab::fs::dev::{BlockDev, FileDev, file::FileOptions};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;

/// Mount options: a small buffer cache, and an inode cache that holds every inode.
fn cache_options(n: u64) -> String {
    format!("bufcache=16m,icache={}", (n + n / 10).max(4_000_000))
}

fn main() {
    if let Some(img) = std::env::var_os("FSLAB_MEASURE_IMAGE") {
        measure(std::path::Path::new(&img));
        return;
    }
    let n: u64 = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dirs = 1000u64;
    let per_dir = n.div_ceil(dirs);
    let tmp = tempfile::Builder::new()
        .prefix("fslab-mem")
        .tempdir_in("/dev/shm")
        .expect("/dev/shm");
    let img = tmp.path().join("lab.img");
    let opts = Options::parse(&cache_options(n)).expect("options");
    let dev: Arc<dyn BlockDev> = Arc::new(
        FileDev::open(
            &img,
            &FileOptions {
                // 512-byte inodes and directory entries: about 1 KiB a file.
                size: Some((4u64 << 30).max(n * 1024)),
                direct: false,
            },
        )
        .expect("device"),
    );
    mkfs(Arc::clone(&dev), &opts).expect("mkfs");
    let t = Instant::now();
    {
        let fs = Fs::mount(Arc::clone(&dev), opts.mount.clone()).expect("mount");
        let root = fs.root().expect("root");
        for d in 0..dirs {
            let dir = fs
                .mkdir(&root, format!("d{d:04}").as_bytes(), 0o755)
                .expect("mkdir");
            for f in 0..per_dir {
                fs.create(&dir, format!("f{f:06}").as_bytes(), 0o644, true)
                    .expect("create");
            }
            // Keep the dirty set small while populating.
            if d % 50 == 49 {
                fs.sync().expect("sync");
                fs.icache.reclaim(&fs.stats);
            }
        }
        fs.unmount().expect("unmount");
    }
    println!(
        "populated {} inodes in {:.1} s",
        dirs * per_dir,
        t.elapsed().as_secs_f64()
    );
    drop(dev);
    let status = std::process::Command::new(std::env::current_exe().expect("self"))
        .env("FSLAB_MEASURE_IMAGE", &img)
        .env("FSLAB_MEASURE_INODES", n.to_string())
        .status()
        .expect("measuring process");
    assert!(status.success());
}

/// The measuring half: mount the image with empty caches and cache every inode.
fn measure(img: &std::path::Path) {
    let n: u64 = std::env::var("FSLAB_MEASURE_INODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let opts = Options::parse(&cache_options(n)).expect("options");
    let dev: Arc<dyn BlockDev> = Arc::new(
        FileDev::open(
            img,
            &FileOptions {
                size: None,
                direct: false,
            },
        )
        .expect("device"),
    );
    let fs = Fs::mount(Arc::clone(&dev), opts.mount.clone()).expect("mount");
    let root = fs.root().expect("root");
    let before = fslab::workload::syncbench::rss_bytes().expect("resident set");
    let cached_before = fs.icache.len();
    let mut held = 0u64;
    for e in fs.readdir(&root).expect("readdir") {
        let dir = fs.iget(e.ino).expect("dir");
        for f in fs.readdir(&dir).expect("readdir") {
            fs.iget(f.ino).expect("inode");
            held += 1;
        }
    }
    let after = fslab::workload::syncbench::rss_bytes().expect("resident set");
    let cached = (fs.icache.len() - cached_before) as u64;
    println!("inodes looked up: {held}, cached: {cached}");
    println!(
        "resident set: {:.1} MiB before, {:.1} MiB after",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    );
    println!(
        "metadata buffers cached: {:.1} MiB",
        fs.bufs.cached_bytes() as f64 / 1048576.0
    );
    println!(
        "bytes per cached clean inode: {:.0}",
        (after - before) as f64 / cached as f64
    );
}
