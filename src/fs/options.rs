//! Mount and mkfs options (`-o key=value,...` in every binary).
//!
//! Each option is a switch that reproduces one side of a design change argued in the seed
//! threads, or a geometry choice; each changes behaviour for real (the repository's
//! `docs/tools.md` lists them).
//! Unknown keys and bad values are errors naming the key, never silently ignored.

use std::fmt;

use crate::fs::cksum::{CksumMode, CrcEngine};
use crate::units::parse_size;

/// How sync()/syncfs() find the inodes they must wait for (thread 002).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncWait {
    /// Walk only the inodes on the writeback list (Linux since 4.8, the default).
    #[default]
    WbList,
    /// Walk every cached inode (Linux before the sb writeback list).
    All,
}

/// Options fixed when the filesystem is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MkfsOptions {
    /// Allocation groups.
    pub agcount: u32,
    /// Log size in bytes (0 = choose from the device size).
    pub log_bytes: u64,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            agcount: 4,
            log_bytes: 0,
        }
    }
}

/// Options of one mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// CRC update mode.
    pub cksum: CksumMode,
    /// CRC engine.
    pub crc: CrcEngine,
    /// sync() wait strategy.
    pub sync_wait: SyncWait,
    /// In-core log buffers (2..=8; used by the journal).
    pub logbufs: u32,
    /// Size of each in-core log buffer (16 KiB..=256 KiB, a power of two; used by the journal).
    pub logbsize: u32,
    /// Inodes kept cached before reclaim starts.
    pub icache_limit: usize,
    /// Bytes of clean metadata buffers kept cached.
    pub bufcache_bytes: u64,
    /// Bytes of dirty file data before write-back starts in the background.
    pub dirty_bytes: u64,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            cksum: CksumMode::Single,
            crc: CrcEngine::Crc32c,
            sync_wait: SyncWait::WbList,
            logbufs: 8,
            logbsize: 32 * 1024,
            icache_limit: 4_000_000,
            bufcache_bytes: 256 << 20,
            dirty_bytes: 256 << 20,
        }
    }
}

/// An option string that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad mount option '{option}': {reason}")]
pub struct OptionError {
    /// The `key=value` as given.
    pub option: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Both option sets, parsed from one `-o` string (mkfs keys apply when the filesystem is
/// made; they are ignored with a mounted existing image only if they match it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// mkfs-time options.
    pub mkfs: MkfsOptions,
    /// Mount-time options.
    pub mount: MountOptions,
}

impl Options {
    /// Parse `key=value,key=value`. Empty is the defaults.
    pub fn parse(s: &str) -> Result<Options, OptionError> {
        let mut o = Options::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let err = |reason: String| OptionError {
                option: item.to_string(),
                reason,
            };
            let size = |v: &str| parse_size(v).map_err(|e| err(e.to_string()));
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| err(format!("'{v}' is not a number")))
            };
            match key {
                "cksum" => o.mount.cksum = value.parse().map_err(err)?,
                "crc" => o.mount.crc = value.parse().map_err(err)?,
                "sync_wait" => {
                    o.mount.sync_wait = match value {
                        "wblist" => SyncWait::WbList,
                        "all" => SyncWait::All,
                        _ => return Err(err("expected wblist or all".into())),
                    }
                }
                "logbufs" => {
                    let n = num(value)?;
                    if !(2..=8).contains(&n) {
                        return Err(err("logbufs must be 2..8".into()));
                    }
                    o.mount.logbufs = n as u32;
                }
                "logbsize" => {
                    let n = size(value)?;
                    if !(16 << 10..=256 << 10).contains(&n) || !n.is_power_of_two() {
                        return Err(err("logbsize must be 16k, 32k, 64k, 128k or 256k".into()));
                    }
                    o.mount.logbsize = n as u32;
                }
                "icache" => o.mount.icache_limit = num(value)? as usize,
                "bufcache" => o.mount.bufcache_bytes = size(value)?.max(1 << 20),
                "dirty" => o.mount.dirty_bytes = size(value)?.max(1 << 20),
                "agcount" => {
                    let n = num(value)?;
                    if !(1..=1024).contains(&n) {
                        return Err(err("agcount must be 1..1024".into()));
                    }
                    o.mkfs.agcount = n as u32;
                }
                "logsize" => o.mkfs.log_bytes = size(value)?,
                _ => return Err(err("unknown option".into())),
            }
        }
        Ok(o)
    }
}

impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.mount;
        write!(
            f,
            "agcount={},cksum={},crc={},sync_wait={},logbufs={},logbsize={}k",
            self.mkfs.agcount,
            m.cksum,
            m.crc,
            match m.sync_wait {
                SyncWait::WbList => "wblist",
                SyncWait::All => "all",
            },
            m.logbufs,
            m.logbsize >> 10
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_switch() {
        let o = Options::parse(
            "cksum=split,crc=soft,sync_wait=all,logbufs=2,logbsize=256k,agcount=8,logsize=64m",
        )
        .unwrap();
        assert_eq!(o.mount.cksum, CksumMode::Split);
        assert_eq!(o.mount.crc, CrcEngine::Soft);
        assert_eq!(o.mount.sync_wait, SyncWait::All);
        assert_eq!((o.mount.logbufs, o.mount.logbsize), (2, 256 << 10));
        assert_eq!((o.mkfs.agcount, o.mkfs.log_bytes), (8, 64 << 20));
        assert_eq!(Options::parse("").unwrap(), Options::default());
    }

    #[test]
    fn errors_name_the_option() {
        let e = Options::parse("cksum=single,frobnicate=1").unwrap_err();
        assert_eq!(e.option, "frobnicate=1");
        assert!(e.to_string().contains("unknown option"));
        assert!(
            Options::parse("logbufs=9")
                .unwrap_err()
                .to_string()
                .contains("2..8")
        );
        assert!(Options::parse("logbsize=48k").is_err());
        assert!(
            Options::parse("agcount=x")
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
    }

    #[test]
    fn display_names_the_effective_switches() {
        let s = Options::default().to_string();
        assert!(
            s.contains("cksum=single") && s.contains("sync_wait=wblist"),
            "{s}"
        );
    }
}
