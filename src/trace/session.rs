//! A trace session: which events fire, where their records go, and what comes out at the end.
//!
//! [`TraceConfig::start`] validates everything (event spec, histogram specs, ring size, output
//! path) before it enables a single event, installs the session as the process's one active
//! session and sets the events' flags. From then on each fired event reaches `emit`, which
//! files it in the calling thread's own `ThreadBuf`:
//!
//! - into the thread's ring, if the event was selected for text/JSON output (overwriting the
//!   oldest record when the ring is full, like ftrace's default overwrite mode);
//! - into the thread's per-event count (every enabled event);
//! - into the thread's histograms, for each [`HistSpec`] naming the event.
//!
//! [`Session::finish`] clears the flags, closes every thread buffer, merges the rings by
//! timestamp into the output (ftrace text or JSON lines), and sums counts and histograms.
//! [`Session::snapshot`] writes what the rings hold now without consuming it (like reading
//! `trace`); [`Session::drain`] writes and removes it (like reading `trace_pipe`).
//!
//! A running session can be reconfigured the way tracefs is driven by hand (the control
//! files of a `labfs mount` do exactly this): [`Session::set_recorded`] (`set_event`),
//! [`Session::add_histogram`] / [`Session::remove_histogram`] (`hist` triggers, read back with
//! [`Session::histograms`]), [`Session::set_paused`] (`tracing_on`) and
//! [`Session::clear_records`] (`echo > trace`).
//!
//! The firing side (`emit`, the thread buffers and the active-session slot) lives in the
//! `collect` module (`src/trace/collect.rs`), with why records go to per-thread rings and not
//! a channel, what happens to an event fired while `finish` runs (one that cannot reach its
//! thread's buffer is counted in [`TraceSummary::dropped`]), and the lock order.
//!
//! # One session per process
//!
//! Event flags are process-wide statics (that is what keeps a disabled event free), so there
//! is one active session at a time; [`TraceConfig::start`] fails with
//! [`TraceError::SessionActive`] while another is running. Tests that fire events or start a
//! session must hold [`super::testing::serial`] so they do not see each other's events.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::TraceError;
use super::collect::{
    ACTIVE, ACTIVE_ID, EventPlan, GroupedHists, HistPlan, NEXT_ID, Shared, ThreadBuf,
};
use super::format::{push_ftrace_header, push_ftrace_line, push_json_line};
use super::hist::Log2Hist;
use super::registry::{EventSet, find, list};
use super::ring::{Record, TaskInfo};
use super::schema::{EventDef, Value};
use super::sys;

// The limit sizes the fixed group key the firing side files histograms under, so it is
// defined there; `HistSpec` parsing checks it here, and callers have always named it here.
pub use super::collect::MAX_GROUP_FIELDS;

/// Default ring size per thread, in records: at most about 1.7 MiB per firing thread
/// (records are at most 224 bytes), near the kernel's default 1.4 MiB per-CPU buffer.
pub const DEFAULT_RING_ENTRIES: usize = 8192;

/// Output format of the event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// The text layout of `/sys/kernel/tracing/trace`: the 12-line header (with
    /// `entries-in-buffer/entries-written` and `#P:`), then
    /// `%16s-%-7d [%03d] ..... %5lu.%06lu: event: fields` per record.
    #[default]
    Ftrace,
    /// One JSON object per line: `{"ts":S.NNNNNNNNN,"task":"..","pid":N,"cpu":N,
    /// "event":"..","fields":{..}}`, `ts` in seconds of `CLOCK_MONOTONIC`; fields typed
    /// (integers as numbers, strings as strings, devices as `{"major":M,"minor":m}`).
    Json,
}

impl FromStr for TraceFormat {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ftrace" | "text" => Ok(TraceFormat::Ftrace),
            "json" => Ok(TraceFormat::Json),
            _ => Err(TraceError::BadFormat(s.to_string())),
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::Ftrace => "ftrace",
            TraceFormat::Json => "json",
        })
    }
}

/// An ilog2 histogram to keep: `EVENT.FIELD`, or `EVENT.FIELD/GROUP` for one histogram per
/// value of another field (e.g. `crc32c.len/site`: call sizes per metadata structure), or
/// `EVENT.FIELD/G1,G2` for one per combination of values (`crc32c.len/site,mode`: sizes per
/// structure, updates and verifies apart).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistSpec {
    /// Event name (exact, no globs).
    pub event: String,
    /// Unsigned field whose values are counted.
    pub field: String,
    /// Fields whose values pick the histogram, in order; empty when ungrouped.
    pub group_by: Vec<String>,
}

