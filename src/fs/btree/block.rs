//! Byte-level access to B+tree blocks: header fields per [`Layout`], entry offsets, header
//! initialisation and verification, and the in-block / between-block entry moves that the
//! cursor's algorithms are built from.
//!
//! Everything here works on 1-based entry indices, as XFS's btree code does: entry `i` of a
//! leaf is record `i`, of a node is key `i` with pointer `i`. Index 0 means "before the first
//! entry" in a cursor and is never used to address bytes.
//!
//! Every function that changes bytes also reports the changed range to the store
//! (`log_range`), so the callers cannot forget to log; the cursor only logs header fields
//! explicitly.

use std::ops::ControlFlow;

use super::problem::Problem;
use super::store::{BlockStore, BufId};
use super::{BtreeSpec, Layout};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::{BLOCK_SIZE, BlockKind, Daddr, Magic, endian};

/// Where each header field sits in one layout (offsets in bytes from the block start).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    /// Header length; entries start here.
    pub len: usize,
    /// Bytes per child/sibling pointer.
    pub ptr_len: usize,
    /// Offset of the u16 level.
    pub level: usize,
    /// Offset of the u16 entry count.
    pub numrecs: usize,
    /// Offset of the left sibling pointer (`ptr_len` bytes).
    pub leftsib: usize,
    /// Offset of the right sibling pointer (`ptr_len` bytes).
    pub rightsib: usize,
    /// Offset of the u64 self address (daddr).
    pub blkno: usize,
    /// Offset of the u64 LSN (written by the store at write-back).
    pub lsn: usize,
    /// Offset of the 16-byte filesystem UUID.
    pub uuid: usize,
    /// Offset of the owner field.
    pub owner: usize,
    /// Size of the owner field (4 or 8).
    pub owner_len: usize,
    /// Offset of the CRC (written by the store).
    pub crc: usize,
    /// The pointer value meaning "no block".
    pub null: u64,
}

impl Layout {
    /// Whether a full block passes an entry to a sibling before it splits. XFS's generic
    /// btrees do (`xfs_btree_make_block_unfull`); its da btree splits at once
    /// (`xfs_da3_split`), so a directory insert dirties the one leaf it lands in; the price
    /// is emptier leaves: a split leaves two half-full blocks, and only inserts fill them.
    pub(crate) const fn shifts_before_split(self) -> bool {
        !matches!(self, Layout::Da)
    }

    /// Field offsets of this layout's header.
    pub(crate) const fn header(self) -> Header {
        match self {
            Layout::Short => Header {
                len: 56,
                ptr_len: 4,
                level: 4,
                numrecs: 6,
                leftsib: 8,
                rightsib: 12,
                blkno: 16,
                lsn: 24,
                uuid: 32,
                owner: 48,
                owner_len: 4,
                crc: 52,
                null: 0xffff_ffff,
            },
            Layout::Long => Header {
                len: 72,
                ptr_len: 8,
                level: 4,
                numrecs: 6,
                leftsib: 8,
                rightsib: 16,
                blkno: 24,
                lsn: 32,
                uuid: 40,
                owner: 56,
                owner_len: 8,
                crc: 64,
                null: u64::MAX,
            },
            Layout::Da => Header {
                len: 64,
                ptr_len: 4,
                level: 58,
                numrecs: 56,
                leftsib: 4,
                rightsib: 0,
                blkno: 16,
                lsn: 24,
                uuid: 32,
                owner: 48,
                owner_len: 8,
                crc: 12,
                null: 0,
            },
        }
    }

    /// Bytes of block header before the first record or key.
    pub const fn header_len(self) -> usize {
        self.header().len
    }

    /// Bytes per block pointer (children and siblings).
    pub const fn ptr_len(self) -> usize {
        self.header().ptr_len
    }

    /// The sibling-pointer value meaning "no sibling".
    pub const fn null_ptr(self) -> u64 {
        self.header().null
    }

    /// Offset of the u64 LSN the store stamps at write-back.
    pub const fn lsn_offset(self) -> usize {
        self.header().lsn
    }

    /// Offset of the CRC the store computes at write-back.
    pub const fn crc_offset(self) -> usize {
        self.header().crc
    }

    /// The header layout of a B+tree block kind, or `None` for kinds that are not btree blocks.
    pub fn of_kind(kind: BlockKind) -> Option<Layout> {
        match kind {
            BlockKind::BnoBtree
            | BlockKind::CntBtree
            | BlockKind::InoBtree
            | BlockKind::FinoBtree => Some(Layout::Short),
            BlockKind::BmapBtree => Some(Layout::Long),
            BlockKind::DirLeafN | BlockKind::DaNode => Some(Layout::Da),
            _ => None,
        }
    }
}

