//! The option table: every job option fiolike implements, with fio 3.33's name, alias,
//! priority and argument rules, and the code that applies a `key=value` to a [`JobSpec`].
//!
//! Lookup has three outcomes, as the issue asks: an implemented option is applied with fio's
//! semantics; an option fio has but fiolike does not implement is refused by name
//! ([`OptionError::NotImplemented`]), never silently ignored; anything else gets fio's
//! `Bad option <...>` with the closest fio option name, using fio's own rule (Levenshtein
//! distance at most half the name's length, `string_distance_ok`).
//!
//! fio applies a section's options sorted by priority (`kb_base` and `unit_base` first, so a
//! size in the same section already uses the new base; `filename` last), and records each
//! under its canonical name for the JSON "job options"; [`sort_by_priority`] and
//! [`apply_option`] do the same.

use std::path::PathBuf;

use thiserror::Error;

use super::fio_names::FIO_OPTION_NAMES;
use super::job::{Fallocate, IoEngineKind, JobSpec, LogRequest, RwMode, RwModifier, UnitBase};
use super::number::{
    KbBase, NumberError, SizeValue, TimeUnit, parse_bool, parse_bytes, parse_int, parse_size,
    parse_size_range, parse_time_us, split_directions,
};

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgRule {
    /// `key=value` only.
    Required,
    /// May stand bare (fio's "set" options such as `time_based`; bare means 1).
    OptionalFlag,
    /// May stand bare with a meaning of its own (`write_bw_log` alone: use the job name).
    OptionalValue,
}

/// The options fiolike implements.
#[allow(
    missing_docs,
    reason = "each variant is the fio option of the same name"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Name,
    Description,
    Rw,
    RwMixRead,
    RwMixWrite,
    Bs,
    Size,
    FileSize,
    NrFiles,
    IoSize,
    Offset,
    Fsync,
    Fdatasync,
    EndFsync,
    FsyncOnClose,
    Fallocate,
    Direct,
    Buffered,
    IoEngine,
    IoDepth,
    TimeBased,
    Runtime,
    RampTime,
    Directory,
    Filename,
    NumJobs,
    GroupReporting,
    NewGroup,
    Stonewall,
    Thread,
    CreateOnOpen,
    CreateFsync,
    Unlink,
    UnlinkEachLoop,
    RandRepeat,
    RandSeed,
    NoRandomMap,
    Overwrite,
    KbBase,
    UnitBase,
    Loops,
    WriteBwLog,
    WriteLatLog,
    WriteIopsLog,
    LogAvgMsec,
    PerJobLogs,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    /// fio's name.
    pub name: &'static str,
    /// fio's alias, if any.
    pub alias: Option<&'static str>,
    /// Which option.
    pub opt: Opt,
    /// fio's priority (higher applies first).
    pub prio: i8,
    /// How it takes its value.
    pub arg: ArgRule,
}

const fn def(name: &'static str, opt: Opt, arg: ArgRule) -> OptionDef {
    OptionDef {
        name,
        alias: None,
        opt,
        prio: 0,
        arg,
    }
}

const fn alias(name: &'static str, a: &'static str, opt: Opt, arg: ArgRule) -> OptionDef {
    OptionDef {
        name,
        alias: Some(a),
        opt,
        prio: 0,
        arg,
    }
}

use ArgRule::{OptionalFlag, OptionalValue, Required};

