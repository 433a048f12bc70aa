//! Mount and mkfs options (`-o key=value,...` in every binary), defined in one table.
//!
//! Each option is a switch that reproduces one side of a design change argued in the seed
//! threads, or a geometry or cache-size choice; each changes behaviour for real (the
//! repository's `docs/tools.md` lists them). Every option is one [`OptionDef`] row of [`OPTIONS`]: its key, when it
//! applies, the values it takes and their range, a help line, and how it is stored and shown.
//! Everything else is derived from that row: the parser ([`Options::parse`]), the `Display`
//! that names the effective switches in a report header, the `-o` help text
//! ([`summary_help`], [`long_help`]), and the test that the README's option table lists every
//! key. Adding an option is adding a row.
//!
//! Nothing is silently adjusted: an unknown key, a bad value, or a value outside its range is
//! an [`OptionError`] naming the option, as mount(8) refuses what it cannot honour (labfs
//! used to clamp `logsize=0` and `bufcache=0`). What depends on the device (whether `agcount`
//! allocation groups or a `logsize` log fit on it) is checked by mkfs, which refuses in the
//! same way.

use std::fmt;

use thiserror::Error;

use crate::fs::cksum::{CksumMode, CrcEngine};
use crate::units::{UnitError, format_size_spec, parse_size};

/// How sync()/syncfs() find the inodes they must wait for (thread 002).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncWait {
    /// Walk only the inodes on the writeback list (Linux since 4.8, the default).
    #[default]
    WbList,
    /// Walk every cached inode (Linux before the sb writeback list).
    All,
}

impl SyncWait {
    /// The option value.
    pub fn name(self) -> &'static str {
        match self {
            SyncWait::WbList => "wblist",
            SyncWait::All => "all",
        }
    }
}

impl std::str::FromStr for SyncWait {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wblist" => Ok(SyncWait::WbList),
            "all" => Ok(SyncWait::All),
            _ => Err(format!("unknown sync_wait '{s}' (expected wblist or all)")),
        }
    }
}

/// Allocation groups mkfs makes when `agcount` is not given (fewer on devices too small for
/// four 1 MiB groups).
pub const DEFAULT_AGCOUNT: u32 = 4;
/// Smallest log `logsize=` accepts, in bytes (mkfs makes none smaller).
pub const MIN_LOG_BYTES: u64 = 256 << 10;
/// Largest log `logsize=` accepts, in bytes (mkfs's default never goes above it either).
pub const MAX_LOG_BYTES: u64 = 2 << 30;
/// Dentry-cache entries kept by default (`dcache=`).
pub const DEFAULT_DCACHE_ENTRIES: usize = 1_000_000;

/// Options fixed when the filesystem is made. `None` lets mkfs choose from the device size.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MkfsOptions {
    /// Allocation groups (`agcount=`); by default [`DEFAULT_AGCOUNT`], fewer on small devices.
    pub agcount: Option<u32>,
    /// Log size in bytes (`logsize=`); by default as mkfs.xfs sizes it (see `mkfs::plan`).
    pub log_bytes: Option<u64>,
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
    /// Directory lookups kept in the dentry cache (0: no dentry cache).
    pub dcache_entries: usize,
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
            dcache_entries: DEFAULT_DCACHE_ENTRIES,
            bufcache_bytes: 256 << 20,
            dirty_bytes: 256 << 20,
        }
    }
}

/// Both option sets, parsed from one `-o` string (mkfs keys apply when the filesystem is
/// made; mounting an existing image uses its own geometry).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// mkfs-time options.
    pub mkfs: MkfsOptions,
    /// Mount-time options.
    pub mount: MountOptions,
}

/// When an option takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// When the filesystem is made (ignored when an existing image is mounted).
    Mkfs,
    /// At every mount.
    Mount,
}

