//! fsck: labfs's `xfs_repair -n`, the test oracle for invariants 1, 6 and 7 of the
//! repository's `docs/invariants.md`.
//!
//! [`check`] walks everything a filesystem has and reports every violation it finds, each
//! naming where it is, rather than stopping at the first:
//!
//! - **metadata verifies** (invariant 1): every tree block, directory block and inode is read
//!   through the verifying buffer cache; structural checks of each B+tree and directory;
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

use std::collections::{HashMap, HashSet, VecDeque};

use crate::fs::Fs;
use crate::fs::error::FsResult;
use crate::fs::format::{BLOCK_SIZE, BlockKind, INODE_SIZE, INODES_PER_CHUNK};
use crate::fs::geo::Geometry;
use crate::fs::ialloc::CHUNK_BLOCKS;
use crate::fs::inode::{DataFork, InodeRead};
use crate::fs::trans::Trans;
use crate::fs::vfs::FileKind;
use crate::fs::{alloc, bmbt, dir, ialloc};

/// What a check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every violation, each naming where it is.
    pub findings: Vec<String>,
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

    fn claim(&mut self, agno: u32, start: u32, len: u32, who: &str, findings: &mut Vec<String>) {
        for b in start..start.saturating_add(len) {
            match self.owner.get_mut(b as usize) {
                None => {
                    findings.push(format!(
                        "AG {agno} block {b}: {who} claims a block beyond the AG"
                    ));
                    return;
                }
                Some(Some(prev)) => {
                    findings.push(format!(
                        "AG {agno} block {b}: claimed by {prev} and by {who}"
                    ));
                }
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
            r.findings.push(format!("AG {agno}: cannot check: {e}"));
        }
    }
    // Files: their blocks, and the namespace.
    let mut kinds: HashMap<u64, (FileKind, u32)> = HashMap::new();
    for &ino in &used_inodes {
        let ip = match fs.iget(ino) {
            Ok(ip) => ip,
            Err(e) => {
                r.findings.push(format!(
                    "inode {ino}: marked used in the inode tree but unreadable: {e}"
                ));
                continue;
            }
        };
        let core = InodeRead::lock(ip);
        if core.di.mode == 0 {
            r.findings.push(format!(
                "inode {ino}: marked used in the inode tree but free on disk"
            ));
            continue;
        }
        r.inodes += 1;
        if core.is_dir() {
            r.dirs += 1;
        }
        kinds.insert(ino, (core.kind(), core.di.nlink));
        if core.is_symlink() {
            if let Err(e) = crate::fs::symlink::read_target(fs, ino, &core) {
                r.findings
                    .push(format!("inode {ino}: unreadable symlink: {e}"));
            }
        }
        let mut charged = 0u64;
        for e in core.fork.extents() {
            if e.is_delalloc() {
                continue;
            }
            let agno = geo.agno_of(e.startblock);
            if agno >= geo.agcount {
                r.findings.push(format!(
                    "inode {ino}: extent at {} beyond the filesystem",
                    e.startblock
                ));
                continue;
            }
            let who = format!("inode {ino} file block {}", e.startoff);
            maps[agno as usize].claim(
                agno,
                geo.agbno_of(e.startblock),
                e.blockcount,
                &who,
                &mut r.findings,
            );
            charged += u64::from(e.blockcount);
        }
        if let DataFork::Btree { root, extents } = &core.fork {
            match bmbt::check_tree(fs, ino, *root, extents) {
                Ok(f) => r.findings.extend(f),
                Err(e) => r
                    .findings
                    .push(format!("inode {ino}: extent tree unreadable: {e}")),
            }
            for ptr in bmbt::tree_blocks(fs, ino, *root).unwrap_or_default() {
                let agno = geo.agno_of(ptr);
                maps[agno as usize].claim(
                    agno,
                    geo.agbno_of(ptr),
                    1,
                    &format!("inode {ino} extent tree"),
                    &mut r.findings,
                );
                charged += 1;
            }
        }
        if charged != core.di.nblocks {
            r.findings.push(format!(
                "inode {ino}: nblocks {} but {} blocks are mapped",
                core.di.nblocks, charged
            ));
        }
    }
    for (agno, map) in maps.iter().enumerate() {
        let leaked: Vec<usize> = map.unclaimed().collect();
        if let Some(&first) = leaked.first() {
            r.findings.push(format!(
                "AG {agno}: {} blocks belong to nothing (first: {first})",
                leaked.len()
            ));
        }
    }
    check_namespace(fs, &kinds, &mut r)?;
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
    map.claim(agno, 0, 1, "AG headers", &mut r.findings);
    if agno == 0 {
        map.claim(
            agno,
            geo.logstart as u32,
            geo.logblocks,
            "the log",
            &mut r.findings,
        );
    }
    let space = alloc::ag_space(&mut tp, agno)?;
    let (tree_blocks, tree_findings) = alloc::check_trees(&mut tp, agno)?;
    r.findings.extend(tree_findings);
    for b in tree_blocks {
        map.claim(agno, b, 1, "free-space tree", &mut r.findings);
    }
    let mut by_cnt_sorted = space.by_cnt.clone();
    by_cnt_sorted.sort_by_key(|e| e.start);
    if by_cnt_sorted != space.by_bno {
        r.findings.push(format!(
            "AG {agno}: the bno and cnt trees hold different free extents"
        ));
    }
    let mut prev_end = 0u32;
    let mut free = 0u64;
    let mut longest = 0u32;
    for e in &space.by_bno {
        if e.start < prev_end {
            r.findings.push(format!(
                "AG {agno}: free extents overlap at block {}",
                e.start
            ));
        }
        prev_end = e.start + e.len;
        free += u64::from(e.len);
        longest = longest.max(e.len);
        map.claim(agno, e.start, e.len, "free space", &mut r.findings);
    }
    for &b in &space.agfl {
        map.claim(agno, b, 1, "the free list", &mut r.findings);
    }
    if free != u64::from(space.agf.freeblks) {
        r.findings.push(format!(
            "AG {agno}: AGF says {} free blocks, the trees hold {free}",
            space.agf.freeblks
        ));
    }
    if longest != space.agf.longest {
        r.findings.push(format!(
            "AG {agno}: AGF longest {} but the longest free extent is {longest}",
            space.agf.longest
        ));
    }
    r.free_blocks += free + space.agfl.len() as u64;
    let (tree_blocks, tree_findings) = ialloc::check_trees(&mut tp, agno)?;
    r.findings.extend(tree_findings);
    for b in tree_blocks {
        map.claim(agno, b, 1, "inode tree", &mut r.findings);
    }
    let (agi, inos, finos) = ialloc::ag_inodes(&mut tp, agno)?;
    tp.commit()?;
    let want_fino: Vec<_> = inos.iter().filter(|c| c.freecount > 0).copied().collect();
    if want_fino != finos {
        r.findings.push(format!(
            "AG {agno}: the finobt does not hold exactly the inobt chunks with free inodes"
        ));
    }
    let (mut count, mut freecount) = (0u32, 0u32);
    for c in &inos {
        count += u32::from(c.count);
        freecount += u32::from(c.freecount);
        if c.free.count_ones() != u32::from(c.freecount) {
            r.findings.push(format!(
                "AG {agno} chunk {}: free mask has {} bits, freecount {}",
                c.startino,
                c.free.count_ones(),
                c.freecount
            ));
        }
        let agbno = Geometry::agino_agbno(c.startino);
        map.claim(
            agno,
            agbno,
            CHUNK_BLOCKS,
            &format!("inode chunk {}", c.startino),
            &mut r.findings,
        );
        for i in 0..INODES_PER_CHUNK as u32 {
            let ino = geo.ino(agno, c.startino + i);
            if c.free & (1u64 << i) == 0 {
                used.push(ino);
            } else if free_slot_in_use(fs, ino)? {
                r.findings.push(format!(
                    "inode {ino}: free in the inode tree but in use on disk"
                ));
            }
        }
    }
    if count != agi.count || freecount != agi.freecount {
        r.findings.push(format!(
            "AG {agno}: AGI counts {}/{} inodes allocated/free, the inobt {count}/{freecount}",
            agi.count, agi.freecount
        ));
    }
    Ok(())
}

