//! On-disk format: record and key encodings round-trip, header fields sit where the module
//! docs say, the store's CRC and LSN land where XFS keeps them, and capacities follow from
//! the block size.

use super::super::block::SpecGeom;
use super::super::kinds::{
    BMBT_MAX_BLOCKCOUNT, BMBT_MAX_STARTBLOCK, BMBT_MAX_STARTOFF, BmbtRec, BmbtSpec, BnoSpec,
    CntSpec, DirHashRec, DirHashSpec, FinoSpec, FreeExtent, InoRec, InoSpec,
};
use super::super::mem_store::MemStore;
use super::super::{BtreeOp, BtreeSpec, Layout, OpCounts, create, lsn_offset, stat_line};
use super::support::UUID;
use crate::fs::error::FsError;
use crate::fs::format::{BLOCK_SIZE, BlockKind, Magic, endian};
use crate::fs::stats::BtreeLine;
use crate::rng::SplitMix64;

fn round_trip<S: BtreeSpec>(recs: &[S::Rec])
where
    S::Rec: PartialEq,
{
    for r in recs {
        let mut buf = vec![0u8; S::REC_LEN];
        S::encode_rec(r, &mut buf);
        assert_eq!(S::decode_rec(&buf), *r, "record {r:?}");
        let k = S::key_of(r);
        let mut kb = vec![0u8; S::KEY_LEN];
        S::encode_key(&k, &mut kb);
        assert_eq!(S::decode_key(&kb), k, "key {k:?}");
    }
}

/// Keys compare the same way decoded as they do as big-endian bytes, so that the on-disk
/// order is the key order (what xfs_db and a byte-wise reader would see).
fn byte_order_is_key_order<S: BtreeSpec>(recs: &[S::Rec]) {
    for a in recs {
        for b in recs {
            let (ka, kb) = (S::key_of(a), S::key_of(b));
            let mut ba = vec![0u8; S::KEY_LEN];
            let mut bb = vec![0u8; S::KEY_LEN];
            S::encode_key(&ka, &mut ba);
            S::encode_key(&kb, &mut bb);
            assert_eq!(ka.cmp(&kb), ba.cmp(&bb), "{ka:?} vs {kb:?}");
        }
    }
}

#[test]
fn free_extent_records_and_keys_round_trip() {
    let mut rng = SplitMix64::new(41);
    let recs: Vec<FreeExtent> = (0..200)
        .map(|_| FreeExtent {
            start: rng.next_u64() as u32,
            len: rng.next_u64() as u32,
        })
        .chain([
            FreeExtent { start: 0, len: 0 },
            FreeExtent {
                start: u32::MAX,
                len: u32::MAX,
            },
        ])
        .collect();
    round_trip::<BnoSpec>(&recs);
    round_trip::<CntSpec>(&recs);
    byte_order_is_key_order::<BnoSpec>(&recs[..40]);
    byte_order_is_key_order::<CntSpec>(&recs[..40]);
    let mut b = [0u8; 8];
    BnoSpec::encode_rec(
        &FreeExtent {
            start: 0x0102_0304,
            len: 0x0a0b_0c0d,
        },
        &mut b,
    );
    assert_eq!(b, [1, 2, 3, 4, 0xa, 0xb, 0xc, 0xd]);
}

#[test]
fn inode_chunk_records_and_keys_round_trip() {
    let mut rng = SplitMix64::new(42);
    let recs: Vec<InoRec> = (0..200)
        .map(|_| InoRec {
            startino: rng.next_u64() as u32,
            holemask: rng.next_u64() as u16,
            count: rng.next_u64() as u8,
            freecount: rng.next_u64() as u8,
            free: rng.next_u64(),
        })
        .collect();
    round_trip::<InoSpec>(&recs);
    round_trip::<FinoSpec>(&recs);
    byte_order_is_key_order::<InoSpec>(&recs[..40]);
    let r = InoRec {
        startino: 0x0102_0304,
        holemask: 0x0506,
        count: 7,
        freecount: 8,
        free: 0x090a_0b0c_0d0e_0f10,
    };
    let mut b = [0u8; 16];
    InoSpec::encode_rec(&r, &mut b);
    assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
}