/// The values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// One of these words.
    Words(&'static [&'static str]),
    /// A whole number in `min..=max`.
    Count {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A size with an optional binary suffix (`64k`, `1g`) in `min..=max`.
    Size {
        /// Smallest accepted, in bytes.
        min: u64,
        /// Largest accepted, in bytes.
        max: u64,
        /// The size must be a multiple of this (1: any).
        multiple_of: u64,
        /// The size must be a power of two.
        power_of_two: bool,
    },
}

impl Values {
    /// How a value is written, for help: `single|split`, `N`, `SIZE`.
    pub fn value_name(&self) -> String {
        match self {
            Values::Words(words) => words.join("|"),
            Values::Count { .. } => "N".to_string(),
            Values::Size { .. } => "SIZE".to_string(),
        }
    }

    /// The accepted range in words (`2..8`, `16k..256k, a power of two`), or `None` for words.
    pub fn range(&self) -> Option<String> {
        match *self {
            Values::Words(_) => None,
            Values::Count { min, max } => Some(if max == u64::MAX {
                format!("at least {min}")
            } else {
                format!("{min}..{max}")
            }),
            Values::Size {
                min,
                max,
                multiple_of,
                power_of_two,
            } => {
                let mut s = if max == u64::MAX {
                    format!("at least {}", format_size_spec(min))
                } else {
                    format!("{}..{}", format_size_spec(min), format_size_spec(max))
                };
                if power_of_two {
                    s.push_str(", a power of two");
                } else if multiple_of > 1 {
                    s.push_str(&format!(
                        ", a multiple of {}",
                        format_size_spec(multiple_of)
                    ));
                }
                Some(s)
            }
        }
    }

    /// Check `text` against these values.
    fn parse<'t>(&self, text: &'t str) -> Result<Parsed<'t>, OptionProblem> {
        match *self {
            Values::Words(words) => {
                if words.contains(&text) {
                    Ok(Parsed::Word(text))
                } else {
                    Err(OptionProblem::NotOneOf(words))
                }
            }
            Values::Count { min, max } => {
                let n = text
                    .parse::<u64>()
                    .map_err(|_| OptionProblem::NotANumber(text.to_string()))?;
                if !(min..=max).contains(&n) {
                    return Err(OptionProblem::OutOfRange(self.range().unwrap_or_default()));
                }
                Ok(Parsed::Number(n))
            }
            Values::Size {
                min,
                max,
                multiple_of,
                power_of_two,
            } => {
                let n = parse_size(text).map_err(OptionProblem::BadSize)?;
                let fits = (min..=max).contains(&n)
                    && n % multiple_of.max(1) == 0
                    && (!power_of_two || n.is_power_of_two());
                if !fits {
                    return Err(OptionProblem::OutOfRange(self.range().unwrap_or_default()));
                }
                Ok(Parsed::Number(n))
            }
        }
    }
}

/// A value that passed its option's [`Values`] check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'t> {
    /// One of the option's words.
    Word(&'t str),
    /// A number or size within the option's range.
    Number(u64),
}

/// One `-o` option: the single definition everything about it is derived from.
pub struct OptionDef {
    /// The key, as typed before `=`.
    pub key: &'static str,
    /// When it takes effect.
    pub stage: Stage,
    /// What it accepts.
    pub values: Values,
    /// What it does, in a few words.
    pub help: &'static str,
    /// What it is when not given.
    pub default: &'static str,
    /// Whether a report header's backend line names it (the switches the seed threads turn).
    pub shown: bool,
    /// Store a checked value.
    set: fn(&mut Options, Parsed<'_>) -> Result<(), String>,
    /// The value in effect, as typed, or `None` when mkfs chooses it.
    show: fn(&Options) -> Option<String>,
}

impl fmt::Debug for OptionDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OptionDef")
            .field("key", &self.key)
            .field("values", &self.values)
            .finish()
    }
}

impl OptionDef {
    /// `key=VALUES`, e.g. `cksum=single|split`.
    pub fn synopsis(&self) -> String {
        format!("{}={}", self.key, self.values.value_name())
    }

