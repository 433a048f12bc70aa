//! The event catalogue and the functions code calls to fire events.
//!
//! Each event is one line in the `tracepoints!` invocation below, grouped by class as in the
//! kernel (`DECLARE_EVENT_CLASS` + `DEFINE_EVENT`): a class gives the subsystem, the typed
//! fields (which are also the call-site arguments, in order) and the print template; each
//! event of the class gets
//!
//! - a `static` [`EventDef`] in the registry ([`super::registry::list`]), with its enabled flag;
//! - a public `#[inline(always)]` function of the same name, e.g. [`xfs_log_force`], whose
//!   whole disabled cost is one relaxed load of that flag and a predictable branch;
//! - a private `#[cold]` `#[inline(never)]` emitter the function calls when the flag is set,
//!   so building the record (clock, CPU, thread buffer) stays out of the caller's code path.
//!
//! Adding an event is one line in an existing class, or one class block. Print templates
//! follow the kernel's `TP_printk` (`fs/xfs/xfs_trace.h`,
//! `include/trace/events/writeback.h`); the registry's tests check every template against
//! its fields.

use std::sync::atomic::{AtomicBool, Ordering};

use super::Dev;
use super::collect;
use super::schema::{EventDef, FieldDef, FieldKind, MAX_FIELDS, Value};