#[test]
fn bmbt_records_pack_like_xfs_and_round_trip_at_field_limits() {
    let mut rng = SplitMix64::new(43);
    let mut recs: Vec<BmbtRec> = (0..500)
        .map(|_| {
            BmbtRec::new(
                rng.next_u64() & BMBT_MAX_STARTOFF,
                rng.next_u64() & BMBT_MAX_STARTBLOCK,
                rng.next_u64() as u32 & BMBT_MAX_BLOCKCOUNT,
                rng.chance(50),
            )
            .unwrap()
        })
        .collect();
    recs.push(
        BmbtRec::new(
            BMBT_MAX_STARTOFF,
            BMBT_MAX_STARTBLOCK,
            BMBT_MAX_BLOCKCOUNT,
            true,
        )
        .unwrap(),
    );
    recs.push(BmbtRec::new(0, 0, 0, false).unwrap());
    round_trip::<BmbtSpec>(&recs);
    byte_order_is_key_order::<BmbtSpec>(&recs[..40]);

    // Bit positions: flag = bit 127, startoff from bit 73, startblock across the two
    // words (top 9 bits in the first), blockcount in the low 21 bits.
    let pack = |r: BmbtRec| {
        let mut b = [0u8; 16];
        BmbtSpec::encode_rec(&r, &mut b);
        (endian::get_u64(&b, 0), endian::get_u64(&b, 8))
    };
    assert_eq!(pack(BmbtRec::new(0, 0, 0, true).unwrap()), (1 << 63, 0));
    assert_eq!(pack(BmbtRec::new(1, 0, 0, false).unwrap()), (1 << 9, 0));
    assert_eq!(pack(BmbtRec::new(0, 1 << 43, 0, false).unwrap()), (1, 0));
    assert_eq!(pack(BmbtRec::new(0, 1, 0, false).unwrap()), (0, 1 << 21));
    assert_eq!(pack(BmbtRec::new(0, 0, 1, false).unwrap()), (0, 1));

    assert_eq!(
        BmbtRec::new(BMBT_MAX_STARTOFF + 1, 0, 0, false),
        Err(FsError::Invalid("extent field too wide for a bmbt record"))
    );
    assert!(BmbtRec::new(0, BMBT_MAX_STARTBLOCK + 1, 0, false).is_err());
    assert!(BmbtRec::new(0, 0, BMBT_MAX_BLOCKCOUNT + 1, false).is_err());
}

#[test]
fn dir_hash_records_and_keys_round_trip() {
    let mut rng = SplitMix64::new(44);
    let recs: Vec<DirHashRec> = (0..200)
        .map(|_| DirHashRec {
            hash: rng.next_u64() as u32 % 8, // many duplicate hashes
            addr: rng.next_u64() as u32,
        })
        .collect();
    round_trip::<DirHashSpec>(&recs);
    byte_order_is_key_order::<DirHashSpec>(&recs[..40]);
}

/// Capacities follow from the block size, and the pointer array of a full node ends
/// inside the block.
fn geometry_fits<S: BtreeSpec>() {
    let g = S::GEOM;
    let h = S::LAYOUT.header_len();
    assert_eq!(g.leaf_max, (BLOCK_SIZE - h) / S::REC_LEN);
    assert_eq!(
        g.node_max,
        (BLOCK_SIZE - h) / (S::KEY_LEN + S::LAYOUT.ptr_len())
    );
    assert!(h + g.leaf_max * S::REC_LEN <= BLOCK_SIZE);
    assert!(h + g.node_max * (S::KEY_LEN + S::LAYOUT.ptr_len()) <= BLOCK_SIZE);
    assert_eq!(g.min(0), g.leaf_max / 2);
}

