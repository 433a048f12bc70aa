//! What a checkpoint carries: log operations and the log items inside them, byte by byte.
//!
//! A record's payload is a run of operations, each an op header (XFS's `xlog_op_header`,
//! 12 bytes: tid, length, client, flags, reserved) followed by its data. One checkpoint is
//! the operations of one transaction id: a START op, the transaction header (`TRAN`, type 40
//! `XFS_TRANS_CHECKPOINT`, as delayed logging writes), one op per log item, and a COMMIT op.
//! An op too long for the iclog it starts in is split: the first piece carries CONTINUE,
//! the rest WAS_CONT (and CONTINUE again if it still goes on), so an op header never
//! straddles two records. The unmount record is one op of client `XFS_LOG` with flag
//! UNMOUNT.
//!
//! Item formats are labfs's own (XFS's `xfs_buf_log_format`/`xfs_inode_log_format` carry
//! more than labfs needs), with XFS's type numbers:
//!
//! | item | bytes | fields |
//! |---|---|---|
//! | buffer `0x123c` | 24 + 8 per 64 chunks of the buffer + 128 per logged chunk | type, flags (CANCEL, ZERO), kind, daddr, length, chunk map (one 64-bit word per 64 chunks: one for a 4 KiB block, two for a 16 KiB inode cluster); then the logged 128-byte chunks in order |
//! | inode `0x123b` | 16 + 176..512 | type, fields (core, data fork, timestamps), inode number; then the on-disk inode image up to its last non-zero byte (the rest of the slot is zero) |
//! | icreate `0x123f` | 28 | type, size (28), AG, first AG block, inodes (64), inode size (512), blocks (8), generation seed: a new inode chunk, whose cluster buffers recovery writes afresh (XFS's `xfs_icreate_log`) |
//!
//! A buffer item logs every chunk changed since the buffer was last written home (XFS keeps
//! a buffer log item's dirty map until write-back), not only the last transaction's: the
//! checkpoint that moves the item forward in the AIL must carry all of its unwritten state.
//! A block initialised since it was last home (got new: zeroed, not read) carries ZERO:
//! recovery starts it from zeros, so only the chunks written since need logging (every
//! change is logged, so the others are zero in memory too). XFS logs a new block's
//! initialised regions only; logging all of it made every relog of a directory's newest
//! data and free-index blocks a full 4 KiB.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::fs::cksum::Cksum;
use crate::fs::format::dinode::{self, CORE_SIZE, DinodeCore};
use crate::fs::format::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::fs::format::{BlockKind, INODE_SIZE};
use crate::fs::geo::{INODE_CLUSTER_SIZE, INODES_PER_CLUSTER};

/// Bytes of one op header.
pub const OP_HEADER_LEN: usize = 12;
/// The client id of transaction ops (`XFS_TRANSACTION`).
pub const CLIENT_TRANS: u8 = 0x69;
/// The client id of log-internal ops: the unmount record (`XFS_LOG`).
pub const CLIENT_LOG: u8 = 0xaa;
/// Op flag: the first op of a transaction.
pub const OP_START: u8 = 0x01;
/// Op flag: the commit record.
pub const OP_COMMIT: u8 = 0x02;
/// Op flag: the op's data goes on in the next op header.
pub const OP_CONTINUE: u8 = 0x04;
/// Op flag: this op continues the previous one.
pub const OP_WAS_CONT: u8 = 0x08;
/// Op flag: the unmount record.
pub const OP_UNMOUNT: u8 = 0x20;
/// The transaction header's magic, "TRAN".
pub const TRANS_MAGIC: u32 = 0x5452_414e;
/// The only transaction type delayed logging writes.
pub const TRANS_CHECKPOINT: u32 = 40;
/// Bytes of the transaction header.
pub const TRANS_HEADER_LEN: usize = 16;
/// The unmount record's type word.
pub const UNMOUNT_TYPE: u16 = 0x556e;
/// Bytes of one logged buffer chunk (`XFS_BLF_CHUNK`).
pub const CHUNK: usize = 128;
/// A buffer's dirty chunks, bit `c` for bytes `c * CHUNK..(c + 1) * CHUNK` (XFS's
/// `blf_data_map`). 128 bits: enough for the largest buffer, a 16 KiB inode cluster.
pub type ChunkMap = u128;

