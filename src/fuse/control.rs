//! The control directory, `MOUNTPOINT/.labfs/`: statistics and traces as files, laid out like
//! the kernel's (`/sys/fs/xfs/<dev>/stats/` and `/sys/kernel/tracing/`).
//!
//! ```text
//! .labfs/
//!   pid                      the mount daemon's process id (labfs umount waits for it)
//!   stats/stats              this mount's /proc/fs/xfs/stat text
//!   stats/stats_clear        write 1 to zero the counters (all but vnodes[0])
//!   tracing/available_events
//!   tracing/set_event
//!   tracing/tracing_on
//!   tracing/trace
//!   tracing/trace_pipe
//!   tracing/events/SUBSYSTEM/EVENT/{enable,trigger,hist}
//! ```
//!
//! The nodes are synthetic: they live only in the FUSE layer, never on the device, and their
//! node ids carry [`CONTROL_BIT`]. The name `.labfs` is reserved in the root of the mount:
//! creating it fails with `EEXIST`, removing or renaming it with `EPERM`, and an entry of that
//! name already on the device (made in-process) is hidden while mounted.

use crate::fuse::nodes::CONTROL_BIT;
use crate::trace::list;
use crate::trace::schema::EventDef;

/// Name of the control directory in the root of the mount.
pub const CONTROL_DIR: &str = ".labfs";

/// One node of the control tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CtlNode {
    /// `.labfs/`.
    Root,
    /// `.labfs/pid`.
    Pid,
    /// `.labfs/stats/`.
    StatsDir,
    /// `.labfs/stats/stats`.
    Stats,
    /// `.labfs/stats/stats_clear`.
    StatsClear,
    /// `.labfs/tracing/`.
    TracingDir,
    /// `tracing/available_events`.
    AvailableEvents,
    /// `tracing/set_event`.
    SetEvent,
    /// `tracing/tracing_on`.
    TracingOn,
    /// `tracing/trace`.
    Trace,
    /// `tracing/trace_pipe`.
    TracePipe,
    /// `tracing/events/`.
    EventsDir,
    /// `tracing/events/SUBSYSTEM/` (index into [`subsystems`]).
    Subsystem(u16),
    /// `tracing/events/SUBSYSTEM/EVENT/` (event id).
    EventDir(u16),
    /// `.../EVENT/enable`.
    EventEnable(u16),
    /// `.../EVENT/trigger`.
    EventTrigger(u16),
    /// `.../EVENT/hist`.
    EventHist(u16),
}

/// The trace subsystems, in event declaration order.
pub fn subsystems() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in list() {
        if !out.contains(&e.subsystem()) {
            out.push(e.subsystem());
        }
    }
    out
}

fn event(id: u16) -> Option<&'static EventDef> {
    list().get(usize::from(id)).copied()
}

impl CtlNode {
    /// The FUSE node id.
    pub fn node_id(self) -> u64 {
        let (tag, idx): (u64, u16) = match self {
            CtlNode::Root => (0, 0),
            CtlNode::Pid => (1, 0),
            CtlNode::StatsDir => (2, 0),
            CtlNode::Stats => (3, 0),
            CtlNode::StatsClear => (4, 0),
            CtlNode::TracingDir => (5, 0),
            CtlNode::AvailableEvents => (6, 0),
            CtlNode::SetEvent => (7, 0),
            CtlNode::TracingOn => (8, 0),
            CtlNode::Trace => (9, 0),
            CtlNode::TracePipe => (10, 0),
            CtlNode::EventsDir => (11, 0),
            CtlNode::Subsystem(i) => (12, i),
            CtlNode::EventDir(i) => (13, i),
            CtlNode::EventEnable(i) => (14, i),
            CtlNode::EventTrigger(i) => (15, i),
            CtlNode::EventHist(i) => (16, i),
        };
        CONTROL_BIT | (tag << 16) | u64::from(idx)
    }

    /// The control node a node id names, if it names one.
    pub fn from_node_id(node: u64) -> Option<CtlNode> {
        if node & CONTROL_BIT == 0 {
            return None;
        }
        let tag = (node & !CONTROL_BIT) >> 16;
        let idx = (node & 0xffff) as u16;
        let n = match tag {
            0 => CtlNode::Root,
            1 => CtlNode::Pid,
            2 => CtlNode::StatsDir,
            3 => CtlNode::Stats,
            4 => CtlNode::StatsClear,
            5 => CtlNode::TracingDir,
            6 => CtlNode::AvailableEvents,
            7 => CtlNode::SetEvent,
            8 => CtlNode::TracingOn,
            9 => CtlNode::Trace,
            10 => CtlNode::TracePipe,
            11 => CtlNode::EventsDir,
            12 if usize::from(idx) < subsystems().len() => CtlNode::Subsystem(idx),
            13 if event(idx).is_some() => CtlNode::EventDir(idx),
            14 if event(idx).is_some() => CtlNode::EventEnable(idx),
            15 if event(idx).is_some() => CtlNode::EventTrigger(idx),
            16 if event(idx).is_some() => CtlNode::EventHist(idx),
            _ => return None,
        };
        (n.node_id() == node).then_some(n)
    }

    /// Whether this is a directory.
    pub fn is_dir(self) -> bool {
        matches!(
            self,
            CtlNode::Root
                | CtlNode::StatsDir
                | CtlNode::TracingDir
                | CtlNode::EventsDir
                | CtlNode::Subsystem(_)
                | CtlNode::EventDir(_)
        )
    }

