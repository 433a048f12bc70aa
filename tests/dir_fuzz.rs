//! Structurally corrupt directory blocks that still pass their CRC: random bytes of a
//! block-form block, data blocks, the leaf block, hash-tree blocks and free-index blocks are
//! overwritten and the CRC recomputed, so the directory code's own checks are what stands
//! between the bad bytes and a panic. Every operation may fail (with a typed error) but none
//! may panic, and the checker must keep reporting instead of failing.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::cksum::Cksum;
use fslab::fs::dir::{self, FREE_FIRST, LEAF_FIRST};
use fslab::fs::error::FsError;
use fslab::fs::format::{BLOCK_SIZE, BlockKind};
use fslab::fs::inode::{Inode, InodeRead};
use fslab::fs::trans::{Resv, Trans};
use fslab::rng::SplitMix64;

use common::dirs::{in_dir_trans, make_dir_of_files};
use common::image::{self, Image};

fn name(i: u32) -> Vec<u8> {
    format!("fuzzed-entry-{i:05}").into_bytes()
}

/// An unmounted filesystem whose `/d` holds `n` files.
fn build(n: u32) -> Image {
    let img = image::mem(64 << 20).build();
    make_dir_of_files(&img, b"d", (0..n).map(name));
    img
}

/// Every block of `/d`: (filesystem block, kind).
fn dir_blocks(img: &Image) -> Vec<(u64, BlockKind)> {
    let fs = img.mount();
    let d = fs.lookup_path(b"/d").unwrap();
    let (form, level) = in_dir_trans(&fs, &d, |tp, dp| {
        let f = dir::form(tp, dp).unwrap();
        let level = match f {
            dir::Form::Node => dir::node::tree_root(tp, dp).unwrap().level,
            _ => 0,
        };
        (f, level)
    });
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
fn exercise(fs: &Fs, d: &Arc<Inode>, n: u32, rng: &mut SplitMix64) {
    for i in (0..n).step_by(7) {
        let _ = fs.lookup(d, &name(i));
    }
    let _ = fs.lookup(d, b"..");
    let _ = fs.readdir(d);
    {
        let mut tp = Trans::new(fs, Resv::Create);
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
        let _ = fs.create(d, format!("new-{}", rng.next_u64()).as_bytes(), 0o644, true);
        let _ = fs.rename(d, &name(i + 1), d, format!("moved-{i}").as_bytes());
    }
}

fn fuzz(n: u32, rounds: u32, seed: u64) {
    let img = build(n);
    let dev = &img.dev;
    let blocks = dir_blocks(&img);
    let mut rng = SplitMix64::new(seed);
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
            let fs = img.mount();
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
