//! fsck: labfs's `xfs_repair -n`, the test oracle for invariants 1, 6 and 7 of the
//! repository's `docs/invariants.md`.
//!
//! [`check`] walks everything a filesystem has and reports every violation it finds as a
//! [`Finding`]: a [`Location`] (a superblock copy, an AG, a block, an inode, a directory)
//! and what is wrong there, rather than stopping at the first:
//!
//! - **metadata verifies** (invariant 1): every superblock copy, tree block, directory block
//!   and inode is read through the verifying buffer cache; structural checks of each B+tree
//!   and directory;
//! - **superblock copies agree**: every AG's copy of the superblock verifies (CRC, magic,
//!   version, geometry) and describes the same filesystem as the primary (the same geometry,
//!   UUID, root inode and label). Only the lazy counters and the LSN may differ, as they may
//!   lag after a crash; XFS's `xfs_repair` compares its secondaries the same way. A mount reads
//!   only the primary, so without this a flipped bit in AG 2's copy would go unnoticed until
//!   the day the copy is needed;
//! - **space adds up** (invariant 6): per AG, every block is claimed exactly once, by the AG
//!   headers, the free-space trees' records, the free list, the log, a tree block, an inode
//!   chunk, or a file's extent or extent-tree block; the bno and cnt trees hold the same
//!   extents; the AGF's counters match them;
//! - **inodes add up**: the inode trees agree with each other and the AGI, every inode the
//!   trees call used is in use on disk and every free one is free;
//! - **symbolic links read back**: each link's target is inline with the right length, or in
//!   one remote block whose header names the link;
//! - **links add up** (invariant 7): every used inode is reachable from the root (or held
//!   open), each file's link count equals the entries naming it, each directory's is two
//!   plus its subdirectories, and each `..` names the parent.
//!
//! Run it on a quiet filesystem (after `sync`, with no operation in flight).

use std::collections::VecDeque;

use crate::fs::fastmap::{FastMap, FastSet};
use std::fmt;

use crate::fs::Fs;
use crate::fs::buf::GetMode;
use crate::fs::error::FsResult;
use crate::fs::format::ag::SB_SECTOR;
use crate::fs::format::dinode;
use crate::fs::format::sb::Superblock;
use crate::fs::format::{BBSIZE, BlockKind, CHUNK_BLOCKS, Daddr, INODE_SIZE, INODES_PER_CHUNK};
use crate::fs::geo::Geometry;
use crate::fs::inode::{DataFork, InodeRead};
use crate::fs::trans::Trans;
use crate::fs::vfs::FileKind;
use crate::fs::{alloc, bmbt, dir, ialloc};

/// Where a finding is: the structure a user would look at (`labfs print` takes the same
/// addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Location {
    /// AG `agno`'s copy of the superblock (AG 0's is the primary), at `daddr`.
    Superblock {
        /// The AG.
        agno: u32,
        /// Its device address (512-byte sectors).
        daddr: Daddr,
    },
    /// One of AG `agno`'s header sectors (AGF, AGI, AGFL), at `daddr`.
    AgHeader {
        /// The AG.
        agno: u32,
        /// Which header.
        kind: BlockKind,
        /// Its device address.
        daddr: Daddr,
    },
    /// AG `agno` as a whole: its headers, trees and space accounting.
    Ag {
        /// The AG.
        agno: u32,
    },
    /// Block `agbno` of AG `agno` (a block claimed twice or by something outside the AG).
    AgBlock {
        /// The AG.
        agno: u32,
        /// The block, relative to the AG.
        agbno: u32,
    },
    /// A metadata block of `kind` at `daddr` (when nothing more specific is known).
    Block {
        /// What the block should be.
        kind: BlockKind,
        /// Its device address.
        daddr: Daddr,
    },
    /// Inode `ino`: its core, its block map, its link count.
    Inode {
        /// The inode number.
        ino: u64,
    },
    /// Directory `ino`: its blocks, entries and `..`.
    Directory {
        /// The directory's inode number.
        ino: u64,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Superblock { agno: 0, daddr } => {
                write!(f, "primary superblock (AG 0, daddr {daddr})")
            }
            Location::Superblock { agno, daddr } => {
                write!(f, "AG {agno} superblock (daddr {daddr})")
            }
            Location::AgHeader { agno, kind, daddr } => {
                write!(
                    f,
                    "AG {agno} {} (daddr {daddr})",
                    kind.name().to_uppercase()
                )
            }
            Location::Ag { agno } => write!(f, "AG {agno}"),
            Location::AgBlock { agno, agbno } => write!(f, "AG {agno} block {agbno}"),
            Location::Block { kind, daddr } => write!(f, "{kind} block at daddr {daddr}"),
            Location::Inode { ino } => write!(f, "inode {ino}"),
            Location::Directory { ino } => write!(f, "directory {ino}"),
        }
    }
}

