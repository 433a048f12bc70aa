//! Crash tests on the fault shim: whatever fsync acknowledged is there after a crash.
//!
//! A crash right after any flush (no unflushed write lands), or just before the next one (all
//! of them land), must give an image that mounts (replaying the log), passes fsck, and holds
//! every file whose fsync returned by then, with its contents. The crash harness
//! (tests/crash_harness.rs) covers subsets, reorderings and torn writes.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::BlockDev;
use fslab::fs::dev::fault::{CrashPlan, Keep};
use fslab::fs::inode::InodeRead;

use common::image::{self, assert_clean};

/// A file whose fsync returned, and the flush point it returned at.
struct Promise {
    path: Vec<u8>,
    data: Vec<u8>,
    flush_point: u64,
}

#[test]
fn fsynced_files_survive_a_crash_at_every_flush_point() {
    let img = image::fault(32 << 20).build();
    let fault = img.fault();
    let opts = &img.options;
    let first = fault.flush_count();
    let fs = img.mount();
    let root = fs.root().unwrap();
    let dirs: Vec<_> = (0..3)
        .map(|d| fs.mkdir(&root, format!("d{d}").as_bytes(), 0o755).unwrap())
        .collect();
    let mut promises = Vec::new();
    for i in 0..40u32 {
        let name = format!("f{i:02}");
        let (ip, _) = fs
            .create(&dirs[i as usize % 3], name.as_bytes(), 0o644, true)
            .unwrap();
        let data: Vec<u8> = (0..(i as usize * 997 % 12_000 + 1))
            .map(|b| (b as u32 ^ i) as u8)
            .collect();
        fs.write(&ip, 0, &data).unwrap();
        // Every other file is fsync'd; the rest may or may not survive.
        if i % 2 == 0 {
            fs.fsync(&ip, false).unwrap();
            let path = format!("/d{}/{name}", i % 3).into_bytes();
            promises.push(Promise {
                path,
                data,
                flush_point: fault.flush_count(),
            });
        }
        if i % 10 == 9 {
            // A rename and an unlink of unsynced files between the promises.
            let d = &dirs[i as usize % 3];
            fs.rename(d, name.as_bytes(), d, format!("r{i}").as_bytes())
                .unwrap();
            fs.unlink(d, format!("r{i}").as_bytes()).unwrap();
        }
    }
    let last = fault.flush_count();
    assert!(
        last - first >= 20,
        "the workload flushed {} times",
        last - first
    );
    // An fsync ends with a FUA log write after the flush it counted: durable at once, so at
    // flush point k it is there if the writes pending after k landed (Keep::All), and in
    // any case from flush point k + 1 on.
    for (k, keep) in (first..=last).flat_map(|k| [(k, Keep::None), (k, Keep::All)]) {
        let image = fault
            .crash_image(&CrashPlan::at(k).keep(keep.clone()))
            .unwrap();
        let crashed = Fs::mount(image.dev as Arc<dyn BlockDev>, opts.mount.clone())
            .unwrap_or_else(|e| panic!("flush point {k}: the image does not mount: {e}"));
        assert_clean(&crashed, &format!("flush point {k} ({keep:?})"));
        let covered = |p: &&Promise| match keep {
            Keep::All => p.flush_point <= k,
            _ => p.flush_point < k,
        };
        for p in promises.iter().filter(covered) {
            let ip = crashed.lookup_path(&p.path).unwrap_or_else(|e| {
                panic!(
                    "flush point {k}: {} was fsync'd but is gone: {e}",
                    String::from_utf8_lossy(&p.path)
                )
            });
            let size = InodeRead::lock(Arc::clone(&ip)).di.size as usize;
            let mut back = vec![0u8; size];
            crashed.read(&ip, 0, &mut back).unwrap();
            assert_eq!(
                back,
                p.data,
                "flush point {k}: {}",
                String::from_utf8_lossy(&p.path)
            );
        }
    }
}
