//! labfs under many threads that allocate and free inode chunks and extents, every run under a
//! watchdog that fails the test instead of letting a deadlock hang it.
//!
//! Two kinds of load:
//! - the fs_mark commands from issue 7 that hung (`-d /b -n 10 -t 64`, `-t 4 -n 10000 -s 4096`,
//!   `-t 8 -n 2000 -s 4096`), run through the library engine on labfs, scaled down so CI takes
//!   seconds; each run creates and removes enough files that inode chunks are allocated and
//!   freed over and over while other threads free data extents;
//! - random create/unlink/rename/write/truncate/fsync mixes in a few shared directories, with
//!   name spaces large enough that chunks fill up and empty again.
//!
//! And one that is not random at all: an operation that holds an inode's lock while the log
//! fills up behind that inode's item at its tail (`an_inode_locked_at_the_log_tail_...`).
//!
//! Long variants are `#[ignore]`d; run them with
//! `cargo test --release --features lockcheck --test labfs_stress -- --ignored --nocapture`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Parser;
use parking_lot::Mutex;

use fslab::backend::lab::{Format, LabTarget};
use fslab::backend::{Target, mkdir_parents};
use fslab::cli::fsmark::FsmarkArgs;
use fslab::fs::Fs;
use fslab::fs::check::check;
use fslab::fs::dev::{BlockDev, DevError, MemDev};
use fslab::fs::error::FsError;
use fslab::fs::inode::{Inode, InodeRead};
use fslab::fs::mkfs::mkfs;
use fslab::fs::namei::SetAttr;
use fslab::fs::options::Options;
use fslab::rng::SplitMix64;
use fslab::workload::SystemClock;
use fslab::workload::fsmark::{self, LoopReport, LoopStart, Reporter, RunEnv, RunStart};

use common::image;

/// Run `body` on its own thread and fail if `progress()` stops moving for `stall` (a
/// deadlock: every thread waits on a lock) or the whole run exceeds `limit`.
fn with_watchdog<T: Send + 'static>(
    what: &str,
    progress: impl Fn() -> u64,
    stall: Duration,
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    let start = Instant::now();
    let mut last = (progress(), Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(v) => return v,
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the run panicked"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let p = progress();
        if p != last.0 {
            last = (p, Instant::now());
        }
        assert!(
            last.1.elapsed() < stall,
            "{what}: watchdog fired, no progress for {stall:?} after {p} steps (deadlock)"
        );
        assert!(
            start.elapsed() < limit,
            "{what}: watchdog fired, still running after {limit:?} ({p} steps)"
        );
    }
}

/// The engine's live counters, shared with the watchdog: loops finished and the files done
/// in the running loop.
#[derive(Default)]
struct Live {
    loops: AtomicU64,
    current: Mutex<Option<Arc<fsmark::Progress>>>,
}

impl Live {
    fn steps(&self) -> u64 {
        let files = self.current.lock().as_ref().map_or(0, |p| p.files_done());
        (self.loops.load(Ordering::Relaxed) << 32) + files
    }
}

struct Rows {
    rows: Vec<LoopReport>,
    live: Arc<Live>,
}

impl Reporter for Rows {
    fn run_started(&mut self, _: &RunStart<'_>) -> std::io::Result<()> {
        Ok(())
    }

    fn loop_started(&mut self, start: &LoopStart) -> std::io::Result<()> {
        *self.live.current.lock() = Some(Arc::clone(&start.progress));
        Ok(())
    }

    fn loop_finished(&mut self, r: &LoopReport) -> std::io::Result<()> {
        self.live.loops.fetch_add(1, Ordering::Relaxed);
        self.rows.push(r.clone());
        Ok(())
    }
}

