//! The directory checker behind [`super::check`]: reads every block of one directory and
//! reports every structural problem, each naming the block (kind, directory block, device
//! address) and what is wrong.
//!
//! What is checked: the form matches the mapped blocks; `di.size` is the shortform size or
//! the end of the last data block; `di.nblocks` covers the mapped blocks; every block's
//! header (CRC and magic through the cache, then self address, UUID, owner); every data
//! region walks cleanly (lengths, tags), free regions are never adjacent, the bestfree table
//! is exact, no empty data block besides block 0 is kept; `.` and `..` sit at 64 and 80 of
//! block 0 with `.` naming the directory; names are valid and unique; every hash entry
//! (block leaf, leaf1 block or hash tree) names an entry whose name hashes to it, every entry
//! has exactly one, and they are sorted; bests (leaf1 or free-index blocks) equal each data
//! block's largest free region, with holes exactly where no data block is; the hash tree
//! passes the generic B+tree checker and owns exactly the index-space blocks.

use std::collections::BTreeMap;

use crate::fs::fastmap::{FastMap, FastSet};

use super::data::{self, Slot};
use super::node::{self, HashStore};
use super::{
    FREE_BESTS, FREE_FIRST, Form, LEAF_FIRST, MAX_FREE_BLOCKS, NULL_BEST, addr_of, block, form,
    hashname, leaf, read_block, sf,
};
use crate::fs::btree;
use crate::fs::btree::kinds::DirHashSpec;
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::endian::{get_u16, get_u32};
use crate::fs::format::{BLOCK_SIZE, BlockKind, NAME_MAX};
use crate::fs::inode::DataFork;
use crate::fs::trans::{InodeId, Trans};

/// A read failure is a finding; anything else (shutdown) stops the check.
fn finding(e: FsError) -> FsResult<String> {
    match e {
        FsError::Crc { .. } | FsError::Corrupt { .. } | FsError::Io { .. } => Ok(e.to_string()),
        other => Err(other),
    }
}

/// Why a name cannot be a directory entry, if it cannot.
fn bad_name(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty name")
    } else if name.len() > NAME_MAX {
        Some("name longer than 255 bytes")
    } else if name.contains(&0) || name.contains(&b'/') {
        Some("name contains NUL or '/'")
    } else {
        None
    }
}

/// An inode number no entry can hold (0, or one whose first bytes read as a freetag).
fn bad_ino(ino: u64) -> bool {
    ino == 0 || ino >> 48 == 0xffff
}

