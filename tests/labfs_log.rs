//! The journal (issue 9): fsync is a log force of the inode's checkpoint, concurrent fsyncs
//! share log writes, the AIL writes metadata home, recovery replays what was acknowledged,
//! and a damaged log is cut or refused, never replayed wrongly.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::fault::{CrashPlan, Keep};
use fslab::fs::dev::{BlockDev, LatencyDev, LatencyParams, MemDev};
use fslab::fs::error::FsError;
use fslab::fs::format::{BB_PER_BLOCK, BLOCK_SIZE, BlockKind};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fs::stats::Stat;
use fslab::trace::{TraceConfig, testing};

use common::image::{self, assert_clean};

fn stat(fs: &Fs, s: Stat) -> u32 {
    fs.stats.mount().snapshot().get(s)
}

fn file_with(
    fs: &Fs,
    dir: &Arc<fslab::fs::inode::Inode>,
    name: &str,
    data: &[u8],
) -> Arc<fslab::fs::inode::Inode> {
    let (ip, _) = fs
        .create(dir, name.as_bytes(), 0o644, true)
        .expect("create");
    fs.write(&ip, 0, data).expect("write");
    ip
}

#[test]
fn each_fsync_of_a_new_file_is_one_log_force_and_one_log_write() {
    let (_img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    let (f0, w0) = (stat(&fs, Stat::LogForce), stat(&fs, Stat::LogWrites));
    for i in 0..50 {
        let ip = file_with(&fs, &root, &format!("f{i}"), &[i as u8; 4096]);
        fs.fsync(&ip, false).unwrap();
    }
    let forces = stat(&fs, Stat::LogForce) - f0;
    let writes = stat(&fs, Stat::LogWrites) - w0;
    assert_eq!(forces, 50, "one force per fsync");
    assert!(
        (50..=55).contains(&writes),
        "log writes {writes} for 50 fsyncs"
    );
    // A second fsync with nothing new forces nothing.
    let ip = fs.lookup_path(b"/f3").unwrap();
    let f1 = stat(&fs, Stat::LogForce);
    fs.fsync(&ip, false).unwrap();
    assert_eq!(
        stat(&fs, Stat::LogForce),
        f1,
        "an unpinned inode is not forced"
    );
    assert_eq!(
        fs.log.overrun_bytes(),
        0,
        "every transaction stayed in its reservation"
    );
}

#[test]
fn fdatasync_after_an_overwrite_skips_the_timestamp_only_change() {
    let (_img, fs) = image::mem(64 << 20).mount();
    let root = fs.root().unwrap();
    let ip = file_with(&fs, &root, "f", &[1u8; 8192]);
    fs.fsync(&ip, false).unwrap();
    fs.write(&ip, 0, &[2u8; 4096]).unwrap();
    let f0 = stat(&fs, Stat::LogForce);
    fs.fsync(&ip, true).unwrap();
    assert_eq!(
        stat(&fs, Stat::LogForce),
        f0,
        "fdatasync forced a timestamp-only change"
    );
    fs.fsync(&ip, false).unwrap();
    assert_eq!(stat(&fs, Stat::LogForce), f0 + 1, "fsync forces it");
    // Growing the file is more than timestamps: fdatasync must force it.
    fs.write(&ip, 8192, &[3u8; 100]).unwrap();
    fs.fsync(&ip, true).unwrap();
    assert_eq!(stat(&fs, Stat::LogForce), f0 + 2);
}

#[test]
fn concurrent_fsyncs_on_a_slow_flush_share_log_writes() {
    let mem: Arc<dyn BlockDev> = Arc::new(MemDev::new(256 << 20).unwrap());
    let params = LatencyParams {
        flush: std::time::Duration::from_micros(200),
        ..LatencyParams::NONE
    };
    let dev: Arc<dyn BlockDev> = Arc::new(LatencyDev::new(mem, params));
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).unwrap();
    let fs = Fs::mount(dev, opts.mount.clone()).unwrap();
    let root = fs.root().unwrap();
    let w0 = stat(&fs, Stat::LogWrites);
    let per = 40;
    std::thread::scope(|s| {
        for t in 0..8 {
            let (fs, root) = (&fs, &root);
            s.spawn(move || {
                let d = fs.mkdir(root, format!("d{t}").as_bytes(), 0o755).unwrap();
                for i in 0..per {
                    let ip = file_with(fs, &d, &format!("f{i}"), &[t as u8; 4096]);
                    fs.fsync(&ip, false).unwrap();
                }
            });
        }
    });
    let writes = f64::from(stat(&fs, Stat::LogWrites) - w0);
    let fsyncs = f64::from(8 * per);
    assert!(
        writes / fsyncs < 0.9,
        "{writes} log writes for {fsyncs} fsyncs: no group commit"
    );
    fs.unmount().unwrap();
}