/// Every implemented option.
pub const OPTIONS: &[OptionDef] = &[
    def("name", Opt::Name, Required),
    def("description", Opt::Description, Required),
    alias("rw", "readwrite", Opt::Rw, Required),
    def("rwmixread", Opt::RwMixRead, Required),
    def("rwmixwrite", Opt::RwMixWrite, Required),
    alias("bs", "blocksize", Opt::Bs, Required),
    def("size", Opt::Size, Required),
    def("filesize", Opt::FileSize, Required),
    alias("nrfiles", "nr_files", Opt::NrFiles, Required),
    alias("io_size", "io_limit", Opt::IoSize, Required),
    alias("offset", "fileoffset", Opt::Offset, Required),
    def("fsync", Opt::Fsync, Required),
    def("fdatasync", Opt::Fdatasync, Required),
    def("end_fsync", Opt::EndFsync, Required),
    def("fsync_on_close", Opt::FsyncOnClose, Required),
    def("fallocate", Opt::Fallocate, Required),
    def("direct", Opt::Direct, Required),
    def("buffered", Opt::Buffered, Required),
    def("ioengine", Opt::IoEngine, Required),
    def("iodepth", Opt::IoDepth, Required),
    def("time_based", Opt::TimeBased, OptionalFlag),
    alias("runtime", "timeout", Opt::Runtime, Required),
    def("ramp_time", Opt::RampTime, Required),
    def("directory", Opt::Directory, Required),
    OptionDef {
        name: "filename",
        alias: None,
        opt: Opt::Filename,
        prio: -1,
        arg: Required,
    },
    def("numjobs", Opt::NumJobs, Required),
    def("group_reporting", Opt::GroupReporting, OptionalFlag),
    def("new_group", Opt::NewGroup, OptionalFlag),
    alias(
        "stonewall",
        "wait_for_previous",
        Opt::Stonewall,
        OptionalFlag,
    ),
    def("thread", Opt::Thread, OptionalFlag),
    def("create_on_open", Opt::CreateOnOpen, Required),
    def("create_fsync", Opt::CreateFsync, Required),
    def("unlink", Opt::Unlink, Required),
    def("unlink_each_loop", Opt::UnlinkEachLoop, Required),
    def("randrepeat", Opt::RandRepeat, Required),
    def("randseed", Opt::RandSeed, Required),
    def("norandommap", Opt::NoRandomMap, OptionalFlag),
    def("overwrite", Opt::Overwrite, Required),
    OptionDef {
        name: "kb_base",
        alias: None,
        opt: Opt::KbBase,
        prio: 1,
        arg: Required,
    },
    OptionDef {
        name: "unit_base",
        alias: None,
        opt: Opt::UnitBase,
        prio: 1,
        arg: Required,
    },
    def("loops", Opt::Loops, Required),
    def("write_bw_log", Opt::WriteBwLog, OptionalValue),
    def("write_lat_log", Opt::WriteLatLog, OptionalValue),
    def("write_iops_log", Opt::WriteIopsLog, OptionalValue),
    def("log_avg_msec", Opt::LogAvgMsec, Required),
    def("per_job_logs", Opt::PerJobLogs, Required),
];

/// The I/O engines fio 3.33 ships that fiolike does not implement (named in the refusal).
const FIO_ENGINES_NOT_IMPLEMENTED: &[&str] = &[
    "vsync",
    "pvsync2",
    "posixaio",
    "mmap",
    "splice",
    "sg",
    "null",
    "net",
    "netsplice",
    "cpuio",
    "rdma",
    "e4defrag",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "exec",
    "io_uring_cmd",
    "nbd",
    "http",
    "rbd",
    "rados",
    "gfapi",
    "gfapi_async",
    "libhdfs",
    "mtd",
    "pmemblk",
    "dev-dax",
    "libpmem",
    "libzbc",
    "xnvme",
    "windowsaio",
    "solarisaio",
    "guasi",
];

