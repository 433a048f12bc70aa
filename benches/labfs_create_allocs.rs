//! Heap allocations per created file: `cargo bench --bench labfs_create_allocs [-- N]` (N
//! files, default 200,000, in directories of 10,000 as syncbench makes them).
//!
//! A counting global allocator wraps the system one. labfs is made on a memory device and
//! mounted with the default options; files are created in one thread, with a clean sync
//! every 50,000 so the log and the dirty lists stay as small as a sweep keeps them. Reported:
//! allocations, frees and bytes asked for per create, counted over the creates only (the
//! syncs are counted apart), and how many of those allocations were still live at the end
//! (what the caches keep per file). Allocations are what a create costs in malloc and free
//! calls, and a freed one may be freed by another thread (xfsaild) than the one that made it.
//!
//! Measured 2026-12-03 at 200,000 creates: 18.0 allocations, 16.5 frees and 3,620 bytes
//! asked for per create, 1.40 allocations per create still live at the end (the inode, and
//! the metadata buffers and index slots the caches keep). A sampled profile of the
//! allocation calls put most of them in transactions (their commit's log vectors, item
//! buffers, the transaction itself) and in B+tree cursor paths; the dentry cache makes none.
//! Later that day, with the cursor path inline and a commit's vectors inline or reused from
//! the thread's last transaction: 7.5 allocations, 6.2 frees and 2,096 bytes per create
//! (1.21 still live at the end). Files per CPU-second did not move measurably with it (8
//! interleaved rounds at 200k files: medians 101.4k before, 99.2k after; 4 at 800k: 74.9k,
//! 75.3k; spread of each about 10%, load 6 on 2 cores): glibc's per-thread caches make a
//! small allocation and free cheap, so what is left of the create's cost is elsewhere.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fslab::fs::Fs;
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;

/// The system allocator, counting calls and bytes.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// atomics that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc`/`realloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A realloc is a malloc and a free as far as the heap's work goes.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        FREES.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counters now: allocations, frees, bytes.
fn counts() -> [u64; 3] {
    [
        ALLOCS.load(Ordering::Relaxed),
        FREES.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    ]
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let per_dir = 10_000u64;
    let opts = Options::parse("").expect("options");
    let dev: Arc<dyn BlockDev> =
        Arc::new(MemDev::new((1u64 << 30).max(n * 2048)).expect("memory device"));
    mkfs(Arc::clone(&dev), &opts).expect("mkfs");
    let fs = Fs::mount(Arc::clone(&dev), opts.mount.clone()).expect("mount");
    let root = fs.root().expect("root");
    let mut in_creates = [0u64; 3];
    let mut in_syncs = [0u64; 3];
    let add = |sum: &mut [u64; 3], before: [u64; 3]| {
        for ((s, now), was) in sum.iter_mut().zip(counts()).zip(before) {
            *s += now - was;
        }
    };
    let start = counts();
    for d in 0..n.div_ceil(per_dir) {
        let before = counts();
        let dir = fs
            .mkdir(&root, format!("d{d:05}").as_bytes(), 0o755)
            .expect("mkdir");
        for i in d * per_dir..((d + 1) * per_dir).min(n) {
            fs.create(&dir, format!("f{i:08}").as_bytes(), 0o644, true)
                .expect("create");
        }
        add(&mut in_creates, before);
        if (d + 1) % 5 == 0 {
            let before = counts();
            fs.sync().expect("sync");
            add(&mut in_syncs, before);
        }
    }
    let before = counts();
    fs.sync().expect("sync");
    add(&mut in_syncs, before);
    let end = counts();
    let per = |v: u64| v as f64 / n as f64;
    println!("{n} creates (the file names' own formatting included)");
    println!(
        "per create: {:.1} allocations, {:.1} frees, {:.0} bytes asked for",
        per(in_creates[0]),
        per(in_creates[1]),
        per(in_creates[2])
    );
    println!(
        "per create, in the syncs: {:.1} allocations, {:.1} frees",
        per(in_syncs[0]),
        per(in_syncs[1])
    );
    println!(
        "live at the end, per create: {:.2} allocations",
        (end[0] - start[0]).saturating_sub(end[1] - start[1]) as f64 / n as f64
    );
    drop(fs);
}
