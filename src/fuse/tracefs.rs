//! The `tracing/` control files: tracefs's gestures driving one [`Session`].
//!
//! | file | read | write |
//! |------|------|-------|
//! | `available_events` | `subsystem:event`, one per line | — |
//! | `set_event` | the recorded events, `subsystem:event` per line | terms to record, `!term` to stop recording one; truncating (`>`) clears first |
//! | `tracing_on` | `1` or `0` | `1` resumes, `0` pauses every event (what was collected stays) |
//! | `trace` | the ftrace text: header, then the records in the rings | truncating clears the rings |
//! | `trace_pipe` | records without a header, consumed as read; blocks until there are some | — |
//! | `events/SYS/EVENT/enable` | `1` if recorded | `1`/`0` |
//! | `events/SYS/EVENT/trigger` | the histogram triggers on the event | `hist:keys=FIELD.log2` or `hist:keys=GROUP,FIELD.log2`; `!` before it removes |
//! | `events/SYS/EVENT/hist` | the ilog2 histograms of the event's triggers, every row naming its byte range | — |
//!
//! Terms are what `--trace` takes ([`EventSet::parse`]): names, globs, `subsystem:glob`,
//! `all`. A term matching nothing, a malformed trigger or a field that cannot key an ilog2
//! histogram is `EINVAL`, as tracefs refuses them.
//!
//! The session is started on first use (tracefs is always there; a session is a process-wide
//! resource, so starting it lazily leaves other users of the process free until someone
//! traces). If another session is active in the process the files fail with `EBUSY`.

use std::fmt::Write as _;

use crate::trace::session::MAX_GROUP_FIELDS;
use crate::trace::{EventSet, HistSpec, Session, TraceConfig, TraceError, list};

/// Why a tracing control file refused a write or read.
#[derive(Debug, thiserror::Error)]
pub enum TraceCtlError {
    /// The text written does not parse (the reason says how).
    #[error("{0}")]
    Invalid(String),
    /// The trace layer refused (a bad event or histogram, or another session is active).
    #[error(transparent)]
    Trace(#[from] TraceError),
}

impl TraceCtlError {
    /// The errno the write or read fails with.
    pub fn errno(&self) -> nix::errno::Errno {
        match self {
            TraceCtlError::Trace(TraceError::SessionActive) => nix::errno::Errno::EBUSY,
            _ => nix::errno::Errno::EINVAL,
        }
    }
}

/// The mount's tracing state.
#[derive(Default)]
pub struct TraceCtl {
    session: Option<Session>,
}

impl TraceCtl {
    fn session(&mut self) -> Result<&mut Session, TraceCtlError> {
        if self.session.is_none() {
            self.session = Some(TraceConfig::default().start()?);
        }
        // Just made if it was missing.
        self.session
            .as_mut()
            .ok_or_else(|| TraceCtlError::Invalid("no trace session".into()))
    }

    /// `available_events`.
    pub fn available_events() -> String {
        list()
            .iter()
            .map(|e| format!("{}:{}\n", e.subsystem(), e.name()))
            .collect()
    }

    /// The recorded events (`set_event`).
    pub fn set_event_text(&mut self) -> String {
        let Some(s) = &self.session else {
            return String::new();
        };
        s.recorded()
            .iter()
            .map(|e| format!("{}:{}\n", e.subsystem(), e.name()))
            .collect()
    }

