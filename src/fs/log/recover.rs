//! Log recovery at mount: find the window of valid records, replay every committed
//! checkpoint in it, write the result home.
//!
//! 1. [`scan::find_window`] finds the head (the newest valid record), the tail its header
//!    names, cuts a torn tail and refuses a log damaged further back (a typed error).
//! 2. The records' ops are put back together per transaction id (CONTINUE / WAS_CONT
//!    pieces); only checkpoints whose COMMIT op is in the window count.
//! 3. Two passes over the committed checkpoints, as XFS's `xlog_recover` does: the first
//!    collects buffer cancels, the second lays every item over its home block, in log order,
//!    skipping items of a block cancelled later in the log (the block was freed, and may
//!    hold a file's data since).
//! 4. Each replayed block gets its CRC and goes home; the device is flushed. Replay is
//!    physical and in order, so it is idempotent: a crash during recovery replays again.
//!
//! labfs's blocks carry no LSN, so every change since the tail is replayed (XFS skips a
//! change older than the home block's LSN, an optimisation, not a correctness rule, for
//! physical logging replayed in order).

use crate::fs::fastmap::FastMap;

use crate::fs::cksum::Cksum;
use crate::fs::dev::BlockDev;
use crate::fs::error::{FsError, FsResult, IoOp};
use crate::fs::format::{BBSIZE, BlockKind, INODE_SIZE};
use crate::fs::geo::{BLOCKS_PER_CLUSTER, Geometry, INODE_CLUSTER_SIZE};
use crate::fs::log::item::{
    self, CLIENT_LOG, CLIENT_TRANS, LoggedItem, OP_COMMIT, OP_CONTINUE, OP_HEADER_LEN, OP_UNMOUNT,
    OP_WAS_CONT, OpHeader, TRANS_HEADER_LEN, TRANS_MAGIC,
};
use crate::fs::log::scan;

/// What recovery found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Absolute block where the next record goes.
    pub next_abs: u64,
    /// Whether the log ended with an unmount record (nothing to replay).
    pub clean: bool,
    /// Checkpoints replayed.
    pub checkpoints: usize,
    /// Blocks written home.
    pub blocks: usize,
    /// Records cut as a torn tail.
    pub torn: usize,
}

/// One committed checkpoint's item ops, in order.
type Checkpoint = Vec<Vec<u8>>;

fn corrupt(daddr: u64, what: String) -> FsError {
    FsError::Corrupt {
        kind: BlockKind::LogRecord,
        daddr,
        what,
    }
}

/// Read the log region of `geo` from `dev`.
pub fn read_log(dev: &dyn BlockDev, geo: &Geometry) -> FsResult<Vec<u8>> {
    let start = geo.log_daddr();
    let mut region = vec![0u8; geo.log_bytes() as usize];
    dev.read_at(&mut region, start * BBSIZE as u64)
        .map_err(|e| FsError::io(IoOp::ReadLog, Some(start), e))?;
    Ok(region)
}

/// Put the ops of the window's records back together: the committed checkpoints in commit
/// order, and whether the last record is an unmount record.
fn checkpoints(window: &scan::LogWindow, log_daddr: u64) -> FsResult<(Vec<Checkpoint>, bool)> {
    let mut open: FastMap<u32, Checkpoint> = FastMap::default();
    let mut partial: Option<(u32, Vec<u8>)> = None;
    let mut done = Vec::new();
    let mut last_unmount = false;
    for rec in &window.records {
        let at = log_daddr + u64::from(rec.header.lsn.block());
        let p = &rec.payload;
        let mut off = 0;
        last_unmount = false;
        for _ in 0..rec.header.num_logops {
            if off + OP_HEADER_LEN > p.len() {
                return Err(corrupt(at, "a log op header runs past its record".into()));
            }
            let h = OpHeader::decode(&p[off..off + OP_HEADER_LEN]);
            off += OP_HEADER_LEN;
            let len = h.len as usize;
            if off + len > p.len() {
                return Err(corrupt(
                    at,
                    format!("a {len}-byte log op runs past its record"),
                ));
            }
            let data = &p[off..off + len];
            off += len;
            if h.client == CLIENT_LOG {
                last_unmount = h.flags & OP_UNMOUNT != 0;
                continue;
            }
            if h.client != CLIENT_TRANS {
                return Err(corrupt(
                    at,
                    format!("log op of unknown client {:#x}", h.client),
                ));
            }
            // Reassemble split ops.
            let whole: Vec<u8> = if h.flags & OP_WAS_CONT != 0 {
                let Some((tid, mut buf)) = partial.take() else {
                    return Err(corrupt(at, "a continued log op with no start".into()));
                };
                if tid != h.tid {
                    return Err(corrupt(
                        at,
                        "a continued log op of another transaction".into(),
                    ));
                }
                buf.extend_from_slice(data);
                if h.flags & OP_CONTINUE != 0 {
                    partial = Some((tid, buf));
                    continue;
                }
                buf
            } else {
                if h.flags & OP_CONTINUE != 0 {
                    partial = Some((h.tid, data.to_vec()));
                    continue;
                }
                data.to_vec()
            };
            if h.flags & OP_COMMIT != 0 {
                if let Some(cp) = open.remove(&h.tid) {
                    done.push(cp);
                }
                continue;
            }
            if h.flags & item::OP_START != 0 {
                open.insert(h.tid, Vec::new());
                continue;
            }
            let Some(cp) = open.get_mut(&h.tid) else {
                // Ops of a checkpoint whose start is before the tail: its commit record,
                // if any, is too; nothing of it is replayed.
                continue;
            };
            if whole.len() == TRANS_HEADER_LEN
                && crate::fs::format::endian::get_u32(&whole, 0) == TRANS_MAGIC
            {
                continue;
            }
            cp.push(whole);
        }
    }
    Ok((done, last_unmount))
}

