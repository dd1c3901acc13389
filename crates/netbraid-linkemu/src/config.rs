//! The emulator's configuration file (JSON), written by netbraid's emu
//! backend from a resolved scenario. Queue and loss use the simulator's
//! scenario types, so one link description means the same on both backends.

use netbraid_sim::net::loss::LossModel;
use netbraid_sim::net::queue::QueueLimit;
use netbraid_sim::scenario::{LossSpec, QueueSpec};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Seed of every random stream (loss, jitter), keyed by link and direction.
    pub seed: u64,
    /// Where counters are written as JSON, at exit and on SIGUSR1.
    pub stats: Option<String>,
    /// Try SCHED_FIFO at this priority for the forwarding threads (0 = off).
    #[serde(default = "default_priority")]
    pub realtime_priority: i32,
    /// Forward every packet at once, unchanged (no queue, rate, loss or
    /// delay), through the same devices and I/O: the ceiling of the I/O
    /// method, measured beside the emulator by bench/linkemu.py.
    #[serde(default)]
    pub forward_only: bool,
    /// Deliveries due within this many ns of the previous wake-up of a
    /// direction's writer wait for the next one, so a burst of back-to-back
    /// packets costs one wake-up instead of one each; every packet is late
    /// by less than this, never early.
    #[serde(default = "default_coalesce_ns")]
    pub coalesce_ns: u64,
    pub links: Vec<LinkConfig>,
}

fn default_coalesce_ns() -> u64 {
    50_000
}

fn default_priority() -> i32 {
    50
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: String,
    /// TUN device of side a (at most 15 bytes; created by the emulator).
    pub a_dev: String,
    pub b_dev: String,
    pub ab: DirectionConfig,
    pub ba: DirectionConfig,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default)]
    pub jitter_ns: u64,
    pub queue: QueueSpec,
    pub loss: LossSpec,
}

impl DirectionConfig {
    pub fn limit(&self) -> QueueLimit {
        match (self.queue.packets, self.queue.bytes) {
            (Some(p), _) => QueueLimit::Packets(p),
            (None, Some(b)) => QueueLimit::Bytes(b),
            (None, None) => unreachable!("checked by validate"),
        }
    }
    pub fn loss_model(&self) -> LossModel {
        LossModel::from(&self.loss)
    }
}

impl Config {
    pub fn parse(text: &str) -> Result<Config, String> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), String> {
        let mut devs = std::collections::HashSet::new();
        for (i, l) in self.links.iter().enumerate() {
            for dev in [&l.a_dev, &l.b_dev] {
                if dev.is_empty() || dev.len() > 15 || dev.contains('/') || dev.contains(char::is_whitespace) {
                    return Err(format!(
                        "links[{i}] ({}): device name {dev:?} must be 1-15 bytes without '/' or spaces",
                        l.name
                    ));
                }
                if !devs.insert(dev.clone()) {
                    return Err(format!("links[{i}] ({}): device name {dev:?} is used twice", l.name));
                }
            }
            for (side, d) in [("ab", &l.ab), ("ba", &l.ba)] {
                let at = format!("links[{i}].{side} ({})", l.name);
                if d.rate_bps == 0 {
                    return Err(format!("{at}.rate_bps: must be positive"));
                }
                if d.jitter_ns > d.delay_ns {
                    return Err(format!(
                        "{at}.jitter_ns: {} is larger than the delay {}; jitter must not exceed the delay",
                        d.jitter_ns, d.delay_ns
                    ));
                }
                match (d.queue.packets, d.queue.bytes) {
                    (Some(_), Some(_)) | (None, None) => {
                        return Err(format!("{at}.queue: give exactly one of packets or bytes"))
                    }
                    _ => {}
                }
                if d.queue.red.is_some() {
                    return Err(format!(
                        "{at}.queue.red: RED is not emulated yet (the simulator has it)"
                    ));
                }
                let probs: Vec<f64> = match &d.loss {
                    LossSpec::None | LossSpec::List { .. } => vec![],
                    LossSpec::Bernoulli { p } => vec![*p],
                    LossSpec::GilbertElliott {
                        p_gb,
                        p_bg,
                        loss_good,
                        loss_bad,
                    } => {
                        vec![*p_gb, *p_bg, *loss_good, *loss_bad]
                    }
                };
                if probs.iter().any(|p| !(0.0..=1.0).contains(p)) {
                    return Err(format!("{at}.loss: probabilities must lie in [0, 1]"));
                }
            }
        }
        Ok(())
    }
}