    /// The value in effect in `options`, or `None` when mkfs chooses it from the device.
    pub fn value_in(&self, options: &Options) -> Option<String> {
        (self.show)(options)
    }
}

fn number(v: Parsed<'_>) -> Result<u64, String> {
    match v {
        Parsed::Number(n) => Ok(n),
        Parsed::Word(w) => Err(format!("'{w}' is not a number")),
    }
}

fn word(v: Parsed<'_>) -> Result<&str, String> {
    match v {
        Parsed::Word(w) => Ok(w),
        Parsed::Number(n) => Err(format!("{n} is not one of the words")),
    }
}

fn narrow<T: TryFrom<u64>>(n: u64) -> Result<T, String> {
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// Every `-o` option, in the order a backend line names them.
pub static OPTIONS: [OptionDef; 11] = [
    OptionDef {
        key: "agcount",
        stage: Stage::Mkfs,
        values: Values::Count { min: 1, max: 1024 },
        help: "allocation groups (each at least 1m; too many for the device is refused)",
        default: "4, fewer on devices under 4m",
        shown: true,
        set: |o, v| {
            o.mkfs.agcount = Some(narrow(number(v)?)?);
            Ok(())
        },
        show: |o| Some(o.mkfs.agcount.unwrap_or(DEFAULT_AGCOUNT).to_string()),
    },
    OptionDef {
        key: "cksum",
        stage: Stage::Mount,
        values: Values::Words(&["single", "split"]),
        help: "metadata CRC update: one pass over the zeroed field (XFS since 4.10) or head/zero/tail",
        default: "single",
        shown: true,
        set: |o, v| {
            o.mount.cksum = word(v)?.parse()?;
            Ok(())
        },
        show: |o| Some(o.mount.cksum.to_string()),
    },
    OptionDef {
        key: "crc",
        stage: Stage::Mount,
        values: Values::Words(&["crc32c", "fast", "soft"]),
        help: "CRC-32C engine: the crc32c crate, crc-fast (vector folding) or a byte table",
        default: "crc32c",
        shown: true,
        set: |o, v| {
            o.mount.crc = word(v)?.parse()?;
            Ok(())
        },
        show: |o| Some(o.mount.crc.to_string()),
    },
    OptionDef {
        key: "sync_wait",
        stage: Stage::Mount,
        values: Values::Words(&["wblist", "all"]),
        help: "what sync() waits on: the writeback list (Linux 4.8+) or every cached inode",
        default: "wblist",
        shown: true,
        set: |o, v| {
            o.mount.sync_wait = word(v)?.parse()?;
            Ok(())
        },
        show: |o| Some(o.mount.sync_wait.name().to_string()),
    },
    OptionDef {
        key: "logbufs",
        stage: Stage::Mount,
        values: Values::Count { min: 2, max: 8 },
        help: "in-core log buffers, as XFS's logbufs",
        default: "8",
        shown: true,
        set: |o, v| {
            o.mount.logbufs = narrow(number(v)?)?;
            Ok(())
        },
        show: |o| Some(o.mount.logbufs.to_string()),
    },
    OptionDef {
        key: "logbsize",
        stage: Stage::Mount,
        values: Values::Size {
            min: 16 * KIB,
            max: 256 * KIB,
            multiple_of: 1,
            power_of_two: true,
        },
        help: "size of each in-core log buffer, as XFS's logbsize",
        default: "32k",
        shown: true,
        set: |o, v| {
            o.mount.logbsize = narrow(number(v)?)?;
            Ok(())
        },
        show: |o| Some(format_size_spec(u64::from(o.mount.logbsize))),
    },
    OptionDef {
        key: "logsize",
        stage: Stage::Mkfs,
        values: Values::Size {
            min: MIN_LOG_BYTES,
            max: MAX_LOG_BYTES,
            multiple_of: 4 * KIB,
            power_of_two: false,
        },
        help: "size of the log (it must fit in the first allocation group)",
        default: "as mkfs.xfs: 1/2048 of the device, 64m..2g (1/64, from 1m, below 300m)",
        shown: false,
        set: |o, v| {
            o.mkfs.log_bytes = Some(number(v)?);
            Ok(())
        },
        show: |o| o.mkfs.log_bytes.map(format_size_spec),
    },
    OptionDef {
        key: "icache",
        stage: Stage::Mount,
        values: Values::Count {
            min: 64,
            max: u64::MAX,
        },
        help: "inodes kept cached before reclaim starts",
        default: "4000000",
        shown: false,
        set: |o, v| {
            o.mount.icache_limit = narrow(number(v)?)?;
            Ok(())
        },
        show: |o| Some(o.mount.icache_limit.to_string()),
    },
    OptionDef {
        key: "dcache",
        stage: Stage::Mount,
        values: Values::Count {
            min: 0,
            max: u64::MAX,
        },
        help: "directory lookups (positive and negative) kept in the dentry cache; 0 turns it off",
        default: "1000000",
        shown: false,
        set: |o, v| {
            o.mount.dcache_entries = narrow(number(v)?)?;
            Ok(())
        },
        show: |o| Some(o.mount.dcache_entries.to_string()),
    },
    OptionDef {
        key: "bufcache",
        stage: Stage::Mount,
        values: Values::Size {
            min: MIB,
            max: u64::MAX,
            multiple_of: 1,
            power_of_two: false,
        },
        help: "clean metadata buffers kept cached",
        default: "256m",
        shown: false,
        set: |o, v| {
            o.mount.bufcache_bytes = number(v)?;
            Ok(())
        },
        show: |o| Some(format_size_spec(o.mount.bufcache_bytes)),
    },
    OptionDef {
        key: "dirty",
        stage: Stage::Mount,
        values: Values::Size {
            min: MIB,
            max: u64::MAX,
            multiple_of: 1,
            power_of_two: false,
        },
        help: "dirty file data allowed before background write-back starts",
        default: "256m",
        shown: false,
        set: |o, v| {
            o.mount.dirty_bytes = number(v)?;
            Ok(())
        },
        show: |o| Some(format_size_spec(o.mount.dirty_bytes)),
    },
];

/// The definition of option `key`, if there is one.
pub fn option(key: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|d| d.key == key)
}

