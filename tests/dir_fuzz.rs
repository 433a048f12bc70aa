//! Structurally corrupt directory blocks that still pass their CRC: random bytes of a
//! block-form block, data blocks, the leaf block, hash-tree blocks and free-index blocks are
//! overwritten and the CRC recomputed, so the directory code's own checks are what stands
//! between the bad bytes and a panic. Every operation may fail (with a typed error) but none
//! may panic, and the checker must keep reporting instead of failing.

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::cksum::Cksum;
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::dir::{self, FREE_FIRST, LEAF_FIRST};
use fslab::fs::error::FsError;
use fslab::fs::format::{BLOCK_SIZE, BlockKind};
use fslab::fs::inode::{Inode, InodeRead};
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fs::trans::Trans;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn name(i: u32) -> Vec<u8> {
    format!("fuzzed-entry-{i:05}").into_bytes()
}

/// An unmounted filesystem whose `/d` holds `n` files.
fn build(n: u32) -> Arc<dyn BlockDev> {
    let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(64 << 20).unwrap());
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).unwrap();
    let fs = Fs::mount(Arc::clone(&dev), opts.mount).unwrap();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    for i in 0..n {
        fs.create(&d, &name(i), 0o644, true).unwrap();
    }
    fs.unmount().unwrap();
    dev
}

/// Every block of `/d`: (filesystem block, kind).
fn dir_blocks(dev: &Arc<dyn BlockDev>) -> Vec<(u64, BlockKind)> {
    let fs = Fs::mount(Arc::clone(dev), Options::default().mount).unwrap();
    let d = fs.lookup_path(b"/d").unwrap();
    let (form, level) = {
        let mut tp = Trans::new(&fs);
        let dp = tp.lock_inode(Arc::clone(&d));
        let f = dir::form(&tp, dp).unwrap();
        let level = match f {
            dir::Form::Node => dir::node::tree_root(&mut tp, dp).unwrap().level,
            _ => 0,
        };
        tp.commit().unwrap();
        (f, level)
    };
    let core = InodeRead::lock(Arc::clone(&d));
    let mut out = Vec::new();
    for e in core.fork.extents() {
        for lblk in e.startoff..e.end() {
            let kind = match (form, lblk) {
                (dir::Form::Block, _) => BlockKind::DirBlock,
                (_, b) if b < LEAF_FIRST => BlockKind::DirData,
                (dir::Form::Leaf, _) => BlockKind::DirLeaf1,
                (_, b) if b == LEAF_FIRST && level > 0 => BlockKind::DaNode,
                (_, b) if b < FREE_FIRST => BlockKind::DirLeafN,
                _ => BlockKind::DirFree,
            };
            out.push((e.startblock + (lblk - e.startoff), kind));
        }
    }
    out
}

/// Exercise a mounted, damaged directory; every outcome but a panic is acceptable.
fn exercise(fs: &Fs, d: &Arc<Inode>, n: u32, rng: &mut Rng) {
    for i in (0..n).step_by(7) {
        let _ = fs.lookup(d, &name(i));
    }
    let _ = fs.lookup(d, b"..");
    let _ = fs.readdir(d);
    {
        let mut tp = Trans::new(fs);
        let dp = tp.lock_inode_shared(Arc::clone(d));
        let r = dir::check(&mut tp, dp);
        assert!(
            !matches!(r, Err(FsError::Crc { .. } | FsError::Corrupt { .. })),
            "the checker reports damage instead of failing: {r:?}"
        );
        let _ = dir::is_empty(&mut tp, dp);
        tp.commit().unwrap();
    }
    for _ in 0..3 {
        let i = rng.below(u64::from(n)) as u32;
        let _ = fs.unlink(d, &name(i));
        let _ = fs.create(d, format!("new-{}", rng.next()).as_bytes(), 0o644, true);
        let _ = fs.rename(d, &name(i + 1), d, format!("moved-{i}").as_bytes());
    }
}

fn fuzz(n: u32, rounds: u32, seed: u64) {
    let dev = build(n);
    let blocks = dir_blocks(&dev);
    let mut rng = Rng(seed);
    let cksum = Cksum::default();
    for _ in 0..rounds {
        let (fsb, kind) = blocks[rng.below(blocks.len() as u64) as usize];
        let at = fsb * BLOCK_SIZE as u64;
        let mut orig = vec![0u8; BLOCK_SIZE];
        dev.read_at(&mut orig, at).unwrap();
        let mut bad = orig.clone();
        for _ in 0..1 + rng.below(4) {
            // Headers, the first entries and the block's tail (counts, bests) half the time.
            let off = match rng.below(4) {
                0 => rng.below(160) as usize,
                1 => BLOCK_SIZE - 1 - rng.below(96) as usize,
                _ => rng.below(BLOCK_SIZE as u64) as usize,
            };
            bad[off] = if rng.below(2) == 0 {
                rng.below(256) as u8
            } else {
                bad[off] ^ (1 << rng.below(8))
            };
        }
        cksum.update(kind, &mut bad);
        dev.write_at(&bad, at, false).unwrap();
        {
            let fs = Fs::mount(Arc::clone(&dev), Options::default().mount).unwrap();
            if let Ok(d) = fs.lookup_path(b"/d") {
                exercise(&fs, &d, n, &mut rng);
            }
            // Dropped without unmount: nothing is written back, the image stays as it was.
        }
        dev.write_at(&orig, at, false).unwrap();
    }
}

#[test]
fn damaged_block_form_blocks_never_panic() {
    fuzz(40, 150, 0x1234_5678_9abc_def1);
}

#[test]
fn damaged_leaf_form_blocks_never_panic() {
    fuzz(300, 150, 0x0fed_cba9_8765_4321);
}

#[test]
fn damaged_node_form_blocks_never_panic() {
    fuzz(1500, 200, 0x5555_aaaa_3333_cccc);
}
