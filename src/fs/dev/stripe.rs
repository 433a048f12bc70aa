//! `stripe:N`: RAID0 over N member devices.
//!
//! # Address mapping
//!
//! The device is cut into stripe units of `su` bytes, dealt round-robin over the members:
//! unit `u` (bytes `u*su .. (u+1)*su`) lives on member `u % N` at member offset
//! `(u / N) * su`. A request is split at stripe-unit boundaries and each piece goes to its
//! member; pieces keep the request's FUA flag, and a flush flushes every member. The device
//! size is `N` times the smallest member's size rounded down to whole stripe units (members
//! of different sizes waste the difference, as md's RAID0 does within one zone).
//!
//! # Latency
//!
//! Each member may have its own [`QueueModel`]. A request books every piece on its member's
//! queue first, performs the pieces, then waits once, until the latest completion: a large
//! write split over members finishes when the slowest member does, not after the sum of them,
//! which is why striping shows up in throughput. (Wrapping each member in its own
//! [`crate::fs::dev::LatencyDev`] would wait member by member, serialising them.)

use std::sync::Arc;
use std::time::Instant;

use crate::fs::dev::latency::{LatencyParams, QueueModel, wait_until};
use crate::fs::dev::{BlockDev, DevError, IoReq, SECTOR_SIZE, check_io};
use crate::units::format_size_iec;

/// One member: a device and the parameters of its queue model.
pub struct StripeMember {
    /// The member device, without a latency wrapper.
    pub dev: Arc<dyn BlockDev>,
    /// Its latency model ([`LatencyParams::NONE`] for none).
    pub latency: LatencyParams,
}

impl StripeMember {
    /// A member with no latency model.
    pub fn plain(dev: Arc<dyn BlockDev>) -> StripeMember {
        StripeMember {
            dev,
            latency: LatencyParams::NONE,
        }
    }
}

struct Member {
    dev: Arc<dyn BlockDev>,
    model: Option<QueueModel>,
}

/// RAID0 over N members; see the module docs for the mapping.
pub struct StripeDev {
    members: Vec<Member>,
    su: u64,
    size: u64,
}

/// One piece of a request that falls in a single stripe unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Member index.
    pub member: usize,
    /// Byte offset on the member.
    pub member_offset: u64,
    /// Range of the request's buffer.
    pub buf: std::ops::Range<usize>,
}

/// Split `[offset, offset + len)` into stripe-unit pieces for `n` members with unit `su`.
pub fn map_pieces(n: usize, su: u64, offset: u64, len: usize) -> Vec<Piece> {
    let n = n.max(1) as u64;
    let su = su.max(SECTOR_SIZE);
    let mut pieces = Vec::new();
    let mut done = 0usize;
    while done < len {
        let pos = offset + done as u64;
        let unit = pos / su;
        let in_unit = pos % su;
        let take = ((su - in_unit) as usize).min(len - done);
        pieces.push(Piece {
            member: (unit % n) as usize,
            member_offset: (unit / n) * su + in_unit,
            buf: done..done + take,
        });
        done += take;
    }
    pieces
}

impl StripeDev {
    /// A stripe over `members` (in stripe order) with stripe unit `su` bytes.
    pub fn new(members: Vec<StripeMember>, su: u64) -> Result<StripeDev, DevError> {
        if members.is_empty() {
            return Err(DevError::Config("a stripe needs at least 1 member".into()));
        }
        if su == 0 || !su.is_multiple_of(SECTOR_SIZE) {
            return Err(DevError::Config(format!(
                "stripe unit {su} is not a positive multiple of 512"
            )));
        }
        let smallest = members.iter().map(|m| m.dev.size()).min().unwrap_or(0);
        let units = smallest / su;
        if units == 0 {
            return Err(DevError::Config(format!(
                "stripe members must hold at least one {} stripe unit; the smallest holds {}",
                format_size_iec(su),
                format_size_iec(smallest)
            )));
        }
        let size = units * su * members.len() as u64;
        Ok(StripeDev {
            members: members
                .into_iter()
                .map(|m| Member {
                    model: (!m.latency.is_none()).then(|| QueueModel::new(m.latency)),
                    dev: m.dev,
                })
                .collect(),
            su,
            size,
        })
    }

    /// The stripe unit in bytes.
    pub fn stripe_unit(&self) -> u64 {
        self.su
    }

    /// The member devices, in stripe order.
    pub fn members(&self) -> impl Iterator<Item = &Arc<dyn BlockDev>> {
        self.members.iter().map(|m| &m.dev)
    }

    fn pieces(&self, offset: u64, len: usize) -> Vec<Piece> {
        map_pieces(self.members.len(), self.su, offset, len)
    }

    /// Book every piece on its member's queue as arriving at `now`; return when the last
    /// one completes (`now` if no member has a model).
    fn book(&self, now: Instant, pieces: &[Piece], fua: bool) -> Result<Instant, DevError> {
        let mut deadline = now;
        for p in pieces {
            if let Some(model) = &self.member(p.member)?.model {
                deadline = deadline.max(model.book_io(now, p.buf.len() as u64, fua));
            }
        }
        Ok(deadline)
    }

