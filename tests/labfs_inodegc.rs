//! Background inactivation (inodegc): an unlinked inode is queued and freed later by a worker,
//! its number is not reused meanwhile, sync and unmount finish the queue, the throttle bounds
//! it, a create out of space finishes it and retries, and a crash with inodes queued leaves
//! orphans the next mount frees.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fslab::fs::Fs;
use fslab::fs::dev::fault::CrashPlan;
use fslab::fs::error::FsError;
use fslab::fs::inode::{Inode, InodeRead};
use fslab::fs::inodegc::MAX_BACKLOG;
use fslab::fs::stats::Stat;

use common::image::{self, assert_clean};

fn stat(fs: &Fs, s: Stat) -> u32 {
    fs.stats.mount().snapshot().get(s)
}

fn create(fs: &Fs, root: &Arc<Inode>, name: &str) -> Arc<Inode> {
    fs.create(root, name.as_bytes(), 0o644, true)
        .expect("create")
        .0
}

/// Inodes in use, from statfs.
fn used_inodes(fs: &Fs) -> u64 {
    let s = fs.statfs();
    s.files - s.ffree
}

#[test]
fn a_queued_inode_keeps_its_number_until_it_is_freed() {
    let (_img, fs) = image::mem(64 << 20).mount();
    fs.inodegc.hold_worker(true);
    let root = fs.root().unwrap();
    let gone = create(&fs, &root, "gone").ino;
    fs.unlink(&root, b"gone").unwrap();
    assert_eq!(fs.inodegc.queued(), 1);
    // Still found by number, with no links.
    let cached = fs
        .icache
        .peek_quiet(gone)
        .expect("the queued inode is still cached");
    assert_eq!(InodeRead::lock(cached).di.nlink, 0);
    let used = used_inodes(&fs);
    let new: Vec<u64> = (0..20)
        .map(|i| create(&fs, &root, &format!("n{i}")).ino)
        .collect();
    assert!(
        !new.contains(&gone),
        "inode {gone} was given to a new file while queued for inactivation"
    );
    assert_eq!(used_inodes(&fs), used + 20);
    fs.inodegc_flush().unwrap();
    assert_eq!(fs.inodegc.queued(), 0);
    assert_eq!(used_inodes(&fs), used + 19, "the flush freed the inode");
    assert!(fs.icache.peek_quiet(gone).is_none(), "freed, not found");
    // Now the number may go to a new file: the allocator hands out the lowest free inode of
    // the chunk, which is this one, and the new in-core inode takes the freed one's place in
    // the cache (XFS's recycling: a lookup found, no eviction).
    let (found, active, reclaims) = (
        stat(&fs, Stat::IgFound),
        stat(&fs, Stat::VnActive),
        stat(&fs, Stat::IgReclaims),
    );
    let again = create(&fs, &root, "again").ino;
    assert_eq!(again, gone, "the freed number is the lowest free one");
    assert_eq!(stat(&fs, Stat::IgFound), found + 1);
    assert_eq!(stat(&fs, Stat::VnActive), active);
    assert_eq!(stat(&fs, Stat::IgReclaims), reclaims);
    fs.unmount().unwrap();
}

