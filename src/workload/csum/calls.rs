//! What the `crc32c` tracepoint saw during a run, turned into the figures of thread 004.
//!
//! The tracepoint fires once per checksum helper call (one structure), with its length, the
//! bytes before and after the CRC field (`head`, `tail`; both 0 for a single pass) and the
//! kind of call (`single`, `split`, `verify`). A run keeps two ilog2 histograms in the trace
//! session, both grouped by `site,mode,head` ([`hist_specs`]):
//!
//! - `crc32c.len/site,mode,head`: the length of every helper call;
//! - `crc32c.tail/site,mode,head`: its tail.
//!
//! Grouping by `head` makes every head exact (it is the group key, and one structure has one
//! CRC offset), and it separates the calls with a CRC field inside from the ranges without
//! one (a log payload, an extended log header: head and tail 0). From these, every crc32c
//! computation the engine made is known exactly, bucket by bucket:
//!
//! - a *whole* call (a single pass, or a range without a field) is one crc32c call of `len`;
//! - a *split* call (split update or verify) is three: `head`, four zero bytes, `tail`.
//!
//! [`CallProfile::seed_rows`] is the table in the thread (Nick Piggin's, 2016-10-28): per
//! bucket, the frequency of total/head/tail sizes, each as a share of its own column's calls,
//! and their bytes, all as a share of the total bytes checksummed (so head% + tail% ≈ total%
//! summed over buckets, as he notes). Buckets are `floor(log2)` with their byte range printed;
//! the thread's "ilog2" column was really `fls`, one higher (its 4-byte directory heads sit
//! under 3, its 100-byte inode heads under 7).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::fs::cksum::CrcCall;
use crate::fs::format::BlockKind;
use crate::trace::{HistResult, HistSpec, Log2Hist, TraceSummary};

/// The session histogram of helper-call lengths.
pub const LEN_SPEC: &str = "crc32c.len/site,mode,head";
/// The session histogram of tails.
pub const TAIL_SPEC: &str = "crc32c.tail/site,mode,head";

/// Bytes of the zeroed CRC field a split call checksums between head and tail.
const FIELD_BYTES: u64 = 4;

/// The histogram specs a csumhist run adds to its trace session.
pub fn hist_specs() -> Vec<HistSpec> {
    [LEN_SPEC, TAIL_SPEC]
        .iter()
        .map(|s| {
            s.parse()
                .unwrap_or_else(|e| unreachable!("built-in spec {s}: {e}"))
        })
        .collect()
}

/// Which helper calls a report counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallFilter {
    /// CRC updates (single or split): what `-o cksum` changes. The default, and what thread
    /// 004's table counts (the fsync write path).
    #[default]
    Updates,
    /// Verifications of blocks read from the device (always split).
    Verifies,
    /// Both.
    All,
}

impl CallFilter {
    /// Whether a call of this kind counts.
    pub fn admits(self, call: CrcCall) -> bool {
        match self {
            CallFilter::Updates => call.is_update(),
            CallFilter::Verifies => !call.is_update(),
            CallFilter::All => true,
        }
    }

    /// The option spelling.
    pub fn name(self) -> &'static str {
        match self {
            CallFilter::Updates => "update",
            CallFilter::Verifies => "verify",
            CallFilter::All => "all",
        }
    }
}

impl FromStr for CallFilter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "update" | "updates" => Ok(CallFilter::Updates),
            "verify" | "verifies" => Ok(CallFilter::Verifies),
            "all" => Ok(CallFilter::All),
            _ => Err(format!(
                "unknown call kind '{s}' (expected update, verify or all)"
            )),
        }
    }
}

impl fmt::Display for CallFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one group's helper calls map onto crc32c computations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallShape {
    /// One crc32c call over the whole length.
    Whole,
    /// Three: head, the zeroed field, tail.
    Split,
}

/// Every helper call of one structure (`site`), kind and CRC offset.
#[derive(Debug, Clone, PartialEq)]
pub struct CallGroup {
    /// The tracepoint's `site`: the structure checksummed.
    pub site: String,
    /// Single, split or verify.
    pub call: CrcCall,
    /// Bytes before the CRC field (0 for a single pass or a range without a field).
    pub head: u64,
    /// Lengths of the calls.
    pub len: Log2Hist,
    /// Tails of the calls.
    pub tail: Log2Hist,
}

