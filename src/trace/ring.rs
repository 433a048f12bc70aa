//! Bounded overwrite-oldest ring buffers and the records they hold.
//!
//! A ring keeps at most `capacity` entries; once full, each new entry replaces the oldest and
//! bumps an overwrite counter, which is how ftrace's default (overwrite) mode behaves and what
//! makes `entries-in-buffer/entries-written` add up. Storage grows on demand up to the
//! capacity, so a thread that fires three events holds three records, not a full ring.

use super::schema::{EventDef, MAX_FIELDS, Value};

/// One fired event as stored: when, where, which event and its field values.
///
/// `Copy` and heap-free (strings are `'static`), so storing one is a memcpy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    /// `CLOCK_MONOTONIC` nanoseconds.
    pub ts_ns: u64,
    /// CPU the thread ran on when it fired.
    pub cpu: u32,
    /// The event.
    pub event: &'static EventDef,
    /// Field values in declaration order; slots past the event's field count are filler.
    pub values: [Value; MAX_FIELDS],
}

impl Record {
    /// The values that belong to the event's fields.
    pub fn fields(&self) -> &[Value] {
        &self.values[..self.event.fields().len()]
    }
}

/// The thread that fired a record, as ftrace names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskInfo {
    /// Command name (at most 15 bytes, like `comm`).
    pub comm: String,
    /// Kernel thread id.
    pub tid: i32,
}

/// A bounded ring that overwrites its oldest entry when full.
#[derive(Debug)]
pub(crate) struct Ring<T> {
    buf: Vec<T>,
    /// Index of the oldest entry once the ring is full (0 until then).
    head: usize,
    capacity: usize,
    overwritten: u64,
}

impl<T: Copy> Ring<T> {
    /// An empty ring holding at most `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            capacity: capacity.max(1),
            overwritten: 0,
        }
    }

    /// Append, replacing the oldest entry if the ring is full.
    pub fn push(&mut self, v: T) {
        if self.buf.len() < self.capacity {
            if self.buf.len() == self.buf.capacity() {
                // Grow geometrically but never past the capacity.
                let room = self.capacity - self.buf.len();
                self.buf.reserve_exact(self.buf.len().max(16).min(room));
            }
            self.buf.push(v);
        } else {
            self.buf[self.head] = v;
            self.head = (self.head + 1) % self.capacity;
            self.overwritten += 1;
        }
    }

    /// Entries lost to overwriting since the ring was made.
    pub fn overwritten(&self) -> u64 {
        self.overwritten
    }

    /// The entries, oldest first, copied out.
    pub fn to_vec(&self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.buf.len());
        out.extend_from_slice(&self.buf[self.head..]);
        out.extend_from_slice(&self.buf[..self.head]);
        out
    }

    /// Forget everything, including the overwrite count (a cleared trace buffer).
    pub fn reset(&mut self) {
        self.buf = Vec::new();
        self.head = 0;
        self.overwritten = 0;
    }

    /// Remove and return the entries, oldest first, releasing the storage.
    pub fn take(&mut self) -> Vec<T> {
        let out = self.to_vec();
        self.buf = Vec::new();
        self.head = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_newest_entries_in_order() {
        let mut r = Ring::new(4);
        for i in 0..3 {
            r.push(i);
        }
        assert_eq!(r.to_vec(), vec![0, 1, 2]);
        assert_eq!(r.overwritten(), 0);
        for i in 3..10 {
            r.push(i);
        }
        assert_eq!(r.buf.len(), 4);
        assert_eq!(r.to_vec(), vec![6, 7, 8, 9]);
        assert_eq!(r.overwritten(), 6);
        assert_eq!(r.take(), vec![6, 7, 8, 9]);
        assert_eq!(r.buf.len(), 0);
        r.push(10);
        assert_eq!(r.to_vec(), vec![10]);
        // Overwrites are a lifetime count; they survive a take, not a reset.
        assert_eq!(r.overwritten(), 6);
        r.reset();
        assert_eq!((r.to_vec(), r.overwritten()), (vec![], 0));
    }

    #[test]
    fn records_stay_within_the_documented_224_bytes() {
        assert!(std::mem::size_of::<Record>() <= 224);
    }

    #[test]
    fn ring_storage_never_exceeds_capacity() {
        let mut r = Ring::new(1000);
        for i in 0..5000u32 {
            r.push(i);
            assert!(r.buf.capacity() <= 1000, "capacity {}", r.buf.capacity());
        }
        assert_eq!(r.buf.len(), 1000);
        assert_eq!(r.to_vec().first(), Some(&4000));
        let mut one = Ring::new(0);
        one.push(1);
        one.push(2);
        assert_eq!((one.to_vec(), one.overwritten()), (vec![2], 1));
    }
}
