//! One direction of a point-to-point link, as an htsim-style pipeline:
//! queue → transmitter (serialisation at the rate) → loss → wire (delay).
//! This is the whole link model: the simulator only schedules the two
//! events it asks for (transmission done, arrival at the far end).

use super::loss::LossProcess;
use super::queue::DropTailQueue;
use super::red::{Red, RedVerdict};
use super::{ChannelId, IfaceId, NodeId};
use crate::engine::time::serialisation_time;
use crate::engine::{EventKey, Time};
use crate::ids::PacketRef;
use std::collections::VecDeque;

crate::counters! {
    /// Counters of one link direction (cumulative since the start of the run).
    pub struct ChannelCounters {
        /// Packets and bytes that finished serialisation (including those then lost).
        pub tx_packets: u64,
        pub tx_bytes: u64,
        /// Packets refused by a full queue.
        pub queue_drops: u64,
        /// Packets lost on the wire by the loss model.
        pub loss_drops: u64,
        /// Packets RED marked Congestion Experienced instead of dropping.
        pub ecn_marks: u64,
    }
}

pub struct Channel {
    pub id: ChannelId,
    /// "a->b" style name for reports.
    pub name: String,
    pub from: NodeId,
    pub to: NodeId,
    /// Interface at the receiving end.
    pub to_iface: IfaceId,
    pub rate_bps: u64,
    /// Bytes the link layer adds to every packet on the wire (Ethernet: 38
    /// with preamble, header, FCS and the inter-frame gap); they take
    /// transmission time, not queue room.
    pub framing_bytes: u32,
    pub delay: Time,
    /// Outages [from, until): a packet that finishes serialisation in one
    /// is lost (a cut cable, a failed path), counted as a loss drop.
    pub down: Vec<(Time, Time)>,
    pub queue: DropTailQueue,
    /// Active queue management in front of the FIFO (its limit still holds).
    pub red: Option<Red>,
    pub loss: LossProcess,
    /// Packet being serialised, if any.
    pub transmitting: Option<PacketRef>,
    /// Packets propagating on the wire, in order, each with its place in
    /// the event order: they arrive in the order they left (the delay is
    /// the same for all), so only the first needs an event in the queue.
    pub propagating: VecDeque<(EventKey, PacketRef)>,
    pub counters: ChannelCounters,
}

/// What happened to a packet offered to a channel.
pub enum Offer {
    /// The transmitter was idle: serialisation starts now and ends after this long.
    Transmit(Time),
    Queued,
    /// Queued, and RED marked it Congestion Experienced.
    QueuedMarked,
    Dropped,
}

/// What the end of a serialisation did.
pub struct Completed {
    /// The packet that finished.
    pub packet: PacketRef,
    pub size: u32,
    /// The loss model dropped it on the wire (else it arrives after `delay`).
    pub lost: bool,
    /// The next packet from the queue started serialising and ends after this long.
    pub next_done_in: Option<Time>,
}

impl Channel {
    pub fn serialisation_time(&self, size: u32) -> Time {
        serialisation_time(size + self.framing_bytes, self.rate_bps)
    }

    /// The packet on the transmitter finished serialising: count it, apply
    /// the loss model, and start the next packet waiting, if any.
    /// `size_of` gives a packet's size on the wire.
    #[inline]
    pub fn complete(&mut self, now: Time, size_of: impl Fn(PacketRef) -> u32) -> Completed {
        let packet = self.transmitting.take().expect("transmission done without a packet");
        let size = size_of(packet);
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += size as u64;
        let down = !self.down.is_empty() && self.down.iter().any(|&(a, b)| a <= now && now < b);
        let lost = self.loss.lose_next() || down;
        if lost {
            self.counters.loss_drops += 1;
        }
        let next_done_in = match self.queue.pop() {
            Some(next) => {
                let next = PacketRef(next);
                self.transmitting = Some(next);
                Some(self.serialisation_time(size_of(next)))
            }
            None => {
                if let Some(red) = &mut self.red {
                    red.on_empty(now);
                }
                None
            }
        };
        Completed {
            packet,
            size,
            lost,
            next_done_in,
        }
    }

    /// Offer a packet to the channel's queue/transmitter; `ect` says the
    /// packet may be ECN-marked instead of dropped.
    #[inline]
    pub fn offer(&mut self, now: Time, handle: PacketRef, size: u32, ect: bool) -> Offer {
        if self.transmitting.is_none() {
            self.transmitting = Some(handle);
            return Offer::Transmit(self.serialisation_time(size));
        }
        let verdict = match &mut self.red {
            Some(red) => red.on_arrival(now, self.queue.len(), ect),
            None => RedVerdict::Enqueue,
        };
        if verdict == RedVerdict::Drop || !self.queue.admits(size) {
            self.counters.queue_drops += 1;
            return Offer::Dropped;
        }
        self.queue.push(handle.0, size);
        if verdict == RedVerdict::Mark {
            self.counters.ecn_marks += 1;
            Offer::QueuedMarked
        } else {
            Offer::Queued
        }
    }
}
