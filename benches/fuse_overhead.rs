//! The cost of the FUSE round trip: fio's `rw=write bs=4k fsync=4` on labfs mounted through
//! FUSE, the same I/O pattern on labfs in-process, and fio on the kernel's tmpfs, interleaved
//! in one run: `cargo bench --bench fuse_overhead [-- SIZE]` (default 64m; needs root, FUSE
//! and fio).
//!
//! - **fuse**: `fio --name=w --rw=write --bs=4k --size=SIZE --fsync=4` in a fresh labfs on a
//!   memory device, mounted through FUSE by this process (`fslab::fuse::spawn`).
//! - **in-process**: the same labfs set-up, and the same calls fio makes, through labfs's
//!   `Target` surface: the file laid out with `fallocate` first (as fio does, not timed), then
//!   `pwrite` 4 KiB at a time with `fsync` after every fourth (timed). (fiolike, the in-process
//!   fio, is not in this tree yet; this loop is the fio job's I/O pattern exactly.)
//! - **tmpfs**: the same fio job in a fresh directory under /dev/shm.
//!
//! Prints each round's MiB/s (fio's own `bw_bytes` for the fio runs; bytes over the timed
//! loop for in-process) and the ratios fuse/in-process and fuse/tmpfs (below 1: FUSE is
//! slower), then their medians.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use fslab::backend::lab::LabTarget;
use fslab::backend::{Access, FallocMode, OpenFlags, Target};
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::mkfs::{Format, mount_formatted};
use fslab::fs::options::Options;
use fslab::fuse::{FuseOptions, spawn};
use fslab::units::parse_size;

const BS: usize = 4096;
const FSYNC_EVERY: u64 = 4;
const DEVICE_BYTES: u64 = 1 << 30;

fn mem_device() -> Arc<dyn BlockDev> {
    Arc::new(MemDev::new(DEVICE_BYTES).expect("memory device"))
}

/// fio's write bandwidth, in bytes per second, for the job in `dir`.
fn fio_write_bw(dir: &Path, size: u64) -> f64 {
    let out = Command::new("fio")
        .current_dir(dir)
        .args([
            "--name=w",
            "--rw=write",
            "--bs=4k",
            &format!("--size={size}"),
            &format!("--fsync={FSYNC_EVERY}"),
            "--output-format=json",
        ])
        .output()
        .expect("run fio (apt-get install fio)");
    assert!(
        out.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fio JSON");
    v["jobs"][0]["write"]["bw_bytes"]
        .as_f64()
        .expect("write.bw_bytes")
}

fn fuse_run(size: u64) -> f64 {
    let dev = mem_device();
    let fs = mount_formatted(dev, &Options::default(), Format::Always).expect("mkfs + mount");
    let dir = tempfile::tempdir().expect("mountpoint");
    let mount = spawn(fs, dir.path(), "labfs:bench", &FuseOptions::default())
        .expect("FUSE mount (needs root and /dev/fuse)");
    let bw = fio_write_bw(dir.path(), size);
    mount.unmount().expect("unmount");
    bw
}

fn in_process_run(size: u64) -> f64 {
    let target =
        LabTarget::new(mem_device(), &Options::default(), Format::Always).expect("mkfs + mount");
    let flags = OpenFlags {
        access: Access::Write,
        create: true,
        ..OpenFlags::default()
    };
    let fd = target
        .open(Path::new("/w.0.0"), flags, 0o644)
        .expect("create");
    target
        .fallocate(fd, FallocMode::Allocate, 0, size)
        .expect("lay out");
    let buf = vec![0x5au8; BS];
    let start = Instant::now();
    for (i, off) in (0..size).step_by(BS).enumerate() {
        target.pwrite(fd, &buf, off).expect("pwrite");
        if (i as u64 + 1).is_multiple_of(FSYNC_EVERY) {
            target.fsync(fd).expect("fsync");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    target.close(fd).expect("close");
    target.unmount().expect("unmount");
    size as f64 / secs
}

fn tmpfs_run(size: u64) -> f64 {
    let shm = tempfile::Builder::new()
        .prefix("fslab-bench")
        .tempdir_in("/dev/shm")
        .expect("/dev/shm");
    fio_write_bw(shm.path(), size)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let size = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .map_or(64 << 20, |s| parse_size(&s).expect("a size such as 64m"));
    let mib = |bps: f64| bps / f64::from(1 << 20);
    println!(
        "workload: fio --rw=write --bs=4k --size={size} --fsync={FSYNC_EVERY}, labfs on mem:1g"
    );
    let (mut vs_lab, mut vs_tmpfs) = (Vec::new(), Vec::new());
    for round in 1..=3 {
        let tmpfs = tmpfs_run(size);
        let fuse = fuse_run(size);
        let lab = in_process_run(size);
        vs_lab.push(fuse / lab);
        vs_tmpfs.push(fuse / tmpfs);
        println!(
            "round {round}: fuse {:>8.1} MiB/s   in-process {:>8.1} MiB/s   tmpfs {:>8.1} MiB/s   \
             fuse/in-process {:.3}   fuse/tmpfs {:.3}",
            mib(fuse),
            mib(lab),
            mib(tmpfs),
            fuse / lab,
            fuse / tmpfs
        );
    }
    println!(
        "median ratios: fuse/in-process {:.3}   fuse/tmpfs {:.3}",
        median(vs_lab),
        median(vs_tmpfs)
    );
}