/// The Rust type a field kind takes at the call site.
macro_rules! field_ty {
    (dev) => { Dev };
    (u32) => { u32 };
    (u64) => { u64 };
    (i32) => { i32 };
    (str) => { &'static str };
}

/// The schema's [`FieldKind`] for a field kind.
macro_rules! field_kind {
    (dev) => {
        FieldKind::Dev
    };
    (u32) => {
        FieldKind::U32
    };
    (u64) => {
        FieldKind::U64
    };
    (i32) => {
        FieldKind::I32
    };
    (str) => {
        FieldKind::Str
    };
}

/// Declares event classes and their events (see the module docs).
macro_rules! tracepoints {
    (
        $(
            $(#[doc = $cdoc:literal])*
            class $class:ident ($subsys:literal) { $($field:ident : $kind:ident),* $(,)? }
            print $fmt:literal
            events { $( $(#[doc = $edoc:literal])* $ev:ident; )+ }
        )*
    ) => {
        /// Dense event numbers: the position of each event in [`ALL`].
        #[allow(non_camel_case_types, clippy::enum_variant_names)]
        #[derive(Clone, Copy)]
        #[repr(u16)]
        enum EventId { $( $( $ev, )+ )* }

        /// Every event, in declaration order (the registry).
        pub(crate) static ALL: &[&EventDef] = &[ $( $( &$ev::DEF, )+ )* ];

        $(
            tracepoints!(@events [$(#[doc = $cdoc])*] $class $subsys $fmt
                [$($field : $kind),*]
                { $( [$(#[doc = $edoc])*] $ev; )+ });
        )*
    };

    (@events $cdoc:tt $class:ident $subsys:literal $fmt:literal $fields:tt
        { $edoc:tt $ev:ident; $($rest:tt)* }) => {
        tracepoints!(@one $cdoc $edoc $class $subsys $fmt $fields $ev);
        tracepoints!(@events $cdoc $class $subsys $fmt $fields { $($rest)* });
    };
    (@events $cdoc:tt $class:ident $subsys:literal $fmt:literal $fields:tt { }) => {};

    (@one [$(#[doc = $cdoc:literal])*] [$(#[doc = $edoc:literal])*] $class:ident
        $subsys:literal $fmt:literal [$($field:ident : $kind:ident),*] $ev:ident) => {
        $(#[doc = $edoc])*
        ///
        $(#[doc = $cdoc])*
        #[doc = concat!("\n\nPrints `", stringify!($ev), ": ", $fmt, "`.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub fn $ev($($field: field_ty!($kind)),*) {
            if $ev::DEF.enabled.load(Ordering::Relaxed) {
                $ev::emit($($field),*);
            }
        }

        mod $ev {
            use super::*;

            const N_FIELDS: usize = {
                let names: &[&str] = &[$(stringify!($field)),*];
                names.len()
            };
            const _: () = assert!(N_FIELDS <= MAX_FIELDS, "too many fields for one event");

            pub(super) static DEF: EventDef = EventDef {
                id: EventId::$ev as u16,
                name: stringify!($ev),
                subsystem: $subsys,
                class: stringify!($class),
                fields: &[$(FieldDef { name: stringify!($field), kind: field_kind!($kind) }),*],
                format: $fmt,
                enabled: AtomicBool::new(false),
            };

            #[cold]
            #[inline(never)]
            #[allow(clippy::too_many_arguments)]
            pub(super) fn emit($($field: field_ty!($kind)),*) {
                let given: [Value; N_FIELDS] = [$(Value::from($field)),*];
                let mut values = [Value::EMPTY; MAX_FIELDS];
                values[..given.len()].copy_from_slice(&given);
                collect::emit(&DEF, values);
            }
        }
    };
}

tracepoints! {
    /// Fields: the metadata structure checksummed (`site`), the bytes covered (`len`), the
    /// bytes before and after the CRC field (`head`, `tail`; 0 for a single pass), the update
    /// mode (`single`, `split`, `verify`) and the CRC engine.
    class crc32c_class ("fslab") {
        site: str, len: u32, head: u32, tail: u32, mode: str, engine: str
    }
    print "site {site} len {len} head {head} tail {tail} mode {mode} engine {engine}"
    events {
        /// One metadata CRC computation (fslab's own event; seed 004's histogram source).
        crc32c;
    }

    /// Fields: device, the LSN forced to (for a force by CIL sequence, the sequence number;
    /// 0 for a whole-log force) and the caller.
    class xfs_log_force_class ("xfs") { dev: dev, lsn: u64, caller: str }
    print "dev {dev} lsn 0x{lsn:x} caller {caller}"
    events {
        /// A log force was requested.
        xfs_log_force;
    }

    /// Fields: device, iclog state (`XLOG_STATE_*`), reference count, write offset within the
    /// iclog, the record's LSN, flags (`XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA`) and caller.
    class xlog_iclog_class ("xfs") {
        dev: dev, state: str, refcnt: i32, offset: u32, lsn: u64, flags: str, caller: str
    }
    print "dev {dev} state {state} refcnt {refcnt} offset {offset} lsn 0x{lsn:x} flags {flags} caller {caller}"
    events {
        /// An iclog was made ACTIVE again after its callbacks ran.
        xlog_iclog_activate;
        /// An iclog was cleaned after I/O completion.
        xlog_iclog_clean;
        /// An iclog's completion callbacks are about to run.
        xlog_iclog_callback;
        /// Callback processing started for an iclog.
        xlog_iclog_callbacks_start;
        /// Callback processing finished for an iclog.
        xlog_iclog_callbacks_done;
        /// A log force found this iclog (force by LSN or whole log).
        xlog_iclog_force;
        /// A force to a specific LSN found this iclog.
        xlog_iclog_force_lsn;
        /// Space was reserved in an iclog for a log write.
        xlog_iclog_get_space;
        /// A reference to an iclog was released.
        xlog_iclog_release;
        /// The current iclog was switched out (moved to WANT_SYNC).
        xlog_iclog_switch;
        /// An iclog is being prepared for writing (record header, CRC, padding).
        xlog_iclog_sync;
        /// An iclog's write was submitted (SYNCING).
        xlog_iclog_syncing;
        /// An iclog's write completed (DONE_SYNC).
        xlog_iclog_sync_done;
        /// A waiter sleeps on an iclog.
        xlog_iclog_wait_on;
        /// An iclog's buffer is written to the device.
        xlog_iclog_write;
    }

    /// Fields: device, the log item's address, its LSN (printed cycle/block), item type
    /// (`XFS_LI_*`) and flags (`IN_AIL|ABORTED|FAILED|DIRTY|WHITEOUT|FLUSHING`).
    class xfs_log_item_class ("xfs") {
        dev: dev, lip: u64, lsn: u64, item_type: str, flags: str
    }
    print "dev {dev} lip {lip:p} lsn {lsn:lsn} type {item_type} flags {flags}"
    events {
        /// xfsaild pushed an item to its home location (push outcome SUCCESS).
        xfs_ail_push;
        /// xfsaild found an item pinned in the log (PINNED); the log must be forced first.
        xfs_ail_pinned;
        /// xfsaild could not lock an item (LOCKED).
        xfs_ail_locked;
        /// An item is already being flushed (FLUSHING).
        xfs_ail_flushing;
    }

    /// Fields: device, item address, the old and new LSN (cycle/block), item type and flags.
    /// Insert: old 0, new = insertion LSN. Move: old = previous LSN. Delete: old = the AIL's
    /// minimum LSN, new = the deleted item's LSN.
    class xfs_ail_class ("xfs") {
        dev: dev, lip: u64, old_lsn: u64, new_lsn: u64, item_type: str, flags: str
    }
    print "dev {dev} lip {lip:p} old lsn {old_lsn:lsn} new lsn {new_lsn:lsn} type {item_type} flags {flags}"
    events {
        /// A committed item entered the AIL.
        xfs_ail_insert;
        /// An item already in the AIL was relogged and moved to a newer LSN.
        xfs_ail_move;
        /// An item left the AIL (written home).
        xfs_ail_delete;
    }

    /// Fields: device (printed `major,minor`), inode number, when it was dirtied (jiffies),
    /// inode state flags (`I_DIRTY_PAGES|...`) and mode (printed octal).
    class writeback_inode_template ("writeback") {
        dev: dev, ino: u64, dirtied_when: u64, state: str, mode: u32
    }
    print "dev {dev:comma} ino {ino} dirtied {dirtied_when} state {state} mode 0{mode:o}"
    events {
        /// An inode joined the superblock's writeback list (first page under writeback).
        sb_mark_inode_writeback;
        /// An inode left the writeback list (its last writeback completed).
        sb_clear_inode_writeback;
    }
}
