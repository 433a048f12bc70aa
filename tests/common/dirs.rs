//! Directory fixtures: a directory full of files, the form a directory is in, where its
//! blocks live, and a one-transaction runner for the directory layer's own calls.

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dir::{self, Form};
use fslab::fs::error::FsResult;
use fslab::fs::inode::{Inode, InodeRead};
use fslab::fs::trans::{InodeId, Resv, Trans};

use super::image::Image;

/// Mount `img`, make directory `/name` holding one empty file per name in `names`, and
/// unmount again (so everything is on the device).
pub fn make_dir_of_files(img: &Image, name: &[u8], names: impl IntoIterator<Item = Vec<u8>>) {
    let fs = img.mount();
    let root = fs.root().expect("root");
    let d = fs.mkdir(&root, name, 0o755).expect("mkdir");
    for n in names {
        fs.create(&d, &n, 0o644, true).unwrap_or_else(|e| {
            panic!("create '{}': {e}", String::from_utf8_lossy(&n));
        });
    }
    drop((d, root));
    fs.unmount().expect("unmount");
}

/// Run `f` on directory `d` in one transaction holding its lock exclusively, then commit
/// (whatever `f` returned, so a refused change still ends its transaction cleanly).
pub fn in_dir_trans<R>(fs: &Fs, d: &Arc<Inode>, f: impl FnOnce(&mut Trans, InodeId) -> R) -> R {
    let mut tp = Trans::new(fs, Resv::Create);
    let dp = tp.lock_inode(Arc::clone(d));
    let r = f(&mut tp, dp);
    tp.commit().expect("commit");
    r
}

/// The form directory `d` is in.
pub fn form_of(fs: &Fs, d: &Arc<Inode>) -> Form {
    let mut tp = Trans::new(fs, Resv::Create);
    let dp = tp.lock_inode_shared(Arc::clone(d));
    let f = dir::form(&tp, dp).expect("directory form");
    tp.commit().expect("commit");
    f
}

/// What the directory checker finds in `d` (empty when it is sound).
pub fn dir_findings(fs: &Fs, d: &Arc<Inode>) -> FsResult<Vec<String>> {
    let mut tp = Trans::new(fs, Resv::Create);
    let dp = tp.lock_inode_shared(Arc::clone(d));
    let found = dir::check(&mut tp, dp);
    tp.commit().expect("commit");
    found
}

/// The filesystem block that holds directory block `lblk` of `d`.
pub fn dir_block_address(d: &Arc<Inode>, lblk: u64) -> u64 {
    let core = InodeRead::lock(Arc::clone(d));
    let e = core
        .fork
        .extents()
        .iter()
        .find(|e| e.startoff <= lblk && lblk < e.end())
        .copied()
        .unwrap_or_else(|| panic!("directory block {lblk} is not mapped"));
    e.startblock + (lblk - e.startoff)
}