/// One problem and where it is; displays as one line, `location: problem`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Where.
    pub location: Location,
    /// What is wrong there.
    pub problem: String,
}

impl Finding {
    /// A finding at `location`.
    pub fn new(location: Location, problem: impl Into<String>) -> Finding {
        Finding {
            location,
            problem: problem.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.problem)
    }
}

/// What a check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every violation, each naming where it is.
    pub findings: Vec<Finding>,
    /// Inodes in use.
    pub inodes: u64,
    /// Directories among them.
    pub dirs: u64,
    /// Free blocks according to the free-space trees (plus the free lists).
    pub free_blocks: u64,
}

impl Report {
    /// Whether the filesystem is clean.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Record a problem at `location`.
    fn push(&mut self, location: Location, problem: impl Into<String>) {
        self.findings.push(Finding::new(location, problem));
    }

    /// The findings at `location`.
    pub fn at(&self, location: Location) -> impl Iterator<Item = &Finding> + '_ {
        self.findings.iter().filter(move |f| f.location == location)
    }
}

/// Who claims each block of one AG.
struct SpaceMap {
    owner: Vec<Option<String>>,
}

impl SpaceMap {
    fn new(len: u32) -> SpaceMap {
        SpaceMap {
            owner: vec![None; len as usize],
        }
    }

    fn claim(&mut self, agno: u32, start: u32, len: u32, who: &str, r: &mut Report) {
        for agbno in start..start.saturating_add(len) {
            let at = Location::AgBlock { agno, agbno };
            match self.owner.get_mut(agbno as usize) {
                None => {
                    r.push(at, format!("{who} claims a block beyond the AG"));
                    return;
                }
                Some(Some(prev)) => r.push(at, format!("claimed by {prev} and by {who}")),
                Some(slot) => *slot = Some(who.to_string()),
            }
        }
    }

    fn unclaimed(&self) -> impl Iterator<Item = usize> + '_ {
        self.owner
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_none())
            .map(|(i, _)| i)
    }
}