impl CallGroup {
    /// Helper calls in the group.
    pub fn calls(&self) -> u64 {
        self.len.total_count()
    }

    /// Bytes the group's calls covered.
    pub fn bytes(&self) -> u128 {
        self.len.total_bytes()
    }

    /// How the group's calls reach the engine.
    pub fn shape(&self) -> CallShape {
        let no_field = self.head == 0 && self.tail.total_bytes() == 0;
        if self.call == CrcCall::Single || no_field {
            CallShape::Whole
        } else {
            CallShape::Split
        }
    }

    /// Add the group's crc32c computations, each by its size, to `out`.
    fn add_engine_calls(&self, out: &mut Log2Hist) {
        match self.shape() {
            CallShape::Whole => out.merge(&self.len),
            CallShape::Split => {
                let n = self.calls();
                out.record_n(self.head, n);
                out.record_n(FIELD_BYTES, n);
                out.merge(&self.tail);
            }
        }
    }
}

/// The three size histograms of thread 004's table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedHistograms {
    /// Length of every helper call (one per structure checksummed).
    pub total: Log2Hist,
    /// Heads of the split calls.
    pub head: Log2Hist,
    /// Tails of the split calls.
    pub tail: Log2Hist,
}

/// One bucket row of thread 004's table.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedRow {
    /// `floor(log2)` of the bucket (`None` for the zero bucket).
    pub ilog2: Option<u32>,
    /// Smallest size in the bucket.
    pub lo: u64,
    /// One past the largest size in the bucket.
    pub hi: u128,
    /// Calls of each column in the bucket: total, head, tail.
    pub counts: [u64; 3],
    /// Bytes of each column in the bucket.
    pub bytes: [u128; 3],
    /// `counts` as a share of each column's own calls, in percent.
    pub freq_pct: [f64; 3],
    /// `bytes` as a share of all bytes checksummed (the total column's sum), in percent.
    pub bytes_pct: [f64; 3],
}

impl SeedRow {
    /// The byte range, e.g. `[512, 1024)`.
    pub fn range_label(&self) -> String {
        format!("[{}, {})", self.lo, self.hi)
    }
}

/// A size (length, head or tail) of one structure as the histograms pin it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeDesc {
    /// Every call had this size (proven, not guessed: see [`SizeDesc::of`]).
    Exact(u64),
    /// The mean size; the histograms cannot prove the sizes were all equal.
    Mean(f64),
    /// No calls.
    None,
}

impl SizeDesc {
    /// What `h` proves about its values: all equal when they all sit in one bucket and sum to
    /// `count ×` the bucket's lower bound (none can be below it, so none is above); otherwise
    /// only their mean.
    pub fn of(h: &Log2Hist) -> SizeDesc {
        let n = h.total_count();
        if n == 0 {
            return SizeDesc::None;
        }
        let bytes = h.total_bytes();
        match h.span().as_slice() {
            [b] if bytes == u128::from(b.lo) * u128::from(n) => SizeDesc::Exact(b.lo),
            _ => SizeDesc::Mean(bytes as f64 / n as f64),
        }
    }
}

impl fmt::Display for SizeDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeDesc::Exact(v) => write!(f, "{v}"),
            SizeDesc::Mean(m) => write!(f, "~{m:.0}"),
            SizeDesc::None => f.write_str("-"),
        }
    }
}

/// One structure's share of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteSummary {
    /// The tracepoint's `site`.
    pub site: String,
    /// What the structure is, in words (`inode`, `log record header`, ...).
    pub structure: &'static str,
    /// Helper calls admitted by the filter.
    pub calls: u64,
    /// Bytes those calls covered.
    pub bytes: u128,
    /// crc32c computations those calls made (three per split call).
    pub crc_calls: u64,
    /// Length of the structure.
    pub len: SizeDesc,
    /// Bytes before the CRC field, for split calls (empty: no split calls).
    pub heads: Vec<u64>,
    /// Bytes after the CRC field, for split calls.
    pub tail: SizeDesc,
    /// Verifications of the structure (counted whatever the filter).
    pub verifies: u64,
}

