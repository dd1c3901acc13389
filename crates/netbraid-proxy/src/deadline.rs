//! Every connection's timeouts (handshake, connect, idle) and the drain's
//! end, checked by one sweep per worker thread a few times a second.
//!
//! A runtime timer per connection woke the event loop once per connection
//! (registering a deadline earlier than the loop's own), 4–8 % of the
//! connection rate; the sweep is one timer per thread. Timeouts fire up to
//! one sweep late ([`SWEEP`]).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// How often a worker checks its connections' deadlines.
pub const SWEEP: Duration = Duration::from_millis(100);

/// What a connection is doing, and so which limit applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// A SOCKS5 handshake: `--handshake-timeout`.
    Handshake = 1,
    /// Resolving and reaching the upstream: `--connect-timeout`.
    Connect = 2,
    /// Relaying: `--idle-timeout` since the last byte moved.
    Relay = 3,
}

/// Why a connection was told to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    Timeout(Phase),
    /// The drain time after SIGTERM is over.
    Shutdown,
}

/// One connection's limits, shared with its worker's sweep.
pub struct Deadlines {
    phase: AtomicU8,
    /// When the current phase must have ended (ms since start; 0: never).
    until_ms: AtomicU64,
    /// The last time a byte moved (ms since start).
    pub last_activity_ms: AtomicU64,
    idle_ms: u64,
    /// 0 until fired, then 1 + the Fired code.
    fired_as: AtomicU8,
    pub fired: Notify,
}

impl Deadlines {
    pub fn new(now_ms: u64, idle: Option<Duration>) -> Deadlines {
        Deadlines {
            phase: AtomicU8::new(Phase::Connect as u8),
            until_ms: AtomicU64::new(0),
            last_activity_ms: AtomicU64::new(now_ms),
            idle_ms: idle.map_or(0, |d| d.as_millis() as u64),
            fired_as: AtomicU8::new(0),
            fired: Notify::new(),
        }
    }

    /// Enters `phase`, which must end within `limit` (None: no limit).
    pub fn enter(&self, phase: Phase, now_ms: u64, limit: Option<Duration>) {
        self.until_ms
            .store(limit.map_or(0, |l| now_ms + l.as_millis() as u64), Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Release);
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            1 => Phase::Handshake,
            2 => Phase::Connect,
            _ => Phase::Relay,
        }
    }

    /// Why it fired, once it has.
    pub fn fired_as(&self) -> Option<Fired> {
        match self.fired_as.load(Ordering::Acquire) {
            0 => None,
            1 => Some(Fired::Shutdown),
            2 => Some(Fired::Timeout(Phase::Handshake)),
            3 => Some(Fired::Timeout(Phase::Connect)),
            _ => Some(Fired::Timeout(Phase::Relay)),
        }
    }

    fn check(&self, now_ms: u64, closing: bool) {
        if self.fired_as.load(Ordering::Relaxed) != 0 {
            return;
        }
        let phase = self.phase();
        let until = self.until_ms.load(Ordering::Relaxed);
        let code = if closing {
            1
        } else if until != 0 && now_ms >= until {
            1 + phase as u8
        } else if phase == Phase::Relay
            && self.idle_ms != 0
            && now_ms.saturating_sub(self.last_activity_ms.load(Ordering::Relaxed)) >= self.idle_ms
        {
            1 + Phase::Relay as u8
        } else {
            return;
        };
        self.fired_as.store(code, Ordering::Release);
        // A permit if nobody waits yet: the wait that follows ends at once.
        self.fired.notify_one();
    }
}

/// A worker's connections, for its sweep.
#[derive(Default)]
pub struct Watchlist {
    conns: Mutex<Vec<Weak<Deadlines>>>,
}

impl Watchlist {
    pub fn watch(&self, d: &Arc<Deadlines>) {
        self.conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(d));
    }

    /// Checks every live connection each [`SWEEP`]; after `closing` turns
    /// true, stops them all. Runs until the worker's runtime ends.
    pub async fn sweep(&self, now_ms: impl Fn() -> u64, mut closing: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(SWEEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = closing.changed() => {}
            }
            let (now, stop_all) = (now_ms(), *closing.borrow());
            self.conns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|w| match w.upgrade() {
                    Some(d) => {
                        d.check(now, stop_all);
                        true
                    }
                    None => false,
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_fires_at_its_own_limit() {
        let d = Deadlines::new(0, Some(Duration::from_secs(5)));
        d.enter(Phase::Handshake, 0, Some(Duration::from_millis(1500)));
        d.check(1499, false);
        assert_eq!(d.fired_as(), None);
        d.check(1500, false);
        assert_eq!(d.fired_as(), Some(Fired::Timeout(Phase::Handshake)));

        let d = Deadlines::new(0, Some(Duration::from_secs(5)));
        d.enter(Phase::Connect, 100, Some(Duration::from_secs(10)));
        d.check(10_099, false);
        assert_eq!(d.fired_as(), None);
        d.check(10_100, false);
        assert_eq!(d.fired_as(), Some(Fired::Timeout(Phase::Connect)));
    }

    #[test]
    fn idle_counts_from_the_last_byte_and_only_while_relaying() {
        let d = Deadlines::new(0, Some(Duration::from_secs(5)));
        d.check(60_000, false); // connecting without a limit: not idle
        assert_eq!(d.fired_as(), None);
        d.enter(Phase::Relay, 60_000, None);
        d.last_activity_ms.store(61_000, Ordering::Relaxed);
        d.check(65_999, false);
        assert_eq!(d.fired_as(), None);
        d.check(66_000, false);
        assert_eq!(d.fired_as(), Some(Fired::Timeout(Phase::Relay)));
        let never = Deadlines::new(0, None);
        never.enter(Phase::Relay, 0, None);
        never.check(u64::MAX / 2, false);
        assert_eq!(never.fired_as(), None);
    }

    #[test]
    fn closing_stops_every_phase_and_the_first_reason_stays() {
        let d = Deadlines::new(0, None);
        d.enter(Phase::Relay, 0, None);
        d.check(10, true);
        assert_eq!(d.fired_as(), Some(Fired::Shutdown));
        d.check(20, false);
        assert_eq!(d.fired_as(), Some(Fired::Shutdown));
    }
}