/// Check a whole filesystem.
pub fn check(fs: &Fs) -> FsResult<Report> {
    // Unlinked inodes queued for background inactivation are orphans until the worker gets
    // to them: settle them first, as xfs_repair sees a filesystem only after unmount.
    fs.inodegc_flush()?;
    let geo = fs.geo;
    let mut r = Report::default();
    let mut maps: Vec<SpaceMap> = (0..geo.agcount)
        .map(|a| SpaceMap::new(geo.ag_len(a)))
        .collect();
    // Inodes the inode trees call used: ino -> AG.
    let mut used_inodes: Vec<u64> = Vec::new();
    for agno in 0..geo.agcount {
        // A structure that cannot be read is a finding like any other; the rest still gets
        // checked.
        if let Err(e) = check_ag(fs, agno, &mut maps[agno as usize], &mut used_inodes, &mut r) {
            r.push(Location::Ag { agno }, format!("cannot check: {e}"));
        }
    }
    check_superblocks(fs, &mut r);
    // Files: their blocks, and the namespace.
    let mut kinds: FastMap<u64, (FileKind, u32)> = FastMap::default();
    for &ino in &used_inodes {
        let ip = match fs.iget(ino) {
            Ok(ip) => ip,
            Err(e) => {
                r.push(
                    Location::Inode { ino },
                    format!("marked used in the inode tree but unreadable: {e}"),
                );
                continue;
            }
        };
        let core = InodeRead::lock(ip);
        if core.di.mode == 0 {
            r.push(
                Location::Inode { ino },
                "marked used in the inode tree but free on disk",
            );
            continue;
        }
        r.inodes += 1;
        if core.is_dir() {
            r.dirs += 1;
        }
        kinds.insert(ino, (core.kind(), core.di.nlink));
        if core.is_symlink()
            && let Err(e) = crate::fs::symlink::read_target(fs, ino, &core)
        {
            r.push(Location::Inode { ino }, format!("unreadable symlink: {e}"));
        }
        let mut charged = 0u64;
        for e in core.fork.extents() {
            if e.is_delalloc() {
                continue;
            }
            let agno = geo.agno_of(e.startblock);
            if agno >= geo.agcount {
                r.push(
                    Location::Inode { ino },
                    format!("extent at block {} beyond the filesystem", e.startblock),
                );
                continue;
            }
            let who = format!("inode {ino} file block {}", e.startoff);
            maps[agno as usize].claim(agno, geo.agbno_of(e.startblock), e.blockcount, &who, &mut r);
            charged += u64::from(e.blockcount);
        }
        if let DataFork::Btree(b) = &core.fork {
            match bmbt::check_tree(fs, ino, b.root, &b.extents) {
                Ok(found) => {
                    for f in found {
                        r.push(Location::Inode { ino }, format!("extent tree: {f}"));
                    }
                }
                Err(e) => r.push(
                    Location::Inode { ino },
                    format!("extent tree unreadable: {e}"),
                ),
            }
            for ptr in bmbt::tree_blocks(fs, ino, b.root).unwrap_or_default() {
                let agno = geo.agno_of(ptr);
                maps[agno as usize].claim(
                    agno,
                    geo.agbno_of(ptr),
                    1,
                    &format!("inode {ino} extent tree"),
                    &mut r,
                );
                charged += 1;
            }
        }
        if charged != core.di.nblocks {
            r.push(
                Location::Inode { ino },
                format!(
                    "nblocks {} but {charged} blocks are mapped",
                    core.di.nblocks
                ),
            );
        }
    }
    for (agno, map) in (0u32..).zip(&maps) {
        let leaked: Vec<usize> = map.unclaimed().collect();
        if let Some(&first) = leaked.first() {
            r.push(
                Location::Ag { agno },
                format!(
                    "{} blocks belong to nothing (first: block {first})",
                    leaked.len()
                ),
            );
        }
    }
    check_namespace(fs, &kinds, &mut r)?;
    // Same location, same order: a report reads in address order and compares across runs.
    r.findings.sort_by_key(|f| f.location);
    Ok(r)
}

