//! Proportional Rate Reduction (RFC 6937): how much a sender in fast
//! recovery sends on each ACK, so that the window comes down to ssthresh
//! smoothly over the recovery (instead of RFC 6675's pause for half a
//! window and then a burst) and is never pulled far below it by losses
//! beyond the first (the slow-start reduction bound, PRR-SSRB, which Linux
//! uses).

/// PRR's state over one recovery, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// Bytes the receiver got since recovery began (prr_delivered).
    delivered: u64,
    /// Bytes sent since recovery began, retransmissions included (prr_out).
    sent: u64,
    /// FlightSize when recovery began (RecoverFS; Linux divides by the
    /// window then, `prior_cwnd`: see `TcpConfig::ssthresh_from_cwnd`).
    recover_fs: u64,
    /// The window in recovery: pipe + sndcnt as of the last ACK. The sender
    /// sends while pipe + MSS fits in it, so segments marked lost between
    /// ACKs (RACK's timer) free room as they leave the pipe, as in Linux.
    pub cwnd: u64,
}

impl Prr {
    /// Recovery begins with `flight` bytes outstanding.
    pub fn start(flight: u64) -> Self {
        Self {
            recover_fs: flight.max(1),
            ..Self::default()
        }
    }

    /// An ACK in recovery that delivered `delivered` bytes (the change in
    /// the cumulative ACK plus the change in SACKed bytes), with `pipe`
    /// bytes then in flight. While pipe is above ssthresh, the sending
    /// keeps pace with the deliveries at ssthresh/RecoverFS
    /// (prr_delivered × ssthresh / RecoverFS in all, rounded up to a whole
    /// segment as Linux counts in packets); below it, the window grows back
    /// towards ssthresh no faster than slow start (PRR-SSRB).
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            let due = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128);
            let due = (due as u64).div_ceil(mss) * mss;
            due.saturating_sub(self.sent)
        } else {
            let limit = self.delivered.saturating_sub(self.sent).max(delivered) + mss;
            (ssthresh - pipe).min(limit)
        };
        self.cwnd = pipe + sndcnt;
    }

    /// `len` bytes went out (a retransmission or new data).
    pub fn on_send(&mut self, len: u64) {
        self.sent += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// RFC 6937's situation: one loss in a window of 20 segments, Reno's
    /// ssthresh of 10; every ACK delivers one segment. Worked by hand from
    /// the RFC's formulas: while pipe > ssthresh, ACK k may have sent
    /// ⌈k × 10/20⌉ segments in all, so one on every odd ACK (the
    /// retransmission on the first); on ACK 17 pipe reaches ssthresh (19 −
    /// 17 + 8 = 10) and the reduction bound allows ssthresh − pipe = 0; on
    /// ACKs 18 and 19 pipe is 9 and one segment each tops it up. Recovery
    /// ends with pipe at ssthresh, 10 segments sent.
    #[test]
    fn one_loss_sends_one_segment_per_two_acks() {
        let (fs, ssthresh) = (20 * MSS, 10 * MSS);
        let mut prr = Prr::start(fs);
        let mut pipe = fs - MSS; // the lost segment has left the pipe
        let mut sent_on = Vec::new();
        for ack in 1..=19 {
            pipe -= MSS; // delivered
            prr.on_ack(MSS, pipe, ssthresh, MSS);
            while prr.cwnd >= pipe + MSS {
                prr.on_send(MSS);
                pipe += MSS;
                sent_on.push(ack);
            }
        }
        assert_eq!(sent_on, [1, 3, 5, 7, 9, 11, 13, 15, 18, 19]);
        assert_eq!(pipe, ssthresh);
    }

    /// Losses beyond the first pull pipe below ssthresh: the reduction
    /// bound lets the sender catch up by at most the data delivered plus one
    /// segment per ACK (slow start), never straight to ssthresh in a burst.
    #[test]
    fn below_ssthresh_the_catch_up_is_bounded_like_slow_start() {
        let mut prr = Prr::start(20 * MSS);
        prr.on_ack(MSS, 4 * MSS, 10 * MSS, MSS);
        // 1 delivered, nothing sent yet: at most 1 + 1 segments, not 6
        assert_eq!(prr.cwnd, (4 + 2) * MSS, "pipe + 2 segments");
        prr.on_send(2 * MSS);
        prr.on_ack(3 * MSS, 3 * MSS, 10 * MSS, MSS);
        // delivered 4 in all, sent 2: max(2, 3) + 1 = 4 segments
        assert_eq!(prr.cwnd, (3 + 4) * MSS, "pipe + 4 segments");
        // and never beyond ssthresh
        prr.on_ack(10 * MSS, 9 * MSS, 10 * MSS, MSS);
        assert_eq!(prr.cwnd, 10 * MSS, "ssthresh");
    }
}