impl HistSpec {
    /// A spec for `event.field`, ungrouped.
    pub fn new(event: &str, field: &str) -> Self {
        HistSpec {
            event: event.to_string(),
            field: field.to_string(),
            group_by: Vec::new(),
        }
    }

    /// The same spec, one histogram per value of `group` (and of the fields already grouped
    /// by, when called again).
    pub fn grouped_by(mut self, group: &str) -> Self {
        self.group_by.push(group.to_string());
        self
    }
}

impl FromStr for HistSpec {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| TraceError::BadHistSpec {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        const SHAPE: &str = "expected EVENT.FIELD or EVENT.FIELD/GROUP[,GROUP...]";
        let (key, groups) = match s.trim().split_once('/') {
            Some((k, g)) => (k, g.split(',').map(str::trim).collect::<Vec<_>>()),
            None => (s.trim(), Vec::new()),
        };
        let (event, field) = key.split_once('.').ok_or_else(|| bad(SHAPE))?;
        let (event, field) = (event.trim(), field.trim());
        if event.is_empty() || field.is_empty() || groups.iter().any(|g| g.is_empty()) {
            return Err(bad(SHAPE));
        }
        if groups.len() > MAX_GROUP_FIELDS {
            return Err(bad(&format!(
                "at most {MAX_GROUP_FIELDS} fields to group by"
            )));
        }
        Ok(HistSpec {
            event: event.to_string(),
            field: field.to_string(),
            group_by: groups.into_iter().map(str::to_string).collect(),
        })
    }
}

impl fmt::Display for HistSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.event, self.field)?;
        if !self.group_by.is_empty() {
            write!(f, "/{}", self.group_by.join(","))?;
        }
        Ok(())
    }
}

/// What to trace and where to put it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceConfig {
    /// Events whose records go to the output: a comma list of names and globs
    /// ([`EventSet::parse`]). Empty: no output, only counts and histograms.
    pub events: String,
    /// Output format.
    pub format: TraceFormat,
    /// Output file (created at start, written at finish); `None` writes to stderr.
    pub out: Option<PathBuf>,
    /// Ring size per thread, in records (at least 1).
    pub ring_entries_per_thread: usize,
    /// Histograms to keep (their events are enabled too, recorded or not).
    pub histograms: Vec<HistSpec>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            events: String::new(),
            format: TraceFormat::Ftrace,
            out: None,
            ring_entries_per_thread: DEFAULT_RING_ENTRIES,
            histograms: Vec::new(),
        }
    }
}

impl TraceConfig {
    /// Validate the configuration, enable its events and make it the active session.
    pub fn start(&self) -> Result<Session, TraceError> {
        self.start_with(None)
    }

    /// Like [`TraceConfig::start`], but the records go to `file`, already created at `path` by
    /// the caller (a tool creates its output files before its run, so that a bad path fails
    /// before any work); [`TraceConfig::out`] is not used.
    pub fn start_into(&self, path: PathBuf, file: File) -> Result<Session, TraceError> {
        self.start_with(Some((path, file)))
    }

    fn start_with(&self, opened: Option<(PathBuf, File)>) -> Result<Session, TraceError> {
        let recorded = EventSet::parse(&self.events)?;
        if self.ring_entries_per_thread == 0 {
            return Err(TraceError::BadRingSize);
        }
        let mut plans: Vec<EventPlan> = list().iter().map(|_| EventPlan::default()).collect();
        let mut enabled = recorded.clone();
        for e in recorded.iter() {
            plans[e.id()].record = true;
        }
        for (i, spec) in self.histograms.iter().enumerate() {
            let (event, plan) = plan_hist(spec, i)?;
            plans[event.id()].hists.push(plan);
            enabled.insert(event);
        }

        let mut active = ACTIVE.lock();
        if active.is_some() {
            return Err(TraceError::SessionActive);
        }
        let out = match (opened, &self.out, recorded.is_empty()) {
            (_, _, true) => None,
            (Some(opened), _, false) => Some(opened),
            (None, Some(path), false) => {
                let file = File::create(path).map_err(|source| TraceError::Output {
                    path: path.display().to_string(),
                    source,
                })?;
                Some((path.clone(), file))
            }
            (None, None, false) => None,
        };
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            plans: RwLock::new(plans),
            ring_cap: self.ring_entries_per_thread,
            n_events: list().len(),
            threads: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        });
        *active = Some(Arc::clone(&shared));
        ACTIVE_ID.store(shared.id, Ordering::Release);
        drop(active);
        for e in enabled.iter() {
            e.set_enabled(true);
        }
        Ok(Session {
            shared,
            enabled,
            recorded,
            format: self.format,
            out,
            hist_specs: self.histograms.iter().cloned().map(Some).collect(),
            paused: false,
            closed: false,
        })
    }
}