    fn member(&self, i: usize) -> Result<&Member, DevError> {
        self.members
            .get(i)
            .ok_or_else(|| DevError::Config(format!("stripe piece maps to missing member {i}")))
    }
}

impl BlockDev for StripeDev {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        check_io(self.size, IoReq::read(offset, buf.len()), || {
            self.describe()
        })?;
        let pieces = self.pieces(offset, buf.len());
        let deadline = self.book(Instant::now(), &pieces, false)?;
        for p in pieces {
            self.member(p.member)?
                .dev
                .read_at(&mut buf[p.buf], p.member_offset)?;
        }
        wait_until(deadline);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        check_io(self.size, IoReq::write(offset, buf.len(), fua), || {
            self.describe()
        })?;
        let pieces = self.pieces(offset, buf.len());
        let deadline = self.book(Instant::now(), &pieces, fua)?;
        for p in pieces {
            self.member(p.member)?
                .dev
                .write_at(&buf[p.buf], p.member_offset, fua)?;
        }
        wait_until(deadline);
        Ok(())
    }

    fn flush(&self) -> Result<(), DevError> {
        let now = Instant::now();
        let mut deadline = now;
        let mut first_err = None;
        // Flush every member even if one fails, so one bad member does not leave the others'
        // caches unflushed; report the first failure.
        for m in &self.members {
            if let Some(model) = &m.model {
                deadline = deadline.max(model.book_flush(now));
            }
            if let Err(e) = m.dev.flush() {
                first_err.get_or_insert(e);
            }
        }
        wait_until(deadline);
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn reads_at_memory_speed(&self) -> bool {
        self.members.iter().all(|m| {
            m.model.as_ref().is_none_or(|q| q.params().reads_free())
                && m.dev.reads_at_memory_speed()
        })
    }

    fn describe(&self) -> String {
        let member = |m: &Member| {
            format!(
                "{}{}",
                m.dev.describe(),
                m.model
                    .as_ref()
                    .map(|q| q.params().describe())
                    .unwrap_or_default()
            )
        };
        let names: Vec<String> = self.members.iter().map(member).collect();
        let over = match names.split_first() {
            Some((first, rest)) if rest.iter().all(|n| n == first) => {
                format!("{}x {first}", names.len())
            }
            _ => names.join(", "),
        };
        format!(
            "stripe:{} su={} {} over {over}",
            self.members.len(),
            format_size_iec(self.su),
            format_size_iec(self.size)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_deal_round_robin_over_members() {
        // 3 members, 4 KiB units; a 16 KiB request at 2 KiB spans units 0..=4.
        let got = map_pieces(3, 4096, 2048, 16384);
        let want = vec![
            Piece {
                member: 0,
                member_offset: 2048,
                buf: 0..2048,
            },
            Piece {
                member: 1,
                member_offset: 0,
                buf: 2048..6144,
            },
            Piece {
                member: 2,
                member_offset: 0,
                buf: 6144..10240,
            },
            Piece {
                member: 0,
                member_offset: 4096,
                buf: 10240..14336,
            },
            Piece {
                member: 1,
                member_offset: 4096,
                buf: 14336..16384,
            },
        ];
        assert_eq!(got, want);
    }

    fn mem_members(n: usize, latency: LatencyParams) -> Vec<StripeMember> {
        (0..n)
            .map(|_| StripeMember {
                dev: Arc::new(crate::fs::dev::MemDev::new(1 << 20).expect("valid size")),
                latency,
            })
            .collect()
    }

    #[test]
    fn split_write_completes_with_the_slowest_member_not_the_sum() {
        // 64 KiB units at 64 MiB/s: one unit takes 1/1024 s on its member.
        let latency = LatencyParams {
            lat: std::time::Duration::from_micros(30),
            bw: Some(64 << 20),
            flush: std::time::Duration::ZERO,
        };
        let unit = latency.transfer_time(65536);
        let s = StripeDev::new(mem_members(4, latency), 65536).expect("valid stripe");
        let now = Instant::now();
        // Four units over four members: each member moves one unit, in parallel.
        let wide = s.book(now, &s.pieces(0, 4 * 65536), false).expect("booked");
        assert_eq!(wide, now + unit + latency.lat);
        // Eight units on a fresh stripe: each member moves two, one after the other.
        let s = StripeDev::new(mem_members(4, latency), 65536).expect("valid stripe");
        let now = Instant::now();
        let deep = s.book(now, &s.pieces(0, 8 * 65536), false).expect("booked");
        assert_eq!(deep, now + unit * 2 + latency.lat);
    }

    #[test]
    fn request_inside_one_unit_is_one_piece() {
        let got = map_pieces(4, 65536, 65536 * 5 + 512, 1024);
        assert_eq!(
            got,
            vec![Piece {
                member: 1,
                member_offset: 65536 + 512,
                buf: 0..1024
            }]
        );
    }
}