#[test]
fn capacities_follow_from_the_block_size() {
    geometry_fits::<BnoSpec>();
    geometry_fits::<CntSpec>();
    geometry_fits::<InoSpec>();
    geometry_fits::<FinoSpec>();
    geometry_fits::<BmbtSpec>();
    geometry_fits::<DirHashSpec>();
}

#[test]
fn crc_offsets_match_the_format_module_and_xfs_header_sizes() {
    // XFS_BTREE_SBLOCK_CRC_LEN 56, XFS_BTREE_LBLOCK_CRC_LEN 72, da3 node header 64.
    assert_eq!(Layout::Short.header_len(), 56);
    assert_eq!(Layout::Long.header_len(), 72);
    assert_eq!(Layout::Da.header_len(), 64);
    for kind in BlockKind::ALL {
        if let Some(layout) = Layout::of_kind(kind) {
            assert_eq!(layout.crc_offset(), kind.crc_offset(), "{kind}");
            assert_eq!(lsn_offset(kind), Some(layout.lsn_offset()));
            // The CRC and LSN fields lie inside the header.
            assert!(layout.crc_offset() + 4 <= layout.header_len());
            assert!(layout.lsn_offset() + 8 <= layout.header_len());
        } else {
            assert_eq!(lsn_offset(kind), None);
        }
    }
}

/// Each spec's kinds store their magic where the layout expects it.
fn magic_fits_layout<S: BtreeSpec>() {
    for level in 0..3 {
        match (S::LAYOUT, S::kind(level).magic()) {
            (Layout::Short | Layout::Long, Magic::U32(_)) => {}
            (Layout::Da, Magic::U16 { offset: 8, .. }) => {}
            (l, m) => panic!("{l:?} block with magic {m:?}"),
        }
        assert_eq!(Layout::of_kind(S::kind(level)), Some(S::LAYOUT));
    }
}

#[test]
fn every_spec_uses_block_kinds_of_its_layout() {
    magic_fits_layout::<BnoSpec>();
    magic_fits_layout::<CntSpec>();
    magic_fits_layout::<InoSpec>();
    magic_fits_layout::<FinoSpec>();
    magic_fits_layout::<BmbtSpec>();
    magic_fits_layout::<DirHashSpec>();
    assert_eq!(DirHashSpec::kind(0), BlockKind::DirLeafN);
    assert_eq!(DirHashSpec::kind(1), BlockKind::DaNode);
}

/// A new root leaf carries every header field, byte for byte, and the store's write-back
/// fills LSN and CRC.
fn fresh_header<S: BtreeSpec>(owner: u64, check: impl Fn(&[u8], u64)) {
    let mut st = MemStore::new(UUID);
    let root = create::<S>(&mut st, owner, 0).unwrap();
    st.commit().unwrap();
    let b = st.block(root.ptr).unwrap().to_vec();
    check(&b, MemStore::daddr_of(root.ptr).0);
    let kind = S::kind(0);
    let crc = endian::get_crc(&b, kind.crc_offset());
    let mut z = b.clone();
    z[kind.crc_offset()..kind.crc_offset() + 4].fill(0);
    assert_eq!(
        crc,
        crc32c::crc32c(&z),
        "CRC over the block with the field zeroed"
    );
    let lsn = endian::get_u64(&b, lsn_offset(kind).unwrap());
    assert_ne!(lsn, 0, "write-back stamps an LSN");
}

#[test]
fn short_header_fields_sit_at_their_documented_offsets() {
    fresh_header::<BnoSpec>(3, |b, daddr| {
        assert_eq!(endian::get_u32(b, 0), 0x4142_3342); // "AB3B"
        assert_eq!(endian::get_u16(b, 4), 0); // level
        assert_eq!(endian::get_u16(b, 6), 0); // numrecs
        assert_eq!(endian::get_u32(b, 8), 0xffff_ffff); // leftsib
        assert_eq!(endian::get_u32(b, 12), 0xffff_ffff); // rightsib
        assert_eq!(endian::get_u64(b, 16), daddr);
        assert_eq!(&b[32..48], &UUID);
        assert_eq!(endian::get_u32(b, 48), 3);
    });
}

