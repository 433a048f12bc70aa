//! A B+tree block as it is on disk, read without trusting it: what a printing tool shows.
//!
//! The cursor refuses a block whose header does not check out; a tool that shows a damaged
//! block field by field (`labfs print`, as `xfs_db`'s `print`) must show it anyway. [`view`]
//! decodes every header field of any of the three layouts and as many entries as the record
//! count claims *and* the block can hold, through the same offsets and record encodings the
//! tree itself uses, so the view cannot drift from the format.

use super::BtreeSpec;
use super::block::{SpecGeom, is_null, key_at, numrecs, ptr_at, rec_at};
use crate::fs::format::{BLOCK_SIZE, BlockKind, Magic, endian};

/// The entries of a viewed block.
#[derive(Debug)]
pub enum Entries<S: BtreeSpec> {
    /// A leaf's records.
    Leaf(Vec<S::Rec>),
    /// A node's keys, each with the pointer to the child it is the first key of.
    Node(Vec<(S::Key, u64)>),
}

/// Every field of a B+tree block, decoded as stored.
#[derive(Debug)]
pub struct BlockView<S: BtreeSpec> {
    /// The magic as stored (a u32 at 0, or the da layout's u16 at 8).
    pub magic: u32,
    /// The kind the magic names, if it is one of this tree's kinds.
    pub kind: Option<BlockKind>,
    /// Level (0 = leaf).
    pub level: u16,
    /// Entries claimed by the header.
    pub numrecs: u16,
    /// Most entries a block at this level holds.
    pub max: usize,
    /// Left sibling pointer, `None` for the layout's null.
    pub leftsib: Option<u64>,
    /// Right sibling pointer, `None` for the layout's null.
    pub rightsib: Option<u64>,
    /// The block's own device address as recorded.
    pub blkno: u64,
    /// LSN of the last write.
    pub lsn: u64,
    /// Filesystem UUID as recorded.
    pub uuid: [u8; 16],
    /// Owner (AG number or inode number) as recorded.
    pub owner: u64,
    /// The stored CRC.
    pub crc: u32,
    /// The first `min(numrecs, max)` entries.
    pub entries: Entries<S>,
}

/// Decode `b` as a block of tree `S`; `None` if `b` is shorter than a block.
pub fn view<S: BtreeSpec>(b: &[u8]) -> Option<BlockView<S>> {
    if b.len() < BLOCK_SIZE {
        return None;
    }
    let g = S::GEOM;
    let h = g.hdr;
    let ptr = |off: usize| {
        let p = if h.ptr_len == 8 {
            endian::get_u64(b, off)
        } else {
            u64::from(endian::get_u32(b, off))
        };
        (!is_null::<S>(p)).then_some(p)
    };
    let level = endian::get_u16(b, h.level);
    let max = g.max(usize::from(level));
    let shown = numrecs::<S>(b).min(max);
    let entries = if level == 0 {
        Entries::Leaf((1..=shown).map(|i| rec_at::<S>(b, i)).collect())
    } else {
        Entries::Node(
            (1..=shown)
                .map(|i| (key_at::<S>(b, i), ptr_at::<S>(b, i)))
                .collect(),
        )
    };
    let kind = S::kind(level);
    let (magic, matches) = match kind.magic() {
        Magic::U32(v) => {
            let m = endian::get_u32(b, 0);
            (m, m == v)
        }
        Magic::U16 { offset, value } => {
            let m = endian::get_u16(b, offset);
            (u32::from(m), m == value)
        }
    };
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&b[h.uuid..h.uuid + 16]);
    Some(BlockView {
        magic,
        kind: matches.then_some(kind),
        level,
        numrecs: endian::get_u16(b, h.numrecs),
        max,
        leftsib: ptr(h.leftsib),
        rightsib: ptr(h.rightsib),
        blkno: endian::get_u64(b, h.blkno),
        lsn: endian::get_u64(b, h.lsn),
        uuid,
        owner: if h.owner_len == 8 {
            endian::get_u64(b, h.owner)
        } else {
            u64::from(endian::get_u32(b, h.owner))
        },
        crc: endian::get_crc(b, h.crc),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::btree::kinds::{BmbtSpec, BnoSpec, DirHashSpec, FreeExtent};

    #[test]
    fn a_short_leaf_shows_its_header_and_records() {
        let mut b = vec![0u8; BLOCK_SIZE];
        endian::put_u32(&mut b, 0, 0x4142_3342);
        endian::put_u16(&mut b, 6, 2);
        endian::put_u32(&mut b, 8, u32::MAX);
        endian::put_u32(&mut b, 12, 77);
        endian::put_u64(&mut b, 16, 8);
        endian::put_u32(&mut b, 48, 3);
        endian::put_u32(&mut b, 56, 10);
        endian::put_u32(&mut b, 60, 5);
        endian::put_u32(&mut b, 64, 40);
        endian::put_u32(&mut b, 68, 7);
        let v = view::<BnoSpec>(&b).expect("a whole block");
        assert_eq!(v.kind, Some(BlockKind::BnoBtree));
        assert_eq!((v.level, v.numrecs, v.max), (0, 2, 505));
        assert_eq!((v.leftsib, v.rightsib), (None, Some(77)));
        assert_eq!((v.blkno, v.owner), (8, 3));
        match v.entries {
            Entries::Leaf(r) => assert_eq!(
                r,
                [
                    FreeExtent { start: 10, len: 5 },
                    FreeExtent { start: 40, len: 7 }
                ]
            ),
            Entries::Node(_) => panic!("level 0 is a leaf"),
        }
    }

    #[test]
    fn an_impossible_record_count_shows_only_what_fits_and_a_bad_magic_no_kind() {
        let mut b = vec![0xffu8; BLOCK_SIZE];
        endian::put_u16(&mut b, 4, 0);
        let v = view::<BmbtSpec>(&b).expect("a whole block");
        assert_eq!(v.kind, None);
        assert_eq!(v.numrecs, 0xffff);
        match v.entries {
            Entries::Leaf(r) => assert_eq!(r.len(), 251),
            Entries::Node(_) => panic!("level 0 is a leaf"),
        }
        assert!(view::<BnoSpec>(&b[..100]).is_none());
    }

    #[test]
    fn a_da_node_shows_keys_and_pointers() {
        let mut b = vec![0u8; BLOCK_SIZE];
        endian::put_u16(&mut b, 8, 0x3ebe);
        endian::put_u16(&mut b, 56, 1);
        endian::put_u16(&mut b, 58, 1);
        endian::put_u32(&mut b, 64, 0xabcd);
        endian::put_u32(&mut b, 68, 96);
        // Pointer 1 follows the node's key array (336 keys of 8 bytes).
        endian::put_u32(&mut b, 64 + 336 * 8, 8_388_609);
        let v = view::<DirHashSpec>(&b).expect("a whole block");
        assert_eq!(v.kind, Some(BlockKind::DaNode));
        match v.entries {
            Entries::Node(n) => assert_eq!(n, [((0xabcd, 96), 8_388_609)]),
            Entries::Leaf(_) => panic!("level 1 is a node"),
        }
    }
}
