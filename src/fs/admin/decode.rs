//! Every labfs metadata structure, decoded field by field for display (`labfs print`, as
//! `xfs_db`'s `print`).
//!
//! A decoder shows a structure as it is on disk, whatever it holds: it never refuses a block
//! for a bad magic or CRC (it says so in the field), and it never reads past the bytes it was
//! given (record counts are clamped to what fits, and the clamp is shown). The B+tree and
//! directory decoders use the tree's and directory's own offset helpers and record encodings
//! ([`crate::fs::btree::view`], [`crate::fs::dir`]); the fixed-layout headers (superblock,
//! AGF, AGI, AGFL, inode core) are described by field tables here, in the order and at the
//! offsets of the tables in `src/fs/format/`, and the tests check each table against the
//! encoder of its structure, so the two cannot drift apart.

use std::fmt;

use crate::fs::btree::kinds::{
    BmbtSpec, BnoSpec, CntSpec, DirHashSpec, FinoSpec, FreeExtent, InoRec, InoSpec,
};
use crate::fs::btree::view::{BlockView, Entries, view};
use crate::fs::btree::{BtreeSpec, Layout};
use crate::fs::cksum::Cksum;
use crate::fs::dir::data::{self as dirdata, Slot};
use crate::fs::dir::sf::{Shortform, ftype, kind_of_ftype};
use crate::fs::dir::{block as dirblock, leaf as dirleaf, node as dirnode, split_addr};
use crate::fs::format::ag::AGFL_SIZE;
use crate::fs::format::dinode::{CORE_SIZE, EXTENT_REC_SIZE, MAX_INLINE_EXTENTS};
use crate::fs::format::endian::{get_crc, get_u16, get_u32, get_u64};
use crate::fs::format::{BBSIZE, BLOCK_SIZE, BlockKind, INODE_SIZE, Magic};
use crate::fs::inode::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use crate::fs::symlink;

/// One structure decoded for display: a title line, then `name = value` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// What the structure is and where it was read, e.g. "AGF of AG 1 (daddr 65537)".
    pub title: String,
    /// The fields in on-disk order, each as (name, value).
    pub fields: Vec<(String, String)>,
}

impl Decoded {
    fn new(title: impl Into<String>) -> Decoded {
        Decoded {
            title: title.into(),
            fields: Vec::new(),
        }
    }

    fn add(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.fields.push((name.into(), value.into()));
    }

    /// The value of field `name`, if the structure has it.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.title)?;
        for (name, value) in &self.fields {
            writeln!(f, "{name} = {value}")?;
        }
        Ok(())
    }
}

/// How a table field is stored and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enc {
    U8,
    U16,
    U32,
    U64,
    /// A u32 magic number, shown in hex and as text.
    Magic32,
    /// A u16 magic number.
    Magic16,
    /// An AG block or AG inode number whose all-ones value means "none".
    Agno32,
    /// An inode number whose all-ones value means "none".
    Ino64,
    /// A 16-byte UUID.
    Uuid,
    /// A NUL-padded label of this many bytes.
    Label(usize),
    /// The CRC (little-endian), with its verdict.
    Crc,
    /// Nanoseconds since the epoch, signed.
    Time,
    /// Inode mode bits.
    Mode,
    /// Data fork format.
    Format,
}