#[test]
fn long_header_fields_sit_at_their_documented_offsets() {
    fresh_header::<BmbtSpec>(0x1234_5678_9abc, |b, daddr| {
        assert_eq!(endian::get_u32(b, 0), 0x424d_4133); // "BMA3"
        assert_eq!(endian::get_u16(b, 4), 0);
        assert_eq!(endian::get_u16(b, 6), 0);
        assert_eq!(endian::get_u64(b, 8), u64::MAX);
        assert_eq!(endian::get_u64(b, 16), u64::MAX);
        assert_eq!(endian::get_u64(b, 24), daddr);
        assert_eq!(&b[40..56], &UUID);
        assert_eq!(endian::get_u64(b, 56), 0x1234_5678_9abc);
        assert_eq!(endian::get_u32(b, 68), 0); // pad
    });
}

#[test]
fn da_header_fields_sit_at_their_documented_offsets() {
    fresh_header::<DirHashSpec>(0x0bad_cafe_f00d, |b, daddr| {
        assert_eq!(endian::get_u32(b, 0), 0); // forw
        assert_eq!(endian::get_u32(b, 4), 0); // back
        assert_eq!(endian::get_u16(b, 8), 0x3dff); // leafn magic
        assert_eq!(endian::get_u16(b, 10), 0); // pad
        assert_eq!(endian::get_u64(b, 16), daddr);
        assert_eq!(&b[32..48], &UUID);
        assert_eq!(endian::get_u64(b, 48), 0x0bad_cafe_f00d);
        assert_eq!(endian::get_u16(b, 56), 0); // count
        assert_eq!(endian::get_u16(b, 58), 0); // level
        assert_eq!(endian::get_u32(b, 60), 0); // pad
    });
}

#[test]
fn short_tree_refuses_an_owner_wider_than_32_bits() {
    let mut st = MemStore::new(UUID);
    assert!(matches!(
        create::<BnoSpec>(&mut st, 1 << 32, 0),
        Err(FsError::Invalid(_))
    ));
    assert_eq!(st.live_blocks(), 0);
}

#[test]
fn op_counts_print_in_stat_field_order() {
    let mut c = OpCounts::default();
    for (i, op) in BtreeOp::ALL.into_iter().enumerate() {
        assert_eq!(op as usize, i);
        c.add(op, i as u32 + 1);
    }
    let line = c.to_string();
    let fields: Vec<u32> = line.split(' ').map(|f| f.parse().unwrap()).collect();
    assert_eq!(fields, (1..=15).collect::<Vec<u32>>());
    assert_eq!(BtreeOp::ALL[0].name(), "lookup");
    assert_eq!(BtreeOp::ALL[14].name(), "moves");
    let mut wrap = OpCounts::default();
    wrap.add(BtreeOp::Moves, u32::MAX);
    wrap.merge(&c);
    assert_eq!(
        wrap[BtreeOp::Moves],
        14,
        "counters wrap like XFS's u32 stats"
    );
}

#[test]
fn each_generic_tree_feeds_its_xfs_stat_line() {
    assert_eq!(stat_line(BnoSpec::kind(0)), Some(BtreeLine::Abtb2));
    assert_eq!(stat_line(CntSpec::kind(0)), Some(BtreeLine::Abtc2));
    assert_eq!(stat_line(InoSpec::kind(0)), Some(BtreeLine::Ibt2));
    assert_eq!(stat_line(FinoSpec::kind(0)), Some(BtreeLine::Fibt2));
    assert_eq!(stat_line(BmbtSpec::kind(0)), Some(BtreeLine::Bmbt2));
    assert_eq!(stat_line(DirHashSpec::kind(0)), None);
    assert_eq!(stat_line(BlockKind::Agf), None);
}