/// Where an object's item sits in the CIL's current context: a place the object carries, so
/// a commit finds the item it relogs without a map lookup (XFS reaches the log item from
/// the object the same way). While the object has an item in the current context its slot
/// names it: the slot is written when the item is made, and items never move within a
/// context. The item list starts over at each checkpoint, so a slot goes stale (as does a
/// new object's 0); a commit trusts it only when the item at that place is the object's own.
#[derive(Debug, Default)]
pub struct CilSlot(AtomicU32);

impl CilSlot {
    /// The place last recorded (possibly stale).
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed) as usize
    }

    /// Record the place of the object's item (written under the CIL's lock). A context
    /// never holds 2^32 items: log space bounds it far below that.
    pub fn set(&self, at: usize) {
        self.0.store(at as u32, Ordering::Relaxed);
    }
}

/// Chunks a [`ChunkMap`] covers.
pub const MAP_CHUNKS: usize = ChunkMap::BITS as usize;
/// The largest buffer a buffer item describes.
pub const MAX_BUF_LEN: usize = MAP_CHUNKS * CHUNK;
const _: () = assert!(INODE_CLUSTER_SIZE <= MAX_BUF_LEN);
const _: () = assert!(crate::fs::format::BLOCK_SIZE <= MAX_BUF_LEN);
/// Buffer log item type (`XFS_LI_BUF`).
pub const LI_BUF: u16 = 0x123c;
/// Inode log item type (`XFS_LI_INODE`).
pub const LI_INODE: u16 = 0x123b;
/// Inode-create item type (`XFS_LI_ICREATE`).
pub const LI_ICREATE: u16 = 0x123f;
/// Buffer item flag: the block was freed; earlier images of it must not be replayed.
pub const BUF_CANCEL: u16 = 0x1;
/// Buffer item flag: the block was initialised as zeros since it was last home; replay
/// starts from zeros, not from the home block, and lays the chunks over them.
pub const BUF_ZERO: u16 = 0x2;
/// Bytes of a buffer item's header before its chunk map.
const BUF_FIXED_LEN: usize = 24;
/// Bytes of one word of the on-disk chunk map (64 chunks).
const MAP_WORD: usize = 8;
/// The buffer item of a whole 4 KiB block: the capacity of the large recycled item vectors
/// (the blocks logged chunk by chunk; inode clusters change through inode items).
pub const MAX_BUF_ITEM: usize =
    buf_header_len(crate::fs::format::BLOCK_SIZE) + crate::fs::format::BLOCK_SIZE;
const INODE_HEADER_LEN: usize = 16;
/// Bytes of an icreate item (XFS's `xfs_icreate_log`).
pub const ICREATE_LEN: usize = 28;

/// Inode item fields: which parts of the inode a transaction changed (XFS's `XFS_ILOG_*`).
pub mod fields {
    /// The core (sizes, counts, mode, links, owner).
    pub const CORE: u8 = 0x1;
    /// The data fork (extents, inline data).
    pub const DATA: u8 = 0x2;
    /// Timestamps only: fdatasync need not force these.
    pub const TIMESTAMP: u8 = 0x4;
}

/// One op header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpHeader {
    /// The transaction (checkpoint) id.
    pub tid: u32,
    /// Bytes of data after the header.
    pub len: u32,
    /// Which client wrote it.
    pub client: u8,
    /// `OP_*` flags.
    pub flags: u8,
}

impl OpHeader {
    /// The 12 on-disk bytes.
    pub fn encode(&self) -> [u8; OP_HEADER_LEN] {
        let mut b = [0u8; OP_HEADER_LEN];
        put_u32(&mut b, 0, self.tid);
        put_u32(&mut b, 4, self.len);
        b[8] = self.client;
        b[9] = self.flags;
        b
    }

    /// Decode 12 bytes.
    pub fn decode(b: &[u8]) -> OpHeader {
        OpHeader {
            tid: get_u32(b, 0),
            len: get_u32(b, 4),
            client: b[8],
            flags: b[9],
        }
    }
}

