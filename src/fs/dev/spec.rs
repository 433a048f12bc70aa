//! The `--device` spec: which block device labfs runs on, as one command-line word.
//!
//! # Grammar
//!
//! A spec is a comma-separated list of items. The first item names the device kind; the items
//! after it are that device's options. Inside a stripe, every item that starts with `mem` or
//! `file:` begins a new member device, and the options after it belong to that member:
//!
//! ```text
//! spec    = mem | file | stripe
//! mem     = "mem" [ ":" SIZE ]            { "," latency }
//! file    = "file:" PATH                  { "," ( "size=" SIZE | "direct" | latency ) }
//! stripe  = "stripe:" N [ ",su=" SIZE ] "," member { "," member }
//! member  = mem | file                    (a stripe member cannot itself be a stripe)
//! latency = "lat=" DURATION | "bw=" RATE | "flush=" DURATION
//! ```
//!
//! - `mem` alone is a 1 GiB memory device (the default `--device`).
//! - A stripe lists either one member, repeated N times, or exactly N members. Repeating a
//!   `file:` member is refused (the same file N times is not a stripe).
//! - `su=` (stripe unit, default 64 KiB) belongs to the stripe and comes before the first
//!   member; latency options belong to a member and come after it, because each member has
//!   its own queue (that is what makes a write split over members finish with the slowest).
//! - In a PATH, write a comma as `\,` and a backslash as `\\`.
//! - Sizes, durations and rates use [`crate::units`]: binary multiples (`64k` = 65536),
//!   a bare duration is microseconds, a rate is bytes per second (`2g` = 2 GiB/s).
//!   Sizes must be multiples of 512; a device must hold at least 1 MiB, the smallest labfs
//!   ([`MIN_LABFS_SIZE`]); a stripe member at least one 4 KiB block.
//!
//! # Examples
//!
//! ```text
//! mem                                   1 GiB in memory (the default)
//! mem:4g,lat=20us,bw=2g,flush=100us     4 GiB, 20 us per I/O, 2 GiB/s, 100 us per cache flush
//! file:/var/tmp/lab.img,size=8g         a regular file, created or extended to 8 GiB
//! file:/dev/nvme0n1p3,direct            a block device (its whole size), with O_DIRECT
//! stripe:6,su=64k,mem:1g                RAID0 over six 1 GiB memory devices (6 GiB)
//! stripe:4,mem:1g,lat=50us,bw=500m      four members, each with its own 500 MiB/s queue
//! stripe:2,file:/a.img,file:/b.img      RAID0 over two existing files, 64 KiB stripe unit
//! ```
//!
//! [`DeviceSpec`]'s `Display` prints the canonical form, which parses back to the same value
//! (sizes in the largest exact unit, `su=` always spelled out, a repeated member once).
//! Errors are one line naming the item that is wrong.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use thiserror::Error;

use crate::fs::dev::mem::MAX_MEM_SIZE;
use crate::fs::dev::{LatencyParams, MIN_DEVICE_SIZE, SECTOR_SIZE};
use crate::units::{
    UnitError, format_duration_spec, format_size_iec, format_size_spec, parse_duration, parse_rate,
    parse_size,
};

/// Size of `mem` when the spec gives none.
pub const DEFAULT_MEM_SIZE: u64 = 1 << 30;
/// The smallest device labfs can be made on: one allocation group of 256 4-KiB blocks. The
/// grammar refuses a smaller `mem:`/`size=` (or stripe) where it is typed, and mkfs checks the
/// same constant, so the two can never disagree. (A stripe member may be smaller, down to one
/// 4 KiB block, as long as the whole stripe holds this much.)
pub const MIN_LABFS_SIZE: u64 = 1 << 20;
/// Stripe unit when the spec gives none (md's and XFS's usual 64 KiB).
pub const DEFAULT_STRIPE_UNIT: u64 = 64 << 10;
/// Most members a stripe may have.
pub const MAX_STRIPE_MEMBERS: usize = 256;

