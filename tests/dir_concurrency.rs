//! Many threads in one large directory: writers create and unlink (exclusive directory lock),
//! readers look names up, list the directory and check it (shared lock) at the same time.
//! Readers holding the same directory's blocks must never deadlock (they take index blocks
//! first and data blocks in ascending order), and every reader sees a consistent directory.
//! A watchdog fails the test if the threads do not finish.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use fslab::fs::dir;
use fslab::fs::trans::{Resv, Trans};

use common::image;

/// Names that all share one hash (overlapping-bit flips of one base name), so a lookup
/// compares names in several data blocks.
fn family(n: usize) -> Vec<Vec<u8>> {
    let pairs = [0usize, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13];
    (0..n)
        .map(|mask| {
            let mut v = b"collision-base-x".to_vec();
            for (bit, &i) in pairs.iter().enumerate() {
                if mask >> bit & 1 == 1 {
                    v[i] ^= 0x01;
                    v[i + 1] ^= 0x80;
                }
            }
            v
        })
        .collect()
}

#[test]
fn readers_and_writers_share_a_directory_without_deadlock() {
    let (_img, fs) = image::mem(256 << 20).mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"shared", 0o755).unwrap();
    let names = family(700);
    for n in &names {
        fs.create(&d, n, 0o644, true).unwrap();
    }

    let total = names.len();
    let (done_tx, done_rx) = mpsc::channel();
    let worker = {
        let fs = Arc::clone(&fs);
        let d = Arc::clone(&d);
        std::thread::spawn(move || {
            let writing = AtomicBool::new(true);
            std::thread::scope(|s| {
                let writers: Vec<_> = (0..2)
                    .map(|w| {
                        let (fs, d) = (&fs, &d);
                        s.spawn(move || {
                            for i in 0..400 {
                                let name = format!("writer-{w}-{i:04}");
                                fs.create(d, name.as_bytes(), 0o644, true).unwrap();
                                if i % 2 == 0 {
                                    fs.unlink(d, name.as_bytes()).unwrap();
                                }
                            }
                        })
                    })
                    .collect();
                for r in 0..2 {
                    let (fs, d, names, writing) = (&fs, &d, &names, &writing);
                    s.spawn(move || {
                        let mut i = r;
                        while writing.load(Ordering::Acquire) {
                            for n in names.iter().skip(i % 7).step_by(37) {
                                fs.lookup(d, n).unwrap();
                            }
                            let listed = fs.readdir(d).unwrap();
                            assert!(listed.len() >= names.len());
                            if i % 5 == 0 {
                                let mut tp = Trans::new(fs, Resv::Create);
                                let dp = tp.lock_inode_shared(Arc::clone(d));
                                let findings = dir::check(&mut tp, dp).unwrap();
                                tp.commit().unwrap();
                                assert!(findings.is_empty(), "{findings:#?}");
                            }
                            i += 1;
                        }
                    });
                }
                for w in writers {
                    w.join().unwrap();
                }
                writing.store(false, Ordering::Release);
            });
            done_tx.send(()).unwrap();
        })
    };
    if done_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        panic!("directory threads did not finish in 60 s: deadlock");
    }
    worker.join().unwrap();
    assert_eq!(fs.readdir(&d).unwrap().len(), total + 400);
}