/// The transaction header of checkpoint `tid` holding `items` items.
pub fn trans_header(tid: u32, items: u32) -> [u8; TRANS_HEADER_LEN] {
    let mut b = [0u8; TRANS_HEADER_LEN];
    put_u32(&mut b, 0, TRANS_MAGIC);
    put_u32(&mut b, 4, TRANS_CHECKPOINT);
    put_u32(&mut b, 8, tid);
    put_u32(&mut b, 12, items);
    b
}

/// The unmount record's op data.
pub fn unmount_data() -> [u8; 8] {
    let mut b = [0u8; 8];
    put_u16(&mut b, 0, UNMOUNT_TYPE);
    b
}

/// Chunks in a buffer of `len` bytes.
pub fn chunks_of(len: usize) -> usize {
    len.div_ceil(CHUNK)
}

/// Bytes of the header of a buffer item for a `len`-byte buffer: the map has one word per
/// 64 chunks of the buffer (XFS sizes `blf_map_size` by the buffer the same way), so a
/// 4 KiB block's item header is 32 bytes and a 16 KiB inode cluster's 40.
pub const fn buf_header_len(len: usize) -> usize {
    let words = len.div_ceil(CHUNK).div_ceil(64);
    BUF_FIXED_LEN + MAP_WORD * if words == 0 { 1 } else { words }
}

/// The chunk map covering bytes `first..=last`.
pub fn chunk_range(first: usize, last: usize) -> ChunkMap {
    let (a, b) = (first / CHUNK, last / CHUNK);
    debug_assert!(b < MAP_CHUNKS);
    let hi = if b + 1 >= MAP_CHUNKS {
        ChunkMap::MAX
    } else {
        (1 << (b + 1)) - 1
    };
    hi & !((1 << a) - 1)
}

/// The runs of consecutive chunks set in `map`, lowest first, as (first chunk, chunks).
fn chunk_runs(map: ChunkMap) -> impl Iterator<Item = (usize, usize)> {
    let mut rest = map;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let first = rest.trailing_zeros() as usize;
        let run = (rest >> first).trailing_ones() as usize;
        rest = if first + run >= MAP_CHUNKS {
            0
        } else {
            rest & !((1 << (first + run)) - 1)
        };
        Some((first, run))
    })
}

/// The chunk map of a buffer item whose header is `head_len` bytes.
fn get_map(d: &[u8], head_len: usize) -> ChunkMap {
    (BUF_FIXED_LEN..head_len)
        .step_by(MAP_WORD)
        .enumerate()
        .fold(0, |m, (w, at)| {
            m | ChunkMap::from(get_u64(d, at)) << (64 * w)
        })
}

/// Write `map` into the header (`head_len` bytes) of buffer item `v`.
fn put_map(v: &mut [u8], head_len: usize, map: ChunkMap) {
    for (w, at) in (BUF_FIXED_LEN..head_len).step_by(MAP_WORD).enumerate() {
        put_u64(v, at, (map >> (64 * w)) as u64);
    }
}

/// A buffer item: the chunks of `bytes` set in `map`, over zeros when `zeroed` (else over the
/// home block), formatted into `v` (cleared first; a recycled vector whose allocation is
/// reused, see [`crate::fs::log::Log::item_bufs`]).
pub fn format_buf(
    mut v: Vec<u8>,
    kind: BlockKind,
    daddr: u64,
    bytes: &[u8],
    map: ChunkMap,
    zeroed: bool,
) -> Vec<u8> {
    // The item's exact size reserved at once (growing the vector chunk by chunk was a fifth
    // of a create's time), and one copy per run of consecutive chunks.
    let n = map.count_ones() as usize;
    let head_len = buf_header_len(bytes.len());
    v.clear();
    v.reserve(head_len + n * CHUNK);
    v.resize(head_len, 0);
    put_u16(&mut v, 0, LI_BUF);
    if zeroed {
        put_u16(&mut v, 2, BUF_ZERO);
    }
    v[4] = kind_index(kind);
    put_u64(&mut v, 8, daddr);
    put_u32(&mut v, 16, bytes.len() as u32);
    put_map(&mut v, head_len, map);
    for (first, run) in chunk_runs(map) {
        let start = (first * CHUNK).min(bytes.len());
        let end = ((first + run) * CHUNK).min(bytes.len());
        v.extend_from_slice(&bytes[start..end]);
    }
    v
}