/// One row of a field table: name, offset, encoding.
type FieldSpec = (&'static str, usize, Enc);

/// The superblock (`format::sb`).
const SB_FIELDS: &[FieldSpec] = &[
    ("magicnum", 0, Enc::Magic32),
    ("blocksize", 4, Enc::U32),
    ("dblocks", 8, Enc::U64),
    ("rblocks", 16, Enc::U64),
    ("rextents", 24, Enc::U64),
    ("uuid", 32, Enc::Uuid),
    ("logstart", 48, Enc::U64),
    ("rootino", 56, Enc::Ino64),
    ("rbmino", 64, Enc::Ino64),
    ("rsumino", 72, Enc::Ino64),
    ("rextsize", 80, Enc::U32),
    ("agblocks", 84, Enc::U32),
    ("agcount", 88, Enc::U32),
    ("rbmblocks", 92, Enc::U32),
    ("logblocks", 96, Enc::U32),
    ("versionnum", 100, Enc::U16),
    ("sectsize", 102, Enc::U16),
    ("inodesize", 104, Enc::U16),
    ("inopblock", 106, Enc::U16),
    ("fname", 108, Enc::Label(12)),
    ("blocklog", 120, Enc::U8),
    ("sectlog", 121, Enc::U8),
    ("inodelog", 122, Enc::U8),
    ("inopblog", 123, Enc::U8),
    ("agblklog", 124, Enc::U8),
    ("rextslog", 125, Enc::U8),
    ("inprogress", 126, Enc::U8),
    ("imax_pct", 127, Enc::U8),
    ("icount", 128, Enc::U64),
    ("ifree", 136, Enc::U64),
    ("fdblocks", 144, Enc::U64),
    ("frextents", 152, Enc::U64),
    ("features_compat", 208, Enc::U32),
    ("features_ro_compat", 212, Enc::U32),
    ("features_incompat", 216, Enc::U32),
    ("features_log_incompat", 220, Enc::U32),
    ("crc", 224, Enc::Crc),
    ("spino_align", 228, Enc::U32),
    ("pquotino", 232, Enc::U64),
    ("lsn", 240, Enc::U64),
    ("meta_uuid", 248, Enc::Uuid),
];
/// Byte ranges of the superblock labfs leaves zero (quota, alignment, the tail).
const SB_UNUSED: &[(usize, usize)] = &[(160, 208), (264, BBSIZE)];

/// The AGF (`format::ag`).
const AGF_FIELDS: &[FieldSpec] = &[
    ("magicnum", 0, Enc::Magic32),
    ("versionnum", 4, Enc::U32),
    ("seqno", 8, Enc::U32),
    ("length", 12, Enc::U32),
    ("bno_root", 16, Enc::U32),
    ("cnt_root", 20, Enc::U32),
    ("rmap_root", 24, Enc::U32),
    ("bno_level", 28, Enc::U32),
    ("cnt_level", 32, Enc::U32),
    ("rmap_level", 36, Enc::U32),
    ("flfirst", 40, Enc::U32),
    ("fllast", 44, Enc::U32),
    ("flcount", 48, Enc::U32),
    ("freeblks", 52, Enc::U32),
    ("longest", 56, Enc::U32),
    ("btreeblks", 60, Enc::U32),
    ("uuid", 64, Enc::Uuid),
    ("lsn", 208, Enc::U64),
    ("crc", 216, Enc::Crc),
];
const AGF_UNUSED: &[(usize, usize)] = &[(80, 208), (220, BBSIZE)];

/// The AGI (`format::ag`); the 64 unlinked buckets at 40 are shown separately.
const AGI_FIELDS: &[FieldSpec] = &[
    ("magicnum", 0, Enc::Magic32),
    ("versionnum", 4, Enc::U32),
    ("seqno", 8, Enc::U32),
    ("length", 12, Enc::U32),
    ("count", 16, Enc::U32),
    ("root", 20, Enc::U32),
    ("level", 24, Enc::U32),
    ("freecount", 28, Enc::U32),
    ("newino", 32, Enc::Agno32),
    ("dirino", 36, Enc::Agno32),
    ("uuid", 296, Enc::Uuid),
    ("crc", 312, Enc::Crc),
    ("lsn", 320, Enc::U64),
    ("free_root", 328, Enc::U32),
    ("free_level", 332, Enc::U32),
    ("iblocks", 336, Enc::U32),
    ("fblocks", 340, Enc::U32),
];
const AGI_UNLINKED: usize = 40;
const AGI_UNUSED: &[(usize, usize)] = &[(316, 320), (344, BBSIZE)];

/// The AGFL header (`format::ag`); the slots from 36 are shown separately.
const AGFL_FIELDS: &[FieldSpec] = &[
    ("magicnum", 0, Enc::Magic32),
    ("seqno", 4, Enc::U32),
    ("uuid", 8, Enc::Uuid),
    ("lsn", 24, Enc::U64),
    ("crc", 32, Enc::Crc),
];
const AGFL_SLOTS: usize = 36;

/// The inode core (`format::dinode`).
const INODE_FIELDS: &[FieldSpec] = &[
    ("magic", 0, Enc::Magic16),
    ("mode", 2, Enc::Mode),
    ("version", 4, Enc::U8),
    ("format", 5, Enc::Format),
    ("onlink", 6, Enc::U16),
    ("uid", 8, Enc::U32),
    ("gid", 12, Enc::U32),
    ("nlink", 16, Enc::U32),
    ("projid", 20, Enc::U32),
    ("atime", 32, Enc::Time),
    ("mtime", 40, Enc::Time),
    ("ctime", 48, Enc::Time),
    ("size", 56, Enc::U64),
    ("nblocks", 64, Enc::U64),
    ("extsize", 72, Enc::U32),
    ("nextents", 76, Enc::U32),
    ("anextents", 80, Enc::U16),
    ("forkoff", 82, Enc::U8),
    ("aformat", 83, Enc::U8),
    ("dmevmask", 84, Enc::U32),
    ("dmstate", 88, Enc::U16),
    ("flags", 90, Enc::U16),
    ("gen", 92, Enc::U32),
    ("next_unlinked", 96, Enc::Agno32),
    ("crc", 100, Enc::Crc),
    ("changecount", 104, Enc::U64),
    ("lsn", 112, Enc::U64),
    ("flags2", 120, Enc::U64),
    ("cowextsize", 128, Enc::U32),
    ("crtime", 144, Enc::Time),
    ("ino", 152, Enc::U64),
    ("uuid", 160, Enc::Uuid),
];
const INODE_UNUSED: &[(usize, usize)] = &[(24, 32), (132, 144)];

/// A UUID in the usual 8-4-4-4-12 hex form.
pub fn format_uuid(u: &[u8]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A magic number with its printable characters, e.g. `0x58465342 ("XFSB")`.
fn format_magic(bytes: &[u8], value: u64, width: usize) -> String {
    let text: String = bytes
        .iter()
        .map(|&c| {
            if c.is_ascii_graphic() {
                char::from(c)
            } else {
                '.'
            }
        })
        .collect();
    format!("{value:#0w$x} (\"{text}\")", w = width * 2 + 2)
}

/// `stored (correct)` or `stored (bad: the contents give computed)`.
fn crc_verdict(kind: BlockKind, b: &[u8]) -> String {
    let stored = get_crc(b, kind.crc_offset());
    match Cksum::default().verify(kind, &b[..kind.crc_len()]) {
        Ok(()) => format!("{stored:#010x} (correct)"),
        Err(m) => format!(
            "{stored:#010x} (bad: the contents give {:#010x})",
            m.expected
        ),
    }
}

/// The type of a mode, in words.
fn mode_kind(mode: u16) -> &'static str {
    match mode & S_IFMT {
        0 if mode == 0 => "free inode",
        S_IFREG => "regular file",
        S_IFDIR => "directory",
        S_IFLNK => "symlink",
        _ => "unknown type",
    }
}

/// Nanoseconds since the epoch as `seconds.nanoseconds`.
fn format_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    format!("{secs}.{frac:09}")
}

