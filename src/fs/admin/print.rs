//! `labfs print IMAGE WHAT`: any metadata structure, field by field, by address or by path
//! (`xfs_db`'s `sb`, `agf`, `agi`, `agfl`, `inode`, `fsblock`, `daddr` and `path` commands
//! followed by `print`).
//!
//! Addresses are resolved with the image's geometry ([`Image::geometry`], a secondary
//! superblock's when the primary is damaged); the structures are read straight from the
//! device and decoded whatever they hold ([`super::decode`]). A block address without a type
//! is decoded as whatever its magic says it is; `--type` forces a kind, to see a block whose
//! magic is damaged. A path is resolved through a read-only mount and prints the inode and
//! every metadata block it owns: its extent-tree blocks, a directory's blocks, and a long
//! symbolic link's remote block.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::AdminError;
use super::decode::{self, Decoded};
use super::image::{Image, Located};
use crate::fs::Fs;
use crate::fs::bmbt;
use crate::fs::format::ag::{AGF_SECTOR, AGFL_SECTOR, AGI_SECTOR, SB_SECTOR};
use crate::fs::format::{BB_PER_BLOCK, BBSIZE, BLOCK_SIZE, BlockKind, Daddr, INODE_SIZE};
use crate::fs::geo::Geometry;
use crate::fs::inode::{DataFork, InodeRead};
use crate::fs::options::MountOptions;

/// What to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// AG `agno`'s superblock copy (0: the primary).
    Superblock {
        /// The AG.
        agno: u32,
    },
    /// AG `agno`'s AGF.
    Agf {
        /// The AG.
        agno: u32,
    },
    /// AG `agno`'s AGI.
    Agi {
        /// The AG.
        agno: u32,
    },
    /// AG `agno`'s AGFL.
    Agfl {
        /// The AG.
        agno: u32,
    },
    /// Inode `ino`.
    Inode {
        /// The inode number.
        ino: u64,
    },
    /// Filesystem block `fsblock`, decoded as its magic says or as `kind`.
    FsBlock {
        /// The block.
        fsblock: u64,
        /// The kind to decode it as, overriding its magic.
        kind: Option<BlockKind>,
    },
    /// The structure at sector `daddr`, decoded as its magic says or as `kind`.
    Daddr {
        /// The sector address.
        daddr: u64,
        /// The kind to decode it as, overriding its magic.
        kind: Option<BlockKind>,
    },
    /// The inode a path names and every metadata block it owns.
    Path {
        /// The path, from the filesystem's root.
        path: String,
    },
}

/// A block kind named on the command line (`--type`), by the names errors and traces use
/// (`sb`, `agf`, `bnobt`, `inode`, `dir3_data`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindName(pub BlockKind);

impl FromStr for KindName {
    type Err = String;

    fn from_str(s: &str) -> Result<KindName, String> {
        BlockKind::ALL
            .into_iter()
            .filter(|k| *k != BlockKind::LogRecord)
            .find(|k| k.name() == s)
            .map(KindName)
            .ok_or_else(|| {
                let names: Vec<&str> = BlockKind::ALL
                    .iter()
                    .filter(|k| **k != BlockKind::LogRecord)
                    .map(|k| k.name())
                    .collect();
                format!("unknown type '{s}' (expected one of {})", names.join(", "))
            })
    }
}

impl fmt::Display for KindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

/// Decode what `what` names on `img`.
pub fn print(img: &Image, what: &What) -> Result<Vec<Decoded>, AdminError> {
    match what {
        // The primary is printed from sector 0 whatever it holds, even on an image whose
        // geometry cannot be found: that is how one looks at a damaged or foreign one.
        What::Superblock { agno: 0 } => Ok(vec![decode::superblock(
            "superblock of AG 0, the primary (daddr 0)",
            &img.read(Daddr(0), BBSIZE)?,
        )]),
        What::Daddr { daddr, kind } => at_daddr(img, Daddr(*daddr), *kind),
        What::Superblock { agno } => header(img, *agno, SB_SECTOR, BlockKind::Superblock),
        What::Agf { agno } => header(img, *agno, AGF_SECTOR, BlockKind::Agf),
        What::Agi { agno } => header(img, *agno, AGI_SECTOR, BlockKind::Agi),
        What::Agfl { agno } => header(img, *agno, AGFL_SECTOR, BlockKind::Agfl),
        What::Inode { ino } => {
            let located = img.geometry()?;
            Ok(vec![one_inode(img, &located.geometry(), *ino)?])
        }
        What::FsBlock { fsblock, kind } => {
            let located = img.geometry()?;
            let geo = located.geometry();
            if *fsblock >= geo.dblocks {
                return Err(AdminError::OutOfRange {
                    what: format!("block {fsblock}"),
                    limit: format!("it has {} blocks", geo.dblocks),
                });
            }
            block_at(img, Some(&geo), *fsblock, *kind)
        }
        What::Path { path } => by_path(img, path),
    }
}