/// What is wrong with one `key=value`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OptionProblem {
    /// No option has this key.
    #[error("unknown option (known: {})", keys().join(", "))]
    UnknownKey,
    /// `key` alone, without `=value`.
    #[error("needs a value, e.g. {0}")]
    MissingValue(String),
    /// Not one of the option's words.
    #[error("expected {}", .0.join(" or "))]
    NotOneOf(&'static [&'static str]),
    /// Not a whole number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// Not a size.
    #[error("{0}")]
    BadSize(UnitError),
    /// Outside the option's range.
    #[error("must be {0}")]
    OutOfRange(String),
    /// The value passed its check but could not be stored (a table inconsistency).
    #[error("{0}")]
    Unstorable(String),
}

/// An option string that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad mount option '{option}': {problem}")]
pub struct OptionError {
    /// The `key=value` as given.
    pub option: String,
    /// What is wrong with it.
    pub problem: OptionProblem,
}

fn keys() -> Vec<&'static str> {
    OPTIONS.iter().map(|d| d.key).collect()
}

impl Options {
    /// Parse `key=value,key=value`. Empty is the defaults; a key given twice takes the last
    /// value, as mount(8) does.
    pub fn parse(s: &str) -> Result<Options, OptionError> {
        let mut o = Options::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let err = |problem| OptionError {
                option: item.to_string(),
                problem,
            };
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            let def = option(key).ok_or_else(|| err(OptionProblem::UnknownKey))?;
            let value = value.ok_or_else(|| {
                let example =
                    (def.show)(&Options::default()).unwrap_or_else(|| def.values.value_name());
                err(OptionProblem::MissingValue(format!("{key}={example}")))
            })?;
            let parsed = def.values.parse(value).map_err(err)?;
            (def.set)(&mut o, parsed).map_err(|e| err(OptionProblem::Unstorable(e)))?;
        }
        Ok(o)
    }
}