/// A `key=value` fio (or fiolike) refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OptionError {
    /// Not a fio option at all; `suggestion` is fio's "Did you mean" guess.
    #[error("Bad option <{input}>{}", suggestion.map(|s| format!("\nDid you mean {s}?")).unwrap_or_default())]
    Bad {
        /// The text as given.
        input: String,
        /// The closest fio option name, if close enough.
        suggestion: Option<&'static str>,
    },
    /// A fio option that fiolike does not implement.
    #[error("fiolike: option <{name}> is a fio option that fiolike does not implement")]
    NotImplemented {
        /// The option.
        name: String,
    },
    /// An option that needs a value was given bare.
    #[error("Option {name} requires an argument")]
    NeedsArgument {
        /// The option.
        name: &'static str,
    },
    /// The value could not be used.
    #[error("fio: failed parsing {input}: {reason}")]
    BadValue {
        /// The `key=value` as given.
        input: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// What a name is.
#[derive(Debug, Clone, Copy)]
pub enum Lookup {
    /// An implemented option.
    Implemented(&'static OptionDef),
    /// A fio option fiolike does not implement.
    NotImplemented,
    /// Not a fio option.
    Unknown,
}

/// Find an option by name or alias.
pub fn lookup(name: &str) -> Lookup {
    if let Some(d) = OPTIONS
        .iter()
        .find(|d| d.name == name || d.alias == Some(name))
    {
        return Lookup::Implemented(d);
    }
    if FIO_OPTION_NAMES.binary_search(&name).is_ok() {
        Lookup::NotImplemented
    } else {
        Lookup::Unknown
    }
}

/// fio's `string_distance`: Levenshtein distance.
pub fn string_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = (prev[j + 1] + 1).min(cur[j] + 1).min(sub);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// fio's "Did you mean" guess among all fio option names: the closest one, if within half
/// the typed name's length.
pub fn closest_option(typed: &str) -> Option<&'static str> {
    let name = typed.split('=').next().unwrap_or(typed);
    if name.is_empty() {
        return None;
    }
    let mut best: Option<(&'static str, usize)> = None;
    for candidate in FIO_OPTION_NAMES {
        let d = string_distance(name, candidate);
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((candidate, d));
        }
    }
    let (name_best, distance) = best?;
    (distance <= name.len().div_ceil(2)).then_some(name_best)
}

/// Split `key=value` the way fio does: blanks before `=` are trimmed, blanks after are kept.
pub fn split_key_value(line: &str) -> (&str, Option<&str>) {
    match line.split_once('=') {
        Some((k, v)) => (k.trim_end(), Some(v)),
        None => (line.trim_end(), None),
    }
}

/// The priority of a `key=value` line for fio's sort (unknown names sort as 0).
fn line_prio(line: &str) -> i8 {
    match lookup(split_key_value(line).0) {
        Lookup::Implemented(d) => d.prio,
        _ => 0,
    }
}

/// Sort a section's lines by option priority, highest first, keeping the written order
/// among equals (fio's `sort_options`).
pub fn sort_by_priority(lines: &mut [String]) {
    lines.sort_by_key(|l| std::cmp::Reverse(line_prio(l)));
}

fn bad(input: &str, reason: impl Into<String>) -> OptionError {
    OptionError::BadValue {
        input: input.to_string(),
        reason: reason.into(),
    }
}

fn num(input: &str) -> impl Fn(NumberError) -> OptionError + '_ {
    move |e| bad(input, e.to_string())
}

/// Split a `:`-separated list where `\:` is a literal colon (fio's `get_next_str`).
pub fn split_colon_list(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&':') {
            cur.push(':');
            chars.next();
        } else if c == ':' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out.retain(|p| !p.is_empty());
    out
}

fn parse_rw(
    value: &str,
    input: &str,
    kb_base: KbBase,
) -> Result<(RwMode, RwModifier), OptionError> {
    let (mode, postfix) = match value.split_once(':') {
        Some((m, p)) => (m, Some(p)),
        None => (value.split(',').next().unwrap_or(value), None),
    };
    let rw = |read, write, random| RwMode {
        read,
        write,
        random,
    };
    let mode = match mode {
        "read" => rw(true, false, false),
        "write" => rw(false, true, false),
        "rw" | "readwrite" => rw(true, true, false),
        "randread" => rw(true, false, true),
        "randwrite" => rw(false, true, true),
        "randrw" => rw(true, true, true),
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(bad(
                input,
                format!("rw={mode} is a fio mode that fiolike does not implement"),
            ));
        }
        _ => {
            return Err(bad(
                input,
                "rw takes read, write, rw/readwrite, randread, randwrite or randrw",
            ));
        }
    };
    let mut modifier = RwModifier {
        seq_add: 0,
        seq_nr: 1,
    };
    if let Some(p) = postfix {
        if mode.random {
            modifier.seq_nr = parse_int(p, kb_base).map_err(num(input))?.max(1);
        } else {
            modifier.seq_add = parse_bytes(p, kb_base).map_err(num(input))?;
        }
    }
    Ok((mode, modifier))
}

