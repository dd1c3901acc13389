//! MPTCP (RFC 8684) as a model: one connection over several TCP subflows.
//!
//! Each subflow is a full netbraid TCP sender or receiver (SACK, RTO,
//! delayed ACKs, its own congestion controller). The connection owns one
//! data-sequence space: the sender's scheduler hands each subflow chunks of
//! the application's bytes, and every data segment carries a DSS mapping
//! (subflow bytes → data bytes) in its options; the receiver puts subflow
//! data back in data order in **one** connection-level buffer, and every
//! ACK on every subflow carries the cumulative DATA_ACK and the
//! connection's window (relative to DATA_ACK). The sender sends a data byte
//! only below DATA_ACK + that window, frees buffer only on DATA_ACK, and
//! re-sends (reinjects) data held up on one subflow on another, as
//! `Reinjection` chooses; the receiver drops duplicates by data sequence.
//!
//! Modelled as Linux does it, with these simplifications (stated so results
//! are read correctly):
//! - the initial subflow has no handshake (like netbraid's TCP, data starts
//!   at the flow's start); the others join with real MP_JOIN packets (SYN,
//!   SYN/ACK, third ACK, and the fourth ACK after which the joiner may send
//!   data: RFC 8684 §3.2), starting when the first ACK arrives on the
//!   initial subflow, i.e. when the connection is established. A joining
//!   subflow is usable about two of its round trips later. Lost handshake
//!   packets are re-sent after the initial RTO, doubling.
//! - option bytes on the wire as this kernel sends them: DSS with an 8-byte
//!   DATA_ACK on every pure ACK (12 B), and with a 4-byte DATA_ACK and an
//!   8-byte DSN mapping on every data segment (24 B, padded), no DSS
//!   checksum (Linux's default); MP_JOIN as in RFC 8684. The data option
//!   comes out of the payload, as in Linux (`tcp_current_mss` counts the
//!   established options): a subflow segment carries MSS − 24 bytes
//!   (`subflow_config`), so a full one is exactly the MTU. An ACK's SACK
//!   blocks get what TCP's 40 option bytes leave beside the timestamps and
//!   the DSS (Linux gives MPTCP's options precedence): one block with
//!   timestamps, as this kernel's captures show, three without. Linux maps a whole
//!   write at once and every segment of it carries the mapping; here each
//!   segment's names its own bytes, the same size.
//! - the connection's buffers count payload bytes (not kernel memory);
//!   the receiver reads as data arrives (an iperf server).
//! - schedulers are described in `scheduler.rs`.

mod receiver;
mod scheduler;
mod sender;

pub use receiver::MptcpReceiver;
pub use scheduler::Scheduler;

/// A subflow's TCP settings: the connection's, with the payload of a full
/// segment less the DSS option every data segment carries
/// (`net::packet::DSS_ON_DATA`), for its sender, receiver and controller
/// alike (the flow's checks keep the MSS above the option), and at most the
/// SACK blocks that fit beside the DSS on an ACK (`tcp_established_options`
/// gives SACK what is left of 40 option bytes: 4 for its kind, length and
/// padding, 8 a block).
pub fn subflow_config(cfg: &crate::transport::tcp::TcpConfig) -> crate::transport::tcp::TcpConfig {
    use crate::net::packet::{Dss, DSS_ON_DATA};
    let mss = cfg
        .mss
        .checked_sub(DSS_ON_DATA)
        .filter(|&m| m > 0)
        .expect("an MPTCP flow's MSS is above its DSS option (checked with the flow)");
    // (header bytes beyond IPv4's and TCP's 40 count as options: timestamps'
    // 12; at least one block is kept, as a longer IP header leaves room)
    let other_options = cfg.header_bytes.saturating_sub(40);
    let left = 40u32.saturating_sub(other_options + Dss::DataAck(0).wire_bytes());
    crate::transport::tcp::TcpConfig {
        mss,
        max_sack_blocks: cfg.max_sack_blocks.min(left.saturating_sub(4) / 8).max(1),
        ..cfg.clone()
    }
}