/// Offset of the LSN field in a B+tree block of `kind` (for stores stamping write-backs).
pub fn lsn_offset(kind: BlockKind) -> Option<usize> {
    Layout::of_kind(kind).map(Layout::lsn_offset)
}

/// The geometry of one instantiation: header, entry sizes and capacities.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geom {
    pub hdr: Header,
    pub rec_len: usize,
    pub key_len: usize,
    pub leaf_max: usize,
    pub node_max: usize,
}

impl Geom {
    const fn of<S: BtreeSpec>() -> Geom {
        let hdr = S::LAYOUT.header();
        let room = BLOCK_SIZE - hdr.len;
        Geom {
            hdr,
            rec_len: S::REC_LEN,
            key_len: S::KEY_LEN,
            leaf_max: room / S::REC_LEN,
            node_max: room / (S::KEY_LEN + hdr.ptr_len),
        }
    }

    /// Most entries a block at `level` holds.
    #[inline]
    pub fn max(&self, level: usize) -> usize {
        if level == 0 {
            self.leaf_max
        } else {
            self.node_max
        }
    }

    /// Fewest entries a non-root block at `level` may hold (XFS: half of the maximum).
    #[inline]
    pub fn min(&self, level: usize) -> usize {
        self.max(level) / 2
    }

    #[inline]
    fn rec_off(&self, i: usize) -> usize {
        self.hdr.len + (i - 1) * self.rec_len
    }

    #[inline]
    fn key_off(&self, i: usize) -> usize {
        self.hdr.len + (i - 1) * self.key_len
    }

    #[inline]
    fn ptr_off(&self, i: usize) -> usize {
        self.hdr.len + self.node_max * self.key_len + (i - 1) * self.hdr.ptr_len
    }
}

/// Geometry as an associated constant, computed once per instantiation at compile time,
/// with the sanity checks every instantiation must pass.
pub(crate) trait SpecGeom: BtreeSpec {
    const GEOM: Geom;
    /// Evaluating this fails the build for an instantiation whose blocks are too small.
    const SANE: ();
}

impl<S: BtreeSpec> SpecGeom for S {
    const GEOM: Geom = Geom::of::<S>();
    const SANE: () = {
        let g = Geom::of::<S>();
        assert!(S::REC_LEN > 0 && S::KEY_LEN > 0, "entries must have a size");
        assert!(
            g.leaf_max >= 4 && g.node_max >= 4,
            "blocks must hold at least 4 entries"
        );
        assert!(g.leaf_max <= u16::MAX as usize && g.node_max <= u16::MAX as usize);
    };
}

/// Which sibling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

/// One entry to place in a block: a record (leaf) or a key with its child pointer (node).
pub(crate) enum Entry<S: BtreeSpec> {
    Rec(S::Rec),
    Node(S::Key, u64),
}

/// Build the `Corrupt` error for a block.
pub(crate) fn corrupt(kind: BlockKind, daddr: Daddr, what: impl Into<String>) -> FsError {
    FsError::Corrupt {
        kind,
        daddr: daddr.0,
        what: what.into(),
    }
}

/// The `Corrupt` error for block `id` at `level`.
pub(crate) fn corrupt_at<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &St,
    id: BufId,
    level: usize,
    what: impl Into<String>,
) -> FsError {
    corrupt(S::kind(level as u16), st.daddr(id), what)
}

#[inline]
fn get_ptr_raw(g: &Geom, b: &[u8], off: usize) -> u64 {
    if g.hdr.ptr_len == 8 {
        endian::get_u64(b, off)
    } else {
        u64::from(endian::get_u32(b, off))
    }
}

#[inline]
fn put_ptr_raw(g: &Geom, b: &mut [u8], off: usize, v: u64) {
    if g.hdr.ptr_len == 8 {
        endian::put_u64(b, off, v);
    } else {
        // Pointers of 4-byte layouts are range-checked by `ptr_ok` before they get here.
        endian::put_u32(b, off, v as u32);
    }
}

