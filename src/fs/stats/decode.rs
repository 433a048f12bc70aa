//! Parse, decode and diff `/proc/fs/xfs/stat` text from fslab or from any kernel.
//!
//! The stat file's only structure is "a name, then numbers", and its line set changed across
//! kernels (see [`super::layout`]). So the parser keys on line names and assumes nothing about
//! which lines appear, in what order, or how many numbers each has: a 4.x file without the
//! `rmapbt` lines, a 2026 file with `zoned` and `gc xpc`, and fslab's own render all parse. A
//! name may be several words (`gc xpc 1234`). What it refuses, with a [`DecodeError`] naming
//! the line, is text that is not stat text: a line without a name, without numbers, or with a
//! word after the numbers, a number too big for 64 bits, or the same name twice (which would
//! make "the value of `log`" ambiguous).
//!
//! Decoding prints every field with its name and meaning, grouped per line the way people
//! decode the file on the mailing list (seed 004: "log write IOs = 89045"):
//!
//! ```text
//! log (journal writes and forces):
//!   log: writes = 89045                 (log write IOs: log records (iclogs) submitted to disk)
//!   log: blocks = 2859542 = 1.4 GiB     (log write blocks: 512-byte units written to the log)
//! ```
//!
//! A line whose values are all zero collapses to one line; a line fslab does not know is
//! printed raw; fields beyond the table are labelled by position; fields a kernel does not
//! print are listed as absent.
//!
//! [`StatDiff::between`] subtracts two snapshots field by field, wrapping at the counter width
//! (`u32` lines modulo 2^32, like the kernel's `%u` of a summed `int`; `xpc` and `defer_relog`
//! modulo 2^64). Its raw form has the stat file's layout, so it can be decoded again; its
//! decoded form shows gauges (in-core inodes and dquots) as signed changes.

use std::collections::HashMap;
use std::fmt::Write as _;

use thiserror::Error;

use super::StatSnapshot;
use super::layout::{
    FieldKind, LineSpec, U32_LINES, U64_LINES, Unit, Width, current_layout, line_spec,
};

/// Longest excerpt of a bad line or token quoted in an error.
const EXCERPT_CHARS: usize = 60;

/// What is wrong with a line that is not `name value value ...`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LineProblem {
    /// The first word is a number.
    #[error("it starts with a number instead of a line name")]
    NoName,
    /// A word before the numbers is not a plausible line name.
    #[error("'{0}' is not a line name (letters, digits and '_', not starting with a digit)")]
    BadName(String),
    /// The line has a name but no numbers.
    #[error("it has a name but no values")]
    NoValues,
    /// A word after the first number is not a non-negative integer.
    #[error("'{0}' is not a non-negative integer")]
    NotANumber(String),
    /// A number does not fit in 64 bits.
    #[error("'{0}' does not fit in 64 bits")]
    TooLarge(String),
}

/// Stat text that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// A line is not `name value value ...`.
    #[error("stat text line {line}: {problem}: {text:?}")]
    Malformed {
        /// 1-based line number in the input.
        line: usize,
        /// The start of the offending line.
        text: String,
        /// What is wrong with it.
        problem: LineProblem,
    },
    /// A line name appears twice.
    #[error("stat text line {line}: '{name}' already appeared on line {first}")]
    Duplicate {
        /// 1-based line number of the repeat.
        line: usize,
        /// The repeated name.
        name: String,
        /// 1-based line number of the first occurrence.
        first: usize,
    },
    /// The input has no lines at all (or only blank ones).
    #[error("no statistics in the input (it is empty)")]
    Empty,
    /// The last line has no end of line: the text was cut short (a kernel and fslab end every
    /// line), so its last value may be missing digits.
    #[error(
        "stat text line {line} is cut short (no end of line; if the text is complete, end it with a newline): {text:?}"
    )]
    Truncated {
        /// 1-based line number of the last line.
        line: usize,
        /// The start of that line.
        text: String,
    },
}

/// One parsed line: its name and its values, as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatLine {
    /// The line name, e.g. `log` (or `gc xpc`).
    pub name: String,
    /// The numbers after the name, in order.
    pub values: Vec<u64>,
}