/// Long help for `--device` (the flag itself is defined once, in the binaries' layer, `cli::backend_args`).
pub const DEVICE_HELP: &str = "\
The block device labfs runs on.

  mem[:SIZE]                 memory, sparse, with a volatile write cache (default mem:1g)
  file:PATH[,size=SIZE][,direct]
                             a regular file (size= creates or extends it) or a block device;
                             direct = O_DIRECT; in PATH write ',' as '\\,' and '\\' as '\\\\'
  stripe:N[,su=SIZE],MEMBER[,MEMBER...]
                             RAID0 over N members (stripe unit su, default 64k); give one
                             member to repeat it N times, or exactly N members
Latency model, after any mem or file device (inside a stripe: after each member):
  lat=DURATION               per-I/O latency (overlapping)
  bw=RATE                    transfer rate in bytes/s (transfers queue one after another)
  flush=DURATION             cost of a cache flush (after outstanding I/O completes)

Examples:
  mem:4g,lat=20us,bw=2g,flush=100us
  file:/var/tmp/lab.img,size=8g
  stripe:6,su=64k,mem:1g
  stripe:2,file:/a.img,file:/b.img";

/// A `mem` device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemSpec {
    /// Size in bytes.
    pub size: u64,
    /// Latency model (all zero: none).
    pub latency: LatencyParams,
}

impl Default for MemSpec {
    fn default() -> Self {
        MemSpec {
            size: DEFAULT_MEM_SIZE,
            latency: LatencyParams::NONE,
        }
    }
}

/// A `file:` device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// The regular file or block device.
    pub path: PathBuf,
    /// `size=`: create or extend a regular file to this size; the device is this big.
    pub size: Option<u64>,
    /// `direct`: open with `O_DIRECT`.
    pub direct: bool,
    /// Latency model (all zero: none).
    pub latency: LatencyParams,
}

/// One member of a stripe: any device but a stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberSpec {
    /// A memory member.
    Mem(MemSpec),
    /// A file member.
    File(FileSpec),
}

/// A `stripe:` device (RAID0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeSpec {
    /// Stripe unit in bytes.
    pub su: u64,
    /// The members, in stripe order (a repeated member appears N times).
    pub members: Vec<MemberSpec>,
}

/// A parsed `--device` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    /// `mem[:SIZE]`.
    Mem(MemSpec),
    /// `file:PATH`.
    File(FileSpec),
    /// `stripe:N,...`.
    Stripe(StripeSpec),
}

impl Default for DeviceSpec {
    fn default() -> Self {
        DeviceSpec::Mem(MemSpec::default())
    }
}

impl DeviceSpec {
    /// The files the device is made of (a `file:` device, or a stripe's file members), in
    /// order (a member repeated in the stripe is listed each time).
    pub fn file_paths(&self) -> Vec<&Path> {
        match self {
            DeviceSpec::Mem(_) => Vec::new(),
            DeviceSpec::File(f) => vec![&f.path],
            DeviceSpec::Stripe(s) => s
                .members
                .iter()
                .filter_map(|m| match m {
                    MemberSpec::File(f) => Some(f.path.as_path()),
                    MemberSpec::Mem(_) => None,
                })
                .collect(),
        }
    }
}