#[test]
fn the_worker_frees_unlinked_inodes_in_the_background_and_keeps_them_cached() {
    let (_img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    for i in 0..100 {
        let ip = create(&fs, &root, &format!("f{i}"));
        fs.write(&ip, 0, &[7u8; 8192]).unwrap();
    }
    fs.sync().unwrap();
    let used = used_inodes(&fs);
    let free = fs.statfs().bfree;
    let before = fs.stats.mount().snapshot();
    for i in 0..100 {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while fs.inodegc.pending() || used_inodes(&fs) != used - 100 {
        assert!(Instant::now() < deadline, "the worker did not free them");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Their data blocks, and the inode chunks and directory blocks that emptied.
    assert!(fs.statfs().bfree >= free + 200, "their blocks came back");
    let after = fs.stats.mount().snapshot();
    let grew = |s: Stat| after.get(s) - before.get(s);
    // As the kernel counts an unlinked inode: destroyed and marked reclaimable at the unlink,
    // still in core after inactivation (no reclaim, the gauge unchanged).
    assert_eq!(grew(Stat::VnRele), 100);
    assert_eq!(grew(Stat::VnRemove), 100);
    assert_eq!(grew(Stat::VnReclaim), 100);
    assert_eq!(grew(Stat::IgReclaims), 0);
    assert_eq!(after.get(Stat::VnActive), before.get(Stat::VnActive));
    fs.unmount().unwrap();
}

#[test]
fn sync_finishes_the_queued_inactivations() {
    let (_img, fs) = image::mem(64 << 20).mount();
    fs.inodegc.hold_worker(true);
    let root = fs.root().unwrap();
    let ip = create(&fs, &root, "big");
    fs.write(&ip, 0, &vec![3u8; 1 << 20]).unwrap();
    drop(ip);
    fs.sync().unwrap();
    let free = fs.statfs().bfree;
    let used = used_inodes(&fs);
    fs.unlink(&root, b"big").unwrap();
    assert_eq!(fs.inodegc.queued(), 1);
    assert_eq!(fs.statfs().bfree, free, "nothing freed while queued");
    fs.sync().unwrap();
    assert_eq!(fs.inodegc.queued(), 0);
    assert_eq!(
        fs.statfs().bfree,
        free + 256,
        "sync freed the file's blocks"
    );
    assert_eq!(used_inodes(&fs), used - 1);
    fs.unmount().unwrap();
}

#[test]
fn the_throttle_bounds_the_queue_when_the_worker_falls_behind() {
    let (_img, fs) = image::mem(64 << 20).mount();
    fs.inodegc.hold_worker(true);
    let root = fs.root().unwrap();
    let n = 3 * MAX_BACKLOG;
    for i in 0..n {
        create(&fs, &root, &format!("f{i}"));
    }
    let used = used_inodes(&fs);
    for i in 0..n {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
        // Per CPU list: a thread that moves between CPUs fills more than one.
        assert!(fs.inodegc.longest() <= MAX_BACKLOG + 1);
    }
    // The throttle runs when more than MAX_BACKLOG were queued before the newest.
    assert!(fs.inodegc.high_water() <= MAX_BACKLOG + 2);
    assert!(
        fs.inodegc.throttled() >= 2,
        "the unlinking thread ran the backlog"
    );
    let left = fs.inodegc.queued() as u64;
    assert_eq!(used_inodes(&fs), used - (n as u64 - left));
    fs.unmount().unwrap();
}

#[test]
fn unmount_leaves_no_orphan() {
    let (img, fs) = image::mem(64 << 20).mount();
    fs.inodegc.hold_worker(true);
    let root = fs.root().unwrap();
    for i in 0..50 {
        let ip = create(&fs, &root, &format!("f{i}"));
        fs.write(&ip, 0, &[1u8; 5000]).unwrap();
    }
    let used = used_inodes(&fs);
    for i in 0..50 {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
    }
    assert_eq!(fs.inodegc.queued(), 50);
    fs.unmount().unwrap();
    drop(fs);
    // A clean log: this mount does not look for orphans, so none may be on disk.
    let fs = img.mount();
    assert_eq!(used_inodes(&fs), used - 50);
    assert_clean(&fs, "after a clean unmount with inodes queued");
}

#[test]
fn a_create_out_of_space_finishes_the_queue_and_retries() {
    let (_img, fs) = image::mem(16 << 20).mount();
    let root = fs.root().unwrap();
    let big = create(&fs, &root, "big");
    let chunk = vec![5u8; 4096];
    let mut off = 0u64;
    loop {
        match fs.write(&big, off, &chunk) {
            Ok(_) => off += chunk.len() as u64,
            Err(FsError::NoSpace) => break,
            Err(e) => panic!("write: {e}"),
        }
    }
    drop(big);
    fs.inodegc.hold_worker(true);
    assert_eq!(
        fs.create(&root, b"full", 0o644, true).err(),
        Some(FsError::NoSpace),
        "the filesystem is full"
    );
    fs.unlink(&root, b"big").unwrap();
    assert_eq!(fs.inodegc.queued(), 1);
    fs.create(&root, b"fits", 0o644, true)
        .expect("the create flushed the queued inactivation and found space");
    assert_eq!(fs.inodegc.queued(), 0);
    fs.unmount().unwrap();
}

#[test]
fn queued_inodes_at_a_crash_are_freed_by_the_next_mount() {
    let img = image::fault(32 << 20).build();
    let fs = img.mount();
    let root = fs.root().unwrap();
    for i in 0..10 {
        let ip = create(&fs, &root, &format!("f{i}"));
        fs.write(&ip, 0, &[9u8; 20_000]).unwrap();
    }
    fs.sync().unwrap();
    let used = used_inodes(&fs);
    fs.inodegc.hold_worker(true);
    for i in 0..10 {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
    }
    assert_eq!(fs.inodegc.queued(), 10);
    // The unlinks are durable (a log force, not a sync: sync would finish the queue).
    fs.log.force_all("test").unwrap();
    fs.bufs.dev().flush().unwrap();
    let free_before = fs.statfs().bfree;
    let last = img.fault().flush_count();
    let crashed = img.fault().crash_image(&CrashPlan::at(last)).unwrap();
    drop(root);
    drop(fs);
    let fs = Fs::mount(crashed.dev, img.options.mount.clone()).expect("recovers");
    assert_clean(&fs, "after the orphans were freed");
    assert_eq!(used_inodes(&fs), used - 10, "the orphans were freed");
    assert!(fs.statfs().bfree > free_before, "their blocks came back");
    assert_clean(&fs, "after the orphans were freed");
}

/// The CPUs this thread may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity");
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Run `f` on a thread bound to `cpu`.
fn on_cpu<T: Send>(cpu: usize, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: as above; the set names one CPU this process may use.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(cpu, &mut set) };
            let rc =
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            assert_eq!(rc, 0, "sched_setaffinity to CPU {cpu}");
            f()
        })
        .join()
        .expect("the bound thread")
    })
}