impl StatLine {
    /// fslab's table entry for this line, if it knows the name.
    pub fn spec(&self) -> Option<&'static LineSpec> {
        line_spec(&self.name)
    }

    fn push_raw(&self, out: &mut String) {
        out.push_str(&self.name);
        for v in &self.values {
            let _ = write!(out, " {v}");
        }
        out.push('\n');
    }
}

/// A parsed stat file: its lines in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFile {
    lines: Vec<StatLine>,
}

impl StatFile {
    /// Parse stat text from any kernel version, or from fslab. Every line must end with a
    /// newline, as every writer of this text ends it: a last line without one was cut short
    /// ([`DecodeError::Truncated`]).
    pub fn parse(text: &str) -> Result<StatFile, DecodeError> {
        let mut lines = Vec::new();
        let mut first_seen: HashMap<String, usize> = HashMap::new();
        let unterminated = !text.is_empty() && !text.ends_with('\n');
        let last = text.lines().count();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            if unterminated && line_no == last {
                return Err(DecodeError::Truncated {
                    line: line_no,
                    text: excerpt(raw.trim()),
                });
            }
            let line = parse_line(raw).map_err(|problem| DecodeError::Malformed {
                line: line_no,
                text: excerpt(raw.trim()),
                problem,
            })?;
            if let Some(&first) = first_seen.get(&line.name) {
                return Err(DecodeError::Duplicate {
                    line: line_no,
                    name: line.name,
                    first,
                });
            }
            first_seen.insert(line.name.clone(), line_no);
            lines.push(line);
        }
        if lines.is_empty() {
            return Err(DecodeError::Empty);
        }
        Ok(StatFile { lines })
    }

    /// Parse bytes read from a file; bytes that are not UTF-8 make their line malformed.
    pub fn parse_bytes(bytes: &[u8]) -> Result<StatFile, DecodeError> {
        Self::parse(&String::from_utf8_lossy(bytes))
    }

    /// The lines in input order.
    pub fn lines(&self) -> &[StatLine] {
        &self.lines
    }

    /// The line called `name`, if present.
    pub fn line(&self, name: &str) -> Option<&StatLine> {
        self.lines.iter().find(|l| l.name == name)
    }

    /// Value `index` (0-based) of line `name`, if the text has it.
    pub fn get(&self, name: &str, index: usize) -> Option<u64> {
        self.line(name)?.values.get(index).copied()
    }

    /// The value of the field called `field` on line `name` (e.g. `("log", "writes")`).
    pub fn field(&self, name: &str, field: &str) -> Option<u64> {
        let index = line_spec(name)?
            .fields
            .iter()
            .position(|f| f.name == field)?;
        self.get(name, index)
    }

    /// The text again, one `name v v ...` line each: the stat file layout.
    pub fn render_raw(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            line.push_raw(&mut out);
        }
        out
    }

    /// Every field with its name and meaning, grouped per line.
    pub fn decode(&self) -> String {
        decode_lines(&self.lines, Reading::Snapshot)
    }
}

impl From<&StatSnapshot> for StatFile {
    fn from(snap: &StatSnapshot) -> Self {
        let layout = current_layout();
        let mut lines = Vec::with_capacity(layout.len());
        let mut v32 = snap.counters32().iter();
        for spec in &layout[..U32_LINES] {
            let values = v32.by_ref().take(spec.fields.len()).map(|&v| u64::from(v));
            lines.push(StatLine {
                name: spec.name.to_string(),
                values: values.collect(),
            });
        }
        let mut v64 = snap.counters64().iter();
        for spec in &layout[U32_LINES..U32_LINES + U64_LINES] {
            lines.push(StatLine {
                name: spec.name.to_string(),
                values: v64.by_ref().take(spec.fields.len()).copied().collect(),
            });
        }
        for spec in &layout[U32_LINES + U64_LINES..] {
            lines.push(StatLine {
                name: spec.name.to_string(),
                values: vec![u64::from(snap.debug())],
            });
        }
        StatFile { lines }
    }
}