/// A spec that could not be parsed; each message names the item that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// Nothing given.
    #[error("empty device spec (expected e.g. mem:1g, file:PATH or stripe:N,...)")]
    Empty,
    /// Two commas in a row, or a comma at either end.
    #[error("empty item in '{spec}' (two commas in a row, or a comma at the end)")]
    EmptyItem {
        /// The whole spec.
        spec: String,
    },
    /// A backslash with nothing after it.
    #[error("'{item}' ends with a lone '\\' (in a path write ',' as '\\,' and '\\' as '\\\\')")]
    TrailingBackslash {
        /// The item as typed.
        item: String,
    },
    /// The first item is not a device kind.
    #[error("unknown device kind '{kind}' (expected mem, file, stripe)")]
    UnknownKind {
        /// What was given.
        kind: String,
    },
    /// A size that does not parse or breaks a rule.
    #[error("bad size '{value}' in '{item}': {reason}")]
    BadSize {
        /// The size as typed.
        value: String,
        /// The item it was in.
        item: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A duration that does not parse.
    #[error("bad duration '{value}' in '{item}': {reason}")]
    BadDuration {
        /// The duration as typed.
        value: String,
        /// The item it was in.
        item: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A rate that does not parse or is zero.
    #[error("bad rate '{value}' in '{item}': {reason}")]
    BadRate {
        /// The rate as typed.
        value: String,
        /// The item it was in.
        item: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A stripe member count that does not parse or is out of range.
    #[error("bad stripe count '{value}' in '{item}': {reason}")]
    BadCount {
        /// The count as typed.
        value: String,
        /// The item it was in.
        item: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An option this device kind does not have.
    #[error("unknown option '{option}' in '{item}' (expected {expected})")]
    UnknownOption {
        /// The option name.
        option: String,
        /// The item as typed.
        item: String,
        /// The options this kind accepts.
        expected: &'static str,
    },
    /// The same option twice for one device.
    #[error("option '{option}' given twice (again in '{item}')")]
    DuplicateOption {
        /// The option name.
        option: String,
        /// The second occurrence.
        item: String,
    },
    /// A flag given a value.
    #[error("option '{option}' takes no value (in '{item}')")]
    UnexpectedValue {
        /// The option name.
        option: String,
        /// The item as typed.
        item: String,
    },
    /// An option given without its value.
    #[error("option '{option}' needs a value, e.g. '{example}'")]
    MissingValue {
        /// The option name.
        option: String,
        /// How it is written.
        example: &'static str,
    },
    /// `file` without a path.
    #[error("missing path in '{item}' (expected file:PATH)")]
    MissingPath {
        /// The item as typed.
        item: String,
    },
    /// `stripe` without a count.
    #[error("missing stripe count in '{item}' (expected stripe:N,...)")]
    MissingCount {
        /// The item as typed.
        item: String,
    },
    /// A stripe with no member device.
    #[error("'{item}' has no member device (expected e.g. {item},mem:1g)")]
    NoMembers {
        /// The stripe item as typed.
        item: String,
    },
    /// A stripe listing neither one nor N members.
    #[error(
        "stripe:{count} lists {given} member devices (give one to repeat {count} times, or exactly {count})"
    )]
    MemberCount {
        /// N.
        count: usize,
        /// How many members were listed.
        given: usize,
    },
    /// A stripe inside a stripe.
    #[error("a stripe member cannot be a stripe ('{item}')")]
    NestedStripe {
        /// The inner stripe item.
        item: String,
    },
    /// Two stripe members naming the same file.
    #[error("stripe members {first} and {second} are the same file '{path}'", path = .path.display())]
    SameFile {
        /// 1-based index of the first.
        first: usize,
        /// 1-based index of the second.
        second: usize,
        /// The file.
        path: PathBuf,
    },
    /// A latency option placed on a stripe instead of a member.
    #[error(
        "latency option '{item}' must follow a stripe member, not the stripe (e.g. stripe:2,mem:1g,{item}): each member has its own queue"
    )]
    LatencyOnStripe {
        /// The option item.
        item: String,
    },
    /// A stripe option placed after a member.
    #[error(
        "stripe option '{item}' must come before the first member (e.g. stripe:2,{item},mem:1g)"
    )]
    StripeOptionAfterMember {
        /// The option item.
        item: String,
    },
    /// A stripe that holds less than labfs needs.
    #[error(
        "'{spec}' holds {}, less than the {} labfs needs (N x the smallest member, in whole stripe units)",
        format_size_iec(*size),
        format_size_iec(MIN_LABFS_SIZE)
    )]
    StripeTooSmall {
        /// The stripe spec as typed.
        spec: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A second device outside a stripe.
    #[error("extra device '{item}' (several devices only go inside stripe:N,...)")]
    ExtraDevice {
        /// The second device's item.
        item: String,
    },
}