fn plan_hist(spec: &HistSpec, index: usize) -> Result<(&'static EventDef, HistPlan), TraceError> {
    let bad = |reason: String| TraceError::BadHistSpec {
        spec: spec.to_string(),
        reason,
    };
    let event = find(&spec.event).ok_or_else(|| bad(format!("no event '{}'", spec.event)))?;
    let field = event
        .field_index(&spec.field)
        .ok_or_else(|| bad(format!("{} has no field '{}'", event.name(), spec.field)))?;
    let kind = event.fields()[field].kind;
    if !kind.is_unsigned() {
        return Err(bad(format!(
            "field '{}' is {}; ilog2 histograms take unsigned fields",
            spec.field,
            kind.name()
        )));
    }
    if spec.group_by.len() > MAX_GROUP_FIELDS {
        return Err(bad(format!(
            "at most {MAX_GROUP_FIELDS} fields to group by"
        )));
    }
    let mut groups = [0usize; MAX_GROUP_FIELDS];
    for (slot, g) in groups.iter_mut().zip(&spec.group_by) {
        *slot = event
            .field_index(g)
            .ok_or_else(|| bad(format!("{} has no field '{g}'", event.name())))?;
    }
    Ok((
        event,
        HistPlan {
            spec: index,
            field,
            groups,
            n_groups: spec.group_by.len(),
        },
    ))
}

/// Count of one event over a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCount {
    /// Event name.
    pub event: &'static str,
    /// Times it fired while the session was active.
    pub count: u64,
}

/// The histograms one [`HistSpec`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct HistResult {
    /// The spec.
    pub spec: HistSpec,
    /// One entry, keyed `None`, when ungrouped; otherwise one per group value (rendered as
    /// text: strings as-is, numbers in decimal, devices `major:minor`; several group fields'
    /// values joined with `,`, e.g. `inode,split`), sorted by key.
    pub groups: Vec<(Option<String>, Log2Hist)>,
}

impl HistResult {
    /// All groups merged.
    pub fn total(&self) -> Log2Hist {
        let mut all = Log2Hist::new();
        for (_, h) in &self.groups {
            all.merge(h);
        }
        all
    }

    /// The histogram of one group value.
    pub fn group(&self, key: &str) -> Option<&Log2Hist> {
        self.groups
            .iter()
            .find(|(k, _)| k.as_deref() == Some(key))
            .map(|(_, h)| h)
    }

    /// Name used in renderings: the spec, with the group value in brackets.
    fn name_of(&self, key: Option<&str>) -> String {
        let base = format!("{}.{}", self.spec.event, self.spec.field);
        match key {
            Some(k) => format!("{base}[{k}]"),
            None => base,
        }
    }

    /// bpftrace-style rendering of every group (`@crc32c.len[inode]:` ...).
    pub fn render_bpftrace(&self) -> String {
        self.groups
            .iter()
            .map(|(k, h)| h.render_bpftrace(&self.name_of(k.as_deref())))
            .collect()
    }

    /// Table rendering of every group, each under a `name:` title line.
    pub fn render_table(&self) -> String {
        self.groups
            .iter()
            .map(|(k, h)| format!("{}:\n{}\n", self.name_of(k.as_deref()), h.render_table()))
            .collect()
    }
}

/// What a finished session found.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSummary {
    /// Per-event counts for every enabled event (declaration order), exact.
    pub counts: Vec<EventCount>,
    /// Records kept in the rings and written to the output at the end.
    pub entries_in_buffer: u64,
    /// Records ever stored in the rings (kept + overwritten + drained earlier).
    pub entries_written: u64,
    /// Records lost because a ring was full.
    pub overwritten: u64,
    /// Records removed earlier by [`Session::drain`].
    pub consumed: u64,
    /// Events that fired but could not reach their thread's buffer (see the module docs).
    pub dropped: u64,
    /// Threads that fired at least one enabled event.
    pub threads: usize,
    /// One result per requested histogram, in request order.
    pub histograms: Vec<HistResult>,
}