fn format_null(v: u64, null: u64) -> String {
    if v == null {
        "null".to_string()
    } else {
        v.to_string()
    }
}

/// Decode the table fields of `b` (which covers `kind`'s CRC range) into `d`.
fn table(d: &mut Decoded, kind: BlockKind, b: &[u8], specs: &[FieldSpec]) {
    for &(name, off, enc) in specs {
        let value = match enc {
            Enc::U8 => b[off].to_string(),
            Enc::U16 => get_u16(b, off).to_string(),
            Enc::U32 => get_u32(b, off).to_string(),
            Enc::U64 => get_u64(b, off).to_string(),
            Enc::Magic32 => format_magic(&b[off..off + 4], u64::from(get_u32(b, off)), 4),
            Enc::Magic16 => format_magic(&b[off..off + 2], u64::from(get_u16(b, off)), 2),
            Enc::Agno32 => format_null(u64::from(get_u32(b, off)), u64::from(u32::MAX)),
            Enc::Ino64 => format_null(get_u64(b, off), u64::MAX),
            Enc::Uuid => format_uuid(&b[off..off + 16]),
            Enc::Label(len) => {
                let raw = &b[off..off + len];
                let end = raw.iter().position(|&c| c == 0).unwrap_or(len);
                format!(
                    "\"{}\"",
                    String::from_utf8_lossy(&raw[..end]).escape_debug()
                )
            }
            Enc::Crc => crc_verdict(kind, b),
            Enc::Time => format_time(get_u64(b, off) as i64),
            Enc::Mode => {
                let m = get_u16(b, off);
                format!("{m:#o} ({})", mode_kind(m))
            }
            Enc::Format => {
                let f = b[off];
                let name = match f {
                    1 => "local",
                    2 => "extents",
                    3 => "btree",
                    _ => "unknown",
                };
                format!("{f} ({name})")
            }
        };
        d.add(name, value);
    }
}

/// Show byte ranges labfs leaves zero: "zero", or their bytes when they are not.
fn unused(d: &mut Decoded, b: &[u8], ranges: &[(usize, usize)]) {
    for &(from, to) in ranges {
        let bytes = &b[from..to];
        let value = if bytes.iter().all(|&x| x == 0) {
            "zero".to_string()
        } else {
            format!("not zero: {}", hex_bytes(bytes))
        };
        d.add(format!("unused[{from}..{to}]"), value);
    }
}

/// Bytes as space-separated hex pairs, at most 64 of them.
fn hex_bytes(b: &[u8]) -> String {
    let shown: Vec<String> = b.iter().take(64).map(|x| format!("{x:02x}")).collect();
    let more = if b.len() > 64 {
        format!(" ... ({} bytes)", b.len())
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(" "))
}

/// The superblock sector `b` (512 bytes).
pub fn superblock(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    table(&mut d, BlockKind::Superblock, b, SB_FIELDS);
    unused(&mut d, b, SB_UNUSED);
    d
}

/// The AGF sector `b`.
pub fn agf(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    table(&mut d, BlockKind::Agf, b, AGF_FIELDS);
    unused(&mut d, b, AGF_UNUSED);
    d
}

/// The AGI sector `b`.
pub fn agi(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    table(&mut d, BlockKind::Agi, b, AGI_FIELDS);
    let buckets: Vec<String> = (0..64)
        .filter_map(|i| {
            let v = get_u32(b, AGI_UNLINKED + 4 * i);
            (v != u32::MAX).then(|| format!("{i}:{v}"))
        })
        .collect();
    d.add(
        "unlinked[0-63]",
        if buckets.is_empty() {
            "all null".to_string()
        } else {
            buckets.join(" ")
        },
    );
    unused(&mut d, b, AGI_UNUSED);
    d
}