/// An AG header sector.
fn header(
    img: &Image,
    agno: u32,
    sector: u64,
    kind: BlockKind,
) -> Result<Vec<Decoded>, AdminError> {
    let located = img.geometry()?;
    let geo = located.geometry();
    if agno >= geo.agcount {
        return Err(AdminError::OutOfRange {
            what: format!("AG {agno}"),
            limit: format!("it has {} AGs", geo.agcount),
        });
    }
    let daddr = geo.ag_header_daddr(agno, sector);
    let b = img.read(daddr, BBSIZE)?;
    Ok(vec![decode::block(
        header_title(kind, agno, daddr),
        kind,
        &b,
    )])
}

fn header_title(kind: BlockKind, agno: u32, daddr: Daddr) -> String {
    let what = match kind {
        BlockKind::Superblock if agno == 0 => "superblock of AG 0, the primary".to_string(),
        BlockKind::Superblock => format!("superblock of AG {agno}"),
        _ => format!("{} of AG {agno}", kind.name().to_uppercase()),
    };
    format!("{what} (daddr {daddr})")
}

/// Inode `ino`, read from its inode cluster (the address shown is the cluster's, the offset
/// the inode's in it, as `ino_location` names them).
fn one_inode(img: &Image, geo: &Geometry, ino: u64) -> Result<Decoded, AdminError> {
    if !geo.ino_valid(ino) {
        return Err(AdminError::OutOfRange {
            what: format!("inode {ino}"),
            limit: format!(
                "its AGs hold inode numbers up to {}",
                geo.ino(
                    geo.agcount - 1,
                    Geometry::agbno_agino(geo.ag_len(geo.agcount - 1))
                ) - 1
            ),
        });
    }
    let (daddr, off) = geo.ino_location(ino);
    let b = img.read(daddr, crate::fs::geo::INODE_CLUSTER_SIZE)?;
    Ok(decode::inode(
        format!("inode {ino} (daddr {daddr} offset {off})"),
        &b[off..off + INODE_SIZE],
    ))
}

/// The eight inodes of the filesystem block at `daddr` (one block of an inode cluster).
fn cluster(geo: Option<&Geometry>, daddr: Daddr, b: &[u8]) -> Vec<Decoded> {
    (0..BLOCK_SIZE / INODE_SIZE)
        .map(|slot| {
            let off = slot * INODE_SIZE;
            let name = match geo {
                Some(g) => {
                    let fsb = daddr.0 / BB_PER_BLOCK;
                    let agino = Geometry::agbno_agino(g.agbno_of(fsb)) + slot as u32;
                    format!("inode {}", g.ino(g.agno_of(fsb), agino))
                }
                None => format!("inode slot {slot}"),
            };
            decode::inode(
                format!("{name} (daddr {daddr} offset {off})"),
                &b[off..off + INODE_SIZE],
            )
        })
        .collect()
}

/// Filesystem block `fsblock`: an AG's header block (four headers), a block of an inode
/// cluster (its eight inodes), or one metadata block.
fn block_at(
    img: &Image,
    geo: Option<&Geometry>,
    fsblock: u64,
    kind: Option<BlockKind>,
) -> Result<Vec<Decoded>, AdminError> {
    let daddr = Daddr::of_block(fsblock);
    if !img.contains(daddr, BLOCK_SIZE) {
        return Err(AdminError::OutOfRange {
            what: format!("block {fsblock}"),
            limit: format!("the device has {} bytes", img.dev().size()),
        });
    }
    let b = img.read(daddr, BLOCK_SIZE)?;
    let place = match geo {
        Some(g) => format!(
            "fsblock {fsblock}, daddr {daddr}, AG {} block {}",
            g.agno_of(fsblock),
            g.agbno_of(fsblock)
        ),
        None => format!("fsblock {fsblock}, daddr {daddr}"),
    };
    let ag_header_block = geo.is_some_and(|g| g.agbno_of(fsblock) == 0);
    let kind = kind.or_else(|| {
        if ag_header_block {
            None
        } else {
            decode::sniff_block(&b)
        }
    });
    Ok(match kind {
        None if ag_header_block || decode::sniff_sector(&b).is_some() => {
            let agno = geo.map_or(0, |g| g.agno_of(fsblock));
            [SB_SECTOR, AGF_SECTOR, AGI_SECTOR, AGFL_SECTOR]
                .into_iter()
                .zip([
                    BlockKind::Superblock,
                    BlockKind::Agf,
                    BlockKind::Agi,
                    BlockKind::Agfl,
                ])
                .map(|(sector, kind)| {
                    let at = sector as usize * BBSIZE;
                    decode::block(
                        header_title(kind, agno, Daddr(daddr.0 + sector)),
                        kind,
                        &b[at..at + BBSIZE],
                    )
                })
                .collect()
        }
        None => vec![decode::unknown(format!("block ({place})"), &b)],
        Some(BlockKind::Inode) => cluster(geo, daddr, &b),
        Some(kind) => vec![decode::block(format!("{kind} block ({place})"), kind, &b)],
    })
}