fn check_ag(
    fs: &Fs,
    agno: u32,
    map: &mut SpaceMap,
    used: &mut Vec<u64>,
    r: &mut Report,
) -> FsResult<()> {
    let geo = fs.geo;
    let mut tp = Trans::reader(fs);
    map.claim(agno, 0, 1, "AG headers", r);
    if agno == 0 {
        map.claim(agno, geo.logstart as u32, geo.logblocks, "the log", r);
    }
    // The AGI before the AGF: the lock order.
    let (agi, inos, finos) = ialloc::ag_inodes(&mut tp, agno)?;
    let space = alloc::ag_space(&mut tp, agno)?;
    let (tree_blocks, tree_findings) = alloc::check_trees(&mut tp, agno)?;
    for f in tree_findings {
        r.push(Location::Ag { agno }, f);
    }
    for b in tree_blocks {
        map.claim(agno, b, 1, "free-space tree", r);
    }
    let mut by_cnt_sorted = space.by_cnt.clone();
    by_cnt_sorted.sort_by_key(|e| e.start);
    if by_cnt_sorted != space.by_bno {
        r.push(
            Location::Ag { agno },
            "the bno and cnt trees hold different free extents",
        );
    }
    let mut prev_end = 0u32;
    let mut free = 0u64;
    let mut longest = 0u32;
    for e in &space.by_bno {
        if e.start < prev_end {
            r.push(
                Location::AgBlock {
                    agno,
                    agbno: e.start,
                },
                "free extents overlap here",
            );
        }
        prev_end = e.start + e.len;
        free += u64::from(e.len);
        longest = longest.max(e.len);
        map.claim(agno, e.start, e.len, "free space", r);
    }
    for &b in &space.agfl {
        map.claim(agno, b, 1, "the free list", r);
    }
    if free != u64::from(space.agf.freeblks) {
        r.push(
            Location::Ag { agno },
            format!(
                "AGF says {} free blocks, the trees hold {free}",
                space.agf.freeblks
            ),
        );
    }
    if longest != space.agf.longest {
        r.push(
            Location::Ag { agno },
            format!(
                "AGF longest {} but the longest free extent is {longest}",
                space.agf.longest
            ),
        );
    }
    r.free_blocks += free + space.agfl.len() as u64;
    let (tree_blocks, tree_findings) = ialloc::check_trees(&mut tp, agno)?;
    for f in tree_findings {
        r.push(Location::Ag { agno }, f);
    }
    for b in tree_blocks {
        map.claim(agno, b, 1, "inode tree", r);
    }
    tp.commit()?;
    let want_fino: Vec<_> = inos.iter().filter(|c| c.freecount > 0).copied().collect();
    if want_fino != finos {
        r.push(
            Location::Ag { agno },
            "the finobt does not hold exactly the inobt chunks with free inodes",
        );
    }
    let (mut count, mut freecount) = (0u32, 0u32);
    for c in &inos {
        count += u32::from(c.count);
        freecount += u32::from(c.freecount);
        if c.free.count_ones() != u32::from(c.freecount) {
            r.push(
                Location::Ag { agno },
                format!(
                    "inode chunk {}: free mask has {} bits, freecount {}",
                    c.startino,
                    c.free.count_ones(),
                    c.freecount
                ),
            );
        }
        let agbno = Geometry::agino_agbno(c.startino);
        map.claim(
            agno,
            agbno,
            CHUNK_BLOCKS,
            &format!("inode chunk {}", c.startino),
            r,
        );
        for i in 0..INODES_PER_CHUNK as u32 {
            let ino = geo.ino(agno, c.startino + i);
            if c.free & (1u64 << i) == 0 {
                used.push(ino);
            } else if let Some(problem) = free_slot_problem(fs, ino) {
                r.push(Location::Inode { ino }, problem);
            }
        }
    }
    if count != agi.count || freecount != agi.freecount {
        r.push(
            Location::Ag { agno },
            format!(
                "AGI counts {}/{} inodes allocated/free, the inobt {count}/{freecount}",
                agi.count, agi.freecount
            ),
        );
    }
    Ok(())
}

/// What is wrong with a slot the inode trees call free, if anything: mkfs and chunk
/// allocation write every slot as a free inode with its own CRC, so a free slot must verify,
/// name itself, and be free on disk. (Used inodes are checked when they are read.)
fn free_slot_problem(fs: &Fs, ino: u64) -> Option<String> {
    let (daddr, off) = fs.geo.ino_location(ino);
    let g = match fs.bufs.get(
        daddr,
        BlockKind::Inode,
        crate::fs::geo::INODE_CLUSTER_SIZE,
        GetMode::Read,
    ) {
        Ok(g) => g,
        Err(e) => return Some(format!("free slot unreadable: {e}")),
    };
    let raw = &g.bytes()[off..off + INODE_SIZE];
    if let Err(m) = fs.bufs.cksum().verify(BlockKind::Inode, raw) {
        return Some(format!(
            "free slot fails its CRC: stored {:#010x}, computed {:#010x}",
            m.found, m.expected
        ));
    }
    match dinode::decode_core(raw, ino, &fs.uuid, daddr) {
        Err(e) => Some(format!("free slot unreadable: {e}")),
        Ok(core) if core.mode != 0 => Some("free in the inode tree but in use on disk".into()),
        Ok(_) => None,
    }
}