    /// Permission bits, as the kernel's files have them.
    pub fn perm(self) -> u16 {
        match self {
            n if n.is_dir() => 0o555,
            CtlNode::StatsClear => 0o200,
            CtlNode::SetEvent
            | CtlNode::TracingOn
            | CtlNode::Trace
            | CtlNode::EventEnable(_)
            | CtlNode::EventTrigger(_) => 0o644,
            _ => 0o444,
        }
    }

    /// The directory holding this node (the root's parent is outside the tree: `None`).
    pub fn parent(self) -> Option<CtlNode> {
        Some(match self {
            CtlNode::Root => return None,
            CtlNode::Pid | CtlNode::StatsDir | CtlNode::TracingDir => CtlNode::Root,
            CtlNode::Stats | CtlNode::StatsClear => CtlNode::StatsDir,
            CtlNode::AvailableEvents
            | CtlNode::SetEvent
            | CtlNode::TracingOn
            | CtlNode::Trace
            | CtlNode::TracePipe
            | CtlNode::EventsDir => CtlNode::TracingDir,
            CtlNode::Subsystem(_) => CtlNode::EventsDir,
            CtlNode::EventDir(i) => {
                let sys = event(i)?.subsystem();
                let idx = subsystems().iter().position(|s| *s == sys)?;
                CtlNode::Subsystem(idx as u16)
            }
            CtlNode::EventEnable(i) | CtlNode::EventTrigger(i) | CtlNode::EventHist(i) => {
                CtlNode::EventDir(i)
            }
        })
    }

    /// A directory's entries (not `.` and `..`).
    pub fn children(self) -> Vec<(String, CtlNode)> {
        let fixed = |v: &[(&str, CtlNode)]| -> Vec<(String, CtlNode)> {
            v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
        };
        match self {
            CtlNode::Root => fixed(&[
                ("pid", CtlNode::Pid),
                ("stats", CtlNode::StatsDir),
                ("tracing", CtlNode::TracingDir),
            ]),
            CtlNode::StatsDir => fixed(&[
                ("stats", CtlNode::Stats),
                ("stats_clear", CtlNode::StatsClear),
            ]),
            CtlNode::TracingDir => fixed(&[
                ("available_events", CtlNode::AvailableEvents),
                ("set_event", CtlNode::SetEvent),
                ("tracing_on", CtlNode::TracingOn),
                ("trace", CtlNode::Trace),
                ("trace_pipe", CtlNode::TracePipe),
                ("events", CtlNode::EventsDir),
            ]),
            CtlNode::EventsDir => subsystems()
                .iter()
                .enumerate()
                .map(|(i, s)| (s.to_string(), CtlNode::Subsystem(i as u16)))
                .collect(),
            CtlNode::Subsystem(i) => {
                let Some(sys) = subsystems().get(usize::from(i)).copied() else {
                    return Vec::new();
                };
                list()
                    .iter()
                    .filter(|e| e.subsystem() == sys)
                    .map(|e| (e.name().to_string(), CtlNode::EventDir(e.id() as u16)))
                    .collect()
            }
            CtlNode::EventDir(i) => fixed(&[
                ("enable", CtlNode::EventEnable(i)),
                ("trigger", CtlNode::EventTrigger(i)),
                ("hist", CtlNode::EventHist(i)),
            ]),
            _ => Vec::new(),
        }
    }

    /// The child called `name`.
    pub fn lookup(self, name: &str) -> Option<CtlNode> {
        self.children()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
    }

    /// The event an `events/...` node belongs to.
    pub fn event(self) -> Option<&'static EventDef> {
        match self {
            CtlNode::EventDir(i)
            | CtlNode::EventEnable(i)
            | CtlNode::EventTrigger(i)
            | CtlNode::EventHist(i) => event(i),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node reachable from the root, depth first.
    fn all() -> Vec<CtlNode> {
        let mut out = vec![CtlNode::Root];
        let mut i = 0;
        while i < out.len() {
            let kids: Vec<CtlNode> = out[i].children().into_iter().map(|(_, c)| c).collect();
            out.extend(kids);
            i += 1;
        }
        out
    }

    #[test]
    fn node_ids_round_trip_and_parents_hold_their_children() {
        let nodes = all();
        assert!(
            nodes.len() > 4 * list().len(),
            "every event has its directory"
        );
        for n in &nodes {
            assert_eq!(CtlNode::from_node_id(n.node_id()), Some(*n), "{n:?}");
            assert!(n.node_id() & CONTROL_BIT != 0);
            for (name, c) in n.children() {
                assert_eq!(c.parent(), Some(*n), "{name}");
                assert_eq!(n.lookup(&name), Some(c));
            }
        }
        assert_eq!(CtlNode::from_node_id(12345), None);
        assert_eq!(
            CtlNode::from_node_id(CONTROL_BIT | (13 << 16) | 0xffff),
            None
        );
        assert_eq!(CtlNode::from_node_id(CONTROL_BIT | (99 << 16)), None);
    }

    #[test]
    fn the_tree_has_the_kernels_shape() {
        let tracing = CtlNode::Root.lookup("tracing").unwrap();
        let ev = tracing
            .lookup("events")
            .and_then(|e| e.lookup("xfs"))
            .and_then(|s| s.lookup("xfs_log_force"))
            .unwrap();
        assert_eq!(ev.event().map(|e| e.name()), Some("xfs_log_force"));
        assert!(ev.lookup("hist").is_some() && ev.lookup("trigger").is_some());
        assert_eq!(
            CtlNode::Root.lookup("stats").unwrap().lookup("stats_clear"),
            Some(CtlNode::StatsClear)
        );
        assert_eq!(CtlNode::StatsClear.perm(), 0o200, "write-only like sysfs");
    }
}