/// One comma-separated item: as typed (for errors) and with escapes resolved.
#[derive(Debug, Clone)]
struct Item {
    raw: String,
    text: String,
}

/// Split on commas that are not escaped with a backslash.
fn split_items(spec: &str) -> Result<Vec<Item>, SpecError> {
    let mut items = Vec::new();
    let mut raw = String::new();
    let mut text = String::new();
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => {
                    raw.push(c);
                    raw.push(next);
                    text.push(next);
                }
                None => {
                    raw.push(c);
                    return Err(SpecError::TrailingBackslash { item: raw });
                }
            },
            ',' => {
                if raw.is_empty() {
                    return Err(SpecError::EmptyItem {
                        spec: spec.to_string(),
                    });
                }
                items.push(Item {
                    raw: std::mem::take(&mut raw),
                    text: std::mem::take(&mut text),
                });
            }
            c => {
                raw.push(c);
                text.push(c);
            }
        }
    }
    if raw.is_empty() {
        return Err(SpecError::EmptyItem {
            spec: spec.to_string(),
        });
    }
    items.push(Item { raw, text });
    Ok(items)
}

/// The kind word of an item (`mem`, `file`, `stripe`, ...) and what follows its colon.
fn head(item: &Item) -> (&str, Option<&str>) {
    match item.text.split_once(':') {
        Some((kind, arg)) => (kind, Some(arg)),
        None => (item.text.as_str(), None),
    }
}

/// Whether an item starts a device (as opposed to being an option).
fn is_device_item(item: &Item) -> bool {
    matches!(head(item).0, "mem" | "file" | "stripe")
}

fn unit_reason(e: UnitError) -> String {
    e.to_string()
}

/// Why `n` bytes cannot be a whole labfs device (not whole 512-byte sectors, or under
/// [`MIN_LABFS_SIZE`]), or `None` when they can: the check every size of a whole device
/// given on a command line goes through (`--device mem:SIZE`, `labfs mkfs -s SIZE`).
pub fn whole_device_size_problem(n: u64) -> Option<String> {
    if !n.is_multiple_of(SECTOR_SIZE) {
        return Some("not a multiple of 512".into());
    }
    (n < MIN_LABFS_SIZE).then(|| {
        format!(
            "smaller than the {} labfs needs",
            format_size_iec(MIN_LABFS_SIZE)
        )
    })
}

/// Parse a device size (`mem:SIZE`, `size=SIZE`): a multiple of 512, at least
/// [`MIN_LABFS_SIZE`] for a whole device, at least one 4 KiB block for a stripe member.
fn device_size(
    value: &str,
    item: &Item,
    max: Option<u64>,
    in_stripe: bool,
) -> Result<u64, SpecError> {
    let bad = |reason: String| SpecError::BadSize {
        value: value.to_string(),
        item: item.raw.clone(),
        reason,
    };
    let n = parse_size(value).map_err(|e| bad(unit_reason(e)))?;
    if n % SECTOR_SIZE != 0 {
        return Err(bad("not a multiple of 512".into()));
    }
    if in_stripe && n < MIN_DEVICE_SIZE {
        return Err(bad(format!(
            "smaller than the {} minimum of a stripe member",
            format_size_iec(MIN_DEVICE_SIZE)
        )));
    }
    if !in_stripe && let Some(reason) = whole_device_size_problem(n) {
        return Err(bad(reason));
    }
    if let Some(max) = max.filter(|&m| n > m) {
        return Err(bad(format!(
            "larger than the {} a mem device can hold",
            format_size_iec(max)
        )));
    }
    Ok(n)
}

fn stripe_unit(value: &str, item: &Item) -> Result<u64, SpecError> {
    let bad = |reason: String| SpecError::BadSize {
        value: value.to_string(),
        item: item.raw.clone(),
        reason,
    };
    let n = parse_size(value).map_err(|e| bad(unit_reason(e)))?;
    if n == 0 || n % SECTOR_SIZE != 0 {
        return Err(bad(
            "a stripe unit must be a positive multiple of 512".into()
        ));
    }
    Ok(n)
}

