//! Loss on a link direction — random, by a loss model, or in an outage —
//! decided when a packet finishes serialisation (a lost packet still used
//! the link's capacity).

use crate::engine::{RandomStream, Time};

#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        p: f64,
    },
    /// Two-state Markov chain (Gilbert–Elliott). The state moves before each
    /// packet: good→bad with `p_gb`, bad→good with `p_bg`; the packet is then
    /// lost with `loss_good` or `loss_bad`.
    GilbertElliott {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    /// Deterministic: lose exactly the packets with these 0-based indices in
    /// this direction's transmission order (ns-2's ErrorModel/List). For tests
    /// and for reproducing a loss pattern exactly.
    List {
        indices: Vec<u64>,
    },
}

/// What loses packets on a link direction's wire: a loss model with its own
/// random stream and state, and outages. Nothing but a null pointer on a
/// link with neither (most links), so that the link's state a packet
/// touches stays small (`net::link::Channel`).
pub struct LossProcess {
    state: Option<Box<LossState>>,
}

struct LossState {
    model: LossModel,
    rng: RandomStream,
    in_bad_state: bool,
    /// Packets seen so far (index of the next one).
    seen: u64,
    /// Next position in a sorted `List`.
    list_pos: usize,
    /// Outages [from, until): a packet that finishes serialisation in one
    /// is lost (a cut cable, a failed path).
    down: Vec<(Time, Time)>,
}

impl LossProcess {
    pub fn new(model: LossModel, rng: RandomStream) -> Self {
        Self::with_outages(model, rng, Vec::new())
    }

    pub fn with_outages(mut model: LossModel, rng: RandomStream, down: Vec<(Time, Time)>) -> Self {
        if let LossModel::List { indices } = &mut model {
            indices.sort_unstable();
            indices.dedup();
        }
        let state = (model != LossModel::None || !down.is_empty()).then(|| {
            Box::new(LossState {
                model,
                rng,
                in_bad_state: false,
                seen: 0,
                list_pos: 0,
                down,
            })
        });
        Self { state }
    }

    /// Decide the fate of the next packet, which finishes serialisation at
    /// `depart`: true = lost (drawn from the model — every packet takes its
    /// draw — or in an outage).
    #[inline]
    pub fn lose_next(&mut self, depart: Time) -> bool {
        match &mut self.state {
            None => false,
            Some(s) => s.draw() || s.down.iter().any(|&(a, b)| a <= depart && depart < b),
        }
    }
}

impl LossState {
    fn draw(&mut self) -> bool {
        let index = self.seen;
        self.seen += 1;
        match &self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng.bernoulli(*p),
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.in_bad_state { *p_bg } else { *p_gb };
                if self.rng.bernoulli(flip) {
                    self.in_bad_state = !self.in_bad_state;
                }
                let p = if self.in_bad_state { *loss_bad } else { *loss_good };
                self.rng.bernoulli(p)
            }
            LossModel::List { indices } => {
                if indices.get(self.list_pos) == Some(&index) {
                    self.list_pos += 1;
                    true
                } else {
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(model: LossModel, n: u64) -> f64 {
        let mut lp = LossProcess::new(model, RandomStream::new(3, "t"));
        (0..n).filter(|_| lp.lose_next(0)).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_rate() {
        let r = rate(LossModel::Bernoulli { p: 0.01 }, 1_000_000);
        // sd = sqrt(p(1-p)/n) ≈ 1e-4; allow 5 sd.
        assert!((r - 0.01).abs() < 5e-4, "{r}");
    }

    #[test]
    fn gilbert_elliott_stationary_rate() {
        // Stationary P(bad) = p_gb / (p_gb + p_bg) = 0.01/0.11; loss = that × 0.5.
        let m = LossModel::GilbertElliott {
            p_gb: 0.01,
            p_bg: 0.1,
            loss_good: 0.0,
            loss_bad: 0.5,
        };
        let expect = 0.01 / 0.11 * 0.5;
        let r = rate(m, 2_000_000);
        assert!((r - expect).abs() / expect < 0.05, "{r} vs {expect}");
    }

    #[test]
    fn list_drops_exactly_those() {
        let mut lp = LossProcess::new(LossModel::List { indices: vec![5, 2, 2] }, RandomStream::new(0, "x"));
        let lost: Vec<u64> = (0..10).filter(|_| lp.lose_next(0)).collect();
        assert_eq!(lost, vec![2, 5]);
    }
}