/// Whether `p` can name a block of this tree: not the null value, not 0 (AG block 0 and
/// filesystem block 0 hold the superblock; directory block 0 is the null of the Da layout),
/// and within the pointer width.
#[inline]
pub(crate) fn ptr_ok<S: BtreeSpec>(p: u64) -> bool {
    let h = S::LAYOUT.header();
    p != h.null && p != 0 && (h.ptr_len == 8 || p <= u64::from(u32::MAX))
}

/// Number of entries in the block.
#[inline]
pub(crate) fn numrecs<S: BtreeSpec>(b: &[u8]) -> usize {
    usize::from(endian::get_u16(b, S::GEOM.hdr.numrecs))
}

/// The raw sibling pointer on `side` (may be the layout's null).
#[inline]
pub(crate) fn sibling_raw<S: BtreeSpec>(b: &[u8], side: Side) -> u64 {
    let h = &S::GEOM.hdr;
    let off = match side {
        Side::Left => h.leftsib,
        Side::Right => h.rightsib,
    };
    get_ptr_raw(&S::GEOM, b, off)
}

/// Whether a raw pointer value is the layout's null.
#[inline]
pub(crate) fn is_null<S: BtreeSpec>(p: u64) -> bool {
    p == S::GEOM.hdr.null
}

/// The record at entry `i` of a leaf.
#[inline]
pub(crate) fn rec_at<S: BtreeSpec>(b: &[u8], i: usize) -> S::Rec {
    let off = S::GEOM.rec_off(i);
    S::decode_rec(&b[off..off + S::REC_LEN])
}

/// The key at entry `i` of a node.
#[inline]
pub(crate) fn key_at<S: BtreeSpec>(b: &[u8], i: usize) -> S::Key {
    let off = S::GEOM.key_off(i);
    S::decode_key(&b[off..off + S::KEY_LEN])
}

/// The key of entry `i` of a block at `level` (a record's key in a leaf).
#[inline]
pub(crate) fn entry_key<S: BtreeSpec>(b: &[u8], level: usize, i: usize) -> S::Key {
    if level == 0 {
        S::key_of(&rec_at::<S>(b, i))
    } else {
        key_at::<S>(b, i)
    }
}

/// The raw child pointer at entry `i` of a node.
#[inline]
pub(crate) fn ptr_at<S: BtreeSpec>(b: &[u8], i: usize) -> u64 {
    get_ptr_raw(&S::GEOM, b, S::GEOM.ptr_off(i))
}

/// The child pointer at entry `i` of node `id`, which must name a block.
pub(crate) fn child_ptr<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &St,
    id: BufId,
    level: usize,
    i: usize,
) -> FsResult<u64> {
    let b = st.bytes(id);
    if i == 0 || i > numrecs::<S>(b) {
        return Err(corrupt_at::<S, St>(
            st,
            id,
            level,
            format!("cursor index {i} outside the node's entries"),
        ));
    }
    let p = ptr_at::<S>(b, i);
    if ptr_ok::<S>(p) {
        Ok(p)
    } else {
        Err(corrupt_at::<S, St>(
            st,
            id,
            level,
            format!("child pointer {i} is {p:#x}"),
        ))
    }
}

/// The sibling of block `id` (pointer `own`) on `side`: `None` if there is none, an error
/// if the pointer cannot name a block or names the block itself.
pub(crate) fn sibling<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &St,
    id: BufId,
    own: u64,
    level: usize,
    side: Side,
) -> FsResult<Option<u64>> {
    let p = sibling_raw::<S>(st.bytes(id), side);
    if is_null::<S>(p) {
        Ok(None)
    } else if ptr_ok::<S>(p) && p != own {
        Ok(Some(p))
    } else {
        Err(corrupt_at::<S, St>(
            st,
            id,
            level,
            format!("{side:?} sibling pointer is {p:#x}"),
        ))
    }
}

/// Read the magic of a block as stored for `kind`, widened to u32, with the expected value.
fn magic_of(kind: BlockKind, b: &[u8]) -> (u32, u32) {
    match kind.magic() {
        Magic::U32(v) => (endian::get_u32(b, 0), v),
        Magic::U16 { offset, value } => (u32::from(endian::get_u16(b, offset)), u32::from(value)),
    }
}