/// Check one directory's structure and `..`, and list its entries.
fn dir_entries(
    fs: &Fs,
    dino: u64,
    parent: u64,
    r: &mut Report,
) -> FsResult<Vec<crate::fs::vfs::DirEntry>> {
    let ip = fs.iget(dino)?;
    let mut tp = Trans::reader(fs);
    let dp = tp.lock_inode_shared(ip);
    let at = Location::Directory { ino: dino };
    for f in dir::check(&mut tp, dp)? {
        r.push(at, f);
    }
    match dir::lookup(&mut tp, dp, b"..")? {
        Some(p) if p == parent => {}
        Some(p) => r.push(at, format!("'..' names inode {p}, the parent is {parent}")),
        None => r.push(at, format!("no '..' entry (the parent is {parent})")),
    }
    let entries = dir::readdir(&mut tp, dp)?;
    tp.commit()?;
    Ok(entries)
}

fn check_namespace(fs: &Fs, kinds: &FastMap<u64, (FileKind, u32)>, r: &mut Report) -> FsResult<()> {
    let mut refs: FastMap<u64, u32> = FastMap::default();
    let mut subdirs: FastMap<u64, u32> = FastMap::default();
    let mut seen: FastSet<u64> = FastSet::default();
    let mut queue = VecDeque::from([(fs.rootino, fs.rootino)]);
    seen.insert(fs.rootino);
    while let Some((dino, parent)) = queue.pop_front() {
        let entries = match dir_entries(fs, dino, parent, r) {
            Ok(e) => e,
            Err(e) => {
                r.push(
                    Location::Directory { ino: dino },
                    format!("unreadable: {e}"),
                );
                continue;
            }
        };
        for e in entries {
            *refs.entry(e.ino).or_default() += 1;
            match kinds.get(&e.ino) {
                None => r.push(
                    Location::Directory { ino: dino },
                    format!(
                        "entry '{}' names inode {}, which is not in use",
                        String::from_utf8_lossy(&e.name),
                        e.ino
                    ),
                ),
                Some((kind, _)) => {
                    if *kind != e.kind {
                        r.push(
                            Location::Directory { ino: dino },
                            format!(
                                "entry '{}' says {:?}, inode {} is {:?}",
                                String::from_utf8_lossy(&e.name),
                                e.kind,
                                e.ino,
                                kind
                            ),
                        );
                    }
                    if *kind == FileKind::Dir {
                        *subdirs.entry(dino).or_default() += 1;
                        if seen.insert(e.ino) {
                            queue.push_back((e.ino, dino));
                        } else {
                            r.push(
                                Location::Directory { ino: e.ino },
                                format!("linked more than once (again from directory {dino})"),
                            );
                        }
                    }
                }
            }
        }
    }
    for (&ino, &(kind, nlink)) in kinds {
        let want = if kind == FileKind::Dir {
            if !seen.contains(&ino) {
                r.push(Location::Directory { ino }, "not reachable from the root");
                continue;
            }
            2 + subdirs.get(&ino).copied().unwrap_or(0)
        } else {
            refs.get(&ino).copied().unwrap_or(0)
        };
        if want == 0 {
            let open = fs
                .iget(ino)
                .map(|ip| InodeRead::lock(ip).opens > 0)
                .unwrap_or(false);
            if !open {
                r.push(
                    Location::Inode { ino },
                    format!("in use (link count {nlink}) but no directory names it"),
                );
            }
            continue;
        }
        if nlink != want {
            r.push(
                Location::Inode { ino },
                format!("link count {nlink}, but {want} expected"),
            );
        }
    }
    Ok(())
}