/// The AGFL sector `b`: its header and the slots in use (a slot holding null is unused).
pub fn agfl(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    table(&mut d, BlockKind::Agfl, b, AGFL_FIELDS);
    for i in 0..AGFL_SIZE as usize {
        let v = get_u32(b, AGFL_SLOTS + 4 * i);
        if v != u32::MAX {
            d.add(format!("bno[{i}]"), v.to_string());
        }
    }
    d
}

/// Inode `ino`, the 512 bytes `b`: its core and its data fork.
pub fn inode(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    table(&mut d, BlockKind::Inode, b, INODE_FIELDS);
    unused(&mut d, b, INODE_UNUSED);
    let mode = get_u16(b, 2);
    if mode == 0 {
        return d;
    }
    let lit = &b[CORE_SIZE..INODE_SIZE];
    match b[5] {
        1 if mode & S_IFMT == S_IFDIR => {
            let size = (get_u64(b, 56) as usize).min(lit.len());
            match Shortform::decode(&lit[..size]) {
                Ok(sf) => {
                    d.add("u.sfdir3.hdr.count", sf.entries.len().to_string());
                    d.add("u.sfdir3.hdr.parent", sf.parent.to_string());
                    for (i, e) in sf.entries.iter().enumerate() {
                        d.add(
                            format!("u.sfdir3.list[{i}]"),
                            format!(
                                "name \"{}\" ino {} ftype {} offset {}",
                                String::from_utf8_lossy(&e.name).escape_debug(),
                                e.ino,
                                ftype_name(ftype(e.kind)),
                                e.offset
                            ),
                        );
                    }
                }
                Err(e) => d.add("u.sfdir3", format!("cannot be decoded: {e}")),
            }
        }
        1 if mode & S_IFMT == S_IFLNK => {
            let size = (get_u64(b, 56) as usize).min(lit.len());
            d.add("u.symlink", quoted(&lit[..size]));
        }
        1 => {
            let size = (get_u64(b, 56) as usize).min(lit.len());
            d.add("u.data", hex_bytes(&lit[..size]));
        }
        2 => {
            let n = get_u32(b, 76) as usize;
            if n > MAX_INLINE_EXTENTS {
                d.add(
                    "u.bmx",
                    format!("nextents {n} does not fit (at most {MAX_INLINE_EXTENTS}); showing those that do"),
                );
            }
            for i in 0..n.min(MAX_INLINE_EXTENTS) {
                let rec = &lit[i * EXTENT_REC_SIZE..(i + 1) * EXTENT_REC_SIZE];
                d.add(format!("u.bmx[{i}]"), bmbt_rec(&BmbtSpec::decode_rec(rec)));
            }
        }
        3 => {
            d.add("u.bmbt.root", get_u64(lit, 0).to_string());
            d.add("u.bmbt.level", get_u16(lit, 8).to_string());
        }
        _ => {}
    }
    d
}

/// The XFS name of an ftype byte.
fn ftype_name(t: u8) -> String {
    format!("{t} ({:?})", kind_of_ftype(t)).to_lowercase()
}

fn bmbt_rec(e: &<BmbtSpec as BtreeSpec>::Rec) -> String {
    format!(
        "startoff {} startblock {} blockcount {}{}",
        e.startoff,
        e.startblock,
        e.blockcount,
        if e.unwritten { " unwritten" } else { "" }
    )
}

fn free_extent(r: &FreeExtent) -> String {
    format!("startblock {} blockcount {}", r.start, r.len)
}

fn ino_rec(r: &InoRec) -> String {
    format!(
        "startino {} holemask {:#06x} count {} freecount {} free {:#018x}",
        r.startino, r.holemask, r.count, r.freecount, r.free
    )
}

fn hash_entry(hash: u32, addr: u32) -> String {
    let (db, off) = split_addr(addr);
    format!("hash {hash:#010x} address {addr} (data block {db} offset {off})")
}

/// The kind a 4 KiB block's magic names, if any (inode clusters included: their first
/// inode's magic). Log records are not metadata blocks of the filesystem's own.
pub fn sniff_block(b: &[u8]) -> Option<BlockKind> {
    if b.len() < BLOCK_SIZE {
        return None;
    }
    BlockKind::ALL.into_iter().find(|k| {
        !matches!(
            k,
            BlockKind::Superblock
                | BlockKind::Agf
                | BlockKind::Agi
                | BlockKind::Agfl
                | BlockKind::LogRecord
        ) && match k.magic() {
            Magic::U32(v) => get_u32(b, 0) == v,
            Magic::U16 { offset, value } => get_u16(b, offset) == value,
        }
    })
}

/// The kind a 512-byte AG header sector's magic names, if any.
pub fn sniff_sector(b: &[u8]) -> Option<BlockKind> {
    if b.len() < BBSIZE {
        return None;
    }
    [
        BlockKind::Superblock,
        BlockKind::Agf,
        BlockKind::Agi,
        BlockKind::Agfl,
    ]
    .into_iter()
    .find(|k| matches!(k.magic(), Magic::U32(v) if get_u32(b, 0) == v))
}