/// Bring buffer item `v`, formatted earlier in this CIL context from the same buffer, up to
/// the item [`format_buf`] would make now: the map widened to `map`, the `changed` chunks and
/// those new to the map copied from `bytes`, the others kept (nothing changed them since: every
/// change to a held buffer is logged, so it is in `changed`). A hot directory block is relogged
/// by every create, and formatting its whole dirty range again each time was most of the bytes
/// a commit copied; the chunks one create changes are a few. Returns false, leaving `v` as it
/// was, when `v` is not such an item (a cancel, the other zeroed state, another block or
/// length, chunks outside `map`): the caller formats afresh.
pub fn relog_buf(
    v: &mut Vec<u8>,
    kind: BlockKind,
    daddr: u64,
    bytes: &[u8],
    map: ChunkMap,
    changed: ChunkMap,
    zeroed: bool,
) -> bool {
    let head_len = buf_header_len(bytes.len());
    if !bytes.len().is_multiple_of(CHUNK)
        || bytes.len() > MAX_BUF_LEN
        || v.len() < head_len
        || get_u16(v, 0) != LI_BUF
        || get_u16(v, 2) != if zeroed { BUF_ZERO } else { 0 }
        || v[4] != kind_index(kind)
        || get_u64(v, 8) != daddr
        || get_u32(v, 16) as usize != bytes.len()
    {
        return false;
    }
    let old = get_map(v, head_len);
    let old_len = head_len + old.count_ones() as usize * CHUNK;
    if old & !map != 0 || changed & !map != 0 || v.len() != old_len {
        return false;
    }
    if map == old {
        // The usual relog: no chunk new to the map, so every chunk keeps its place and
        // only the changed ones are copied, a run of consecutive chunks at a time.
        for (first, run) in chunk_runs(changed) {
            let at = head_len + (old & ((1 << first) - 1)).count_ones() as usize * CHUNK;
            let len = run * CHUNK;
            v[at..at + len].copy_from_slice(&bytes[first * CHUNK..first * CHUNK + len]);
        }
        return true;
    }
    let new_len = head_len + map.count_ones() as usize * CHUNK;
    v.resize(new_len, 0);
    // From the last chunk down, so a kept chunk moves up (to make room for new ones below
    // it) before anything is written over its old place.
    let (mut old_at, mut new_at) = (old_len, new_len);
    let mut rest = map;
    while rest != 0 {
        let c = (ChunkMap::BITS - 1 - rest.leading_zeros()) as usize;
        rest &= !(1 << c);
        new_at -= CHUNK;
        let kept = old & (1 << c) != 0;
        if kept {
            old_at -= CHUNK;
        }
        if !kept || changed & (1 << c) != 0 {
            v[new_at..new_at + CHUNK].copy_from_slice(&bytes[c * CHUNK..(c + 1) * CHUNK]);
        } else if old_at != new_at {
            v.copy_within(old_at..old_at + CHUNK, new_at);
        }
    }
    put_map(v, head_len, map);
    true
}

/// A buffer cancel item: the block at `daddr` was freed (formatted into `v`, cleared first).
pub fn format_cancel(mut v: Vec<u8>, kind: BlockKind, daddr: u64, len: usize) -> Vec<u8> {
    v.clear();
    v.resize(buf_header_len(len), 0);
    put_u16(&mut v, 0, LI_BUF);
    put_u16(&mut v, 2, BUF_CANCEL);
    v[4] = kind_index(kind);
    put_u64(&mut v, 8, daddr);
    put_u32(&mut v, 16, len as u32);
    v
}

/// An inode item carrying the inode's on-disk image (CRC field zero), trimmed after its last
/// non-zero byte (XFS logs the log dinode and only the fork bytes in use; the slot's rest is
/// zero); formatted into `v` (cleared first).
pub fn format_inode(mut v: Vec<u8>, ino: u64, fields: u8, image: &[u8]) -> Vec<u8> {
    debug_assert_eq!(image.len(), INODE_SIZE);
    let used = used_len(image);
    let image = &image[..used];
    let mut head = [0u8; INODE_HEADER_LEN];
    put_u16(&mut head, 0, LI_INODE);
    put_u16(&mut head, 2, u16::from(fields));
    put_u64(&mut head, 8, ino);
    v.clear();
    v.reserve(INODE_HEADER_LEN + used);
    v.extend_from_slice(&head);
    v.extend_from_slice(image);
    v
}

