//! The writeback list (thread 002): it holds exactly the inodes whose data is being written
//! back, every `sb_mark_inode_writeback` is paired with one `sb_clear_inode_writeback`, it is
//! empty when the filesystem is clean, and `sync` makes the same data durable whichever way
//! it finds the write-back to wait on (`sync_wait=wblist` or `all`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fslab::fs::Fs;
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fs::options::SyncWait;
use fslab::testing::crash::workload::{FsmarkLoad, Workload};
use fslab::testing::crash::{Coverage, SweepOptions, sweep};
use fslab::trace::{TraceConfig, testing};

fn fresh(spec_latency: Option<std::time::Duration>) -> Arc<Fs> {
    let mem = MemDev::new(64 << 20).expect("memory device");
    let dev: Arc<dyn BlockDev> = match spec_latency {
        None => Arc::new(mem),
        Some(lat) => {
            let spec: fslab::fs::dev::spec::DeviceSpec =
                format!("mem:64m,lat={}us", lat.as_micros())
                    .parse()
                    .expect("spec");
            fslab::fs::dev::open(&spec).expect("latency device")
        }
    };
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).expect("mkfs");
    Fs::mount(dev, opts.mount).expect("mount")
}

/// Per inode, the sequence of writeback-list events in a trace text: `+` mark, `-` clear.
fn events_by_inode(text: &str) -> BTreeMap<u64, String> {
    let mut out: BTreeMap<u64, String> = BTreeMap::new();
    for line in text.lines() {
        let sign = if line.contains(" sb_mark_inode_writeback: ") {
            '+'
        } else if line.contains(" sb_clear_inode_writeback: ") {
            '-'
        } else {
            continue;
        };
        let ino = line
            .split_whitespace()
            .skip_while(|w| *w != "ino")
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no inode number in {line}"));
        out.entry(ino).or_default().push(sign);
    }
    out
}

#[test]
fn marks_and_clears_pair_up_and_the_list_is_empty_when_clean() {
    let _serial = testing::serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("trace.txt");
    let session = TraceConfig {
        events: "sb_mark_inode_writeback,sb_clear_inode_writeback".to_string(),
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("trace session");
    let fs = fresh(None);
    let root = fs.root().expect("root");
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (fs, root) = (&fs, &root);
            s.spawn(move || {
                for i in 0..40u32 {
                    let name = format!("t{t}-{i}");
                    let (ip, _) = fs
                        .create(root, name.as_bytes(), 0o644, true)
                        .expect("create");
                    fs.write(&ip, 0, &vec![t as u8; 4096 * (1 + i as usize % 3)])
                        .expect("write");
                    // Half the files are fsynced here, the rest by the sync below.
                    if i % 2 == 0 {
                        fs.fsync(&ip, false).expect("fsync");
                    }
                }
            });
        }
    });
    fs.sync().expect("sync");
    session.finish().expect("finish");
    assert_eq!(fs.writeback_list_len(), 0, "nothing is under writeback");
    assert_eq!(fs.wait_writeback(SyncWait::WbList), 0);
    // The old way walks every cached inode: the root and the 160 files at least.
    assert!(fs.wait_writeback(SyncWait::All) >= 161);
    let text = std::fs::read_to_string(out).expect("trace text");
    let seqs = events_by_inode(&text);
    assert_eq!(
        seqs.len(),
        160,
        "every file with data went through the list once or more"
    );
    for (ino, seq) in &seqs {
        assert!(
            seq.len() % 2 == 0 && seq.as_bytes().chunks(2).all(|p| p == b"+-"),
            "inode {ino}: events {seq} do not pair up"
        );
    }
}

#[test]
fn an_inode_is_on_the_list_exactly_while_its_data_is_written() {
    // Every device write takes 20 ms, so a 1 MiB write-back is long enough to be seen.
    let fs = fresh(Some(std::time::Duration::from_millis(20)));
    let root = fs.root().expect("root");
    let (ip, _) = fs.create(&root, b"big", 0o644, true).expect("create");
    fs.write(&ip, 0, &vec![5u8; 1 << 20]).expect("write");
    assert_eq!(
        fs.writeback_list_len(),
        0,
        "dirty data is not under writeback yet"
    );
    let done = AtomicBool::new(false);
    let seen = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            fs.fsync(&ip, false).expect("fsync");
            done.store(true, Ordering::Release);
        });
        let mut seen = 0usize;
        while !done.load(Ordering::Acquire) {
            seen = seen.max(fs.writeback_list_len());
            std::thread::yield_now();
        }
        writer.join().expect("writer");
        seen
    });
    assert_eq!(seen, 1, "the one file under writeback, and nothing else");
    assert_eq!(fs.writeback_list_len(), 0);
}

#[test]
fn sync_makes_the_same_data_durable_with_either_wait_mode() {
    let workload = Workload::Fsmark(FsmarkLoad {
        sync: 4,
        files: 30,
        size: 8192,
        threads: 1,
    });
    let mut images = Vec::new();
    for wait in ["wblist", "all"] {
        let mut options = Options::default();
        options.mount.sync_wait = wait.parse().expect("sync_wait");
        let report = sweep(
            &workload,
            &options,
            &SweepOptions {
                coverage: Coverage::Durable,
                seed: 1,
                stop_after: 3,
            },
        )
        .expect("the harness runs");
        assert!(report.failures.is_empty(), "sync_wait={wait}: {report}");
        assert!(report.images >= 30, "sync_wait={wait}: {report}");
        images.push(report.crash_points);
    }
    assert_eq!(
        images[0], images[1],
        "both modes make the same writes and flushes"
    );
}