#[test]
fn fsynced_files_come_back_from_the_log_after_a_crash_and_fsck_is_clean() {
    let img = image::fault(64 << 20).build();
    let fs = img.mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    for i in 0..30 {
        let ip = file_with(&fs, &d, &format!("f{i}"), &vec![i as u8; 5000 + i * 100]);
        fs.fsync(&ip, false).unwrap();
    }
    // Not fsync'd: may or may not be there, but the image must be consistent either way.
    file_with(&fs, &d, "late", b"late");
    let last = img.fault().flush_count();
    // The last fsync's log write is FUA, after the last flush: keep what completed.
    let crashed = img
        .fault()
        .crash_image(&CrashPlan::at(last).keep(Keep::All))
        .unwrap();
    drop(fs);
    let dev: Arc<dyn BlockDev> = crashed.dev;
    let fs = Fs::mount(Arc::clone(&dev), img.options.mount.clone()).expect("recovers");
    for i in 0..30 {
        let ip = fs
            .lookup_path(format!("/d/f{i}").as_bytes())
            .expect("fsynced file");
        let mut buf = vec![0u8; 5000 + i * 100];
        assert_eq!(fs.read(&ip, 0, &mut buf).unwrap(), buf.len());
        assert!(buf.iter().all(|&b| b == i as u8), "f{i} contents");
    }
    assert_clean(&fs, "after recovery");
    fs.unmount().unwrap();
    let fs = Fs::mount(dev, img.options.mount.clone()).expect("clean remount");
    assert_clean(&fs, "after a clean remount");
}

#[test]
fn a_new_inode_chunk_is_rebuilt_from_its_icreate_item_after_a_crash() {
    let img = image::fault(64 << 20).build();
    let fs = img.mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    // mkfs's chunk holds the root and the first files; the rest need a new chunk.
    let files: Vec<_> = (0..100)
        .map(|i| file_with(&fs, &d, &format!("f{i}"), &[i as u8; 100]))
        .collect();
    let blocks_before = stat(&fs, Stat::LogBlocks);
    fs.fsync(&files[99], false).unwrap();
    let ino = files[99].ino;
    let (daddr, _) = fs.geo.ino_location(ino);
    // One checkpoint for 100 creates: about 55 log blocks, mostly the 100 inode items. The
    // chunk's two 16 KiB inode clusters logged in full would add 66 more.
    let logged = stat(&fs, Stat::LogBlocks) - blocks_before;
    let last = img.fault().flush_count();
    let crashed = img
        .fault()
        .crash_image(&CrashPlan::at(last).keep(Keep::All))
        .unwrap();
    drop(files);
    drop(fs);
    let dev: Arc<dyn BlockDev> = crashed.dev;
    // The log had room, so the new chunk's clusters never went home: only the log has it.
    let mut raw = vec![0u8; BLOCK_SIZE];
    dev.read_at(&mut raw, daddr.bytes()).unwrap();
    assert!(
        raw.iter().all(|&b| b == 0),
        "inode {ino}'s cluster was written home before the crash"
    );
    let fs = Fs::mount(Arc::clone(&dev), img.options.mount.clone()).expect("recovers");
    for i in 0..100 {
        let ip = fs
            .lookup_path(format!("/d/f{i}").as_bytes())
            .expect("file of the fsynced directory");
        let mut buf = [0u8; 100];
        assert_eq!(fs.read(&ip, 0, &mut buf).unwrap(), 100);
    }
    assert_eq!(fs.lookup_path(b"/d/f99").unwrap().ino, ino);
    // fsck reads every slot of the rebuilt chunk, free ones included, and checks each CRC.
    assert_clean(&fs, "after recovery");
    assert!(
        logged < 90,
        "{logged} log blocks for 100 creates and a new chunk"
    );
}

#[test]
fn a_small_log_is_kept_free_by_pushing_the_ail_and_recovers_clean() {
    let (img, fs) = image::mem(64 << 20).options("logsize=1m").mount();
    let root = fs.root().unwrap();
    for i in 0..3000 {
        let ip = file_with(&fs, &root, &format!("file-{i:05}"), b"x");
        if i % 7 == 0 {
            fs.fsync(&ip, false).unwrap();
        }
    }
    assert!(
        stat(&fs, Stat::PushAilSuccess) > 0,
        "the AIL pushed items home"
    );
    assert!(
        stat(&fs, Stat::IclusterFlushcnt) > 0,
        "inode clusters were flushed"
    );
    assert!(stat(&fs, Stat::TryLogspace) > 3000);
    assert_clean(&fs, "with a full log");
    let fs = img.remount(fs);
    assert_eq!(fs.readdir(&fs.root().unwrap()).unwrap().len(), 3000);
    assert_clean(&fs, "after remount");
}