/// Whether a slot the inode trees call free holds an inode in use on disk.
fn free_slot_in_use(fs: &Fs, ino: u64) -> FsResult<bool> {
    let (daddr, off) = fs.geo.ino_location(ino);
    let g = fs.bufs.get(
        daddr,
        BlockKind::Inode,
        BLOCK_SIZE,
        crate::fs::buf::GetMode::Read,
    )?;
    let raw = &g.bytes()[off..off + INODE_SIZE];
    Ok(crate::fs::format::endian::get_u16(raw, 2) != 0)
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
    for f in dir::check(&mut tp, dp)? {
        r.findings.push(format!("directory {dino}: {f}"));
    }
    match dir::lookup(&mut tp, dp, b"..")? {
        Some(p) if p == parent => {}
        other => r.findings.push(format!(
            "directory {dino}: '..' is {other:?}, parent is {parent}"
        )),
    }
    let entries = dir::readdir(&mut tp, dp)?;
    tp.commit()?;
    Ok(entries)
}

fn check_namespace(fs: &Fs, kinds: &HashMap<u64, (FileKind, u32)>, r: &mut Report) -> FsResult<()> {
    let mut refs: HashMap<u64, u32> = HashMap::new();
    let mut subdirs: HashMap<u64, u32> = HashMap::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut queue = VecDeque::from([(fs.rootino, fs.rootino)]);
    seen.insert(fs.rootino);
    while let Some((dino, parent)) = queue.pop_front() {
        let entries = match dir_entries(fs, dino, parent, r) {
            Ok(e) => e,
            Err(e) => {
                r.findings
                    .push(format!("directory {dino}: unreadable: {e}"));
                continue;
            }
        };
        for e in entries {
            *refs.entry(e.ino).or_default() += 1;
            match kinds.get(&e.ino) {
                None => r.findings.push(format!(
                    "directory {dino}: entry '{}' names inode {}, which is not in use",
                    String::from_utf8_lossy(&e.name),
                    e.ino
                )),
                Some((kind, _)) => {
                    if *kind != e.kind {
                        r.findings.push(format!(
                            "directory {dino}: entry '{}' says {:?}, inode {} is {:?}",
                            String::from_utf8_lossy(&e.name),
                            e.kind,
                            e.ino,
                            kind
                        ));
                    }
                    if *kind == FileKind::Dir {
                        *subdirs.entry(dino).or_default() += 1;
                        if seen.insert(e.ino) {
                            queue.push_back((e.ino, dino));
                        } else {
                            r.findings
                                .push(format!("directory {} is linked more than once", e.ino));
                        }
                    }
                }
            }
        }
    }
    for (&ino, &(kind, nlink)) in kinds {
        let want = if kind == FileKind::Dir {
            if !seen.contains(&ino) {
                r.findings
                    .push(format!("directory {ino} is not reachable from the root"));
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
                r.findings.push(format!(
                    "inode {ino} is in use (link count {nlink}) but no directory names it"
                ));
            }
            continue;
        }
        if nlink != want {
            r.findings.push(format!(
                "inode {ino}: link count {nlink}, but {want} expected"
            ));
        }
    }
    Ok(())
}