/// Recover the log of a filesystem with geometry `geo` on `dev`: replay what it holds and
/// write it home. Returns where the next record goes.
pub fn recover(
    dev: &dyn BlockDev,
    cksum: Cksum,
    uuid: &[u8; 16],
    geo: &Geometry,
) -> FsResult<Recovery> {
    let log_daddr = geo.log_daddr();
    let log_bb = u64::from(geo.log_bb());
    let region = read_log(dev, geo)?;
    let window =
        scan::find_window(&cksum, &region, uuid, scan::MAX_ICLOGS).map_err(|e| e.at(log_daddr))?;
    let abs = |l: crate::fs::log::record::Lsn| u64::from(l.cycle()) * log_bb + u64::from(l.block());
    let next_abs = abs(window.next);
    let (cps, clean) = checkpoints(&window, log_daddr)?;
    if std::env::var_os("FSLAB_DEBUG_RECOVERY").is_some() {
        eprintln!(
            "recovery: tail {} next {} records {} checkpoints {} clean {clean} cut {}",
            window.tail,
            window.next,
            window.records.len(),
            cps.len(),
            window.cut.len()
        );
    }
    let mut rec = Recovery {
        next_abs,
        clean: clean && cps.is_empty(),
        checkpoints: cps.len(),
        blocks: 0,
        torn: window.cut.len(),
    };
    // The scan allows for XFS's most iclogs in flight, whatever this mount's logbufs: the
    // log may have been written with another setting.
    // Pass 1: the last cancel of each block, as (checkpoint, item) position.
    let mut cancels: FastMap<u64, (usize, usize)> = FastMap::default();
    for (c, cp) in cps.iter().enumerate() {
        for (i, op) in cp.iter().enumerate() {
            if let Ok(LoggedItem::Cancel { daddr }) = item::parse_item(op) {
                cancels.insert(daddr, (c, i));
            }
        }
    }
    let cancelled_later =
        |daddr: u64, pos: (usize, usize)| cancels.get(&daddr).is_some_and(|&p| p > pos);
    // Pass 2: lay the items over their home blocks.
    let mut blocks: FastMap<u64, (BlockKind, Vec<u8>)> = FastMap::default();
    let mut order = Vec::new();
    let end = geo.sectors();
    for (c, cp) in cps.iter().enumerate() {
        for (i, op) in cp.iter().enumerate() {
            let it = item::parse_item(op)
                .map_err(|why| corrupt(log_daddr, format!("log item: {why}")))?;
            let (daddr, kind, len) = match &it {
                LoggedItem::Cancel { .. } => continue,
                LoggedItem::Icreate(ic) => {
                    // The chunk's inode clusters, written afresh (their bytes were never
                    // logged); a cluster freed later in the log keeps what came after.
                    for (daddr, first) in icreate_blocks(geo, ic)
                        .map_err(|why| corrupt(log_daddr, format!("icreate item: {why}")))?
                    {
                        if cancelled_later(daddr, (c, i)) {
                            continue;
                        }
                        let b = match blocks.entry(daddr) {
                            std::collections::hash_map::Entry::Occupied(o) => {
                                let (k, b) = o.into_mut();
                                *k = BlockKind::Inode;
                                b.clear();
                                b.resize(INODE_CLUSTER_SIZE, 0);
                                b
                            }
                            std::collections::hash_map::Entry::Vacant(v) => {
                                order.push(daddr);
                                &mut v
                                    .insert((BlockKind::Inode, vec![0u8; INODE_CLUSTER_SIZE]))
                                    .1
                            }
                        };
                        item::init_cluster(b, first, ic.seed, uuid, cksum);
                    }
                    continue;
                }
                LoggedItem::Buf {
                    kind, daddr, len, ..
                } => (*daddr, *kind, *len),
                LoggedItem::Inode { ino, .. } => {
                    if !geo.ino_valid(*ino) {
                        return Err(corrupt(
                            log_daddr,
                            format!("log item for inode {ino} outside the filesystem"),
                        ));
                    }
                    (
                        geo.ino_location(*ino).0.0,
                        BlockKind::Inode,
                        INODE_CLUSTER_SIZE,
                    )
                }
            };
            if daddr + (len / BBSIZE) as u64 > end
                || (daddr >= log_daddr && daddr < log_daddr + log_bb)
            {
                return Err(corrupt(
                    log_daddr,
                    format!("log item for daddr {daddr} outside the metadata space"),
                ));
            }
            if cancelled_later(daddr, (c, i)) {
                continue;
            }
            // A block the item says starts as zeros is not read from home.
            let zeroed = matches!(it, LoggedItem::Buf { zeroed: true, .. });
            if let std::collections::hash_map::Entry::Vacant(v) = blocks.entry(daddr) {
                let mut b = vec![0u8; len];
                if !zeroed {
                    dev.read_at(&mut b, daddr * BBSIZE as u64)
                        .map_err(|e| FsError::io(IoOp::ReadMeta(kind), Some(daddr), e))?;
                }
                v.insert((kind, b));
                order.push(daddr);
            }
            let (k, b) = blocks.get_mut(&daddr).expect("inserted above");
            if b.len() != len {
                return Err(corrupt(
                    log_daddr,
                    format!("log items of {} and {len} bytes for daddr {daddr}", b.len()),
                ));
            }
            if zeroed {
                b.fill(0);
            }
            match it {
                LoggedItem::Buf {
                    kind, map, data, ..
                } => {
                    *k = kind;
                    item::apply_chunks(b, map, data);
                }
                LoggedItem::Inode { ino, image, .. } => {
                    let off = geo.ino_location(ino).1;
                    let slot = &mut b[off..off + INODE_SIZE];
                    slot[..image.len()].copy_from_slice(image);
                    slot[image.len()..].fill(0);
                    // A logged image carries no CRC (see `Fs::dinode_image`).
                    cksum.update(BlockKind::Inode, slot);
                }
                LoggedItem::Cancel { .. } | LoggedItem::Icreate(_) => {}
            }
        }
    }
    order.sort_unstable();
    for daddr in order {
        let (kind, mut b) = blocks.remove(&daddr).expect("listed");
        // Inode clusters carry one CRC per inode, set as each replayed inode was applied;
        // every other kind gets its CRC now, as write-back would.
        if kind != BlockKind::Inode {
            for piece in b.chunks_mut(kind.crc_len()) {
                cksum.update(kind, piece);
            }
        }
        dev.write_at(&b, daddr * BBSIZE as u64, false)
            .map_err(|e| FsError::io(IoOp::WriteReplayed, Some(daddr), e))?;
        rec.blocks += 1;
    }
    if !rec.clean {
        clear_stale(dev, log_daddr, log_bb, next_abs, abs(window.tail))?;
    }
    dev.flush()
        .map_err(|e| FsError::io(IoOp::FlushDevice, None, e))?;
    Ok(rec)
}