/// Split `key=value`; a bare word is a flag.
fn option(item: &Item) -> (&str, Option<&str>) {
    match item.text.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (item.text.as_str(), None),
    }
}

/// Apply one latency option if `key` is one; `Ok(false)` if it is not a latency option.
fn latency_option(
    lat: &mut LatencyParams,
    seen: &mut Vec<String>,
    key: &str,
    value: Option<&str>,
    item: &Item,
) -> Result<bool, SpecError> {
    let example = match key {
        "lat" => "lat=20us",
        "bw" => "bw=2g",
        "flush" => "flush=100us",
        _ => return Ok(false),
    };
    let value = value.ok_or_else(|| SpecError::MissingValue {
        option: key.to_string(),
        example,
    })?;
    note_seen(seen, key, item)?;
    let duration = |v: &str| {
        parse_duration(v).map_err(|e| SpecError::BadDuration {
            value: v.to_string(),
            item: item.raw.clone(),
            reason: unit_reason(e),
        })
    };
    match key {
        "lat" => lat.lat = duration(value)?,
        "flush" => lat.flush = duration(value)?,
        _ => {
            let bad = |reason: String| SpecError::BadRate {
                value: value.to_string(),
                item: item.raw.clone(),
                reason,
            };
            let bw = parse_rate(value).map_err(|e| bad(unit_reason(e)))?;
            if bw == 0 {
                return Err(bad("must be greater than zero".into()));
            }
            lat.bw = Some(bw);
        }
    }
    Ok(true)
}

fn note_seen(seen: &mut Vec<String>, key: &str, item: &Item) -> Result<(), SpecError> {
    if seen.iter().any(|k| k == key) {
        return Err(SpecError::DuplicateOption {
            option: key.to_string(),
            item: item.raw.clone(),
        });
    }
    seen.push(key.to_string());
    Ok(())
}

/// Whether a `key[=value]` item is a latency option (for placement errors in stripes).
fn is_latency_key(key: &str) -> bool {
    matches!(key, "lat" | "bw" | "flush")
}

/// Parse a `mem` or `file:` device starting at `items[0]`; stop at the next device item.
/// Returns the device and how many items it used. `in_stripe` only changes error wording.
fn parse_member(items: &[Item], in_stripe: bool) -> Result<(MemberSpec, usize), SpecError> {
    let Some(first) = items.first() else {
        return Err(SpecError::Empty);
    };
    let (kind, arg) = head(first);
    let mut used = 1;
    let options = || items[1..].iter().take_while(|i| !is_device_item(i));
    let mut seen = Vec::new();
    match kind {
        "mem" => {
            let size = match arg {
                Some(v) => device_size(v, first, Some(MAX_MEM_SIZE), in_stripe)?,
                None => DEFAULT_MEM_SIZE,
            };
            let mut latency = LatencyParams::NONE;
            for item in options() {
                used += 1;
                let (key, value) = option(item);
                if !latency_option(&mut latency, &mut seen, key, value, item)? {
                    return Err(misplaced_or_unknown(
                        key,
                        item,
                        in_stripe,
                        "lat, bw, flush; the size goes in mem:SIZE",
                    ));
                }
            }
            Ok((MemberSpec::Mem(MemSpec { size, latency }), used))
        }
        "file" => {
            let path = match arg {
                Some(p) if !p.is_empty() => PathBuf::from(p),
                _ => {
                    return Err(SpecError::MissingPath {
                        item: first.raw.clone(),
                    });
                }
            };
            let mut spec = FileSpec {
                path,
                size: None,
                direct: false,
                latency: LatencyParams::NONE,
            };
            for item in options() {
                used += 1;
                let (key, value) = option(item);
                if latency_option(&mut spec.latency, &mut seen, key, value, item)? {
                    continue;
                }
                match (key, value) {
                    ("size", Some(v)) => {
                        note_seen(&mut seen, key, item)?;
                        spec.size = Some(device_size(v, item, None, in_stripe)?);
                    }
                    ("size", None) => {
                        return Err(SpecError::MissingValue {
                            option: key.to_string(),
                            example: "size=8g",
                        });
                    }
                    ("direct", None) => {
                        note_seen(&mut seen, key, item)?;
                        spec.direct = true;
                    }
                    ("direct", Some(_)) => {
                        return Err(SpecError::UnexpectedValue {
                            option: key.to_string(),
                            item: item.raw.clone(),
                        });
                    }
                    _ => {
                        return Err(misplaced_or_unknown(
                            key,
                            item,
                            in_stripe,
                            "size, direct, lat, bw, flush",
                        ));
                    }
                }
            }
            Ok((MemberSpec::File(spec), used))
        }
        "stripe" if in_stripe => Err(SpecError::NestedStripe {
            item: first.raw.clone(),
        }),
        other => Err(SpecError::UnknownKind {
            kind: other.to_string(),
        }),
    }
}