/// crc32c computations of a run, with the threshold view of thread 004 ("you need to be at
/// 9-10 or greater to exceed the breakeven point").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineCalls {
    /// Helper calls (structures checksummed).
    pub helper_calls: u64,
    /// crc32c computations.
    pub crc_calls: u64,
    /// Bytes through crc32c.
    pub bytes: u128,
    /// The threshold: computations smaller than this count as small.
    pub small_below: u64,
    /// Computations smaller than `small_below`.
    pub small_calls: u64,
    /// Bytes in those computations.
    pub small_bytes: u128,
}

/// A threshold that is not a power of two (the histograms cannot split a bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the small-call threshold must be a power of two from 1 to 2^63 bytes (ilog2 buckets \
     cannot be split), not {0}"
)]
pub struct BadThreshold(pub u64);

/// A threshold for [`CallProfile::engine_calls`]: a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallBelow(u64);

impl SmallBelow {
    /// The default, 512 bytes: below it neither x86-64's nor POWER8's vectorised crc32c broke
    /// even in the thread.
    pub const DEFAULT: SmallBelow = SmallBelow(512);

    /// A threshold of `bytes`, which must be a power of two.
    pub fn new(bytes: u64) -> Result<SmallBelow, BadThreshold> {
        if bytes.is_power_of_two() {
            Ok(SmallBelow(bytes))
        } else {
            Err(BadThreshold(bytes))
        }
    }

    /// The threshold in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl Default for SmallBelow {
    fn default() -> Self {
        SmallBelow::DEFAULT
    }
}

/// The trace session did not hold what a csumhist run needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// One of [`hist_specs`] is missing from the summary.
    #[error("the trace summary has no histogram {0}")]
    MissingHistogram(&'static str),
    /// A group key is not `site,mode,head`.
    #[error("histogram group '{0}' is not site,mode,head")]
    BadGroupKey(String),
}

/// Every crc32c helper call of a run, grouped by structure, kind and head.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallProfile {
    groups: Vec<CallGroup>,
}

/// Split a `site,mode,head` key (sites contain no commas; split from the right anyway).
fn parse_key(key: &str) -> Option<(&str, CrcCall, u64)> {
    let mut parts = key.rsplitn(3, ',');
    let head = parts.next()?.parse().ok()?;
    let call = CrcCall::from_name(parts.next()?)?;
    let site = parts.next()?;
    Some((site, call, head))
}

fn groups_of(h: &HistResult) -> Result<BTreeMap<(String, CrcCall, u64), Log2Hist>, ProfileError> {
    let mut out = BTreeMap::new();
    for (key, hist) in &h.groups {
        let key = key.as_deref().unwrap_or_default();
        let (site, call, head) =
            parse_key(key).ok_or_else(|| ProfileError::BadGroupKey(key.to_string()))?;
        out.insert((site.to_string(), call, head), hist.clone());
    }
    Ok(out)
}

impl CallProfile {
    /// Read the profile out of a finished session that kept [`hist_specs`].
    pub fn from_summary(summary: &TraceSummary) -> Result<CallProfile, ProfileError> {
        let len = summary
            .histogram(LEN_SPEC)
            .ok_or(ProfileError::MissingHistogram(LEN_SPEC))?;
        let tail = summary
            .histogram(TAIL_SPEC)
            .ok_or(ProfileError::MissingHistogram(TAIL_SPEC))?;
        let mut tails = groups_of(tail)?;
        let groups = groups_of(len)?
            .into_iter()
            .map(|((site, call, head), len)| {
                let tail = tails
                    .remove(&(site.clone(), call, head))
                    .unwrap_or_default();
                CallGroup {
                    site,
                    call,
                    head,
                    len,
                    tail,
                }
            })
            .collect();
        Ok(CallProfile { groups })
    }

    /// A profile made of these groups (for tests and for merging).
    pub fn from_groups(mut groups: Vec<CallGroup>) -> CallProfile {
        groups.sort_by(|a, b| (&a.site, a.call, a.head).cmp(&(&b.site, b.call, b.head)));
        CallProfile { groups }
    }