fn parse_engine(value: &str, input: &str) -> Result<IoEngineKind, OptionError> {
    Ok(match value {
        "sync" => IoEngineKind::Sync,
        "psync" => IoEngineKind::Psync,
        "pvsync" => IoEngineKind::Pvsync,
        "libaio" => IoEngineKind::Libaio,
        "io_uring" => IoEngineKind::IoUring,
        "fslab" => IoEngineKind::Fslab,
        other if FIO_ENGINES_NOT_IMPLEMENTED.contains(&other) => {
            return Err(bad(
                input,
                format!(
                    "ioengine={other} is a fio engine that fiolike does not implement \
                     (implemented: sync, psync, pvsync, libaio, io_uring, fslab)"
                ),
            ));
        }
        other => {
            return Err(bad(input, format!("engine {other} not loadable")));
        }
    })
}

fn bool_value(value: Option<&str>, def: &OptionDef, input: &str) -> Result<bool, OptionError> {
    match value {
        None if def.arg == OptionalFlag => Ok(true),
        None => Err(OptionError::NeedsArgument { name: def.name }),
        Some(v) => parse_bool(v).map_err(num(input)),
    }
}

fn log_request(value: Option<&str>) -> LogRequest {
    LogRequest {
        prefix: value.unwrap_or_default().to_string(),
    }
}

/// Apply one `key=value` (or a bare `key`) to `spec`, as fio 3.33 would, recording it under
/// its canonical name in `spec.given`.
pub fn apply_option(spec: &mut JobSpec, line: &str) -> Result<(), OptionError> {
    let (key, value) = split_key_value(line);
    let def = match lookup(key) {
        Lookup::Implemented(d) => d,
        Lookup::NotImplemented => {
            return Err(OptionError::NotImplemented {
                name: key.to_string(),
            });
        }
        Lookup::Unknown => {
            return Err(OptionError::Bad {
                input: line.to_string(),
                suggestion: closest_option(key),
            });
        }
    };
    apply_def(spec, def, value, line)?;
    spec.given
        .push((def.name.to_string(), value.map(str::to_string)));
    Ok(())
}