/// How much of an inode image an inode item carries: up to the end of the 8-byte word holding
/// its last non-zero byte, never less than the core. Scanned a word at a time from the end
/// (the fork is mostly zeros; a byte loop over it was most of a commit's inode formatting).
fn used_len(image: &[u8]) -> usize {
    // CORE_SIZE is a multiple of 8, so the words past it are the image's own 8-byte words.
    let words = image[CORE_SIZE..].chunks_exact(8);
    let zero = |w: &[u8]| u64::from_ne_bytes(w.try_into().unwrap_or([1; 8])) == 0;
    let tail = words.len() - words.rev().take_while(|w| zero(w)).count();
    (CORE_SIZE + tail * 8).min(INODE_SIZE)
}

/// A new inode chunk: `count` inodes of `isize` bytes in the `length` blocks from AG block
/// `agbno` of AG `agno`, initialised free with generations from `seed` (formatted into `v`,
/// cleared first). The cluster blocks themselves are not logged (XFS's ordered buffers):
/// recovery writes them afresh from this item.
pub fn format_icreate(mut v: Vec<u8>, c: &Icreate) -> Vec<u8> {
    v.clear();
    v.resize(ICREATE_LEN, 0);
    put_u16(&mut v, 0, LI_ICREATE);
    put_u16(&mut v, 2, ICREATE_LEN as u16);
    put_u32(&mut v, 4, c.agno);
    put_u32(&mut v, 8, c.agbno);
    put_u32(&mut v, 12, c.count);
    put_u32(&mut v, 16, c.isize);
    put_u32(&mut v, 20, c.length);
    put_u32(&mut v, 24, c.seed);
    v
}

/// What an icreate item says: a new inode chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icreate {
    /// The AG.
    pub agno: u32,
    /// Its first block in the AG.
    pub agbno: u32,
    /// Inodes in the chunk.
    pub count: u32,
    /// Bytes per inode.
    pub isize: u32,
    /// Blocks in the chunk.
    pub length: u32,
    /// The seed each inode's generation number is made from.
    pub seed: u32,
}

/// Fill a new chunk's zeroed inode cluster buffer whose first inode is `first` with free
/// inodes, each with its CRC; generation numbers come from the chunk's `seed`. The one
/// definition of a new cluster's bytes: chunk allocation and log recovery (icreate items)
/// both use it.
pub(crate) fn init_cluster(block: &mut [u8], first: u64, seed: u32, uuid: &[u8; 16], cksum: Cksum) {
    debug_assert_eq!(block.len(), INODE_CLUSTER_SIZE);
    for slot in 0..INODES_PER_CLUSTER as usize {
        let ino = first + slot as u64;
        let raw = &mut block[slot * INODE_SIZE..(slot + 1) * INODE_SIZE];
        let core = DinodeCore {
            generation: (ino as u32).wrapping_mul(2_654_435_761) ^ seed,
            ..DinodeCore::default()
        };
        dinode::encode_core(raw, ino, &core, uuid);
        cksum.update(BlockKind::Inode, raw);
    }
}

fn kind_index(kind: BlockKind) -> u8 {
    BlockKind::ALL.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

/// A log item read back from a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggedItem<'a> {
    /// Chunks of a metadata buffer.
    Buf {
        /// The structure.
        kind: BlockKind,
        /// Its home address in sectors.
        daddr: u64,
        /// The buffer's length in bytes.
        len: usize,
        /// Which chunks follow.
        map: ChunkMap,
        /// The chunks go over zeros, not over the home block ([`BUF_ZERO`]).
        zeroed: bool,
        /// The logged chunks, in order.
        data: &'a [u8],
    },
    /// The block at `daddr` was freed.
    Cancel {
        /// Its home address in sectors.
        daddr: u64,
    },
    /// A new inode chunk (its blocks are written afresh).
    Icreate(Icreate),
    /// An inode's image.
    Inode {
        /// The inode number.
        ino: u64,
        /// Which fields changed.
        fields: u8,
        /// The on-disk inode, up to its last non-zero byte (the rest of the slot is zero).
        image: &'a [u8],
    },
}