    /// The groups, sorted by site, kind and head.
    pub fn groups(&self) -> &[CallGroup] {
        &self.groups
    }

    fn admitted(&self, filter: CallFilter) -> impl Iterator<Item = &CallGroup> {
        self.groups.iter().filter(move |g| filter.admits(g.call))
    }

    /// The total/head/tail size histograms of the admitted calls.
    pub fn seed_histograms(&self, filter: CallFilter) -> SeedHistograms {
        let mut out = SeedHistograms::default();
        for g in self.admitted(filter) {
            out.total.merge(&g.len);
            if g.shape() == CallShape::Split {
                out.head.record_n(g.head, g.calls());
                out.tail.merge(&g.tail);
            }
        }
        out
    }

    /// Thread 004's table: one row per bucket from the smallest to the largest size seen in
    /// any column, empty buckets between included.
    pub fn seed_rows(&self, filter: CallFilter) -> Vec<SeedRow> {
        let h = self.seed_histograms(filter);
        let cols = [&h.total, &h.head, &h.tail];
        let all_bytes = h.total.total_bytes();
        let first = cols
            .iter()
            .filter_map(|c| c.span().first().map(|b| Log2Hist::index_of(b.lo)))
            .min();
        let last = cols
            .iter()
            .filter_map(|c| c.span().last().map(|b| Log2Hist::index_of(b.lo)))
            .max();
        let (Some(first), Some(last)) = (first, last) else {
            return Vec::new();
        };
        let pct = |part: u128, whole: u128| {
            if whole == 0 {
                0.0
            } else {
                part as f64 * 100.0 / whole as f64
            }
        };
        (first..=last)
            .filter_map(|i| {
                let buckets = cols.map(|c| c.bucket(i));
                let b0 = buckets[0]?;
                let counts = buckets.map(|b| b.map_or(0, |b| b.count));
                let bytes = buckets.map(|b| b.map_or(0, |b| b.bytes));
                let mut freq_pct = [0.0; 3];
                let mut bytes_pct = [0.0; 3];
                for c in 0..3 {
                    freq_pct[c] = pct(u128::from(counts[c]), u128::from(cols[c].total_count()));
                    bytes_pct[c] = pct(bytes[c], all_bytes);
                }
                Some(SeedRow {
                    ilog2: b0.ilog2,
                    lo: b0.lo,
                    hi: b0.hi,
                    counts,
                    bytes,
                    freq_pct,
                    bytes_pct,
                })
            })
            .collect()
    }

    /// Every crc32c computation of the admitted calls, by size.
    pub fn engine_call_sizes(&self, filter: CallFilter) -> Log2Hist {
        let mut out = Log2Hist::new();
        for g in self.admitted(filter) {
            g.add_engine_calls(&mut out);
        }
        out
    }

    /// crc32c computations of the admitted calls, and how many (and how many bytes) were
    /// smaller than `small_below`.
    pub fn engine_calls(&self, filter: CallFilter, small_below: SmallBelow) -> EngineCalls {
        let sizes = self.engine_call_sizes(filter);
        let limit = u128::from(small_below.bytes());
        let (mut small_calls, mut small_bytes) = (0u64, 0u128);
        for b in sizes.span() {
            if b.hi <= limit {
                small_calls += b.count;
                small_bytes += b.bytes;
            }
        }
        EngineCalls {
            helper_calls: self.admitted(filter).map(CallGroup::calls).sum(),
            crc_calls: sizes.total_count(),
            bytes: sizes.total_bytes(),
            small_below: small_below.bytes(),
            small_calls,
            small_bytes,
        }
    }