/// A 4 KiB metadata block of `kind` (not an inode cluster or AG header), field by field.
pub fn block(title: impl Into<String>, kind: BlockKind, b: &[u8]) -> Decoded {
    let title = title.into();
    match kind {
        BlockKind::BnoBtree => {
            btree::<BnoSpec>(title, kind, b, free_extent, |k| format!("startblock {k}"))
        }
        BlockKind::CntBtree => btree::<CntSpec>(title, kind, b, free_extent, |(len, start)| {
            format!("blockcount {len} startblock {start}")
        }),
        BlockKind::InoBtree => {
            btree::<InoSpec>(title, kind, b, ino_rec, |k| format!("startino {k}"))
        }
        BlockKind::FinoBtree => {
            btree::<FinoSpec>(title, kind, b, ino_rec, |k| format!("startino {k}"))
        }
        BlockKind::BmapBtree => {
            btree::<BmbtSpec>(title, kind, b, bmbt_rec, |k| format!("startoff {k}"))
        }
        BlockKind::DirLeafN | BlockKind::DaNode => btree::<DirHashSpec>(
            title,
            kind,
            b,
            |r| hash_entry(r.hash, r.addr),
            |(h, a)| hash_entry(*h, *a),
        ),
        BlockKind::DirBlock | BlockKind::DirData => dir_data(title, kind, b),
        BlockKind::DirLeaf1 => dir_leaf1(title, b),
        BlockKind::DirFree => dir_free(title, b),
        BlockKind::Superblock => superblock(title, b),
        BlockKind::Agf => agf(title, b),
        BlockKind::Agi => agi(title, b),
        BlockKind::Agfl => agfl(title, b),
        BlockKind::Inode => inode(title, b),
        BlockKind::Symlink => symlink_block(title, b),
        BlockKind::LogRecord => {
            let mut d = Decoded::new(title);
            d.add("bytes", hex_bytes(&b[..BBSIZE.min(b.len())]));
            d
        }
    }
}

/// A block whose magic names no labfs structure: its first bytes.
pub fn unknown(title: impl Into<String>, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    let zero = b.iter().all(|&x| x == 0);
    d.add(
        "contents",
        if zero {
            "all zero".to_string()
        } else {
            format!(
                "no labfs magic; first bytes {}",
                hex_bytes(&b[..128.min(b.len())])
            )
        },
    );
    d
}

/// A B+tree block of tree `S`: header, then records (leaf) or keys and pointers (node).
fn btree<S: BtreeSpec>(
    title: String,
    kind: BlockKind,
    b: &[u8],
    rec: impl Fn(&S::Rec) -> String,
    key: impl Fn(&S::Key) -> String,
) -> Decoded {
    let mut d = Decoded::new(title);
    let Some(v): Option<BlockView<S>> = view::<S>(b) else {
        d.add("contents", format!("short block ({} bytes)", b.len()));
        return d;
    };
    let magic_bytes = match kind.magic() {
        Magic::U32(_) => &b[0..4],
        Magic::U16 { offset, .. } => &b[offset..offset + 2],
    };
    let width = magic_bytes.len();
    d.add(
        "magic",
        format_magic(magic_bytes, u64::from(v.magic), width),
    );
    if v.kind.is_none() {
        d.add("magic.note", format!("not the {kind} magic for this level"));
    }
    d.add("level", v.level.to_string());
    d.add("numrecs", v.numrecs.to_string());
    if usize::from(v.numrecs) > v.max {
        d.add(
            "numrecs.note",
            format!("more than the {} that fit; showing {}", v.max, v.max),
        );
    }
    let sib = |p: Option<u64>| p.map_or("null".to_string(), |p| p.to_string());
    let (left, right) = if S::LAYOUT == Layout::Da {
        ("back", "forw")
    } else {
        ("leftsib", "rightsib")
    };
    d.add(left, sib(v.leftsib));
    d.add(right, sib(v.rightsib));
    d.add("blkno", v.blkno.to_string());
    d.add("lsn", v.lsn.to_string());
    d.add("uuid", format_uuid(&v.uuid));
    d.add("owner", v.owner.to_string());
    d.add("crc", crc_verdict(kind, b));
    match &v.entries {
        Entries::Leaf(recs) => {
            for (i, r) in recs.iter().enumerate() {
                d.add(format!("recs[{}]", i + 1), rec(r));
            }
        }
        Entries::Node(keys) => {
            for (i, (k, p)) in keys.iter().enumerate() {
                d.add(format!("keys[{}]", i + 1), key(k));
                d.add(format!("ptrs[{}]", i + 1), p.to_string());
            }
        }
    }
    d
}

/// The `xfs_dir3_blk_hdr` of data, block and free blocks.
fn dir3_blk_hdr(d: &mut Decoded, kind: BlockKind, b: &[u8]) {
    d.add("magic", format_magic(&b[0..4], u64::from(get_u32(b, 0)), 4));
    d.add("crc", crc_verdict(kind, b));
    d.add("blkno", get_u64(b, 8).to_string());
    d.add("lsn", get_u64(b, 16).to_string());
    d.add("uuid", format_uuid(&b[24..40]));
    d.add("owner", get_u64(b, 40).to_string());
}