#[test]
fn the_log_tracepoints_fire_on_an_fsync_run() {
    let _serial = testing::serial();
    let (_img, fs) = image::mem(1 << 30).mount();
    let dir = tempfile::tempdir().unwrap();
    let session = TraceConfig {
        events: "xfs_log_force,xlog_iclog_*,xfs_ail_*".into(),
        out: Some(dir.path().join("t.txt")),
        // Room for every event of the run: the ring overwrites the oldest.
        ring_entries_per_thread: 1 << 20,
        ..TraceConfig::default()
    }
    .start()
    .expect("trace session");
    let root = fs.root().unwrap();
    for i in 0..1500 {
        let ip = file_with(&fs, &root, &format!("f{i}"), &[1u8; 4096]);
        fs.fsync(&ip, false).unwrap();
    }
    fs.unmount().unwrap();
    let report = session.finish().expect("finish");
    let text = std::fs::read_to_string(dir.path().join("t.txt")).unwrap();
    for ev in [
        "xfs_log_force:",
        "xlog_iclog_sync_done:",
        "xlog_iclog_switch:",
        "xfs_ail_insert:",
        "xfs_ail_push:",
        "xfs_ail_delete:",
    ] {
        assert!(text.contains(ev), "no {ev} event in the trace ({report:?})");
    }
    // An fsync of a pinned inode fires the force event at both of the kernel's sites.
    let forces = |caller: &str| {
        text.lines()
            .filter(|l| l.contains("xfs_log_force:") && l.ends_with(caller))
            .count()
    };
    let (fsync_site, seq_site) = (
        forces("caller xfs_file_fsync"),
        forces("caller xfs_log_force_seq"),
    );
    assert!(
        fsync_site >= 1000,
        "{fsync_site} forces from fsync for 1500 fsyncs"
    );
    assert_eq!(fsync_site, seq_site, "each fsync force fires at both sites");
}

/// The bytes of a crash image whose log needs replay: `n` files `/f{i}` made and fsync'd
/// with `data(i)`, the crash right after the last fsync's log write (no unmount record).
fn dirty_image(n: usize, data: impl Fn(usize) -> Vec<u8>) -> (image::Image, Vec<u8>) {
    let base = image::fault(32 << 20).build();
    let fs = base.mount();
    let root = fs.root().unwrap();
    for i in 0..n {
        let ip = file_with(&fs, &root, &format!("f{i}"), &data(i));
        fs.fsync(&ip, false).unwrap();
    }
    let last = base.fault().flush_count();
    let crashed = base
        .fault()
        .crash_image(&CrashPlan::at(last).keep(Keep::All))
        .unwrap()
        .dev;
    drop(fs);
    let mut bytes = vec![0u8; crashed.size() as usize];
    crashed.read_at(&mut bytes, 0).unwrap();
    (base, bytes)
}

/// A log record's sector on the device: the last written record of an image after `n`
/// fsync'd files, found from the head the mount reports.
fn log_area(img: &image::Image) -> (u64, u64) {
    let sb = fslab::fs::mount::read_superblock(img.dev.as_ref(), Default::default()).unwrap();
    (
        sb.logstart * BB_PER_BLOCK * 512,
        u64::from(sb.logblocks) * BLOCK_SIZE as u64,
    )
}