/// The error for an option a member does not have: `su=` after a member is a placement
/// mistake, anything else is unknown.
fn misplaced_or_unknown(
    key: &str,
    item: &Item,
    in_stripe: bool,
    expected: &'static str,
) -> SpecError {
    if in_stripe && key == "su" {
        SpecError::StripeOptionAfterMember {
            item: item.raw.clone(),
        }
    } else {
        SpecError::UnknownOption {
            option: key.to_string(),
            item: item.raw.clone(),
            expected,
        }
    }
}

fn parse_stripe(items: &[Item]) -> Result<StripeSpec, SpecError> {
    let first = &items[0];
    let count_text = match head(first).1 {
        Some(c) if !c.is_empty() => c,
        _ => {
            return Err(SpecError::MissingCount {
                item: first.raw.clone(),
            });
        }
    };
    let bad_count = |reason: &str| SpecError::BadCount {
        value: count_text.to_string(),
        item: first.raw.clone(),
        reason: reason.to_string(),
    };
    let count: usize = count_text
        .parse()
        .map_err(|_| bad_count("not a whole number"))?;
    if count == 0 {
        return Err(bad_count("a stripe needs at least 1 member"));
    }
    if count > MAX_STRIPE_MEMBERS {
        return Err(bad_count("at most 256 members"));
    }

    let mut su = None;
    let mut i = 1;
    while let Some(item) = items.get(i).filter(|it| !is_device_item(it)) {
        let (key, value) = option(item);
        match (key, value) {
            ("su", Some(v)) => {
                if su.is_some() {
                    return Err(SpecError::DuplicateOption {
                        option: key.to_string(),
                        item: item.raw.clone(),
                    });
                }
                su = Some(stripe_unit(v, item)?);
            }
            ("su", None) => {
                return Err(SpecError::MissingValue {
                    option: key.to_string(),
                    example: "su=64k",
                });
            }
            (k, _) if is_latency_key(k) => {
                return Err(SpecError::LatencyOnStripe {
                    item: item.raw.clone(),
                });
            }
            _ => {
                return Err(SpecError::UnknownOption {
                    option: key.to_string(),
                    item: item.raw.clone(),
                    expected: "su before the members",
                });
            }
        }
        i += 1;
    }

    let mut listed = Vec::new();
    while i < items.len() {
        let (member, used) = parse_member(&items[i..], true)?;
        listed.push(member);
        i += used;
    }
    let members = match listed.len() {
        0 => {
            return Err(SpecError::NoMembers {
                item: first.raw.clone(),
            });
        }
        1 => {
            let only = listed.remove(0);
            if count > 1
                && let MemberSpec::File(f) = &only
            {
                return Err(SpecError::SameFile {
                    first: 1,
                    second: 2,
                    path: f.path.clone(),
                });
            }
            vec![only; count]
        }
        n if n == count => listed,
        given => return Err(SpecError::MemberCount { count, given }),
    };
    for (a, ma) in members.iter().enumerate() {
        for (b, mb) in members.iter().enumerate().skip(a + 1) {
            if let (MemberSpec::File(fa), MemberSpec::File(fb)) = (ma, mb)
                && fa.path == fb.path
            {
                return Err(SpecError::SameFile {
                    first: a + 1,
                    second: b + 1,
                    path: fa.path.clone(),
                });
            }
        }
    }
    let stripe = StripeSpec {
        su: su.unwrap_or(DEFAULT_STRIPE_UNIT),
        members,
    };
    if let Some(size) = stripe.size().filter(|&n| n < MIN_LABFS_SIZE) {
        return Err(SpecError::StripeTooSmall {
            spec: items
                .iter()
                .map(|i| i.raw.as_str())
                .collect::<Vec<_>>()
                .join(","),
            size,
        });
    }
    Ok(stripe)
}

