//! labfs on its memory device against the kernel's tmpfs and the kernel's XFS, with the same
//! fs_mark workload engine, interleaved in one run:
//! `cargo bench --bench labfs_vs_tmpfs [-- ARGS...]`.
//!
//! Default workload: `-S0 -s 0 -n 200000` (issue 4's comparison: pure metadata, no sync).
//! Pass fs_mark options after `--` to compare something else, e.g. `-- -S1 -s 4096 -n 20000`.
//! tmpfs runs in a fresh directory under /dev/shm. The kernel's XFS, the filesystem labfs is
//! modelled on, runs on a fresh `mkfs.xfs` image (defaults, 4 GiB) in /dev/shm, loop-mounted,
//! so all three keep their data in memory; it needs root, the xfs module and mkfs.xfs, and
//! when the machine lacks one the bench says which and runs the other two. Prints each
//! round's files/sec and the labfs/tmpfs and labfs/XFS ratios (above 1: labfs is faster).
//!
//! Measured 2026-12-03 on a busy 2-core machine (another helper's tests, load ~3; tmpfs
//! moved between 160k and 246k files/s): `-S0 -s 0 -n 200000` median ratio 0.59 (labfs
//! 99,993-110,793 files/s), `-S1 -s 4096 -n 20000` 0.26 (40,422-54,489). On a quiet machine
//! when the journal landed: 0.26 and 0.20; before it: 0.67 and 0.31.
//! Later that day, machine nearly idle, after the list-based AIL, reserve-before-ILOCK and
//! the smaller in-core inode: 0.56 (tmpfs 213k-234k, labfs 121k-130k) and 0.30 (tmpfs
//! 184k-199k, labfs 47k-60k).
//! That evening, machine loaded (load 6-7), `-S1 -s 4096 -n 20000`, 9 rounds each of the
//! bench built before and after the mem device's separately allocated page bytes,
//! alternated: median ratio 0.31 both (labfs 35,981 and 36,589 files/s, tmpfs 44k-187k);
//! the noise is larger than the change, whose robust figure is 0.38 fewer page faults per
//! file.
//! 2026-12-04, a 2 GHz AMD EPYC VM, after the CIL's object slots: `-S0 -s 0 -n 200000`
//! 0.62 (tmpfs 122k-137k, labfs 75k-85k), `-S1 -s 4096 -n 20000` 0.27 (tmpfs 96k-99k,
//! labfs 26k-35k). Kernel XFS (mkfs.xfs 6.1 defaults, 4 GiB loop image in /dev/shm) on the
//! same VM, `fsmark --fs host`: `-S1` 3.2k-4.1k files/s against labfs's 16k-17k and tmpfs's
//! 52k-71k; `-S0` 19.7k-26.6k.
//! 2026-12-05, same VM, with mkfs zeroing the log as mkfs.xfs does and this bench on the
//! fsmark binary's allocator: `-S0 -s 0 -n 200000` 0.67 (tmpfs 123k-130k, labfs 81k-94k),
//! `-S1 -s 4096 -n 20000` 0.36 (tmpfs 53k-95k, labfs 20k-35k).
//!
//! The runs the README listed until 2026-12-05 (labfs/tmpfs medians, the first from before the
//! 2 GHz VM): 0.50 and 0.52 (medians of 3 interleaved rounds in two runs, with the journal,
//! machine near idle: tmpfs 342k-357k files/s, labfs 170k-189k; 0.45 before per-thread stats
//! shards and in-place relogging, labfs 146k-158k); `-S1 -s 4096 -n 20000`: 0.35 and 0.36
//! (tmpfs 215k-224k, labfs 63k-79k; 0.30 before). Without the journal, on a slower machine:
//! 1.46. On 2026-12-04 the VM came up on a 2 GHz AMD EPYC that runs both sides 2.5-3.5x slower:
//! `-S0` 0.60 and 0.61 (tmpfs 96k-123k, labfs 58k-74k), `-S1` 0.32 and 0.29 (tmpfs 75k-96k,
//! labfs 21k-30k); that afternoon, after the CIL's object slots, 0.62 and 0.27; the next
//! evening, after inode items stopped carrying a CRC, 0.58 and 0.32 (six `-S1` rounds,
//! 0.29-0.38); later that evening, after the directory hash tree split like XFS's da btree and
//! two linear scans of big directories went, 0.75 (tmpfs 99k-137k, labfs 87k-97k) and 0.34
//! (labfs 29k-40k), and with mkfs.xfs's default log size (64 MiB on the default 1 GiB device),
//! the VM slower by then, 0.62 (tmpfs 92k-129k, labfs 68k-85k) and 0.34; on 2026-12-05, with
//! mkfs zeroing the log as mkfs.xfs does (the log's first pass no longer takes fresh memory:
//! `-S1` +8%, `-S0` +3% in alternated runs), 0.67 (tmpfs 123k-130k, labfs 81k-94k) and 0.36
//! (labfs 20k-35k). Kernel XFS on that VM (4 GiB loop image in /dev/shm): `-S1` 3.2k-4.1k
//! files/s against labfs's 16k-17k and tmpfs's 52k-71k
//!
//! 2026-12-05 later, same VM, the first run with the kernel-XFS leg (medians of 3 rounds):
//! `-S0 -s 0 -n 200000` labfs/tmpfs 0.79, labfs/XFS 2.90 (tmpfs 111k-122k files/s, XFS
//! 29k-35k, labfs 64k-92k); `-S1 -s 4096 -n 20000` labfs/tmpfs 0.38, labfs/XFS 6.27 (tmpfs
//! 54k-90k, XFS 3.3k-5.8k, labfs 20k-33k).