/// The structure at sector `daddr`: an AG header sector, or the block starting there.
fn at_daddr(
    img: &Image,
    daddr: Daddr,
    kind: Option<BlockKind>,
) -> Result<Vec<Decoded>, AdminError> {
    if !img.contains(daddr, BBSIZE) {
        return Err(AdminError::OutOfRange {
            what: format!("daddr {daddr}"),
            limit: format!(
                "the device has {} sectors",
                img.dev().size() / BBSIZE as u64
            ),
        });
    }
    let located: Option<Located> = img.geometry().ok();
    let geo = located.as_ref().map(Located::geometry);
    let sector = img.read(daddr, BBSIZE)?;
    let sector_kind = match kind {
        Some(k @ (BlockKind::Superblock | BlockKind::Agf | BlockKind::Agi | BlockKind::Agfl)) => {
            Some(k)
        }
        Some(_) => None,
        None => decode::sniff_sector(&sector),
    };
    if let Some(k) = sector_kind {
        let fsb = daddr.0 / BB_PER_BLOCK;
        let agno = geo.map_or(0, |g| g.agno_of(fsb));
        return Ok(vec![decode::block(
            header_title(k, agno, daddr),
            k,
            &sector,
        )]);
    }
    if !daddr.0.is_multiple_of(BB_PER_BLOCK) {
        return Ok(vec![decode::unknown(
            format!("sector at daddr {daddr} (not the start of a block)"),
            &sector,
        )]);
    }
    block_at(img, geo.as_ref(), daddr.0 / BB_PER_BLOCK, kind)
}

/// The inode `path` names and the metadata blocks it owns.
fn by_path(img: &Image, path: &str) -> Result<Vec<Decoded>, AdminError> {
    let located = img.geometry()?;
    let geo = located.geometry();
    let dev = if located.agno == 0 {
        Arc::clone(img.dev())
    } else {
        img.with_primary(&located.sector)
    };
    // Read-only: a dirty log is replayed into memory, not onto the image.
    let dev: Arc<dyn crate::fs::dev::BlockDev> =
        Arc::new(crate::fs::dev::overlay::OverlayDev::new(dev));
    let fs = Fs::mount(dev, MountOptions::default()).map_err(|source| AdminError::Mount {
        path: img.path().to_path_buf(),
        source,
    })?;
    let ip = fs
        .lookup_path(path.as_bytes())
        .map_err(|source| AdminError::Path {
            path: path.to_string(),
            source,
        })?;
    let ino = ip.ino;
    let mut out = vec![one_inode(img, &geo, ino)?];
    let core = InodeRead::lock(ip);
    if let DataFork::Btree(b) = &core.fork {
        let blocks = bmbt::tree_blocks(&fs, ino, b.root).map_err(|source| AdminError::Path {
            path: path.to_string(),
            source,
        })?;
        for fsb in blocks {
            out.extend(block_at(img, Some(&geo), fsb, Some(BlockKind::BmapBtree))?);
        }
    }
    if core.is_symlink() {
        // A long target's remote block (a short one is in the inode, decoded above).
        for e in core.fork.extents().iter().filter(|e| !e.is_delalloc()) {
            let mut decoded = block_at(img, Some(&geo), e.startblock, Some(BlockKind::Symlink))?;
            for d in &mut decoded {
                d.title = format!("symlink block of {path}: {}", d.title);
            }
            out.extend(decoded);
        }
    }
    if core.is_dir() {
        for e in core.fork.extents().iter().filter(|e| !e.is_delalloc()) {
            for i in 0..u64::from(e.blockcount) {
                let fsb = e.startblock + i;
                let mut decoded = block_at(img, Some(&geo), fsb, None)?;
                for d in &mut decoded {
                    d.title = format!("directory block {} of {path}: {}", e.startoff + i, d.title);
                }
                out.extend(decoded);
            }
        }
    }
    Ok(out)
}