/// Run one fs_mark command line on a fresh labfs in memory under the watchdog; fsck after.
fn fsmark_on_labfs(args: &str, dev_bytes: u64) {
    let argv: Vec<String> = std::iter::once("fsmark".to_string())
        .chain(args.split_whitespace().map(str::to_string))
        .collect();
    let config = FsmarkArgs::try_parse_from(&argv)
        .expect("parses")
        .to_config()
        .expect("valid")
        .0;
    let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(dev_bytes).unwrap());
    let target = Arc::new(LabTarget::new(dev, &Options::default(), Format::Always).unwrap());
    let live = Arc::new(Live::default());
    let what = format!("fsmark {args}");
    let (t, l) = (Arc::clone(&target), Arc::clone(&live));
    let rows = with_watchdog(
        &what,
        move || l.steps(),
        Duration::from_secs(20),
        Duration::from_secs(600),
        move || {
            for d in &config.dirs {
                mkdir_parents(t.as_ref(), d).unwrap();
            }
            let mut obs = Rows {
                rows: Vec::new(),
                live,
            };
            let env = RunEnv {
                target: t.as_ref() as &dyn Target,
                clock: &SystemClock,
                interrupt: None,
            };
            fsmark::run(&env, &config, &mut obs).unwrap();
            obs.rows
        },
    );
    assert!(!rows.is_empty(), "{what}: no loop finished");
    let fs = Arc::clone(target.fs());
    fs.sync().unwrap();
    let r = check(&fs).unwrap();
    assert!(r.is_clean(), "{what}: fsck findings: {:#?}", r.findings);
}

#[test]
fn fsmark_64_threads_creating_and_unlinking_never_deadlock() {
    for _ in 0..10 {
        fsmark_on_labfs("-d /b -n 10 -t 64", 1 << 30);
    }
}

#[test]
fn fsmark_with_data_from_several_threads_never_deadlocks() {
    fsmark_on_labfs("-d /b -t 4 -n 500 -s 4096", 256 << 20);
    fsmark_on_labfs("-d /b -t 8 -n 200 -s 4096", 256 << 20);
}

#[test]
#[ignore = "long: the issue's full fs_mark commands, repeated (about a minute in release)"]
fn fsmark_issue_commands_repeated_long() {
    for _ in 0..5 {
        fsmark_on_labfs("-d /b -n 10 -t 64", 1 << 30);
        fsmark_on_labfs("-d /b -t 8 -n 2000 -s 4096", 1 << 30);
    }
    fsmark_on_labfs("-d /b -t 4 -n 10000 -s 4096", 1 << 30);
}

/// Random namespace and data operations from `threads` threads on `dirs` shared directories
/// with `names` names each, for `run_for`; then fsck. Errors a racing namespace can produce
/// (ENOENT, EEXIST, EISDIR, ENOTEMPTY) are expected; anything else fails the test.
fn random_mix(threads: u64, dirs: u64, names: u64, run_for: Duration, seed: u64) {
    random_mix_with("", threads, dirs, names, run_for, seed);
}

