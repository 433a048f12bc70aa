//! `labfs info IMAGE`: geometry and counters, as `xfs_info` prints them for XFS, plus the
//! state of every AG read from its headers.
//!
//! The geometry lines follow `xfs_info`'s layout (the same sections, names and columns), so
//! the eyes and scripts that read `xfs_info` find the same numbers in the same places; the
//! values are labfs's (CRCs and the free-inode tree on, no sparse inodes, reverse maps or
//! reflink, an internal log). Then come the counters (summed from the AG headers, which are
//! the authority: the superblock's copies are written at unmount) and one row per AG. An AG
//! whose header does not verify is shown with the reason instead of numbers.

use std::fmt;

use super::AdminError;
use super::image::{Image, Located};
use crate::fs::error::FsError;
use crate::fs::format::ag::{AGF_SECTOR, AGI_SECTOR, Agf, Agi};
use crate::fs::format::{BBSIZE, BLOCK_SIZE, BlockKind, INODE_SIZE};

/// One AG as its headers describe it.
#[derive(Debug, Clone)]
pub struct AgInfo {
    /// The AG.
    pub agno: u32,
    /// Blocks in it.
    pub length: u32,
    /// Its AGF, or why it cannot be read.
    pub agf: Result<Agf, FsError>,
    /// Its AGI, or why it cannot be read.
    pub agi: Result<Agi, FsError>,
}

/// Everything `labfs info` prints.
#[derive(Debug, Clone)]
pub struct Info {
    /// The image as the user named it.
    pub name: String,
    /// The superblock the geometry comes from.
    pub located: Located,
    /// Every AG.
    pub ags: Vec<AgInfo>,
}

impl Info {
    /// Headers that could not be read (each is shown in the AG table).
    pub fn unreadable_headers(&self) -> usize {
        self.ags
            .iter()
            .map(|a| usize::from(a.agf.is_err()) + usize::from(a.agi.is_err()))
            .sum()
    }

    /// Allocated inodes, free inodes among them, and free blocks (the trees plus the free
    /// lists), summed over the AGs whose headers read.
    pub fn counters(&self) -> (u64, u64, u64) {
        let mut c = (0u64, 0u64, 0u64);
        for a in &self.ags {
            if let Ok(agi) = &a.agi {
                c.0 += u64::from(agi.count);
                c.1 += u64::from(agi.freecount);
            }
            if let Ok(agf) = &a.agf {
                c.2 += u64::from(agf.freeblks) + u64::from(agf.flcount);
            }
        }
        c
    }
}

/// Read the geometry and every AG's AGF and AGI.
pub fn info(img: &Image) -> Result<Info, AdminError> {
    let located = img.geometry()?;
    let geo = located.geometry();
    let uuid = located.sb.uuid;
    let mut ags = Vec::with_capacity(geo.agcount as usize);
    for agno in 0..geo.agcount {
        let daddr = geo.ag_header_daddr(agno, AGF_SECTOR);
        let agf = img
            .verified(daddr, BlockKind::Agf)?
            .and_then(|b| Agf::decode(&b, agno, &uuid, daddr));
        let daddr = geo.ag_header_daddr(agno, AGI_SECTOR);
        let agi = img
            .verified(daddr, BlockKind::Agi)?
            .and_then(|b| Agi::decode(&b, agno, &uuid, daddr));
        ags.push(AgInfo {
            agno,
            length: geo.ag_len(agno),
            agf,
            agi,
        });
    }
    Ok(Info {
        name: img.path().display().to_string(),
        located,
        ags,
    })
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sb = &self.located.sb;
        let geo = self.located.geometry();
        let label_end = sb.fname.iter().position(|&c| c == 0).unwrap_or(12);
        let label = String::from_utf8_lossy(&sb.fname[..label_end]);
        writeln!(
            f,
            "meta-data={:<22} isize={:<6} agcount={}, agsize={} blks",
            self.name, INODE_SIZE, sb.agcount, sb.agblocks
        )?;
        writeln!(
            f,
            "         ={:<22} sectsz={:<5} crc=1        finobt=1, sparse=0, rmapbt=0",
            "", BBSIZE
        )?;
        writeln!(
            f,
            "data     ={:<22} bsize={:<6} blocks={}, imaxpct=0",
            "", BLOCK_SIZE, sb.dblocks
        )?;
        writeln!(
            f,
            "naming   =version {:<14} bsize={:<6} ascii-ci=0, ftype=1",
            2, BLOCK_SIZE
        )?;
        writeln!(
            f,
            "log      ={:<22} bsize={:<6} blocks={}, start={}",
            "internal log", BLOCK_SIZE, sb.logblocks, sb.logstart
        )?;
        writeln!(
            f,
            "label    ={:<22} uuid={}",
            format!("\"{label}\""),
            super::decode::format_uuid(&sb.uuid)
        )?;
        let (icount, ifree, free) = self.counters();
        writeln!(
            f,
            "counters ={:<22} inodes={icount}, free inodes={ifree}, free blocks={free}",
            "from the AG headers"
        )?;
        writeln!(
            f,
            "         ={:<22} inodes={}, free inodes={}, free blocks={}",
            "superblock (unmount)", sb.icount, sb.ifree, sb.fdblocks
        )?;
        writeln!(
            f,
            "{:>4} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>12}",
            "AG", "start", "length", "freeblks", "longest", "flcount", "inodes", "free inodes"
        )?;
        for a in &self.ags {
            let start = geo.fsblock(a.agno, 0);
            write!(f, "{:>4} {:>10} {:>10}", a.agno, start, a.length)?;
            match &a.agf {
                Ok(agf) => write!(
                    f,
                    " {:>10} {:>10} {:>8}",
                    agf.freeblks, agf.longest, agf.flcount
                )?,
                Err(_) => write!(f, " {:>10} {:>10} {:>8}", "-", "-", "-")?,
            }
            match &a.agi {
                Ok(agi) => write!(f, " {:>10} {:>12}", agi.count, agi.freecount)?,
                Err(_) => write!(f, " {:>10} {:>12}", "-", "-")?,
            }
            writeln!(f)?;
            for e in [a.agf.as_ref().err(), a.agi.as_ref().err()]
                .into_iter()
                .flatten()
            {
                writeln!(f, "     AG {} header unreadable: {e}", a.agno)?;
            }
        }
        Ok(())
    }
}