/// The `xfs_da3_blkinfo` of leaf blocks.
fn da3_blkinfo(d: &mut Decoded, kind: BlockKind, b: &[u8]) {
    d.add("forw", get_u32(b, 0).to_string());
    d.add("back", get_u32(b, 4).to_string());
    d.add(
        "magic",
        format_magic(&b[8..10], u64::from(get_u16(b, 8)), 2),
    );
    d.add("crc", crc_verdict(kind, b));
    d.add("blkno", get_u64(b, 16).to_string());
    d.add("lsn", get_u64(b, 24).to_string());
    d.add("uuid", format_uuid(&b[32..48]));
    d.add("owner", get_u64(b, 48).to_string());
}

/// A data block (`XDD3`) or a block-form block (`XDB3`, with its hash leaf and tail).
fn dir_data(title: String, kind: BlockKind, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    dir3_blk_hdr(&mut d, kind, b);
    for (i, (off, len)) in dirdata::stored_bestfree(b).iter().enumerate() {
        d.add(
            format!("bestfree[{i}]"),
            format!("offset {off} length {len}"),
        );
    }
    let end = if kind == BlockKind::DirBlock {
        let count = get_u32(b, dirblock::TAIL) as usize;
        let stale = get_u32(b, dirblock::TAIL + 4);
        let fits = (dirblock::TAIL - dirdata::HDR) / 8;
        let shown = count.min(fits);
        let start = dirblock::leaf_start(shown);
        for i in 0..shown {
            let (hash, addr) = dirblock::leaf_ent(b, start, i);
            d.add(format!("leaf[{i}]"), hash_entry(hash, addr));
        }
        d.add("tail.count", count.to_string());
        d.add("tail.stale", stale.to_string());
        if count > fits {
            d.add(
                "tail.note",
                format!("count is more than the {fits} that fit"),
            );
        }
        start
    } else {
        BLOCK_SIZE
    };
    for slot in dirdata::slots(b, end) {
        match slot {
            Ok(Slot::Entry(e)) => d.add(
                format!("du[{}]", e.off),
                format!(
                    "inumber {} namelen {} name \"{}\" ftype {} tag {}",
                    e.ino,
                    e.namelen,
                    String::from_utf8_lossy(e.name(b)).escape_debug(),
                    ftype_name(e.ftype),
                    get_u16(b, e.off + e.size - 2)
                ),
            ),
            Ok(Slot::Free { off, len }) => {
                d.add(format!("du[{off}]"), format!("freetag 0xffff length {len}"))
            }
            Err(e) => d.add("du.error", e),
        }
    }
    d
}

/// The leaf block of a leaf-form directory.
fn dir_leaf1(title: String, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    da3_blkinfo(&mut d, BlockKind::DirLeaf1, b);
    let count = usize::from(get_u16(b, dirleaf::COUNT));
    let bestcount = get_u32(b, dirleaf::BESTCOUNT) as usize;
    d.add("count", count.to_string());
    d.add("stale", get_u16(b, dirleaf::STALE).to_string());
    let max_bests = (dirleaf::BESTCOUNT - dirleaf::ENTS) / 2;
    let nb = bestcount.min(max_bests);
    let max_ents = (dirleaf::bests_start(nb) - dirleaf::ENTS) / 8;
    for i in 0..count.min(max_ents) {
        let at = dirleaf::ENTS + 8 * i;
        d.add(
            format!("ents[{i}]"),
            hash_entry(get_u32(b, at), get_u32(b, at + 4)),
        );
    }
    if count > max_ents {
        d.add(
            "ents.note",
            format!("count is more than the {max_ents} that fit"),
        );
    }
    for db in 0..nb {
        d.add(format!("bests[{db}]"), best(dirleaf::best(b, nb, db)));
    }
    d.add("bestcount", bestcount.to_string());
    d
}

/// A free-index block.
fn dir_free(title: String, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    dir3_blk_hdr(&mut d, BlockKind::DirFree, b);
    let nvalid = get_u32(b, dirnode::NVALID) as usize;
    d.add("firstdb", get_u32(b, dirnode::FIRSTDB).to_string());
    d.add("nvalid", nvalid.to_string());
    d.add("nused", get_u32(b, dirnode::NUSED).to_string());
    let fits = (BLOCK_SIZE - dirnode::BESTS) / 2;
    for i in 0..nvalid.min(fits) {
        d.add(format!("bests[{i}]"), best(dirnode::free_best(b, i)));
    }
    if nvalid > fits {
        d.add(
            "bests.note",
            format!("nvalid is more than the {fits} that fit"),
        );
    }
    d
}