/// A counter that is smaller in the later snapshot than in the earlier one.
///
/// Counters only grow until they wrap, so a small step back cannot be a wrap: the snapshots
/// are in the wrong order, or from different boots (or a `stats_clear` came between them),
/// and their difference means nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regression {
    /// The line, e.g. `extent_alloc`.
    pub line: String,
    /// The field's name (`allocx`), or `field N` on a line fslab does not know.
    pub field: String,
    /// Its value in the earlier snapshot.
    pub before: u64,
    /// Its value in the later one.
    pub after: u64,
}

/// The change between two snapshots: `after - before` per field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatDiff {
    file: StatFile,
    regressions: Vec<Regression>,
}

impl StatDiff {
    /// Subtract `before` from `after` field by field.
    ///
    /// Lines follow `after`. Counters wrap at their width (unknown lines are taken as `u32`
    /// when every value on both sides fits in 32 bits, else `u64`); `debug` keeps the
    /// `after` value; a line or field missing from `before` counts from 0.
    ///
    /// A counter that went back by less than half its range is not a wrap; each is listed in
    /// [`StatDiff::regressions`] so the caller can warn that the difference is meaningless.
    pub fn between(before: &StatFile, after: &StatFile) -> StatDiff {
        let mut regressions = Vec::new();
        let lines = after
            .lines
            .iter()
            .map(|line| {
                let old: &[u64] = before.line(&line.name).map_or(&[], |l| &l.values);
                let spec = line.spec();
                let width = spec.map_or_else(|| guess_width(&line.values, old), |s| s.width);
                let values = line
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, &now)| {
                        let was = old.get(i).copied().unwrap_or(0);
                        let field = spec.and_then(|s| s.fields.get(i));
                        let kind = field.map_or(FieldKind::Counter, |f| f.kind);
                        if kind == FieldKind::Counter && went_back(was, now, width) {
                            regressions.push(Regression {
                                line: line.name.clone(),
                                field: field
                                    .map_or_else(|| format!("field {}", i + 1), |f| f.name.into()),
                                before: was,
                                after: now,
                            });
                        }
                        match (kind, width) {
                            (FieldKind::Flag, _) => now,
                            (_, Width::U32) => u64::from((now as u32).wrapping_sub(was as u32)),
                            (_, Width::U64) => now.wrapping_sub(was),
                        }
                    })
                    .collect();
                StatLine {
                    name: line.name.clone(),
                    values,
                }
            })
            .collect();
        StatDiff {
            file: StatFile { lines },
            regressions,
        }
    }

    /// The counters that went backwards from `before` to `after`, in print order.
    pub fn regressions(&self) -> &[Regression] {
        &self.regressions
    }

    /// The differences as a [`StatFile`] (gauges hold the wrapped difference).
    pub fn file(&self) -> &StatFile {
        &self.file
    }

    /// The differences in the stat file layout; decodable again with [`StatFile::parse`].
    pub fn render_raw(&self) -> String {
        self.file.render_raw()
    }

    /// Every field's change with its name and meaning; gauges are shown signed.
    pub fn decode(&self) -> String {
        let mut out =
            String::from("change between the two snapshots (after - before; levels signed):\n\n");
        out.push_str(&decode_lines(&self.file.lines, Reading::Change));
        out
    }
}

/// Parse and decode stat text in one step (what `--stats-decode` prints).
pub fn decode_text(text: &str) -> Result<String, DecodeError> {
    Ok(StatFile::parse(text)?.decode())
}

/// Whether the values being decoded are a snapshot or a change between two.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    Snapshot,
    Change,
}

fn is_number(tok: &str) -> bool {
    tok.bytes().all(|b| b.is_ascii_digit())
}