impl TraceSummary {
    /// The count of one event, if it was enabled.
    pub fn count(&self, event: &str) -> Option<u64> {
        self.counts
            .iter()
            .find(|c| c.event == event)
            .map(|c| c.count)
    }

    /// The result of the histogram spec written as `spec` (e.g. `crc32c.len/site`).
    pub fn histogram(&self, spec: &str) -> Option<&HistResult> {
        self.histograms.iter().find(|h| h.spec.to_string() == spec)
    }

    /// Counts as two aligned columns, `event` and `count`.
    pub fn render_counts(&self) -> String {
        let width = self
            .counts
            .iter()
            .map(|c| c.event.len())
            .chain(std::iter::once("event".len()))
            .max()
            .unwrap_or(0);
        let cw = self
            .counts
            .iter()
            .map(|c| c.count.to_string().len())
            .chain(std::iter::once("count".len()))
            .max()
            .unwrap_or(0);
        let mut s = format!("{:<width$}  {:>cw$}\n", "event", "count");
        for c in &self.counts {
            s.push_str(&format!("{:<width$}  {:>cw$}\n", c.event, c.count));
        }
        s
    }
}

/// The active trace session. See the module docs; dropping it without [`Session::finish`]
/// disables its events and discards what it collected.
#[derive(Debug)]
pub struct Session {
    shared: Arc<Shared>,
    enabled: EventSet,
    recorded: EventSet,
    format: TraceFormat,
    out: Option<(PathBuf, File)>,
    /// Histogram specs by plan index; a removed one leaves its slot empty so the indices of
    /// the others (which the threads' histograms are filed under) stay put.
    hist_specs: Vec<Option<HistSpec>>,
    paused: bool,
    closed: bool,
}

/// How to read the thread buffers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Copy the rings, leave them as they are.
    Copy,
    /// Take the rings' records (they count as consumed).
    Consume,
    /// Close the buffers for good and take everything.
    Close,
}

/// Everything read from the thread buffers at one moment.
struct Collected {
    per_thread: Vec<(TaskInfo, Vec<Record>)>,
    counts: Vec<u64>,
    written: u64,
    overwritten: u64,
    consumed: u64,
    hists: Vec<GroupedHists>,
}

impl Collected {
    fn in_buffer(&self) -> u64 {
        self.per_thread.iter().map(|(_, r)| r.len() as u64).sum()
    }

    /// Records of all threads merged by timestamp; ties keep thread and per-thread order.
    fn merged(&self) -> Vec<(&TaskInfo, &Record)> {
        let mut all: Vec<(u64, usize, usize)> = self
            .per_thread
            .iter()
            .enumerate()
            .flat_map(|(t, (_, recs))| recs.iter().enumerate().map(move |(i, r)| (r.ts_ns, t, i)))
            .collect();
        all.sort_unstable();
        all.into_iter()
            .map(|(_, t, i)| (&self.per_thread[t].0, &self.per_thread[t].1[i]))
            .collect()
    }
}