/// Decode one item op's data; `Err` names what is wrong.
pub fn parse_item(d: &[u8]) -> Result<LoggedItem<'_>, String> {
    if d.len() < 2 {
        return Err(format!("a {}-byte log item", d.len()));
    }
    match get_u16(d, 0) {
        LI_BUF => {
            if d.len() < BUF_FIXED_LEN {
                return Err("a truncated buffer item".into());
            }
            let daddr = get_u64(d, 8);
            let len = get_u32(d, 16) as usize;
            if len == 0 || len > MAX_BUF_LEN || !len.is_multiple_of(512) {
                return Err(format!("buffer item of {len} bytes"));
            }
            let head_len = buf_header_len(len);
            if d.len() < head_len {
                return Err("a truncated buffer item".into());
            }
            if get_u16(d, 2) & BUF_CANCEL != 0 {
                return Ok(LoggedItem::Cancel { daddr });
            }
            let kind = *BlockKind::ALL
                .get(usize::from(d[4]))
                .ok_or_else(|| format!("buffer item of unknown kind {}", d[4]))?;
            let map = get_map(d, head_len);
            let n = chunks_of(len);
            if n < MAP_CHUNKS && map >> n != 0 {
                return Err(format!("buffer item map {map:#x} beyond its {len} bytes"));
            }
            let want = map.count_ones() as usize * CHUNK;
            if d.len() - head_len != want {
                return Err(format!(
                    "buffer item with {} data bytes for {} chunks",
                    d.len() - head_len,
                    map.count_ones()
                ));
            }
            Ok(LoggedItem::Buf {
                kind,
                daddr,
                len,
                map,
                zeroed: get_u16(d, 2) & BUF_ZERO != 0,
                data: &d[head_len..],
            })
        }
        LI_INODE => {
            let len = d.len().saturating_sub(INODE_HEADER_LEN);
            if d.len() < INODE_HEADER_LEN || !(CORE_SIZE..=INODE_SIZE).contains(&len) {
                return Err(format!("an inode item of {} bytes", d.len()));
            }
            Ok(LoggedItem::Inode {
                ino: get_u64(d, 8),
                fields: get_u16(d, 2) as u8,
                image: &d[INODE_HEADER_LEN..],
            })
        }
        LI_ICREATE => {
            if d.len() != ICREATE_LEN || usize::from(get_u16(d, 2)) != ICREATE_LEN {
                return Err(format!("an icreate item of {} bytes", d.len()));
            }
            Ok(LoggedItem::Icreate(Icreate {
                agno: get_u32(d, 4),
                agbno: get_u32(d, 8),
                count: get_u32(d, 12),
                isize: get_u32(d, 16),
                length: get_u32(d, 20),
                seed: get_u32(d, 24),
            }))
        }
        t => Err(format!("unknown log item type {t:#06x}")),
    }
}