/// Report every way block bytes `b` at `daddr` fail to be a valid header for `level`,
/// `uuid` and `owner`, stopping early when `sink` breaks. The hot path breaks at the first
/// problem; the checker collects them all.
pub(crate) fn header_problems<S: BtreeSpec>(
    b: &[u8],
    level: u16,
    daddr: Daddr,
    uuid: &[u8; 16],
    owner: u64,
    mut sink: impl FnMut(Problem) -> ControlFlow<()>,
) {
    let g = &S::GEOM;
    let h = &g.hdr;
    if b.len() < BLOCK_SIZE {
        let _ = sink(Problem::ShortBuffer { len: b.len() });
        return;
    }
    let kind = S::kind(level);
    let (found, expected) = magic_of(kind, b);
    if found != expected && sink(Problem::BadMagic { found, expected }).is_break() {
        return;
    }
    let found_level = endian::get_u16(b, h.level);
    if found_level != level
        && sink(Problem::BadLevel {
            found: found_level,
            expected: level,
        })
        .is_break()
    {
        return;
    }
    let n = numrecs::<S>(b);
    let max = g.max(usize::from(level));
    if n > max && sink(Problem::TooManyRecords { numrecs: n, max }).is_break() {
        return;
    }
    if level > 0 && n == 0 && sink(Problem::EmptyNode).is_break() {
        return;
    }
    let blkno = endian::get_u64(b, h.blkno);
    if blkno != daddr.0
        && sink(Problem::BadBlkno {
            found: blkno,
            expected: daddr.0,
        })
        .is_break()
    {
        return;
    }
    if b[h.uuid..h.uuid + 16] != uuid[..] && sink(Problem::BadUuid).is_break() {
        return;
    }
    let found_owner = if h.owner_len == 8 {
        endian::get_u64(b, h.owner)
    } else {
        u64::from(endian::get_u32(b, h.owner))
    };
    if found_owner != owner {
        let _ = sink(Problem::BadOwner {
            found: found_owner,
            expected: owner,
        });
    }
}

/// Get block `ptr` at `level` from the store and verify its header; the error names the
/// block kind and address.
pub(crate) fn read_block<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    ptr: u64,
    level: usize,
    owner: u64,
) -> FsResult<BufId> {
    let lvl = level as u16;
    let kind = S::kind(lvl);
    let id = st.read(kind, ptr)?;
    let daddr = st.daddr(id);
    let uuid = st.uuid();
    let mut first = None;
    header_problems::<S>(st.bytes(id), lvl, daddr, &uuid, owner, |p| {
        first = Some(p);
        ControlFlow::Break(())
    });
    match first {
        None => Ok(id),
        Some(p) => Err(corrupt(kind, daddr, p.to_string())),
    }
}

/// Write a fresh header for an empty block at `level` with no siblings, and log it.
/// The LSN is left 0 and the CRC untouched: the store fills both at write-back.
pub(crate) fn init_header<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    level: usize,
    owner: u64,
) {
    let g = &S::GEOM;
    let h = &g.hdr;
    let kind = S::kind(level as u16);
    let daddr = st.daddr(id);
    let uuid = st.uuid();
    let b = st.bytes_mut(id);
    // Clear every header byte except the CRC, which belongs to the store.
    b[..h.crc].fill(0);
    b[h.crc + 4..h.len].fill(0);
    match kind.magic() {
        Magic::U32(v) => endian::put_u32(b, 0, v),
        Magic::U16 { offset, value } => endian::put_u16(b, offset, value),
    }
    endian::put_u16(b, h.level, level as u16);
    endian::put_u16(b, h.numrecs, 0);
    put_ptr_raw(g, b, h.leftsib, h.null);
    put_ptr_raw(g, b, h.rightsib, h.null);
    endian::put_u64(b, h.blkno, daddr.0);
    endian::put_u64(b, h.lsn, 0);
    b[h.uuid..h.uuid + 16].copy_from_slice(&uuid);
    if h.owner_len == 8 {
        endian::put_u64(b, h.owner, owner);
    } else {
        // `create` rejects owners wider than 32 bits for short-form trees.
        endian::put_u32(b, h.owner, owner as u32);
    }
    st.log_range(id, 0, h.len - 1);
}

/// Set the entry count and log it.
pub(crate) fn set_numrecs<S: BtreeSpec, St: BlockStore + ?Sized>(st: &mut St, id: BufId, n: usize) {
    let off = S::GEOM.hdr.numrecs;
    endian::put_u16(st.bytes_mut(id), off, n as u16);
    st.log_range(id, off, off + 1);
}

/// Set a sibling pointer (a raw value, possibly null) and log it.
pub(crate) fn set_sibling<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    side: Side,
    p: u64,
) {
    let g = &S::GEOM;
    let off = match side {
        Side::Left => g.hdr.leftsib,
        Side::Right => g.hdr.rightsib,
    };
    put_ptr_raw(g, st.bytes_mut(id), off, p);
    st.log_range(id, off, off + g.hdr.ptr_len - 1);
}