    /// One summary per structure, the most bytes first.
    pub fn sites(&self, filter: CallFilter) -> Vec<SiteSummary> {
        let mut by_site: BTreeMap<&str, Vec<&CallGroup>> = BTreeMap::new();
        for g in &self.groups {
            by_site.entry(g.site.as_str()).or_default().push(g);
        }
        let mut out: Vec<SiteSummary> = by_site
            .into_iter()
            .map(|(site, groups)| {
                let admitted: Vec<&CallGroup> = groups
                    .iter()
                    .copied()
                    .filter(|g| filter.admits(g.call))
                    .collect();
                let mut len = Log2Hist::new();
                let mut tail = Log2Hist::new();
                let mut heads = Vec::new();
                let mut crc = Log2Hist::new();
                for g in &admitted {
                    len.merge(&g.len);
                    g.add_engine_calls(&mut crc);
                    if g.shape() == CallShape::Split {
                        tail.merge(&g.tail);
                        heads.push(g.head);
                    }
                }
                heads.sort_unstable();
                heads.dedup();
                let all_split = admitted.iter().all(|g| g.shape() == CallShape::Split);
                let len_desc = SizeDesc::of(&len);
                // Every split call covers head + field + tail, so one proven length and one
                // head prove the tail too.
                let tail_desc = match (len_desc, heads.as_slice()) {
                    (SizeDesc::Exact(l), [h]) if all_split && l >= h + FIELD_BYTES => {
                        SizeDesc::Exact(l - h - FIELD_BYTES)
                    }
                    _ => SizeDesc::of(&tail),
                };
                SiteSummary {
                    site: site.to_string(),
                    structure: structure_name(site),
                    calls: len.total_count(),
                    bytes: len.total_bytes(),
                    crc_calls: crc.total_count(),
                    len: len_desc,
                    heads,
                    tail: tail_desc,
                    verifies: groups
                        .iter()
                        .filter(|g| g.call == CrcCall::Verify)
                        .map(|g| g.calls())
                        .sum(),
                }
            })
            .collect();
        out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
        out
    }
}