/// Check one directory.
pub fn check(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<String>> {
    let mut out = Vec::new();
    match form(tp, dp) {
        Ok(Form::Short) => check_short(tp, dp, &mut out),
        Ok(f) => check_blocks(tp, dp, f, &mut out)?,
        Err(e) => out.push(finding(e)?),
    }
    Ok(out)
}

fn check_short(tp: &Trans, dp: InodeId, out: &mut Vec<String>) {
    let DataFork::Local(bytes) = &tp.ic(dp).fork else {
        return;
    };
    let sf = match sf::Shortform::decode(bytes) {
        Ok(sf) => sf,
        Err(e) => {
            out.push(e.to_string());
            return;
        }
    };
    if tp.ic(dp).di.size != bytes.len() as u64 {
        out.push(format!(
            "shortform: size {} but {} bytes of shortform data",
            tp.ic(dp).di.size,
            bytes.len()
        ));
    }
    if bad_ino(sf.parent) {
        out.push(format!("shortform: '..' names inode {}", sf.parent));
    }
    let mut names = FastSet::default();
    for e in &sf.entries {
        let shown = String::from_utf8_lossy(&e.name);
        if let Some(why) = bad_name(&e.name) {
            out.push(format!("shortform: entry '{shown}': {why}"));
        }
        if e.name == b"." || e.name == b".." {
            out.push(format!("shortform: explicit '{shown}' entry"));
        }
        if bad_ino(e.ino) {
            out.push(format!("shortform: entry '{shown}' names inode {}", e.ino));
        }
        if !names.insert(e.name.as_slice()) {
            out.push(format!("shortform: duplicate name '{shown}'"));
        }
    }
}

/// What the data blocks hold, for the index checks.
#[derive(Default)]
struct DataScan {
    /// Entry address → hash of its name.
    by_addr: FastMap<u32, u32>,
    /// Data block → its largest free region (as computed).
    bests: BTreeMap<u64, u16>,
    /// Hash leaf of the block form, when it could be read.
    block_leaf: Option<Vec<(u32, u32)>>,
}

fn check_blocks(tp: &mut Trans, dp: InodeId, f: Form, out: &mut Vec<String>) -> FsResult<()> {
    let list: Vec<_> = tp.ic(dp).fork.extents().to_vec();
    let (mut data_blocks, mut index_blocks, mut free_blocks) = (Vec::new(), Vec::new(), Vec::new());
    let mut mapped = 0u64;
    for e in &list {
        mapped += u64::from(e.blockcount);
        for b in e.startoff..e.end() {
            if b < LEAF_FIRST {
                data_blocks.push(b);
            } else if b < FREE_FIRST {
                index_blocks.push(b);
            } else if b < FREE_FIRST + MAX_FREE_BLOCKS {
                free_blocks.push(b - FREE_FIRST);
            } else {
                out.push(format!(
                    "directory block {b} is outside every directory space"
                ));
            }
        }
    }
    let ic = tp.ic(dp);
    let want_size = data_blocks
        .last()
        .map_or(0, |&b| (b + 1) * BLOCK_SIZE as u64);
    if ic.di.size != want_size {
        out.push(format!(
            "size {} but the data blocks end at {want_size}",
            ic.di.size
        ));
    }
    // Extent-tree blocks are charged to the inode too.
    let tree_blocks = match &ic.fork {
        DataFork::Btree(b) => match crate::fs::bmbt::tree_blocks(tp.fs(), tp.ino(dp), b.root) {
            Ok(v) => v.len() as u64,
            Err(e) => {
                out.push(format!("extent tree: {}", finding(e)?));
                0
            }
        },
        _ => 0,
    };
    let ic = tp.ic(dp);
    if ic.di.nblocks != mapped + tree_blocks {
        out.push(format!(
            "nblocks {} but {mapped} directory blocks and {tree_blocks} extent-tree blocks are mapped",
            ic.di.nblocks
        ));
    }
    if data_blocks.first() != Some(&0) {
        out.push("data block 0 (with '.' and '..') is not mapped".into());
    }
    let expect_index: &[u64] = match f {
        Form::Block => &[],
        _ => &[LEAF_FIRST],
    };
    match f {
        Form::Block
            if data_blocks.len() != 1 || !index_blocks.is_empty() || !free_blocks.is_empty() =>
        {
            out.push("block form maps blocks besides block 0".into());
        }
        Form::Leaf if index_blocks != expect_index || !free_blocks.is_empty() => {
            out.push("leaf form maps index or free-index blocks besides its leaf block".into());
        }
        Form::Node
            if index_blocks.first() != Some(&LEAF_FIRST) || free_blocks.first() != Some(&0) =>
        {
            out.push("node form lacks its tree root or free-index block 0".into());
        }
        _ => {}
    }

    // Readers take the index root before any data block (see "Locking" in the module docs);
    // a read failure here is reported by the index checks below.
    match f {
        Form::Leaf => drop(leaf::read(tp, dp)),
        Form::Node => drop(node::read_root(tp, dp)),
        Form::Block | Form::Short => {}
    }
    let scan = scan_data(tp, dp, f, &data_blocks, out)?;
    match f {
        Form::Block => {
            if let Some(leaf) = &scan.block_leaf {
                cross_check(
                    out,
                    "dir3_block block 0 hash leaf",
                    leaf,
                    &scan.by_addr,
                    true,
                );
            }
        }
        Form::Leaf => check_leaf(tp, dp, &scan, out)?,
        Form::Node => check_node(tp, dp, &scan, &index_blocks, &free_blocks, out)?,
        Form::Short => {}
    }
    Ok(())
}

/// Walk every data block: headers, slots, dots, names, bestfree.
fn scan_data(
    tp: &mut Trans,
    dp: InodeId,
    f: Form,
    data_blocks: &[u64],
    out: &mut Vec<String>,
) -> FsResult<DataScan> {
    let ino = tp.ino(dp);
    let kind = if f == Form::Block {
        BlockKind::DirBlock
    } else {
        BlockKind::DirData
    };
    let mut scan = DataScan::default();
    let mut names: FastSet<Vec<u8>> = FastSet::default();
    for &db in data_blocks {
        let id = match read_block(tp, dp, db, kind) {
            Ok(id) => id,
            Err(e) => {
                out.push(finding(e)?);
                continue;
            }
        };
        let where_ = format!("{kind} block {db} (daddr {})", tp.buf_daddr(id));
        let b = tp.buf(id);
        let end = if f == Form::Block {
            let n = get_u32(b, block::TAIL) as usize;
            let stale = get_u32(b, block::TAIL + 4);
            if !(2..=(block::TAIL - data::FIRST) / 8).contains(&n) {
                out.push(format!("{where_}: hash leaf count {n} is impossible"));
                continue;
            }
            if stale != 0 {
                out.push(format!(
                    "{where_}: stale count {stale}, labfs never writes stale entries"
                ));
            }
            let start = block::leaf_start(n);
            scan.block_leaf = Some((0..n).map(|i| block::leaf_ent(b, start, i)).collect());
            start
        } else {
            BLOCK_SIZE
        };
        let (mut dot, mut dotdot) = (false, false);
        let mut prev_free = false;
        for s in data::slots(b, end) {
            let s = match s {
                Ok(s) => s,
                Err(w) => {
                    out.push(format!("{where_}: {w}"));
                    break;
                }
            };
            match s {
                Slot::Free { off, .. } => {
                    if prev_free {
                        out.push(format!("{where_}: free region at {off:#x} follows another"));
                    }
                    prev_free = true;
                }
                Slot::Entry(e) => {
                    prev_free = false;
                    let name = e.name(b);
                    let shown = String::from_utf8_lossy(name);
                    match (db, e.off) {
                        (0, data::DOT) => {
                            dot = name == b".";
                            if dot && e.ino != ino {
                                out.push(format!("{where_}: '.' names inode {}", e.ino));
                            }
                        }
                        (0, data::DOTDOT) => {
                            dotdot = name == b"..";
                            if dotdot && bad_ino(e.ino) {
                                out.push(format!("{where_}: '..' names inode {}", e.ino));
                            }
                        }
                        _ => {
                            if name == b"." || name == b".." {
                                out.push(format!("{where_}: '{shown}' at {:#x}", e.off));
                            } else if !names.insert(name.to_vec()) {
                                out.push(format!("{where_}: duplicate name '{shown}'"));
                            }
                            if let Some(why) = bad_name(name) {
                                out.push(format!("{where_}: entry at {:#x}: {why}", e.off));
                            }
                            if bad_ino(e.ino) {
                                out.push(format!(
                                    "{where_}: entry '{shown}' names inode {}",
                                    e.ino
                                ));
                            }
                        }
                    }
                    scan.by_addr.insert(addr_of(db, e.off), hashname(name));
                }
            }
        }
        if db == 0 && !(dot && dotdot) {
            out.push(format!("{where_}: '.' and '..' are not at 0x40 and 0x50"));
        }
        match data::compute_bestfree(b, end) {
            Ok(bf) => {
                if bf != data::stored_bestfree(b) {
                    out.push(format!(
                        "{where_}: bestfree {:?} but the free regions give {bf:?}",
                        data::stored_bestfree(b)
                    ));
                }
                if db != 0 && bf[0].1 == data::EMPTY {
                    out.push(format!("{where_}: empty data block was not freed"));
                }
                scan.bests.insert(db, bf[0].1);
            }
            Err(_) => {
                // The walk above already reported the malformed slot.
            }
        }
    }
    Ok(scan)
}

/// Every index record names an entry with its hash, once; every entry has a record;
/// records sorted by hash.
fn cross_check(
    out: &mut Vec<String>,
    what: &str,
    recs: &[(u32, u32)],
    by_addr: &FastMap<u32, u32>,
    sorted: bool,
) {
    let mut seen = FastSet::default();
    for (i, &(h, a)) in recs.iter().enumerate() {
        match by_addr.get(&a) {
            None => out.push(format!(
                "{what}: entry {i} address {a:#x} names no directory entry"
            )),
            Some(&eh) if eh != h => out.push(format!(
                "{what}: entry {i} hash {h:#x} but the name at {a:#x} hashes to {eh:#x}"
            )),
            Some(_) => {}
        }
        if !seen.insert(a) {
            out.push(format!("{what}: address {a:#x} is indexed twice"));
        }
        if sorted && i > 0 && recs[i - 1] >= (h, a) {
            out.push(format!("{what}: entry {i} is out of (hash, address) order"));
        }
    }
    let missing = by_addr.keys().filter(|a| !seen.contains(*a)).count();
    if missing > 0 {
        out.push(format!(
            "{what}: {missing} directory entries have no hash entry"
        ));
    }
}

/// A best as the index should hold it for data block `db`.
fn want_best(scan: &DataScan, db: u64) -> u16 {
    scan.bests.get(&db).copied().unwrap_or(NULL_BEST)
}

fn check_leaf(tp: &mut Trans, dp: InodeId, scan: &DataScan, out: &mut Vec<String>) -> FsResult<()> {
    let lf = match leaf::read(tp, dp) {
        Ok(lf) => lf,
        Err(e) => {
            out.push(finding(e)?);
            return Ok(());
        }
    };
    let where_ = format!(
        "dir3_leaf1 block {LEAF_FIRST} (daddr {})",
        tp.buf_daddr(lf.id)
    );
    let b = tp.buf(lf.id);
    if get_u16(b, leaf::STALE) != 0 {
        out.push(format!("{where_}: stale entries, labfs never writes them"));
    }
    if get_u32(b, 0) != 0 || get_u32(b, 4) != 0 {
        out.push(format!("{where_}: a leaf1 block has sibling pointers"));
    }
    let recs: Vec<(u32, u32)> = (0..lf.n)
        .map(|i| block::leaf_ent(b, leaf::ENTS, i))
        .collect();
    cross_check(out, &where_, &recs, &scan.by_addr, true);
    let last = scan.bests.keys().next_back().copied().unwrap_or(0);
    if lf.nb as u64 != last + 1 {
        out.push(format!(
            "{where_}: bestcount {} but the last data block is {last}",
            lf.nb
        ));
    }
    for db in 0..lf.nb {
        let (have, want) = (leaf::best(b, lf.nb, db), want_best(scan, db as u64));
        if have != want {
            out.push(format!(
                "{where_}: best of data block {db} is {have:#x}, the block says {want:#x}"
            ));
        }
    }
    Ok(())
}

fn check_node(
    tp: &mut Trans,
    dp: InodeId,
    scan: &DataScan,
    index_blocks: &[u64],
    free_blocks: &[u64],
    out: &mut Vec<String>,
) -> FsResult<()> {
    let owner = tp.ino(dp);
    match node::tree_root(tp, dp) {
        Err(e) => out.push(finding(e)?),
        Ok(root) => {
            let mut st = HashStore::reader(tp, dp);
            for f in btree::check::<DirHashSpec>(&mut st, root, owner)? {
                out.push(format!("hash tree: {f}"));
            }
            let mut recs = Vec::new();
            match btree::for_each_record::<DirHashSpec>(&mut st, root, owner, |r| {
                recs.push((r.hash, r.addr));
            }) {
                Ok(()) => cross_check(out, "hash tree", &recs, &scan.by_addr, true),
                Err(e) => out.push(format!("hash tree: {}", finding(e)?)),
            }
            match btree::blocks::<DirHashSpec>(&mut st, root, owner) {
                Ok(blocks) => {
                    let tree: FastSet<u64> = blocks.iter().map(|&(p, _)| p).collect();
                    for b in index_blocks.iter().filter(|b| !tree.contains(b)) {
                        out.push(format!(
                            "index-space block {b} is mapped but not in the hash tree"
                        ));
                    }
                }
                Err(e) => out.push(format!("hash tree: {}", finding(e)?)),
            }
        }
    }
    let mut covered = FastSet::default();
    for &f in free_blocks {
        let fr = match node::read_free(tp, dp, f) {
            Ok(fr) => fr,
            Err(e) => {
                out.push(finding(e)?);
                continue;
            }
        };
        covered.insert(f);
        let where_ = format!(
            "dir3_free block {} (daddr {})",
            FREE_FIRST + f,
            tp.buf_daddr(fr.id)
        );
        let b = tp.buf(fr.id);
        let first = f * FREE_BESTS;
        let mut used = 0;
        let mut last_valid = None;
        for i in 0..FREE_BESTS as usize {
            let db = first + i as u64;
            let (have, want) = (node::free_best(b, i), want_best(scan, db));
            // Bests from nvalid on are unused; a data block described there is caught by the
            // nvalid check below.
            if i < fr.nvalid && have != want {
                out.push(format!(
                    "{where_}: best of data block {db} is {have:#x}, the block says {want:#x}"
                ));
            }
            if want != NULL_BEST {
                used += 1;
                last_valid = Some(i);
            }
        }
        let nvalid = last_valid.map_or(0, |i| i + 1);
        if fr.nvalid != nvalid || fr.nused != used {
            out.push(format!(
                "{where_}: nvalid {} nused {}, but the data blocks give {nvalid} and {used}",
                fr.nvalid, fr.nused
            ));
        }
        if used == 0 {
            out.push(format!("{where_}: describes no data block but was kept"));
        }
    }
    for &db in scan.bests.keys() {
        if !covered.contains(&(db / FREE_BESTS)) {
            out.push(format!("data block {db} has no free-index block"));
        }
    }
    Ok(())
}