impl StripeSpec {
    /// The stripe's size when every member's size is known from the spec: N times the
    /// smallest member, rounded down to whole stripe units (as the stripe device sizes
    /// itself).
    pub fn size(&self) -> Option<u64> {
        let mut smallest = u64::MAX;
        for m in &self.members {
            let size = match m {
                MemberSpec::Mem(mem) => mem.size,
                MemberSpec::File(f) => f.size?,
            };
            smallest = smallest.min(size);
        }
        let su = self.su.max(1);
        Some(smallest / su * su * self.members.len() as u64)
    }
}

impl FromStr for DeviceSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SpecError::Empty);
        }
        let items = split_items(s)?;
        match head(&items[0]).0 {
            "stripe" => Ok(DeviceSpec::Stripe(parse_stripe(&items)?)),
            _ => {
                let (member, used) = parse_member(&items, false)?;
                if let Some(extra) = items.get(used) {
                    return Err(SpecError::ExtraDevice {
                        item: extra.raw.clone(),
                    });
                }
                Ok(match member {
                    MemberSpec::Mem(m) => DeviceSpec::Mem(m),
                    MemberSpec::File(f) => DeviceSpec::File(f),
                })
            }
        }
    }
}

/// Write the latency options (only those set) as `,lat=..,bw=..,flush=..`.
fn write_latency(f: &mut fmt::Formatter<'_>, l: &LatencyParams) -> fmt::Result {
    if !l.lat.is_zero() {
        write!(f, ",lat={}", format_duration_spec(l.lat))?;
    }
    if let Some(bw) = l.bw {
        write!(f, ",bw={}", format_size_spec(bw))?;
    }
    if !l.flush.is_zero() {
        write!(f, ",flush={}", format_duration_spec(l.flush))?;
    }
    Ok(())
}

fn escape_path(path: &std::path::Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        if c == ',' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for MemSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mem:{}", format_size_spec(self.size))?;
        write_latency(f, &self.latency)
    }
}

impl fmt::Display for FileSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file:{}", escape_path(&self.path))?;
        if let Some(size) = self.size {
            write!(f, ",size={}", format_size_spec(size))?;
        }
        if self.direct {
            f.write_str(",direct")?;
        }
        write_latency(f, &self.latency)
    }
}

impl fmt::Display for MemberSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberSpec::Mem(m) => m.fmt(f),
            MemberSpec::File(m) => m.fmt(f),
        }
    }
}

impl fmt::Display for StripeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stripe:{},su={}",
            self.members.len(),
            format_size_spec(self.su)
        )?;
        match self.members.split_first() {
            Some((first, rest)) if rest.iter().all(|m| m == first) => write!(f, ",{first}"),
            _ => {
                for m in &self.members {
                    write!(f, ",{m}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Mem(m) => m.fmt(f),
            DeviceSpec::File(m) => m.fmt(f),
            DeviceSpec::Stripe(s) => s.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_resolve_in_items() {
        let items = split_items(r"file:/a\,b\\c,size=1g").expect("valid");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].text, r"file:/a,b\c");
        assert_eq!(items[0].raw, r"file:/a\,b\\c");
    }
}