/// [`random_mix`] on a filesystem made and mounted with `-o options`.
fn random_mix_with(
    options: &str,
    threads: u64,
    dirs: u64,
    names: u64,
    run_for: Duration,
    seed: u64,
) {
    let (_img, fs) = image::mem(512 << 20).options(options).mount();
    let root = fs.root().unwrap();
    for d in 0..dirs {
        fs.mkdir(&root, format!("d{d}").as_bytes(), 0o755).unwrap();
    }
    let progress = Arc::new(AtomicU64::new(0));
    let what = format!("random mix of {threads} threads");
    let fs2 = Arc::clone(&fs);
    let (p1, p2) = (Arc::clone(&progress), Arc::clone(&progress));
    with_watchdog(
        &what,
        move || p1.load(Ordering::Relaxed),
        Duration::from_secs(20),
        run_for + Duration::from_secs(120),
        move || {
            let deadline = Instant::now() + run_for;
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let (fs, progress) = (Arc::clone(&fs2), Arc::clone(&p2));
                    std::thread::spawn(move || {
                        let mut rng =
                            SplitMix64::new(seed ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                        let data = vec![t as u8; 64 << 10];
                        while Instant::now() < deadline {
                            let r = one_op(&fs, &mut rng, dirs, names, &data);
                            match r {
                                Ok(())
                                | Err(
                                    FsError::NotFound
                                    | FsError::Exists
                                    | FsError::IsDir
                                    | FsError::NotDir
                                    | FsError::NotEmpty,
                                ) => {}
                                Err(e) => panic!("thread {t}: {e}"),
                            }
                            progress.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
        },
    );
    assert!(
        progress.load(Ordering::Relaxed) > threads * 10,
        "too few operations ran"
    );
    fs.sync().unwrap();
    let r = check(&fs).unwrap();
    assert!(r.is_clean(), "{what}: fsck findings: {:#?}", r.findings);
}

fn path(d: u64, n: u64) -> (String, String) {
    (format!("/d{d}"), format!("n{n}"))
}

fn one_op(
    fs: &Fs,
    rng: &mut SplitMix64,
    dirs: u64,
    names: u64,
    data: &[u8],
) -> Result<(), FsError> {
    let (d1, n1) = path(rng.below(dirs), rng.below(names));
    let (d2, n2) = path(rng.below(dirs), rng.below(names));
    let dir1 = fs.lookup_path(d1.as_bytes())?;
    match rng.below(16) {
        0..=4 => {
            let (ip, _) = fs.create(&dir1, n1.as_bytes(), 0o644, false)?;
            fs.open_inode(&ip);
            let len = 1 + rng.below(data.len() as u64) as usize;
            let r = fs
                .write(&ip, rng.below(4) * 4096, &data[..len])
                .and_then(|_| {
                    if rng.below(4) == 0 {
                        fs.fsync(&ip, false)
                    } else {
                        Ok(())
                    }
                });
            fs.release_inode(&ip)?;
            r
        }
        5..=8 => fs.unlink(&dir1, n1.as_bytes()),
        9 | 10 => {
            let dir2 = fs.lookup_path(d2.as_bytes())?;
            fs.rename(&dir1, n1.as_bytes(), &dir2, n2.as_bytes())
        }
        11 => {
            let ip = fs.lookup(&dir1, n1.as_bytes())?;
            fs.truncate(&ip, rng.below(3) * 6000)
        }
        12 => fs.mkdir(&dir1, n1.as_bytes(), 0o755).map(drop),
        13 => fs.rmdir(&dir1, n1.as_bytes()),
        14 => {
            let ip = fs.lookup(&dir1, n1.as_bytes())?;
            fs.fsync(&ip, true)
        }
        _ => {
            let ip = fs.lookup(&dir1, n1.as_bytes())?;
            let mut buf = [0u8; 512];
            fs.read(&ip, 0, &mut buf).map(drop)
        }
    }
}

#[test]
fn random_mixes_in_shared_directories_allocate_and_free_chunks_without_deadlock() {
    // 300 names per directory: inode chunks (64 inodes) fill and empty as files come and go.
    random_mix(8, 3, 300, Duration::from_secs(3), 0x5eed);
}

#[test]
fn random_mixes_on_the_smallest_log_never_wait_for_space_holding_a_lock() {
    // A 256 KiB log is full most of the time: every thread that locks an inode and then
    // waits for log space (inactivation freeing a file's blocks, a write's timestamps, a
    // truncate) risks holding the item at the tail.
    random_mix_with("logsize=256k", 16, 4, 300, Duration::from_secs(4), 0x7a11);
}

#[test]
#[ignore = "long: two minutes of random mixes from 16 threads"]
fn random_mixes_long() {
    random_mix(16, 4, 2000, Duration::from_secs(120), 0xfeed);
}

/// A memory device whose reads of one byte range block, once armed, until the test opens
/// the gate: it holds an operation at a chosen point (a data read under an inode's lock) for
/// as long as the test needs.
struct GateDev {
    inner: MemDev,
    gate: Mutex<Gate>,
    cv: parking_lot::Condvar,
}

#[derive(Default)]
struct Gate {
    /// Byte range whose reads wait while the gate is shut.
    range: Option<std::ops::Range<u64>>,
    /// Readers waiting at the gate now.
    waiting: usize,
}

impl GateDev {
    fn new(bytes: u64) -> GateDev {
        GateDev {
            inner: MemDev::new(bytes).unwrap(),
            gate: Mutex::new(Gate::default()),
            cv: parking_lot::Condvar::new(),
        }
    }

    /// Shut the gate on reads touching `range`.
    fn shut(&self, range: std::ops::Range<u64>) {
        self.gate.lock().range = Some(range);
    }

    /// Wait until a reader is held at the gate (false after `limit`).
    fn wait_for_reader(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut g = self.gate.lock();
        while g.waiting == 0 {
            if self.cv.wait_until(&mut g, deadline).timed_out() {
                return false;
            }
        }
        true
    }

    /// Let every held reader go, and every later one through.
    fn open(&self) {
        self.gate.lock().range = None;
        self.cv.notify_all();
    }
}

impl BlockDev for GateDev {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        let end = offset + buf.len() as u64;
        let mut g = self.gate.lock();
        if g.range
            .as_ref()
            .is_some_and(|r| offset < r.end && r.start < end)
        {
            g.waiting += 1;
            self.cv.notify_all();
            while g.range.is_some() {
                self.cv.wait(&mut g);
            }
            g.waiting -= 1;
        }
        drop(g);
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        self.inner.write_at(buf, offset, fua)
    }

    fn flush(&self) -> Result<(), DevError> {
        self.inner.flush()
    }

    fn describe(&self) -> String {
        format!("gate over {}", self.inner.describe())
    }
}

/// An operation on file `x` that reads a block of its data while it holds `x`'s ILOCK, and
/// changes `x` in a transaction.
type HeldOp = fn(&Fs, &Arc<Inode>) -> Result<(), FsError>;

/// Files the fillers of [`inode_locked_at_the_log_tail`] change, per thread.
const FILL_FILES: usize = 800;
/// Filler threads.
const FILLERS: usize = 4;

/// The log-space deadlock, made to happen every time: `op` holds file `x`'s ILOCK while it
/// reads a block of `x`'s data (held at the gate), `x`'s log item is the oldest in the AIL,
/// and other threads fill the log behind it, each change a small transaction (`setattr`)
/// like the one `op` makes next. The AIL cannot write `x` home while its lock is held, so the
/// tail stays at `x` and the fillers end up waiting for log space. When the read is let go,
/// `op` must not then wait for log space itself with `x` still locked: it would wait for
/// ever, and the fillers with it. Reserving log space before taking the ILOCK (XFS's
/// `xfs_trans_alloc` before `xfs_ilock`) means `op` already has its space, so it commits,
/// `x` moves forward in the log, and everything drains.
fn inode_locked_at_the_log_tail(what: &'static str, op: HeldOp) {
    let dev = Arc::new(GateDev::new(64 << 20));
    let opts = Options::parse("logsize=256k").unwrap();
    mkfs(Arc::clone(&dev) as Arc<dyn BlockDev>, &opts).unwrap();
    let fs = Fs::mount(Arc::clone(&dev) as Arc<dyn BlockDev>, opts.mount.clone()).unwrap();
    let root = fs.root().unwrap();
    let fill = fs.mkdir(&root, b"fill", 0o755).unwrap();
    for i in 0..FILLERS * FILL_FILES {
        fs.create(&fill, format!("f{i}").as_bytes(), 0o644, true)
            .unwrap();
    }
    let (x, _) = fs.create(&root, b"x", 0o644, true).unwrap();
    fs.write(&x, 0, &[1u8; 8192]).unwrap();
    fs.fsync(&x, false).unwrap();
    fs.unmount().unwrap();
    drop((x, fill, root, fs));
    // Mounted again: nothing cached, nothing in the log. Then x's item is the only one.
    let fs = Fs::mount(Arc::clone(&dev) as Arc<dyn BlockDev>, opts.mount).unwrap();
    let x = fs.lookup_path(b"/x").unwrap();
    let fill = fs.lookup_path(b"/fill").unwrap();
    let files: Vec<Arc<Inode>> = (0..FILLERS * FILL_FILES)
        .map(|i| fs.lookup(&fill, format!("f{i}").as_bytes()).unwrap())
        .collect();
    let touch = SetAttr {
        mtime: Some(1),
        ..SetAttr::default()
    };
    fs.setattr(&x, &touch).unwrap();
    fs.sync_metadata().unwrap();
    assert_eq!(fs.log.ail_len(), 1, "x's item alone in the AIL");
    let first = InodeRead::lock(Arc::clone(&x)).fork.extents()[0].startblock * 4096;
    dev.shut(first..first + 4096);

    let progress = Arc::new(AtomicU64::new(0));
    let (fs2, p1, p2, dev2) = (
        Arc::clone(&fs),
        Arc::clone(&progress),
        Arc::clone(&progress),
        Arc::clone(&dev),
    );
    let label = format!("{what} holding the ILOCK of the inode at the log tail");
    with_watchdog(
        &label,
        move || p1.load(Ordering::Relaxed),
        Duration::from_secs(20),
        Duration::from_secs(120),
        move || {
            let fs = fs2;
            let held = {
                let (fs, x) = (Arc::clone(&fs), Arc::clone(&x));
                std::thread::spawn(move || op(&fs, &x))
            };
            assert!(
                dev2.wait_for_reader(Duration::from_secs(10)),
                "{what} never read x's data"
            );
            // Fill the log behind x, one inode item per transaction, until the fillers
            // wait for space.
            let fillers: Vec<_> = files
                .chunks(FILL_FILES)
                .map(|mine| {
                    let (fs, mine, progress) = (Arc::clone(&fs), mine.to_vec(), Arc::clone(&p2));
                    std::thread::spawn(move || {
                        for (i, ip) in mine.iter().enumerate() {
                            let t = SetAttr {
                                mtime: Some(i as i64 + 2),
                                ..SetAttr::default()
                            };
                            fs.setattr(ip, &t).unwrap();
                            progress.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            let mut last = (p2.load(Ordering::Relaxed), Instant::now());
            while last.1.elapsed() < Duration::from_millis(500) {
                std::thread::sleep(Duration::from_millis(20));
                let now = p2.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                }
            }
            let filled = last.0;
            assert!(
                filled < (FILLERS * FILL_FILES) as u64,
                "the log never filled up behind x ({filled} changes went through): \
                 the test no longer makes the situation it is about"
            );
            dev2.open();
            held.join().unwrap().unwrap();
            for f in fillers {
                f.join().unwrap();
            }
            p2.fetch_add(1, Ordering::Relaxed);
        },
    );
    fs.sync().unwrap();
    let r = check(&fs).unwrap();
    assert!(r.is_clean(), "{label}: fsck findings: {:#?}", r.findings);
}

#[test]
fn an_inode_locked_at_the_log_tail_by_a_write_never_stops_the_log() {
    // A partial write into a block not cached reads it under the ILOCK, then updates the
    // timestamps in a transaction.
    inode_locked_at_the_log_tail("a write", |fs, x| fs.write(x, 100, b"abc").map(drop));
}

#[test]
fn an_inode_locked_at_the_log_tail_by_a_truncate_never_stops_the_log() {
    // A truncate to inside a block zeroes the rest of it, reading it under the ILOCK, then
    // changes the size and frees the blocks past it in transactions.
    inode_locked_at_the_log_tail("a truncate", |fs, x| fs.truncate(x, 100))
}
