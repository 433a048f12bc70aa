//! The shape of an event: what a declared event is ([`EventDef`]), what its fields are
//! ([`FieldDef`], [`FieldKind`]) and what a fired event's values hold ([`Value`]).
//!
//! These types are all that the catalogue ([`super::events`]), the rings and the text
//! formatting need to know about an event. They live apart from the lookup over the catalogue
//! ([`super::registry`]) because that lookup needs the catalogue itself: with the shape in the
//! registry, the catalogue and the registry imported each other.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Dev;

/// Most fields an event can carry (the ring stores values inline, without allocation).
pub const MAX_FIELDS: usize = 8;

/// The type of an event field, which decides how it prints and whether it can key a histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// A block device number, `major:minor`.
    Dev,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 32-bit integer.
    I32,
    /// A static string (symbolic names: states, flags, structure kinds, callers).
    Str,
}

impl FieldKind {
    /// The name used in listings and JSON schemas: `dev`, `u32`, `u64`, `i32`, `str`.
    pub fn name(self) -> &'static str {
        match self {
            FieldKind::Dev => "dev",
            FieldKind::U32 => "u32",
            FieldKind::U64 => "u64",
            FieldKind::I32 => "i32",
            FieldKind::Str => "str",
        }
    }

    /// True for unsigned integers, the fields an ilog2 histogram can be keyed by.
    pub fn is_unsigned(self) -> bool {
        matches!(self, FieldKind::U32 | FieldKind::U64)
    }
}

/// One field of an event: its name and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDef {
    /// Field name, as it appears in JSON output and histogram specs.
    pub name: &'static str,
    /// Field type.
    pub kind: FieldKind,
}

/// A field value as recorded. Strings are `'static`, so a record never owns heap memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Value {
    /// A device number.
    Dev(Dev),
    /// Any unsigned integer (u32 fields widen).
    U64(u64),
    /// Any signed integer (i32 fields widen).
    I64(i64),
    /// A static string.
    Str(&'static str),
}

impl Value {
    /// Filler for unused slots of a record.
    pub(crate) const EMPTY: Value = Value::U64(0);

    /// The unsigned value, if this is one.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::U64(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Dev(d) => write!(f, "{d}"),
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

impl From<Dev> for Value {
    fn from(d: Dev) -> Self {
        Value::Dev(d)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::U64(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::U64(u64::from(v))
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::I64(i64::from(v))
    }
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Self {
        Value::Str(s)
    }
}

/// A declared event: name, subsystem, class, typed fields, print format and enabled flag.
///
/// The print format is the kernel's `TP_printk` written as a template: `{field}` prints a
/// field plainly, `{field:spec}` with a spec: `x` (hex digits), `o` (octal digits), `p`
/// (`0x` and 16 hex digits, a pointer), `lsn` (`cycle/block` of an XFS LSN, both signed
/// 32-bit like `%d/%d`), and for devices `comma` (`major,minor` as the writeback events print
/// it). Literal text, such as the `0x` before a hex LSN, is part of the template.
#[derive(Debug)]
pub struct EventDef {
    pub(crate) id: u16,
    pub(crate) name: &'static str,
    pub(crate) subsystem: &'static str,
    pub(crate) class: &'static str,
    pub(crate) fields: &'static [FieldDef],
    pub(crate) format: &'static str,
    pub(crate) enabled: AtomicBool,
}

impl EventDef {
    /// Position in [`list`](super::registry::list), stable for one build.
    pub fn id(&self) -> usize {
        usize::from(self.id)
    }

    /// Event name, e.g. `xfs_ail_push`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Subsystem (the kernel's trace system), e.g. `xfs`, `writeback`, `fslab`.
    pub fn subsystem(&self) -> &'static str {
        self.subsystem
    }

    /// The event class it belongs to (events of one class share fields and format).
    pub fn class(&self) -> &'static str {
        self.class
    }

    /// The typed fields, in call-site argument order.
    pub fn fields(&self) -> &'static [FieldDef] {
        self.fields
    }

    /// The print template (see the type's docs for the syntax).
    pub fn format(&self) -> &'static str {
        self.format
    }

    /// Whether the event fires now (a session has it enabled).
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    pub(crate) fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Check the print template: every `{field}` reference names a field of this event and uses a
    /// spec valid for the field's type, and braces balance.
    pub fn check_format(&self) -> Result<(), String> {
        let mut rest = self.format;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("{}: unclosed '{{' in format", self.name))?;
            let field_ref = &after[..close];
            let (field, spec) = field_ref.split_once(':').unwrap_or((field_ref, ""));
            let def = self
                .fields
                .iter()
                .find(|f| f.name == field)
                .ok_or_else(|| format!("{}: format names unknown field '{field}'", self.name))?;
            let ok = match def.kind {
                FieldKind::Dev => matches!(spec, "" | "comma"),
                FieldKind::U32 | FieldKind::U64 => matches!(spec, "" | "x" | "o" | "p" | "lsn"),
                FieldKind::I32 | FieldKind::Str => spec.is_empty(),
            };
            if !ok {
                return Err(format!(
                    "{}: spec '{spec}' does not apply to {} field '{field}'",
                    self.name,
                    def.kind.name()
                ));
            }
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("{}: stray '}}' in format", self.name));
        }
        Ok(())
    }
}

impl fmt::Display for EventDef {
    /// `subsystem:name (class) field:type ... "format"`, one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} ({})", self.subsystem, self.name, self.class)?;
        for field in self.fields {
            write!(f, " {}:{}", field.name, field.kind.name())?;
        }
        write!(f, " \"{}\"", self.format)
    }
}