/// When data held up on one subflow goes again on another, and when a
/// subflow counts as failed (the scheduler skips it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reinjection {
    /// Upstream Linux (net/mptcp, 5.x–6.x): a connection-level
    /// retransmission timer, re-armed whenever DATA_ACK advances, with the
    /// longest pending subflow RTO as its interval (at least `rto_min`).
    /// When it fires, the data at DATA_ACK (one 32 KB page fragment of it)
    /// goes again on a subflow with nothing outstanding, if there is one; a
    /// subflow that has heard no ACK over `STALE_LOSS_COUNT` firings while
    /// holding data is *stale*: the scheduler skips it until it hears an
    /// ACK, and its data goes on the others. A subflow in RTO recovery is
    /// otherwise still scheduled.
    Upstream,
    /// The out-of-tree kernel (`mptcp_reinject_data`): when a subflow's RTO
    /// fires, all its data not yet DATA_ACKed goes on the others, and the
    /// subflow is skipped until new data is acknowledged on it.
    SubflowTimeout,
}

/// Upstream's `net.mptcp.stale_loss_cnt` default.
pub const STALE_LOSS_COUNT: u32 = 4;
/// Upstream retransmits at most one page fragment of data per firing
/// (`SKB_FRAG_PAGE_ORDER`: 32 KB).
pub const RETRANSMIT_FRAGMENT: u64 = 32 * 1024;
pub use sender::MptcpSender;

use crate::error::SimError;
use serde::Deserialize;

/// Connection-level settings (the subflows' TCP settings are a `TcpConfig`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpConfig {
    /// How the sender picks a subflow for each chunk of data.
    #[serde(default)]
    pub scheduler: Scheduler,
    /// Per path: a backup subflow carries data only when no other can.
    #[serde(default)]
    pub backup: Vec<bool>,
    /// The out-of-tree kernel's receive-buffer optimisations, run when the
    /// connection's window keeps new data back (protocols.md §5.4):
    /// opportunistic retransmission of the chunk holding DATA_ACK back on
    /// the subflow that could send, and penalisation of the subflow that has
    /// it. Off by default (upstream Linux has neither).
    #[serde(default)]
    pub opportunistic_retransmission: bool,
    #[serde(default)]
    pub penalisation: bool,
    /// None: upstream's with the default scheduler (upstream's), the
    /// out-of-tree kernel's with the others (they are the out-of-tree's).
    #[serde(default)]
    pub reinjection: Option<Reinjection>,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        Self {
            scheduler: Scheduler::Default,
            backup: Vec::new(),
            opportunistic_retransmission: false,
            penalisation: false,
            reinjection: None,
        }
    }
}

impl MptcpConfig {
    pub fn validate(&self, field: &str, paths: usize) -> Result<(), SimError> {
        if self.backup.len() > paths {
            return Err(SimError::invalid(
                format!("{field}backup"),
                format!(
                    "{} entries for {paths} paths (allowed: one per path at most)",
                    self.backup.len()
                ),
            ));
        }
        if paths > 0 && (0..paths).all(|i| self.is_backup(i)) {
            return Err(SimError::invalid(
                format!("{field}backup"),
                "every path is a backup: at least one must be active",
            ));
        }
        Ok(())
    }

    pub fn reinjection(&self) -> Reinjection {
        self.reinjection.unwrap_or(match self.scheduler {
            Scheduler::Default => Reinjection::Upstream,
            _ => Reinjection::SubflowTimeout,
        })
    }

    pub fn is_backup(&self, path: usize) -> bool {
        self.backup.get(path).copied().unwrap_or(false)
    }
}

/// A subflow's TCP segment: the segment (borrowed from the packet), its
/// path (one of `paths`) and its handshake option, if any.
fn open_segment<'a>(
    rx: crate::endpoint::Received<'a>,
    paths: usize,
) -> Option<(
    &'a crate::net::packet::TcpSegment,
    usize,
    Option<crate::net::ext::MptcpHandshake>,
)> {
    let crate::net::packet::Body::Tcp(seg) = &rx.packet.body else {
        return None;
    };
    let i = rx.packet.path as usize;
    let handshake = match rx.ext.as_deref() {
        Some(crate::net::ext::Ext::MptcpHandshake(h)) => Some(*h),
        _ => None,
    };
    (i < paths).then_some((seg, i, handshake))
}

#[cfg(test)]
mod tests;