    /// Apply a write to `set_event`: each whitespace-separated term adds events, `!term`
    /// removes them.
    pub fn write_set_event(&mut self, text: &str) -> Result<(), TraceCtlError> {
        let s = self.session()?;
        let mut set = s.recorded().clone();
        for term in text.split_whitespace() {
            let (remove, pattern) = match term.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, term),
            };
            for e in EventSet::parse(pattern)?.iter() {
                if remove {
                    set.remove(e);
                } else {
                    set.insert(e);
                }
            }
        }
        s.set_recorded(set);
        Ok(())
    }

    /// Truncating `set_event`: record nothing.
    pub fn clear_set_event(&mut self) -> Result<(), TraceCtlError> {
        self.session()?.set_recorded(EventSet::empty());
        Ok(())
    }

    /// `tracing_on`.
    pub fn tracing_on_text(&self) -> String {
        let on = self.session.as_ref().is_none_or(|s| !s.is_paused());
        format!("{}\n", u8::from(on))
    }

    /// Write `tracing_on`: a number, non-zero to trace.
    pub fn write_tracing_on(&mut self, text: &str) -> Result<(), TraceCtlError> {
        let v = parse_number(text)?;
        self.session()?.set_paused(v == 0);
        Ok(())
    }

    /// `trace`: header and the records in the rings.
    pub fn trace_text(&mut self) -> Result<Vec<u8>, TraceCtlError> {
        let mut out = Vec::new();
        self.session()?
            .snapshot(&mut out)
            .map_err(|e| TraceCtlError::Invalid(e.to_string()))?;
        Ok(out)
    }

    /// Truncating `trace`: empty the rings.
    pub fn clear_trace(&mut self) -> Result<(), TraceCtlError> {
        self.session()?.clear_records();
        Ok(())
    }

    /// `trace_pipe`: take what the rings hold now (possibly nothing).
    pub fn drain(&mut self) -> Result<Vec<u8>, TraceCtlError> {
        let mut out = Vec::new();
        self.session()?
            .drain(&mut out)
            .map_err(|e| TraceCtlError::Invalid(e.to_string()))?;
        Ok(out)
    }

    /// An event's `enable`.
    pub fn enable_text(&self, event: &str) -> String {
        let on = self
            .session
            .as_ref()
            .is_some_and(|s| s.recorded().iter().any(|e| e.name() == event));
        format!("{}\n", u8::from(on))
    }

    /// Write an event's `enable`.
    pub fn write_enable(&mut self, event: &str, text: &str) -> Result<(), TraceCtlError> {
        let on = parse_number(text)? != 0;
        let term = if on {
            event.to_string()
        } else {
            format!("!{event}")
        };
        self.write_set_event(&term)
    }

    /// An event's `trigger`: its histogram triggers, or the kernel's hint when there are none.
    pub fn trigger_text(&self, event: &str) -> String {
        let specs: Vec<HistSpec> = self
            .session
            .as_ref()
            .map(|s| s.histogram_specs())
            .unwrap_or_default()
            .into_iter()
            .filter(|h| h.event == event)
            .collect();
        if specs.is_empty() {
            return "# Available triggers:\n# hist\n".into();
        }
        specs
            .iter()
            .map(|h| format!("{} [active]\n", trigger_of(h)))
            .collect()
    }

    /// Write an event's `trigger`: `hist:keys=...` adds a histogram, `!hist:keys=...`
    /// removes it.
    pub fn write_trigger(&mut self, event: &str, text: &str) -> Result<(), TraceCtlError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let (remove, body) = match text.strip_prefix('!') {
            Some(b) => (true, b.trim()),
            None => (false, text),
        };
        let spec = parse_trigger(event, body)?;
        let s = self.session()?;
        if remove {
            if !s.remove_histogram(&spec) {
                return Err(TraceCtlError::Invalid(format!(
                    "no trigger '{}' on {event}",
                    trigger_of(&spec)
                )));
            }
            Ok(())
        } else {
            Ok(s.add_histogram(spec)?)
        }
    }

    /// An event's `hist`: each trigger's histograms as ilog2 tables.
    pub fn hist_text(&self, event: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# event histogram\n#");
        let hists = self
            .session
            .as_ref()
            .map(|s| s.histograms())
            .unwrap_or_default();
        for h in hists.iter().filter(|h| h.spec.event == event) {
            let _ = writeln!(out, "# trigger info: {} [active]\n#", trigger_of(&h.spec));
            out.push_str(&h.render_table());
            let total = h.total();
            let _ = writeln!(
                out,
                "Totals:\n    Hits: {}\n    Bytes: {}\n",
                total.total_count(),
                total.total_bytes()
            );
        }
        out
    }

    /// Whether a session exists and holds no records right now is not known without
    /// draining; this says whether tracing is paused (trace_pipe stops waiting then).
    pub fn is_paused(&self) -> bool {
        self.session.as_ref().is_some_and(Session::is_paused)
    }
}