/// The inode clusters of an icreate item's chunk, each as its address and first inode
/// number; `Err` when the item does not describe a chunk of this filesystem.
fn icreate_blocks(geo: &Geometry, ic: &item::Icreate) -> Result<Vec<(u64, u64)>, String> {
    let per_block = crate::fs::format::INODES_PER_BLOCK as u32;
    let chunk = crate::fs::format::CHUNK_BLOCKS;
    if ic.agno >= geo.agcount
        || ic.isize != INODE_SIZE as u32
        || ic.length != chunk
        || ic.count != chunk * per_block
        || !ic.agbno.is_multiple_of(chunk)
        || u64::from(ic.agbno) + u64::from(ic.length) > u64::from(geo.agblocks)
    {
        return Err(format!("{ic:?} is not an inode chunk of this filesystem"));
    }
    Ok((0..ic.length)
        .step_by(BLOCKS_PER_CLUSTER as usize)
        .map(|b| {
            let agbno = ic.agbno + b;
            (
                geo.ag_daddr(ic.agno, agbno).0,
                geo.ino(ic.agno, Geometry::agbno_agino(agbno)),
            )
        })
        .collect())
}

/// Zero the blocks after the head that a torn write may have left (XFS's
/// `xlog_clear_stale_blocks`): records written after recovery must never sit in front of
/// stale ones of the same cycle. Up to 8 iclogs of 256 KiB, never into the tail.
fn clear_stale(
    dev: &dyn BlockDev,
    log_daddr: u64,
    log_bb: u64,
    next: u64,
    tail: u64,
) -> FsResult<()> {
    let room = (tail + log_bb).saturating_sub(next);
    let n = room.min(8 * 512).min(log_bb);
    let zero = vec![0u8; 64 * BBSIZE];
    let mut done = 0;
    while done < n {
        let at = (next + done) % log_bb;
        let run = (n - done).min(64).min(log_bb - at);
        dev.write_at(
            &zero[..(run as usize) * BBSIZE],
            (log_daddr + at) * BBSIZE as u64,
            false,
        )
        .map_err(|e| FsError::io(IoOp::WriteLog, Some(log_daddr + at), e))?;
        done += run;
    }
    Ok(())
}