fn apply_def(
    spec: &mut JobSpec,
    def: &OptionDef,
    value: Option<&str>,
    input: &str,
) -> Result<(), OptionError> {
    let kb = spec.kb_base;
    // Options whose value may be absent are handled first; every other needs one.
    match def.opt {
        Opt::TimeBased => {
            spec.time_based = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::GroupReporting => {
            spec.group_reporting = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::NewGroup => {
            spec.new_group = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::Stonewall => {
            spec.stonewall = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::Thread => {
            spec.thread = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::NoRandomMap => {
            spec.norandommap = bool_value(value, def, input)?;
            return Ok(());
        }
        Opt::WriteBwLog => {
            spec.bw_log = Some(log_request(value));
            return Ok(());
        }
        Opt::WriteLatLog => {
            spec.lat_log = Some(log_request(value));
            return Ok(());
        }
        Opt::WriteIopsLog => {
            spec.iops_log = Some(log_request(value));
            return Ok(());
        }
        _ => {}
    }
    let Some(v) = value else {
        return Err(OptionError::NeedsArgument { name: def.name });
    };
    let flag = |input: &str| parse_bool(v).map_err(num(input));
    match def.opt {
        Opt::Name => {
            if v.is_empty() {
                return Err(bad(input, "empty name"));
            }
            spec.name = v.to_string();
        }
        Opt::Description => spec.description = Some(v.to_string()),
        Opt::Rw => {
            let (mode, modifier) = parse_rw(v, input, kb)?;
            spec.rw = mode;
            spec.rw_modifier = modifier;
        }
        Opt::RwMixRead => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n > 100 {
                return Err(bad(input, format!("max value out of range: {n} (100 max)")));
            }
            spec.rwmixread = n as u32;
        }
        Opt::RwMixWrite => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n > 100 {
                return Err(bad(input, format!("max value out of range: {n} (100 max)")));
            }
            spec.rwmixread = 100 - n as u32;
        }
        Opt::Bs => {
            let parts = split_directions(v);
            let mut any = false;
            for (i, part) in parts.iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_bytes(p, kb).map_err(num(input))?;
                    if n == 0 {
                        return Err(bad(input, "min value out of range: 0 (1 min)"));
                    }
                    spec.bs[i] = n;
                    any = true;
                }
            }
            if !any {
                return Err(bad(input, "no block size"));
            }
        }
        Opt::Size => {
            if v.ends_with('z') {
                return Err(bad(input, "size: 'z' suffix isn't applicable"));
            }
            spec.size = Some(parse_size(v, kb).map_err(num(input))?);
        }
        Opt::FileSize => {
            let (lo, hi) = parse_size_range(v, kb).map_err(num(input))?;
            if lo == 0 {
                return Err(bad(input, "min value out of range: 0 (1 min)"));
            }
            spec.filesize = Some((lo, hi));
        }
        Opt::NrFiles => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n == 0 || n > u64::from(u32::MAX) {
                return Err(bad(input, "nrfiles must be at least 1"));
            }
            spec.nrfiles = n as u32;
        }
        Opt::IoSize => match parse_size(v, kb).map_err(num(input))? {
            SizeValue::Bytes(b) => spec.io_size = Some(b),
            SizeValue::Percent(_) => {
                return Err(bad(
                    input,
                    "io_size as a percentage is not implemented by fiolike",
                ));
            }
        },
        Opt::Offset => spec.offset = parse_size(v, kb).map_err(num(input))?,
        Opt::Fsync => spec.fsync = parse_int(v, kb).map_err(num(input))?,
        Opt::Fdatasync => spec.fdatasync = parse_int(v, kb).map_err(num(input))?,
        Opt::EndFsync => spec.end_fsync = flag(input)?,
        Opt::FsyncOnClose => spec.fsync_on_close = flag(input)?,
        Opt::Fallocate => {
            spec.fallocate = match v {
                "none" | "0" => Fallocate::None,
                "posix" | "1" => Fallocate::Posix,
                "native" => Fallocate::Native,
                "keep" => Fallocate::Keep,
                "truncate" => Fallocate::Truncate,
                _ => {
                    return Err(bad(
                        input,
                        "fallocate takes none, posix, keep, native, truncate, 0 or 1",
                    ));
                }
            }
        }
        Opt::Direct => spec.direct = flag(input)?,
        Opt::Buffered => spec.direct = !flag(input)?,
        Opt::IoEngine => spec.ioengine = parse_engine(v, input)?,
        Opt::IoDepth => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n == 0 || n > 65536 {
                return Err(bad(input, "iodepth must be 1..65536"));
            }
            spec.iodepth = n as u32;
        }
        Opt::Runtime => {
            spec.runtime_us = parse_time_us(v, TimeUnit::Seconds).map_err(num(input))?
        }
        Opt::RampTime => {
            spec.ramp_time_us = parse_time_us(v, TimeUnit::Seconds).map_err(num(input))?
        }
        Opt::Directory => {
            let dirs = split_colon_list(v);
            if dirs.is_empty() {
                return Err(bad(input, "empty directory"));
            }
            spec.directories = dirs.into_iter().map(PathBuf::from).collect();
        }
        Opt::Filename => {
            let files = split_colon_list(v);
            if files.is_empty() {
                return Err(bad(input, "empty filename"));
            }
            if files.iter().any(|f| f == "-") {
                return Err(bad(
                    input,
                    "filename=- (stdin/stdout) is not implemented by fiolike",
                ));
            }
            spec.filenames = files;
        }
        Opt::NumJobs => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n == 0 || n > 65536 {
                return Err(bad(input, "numjobs must be 1..65536"));
            }
            spec.numjobs = n as u32;
        }
        Opt::CreateOnOpen => spec.create_on_open = flag(input)?,
        Opt::CreateFsync => spec.create_fsync = flag(input)?,
        Opt::Unlink => spec.unlink = flag(input)?,
        Opt::UnlinkEachLoop => spec.unlink_each_loop = flag(input)?,
        Opt::RandRepeat => spec.randrepeat = flag(input)?,
        Opt::RandSeed => spec.randseed = parse_int(v, kb).map_err(num(input))?,
        Opt::Overwrite => spec.overwrite = flag(input)?,
        Opt::KbBase => {
            spec.kb_base = match v {
                "1024" => KbBase::Binary,
                "1000" => KbBase::Decimal,
                _ => return Err(bad(input, "kb_base takes 1024 or 1000")),
            }
        }
        Opt::UnitBase => {
            spec.unit_base = match v {
                "0" | "8" => UnitBase::Bytes,
                "1" => UnitBase::Bits,
                _ => return Err(bad(input, "unit_base takes 0, 8 or 1")),
            }
        }
        Opt::Loops => {
            let n = parse_int(v, kb).map_err(num(input))?;
            if n == 0 || n > u64::from(u32::MAX) {
                return Err(bad(input, "loops must be at least 1"));
            }
            spec.loops = n as u32;
        }
        Opt::LogAvgMsec => spec.log_avg_msec = parse_int(v, kb).map_err(num(input))?,
        Opt::PerJobLogs => spec.per_job_logs = flag(input)?,
        Opt::TimeBased
        | Opt::GroupReporting
        | Opt::NewGroup
        | Opt::Stonewall
        | Opt::Thread
        | Opt::NoRandomMap
        | Opt::WriteBwLog
        | Opt::WriteLatLog
        | Opt::WriteIopsLog => unreachable!("handled above"),
    }
    Ok(())
}