fn is_name(tok: &str) -> bool {
    let mut bytes = tok.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn parse_line(raw: &str) -> Result<StatLine, LineProblem> {
    let mut name = String::new();
    let mut values = Vec::new();
    for tok in raw.split_whitespace() {
        if is_number(tok) {
            if name.is_empty() {
                return Err(LineProblem::NoName);
            }
            let v = tok
                .parse::<u64>()
                .map_err(|_| LineProblem::TooLarge(excerpt(tok)))?;
            values.push(v);
        } else if !values.is_empty() {
            return Err(LineProblem::NotANumber(excerpt(tok)));
        } else if is_name(tok) {
            if !name.is_empty() {
                name.push(' ');
            }
            name.push_str(tok);
        } else {
            return Err(LineProblem::BadName(excerpt(tok)));
        }
    }
    if values.is_empty() {
        return Err(LineProblem::NoValues);
    }
    Ok(StatLine { name, values })
}

fn excerpt(s: &str) -> String {
    let mut chars = s.chars();
    let mut out: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() {
        out.push_str("...");
    }
    out
}

/// Whether a counter of `width` read `was` and later `now` stepped back rather than wrapped:
/// a wrap takes it through the top of its range, so it looks like a step back of more than
/// half the range; a smaller step back is a real one.
fn went_back(was: u64, now: u64, width: Width) -> bool {
    match width {
        Width::U32 => {
            let (was, now) = (was as u32, now as u32);
            now < was && was - now < 1 << 31
        }
        Width::U64 => now < was && was - now < 1 << 63,
    }
}

fn guess_width(now: &[u64], was: &[u64]) -> Width {
    let fits = |v: &u64| u32::try_from(*v).is_ok();
    if now.iter().all(fits) && was.iter().all(fits) {
        Width::U32
    } else {
        Width::U64
    }
}

/// `bytes` as a short binary-prefixed figure, e.g. `1.4 GiB`.
fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The value as decoded text: signed for a gauge's change, with a byte figure for sizes.
fn show_value(v: u64, width: Width, kind: FieldKind, unit: Unit, reading: Reading) -> String {
    if reading == Reading::Change && kind == FieldKind::Gauge {
        let signed = match width {
            Width::U32 => i64::from(v as u32 as i32),
            Width::U64 => v as i64,
        };
        return format!("{signed:+}");
    }
    let bytes = match unit {
        Unit::Count => None,
        Unit::Bytes => Some(u128::from(v)),
        Unit::BasicBlocks => Some(u128::from(v) * 512),
    };
    match bytes {
        Some(b) if b >= 1024 => format!("{v} = {}", human_bytes(b)),
        _ => v.to_string(),
    }
}

fn decode_lines(lines: &[StatLine], reading: Reading) -> String {
    let mut out = String::new();
    // Groups with one row per field stand apart with blank lines; one-line items (all-zero
    // lines, raw unknown lines) run together so a mostly idle file stays short.
    let mut after_block = false;
    for line in lines {
        let block = line.spec().is_some_and(|_| !collapses(line));
        if !out.is_empty() && (block || after_block) {
            out.push('\n');
        }
        match line.spec() {
            Some(spec) => decode_known(&mut out, spec, line, reading),
            None => line.push_raw(&mut out),
        }
        after_block = block;
    }
    let absent: Vec<&str> = current_layout()
        .iter()
        .map(|l| l.name)
        .filter(|name| !lines.iter().any(|l| l.name == *name))
        .collect();
    if !absent.is_empty() {
        let _ = writeln!(
            out,
            "\n(lines of the 6.14+ layout not in this text: {})",
            absent.join(" ")
        );
    }
    out
}

/// Whether a known line prints as one "all N fields 0" line.
fn collapses(line: &StatLine) -> bool {
    line.values.len() > 1 && line.values.iter().all(|&v| v == 0)
}

fn decode_known(out: &mut String, spec: &LineSpec, line: &StatLine, reading: Reading) {
    let name = &line.name;
    if collapses(line) {
        let _ = writeln!(
            out,
            "{name} ({}): all {} fields 0",
            spec.title,
            line.values.len()
        );
        return;
    }
    let _ = writeln!(out, "{name} ({}):", spec.title);
    let rows: Vec<(String, &str)> = line
        .values
        .iter()
        .enumerate()
        .map(|(i, &v)| match spec.fields.get(i) {
            Some(f) => (
                format!(
                    "{name}: {} = {}",
                    f.name,
                    show_value(v, spec.width, f.kind, f.unit, reading)
                ),
                f.meaning,
            ),
            None => (
                format!("{name}: field {} = {v}", i + 1),
                "not in fslab's table for this line: newer kernel?",
            ),
        })
        .collect();
    let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0) + 3;
    for (left, meaning) in &rows {
        let _ = writeln!(out, "  {left:<width$}({meaning})");
    }
    if line.values.len() < spec.fields.len() {
        let missing: Vec<&str> = spec.fields[line.values.len()..]
            .iter()
            .map(|f| f.name)
            .collect();
        let _ = writeln!(
            out,
            "  ({name}: {} not printed by this kernel)",
            missing.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_word_names_parse_as_one_line_name() {
        let f = StatFile::parse("xpc 1 2 3\ngc xpc 77\n").unwrap();
        assert_eq!(f.get("gc xpc", 0), Some(77));
        assert_eq!(f.field("gc xpc", "gc_bytes"), Some(77));
    }

    #[test]
    fn each_line_problem_is_reported() {
        let problem = |text: &str| match StatFile::parse(text) {
            Err(DecodeError::Malformed { problem, .. }) => problem,
            other => panic!("{text:?} gave {other:?}"),
        };
        assert_eq!(problem("1 2 3\n"), LineProblem::NoName);
        assert_eq!(problem("log\n"), LineProblem::NoValues);
        assert_eq!(problem("log 1 x\n"), LineProblem::NotANumber("x".into()));
        assert_eq!(problem("lo-g 1\n"), LineProblem::BadName("lo-g".into()));
        assert_eq!(
            problem("log 99999999999999999999\n"),
            LineProblem::TooLarge("99999999999999999999".into())
        );
    }

    #[test]
    fn a_last_line_without_its_newline_is_refused_as_cut_short() {
        let err = StatFile::parse("dir 1 2 3 4\nlog 89045 28").unwrap_err();
        assert_eq!(
            err,
            DecodeError::Truncated {
                line: 2,
                text: "log 89045 28".into()
            }
        );
        assert!(err.to_string().contains("line 2 is cut short"), "{err}");
        // Blank lines after the last one are fine; so is a final newline.
        assert!(StatFile::parse("log 1 2 3 4 5\n\n").is_ok());
        // A cut anywhere in a full render is refused, never decoded with a shortened value.
        let full = super::super::XfsStats::new().snapshot().render();
        for cut in (1..full.len()).filter(|&c| full.as_bytes()[c - 1] != b'\n') {
            assert!(StatFile::parse(&full[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_step_back_is_a_regression_and_a_wrap_is_not() {
        assert!(went_back(120_000, 102_762, Width::U32));
        assert!(
            !went_back(u64::from(u32::MAX) - 5, 3, Width::U32),
            "wrapped"
        );
        assert!(!went_back(5, 9, Width::U32));
        assert!(went_back(1 << 40, 1 << 39, Width::U64));
        let before =
            StatFile::parse("extent_alloc 120000 5 0 0\nvnodes 9 0 0 0 0 0 0 0\n").unwrap();
        let after = StatFile::parse("extent_alloc 102762 5 0 0\nvnodes 3 0 0 0 0 0 0 0\n").unwrap();
        let diff = StatDiff::between(&before, &after);
        assert_eq!(
            diff.regressions(),
            [Regression {
                line: "extent_alloc".into(),
                field: "allocx".into(),
                before: 120_000,
                after: 102_762,
            }],
            "the vnodes gauge may go down"
        );
        assert_eq!(diff.file().get("extent_alloc", 0), Some(4_294_950_058));
        assert!(StatDiff::between(&after, &before).regressions().is_empty());
    }

    #[test]
    fn human_bytes_uses_binary_prefixes() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(2859542 * 512), "1.4 GiB");
    }

    #[test]
    fn gauge_change_reads_signed_and_counter_change_reads_wrapped() {
        let v = u64::from(u32::MAX); // -1 as a u32 difference
        assert_eq!(
            show_value(
                v,
                Width::U32,
                FieldKind::Gauge,
                Unit::Count,
                Reading::Change
            ),
            "-1"
        );
        assert_eq!(
            show_value(
                v,
                Width::U32,
                FieldKind::Counter,
                Unit::Count,
                Reading::Change
            ),
            v.to_string()
        );
    }

    #[test]
    fn unknown_line_width_is_guessed_from_its_values() {
        assert_eq!(guess_width(&[1, 2], &[3]), Width::U32);
        assert_eq!(guess_width(&[1 << 40], &[3]), Width::U64);
    }
}