/// Check every AG's copy of the superblock: it must verify (CRC, magic, version, geometry)
/// and describe the same filesystem as the primary. The lazy counters (`icount`, `ifree`,
/// `fdblocks`) and the LSN may differ: they are written at unmount and may lag after a crash.
fn check_superblocks(fs: &Fs, r: &mut Report) {
    let read = |agno: u32| -> (Location, FsResult<Superblock>) {
        let daddr = fs.geo.ag_header_daddr(agno, SB_SECTOR);
        let at = Location::Superblock { agno, daddr };
        let sb = fs
            .bufs
            .get(daddr, BlockKind::Superblock, BBSIZE, GetMode::Read)
            .and_then(|g| Superblock::decode(g.bytes(), daddr));
        (at, sb)
    };
    let (at, primary) = read(0);
    let primary = match primary {
        Ok(sb) => sb,
        Err(e) => {
            // The mount verified it; only a change since (or a failing device) gets here.
            r.push(at, format!("unreadable: {e}"));
            return;
        }
    };
    for agno in 1..fs.geo.agcount {
        let (at, copy) = read(agno);
        match copy {
            Err(e) => r.push(at, format!("unreadable: {e}")),
            Ok(copy) => {
                for field in superblock_differences(&primary, &copy) {
                    r.push(at, format!("{field} differs from the primary superblock's"));
                }
            }
        }
    }
}