/// A remote symbolic link block (`XSLM`, `xfs_dsymlink_hdr`): its header and its piece of
/// the target.
fn symlink_block(title: String, b: &[u8]) -> Decoded {
    let mut d = Decoded::new(title);
    d.add("magic", format_magic(&b[0..4], u64::from(get_u32(b, 0)), 4));
    d.add("offset", get_u32(b, 4).to_string());
    let bytes = get_u32(b, 8) as usize;
    d.add("bytes", bytes.to_string());
    d.add("crc", crc_verdict(BlockKind::Symlink, b));
    d.add("uuid", format_uuid(&b[16..32]));
    d.add("owner", get_u64(b, 32).to_string());
    d.add("blkno", get_u64(b, 40).to_string());
    d.add("lsn", get_u64(b, 48).to_string());
    let room = BLOCK_SIZE - symlink::HDR_SIZE;
    if bytes > room {
        d.add(
            "target.note",
            format!("bytes is more than the {room} that fit; showing those that do"),
        );
    }
    d.add(
        "target",
        quoted(&b[symlink::HDR_SIZE..symlink::HDR_SIZE + bytes.min(room)]),
    );
    d
}

/// Bytes as a quoted string, escaped where they are not printable.
fn quoted(bytes: &[u8]) -> String {
    format!("\"{}\"", String::from_utf8_lossy(bytes).escape_debug())
}