/// Whether `name` (a canonical or alias name) is an implemented option that may stand bare.
pub fn may_be_bare(name: &str) -> bool {
    matches!(lookup(name), Lookup::Implemented(d) if d.arg != Required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(lines: &[&str]) -> Result<JobSpec, OptionError> {
        let mut s = JobSpec::default();
        let mut lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        sort_by_priority(&mut lines);
        for l in &lines {
            apply_option(&mut s, l)?;
        }
        Ok(s)
    }

    #[test]
    fn every_implemented_option_is_a_fio_option() {
        for d in OPTIONS {
            assert!(
                FIO_OPTION_NAMES.binary_search(&d.name).is_ok(),
                "{} is not in fio's table",
                d.name
            );
            if let Some(a) = d.alias {
                assert!(FIO_OPTION_NAMES.binary_search(&a).is_ok(), "{a}");
            }
        }
        let mut sorted = FIO_OPTION_NAMES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, FIO_OPTION_NAMES, "binary_search needs byte order");
    }

    #[test]
    fn seed_000_job_parses_to_what_fio_runs() {
        let s = spec_with(&[
            "rw=write",
            "fsync=1",
            "fallocate=none",
            "group_reporting=1",
            "direct=0",
            "bs=64k",
            "ioengine=sync",
            "size=1G",
            "directory=/mnt/sdk",
            "numjobs=16",
        ])
        .unwrap();
        assert_eq!(s.rw.name(), "write");
        assert_eq!(s.fsync, 1);
        assert_eq!(s.fallocate, Fallocate::None);
        assert!(s.group_reporting && !s.direct);
        assert_eq!(s.bs, [65536; 3]);
        assert_eq!(s.ioengine, IoEngineKind::Sync);
        assert_eq!(s.size, Some(SizeValue::Bytes(1 << 30)));
        assert_eq!(s.numjobs, 16);
        assert_eq!(s.directories, vec![PathBuf::from("/mnt/sdk")]);
    }

    #[test]
    fn kb_base_applies_before_sizes_in_the_same_section() {
        let s = spec_with(&["size=4k", "kb_base=1000"]).unwrap();
        assert_eq!(s.size, Some(SizeValue::Bytes(4000)));
        assert_eq!(s.given[0].0, "kb_base", "applied (and listed) first");
    }

    #[test]
    fn aliases_record_the_canonical_name() {
        let s = spec_with(&["readwrite=randrw", "blocksize=8k,32k", "rwmixwrite=30"]).unwrap();
        assert!(s.rw.mixed() && s.rw.random);
        assert_eq!(s.bs, [8192, 32768, 32768]);
        assert_eq!(s.rwmixread, 70);
        assert_eq!(s.given[0].0, "rw");
        assert_eq!(s.given[1].0, "bs");
    }

    #[test]
    fn flags_may_stand_bare_but_bools_may_not() {
        let s = spec_with(&["time_based", "group_reporting", "runtime=2"]).unwrap();
        assert!(s.time_based && s.group_reporting);
        assert_eq!(s.runtime_us, 2_000_000);
        assert_eq!(
            spec_with(&["unlink"]).unwrap_err(),
            OptionError::NeedsArgument { name: "unlink" }
        );
        assert!(!spec_with(&["group_reporting=0"]).unwrap().group_reporting);
    }

    #[test]
    fn unknown_options_get_fios_message_and_suggestion() {
        let e = spec_with(&["fsycn=1"]).unwrap_err();
        assert_eq!(e.to_string(), "Bad option <fsycn=1>\nDid you mean fsync?");
        let e = spec_with(&["zzzzzzzzzzzzz=1"]).unwrap_err();
        assert_eq!(e.to_string(), "Bad option <zzzzzzzzzzzzz=1>");
    }

    #[test]
    fn fio_options_fiolike_lacks_are_refused_by_name() {
        let e = spec_with(&["verify=md5"]).unwrap_err();
        assert_eq!(
            e,
            OptionError::NotImplemented {
                name: "verify".into()
            }
        );
        let e = spec_with(&["ioengine=mmap"]).unwrap_err();
        assert!(e.to_string().contains("does not implement"), "{e}");
        let e = spec_with(&["ioengine=nosuch"]).unwrap_err();
        assert!(e.to_string().contains("not loadable"), "{e}");
        let e = spec_with(&["rw=trim"]).unwrap_err();
        assert!(e.to_string().contains("rw=trim"), "{e}");
    }

    #[test]
    fn bad_values_name_the_option() {
        let e = spec_with(&["rw=sideways"]).unwrap_err();
        assert!(
            e.to_string().starts_with("fio: failed parsing rw=sideways"),
            "{e}"
        );
        let e = spec_with(&["bs=0"]).unwrap_err();
        assert!(e.to_string().contains("bs=0"), "{e}");
        let e = spec_with(&["iodepth=0"]).unwrap_err();
        assert!(e.to_string().contains("iodepth"), "{e}");
        assert!(spec_with(&["rwmixread=101"]).is_err());
        assert!(spec_with(&["size=abc"]).is_err());
        assert!(spec_with(&["kb_base=999"]).is_err());
    }

    #[test]
    fn rw_postfix_and_lists() {
        let s = spec_with(&["rw=write:4k"]).unwrap();
        assert_eq!(s.rw_modifier.seq_add, 4096);
        let s = spec_with(&["rw=randread:8"]).unwrap();
        assert_eq!(s.rw_modifier.seq_nr, 8);
        let s = spec_with(&["directory=/a:/b\\:c"]).unwrap();
        assert_eq!(
            s.directories,
            vec![PathBuf::from("/a"), PathBuf::from("/b:c")]
        );
    }

    #[test]
    fn distance_is_levenshtein() {
        assert_eq!(string_distance("kitten", "sitting"), 3);
        assert_eq!(string_distance("", "abc"), 3);
        assert_eq!(closest_option("numjob"), Some("numjobs"));
    }
}