#[test]
fn each_cpu_has_its_own_list_and_its_own_throttle() {
    let (_img, fs) = image::mem(64 << 20).mount();
    fs.inodegc.hold_worker(true);
    let root = fs.root().unwrap();
    let cpus = allowed_cpus();
    let n = MAX_BACKLOG;
    for i in 0..2 * n {
        create(&fs, &root, &format!("f{i}"));
    }
    let used = used_inodes(&fs);
    // Half the unlinks on one CPU, half on another (the same one if there is only one).
    let (first, second) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
    for (cpu, range) in [(first, 0..n), (second, n..2 * n)] {
        on_cpu(cpu, || {
            for i in range {
                fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
            }
        });
    }
    if first != second {
        // Two lists of MAX_BACKLOG: neither went past the throttle, nothing was freed.
        assert_eq!(fs.inodegc.queued(), 2 * n);
        assert_eq!(fs.inodegc.longest(), n);
        assert_eq!(fs.inodegc.throttled(), 0);
        assert_eq!(used_inodes(&fs), used);
    } else {
        // One CPU, one list: the throttle ran it when it passed MAX_BACKLOG.
        assert_eq!(fs.inodegc.throttled(), 1);
        assert!(fs.inodegc.longest() < n);
    }
    fs.inodegc_flush().unwrap();
    assert_eq!(fs.inodegc.queued(), 0);
    assert_eq!(used_inodes(&fs), used - 2 * n as u64);
    fs.unmount().unwrap();
}