/// What a tracepoint `site` is, in words. Block kinds are matched exhaustively, so a new kind
/// cannot go unnamed; the journal's sites are its own names.
pub fn structure_name(site: &str) -> &'static str {
    if let Some(kind) = BlockKind::ALL.into_iter().find(|k| k.name() == site) {
        return match kind {
            BlockKind::Superblock => "superblock",
            BlockKind::Agf => "AGF (AG free-space header)",
            BlockKind::Agi => "AGI (AG inode header)",
            BlockKind::Agfl => "AGFL (AG free list)",
            BlockKind::BnoBtree => "btree block: free space by block",
            BlockKind::CntBtree => "btree block: free space by size",
            BlockKind::InoBtree => "btree block: inode chunks",
            BlockKind::FinoBtree => "btree block: free inodes",
            BlockKind::BmapBtree => "btree block: extent map",
            BlockKind::Inode => "inode",
            BlockKind::DirBlock => "dir single-block directory",
            BlockKind::DirData => "dir data block",
            BlockKind::DirLeaf1 => "dir leaf block",
            BlockKind::DirLeafN => "dir node-form leaf block",
            BlockKind::DaNode => "dir hash node block",
            BlockKind::DirFree => "dir free-index block",
            BlockKind::Symlink => "remote symlink block",
            BlockKind::LogRecord => "log record header",
        };
    }
    match site {
        "log_rec_header" => "log record header",
        "log_ext_header" => "log extended header",
        "log_payload" => "log payload",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[(u64, u64)]) -> Log2Hist {
        let mut h = Log2Hist::new();
        for &(v, n) in values {
            h.record_n(v, n);
        }
        h
    }

    fn group(
        site: &str,
        call: CrcCall,
        head: u64,
        len: &[(u64, u64)],
        tail: &[(u64, u64)],
    ) -> CallGroup {
        CallGroup {
            site: site.into(),
            call,
            head,
            len: hist(len),
            tail: hist(tail),
        }
    }

    /// The seed's shape in split mode: inodes, directory blocks and a log record (header
    /// split, payload whole), plus some verifies.
    fn split_run() -> CallProfile {
        CallProfile::from_groups(vec![
            group("inode", CrcCall::Split, 100, &[(512, 76)], &[(408, 76)]),
            group("dir3_data", CrcCall::Split, 4, &[(4096, 2)], &[(4088, 2)]),
            group(
                "log_rec_header",
                CrcCall::Split,
                32,
                &[(328, 22)],
                &[(292, 22)],
            ),
            group("log_payload", CrcCall::Split, 0, &[(9000, 22)], &[(0, 22)]),
            group("inode", CrcCall::Verify, 100, &[(512, 5)], &[(408, 5)]),
        ])
    }

    fn single_run() -> CallProfile {
        CallProfile::from_groups(vec![
            group("inode", CrcCall::Single, 0, &[(512, 76)], &[(0, 76)]),
            group("dir3_data", CrcCall::Single, 0, &[(4096, 2)], &[(0, 2)]),
            group(
                "log_rec_header",
                CrcCall::Single,
                0,
                &[(328, 22)],
                &[(0, 22)],
            ),
            group("log_payload", CrcCall::Single, 0, &[(9000, 22)], &[(0, 22)]),
            group("inode", CrcCall::Verify, 100, &[(512, 5)], &[(408, 5)]),
        ])
    }

    #[test]
    fn keys_parse_from_the_right() {
        assert_eq!(
            parse_key("inode,split,100"),
            Some(("inode", CrcCall::Split, 100))
        );
        assert_eq!(parse_key("a,b,single,0"), Some(("a,b", CrcCall::Single, 0)));
        assert_eq!(parse_key("inode,split"), None);
        assert_eq!(parse_key("inode,sideways,4"), None);
        assert_eq!(parse_key("inode,split,x"), None);
    }

    #[test]
    fn split_calls_make_three_crc_calls_and_whole_ones_one() {
        let p = split_run();
        let e = p.engine_calls(CallFilter::Updates, SmallBelow::DEFAULT);
        assert_eq!(e.helper_calls, 76 + 2 + 22 + 22);
        assert_eq!(e.crc_calls, 3 * (76 + 2 + 22) + 22);
        assert_eq!(e.bytes, 76 * 512 + 2 * 4096 + 22 * 328 + 22 * 9000);
        // Below 512: every head, field and the inode/log-header tails.
        assert_eq!(e.small_calls, 3 * 76 + 2 * 2 + 3 * 22);
        assert_eq!(e.small_bytes, 76 * 512 + 2 * 8 + 22 * 328);

        let s = single_run().engine_calls(CallFilter::Updates, SmallBelow::DEFAULT);
        assert_eq!(s.helper_calls, e.helper_calls);
        assert_eq!(s.bytes, e.bytes, "the same bytes either way");
        assert_eq!(s.crc_calls, 76 + 2 + 22 + 22);
        assert_eq!(s.small_calls, 22, "only the 328-byte log headers are small");
        assert_eq!(s.small_bytes, 22 * 328);
    }

    #[test]
    fn seed_rows_follow_the_threads_percentages() {
        let rows = split_run().seed_rows(CallFilter::Updates);
        // From the 4-byte head bucket to the 8 KiB payload bucket.
        assert_eq!(rows.first().map(|r| r.lo), Some(4));
        assert_eq!(rows.last().map(|r| r.lo), Some(8192));
        let row = |lo: u64| rows.iter().find(|r| r.lo == lo).expect("bucket");
        let total_calls = 76.0 + 2.0 + 22.0 + 22.0;
        let split_calls = 76.0 + 2.0 + 22.0;
        let bytes = (76 * 512 + 2 * 4096 + 22 * 328 + 22 * 9000) as f64;
        // 512-byte inodes: total column.
        let r = row(512);
        assert_eq!(r.counts, [76, 0, 0]);
        assert!((r.freq_pct[0] - 7600.0 / total_calls).abs() < 1e-9);
        assert!((r.bytes_pct[0] - 76.0 * 512.0 * 100.0 / bytes).abs() < 1e-9);
        // Heads: 100-byte inode heads under [64, 128), 4-byte dir heads under [4, 8).
        assert_eq!(row(64).counts, [0, 76, 0]);
        assert!((row(64).freq_pct[1] - 7600.0 / split_calls).abs() < 1e-9);
        assert_eq!(row(4).counts, [0, 2, 0]);
        assert_eq!(row(32).counts, [0, 22, 0]);
        // Tails: 408 and 292 under [256, 512), with the 328-byte headers in total.
        assert_eq!(row(256).counts, [22, 0, 98]);
        assert_eq!(row(256).bytes[2], 76 * 408 + 22 * 292);
        // The payload has no head or tail.
        assert_eq!(row(8192).counts, [22, 0, 0]);
        // Every column's frequency adds up to 100 %; head + tail bytes plus the fields and
        // the unsplit payload add up to the total.
        for c in 0..3 {
            let sum: f64 = rows.iter().map(|r| r.freq_pct[c]).sum();
            assert!((sum - 100.0).abs() < 1e-9, "column {c}: {sum}");
        }
        let split_bytes: u128 = rows.iter().map(|r| r.bytes[1] + r.bytes[2]).sum();
        assert_eq!(
            split_bytes + 4 * 100 + 22 * 9000,
            rows.iter().map(|r| r.bytes[0]).sum()
        );
    }

    #[test]
    fn single_runs_have_no_head_or_tail_column() {
        let h = single_run().seed_histograms(CallFilter::Updates);
        assert!(h.head.is_empty() && h.tail.is_empty());
        assert_eq!(h.total.total_count(), 122);
        let rows = single_run().seed_rows(CallFilter::Updates);
        assert!(rows.iter().all(|r| r.counts[1] == 0 && r.counts[2] == 0));
        // Verifies are split even in a single run; the filter brings them in.
        let v = single_run().seed_histograms(CallFilter::Verifies);
        assert_eq!((v.head.total_count(), v.tail.total_count()), (5, 5));
    }

    #[test]
    fn sites_name_their_structure_with_exact_sizes() {
        let sites = split_run().sites(CallFilter::Updates);
        assert_eq!(sites[0].site, "log_payload", "most bytes first");
        let inode = sites.iter().find(|s| s.site == "inode").expect("inode");
        assert_eq!(inode.structure, "inode");
        assert_eq!((inode.calls, inode.crc_calls, inode.verifies), (76, 228, 5));
        assert_eq!(inode.len, SizeDesc::Exact(512));
        assert_eq!(inode.heads, vec![100]);
        assert_eq!(inode.tail, SizeDesc::Exact(408));
        let payload = sites
            .iter()
            .find(|s| s.site == "log_payload")
            .expect("payload");
        assert!(payload.heads.is_empty());
        assert_eq!(payload.tail, SizeDesc::None);
        assert_eq!(structure_name("dir3_data"), "dir data block");
        assert_eq!(structure_name("log_rec_header"), "log record header");
        assert_eq!(structure_name("nonsense"), "other");
    }

    #[test]
    fn sizes_are_exact_only_when_the_histogram_proves_it() {
        assert_eq!(SizeDesc::of(&hist(&[(512, 3)])), SizeDesc::Exact(512));
        assert_eq!(SizeDesc::of(&hist(&[(256, 7)])), SizeDesc::Exact(256));
        // 300 and 310 share a bucket; nothing proves them equal.
        assert_eq!(
            SizeDesc::of(&hist(&[(300, 1), (310, 1)])),
            SizeDesc::Mean(305.0)
        );
        assert_eq!(SizeDesc::of(&hist(&[(328, 4)])), SizeDesc::Mean(328.0));
        assert_eq!(
            SizeDesc::of(&hist(&[(256, 1), (700, 1)])),
            SizeDesc::Mean(478.0)
        );
        assert_eq!(SizeDesc::of(&Log2Hist::new()), SizeDesc::None);
        assert_eq!(SizeDesc::Mean(4000.4).to_string(), "~4000");
    }

    #[test]
    fn thresholds_are_powers_of_two() {
        assert_eq!(SmallBelow::new(512).map(SmallBelow::bytes), Ok(512));
        assert_eq!(SmallBelow::new(500), Err(BadThreshold(500)));
        assert_eq!(SmallBelow::new(0), Err(BadThreshold(0)));
        assert!(BadThreshold(3).to_string().contains("power of two"));
    }

    #[test]
    fn filters_parse_and_admit() {
        assert_eq!("update".parse::<CallFilter>(), Ok(CallFilter::Updates));
        assert_eq!("all".parse::<CallFilter>(), Ok(CallFilter::All));
        assert!("some".parse::<CallFilter>().is_err());
        assert!(CallFilter::Updates.admits(CrcCall::Single));
        assert!(!CallFilter::Updates.admits(CrcCall::Verify));
        assert!(CallFilter::Verifies.admits(CrcCall::Verify));
    }
}
