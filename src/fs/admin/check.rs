//! `labfs check IMAGE`: fsck of an image file, read-only (`xfs_repair -n`).
//!
//! The whole-filesystem checker ([`crate::fs::check`]) needs a mounted filesystem. An image
//! with damage in the wrong place cannot be mounted, and those are the images people check,
//! so this wraps it:
//!
//! 1. The geometry comes from the primary superblock or, if that is damaged, from the first
//!    intact secondary copy; the damaged primary is the first finding, and the mount goes
//!    through a view of the image whose first sector is the copy.
//! 2. If the mount works, [`crate::fs::check::check`] walks everything and reports every
//!    problem with its location.
//! 3. If the mount fails, every AG's headers (superblock copy, AGF, AGI, AGFL) are checked
//!    straight from the device, so the damage that stopped the mount is named where it is;
//!    nothing beyond the headers can be checked then, and the result says so.
//!
//! The image is opened read-only: checking never changes it.

use std::sync::Arc;

use super::AdminError;
use super::image::Image;
use crate::fs::Fs;
use crate::fs::check::{Finding, Location, Report, check, superblock_differences};
use crate::fs::error::FsError;
use crate::fs::format::ag::{AGF_SECTOR, AGFL_SECTOR, AGI_SECTOR, Agf, Agi, SB_SECTOR, agfl_check};
use crate::fs::format::sb::Superblock;
use crate::fs::format::{BlockKind, Daddr};
use crate::fs::geo::Geometry;
use crate::fs::options::MountOptions;

/// What a check of an image found.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// Every problem, one per line when displayed, in address order.
    pub findings: Vec<Finding>,
    /// The full checker's report, when the image could be mounted.
    pub report: Option<Report>,
    /// Why only the AG headers could be checked, when the image could not be mounted.
    pub unmountable: Option<FsError>,
}

impl CheckResult {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty() && self.unmountable.is_none()
    }
}

/// Check the image: see the module docs.
pub fn check_image(img: &Image, opts: &MountOptions) -> Result<CheckResult, AdminError> {
    let located = img.geometry()?;
    let mut findings = Vec::new();
    if let Some(problem) = &located.primary_problem {
        findings.push(Finding::new(
            Location::Superblock {
                agno: 0,
                daddr: Daddr(0),
            },
            format!(
                "{problem} (the geometry was taken from AG {}'s copy)",
                located.agno
            ),
        ));
    }
    let dev = if located.agno == 0 {
        Arc::clone(img.dev())
    } else {
        img.with_primary(&located.sector)
    };
    // Read-only: a log that needs replay is replayed into memory, the image stays as it is.
    let dev: Arc<dyn crate::fs::dev::BlockDev> =
        Arc::new(crate::fs::dev::overlay::OverlayDev::new(dev));
    match Fs::mount(dev, opts.clone()) {
        Ok(fs) => match check(&fs) {
            Ok(report) => {
                findings.extend(report.findings.iter().cloned());
                findings.sort_by_key(|f| f.location);
                Ok(CheckResult {
                    findings,
                    report: Some(report),
                    unmountable: None,
                })
            }
            // The checker reports what it can read and stops only when it cannot go on (the
            // root directory unreadable, a device error): that is a finding too.
            Err(e) => {
                findings.push(Finding::new(
                    location_of(&e),
                    format!("the check could not go on: {e}"),
                ));
                findings.sort_by_key(|f| f.location);
                Ok(CheckResult {
                    findings,
                    report: None,
                    unmountable: None,
                })
            }
        },
        Err(e) => {
            let before = findings.len();
            findings.extend(check_headers(img, &located.sb)?);
            if findings.len() == before {
                findings.push(Finding::new(location_of(&e), e.to_string()));
            }
            findings.sort_by_key(|f| f.location);
            Ok(CheckResult {
                findings,
                report: None,
                unmountable: Some(e),
            })
        }
    }
}

/// Where a mount error points.
fn location_of(e: &FsError) -> Location {
    match e {
        FsError::Crc { kind, daddr, .. } | FsError::Corrupt { kind, daddr, .. } => {
            Location::Block {
                kind: *kind,
                daddr: Daddr(*daddr),
            }
        }
        _ => Location::Superblock {
            agno: 0,
            daddr: Daddr(0),
        },
    }
}

/// Every AG's superblock copy, AGF, AGI and AGFL, read from the device: each must verify
/// and decode, and each superblock copy must describe the filesystem `sb` describes.
fn check_headers(img: &Image, sb: &Superblock) -> Result<Vec<Finding>, AdminError> {
    let geo = Geometry::from_sb(sb);
    let mut out = Vec::new();
    for agno in 0..geo.agcount {
        let daddr = geo.ag_header_daddr(agno, SB_SECTOR);
        let at = Location::Superblock { agno, daddr };
        match img
            .verified(daddr, BlockKind::Superblock)?
            .and_then(|b| Superblock::decode(&b, daddr))
        {
            Err(e) => out.push(Finding::new(at, format!("unreadable: {e}"))),
            Ok(copy) => {
                for field in superblock_differences(sb, &copy) {
                    out.push(Finding::new(
                        at,
                        format!("{field} differs from the superblock in use"),
                    ));
                }
            }
        }
        for (sector, kind) in [
            (AGF_SECTOR, BlockKind::Agf),
            (AGI_SECTOR, BlockKind::Agi),
            (AGFL_SECTOR, BlockKind::Agfl),
        ] {
            let daddr = geo.ag_header_daddr(agno, sector);
            let decoded = img.verified(daddr, kind)?.and_then(|b| match kind {
                BlockKind::Agf => Agf::decode(&b, agno, &sb.uuid, daddr)
                    .and_then(|h| h.check_length(geo.ag_len(agno), daddr))
                    .map(drop),
                BlockKind::Agi => Agi::decode(&b, agno, &sb.uuid, daddr)
                    .and_then(|h| h.check_length(geo.ag_len(agno), daddr))
                    .map(drop),
                _ => agfl_check(&b, agno, &sb.uuid, daddr),
            });
            if let Err(e) = decoded {
                out.push(Finding::new(
                    Location::AgHeader { agno, kind, daddr },
                    format!("unreadable: {e}"),
                ));
            }
        }
    }
    Ok(out)
}