/// The names of the fields in which `copy` describes a different filesystem than `primary`.
pub fn superblock_differences(primary: &Superblock, copy: &Superblock) -> Vec<&'static str> {
    // Destructured without `..`, so a field added to the superblock must be placed here (as
    // geometry to compare, or as a counter that may lag) before this compiles.
    let Superblock {
        dblocks,
        uuid,
        logstart,
        logblocks,
        rootino,
        agblocks,
        agcount,
        agblklog,
        fname,
        inprogress,
        icount: _,
        ifree: _,
        fdblocks: _,
        lsn: _,
    } = copy;
    [
        ("dblocks", primary.dblocks == *dblocks),
        ("uuid", primary.uuid == *uuid),
        ("logstart", primary.logstart == *logstart),
        ("logblocks", primary.logblocks == *logblocks),
        ("rootino", primary.rootino == *rootino),
        ("agblocks", primary.agblocks == *agblocks),
        ("agcount", primary.agcount == *agcount),
        ("agblklog", primary.agblklog == *agblklog),
        ("fname", primary.fname == *fname),
        ("inprogress", primary.inprogress == *inprogress),
    ]
    .into_iter()
    .filter(|&(_, same)| !same)
    .map(|(name, _)| name)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::testing::mem_fs;
    use crate::fs::trans::Resv;

    /// Read, edit and write back sector `daddr` straight on the device, under the cache.
    fn edit_sector(fs: &Fs, daddr: Daddr, edit: impl FnOnce(&mut [u8])) {
        let dev = fs.bufs.dev();
        let mut b = vec![0u8; BBSIZE];
        dev.read_at(&mut b, daddr.bytes()).expect("read");
        edit(&mut b);
        dev.write_at(&b, daddr.bytes(), false).expect("write");
    }

    #[test]
    fn a_fresh_filesystem_has_no_findings() {
        let fs = mem_fs(32 << 20);
        let r = check(&fs).expect("check runs");
        assert!(r.is_clean(), "{:#?}", r.findings);
        assert_eq!((r.inodes, r.dirs), (1, 1));
    }

    #[test]
    fn a_flipped_bit_in_any_secondary_superblock_is_found_there() {
        for agno in 1..4 {
            // A fresh mount each time: a check caches the copies it read.
            let fs = mem_fs(32 << 20);
            assert_eq!(fs.geo.agcount, 4);
            let daddr = fs.geo.ag_header_daddr(agno, SB_SECTOR);
            edit_sector(&fs, daddr, |b| b[150] ^= 0x04);
            let r = check(&fs).expect("check runs");
            let at = Location::Superblock { agno, daddr };
            let here: Vec<_> = r.at(at).collect();
            assert_eq!(here.len(), 1, "AG {agno}: {:#?}", r.findings);
            assert!(here[0].problem.contains("CRC mismatch"), "{}", here[0]);
            assert_eq!(r.findings.len(), 1, "nothing else: {:#?}", r.findings);
            assert!(
                here[0]
                    .to_string()
                    .starts_with(&format!("AG {agno} superblock (daddr ")),
                "{}",
                here[0]
            );
        }
    }

    #[test]
    fn a_secondary_describing_another_filesystem_is_found_even_with_a_good_crc() {
        let fs = mem_fs(32 << 20);
        let daddr = fs.geo.ag_header_daddr(3, SB_SECTOR);
        let cksum = fs.bufs.cksum();
        edit_sector(&fs, daddr, |b| {
            // rootino (56) and the label (108): geometry a mount would trust, CRC recomputed.
            b[63] ^= 0x01;
            b[108] = b'X';
            cksum.update(BlockKind::Superblock, b);
        });
        // Lazy counters may lag: a different icount (128) is not a finding.
        let daddr2 = fs.geo.ag_header_daddr(2, SB_SECTOR);
        edit_sector(&fs, daddr2, |b| {
            b[135] ^= 0x10;
            cksum.update(BlockKind::Superblock, b);
        });
        let r = check(&fs).expect("check runs");
        let problems: Vec<String> = r.findings.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                format!(
                    "AG 3 superblock (daddr {daddr}): rootino differs from the primary superblock's"
                ),
                format!(
                    "AG 3 superblock (daddr {daddr}): fname differs from the primary superblock's"
                ),
            ]
        );
    }

    #[test]
    fn a_wrong_link_count_is_found_at_its_inode() {
        let fs = mem_fs(32 << 20);
        let root = fs.root().expect("root");
        let (f, _) = fs.create(&root, b"f", 0o644, true).expect("create");
        let ino = f.ino;
        let mut tp = Trans::new(&fs, Resv::Ichange);
        let ip = tp.lock_inode(f);
        tp.ic_mut(ip).di.nlink = 3;
        tp.log_inode(ip);
        tp.commit().expect("commit");
        let r = check(&fs).expect("check runs");
        let problems: Vec<String> = r.findings.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [format!("inode {ino}: link count 3, but 1 expected")]
        );
    }

    #[test]
    fn a_flipped_bit_in_a_free_inode_slot_is_found_at_that_inode() {
        let fs = mem_fs(32 << 20);
        // The root directory's chunk: its first inode is the root, the rest are free.
        let free = fs.rootino + 5;
        let (daddr, off) = fs.geo.ino_location(free);
        let sector = Daddr(daddr.0 + (off / BBSIZE) as u64);
        edit_sector(&fs, sector, |b| b[(off % BBSIZE) + 40] ^= 0x10);
        let r = check(&fs).expect("check runs");
        let problems: Vec<String> = r.findings.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].starts_with(&format!("inode {free}: free slot fails its CRC: stored 0x")),
            "{problems:#?}"
        );
    }

    #[test]
    fn findings_display_their_location_first() {
        let f = Finding::new(Location::AgBlock { agno: 1, agbno: 7 }, "claimed twice");
        assert_eq!(f.to_string(), "AG 1 block 7: claimed twice");
        let f = Finding::new(
            Location::Superblock {
                agno: 0,
                daddr: Daddr(0),
            },
            "unreadable",
        );
        assert_eq!(
            f.to_string(),
            "primary superblock (AG 0, daddr 0): unreadable"
        );
    }
}