/// Lay the chunks of a buffer item over `block` (the home block's bytes).
pub fn apply_chunks(block: &mut [u8], map: ChunkMap, data: &[u8]) {
    let mut at = 0;
    for c in 0..chunks_of(block.len()) {
        if map & (1 << c) != 0 {
            let end = ((c + 1) * CHUNK).min(block.len());
            let n = end - c * CHUNK;
            block[c * CHUNK..end].copy_from_slice(&data[at..at + n]);
            at += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ranges_cover_the_bytes() {
        assert_eq!(chunk_range(0, 0), 1);
        assert_eq!(chunk_range(0, 127), 1);
        assert_eq!(chunk_range(127, 128), 0b11);
        assert_eq!(chunk_range(300, 600), 0b11100);
        assert_eq!(chunk_range(0, 4095), 0xffff_ffff);
    }

    #[test]
    fn a_buffer_item_carries_only_its_chunks_and_lays_them_back() {
        let mut bytes = vec![0u8; 4096];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let map = chunk_range(130, 140) | chunk_range(4000, 4095);
        let item = format_buf(Vec::new(), BlockKind::DirData, 88, &bytes, map, false);
        assert_eq!(item.len(), 32 + 2 * CHUNK);
        let LoggedItem::Buf {
            kind,
            daddr,
            len,
            map: m,
            zeroed,
            data,
        } = parse_item(&item).unwrap()
        else {
            panic!("not a buffer item")
        };
        assert_eq!((kind, daddr, len, m), (BlockKind::DirData, 88, 4096, map));
        assert!(!zeroed);
        let new = format_buf(Vec::new(), BlockKind::DirData, 88, &bytes, map, true);
        assert!(matches!(
            parse_item(&new).unwrap(),
            LoggedItem::Buf { zeroed: true, .. }
        ));
        let mut home = vec![0xeeu8; 4096];
        apply_chunks(&mut home, map, data);
        assert_eq!(&home[128..256], &bytes[128..256]);
        assert_eq!(&home[3968..], &bytes[3968..]);
        assert!(home[..128].iter().all(|&b| b == 0xee));
        assert!(home[256..3968].iter().all(|&b| b == 0xee));
    }

    #[test]
    fn a_16k_buffer_item_maps_all_its_chunks_in_two_words_and_logs_only_those() {
        let len = crate::fs::geo::INODE_CLUSTER_SIZE;
        assert_eq!(chunks_of(len), 128);
        let bytes: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        // A chunk in each map word and the very last one.
        let map = chunk_range(512, 639) | chunk_range(9000, 9050) | chunk_range(len - 1, len - 1);
        assert_eq!(map.count_ones(), 3);
        assert_eq!(map >> 127, 1);
        let item = format_buf(Vec::new(), BlockKind::Inode, 64, &bytes, map, false);
        assert_eq!(buf_header_len(len), 40);
        assert_eq!(item.len(), 40 + 3 * CHUNK, "only the dirty chunks");
        let LoggedItem::Buf {
            len: l,
            map: m,
            data,
            ..
        } = parse_item(&item).unwrap()
        else {
            panic!("not a buffer item")
        };
        assert_eq!((l, m), (len, map));
        let mut home = vec![0u8; len];
        apply_chunks(&mut home, m, data);
        for c in 0..128 {
            let r = c * CHUNK..(c + 1) * CHUNK;
            if map & (1 << c) != 0 {
                assert_eq!(home[r.clone()], bytes[r]);
            } else {
                assert!(home[r].iter().all(|&b| b == 0), "chunk {c}");
            }
        }
        // A whole cluster's map, and one whose length does not fit a map are refused.
        let all = format_buf(
            Vec::new(),
            BlockKind::Inode,
            64,
            &bytes,
            chunk_range(0, len - 1),
            true,
        );
        assert_eq!(all.len(), 40 + len);
        let mut big = format_cancel(Vec::new(), BlockKind::Inode, 64, len);
        assert_eq!(big.len(), 40);
        assert_eq!(parse_item(&big).unwrap(), LoggedItem::Cancel { daddr: 64 });
        big[16..20].copy_from_slice(&((MAX_BUF_LEN + 512) as u32).to_be_bytes());
        assert!(parse_item(&big).is_err(), "longer than a map covers");
        // A map word whose bits lie past an 8 KiB buffer's 64 chunks.
        let mut eight = format_buf(Vec::new(), BlockKind::DirData, 8, &bytes[..8192], 1, false);
        assert_eq!(eight.len(), 32 + CHUNK);
        eight[16..20].copy_from_slice(&4096u32.to_be_bytes());
        eight[24..32].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert!(parse_item(&eight).is_err(), "map beyond the buffer");
    }

    #[test]
    fn an_inode_item_ends_at_the_word_of_its_last_non_zero_byte() {
        for last in 0..INODE_SIZE {
            let mut img = [0u8; INODE_SIZE];
            img[last] = 0x80;
            let want = (last + 1).next_multiple_of(8).max(CORE_SIZE);
            let item = format_inode(Vec::new(), 5, fields::CORE, &img);
            assert_eq!(
                item.len(),
                INODE_HEADER_LEN + want,
                "last non-zero byte {last}"
            );
        }
    }

    #[test]
    fn a_relogged_buffer_item_is_the_item_formatted_whole() {
        let mut bytes = vec![0u8; 4096];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i % 253) as u8;
        }
        let first = chunk_range(1000, 1100) | chunk_range(3000, 3100);
        let mut item = format_buf(Vec::new(), BlockKind::DirData, 88, &bytes, first, false);
        // Changed chunks already in the map, then chunks new to it below, between and above
        // the kept ones (which must move up intact).
        let steps = [
            (first, chunk_range(1000, 1010)),
            (
                first | 1 | chunk_range(2000, 2200) | chunk_range(4000, 4095),
                1 << 16,
            ),
        ];
        for (round, (map, changed)) in steps.into_iter().enumerate() {
            // Only chunks the round says changed (or adds) change.
            if round == 0 {
                bytes[1005] ^= 0xff;
            }
            bytes[2100] ^= 0xff;
            bytes[4000] ^= 0xff;
            bytes[2] ^= 0xff;
            assert!(relog_buf(
                &mut item,
                BlockKind::DirData,
                88,
                &bytes,
                map,
                changed | (map & !first),
                false
            ));
            let whole = format_buf(Vec::new(), BlockKind::DirData, 88, &bytes, map, false);
            assert_eq!(item, whole, "round {round}");
        }
        // Not the same item: another block, the zeroed state, a map that lost chunks.
        let map = first | 1 | chunk_range(2000, 2200) | chunk_range(4000, 4095);
        let before = item.clone();
        assert!(!relog_buf(
            &mut item,
            BlockKind::DirData,
            96,
            &bytes,
            map,
            1,
            false
        ));
        assert!(!relog_buf(
            &mut item,
            BlockKind::DirData,
            88,
            &bytes,
            map,
            1,
            true
        ));
        assert!(!relog_buf(
            &mut item,
            BlockKind::DirData,
            88,
            &bytes,
            first,
            1,
            false
        ));
        assert_eq!(item, before, "a refused relog leaves the item as it was");
    }

    #[test]
    fn inode_and_cancel_items_round_trip_and_garbage_is_refused() {
        let img = [7u8; INODE_SIZE];
        let item = format_inode(Vec::new(), 99, fields::CORE, &img);
        let mut short = [0u8; INODE_SIZE];
        short[..200].fill(3);
        assert_eq!(
            format_inode(Vec::new(), 1, fields::CORE, &short).len(),
            16 + 200
        );
        short[..200].fill(0);
        assert_eq!(
            format_inode(Vec::new(), 1, fields::CORE, &short).len(),
            16 + CORE_SIZE
        );
        assert_eq!(
            parse_item(&item).unwrap(),
            LoggedItem::Inode {
                ino: 99,
                fields: fields::CORE,
                image: &img
            }
        );
        let c = format_cancel(Vec::new(), BlockKind::Inode, 64, 4096);
        assert_eq!(parse_item(&c).unwrap(), LoggedItem::Cancel { daddr: 64 });
        assert!(parse_item(&[0x12, 0x3c, 0]).is_err());
        assert!(parse_item(&item[..100]).is_err());
        let mut bad = format_buf(Vec::new(), BlockKind::Agf, 1, &[0u8; 512], 0b1, false);
        bad[24..32].copy_from_slice(&0x30u64.to_be_bytes());
        assert!(parse_item(&bad).is_err(), "map beyond the buffer");
        assert!(parse_item(&[0xff; 40]).is_err());
    }

    #[test]
    fn icreate_items_round_trip_and_a_wrong_size_is_refused() {
        let c = Icreate {
            agno: 3,
            agbno: 4096,
            count: 64,
            isize: 512,
            length: 8,
            seed: 0xdead_beef,
        };
        let item = format_icreate(Vec::new(), &c);
        assert_eq!(item.len(), ICREATE_LEN);
        assert_eq!(parse_item(&item).unwrap(), LoggedItem::Icreate(c));
        assert!(parse_item(&item[..24]).is_err());
        let mut long = item.clone();
        long.push(0);
        assert!(parse_item(&long).is_err());
    }

    #[test]
    fn op_headers_round_trip() {
        let h = OpHeader {
            tid: 0xdead_beef,
            len: 4242,
            client: CLIENT_TRANS,
            flags: OP_CONTINUE | OP_START,
        };
        assert_eq!(OpHeader::decode(&h.encode()), h);
    }
}