impl Session {
    /// Names of the events whose records go to the output.
    pub fn recorded_events(&self) -> Vec<&'static str> {
        self.recorded.names()
    }

    /// The events whose records go to the rings.
    pub fn recorded(&self) -> &EventSet {
        &self.recorded
    }

    /// Names of every enabled event (recorded, or feeding a histogram).
    pub fn enabled_events(&self) -> Vec<&'static str> {
        self.enabled.names()
    }

    /// Change which events' records go to the rings, while the session runs (tracefs's
    /// `set_event`). Histograms keep their events enabled whether recorded or not.
    pub fn set_recorded(&mut self, events: EventSet) {
        {
            let mut plans = self.shared.plans.write();
            for e in list() {
                plans[e.id()].record = events.contains(e);
            }
        }
        self.recorded = events;
        self.refresh_enabled();
    }

    /// Start keeping a histogram (a tracefs `hist` trigger) from now on. The same spec twice
    /// is [`TraceError::BadHistSpec`], as the kernel refuses a duplicate trigger.
    pub fn add_histogram(&mut self, spec: HistSpec) -> Result<(), TraceError> {
        if self.hist_specs.iter().flatten().any(|s| *s == spec) {
            return Err(TraceError::BadHistSpec {
                spec: spec.to_string(),
                reason: "this histogram is already kept".into(),
            });
        }
        let index = self.hist_specs.len();
        let (event, plan) = plan_hist(&spec, index)?;
        self.shared.plans.write()[event.id()].hists.push(plan);
        self.hist_specs.push(Some(spec));
        self.refresh_enabled();
        Ok(())
    }

    /// Stop keeping a histogram and discard what it counted (removing a tracefs trigger).
    /// Returns whether it was kept.
    pub fn remove_histogram(&mut self, spec: &HistSpec) -> bool {
        let Some(index) = self
            .hist_specs
            .iter()
            .position(|s| s.as_ref() == Some(spec))
        else {
            return false;
        };
        for plan in self.shared.plans.write().iter_mut() {
            plan.hists.retain(|h| h.spec != index);
        }
        self.hist_specs[index] = None;
        for t in self.shared.threads.lock().iter() {
            if let Some(h) = t.state.lock().hists.get_mut(index) {
                h.clear();
            }
        }
        self.refresh_enabled();
        true
    }

    /// The histogram specs being kept, in the order they were added.
    pub fn histogram_specs(&self) -> Vec<HistSpec> {
        self.hist_specs.iter().flatten().cloned().collect()
    }

    /// The histograms so far (like reading a tracefs `hist` file), one per kept spec.
    pub fn histograms(&self) -> Vec<HistResult> {
        self.hist_results(&self.collect(Read::Copy))
    }

    /// Stop (or resume) firing every event, keeping what was collected (tracefs's
    /// `tracing_on`).
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        self.refresh_enabled();
    }

    /// Whether the session is paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Empty the rings and reset their totals, keeping counts and histograms (writing
    /// tracefs's `trace` with O_TRUNC).
    pub fn clear_records(&self) {
        for t in self.shared.threads.lock().iter() {
            let mut st = t.state.lock();
            st.ring.reset();
            st.written = 0;
            st.consumed = 0;
        }
    }

    /// Recompute the enabled set (recorded events plus histogram events) and set the event
    /// flags: all off while paused.
    fn refresh_enabled(&mut self) {
        let mut enabled = self.recorded.clone();
        for spec in self.hist_specs.iter().flatten() {
            if let Some(e) = find(&spec.event) {
                enabled.insert(e);
            }
        }
        for e in list() {
            e.set_enabled(!self.paused && enabled.contains(e));
        }
        self.enabled = enabled;
    }

    /// Per-event counts so far (exact at the moment each thread is read).
    pub fn counts(&self) -> Vec<EventCount> {
        let c = self.collect(Read::Copy);
        self.count_list(&c.counts)
    }

    /// Write what the rings hold now, with the ftrace header in ftrace format, leaving it in
    /// place (like reading `/sys/kernel/tracing/trace` during a run).
    pub fn snapshot(&self, w: &mut dyn Write) -> io::Result<()> {
        let c = self.collect(Read::Copy);
        write_records(w, self.format, &c, true)
    }

    /// Write what the rings hold now without a header and remove it (like reading
    /// `trace_pipe`), freeing ring space. Returns the number of records written.
    pub fn drain(&self, w: &mut dyn Write) -> io::Result<u64> {
        let c = self.collect(Read::Consume);
        write_records(w, self.format, &c, false)?;
        Ok(c.in_buffer())
    }

    /// Disable the events, write the kept records to the output (if any events were selected
    /// for it) and return counts, entry totals and histograms.
    pub fn finish(mut self) -> Result<TraceSummary, TraceError> {
        let c = self.close();
        if !self.recorded.is_empty() {
            match self.out.take() {
                Some((path, file)) => {
                    let mut w = BufWriter::new(file);
                    write_records(&mut w, self.format, &c, true)
                        .and_then(|()| w.flush())
                        .map_err(|source| TraceError::Output {
                            path: path.display().to_string(),
                            source,
                        })?;
                }
                None => {
                    let stderr = io::stderr();
                    let mut w = BufWriter::new(stderr.lock());
                    write_records(&mut w, self.format, &c, true)
                        .and_then(|()| w.flush())
                        .map_err(|source| TraceError::Output {
                            path: "<stderr>".to_string(),
                            source,
                        })?;
                }
            }
        }
        Ok(self.summarise(c))
    }

    fn count_list(&self, counts: &[u64]) -> Vec<EventCount> {
        self.enabled
            .iter()
            .map(|e| EventCount {
                event: e.name(),
                count: counts.get(e.id()).copied().unwrap_or(0),
            })
            .collect()
    }

    /// The histograms of the live specs, from collected thread buffers.
    fn hist_results(&self, c: &Collected) -> Vec<HistResult> {
        self.hist_specs
            .iter()
            .enumerate()
            .filter_map(|(i, spec)| Some((spec.as_ref()?, c.hists.get(i))))
            .map(|(spec, groups)| {
                let mut by_key: BTreeMap<Option<String>, Log2Hist> = BTreeMap::new();
                let n = spec.group_by.len();
                if n == 0 {
                    by_key.insert(None, Log2Hist::new());
                }
                for (k, h) in groups.into_iter().flatten() {
                    let key = (n > 0).then(|| {
                        k[..n]
                            .iter()
                            .map(Value::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    });
                    by_key.entry(key).or_default().merge(h);
                }
                HistResult {
                    spec: spec.clone(),
                    groups: by_key.into_iter().collect(),
                }
            })
            .collect()
    }

    fn summarise(&self, c: Collected) -> TraceSummary {
        let in_buffer = c.in_buffer();
        TraceSummary {
            counts: self.count_list(&c.counts),
            entries_in_buffer: in_buffer,
            entries_written: c.written,
            overwritten: c.overwritten,
            consumed: c.consumed,
            dropped: self.shared.dropped.load(Ordering::Relaxed),
            threads: c.per_thread.len(),
            histograms: self.hist_results(&c),
        }
    }

    /// Disable the events, retire the session and read out every thread buffer.
    fn close(&mut self) -> Collected {
        self.closed = true;
        for e in self.enabled.iter() {
            e.set_enabled(false);
        }
        ACTIVE_ID.store(0, Ordering::Release);
        {
            let mut active = ACTIVE.lock();
            if active.as_ref().is_some_and(|s| s.id == self.shared.id) {
                *active = None;
            }
        }
        self.collect(Read::Close)
    }

    fn collect(&self, how: Read) -> Collected {
        let threads: Vec<Arc<ThreadBuf>> = self.shared.threads.lock().clone();
        let mut c = Collected {
            per_thread: Vec::with_capacity(threads.len()),
            counts: vec![0; list().len()],
            written: 0,
            overwritten: 0,
            consumed: 0,
            hists: vec![HashMap::new(); self.hist_specs.len()],
        };
        for t in &threads {
            let mut st = t.state.lock();
            let records = match how {
                Read::Copy => st.ring.to_vec(),
                Read::Consume => {
                    let r = st.ring.take();
                    st.consumed += r.len() as u64;
                    r
                }
                Read::Close => {
                    st.closed = true;
                    st.ring.take()
                }
            };
            for (sum, n) in c.counts.iter_mut().zip(&st.counts) {
                *sum += n;
            }
            c.written += st.written;
            c.overwritten += st.ring.overwritten();
            c.consumed += st.consumed;
            for (mine, theirs) in c.hists.iter_mut().zip(&st.hists) {
                for (k, h) in theirs {
                    mine.entry(*k).or_default().merge(h);
                }
            }
            c.per_thread.push((t.task.clone(), records));
        }
        c
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.closed {
            self.close();
        }
    }
}

