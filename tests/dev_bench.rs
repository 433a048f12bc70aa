//! Quick measurements of the devices, reported as ratios against a baseline run in the same
//! process. Not tests: they assert nothing about speed and are ignored by default.
//!
//! ```text
//! cargo test --release --test dev_bench -- --ignored --nocapture
//! ```

use std::os::unix::fs::FileExt;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use fslab::fs::dev::latency::wait_until;
use fslab::fs::dev::{BlockDev, MemDev};

/// Writes per measurement: the region is rewritten until this many are done.
const OPS: u64 = 65536;

fn ns_per(d: Duration, ops: u64) -> f64 {
    d.as_nanos() as f64 / ops as f64
}

/// Write 4 KiB to every page of `[first, first + pages)`, pass after pass, `OPS / pages`
/// passes in all, flushing after each pass if asked.
fn write_passes(dev: &MemDev, first: u64, pages: u64, flush_each_pass: bool) -> Duration {
    let buf = [0x5Au8; 4096];
    let t = Instant::now();
    for _ in 0..OPS / pages {
        for p in first..first + pages {
            dev.write_at(&buf, p * 4096, false).expect("write");
        }
        if flush_each_pass {
            dev.flush().expect("flush");
        }
    }
    t.elapsed()
}

fn two_threads(dev: &Arc<MemDev>, pages: u64) -> Duration {
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let dev = Arc::clone(dev);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                // Each thread does OPS / 2 writes on its own half of the region.
                let half = pages / 2;
                let buf = [0x5Au8; 4096];
                let t0 = Instant::now();
                for _ in 0..OPS / pages {
                    for p in t * half..(t + 1) * half {
                        dev.write_at(&buf, p * 4096, false).expect("write");
                    }
                }
                t0.elapsed()
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .max()
        .unwrap_or_default()
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn mem_4k_write_overhead() {
    let buf = [0x5Au8; 4096];
    for (label, pages) in [
        ("1 MiB region (cache-hot)", 256u64),
        ("64 MiB region", 16384),
    ] {
        let passes = OPS / pages;
        // Baseline: the copy itself, into a plain buffer (after a pass that faults it in).
        let mut plain = vec![0u8; (pages * 4096) as usize];
        plain.iter_mut().step_by(4096).for_each(|b| *b = 1);
        let t = Instant::now();
        for _ in 0..passes {
            for chunk in plain.chunks_mut(4096) {
                chunk.copy_from_slice(std::hint::black_box(&buf));
            }
        }
        let memcpy = ns_per(t.elapsed(), OPS);
        std::hint::black_box(&plain);

        // tmpfs: pwrite(2) of 4 KiB into a file in /dev/shm, after a pass that allocates.
        let shm = tempfile::tempfile_in("/dev/shm").expect("tmpfs file");
        for p in 0..pages {
            shm.write_all_at(&buf, p * 4096).expect("pwrite");
        }
        let t = Instant::now();
        for _ in 0..passes {
            for p in 0..pages {
                shm.write_all_at(&buf, p * 4096).expect("pwrite");
            }
        }
        let tmpfs = ns_per(t.elapsed(), OPS);

        let dev = MemDev::new(1 << 30).expect("valid size");
        dev.write_at(&vec![1u8; (pages * 4096) as usize], 0, false)
            .expect("allocate the pages");
        dev.flush().expect("flush");
        // Steady state inside one epoch: the undo copy exists, a write is lock + copy.
        write_passes(&dev, 0, pages, false);
        let steady = ns_per(write_passes(&dev, 0, pages, false), OPS);
        // A flush after every pass: every write is its page's first in the epoch and saves
        // an undo copy (from the buffer pool after the first pass).
        write_passes(&dev, 0, pages, true);
        let epoch = ns_per(write_passes(&dev, 0, pages, true), OPS);
        // fsync-like: one write, one flush.
        let t = Instant::now();
        for i in 0..OPS {
            dev.write_at(&buf, (i % pages) * 4096, false)
                .expect("write");
            dev.flush().expect("flush");
        }
        let write_flush = ns_per(t.elapsed(), OPS);

        let dev2 = Arc::new(MemDev::new(1 << 30).expect("valid size"));
        write_passes(&dev2, 0, pages, false);
        let wall2 = two_threads(&dev2, pages);
        let aggregate2 = ns_per(wall2, OPS);

        println!("mem 4 KiB writes, {label}, {OPS} writes per row:");
        println!("  memcpy 4 KiB (baseline)       {memcpy:7.0} ns");
        println!("  tmpfs pwrite 4 KiB            {tmpfs:7.0} ns");
        println!(
            "  mem steady overwrite          {steady:7.0} ns  {:5.2}x memcpy  {:5.2}x tmpfs",
            steady / memcpy,
            steady / tmpfs
        );
        println!(
            "  mem first write per epoch     {epoch:7.0} ns  {:5.2}x memcpy  {:5.2}x tmpfs",
            epoch / memcpy,
            epoch / tmpfs
        );
        println!(
            "  mem write + flush             {write_flush:7.0} ns  {:5.2}x memcpy  {:5.2}x tmpfs",
            write_flush / memcpy,
            write_flush / tmpfs
        );
        println!(
            "  mem steady, 2 threads         {aggregate2:7.0} ns per write aggregate: {:4.2}x the single-thread rate",
            steady / aggregate2
        );
    }
}

fn overshoots(target: Duration, n: usize, wait: impl Fn(Duration)) -> (f64, f64) {
    let mut over: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            wait(target);
            (t.elapsed().saturating_sub(target)).as_nanos() as f64 / 1000.0
        })
        .collect();
    over.sort_by(f64::total_cmp);
    let mean = over.iter().sum::<f64>() / n as f64;
    let p99 = over[(n * 99 / 100).min(n - 1)];
    (mean, p99)
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn latency_wait_accuracy() {
    println!("latency-model waits (overshoot past the deadline, microseconds):");
    for us in [20u64, 100, 500, 2000] {
        let target = Duration::from_micros(us);
        let n = (200_000 / us.max(1)).clamp(50, 2000) as usize;
        let (m, p) = overshoots(target, n, |d| wait_until(Instant::now() + d));
        // The baseline runs on a fresh thread: wait_until lowered this one's timer slack.
        let (sm, sp) = std::thread::spawn(move || overshoots(target, n, std::thread::sleep))
            .join()
            .expect("thread");
        println!(
            "  {us:5} us: wait_until mean {m:6.1} p99 {p:6.1} (achieved/requested {:.3}); \
             thread::sleep mean {sm:6.1} p99 {sp:6.1} ({:.3})",
            (us as f64 + m) / us as f64,
            (us as f64 + sm) / us as f64
        );
    }
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn sleep_overshoot_by_timer_slack() {
    for slack in [50_000u64, 1_000] {
        std::thread::spawn(move || {
            // SAFETY: sets this thread's timer slack only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack as libc::c_ulong, 0, 0, 0) };
            for us in [20u64, 100, 1000] {
                let (m, p) = overshoots(Duration::from_micros(us), 300, std::thread::sleep);
                println!("slack {slack} ns: sleep {us} us overshoot mean {m:.1} p99 {p:.1}");
            }
        })
        .join()
        .expect("thread");
    }
}