#[test]
fn single_bit_flips_in_the_log_are_cut_as_a_torn_tail_or_refused_never_replayed_wrong() {
    // Crash images with a dirty log: fsync'd files, no unmount record.
    let (base, image) = dirty_image(12, |i| vec![i as u8; 3000]);
    let (start, len) = log_area(&base);
    // The used part of the log: up to the last non-zero sector.
    let used = image[start as usize..(start + len) as usize]
        .chunks(512)
        .rposition(|s| s.iter().any(|&b| b != 0))
        .expect("a written log")
        + 1;
    let mut outcomes = (0, 0);
    let mut rng = 0x9e37_79b9u64;
    for trial in 0..600 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let byte = start as usize + (rng as usize % (used * 512));
        let bit = (rng >> 40) as u8 % 8;
        let mut img = image.clone();
        img[byte] ^= 1 << bit;
        let dev = Arc::new(MemDev::new(img.len() as u64).unwrap());
        dev.write_at(&img, 0, false).unwrap();
        let dev: Arc<dyn BlockDev> = dev;
        match Fs::mount(Arc::clone(&dev), Options::default().mount) {
            Ok(fs) => {
                // Whatever came back is consistent, and what is there is right.
                let r = fslab::fs::check::check(&fs).unwrap();
                assert!(
                    r.is_clean(),
                    "trial {trial} (byte {byte} bit {bit}): {:#?}",
                    r.findings
                );
                for i in 0..12 {
                    if let Ok(ip) = fs.lookup_path(format!("/f{i}").as_bytes()) {
                        let mut buf = vec![0u8; 3000];
                        fs.read(&ip, 0, &mut buf).unwrap();
                        assert!(
                            buf.iter().all(|&b| b == i as u8),
                            "trial {trial}: f{i} wrong"
                        );
                    }
                }
                outcomes.0 += 1;
            }
            Err(FsError::Corrupt {
                kind: BlockKind::LogRecord,
                ..
            }) => outcomes.1 += 1,
            Err(e) => panic!("trial {trial} (byte {byte} bit {bit}): untyped refusal {e}"),
        }
    }
    assert!(outcomes.0 > 0 && outcomes.1 > 0, "{outcomes:?}");
}

#[test]
fn labfs_check_replays_a_dirty_log_in_memory_and_leaves_the_image_alone() {
    let (_base, bytes) = dirty_image(5, |_| vec![7u8; 2000]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dirty.img");
    std::fs::write(&path, &bytes).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labfs"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("labfs runs");
    assert!(
        out.status.success(),
        "labfs check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read(&path).unwrap() == bytes,
        "labfs check wrote to the image"
    );
}

#[test]
fn creates_and_unlinks_without_fsync_unmount_cleanly() {
    let (img, fs) = image::mem(1 << 30).mount();
    let root = fs.root().unwrap();
    for i in 0..2000 {
        fs.create(&root, format!("f{i}").as_bytes(), 0o644, true)
            .unwrap();
    }
    for i in 0..2000 {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
    }
    if let Err(e) = fs.unmount() {
        panic!("unmount: {e} (shutdown: {:?})", fs.shutdown_reason());
    }
    drop(fs);
    let fs = img.mount();
    assert_clean(&fs, "after remount");
}

#[test]
fn an_open_unlinked_file_at_a_crash_is_freed_by_the_next_mount() {
    let img = image::fault(32 << 20).build();
    let fs = img.mount();
    let root = fs.root().unwrap();
    let ip = file_with(&fs, &root, "open", &[9u8; 20_000]);
    fs.open_inode(&ip);
    fs.unlink(&root, b"open").unwrap();
    // The unlink is durable; the inode is still in use (open), its blocks allocated.
    fs.sync().unwrap();
    let free_before = fs.statfs().bfree;
    let last = img.fault().flush_count();
    let crashed = img.fault().crash_image(&CrashPlan::at(last)).unwrap();
    drop(ip);
    drop(fs);
    let fs = Fs::mount(crashed.dev, img.options.mount.clone()).expect("recovers");
    assert_clean(&fs, "after the orphan was freed");
    assert!(
        fs.statfs().bfree > free_before,
        "the orphan's blocks came back"
    );
}

/// The signal-blocked mask of every thread of this process named `name`, from
/// `/proc/self/task/*/status` (`SigBlk`, hexadecimal, bit `n - 1` for signal `n`).
fn blocked_masks_of_threads_named(name: &str) -> Vec<u64> {
    let mut masks = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        if let Some(hex) = status.lines().find_map(|l| l.strip_prefix("SigBlk:")) {
            masks.push(u64::from_str_radix(hex.trim(), 16).unwrap());
        }
    }
    masks
}

#[test]
fn xfsaild_blocks_the_signals_that_end_a_process() {
    // A foreground `labfs mount` takes SIGINT/SIGTERM/SIGHUP with sigwait in one thread;
    // an xfsaild that left them unblocked would take the default action and kill the
    // process with the log unwritten.
    let (_img, fs) = image::mem(16 << 20).mount();
    // The thread names itself once it runs: wait for that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let masks = loop {
        let masks = blocked_masks_of_threads_named("xfsaild");
        if !masks.is_empty() {
            break masks;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a mount runs an xfsaild thread"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    for mask in masks {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_ne!(mask & (1 << (sig - 1)), 0, "xfsaild blocks signal {sig}");
        }
    }
    drop(fs);
}