use std::path::{Path, PathBuf};

// The same allocator and page policy as the `fsmark` binary, so labfs's rate is the one a
// user of `fsmark` sees (this bench used the system allocator before 2026-12-05).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The integration tests' kernel-XFS fixture: one way to make and mount an XFS image.
#[allow(dead_code)]
#[path = "../tests/common/xfs.rs"]
mod xfs;

use clap::Parser;
use fslab::backend::open::{BackendConfig, open};
use fslab::cli::fsmark::FsmarkArgs;
use fslab::workload::SystemClock;
use fslab::workload::fsmark::{self, RunEnv};

fn run(backend: BackendConfig, dir: PathBuf, extra: &[String]) -> f64 {
    let mut argv = vec![
        "fsmark".to_string(),
        "-d".into(),
        dir.display().to_string(),
        "-l".into(),
        "/dev/null".into(),
    ];
    argv.extend(extra.iter().cloned());
    let args = FsmarkArgs::try_parse_from(&argv).expect("fs_mark arguments");
    let (config, _) = args.to_config().expect("valid fs_mark arguments");
    let opened = open(&backend).expect("backend");
    opened
        .create_parents(std::slice::from_ref(&dir))
        .expect("parents");
    let target = opened.target();
    let env = RunEnv {
        target: target.as_ref(),
        clock: &SystemClock,
        interrupt: None,
    };
    let outcome = fsmark::run(&env, &config, &mut fsmark::Silent).expect("run");
    drop(target);
    opened.finish().expect("unmount");
    outcome.summary.average
}

/// Size of the kernel-XFS image: sparse on tmpfs, so only what XFS writes takes memory.
const XFS_IMAGE_BYTES: u64 = 4 << 30;

/// One run on a fresh kernel XFS, or why the machine cannot make one.
fn run_xfs(extra: &[String]) -> Result<f64, xfs::Unavailable> {
    let m = xfs::XfsMount::try_new_in(Path::new("/dev/shm"), XFS_IMAGE_BYTES)?;
    Ok(run(BackendConfig::Host, m.path().join("d"), extra))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    fslab::cli::memory::use_base_pages();
    let mut extra: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if extra.is_empty() {
        extra = ["-S0", "-s", "0", "-n", "200000"]
            .map(String::from)
            .to_vec();
    }
    let rounds = 3;
    let mut vs_tmpfs = Vec::new();
    let mut vs_xfs = Vec::new();
    let mut xfs_missing = None;
    println!("workload: fs_mark {}", extra.join(" "));
    for round in 1..=rounds {
        let shm = tempfile::Builder::new()
            .prefix("fslab-bench")
            .tempdir_in("/dev/shm")
            .expect("/dev/shm");
        let host = run(BackendConfig::Host, shm.path().join("d"), &extra);
        drop(shm);
        let kernel_xfs = if xfs_missing.is_none() {
            run_xfs(&extra).map_err(|why| xfs_missing = Some(why)).ok()
        } else {
            None
        };
        let lab = run(BackendConfig::default(), PathBuf::from("/bench/d"), &extra);
        vs_tmpfs.push(lab / host);
        let mut line = format!("round {round}: tmpfs {host:>10.1} files/s");
        if let Some(x) = kernel_xfs {
            vs_xfs.push(lab / x);
            line += &format!("   xfs {x:>10.1} files/s");
        }
        line += &format!(
            "   labfs/mem {lab:>10.1} files/s   labfs/tmpfs {:.2}",
            lab / host
        );
        if let Some(x) = kernel_xfs {
            line += &format!("   labfs/xfs {:.2}", lab / x);
        }
        println!("{line}");
    }
    println!("median labfs/tmpfs ratio: {:.2}", median(vs_tmpfs));
    match xfs_missing {
        None => println!("median labfs/xfs ratio: {:.2}", median(vs_xfs)),
        Some(why) => println!("kernel XFS skipped: {why}"),
    }
}