/// Log entries `first..=last` of a block at `level` (records, or keys and pointers).
pub(crate) fn log_entries<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    level: usize,
    first: usize,
    last: usize,
) {
    if first == 0 || first > last {
        return;
    }
    let g = &S::GEOM;
    if level == 0 {
        st.log_range(id, g.rec_off(first), g.rec_off(last) + g.rec_len - 1);
    } else {
        st.log_range(id, g.key_off(first), g.key_off(last) + g.key_len - 1);
        st.log_range(id, g.ptr_off(first), g.ptr_off(last) + g.hdr.ptr_len - 1);
    }
}

/// Write the key of entry `i` of a node and log it.
pub(crate) fn put_key<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    i: usize,
    key: &S::Key,
) {
    let off = S::GEOM.key_off(i);
    S::encode_key(key, &mut st.bytes_mut(id)[off..off + S::KEY_LEN]);
    st.log_range(id, off, off + S::KEY_LEN - 1);
}

/// Write the record of entry `i` of a leaf and log it.
pub(crate) fn put_rec<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    i: usize,
    rec: &S::Rec,
) {
    let off = S::GEOM.rec_off(i);
    S::encode_rec(rec, &mut st.bytes_mut(id)[off..off + S::REC_LEN]);
    st.log_range(id, off, off + S::REC_LEN - 1);
}

/// Write `entry` at index `i` of a block at `level` and log it.
pub(crate) fn put_entry<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    level: usize,
    i: usize,
    entry: &Entry<S>,
) {
    match entry {
        Entry::Rec(r) => put_rec::<S, St>(st, id, i, r),
        Entry::Node(k, p) => {
            debug_assert!(level > 0);
            put_key::<S, St>(st, id, i, k);
            let g = &S::GEOM;
            let off = g.ptr_off(i);
            put_ptr_raw(g, st.bytes_mut(id), off, *p);
            st.log_range(id, off, off + g.hdr.ptr_len - 1);
        }
    }
}

/// The byte regions holding entries `first..first+count` at `level`: one region (records)
/// or two (keys, pointers), as (offset, length) pairs.
fn regions<S: BtreeSpec>(level: usize, first: usize, count: usize) -> [(usize, usize); 2] {
    let g = &S::GEOM;
    if level == 0 {
        [(g.rec_off(first), count * g.rec_len), (0, 0)]
    } else {
        [
            (g.key_off(first), count * g.key_len),
            (g.ptr_off(first), count * g.hdr.ptr_len),
        ]
    }
}

/// Slide entries `first..first+count` of a block one place up (towards the end) or down
/// (towards the start), like XFS's `xfs_btree_shift_*`. Logging is left to the caller,
/// which knows the final extent of the change.
pub(crate) fn shift_entries<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    id: BufId,
    level: usize,
    first: usize,
    count: usize,
    up: bool,
) {
    if count == 0 {
        return;
    }
    let g = &S::GEOM;
    let b = st.bytes_mut(id);
    for ((off, len), size) in regions::<S>(level, first, count).into_iter().zip([
        if level == 0 { g.rec_len } else { g.key_len },
        g.hdr.ptr_len,
    ]) {
        if len == 0 {
            continue;
        }
        let dst = if up { off + size } else { off - size };
        b.copy_within(off..off + len, dst);
    }
}

/// Copy `count` entries starting at `src_first` of block `src` to `dst_first` of block
/// `dst` (both at `level`), and log the destination.
pub(crate) fn copy_entries<S: BtreeSpec, St: BlockStore + ?Sized>(
    st: &mut St,
    src: BufId,
    src_first: usize,
    dst: BufId,
    dst_first: usize,
    count: usize,
    level: usize,
) {
    if count == 0 {
        return;
    }
    let mut tmp = [0u8; BLOCK_SIZE];
    let from = regions::<S>(level, src_first, count);
    let to = regions::<S>(level, dst_first, count);
    for ((soff, len), (doff, _)) in from.into_iter().zip(to) {
        if len == 0 {
            continue;
        }
        tmp[..len].copy_from_slice(&st.bytes(src)[soff..soff + len]);
        st.bytes_mut(dst)[doff..doff + len].copy_from_slice(&tmp[..len]);
    }
    log_entries::<S, St>(st, dst, level, dst_first, dst_first + count - 1);
}
