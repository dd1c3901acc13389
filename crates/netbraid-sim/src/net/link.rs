//! One direction of a point-to-point link, as an htsim-style pipeline:
//! queue → transmitter (serialisation at the rate) → loss → wire (delay).
//! The simulator moves packets between the stages; this type holds the state
//! and the counters of each stage.

use super::loss::LossProcess;
use super::queue::DropTailQueue;
use super::red::{Red, RedVerdict};
use super::{ChannelId, IfaceId, NodeId};
use crate::engine::time::serialisation_time;
use crate::engine::Time;

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
    pub delay: Time,
    pub queue: DropTailQueue,
    /// Active queue management in front of the FIFO (its limit still holds).
    pub red: Option<Red>,
    pub loss: LossProcess,
    /// Packet being serialised, if any.
    pub transmitting: Option<u32>,
    /// Packets propagating on the wire (for in-flight accounting).
    pub on_wire: u64,
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

impl Channel {
    pub fn serialisation_time(&self, size: u32) -> Time {
        serialisation_time(size, self.rate_bps)
    }

    /// Offer a packet to the channel's queue/transmitter; `ect` says the
    /// packet may be ECN-marked instead of dropped.
    pub fn offer(&mut self, now: Time, handle: u32, size: u32, ect: bool) -> Offer {
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
        self.queue.push(handle, size);
        if verdict == RedVerdict::Mark {
            self.counters.ecn_marks += 1;
            Offer::QueuedMarked
        } else {
            Offer::Queued
        }
    }
}