/// `hist:keys=...` for a spec: the value field with the `.log2` modifier, its group first.
pub fn trigger_of(spec: &HistSpec) -> String {
    let mut keys = spec.group_by.join(",");
    if !keys.is_empty() {
        keys.push(',');
    }
    format!("hist:keys={keys}{}.log2", spec.field)
}

/// Parse `hist:keys=FIELD.log2` or `hist:keys=GROUP[,GROUP...],FIELD.log2` (other
/// `:key=value` parts of the kernel's syntax are not supported and refused).
pub fn parse_trigger(event: &str, text: &str) -> Result<HistSpec, TraceCtlError> {
    let bad = |why: &str| TraceCtlError::Invalid(format!("trigger '{text}': {why}"));
    let rest = text
        .strip_prefix("hist:")
        .ok_or_else(|| bad("only hist triggers are supported"))?;
    let mut keys = None;
    for part in rest.split(':') {
        match part.split_once('=') {
            Some(("keys" | "key", v)) => keys = Some(v),
            _ => return Err(bad("expected keys=FIELD.log2 or keys=GROUP,...,FIELD.log2")),
        }
    }
    let keys: Vec<&str> = keys
        .ok_or_else(|| bad("no keys="))?
        .split(',')
        .map(str::trim)
        .collect();
    let Some((value, groups)) = keys.split_last() else {
        return Err(bad("no keys="));
    };
    if groups.len() > MAX_GROUP_FIELDS {
        return Err(bad(&format!(
            "at most {MAX_GROUP_FIELDS} group keys before FIELD.log2"
        )));
    }
    let field = value
        .strip_suffix(".log2")
        .ok_or_else(|| bad("the value key needs the .log2 modifier (ilog2 histograms)"))?;
    if groups.iter().any(|g| g.is_empty() || g.contains('.')) {
        return Err(bad("a group key is a plain field name (no modifier)"));
    }
    Ok(groups
        .iter()
        .fold(HistSpec::new(event, field), |spec, g| spec.grouped_by(g)))
}

/// A number as sysfs/tracefs files take it (`kstrtoint` with base 0): decimal, `0x` hex or
/// `0` octal, surrounding whitespace allowed.
pub fn parse_number(text: &str) -> Result<i64, TraceCtlError> {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let parsed = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<i64>()
    };
    parsed
        .map(|v| if neg { -v } else { v })
        .map_err(|_| TraceCtlError::Invalid(format!("'{}' is not a number", text.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_parse_to_specs_and_print_back() {
        let s = parse_trigger("crc32c", "hist:keys=len.log2").unwrap();
        assert_eq!(s, HistSpec::new("crc32c", "len"));
        assert_eq!(trigger_of(&s), "hist:keys=len.log2");
        let g = parse_trigger("crc32c", "hist:keys=site,len.log2").unwrap();
        assert_eq!(g, HistSpec::new("crc32c", "len").grouped_by("site"));
        assert_eq!(trigger_of(&g), "hist:keys=site,len.log2");
        let gg = parse_trigger("crc32c", "hist:keys=site,mode,len.log2").unwrap();
        assert_eq!(gg, g.clone().grouped_by("mode"));
        assert_eq!(trigger_of(&gg), "hist:keys=site,mode,len.log2");
        for bad in [
            "hist:keys=len",
            "traceon",
            "hist:keys=a,b,c,d,e,len.log2",
            "hist:keys=site,,len.log2",
            "hist:vals=x",
            "hist:keys=site.log2,len.log2",
        ] {
            assert!(parse_trigger("crc32c", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbers_parse_like_kstrtoint() {
        assert_eq!(parse_number(" 1\n").unwrap(), 1);
        assert_eq!(parse_number("0x10").unwrap(), 16);
        assert_eq!(parse_number("010").unwrap(), 8);
        assert_eq!(parse_number("0").unwrap(), 0);
        assert_eq!(parse_number("-2").unwrap(), -2);
        assert!(parse_number("one").is_err());
        assert!(parse_number("").is_err());
    }

    #[test]
    fn available_events_names_every_event_with_its_subsystem() {
        let text = TraceCtl::available_events();
        assert_eq!(text.lines().count(), list().len());
        assert!(text.contains("xfs:xfs_log_force\n"));
        assert!(text.contains("writeback:sb_mark_inode_writeback\n"));
    }
}
