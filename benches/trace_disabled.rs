//! What a disabled tracepoint costs its call site.
//!
//! Times, in one run, a tight loop that fires a disabled event against the identical loop
//! without the call (both pass the loop counter through `black_box`, so neither is folded
//! away), and prints ns per iteration for both, the difference per call and the ratio. The
//! target is a difference under 1 ns. For scale it also times the same loop with the event
//! enabled (recorded into a ring and counted), over fewer iterations.
//!
//! Run with `cargo bench --bench trace_disabled`. Each loop runs several rounds, interleaved,
//! and the best round counts, which filters out interference from other work on the machine.

use std::hint::black_box;
use std::time::Instant;

use fslab::trace::{TraceConfig, events};

const DISABLED_CALLS: u64 = 100_000_000;
const ENABLED_CALLS: u64 = 1_000_000;
const ROUNDS: usize = 5;

fn empty_loop(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

fn traced_loop(n: u64) {
    for i in 0..n {
        events::crc32c("inode", black_box(i) as u32, 100, 408, "split", "crc32c");
    }
}

/// Best ns per iteration of `f(n)` over `ROUNDS` runs, with `g(n)` run in between.
fn best_pair(n: u64, f: fn(u64), g: fn(u64)) -> (f64, f64) {
    let (mut best_f, mut best_g) = (f64::MAX, f64::MAX);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        f(n);
        best_f = best_f.min(t.elapsed().as_nanos() as f64 / n as f64);
        let t = Instant::now();
        g(n);
        best_g = best_g.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    (best_f, best_g)
}

fn main() {
    let crc = fslab::trace::find("crc32c").filter(|e| !e.is_enabled());
    if crc.is_none() {
        eprintln!("trace_disabled: crc32c is unexpectedly enabled; aborting");
        std::process::exit(1);
    }
    // Warm up code and frequency scaling.
    empty_loop(DISABLED_CALLS / 10);
    traced_loop(DISABLED_CALLS / 10);

    let (empty, disabled) = best_pair(DISABLED_CALLS, empty_loop, traced_loop);
    let diff = disabled - empty;
    println!("trace_disabled: {DISABLED_CALLS} iterations per round, best of {ROUNDS} rounds");
    println!("  empty loop                 {empty:8.3} ns/iter");
    println!("  disabled crc32c call       {disabled:8.3} ns/iter");
    println!(
        "  cost of a disabled call    {diff:8.3} ns (ratio disabled/empty {:.2}); target < 1 ns: {}",
        disabled / empty,
        if diff < 1.0 { "met" } else { "NOT met" }
    );

    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("trace_disabled: no temp dir for the enabled run: {e}");
            std::process::exit(1);
        }
    };
    let session = TraceConfig {
        events: "crc32c".into(),
        out: Some(dir.path().join("trace.txt")),
        ..TraceConfig::default()
    }
    .start();
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            eprintln!("trace_disabled: cannot start a session: {e}");
            std::process::exit(1);
        }
    };
    let (empty_small, enabled) = best_pair(ENABLED_CALLS, empty_loop, traced_loop);
    match session.finish() {
        Ok(summary) => println!(
            "  enabled crc32c call        {enabled:8.3} ns/iter ({:.0}x the empty loop; \
             {} events, {} kept in the ring)",
            enabled / empty_small,
            summary.count("crc32c").unwrap_or(0),
            summary.entries_in_buffer
        ),
        Err(e) => {
            eprintln!("trace_disabled: finishing the session failed: {e}");
            std::process::exit(1);
        }
    }
}