impl fmt::Display for Options {
    /// The switches a report's backend line names (`agcount=4,cksum=single,...`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for def in OPTIONS.iter().filter(|d| d.shown) {
            if let Some(v) = (def.show)(self) {
                if !first {
                    f.write_str(",")?;
                }
                write!(f, "{}={v}", def.key)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// One line for `-o`'s short help: every option's synopsis.
pub fn summary_help() -> String {
    let all: Vec<String> = OPTIONS.iter().map(OptionDef::synopsis).collect();
    format!(
        "labfs mkfs/mount options, comma separated: {} (--help gives ranges and defaults)",
        all.join(", ")
    )
}

/// `-o`'s long help: one line per option with what it does, its range and its default.
pub fn long_help() -> String {
    let width = OPTIONS
        .iter()
        .map(|d| d.synopsis().len())
        .max()
        .unwrap_or(0);
    let mut out = String::from(
        "labfs mkfs and mount options, comma separated (key=value,key=value). mkfs options \
         apply when the filesystem is made; a value out of range is refused.\n",
    );
    for def in &OPTIONS {
        let range = def
            .values
            .range()
            .map(|r| format!("{r}; "))
            .unwrap_or_default();
        let stage = match def.stage {
            Stage::Mkfs => "mkfs; ",
            Stage::Mount => "",
        };
        out.push_str(&format!(
            "\n  {:<width$}  {} ({stage}{range}default {})",
            def.synopsis(),
            def.help,
            def.default
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_switch() {
        let o = Options::parse(
            "cksum=split,crc=soft,sync_wait=all,logbufs=2,logbsize=256k,agcount=8,logsize=64m,\
             icache=1000,bufcache=2g,dirty=64m",
        )
        .unwrap();
        assert_eq!(o.mount.cksum, CksumMode::Split);
        assert_eq!(o.mount.crc, CrcEngine::Soft);
        assert_eq!(o.mount.sync_wait, SyncWait::All);
        assert_eq!((o.mount.logbufs, o.mount.logbsize), (2, 256 << 10));
        assert_eq!(
            (o.mkfs.agcount, o.mkfs.log_bytes),
            (Some(8), Some(64 << 20))
        );
        assert_eq!(o.mount.icache_limit, 1000);
        assert_eq!(
            (o.mount.bufcache_bytes, o.mount.dirty_bytes),
            (2 << 30, 64 << 20)
        );
        assert_eq!(Options::parse("").unwrap(), Options::default());
        assert_eq!(
            Options::parse("logbufs=3,logbufs=5").unwrap().mount.logbufs,
            5
        );
    }

    #[test]
    fn errors_name_the_option() {
        let e = Options::parse("cksum=single,frobnicate=1").unwrap_err();
        assert_eq!(e.option, "frobnicate=1");
        assert!(
            e.to_string()
                .contains("unknown option (known: agcount, cksum"),
            "{e}"
        );
        assert!(
            Options::parse("logbufs=9")
                .unwrap_err()
                .to_string()
                .contains("must be 2..8")
        );
        assert!(Options::parse("logbsize=48k").is_err());
        assert!(
            Options::parse("agcount=x")
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
        assert_eq!(
            Options::parse("cksum=double").unwrap_err().to_string(),
            "bad mount option 'cksum=double': expected single or split"
        );
        assert_eq!(
            Options::parse("cksum").unwrap_err().problem,
            OptionProblem::MissingValue("cksum=single".into())
        );
    }

    #[test]
    fn out_of_range_values_are_refused_not_clamped() {
        for (item, range) in [
            ("logsize=0", "256k..2g, a multiple of 4k"),
            ("logsize=1t", "256k..2g, a multiple of 4k"),
            ("logsize=1001k", "256k..2g, a multiple of 4k"),
            ("bufcache=0", "at least 1m"),
            ("bufcache=4k", "at least 1m"),
            ("dirty=0", "at least 1m"),
            ("icache=0", "at least 64"),
            ("agcount=0", "1..1024"),
            ("agcount=1025", "1..1024"),
            ("logbufs=1", "2..8"),
            ("logbsize=512k", "16k..256k, a power of two"),
        ] {
            let e = Options::parse(item).unwrap_err();
            assert_eq!(e.option, item);
            assert_eq!(e.problem, OptionProblem::OutOfRange(range.into()), "{item}");
        }
        // The edges are accepted.
        for item in ["logsize=256k", "logsize=2g", "bufcache=1m", "agcount=1024"] {
            assert!(Options::parse(item).is_ok(), "{item}");
        }
    }

    #[test]
    fn display_names_the_effective_switches() {
        assert_eq!(
            Options::default().to_string(),
            "agcount=4,cksum=single,crc=crc32c,sync_wait=wblist,logbufs=8,logbsize=32k"
        );
        let o = Options::parse("agcount=2,cksum=split,logbsize=64k").unwrap();
        assert_eq!(
            o.to_string(),
            "agcount=2,cksum=split,crc=crc32c,sync_wait=wblist,logbufs=8,logbsize=64k"
        );
    }

    #[test]
    fn every_value_an_option_shows_parses_back_to_the_same_options() {
        let o = Options::parse(
            "agcount=7,cksum=split,crc=fast,sync_wait=all,logbufs=3,logbsize=128k,logsize=12m,\
             icache=99,bufcache=3m,dirty=5m",
        )
        .unwrap();
        let text: Vec<String> = OPTIONS
            .iter()
            .filter_map(|d| d.value_in(&o).map(|v| format!("{}={v}", d.key)))
            .collect();
        assert_eq!(text.len(), OPTIONS.len());
        assert_eq!(Options::parse(&text.join(",")).unwrap(), o);
    }

    #[test]
    fn every_listed_word_is_accepted_and_shown_as_itself() {
        for def in &OPTIONS {
            let Values::Words(words) = def.values else {
                continue;
            };
            for w in words {
                let o = Options::parse(&format!("{}={w}", def.key)).unwrap();
                assert_eq!(def.value_in(&o).as_deref(), Some(*w), "{}", def.key);
            }
        }
    }

    #[test]
    fn help_is_derived_from_the_table() {
        let short = summary_help();
        let long = long_help();
        for def in &OPTIONS {
            assert!(short.contains(&def.synopsis()), "{short}");
            let line = long
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{}=", def.key)))
                .unwrap_or_else(|| panic!("{} in {long}", def.key));
            assert!(
                line.contains(def.help) && line.contains(def.default),
                "{line}"
            );
            if let Some(range) = def.values.range() {
                assert!(line.contains(&range), "{line}");
            }
        }
        assert!(short.contains("cksum=single|split") && short.contains("logbufs=N"));
    }

    #[test]
    fn the_readme_option_table_lists_every_key() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        let section = readme
            .split("\n## ")
            .find(|s| s.starts_with("Choosing the filesystem"))
            .expect("a 'Choosing the filesystem' section");
        let table: String = section
            .lines()
            .filter(|l| l.starts_with('|'))
            .collect::<Vec<_>>()
            .join("\n");
        let missing: Vec<&str> = OPTIONS
            .iter()
            .map(|d| d.key)
            .filter(|k| !table.contains(&format!("`{k}=")))
            .collect();
        assert!(
            missing.is_empty(),
            "README's option table lacks {missing:?}"
        );
    }
}