fn best(v: u16) -> String {
    if v == crate::fs::dir::NULL_BEST {
        "null (no data block)".to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::format::ag::{Agf, Agi, agfl_init, agfl_set};
    use crate::fs::format::dinode::{DinodeCore, ForkFormat, encode_core};
    use crate::fs::format::sb::Superblock;

    const UUID: [u8; 16] = *b"0123456789abcdef";

    fn value<'d>(d: &'d Decoded, name: &str) -> &'d str {
        d.field(name)
            .unwrap_or_else(|| panic!("no field {name} in:\n{d}"))
    }

    /// A CRC-correct copy of `b` for `kind`.
    fn stamped(kind: BlockKind, mut b: Vec<u8>) -> Vec<u8> {
        Cksum::default().update(kind, &mut b[..kind.crc_len()]);
        b
    }

    #[test]
    fn the_superblock_table_reads_what_the_encoder_wrote() {
        let sb = Superblock {
            dblocks: 262_147,
            uuid: UUID,
            logstart: 9,
            logblocks: 4099,
            rootino: 131,
            agblocks: 65_537,
            agcount: 5,
            agblklog: 17,
            fname: *b"labfs-test\0\0",
            inprogress: true,
            icount: 640,
            ifree: 61,
            fdblocks: 250_001,
            lsn: 77,
        };
        let mut b = vec![0u8; BBSIZE];
        sb.encode(&mut b);
        let b = stamped(BlockKind::Superblock, b);
        let d = superblock("sb", &b);
        let expect = [
            ("magicnum", "0x58465342 (\"XFSB\")"),
            ("blocksize", "4096"),
            ("dblocks", "262147"),
            ("uuid", "30313233-3435-3637-3839-616263646566"),
            ("logstart", "9"),
            ("rootino", "131"),
            ("rbmino", "null"),
            ("agblocks", "65537"),
            ("agcount", "5"),
            ("logblocks", "4099"),
            ("versionnum", "5"),
            ("sectsize", "512"),
            ("inodesize", "512"),
            ("inopblock", "8"),
            ("fname", "\"labfs-test\""),
            ("blocklog", "12"),
            ("agblklog", "17"),
            ("inprogress", "1"),
            ("icount", "640"),
            ("ifree", "61"),
            ("fdblocks", "250001"),
            ("lsn", "77"),
            ("meta_uuid", "30313233-3435-3637-3839-616263646566"),
            ("unused[160..208]", "zero"),
        ];
        for (name, want) in expect {
            assert_eq!(value(&d, name), want, "{name}");
        }
        assert!(value(&d, "crc").ends_with("(correct)"), "{d}");
    }

    #[test]
    fn a_flipped_bit_shows_in_the_field_and_the_crc_verdict() {
        let sb = Superblock {
            dblocks: 1000,
            uuid: UUID,
            logstart: 9,
            logblocks: 64,
            rootino: 128,
            agblocks: 250,
            agcount: 4,
            agblklog: 8,
            fname: [0; 12],
            inprogress: false,
            icount: 0,
            ifree: 0,
            fdblocks: 0,
            lsn: 0,
        };
        let mut b = vec![0u8; BBSIZE];
        sb.encode(&mut b);
        let mut b = stamped(BlockKind::Superblock, b);
        b[15] ^= 0x01;
        b[200] = 0xaa;
        let d = superblock("sb", &b);
        assert_eq!(value(&d, "dblocks"), "1001");
        assert!(
            value(&d, "crc").contains("(bad: the contents give 0x"),
            "{d}"
        );
        assert!(
            value(&d, "unused[160..208]").starts_with("not zero: 00"),
            "{d}"
        );
    }

    #[test]
    fn the_agf_and_agi_tables_read_what_their_encoders_wrote() {
        let agf_in = Agf {
            seqno: 2,
            length: 1001,
            bno_root: 11,
            cnt_root: 12,
            bno_level: 2,
            cnt_level: 3,
            flfirst: 4,
            fllast: 7,
            flcount: 4,
            freeblks: 900,
            longest: 800,
            btreeblks: 5,
        };
        let mut b = vec![0u8; BBSIZE];
        agf_in.encode(&mut b, &UUID);
        let d = agf("agf", &stamped(BlockKind::Agf, b));
        for (name, want) in [
            ("magicnum", "0x58414746 (\"XAGF\")"),
            ("versionnum", "1"),
            ("seqno", "2"),
            ("length", "1001"),
            ("bno_root", "11"),
            ("cnt_root", "12"),
            ("bno_level", "2"),
            ("cnt_level", "3"),
            ("flfirst", "4"),
            ("fllast", "7"),
            ("flcount", "4"),
            ("freeblks", "900"),
            ("longest", "800"),
            ("btreeblks", "5"),
            ("uuid", "30313233-3435-3637-3839-616263646566"),
        ] {
            assert_eq!(value(&d, name), want, "{name}");
        }
        assert!(value(&d, "crc").ends_with("(correct)"));

        let agi_in = Agi {
            seqno: 3,
            length: 1002,
            count: 128,
            root: 21,
            level: 2,
            freecount: 60,
            newino: 64,
            free_root: 22,
            free_level: 1,
            iblocks: 3,
            fblocks: 1,
        };
        let mut b = vec![0u8; BBSIZE];
        agi_in.encode(&mut b, &UUID);
        let d = agi("agi", &stamped(BlockKind::Agi, b));
        for (name, want) in [
            ("seqno", "3"),
            ("length", "1002"),
            ("count", "128"),
            ("root", "21"),
            ("level", "2"),
            ("freecount", "60"),
            ("newino", "64"),
            ("dirino", "null"),
            ("unlinked[0-63]", "all null"),
            ("free_root", "22"),
            ("free_level", "1"),
            ("iblocks", "3"),
            ("fblocks", "1"),
        ] {
            assert_eq!(value(&d, name), want, "{name}");
        }
        assert!(value(&d, "crc").ends_with("(correct)"));
    }

    #[test]
    fn the_agfl_shows_the_slots_in_use() {
        let mut b = vec![0u8; BBSIZE];
        agfl_init(&mut b, 1, &UUID);
        agfl_set(&mut b, 0, 5);
        agfl_set(&mut b, 118, 9);
        let d = agfl("agfl", &stamped(BlockKind::Agfl, b));
        assert_eq!(value(&d, "seqno"), "1");
        assert_eq!(value(&d, "bno[0]"), "5");
        assert_eq!(value(&d, "bno[118]"), "9");
        assert!(d.field("bno[1]").is_none());
    }

    #[test]
    fn the_inode_table_reads_what_the_encoder_wrote_and_decodes_the_fork() {
        let core = DinodeCore {
            mode: 0o100640,
            format: ForkFormat::Extents,
            uid: 1000,
            gid: 100,
            nlink: 2,
            atime: 1_700_000_000_123_456_789,
            mtime: -1,
            ctime: 3,
            crtime: 4,
            size: 8192,
            nblocks: 2,
            nextents: 1,
            generation: 42,
            changecount: 9,
        };
        let mut b = vec![0u8; INODE_SIZE];
        encode_core(&mut b, 131, &core, &UUID);
        let ext = crate::fs::inode::Extent {
            startoff: 0,
            startblock: 1234,
            blockcount: 2,
            unwritten: false,
        };
        crate::fs::bmap::pack_extent(&ext, &mut b[CORE_SIZE..CORE_SIZE + EXTENT_REC_SIZE]);
        let d = inode("inode 131", &stamped(BlockKind::Inode, b));
        for (name, want) in [
            ("magic", "0x494e (\"IN\")"),
            ("mode", "0o100640 (regular file)"),
            ("version", "3"),
            ("format", "2 (extents)"),
            ("uid", "1000"),
            ("gid", "100"),
            ("nlink", "2"),
            ("atime", "1700000000.123456789"),
            ("mtime", "-1.999999999"),
            ("size", "8192"),
            ("nblocks", "2"),
            ("nextents", "1"),
            ("gen", "42"),
            ("next_unlinked", "null"),
            ("changecount", "9"),
            ("crtime", "0.000000004"),
            ("ino", "131"),
            ("u.bmx[0]", "startoff 0 startblock 1234 blockcount 2"),
        ] {
            assert_eq!(value(&d, name), want, "{name}");
        }
        assert!(value(&d, "crc").ends_with("(correct)"));
    }

    #[test]
    fn sniffing_names_every_block_kind_by_its_magic() {
        for kind in BlockKind::ALL {
            let mut b = vec![0u8; BLOCK_SIZE];
            match kind.magic() {
                Magic::U32(v) => b[0..4].copy_from_slice(&v.to_be_bytes()),
                Magic::U16 { offset, value } => {
                    b[offset..offset + 2].copy_from_slice(&value.to_be_bytes());
                }
            }
            let header = matches!(
                kind,
                BlockKind::Superblock | BlockKind::Agf | BlockKind::Agi | BlockKind::Agfl
            );
            if header {
                assert_eq!(sniff_sector(&b), Some(kind));
            } else if kind == BlockKind::LogRecord {
                assert_eq!(sniff_block(&b), None);
            } else {
                assert_eq!(sniff_block(&b), Some(kind), "{kind}");
            }
        }
        assert_eq!(sniff_block(&[0u8; BLOCK_SIZE]), None);
    }
}