/// Write the collected records in `format`; the ftrace header only when `header`.
///
/// The header's `entries-written` is kept + overwritten, the kernel's figure: the difference
/// from `entries-in-buffer` is exactly what the rings lost.
fn write_records(
    w: &mut dyn Write,
    format: TraceFormat,
    c: &Collected,
    header: bool,
) -> io::Result<()> {
    let mut line = String::with_capacity(256);
    if header && format == TraceFormat::Ftrace {
        let in_buffer = c.in_buffer();
        push_ftrace_header(
            &mut line,
            in_buffer,
            in_buffer + c.overwritten,
            sys::online_cpus(),
        );
        w.write_all(line.as_bytes())?;
    }
    for (task, rec) in c.merged() {
        line.clear();
        match format {
            TraceFormat::Ftrace => push_ftrace_line(&mut line, task, rec),
            TraceFormat::Json => push_json_line(&mut line, task, rec),
        }
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_specs_parse_and_print_back() {
        let s: HistSpec = "crc32c.len".parse().expect("valid");
        assert_eq!(s, HistSpec::new("crc32c", "len"));
        let g: HistSpec = " crc32c.head / site ".parse().expect("valid");
        assert_eq!(g, HistSpec::new("crc32c", "head").grouped_by("site"));
        assert_eq!(g.to_string(), "crc32c.head/site");
        let two: HistSpec = "crc32c.len/site, mode".parse().expect("valid");
        assert_eq!(
            two,
            HistSpec::new("crc32c", "len")
                .grouped_by("site")
                .grouped_by("mode")
        );
        assert_eq!(two.to_string(), "crc32c.len/site,mode");
        for bad in [
            "crc32c",
            ".len",
            "crc32c.",
            "crc32c.len/",
            "crc32c.len/site,",
            "crc32c.len/a,b,c,d,e",
            "",
        ] {
            let err = bad.parse::<HistSpec>().expect_err(bad);
            assert!(matches!(err, TraceError::BadHistSpec { .. }), "{bad}");
        }
    }

    #[test]
    fn hist_plans_reject_unknown_and_non_unsigned_fields() {
        let reason = |spec: HistSpec| match plan_hist(&spec, 0) {
            Err(TraceError::BadHistSpec { reason, .. }) => reason,
            other => panic!("expected an error, got {other:?}"),
        };
        assert!(reason(HistSpec::new("crc32", "len")).contains("no event 'crc32'"));
        assert!(reason(HistSpec::new("crc32c", "size")).contains("no field 'size'"));
        assert!(reason(HistSpec::new("crc32c", "site")).contains("str"));
        assert!(reason(HistSpec::new("xlog_iclog_sync", "refcnt")).contains("i32"));
        assert!(reason(HistSpec::new("crc32c", "len").grouped_by("nope")).contains("'nope'"));
        let (e, plan) =
            plan_hist(&HistSpec::new("crc32c", "tail").grouped_by("site"), 3).expect("valid spec");
        assert_eq!(e.name(), "crc32c");
        assert_eq!(
            (plan.spec, plan.field, &plan.groups[..plan.n_groups]),
            (3, 3, &[0][..])
        );
        let (_, plan) = plan_hist(
            &HistSpec::new("crc32c", "len")
                .grouped_by("site")
                .grouped_by("mode"),
            0,
        )
        .expect("valid spec");
        assert_eq!(&plan.groups[..plan.n_groups], &[0, 4]);
    }

    #[test]
    fn grouping_by_two_fields_keeps_one_histogram_per_combination() {
        // labfs tests in this binary fire crc32c concurrently without the lock; this test's
        // own site names keep their events out of what it reads.
        let _serial = super::super::testing::serial();
        let session = TraceConfig {
            histograms: vec!["crc32c.len/site,mode".parse().expect("spec")],
            ..TraceConfig::default()
        }
        .start()
        .expect("session");
        use super::super::events::crc32c;
        crc32c("grouping_test_a", 512, 100, 408, "split", "crc32c");
        crc32c("grouping_test_a", 512, 100, 408, "split", "crc32c");
        crc32c("grouping_test_a", 512, 100, 408, "verify", "crc32c");
        crc32c("grouping_test_b", 512, 216, 292, "split", "crc32c");
        let summary = session.finish().expect("finish");
        let by = summary.histogram("crc32c.len/site,mode").expect("grouped");
        let keys: Vec<String> = by
            .groups
            .iter()
            .filter_map(|(k, _)| k.clone())
            .filter(|k| k.starts_with("grouping_test_"))
            .collect();
        assert_eq!(
            keys,
            [
                "grouping_test_a,split",
                "grouping_test_a,verify",
                "grouping_test_b,split"
            ]
        );
        let count = |k: &str| by.group(k).map(Log2Hist::total_count);
        assert_eq!(count("grouping_test_a,split"), Some(2));
        assert_eq!(count("grouping_test_a,verify"), Some(1));
        assert_eq!(
            by.group("grouping_test_b,split").map(Log2Hist::total_bytes),
            Some(512)
        );
        assert!(
            by.groups.iter().all(|(k, _)| k.is_some()),
            "grouped keys only"
        );
    }

    #[test]
    fn formats_parse_case_insensitively() {
        assert_eq!("JSON".parse::<TraceFormat>().ok(), Some(TraceFormat::Json));
        assert_eq!(
            "ftrace".parse::<TraceFormat>().ok(),
            Some(TraceFormat::Ftrace)
        );
        assert!(matches!(
            "xml".parse::<TraceFormat>(),
            Err(TraceError::BadFormat(f)) if f == "xml"
        ));
    }
}
