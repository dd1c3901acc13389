//! HighSpeed TCP (RFC 3649): Reno up to `Low_Window` segments; above it a
//! larger increase a(w) per RTT and a smaller decrease b(w), chosen so that
//! the response function is w = 0.12 / p^0.835 instead of Reno's 1.2 / √p.
//!
//! Two ways to evaluate a(w) and b(w):
//! - the RFC's formulas (§5): b(w) interpolates log-linearly from 0.5 at
//!   Low_Window to High_Decrease at High_Window, p(w) is the log-linear
//!   response function through (Low_Window, Low_P) and (High_Window,
//!   High_P), and a(w) = w²·p(w)·2b(w)/(2 − b(w));
//! - `table`: as Linux steps through the RFC's table (appendix B): the
//!   window is placed in a row (w_{k−1}, w_k] and grows by a = k per RTT,
//!   with b from the row's upper edge, in 1/256 steps. The rows are made
//!   here from the formula: w_k is the smallest window at which a(w)
//!   reaches k + 1 (the RFC computed its rows with the response function
//!   rounded to 0.078/w^1.2, which puts them 2-5 % higher).
//!
//! Options: RFC 3742 Limited Slow-Start (`max_ssthresh`), and Linux's
//! response to a timeout (`timeout_decrease`: ssthresh = (1 − b(w))·w, where
//! RFC 3649 leaves the timeout to RFC 5681's halving).

use super::{
    half_flight, slow_start_increase, AckEvent, CcConfig, CongestionControl, ControllerInfo, ParamInfo, ParamKind,
    Params,
};
use crate::engine::time::to_f64;
use crate::engine::Time;

/// The RFC's constants (the defaults of the parameters).
pub(super) const LOW_WINDOW: f64 = 38.0;
const HIGH_WINDOW: f64 = 83_000.0;
const HIGH_P: f64 = 1e-7;
const LOW_P: f64 = 1e-3;
const HIGH_DECREASE: f64 = 0.1;

/// The response-function parameters every HighSpeed-style controller shares.
pub(super) const RESPONSE_PARAMS: [ParamInfo; 5] = [
    ParamInfo {
        name: "low_window",
        doc: "Low_Window: up to this window (segments) the controller is Reno",
        kind: ParamKind::Number {
            default: LOW_WINDOW,
            min: 2.0,
            max: 1e9,
        },
    },
    ParamInfo {
        name: "high_window",
        doc: "High_Window: the window (segments) reached at loss rate High_P",
        kind: ParamKind::Number {
            default: HIGH_WINDOW,
            min: 3.0,
            max: 1e10,
        },
    },
    ParamInfo {
        name: "high_p",
        doc: "High_P: the loss rate that sustains High_Window",
        kind: ParamKind::Number {
            default: HIGH_P,
            min: 1e-15,
            max: 0.5,
        },
    },
    ParamInfo {
        name: "low_p",
        doc: "Low_P: the loss rate that sustains Low_Window (Reno's there: 1.5/38² ≈ 1e-3)",
        kind: ParamKind::Number {
            default: LOW_P,
            min: 1e-15,
            max: 0.5,
        },
    },
    ParamInfo {
        name: "high_decrease",
        doc: "High_Decrease: b(w) at High_Window (0.5 at Low_Window)",
        kind: ParamKind::Number {
            default: HIGH_DECREASE,
            min: 0.01,
            max: 0.5,
        },
    },
];

/// The options HighSpeed TCP adds to the response function.
pub(super) const OPTION_PARAMS: [ParamInfo; 4] = [
    ParamInfo {
        name: "table",
        doc: "step through the RFC's a(w)/b(w) table as Linux does (a = k in row k) instead of the formulas",
        kind: ParamKind::Flag { default: false },
    },
    ParamInfo {
        name: "max_ssthresh",
        doc:
            "RFC 3742 Limited Slow-Start above this window (segments; 0: off, as ns-2's default; the RFC suggests 100)",
        kind: ParamKind::Number {
            default: 0.0,
            min: 0.0,
            max: 1e9,
        },
    },
    ParamInfo {
        name: "timeout_decrease",
        doc: "a timeout sets ssthresh = (1 − b(w))·cwnd, as Linux (off: half the flight, RFC 5681)",
        kind: ParamKind::Flag { default: false },
    },
    ParamInfo {
        name: "slow_start_halves",
        doc: "a loss in slow start halves, as ns-2 and Linux do (the RFC is silent; off: b(w) of the overshot window)",
        kind: ParamKind::Flag { default: true },
    },
];

const fn all_params() -> [ParamInfo; 9] {
    let r = RESPONSE_PARAMS;
    let o = OPTION_PARAMS;
    [r[0], r[1], r[2], r[3], r[4], o[0], o[1], o[2], o[3]]
}
const PARAMS: [ParamInfo; 9] = all_params();

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "hstcp",
    aliases: &["highspeed"],
    doc: "RFC 3649 HighSpeed TCP: Reno below Low_Window, above it a(w) per RTT and (1 − b(w)) on loss",
    params: &PARAMS,
    constraints: check_response,
    build: |cfg, p| Box::new(HighSpeed::new(cfg, p)),
};

/// The cross-parameter rules of the response function.
pub(super) fn check_response(p: &Params) -> Result<(), (&'static str, String)> {
    let (lw, hw) = (p.number("low_window"), p.number("high_window"));
    if lw >= hw {
        return Err((
            "low_window",
            format!("{lw} must be below high_window ({hw}): Low_Window < High_Window"),
        ));
    }
    let (lp, hp) = (p.number("low_p"), p.number("high_p"));
    if hp >= lp {
        return Err((
            "high_p",
            format!("{hp} must be below low_p ({lp}): High_P < Low_P (a larger window needs a lower loss rate)"),
        ));
    }
    Ok(())
}

/// a(w) and b(w) of RFC 3649, for windows in segments.
#[derive(Clone, Debug)]
pub struct Response {
    low_window: f64,
    high_decrease: f64,
    /// ln(w / Low_Window) / ln(High_Window / Low_Window) → b's interpolation.
    ln_low_window: f64,
    ln_span: f64,
    /// p(w) = low_p · (w / Low_Window)^(1/S).
    low_p: f64,
    inv_s: f64,
    /// Linux's stepped table: row k covers (rows[k−1], rows[k]] and grows
    /// by k + 1 segments per RTT (row 0 is the window up to Low_Window).
    rows: Option<Vec<(f64, f64)>>,
}

impl Response {
    pub fn new(p: &Params) -> Self {
        let (lw, hw) = (p.number("low_window"), p.number("high_window"));
        let (lp, hp) = (p.number("low_p"), p.number("high_p"));
        let s = (hw.ln() - lw.ln()) / (hp.ln() - lp.ln());
        let mut r = Self {
            low_window: lw,
            high_decrease: p.number("high_decrease"),
            ln_low_window: lw.ln(),
            ln_span: hw.ln() - lw.ln(),
            low_p: lp,
            inv_s: 1.0 / s,
            rows: None,
        };
        if p.flag("table") {
            r.rows = Some(r.table(hw));
        }
        r
    }

    /// The loss rate that sustains window `w` (the response function).
    pub fn p(&self, w: f64) -> f64 {
        self.low_p * (w / self.low_window).powf(self.inv_s)
    }

    /// b(w) by the formula: 0.5 at Low_Window, High_Decrease at High_Window.
    fn b_formula(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 0.5;
        }
        (self.high_decrease - 0.5) * (w.ln() - self.ln_low_window) / self.ln_span + 0.5
    }

    /// a(w) by the formula: the increase that, with b(w), keeps the average
    /// window on the response function.
    fn a_formula(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 1.0;
        }
        let b = self.b_formula(w);
        (w * w * self.p(w) * 2.0 * b / (2.0 - b)).max(1.0)
    }

    /// Rows (upper edge w_k, b at w_k in 1/256 steps) up to High_Window:
    /// w_k is the smallest whole window at which a(w) reaches k + 1.
    fn table(&self, high_window: f64) -> Vec<(f64, f64)> {
        let quantise = |b: f64| (b * 256.0).floor() / 256.0;
        let mut rows = vec![(self.low_window, 0.5)];
        let mut w = self.low_window.floor();
        while w < high_window * 1.1 {
            let k = rows.len() as f64 + 1.0;
            // a(w) rises smoothly: step in doubling strides, then bisect.
            let (mut lo, mut hi) = (w, w + 1.0);
            while self.a_formula(hi) < k {
                lo = hi;
                hi = lo + (hi - w).max(1.0) * 2.0;
            }
            while hi - lo > 1.0 {
                let mid = ((lo + hi) / 2.0).floor();
                if self.a_formula(mid) >= k {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            rows.push((hi, quantise(self.b_formula(hi))));
            w = hi;
        }
        rows
    }

    /// The row for window `w` (the last row beyond the table).
    fn row(rows: &[(f64, f64)], w: f64) -> usize {
        rows.partition_point(|&(edge, _)| edge < w).min(rows.len() - 1)
    }

    /// Segments added per RTT at window `w` (segments).
    pub fn a(&self, w: f64) -> f64 {
        match &self.rows {
            Some(rows) => Self::row(rows, w) as f64 + 1.0,
            None => self.a_formula(w),
        }
    }

    /// The fraction of the window given up at a loss at window `w`.
    pub fn b(&self, w: f64) -> f64 {
        match &self.rows {
            Some(rows) => rows[Self::row(rows, w)].1,
            None => self.b_formula(w),
        }
    }

    pub fn low_window(&self) -> f64 {
        self.low_window
    }
}

/// The window growth and decrease HighSpeed TCP and its relatives share.
#[derive(Clone, Debug)]
pub(super) struct HsWindow {
    pub cfg: CcConfig,
    pub response: Response,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Fractional bytes of increase not yet added to cwnd.
    credit: f64,
    /// RFC 3742's max_ssthresh, bytes (0: plain slow start).
    max_ssthresh: u64,
    timeout_decrease: bool,
    slow_start_halves: bool,
    /// a(w) for the whole window `a_cache.0` (segments): the formula needs
    /// a power and a logarithm, and changes little within a segment.
    a_cache: (u64, f64),
}

impl HsWindow {
    pub fn new(cfg: CcConfig, p: &Params) -> Self {
        Self {
            cwnd: cfg.initial_window,
            ssthresh: cfg.initial_ssthresh,
            credit: 0.0,
            max_ssthresh: (p.number("max_ssthresh") * cfg.mss as f64) as u64,
            timeout_decrease: p.flag("timeout_decrease"),
            slow_start_halves: p.flag("slow_start_halves"),
            a_cache: (u64::MAX, 1.0),
            response: Response::new(p),
            cfg,
        }
    }

    /// The window in segments.
    pub fn segments(&self) -> f64 {
        self.cwnd as f64 / self.cfg.mss as f64
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// a(w) at the current window, recomputed when it crosses a segment.
    pub fn a(&mut self) -> f64 {
        let w = self.cwnd / self.cfg.mss;
        if self.a_cache.0 != w {
            self.a_cache = (w, self.response.a(self.segments()));
        }
        self.a_cache.1
    }

    /// b(w) for a loss now: b at the current window, or one half in slow
    /// start (with `slow_start_halves`).
    pub fn b(&self) -> f64 {
        if self.slow_start_halves && self.in_slow_start() {
            0.5
        } else {
            self.response.b(self.segments())
        }
    }

    /// Slow start, limited above max_ssthresh to max_ssthresh/2 segments per
    /// RTT (RFC 3742: K = ⌊cwnd / (max_ssthresh/2)⌋, MSS/K per ACK).
    pub fn slow_start(&mut self, newly_acked: u64) {
        let step = slow_start_increase(&self.cfg, newly_acked);
        if self.max_ssthresh == 0 || self.cwnd <= self.max_ssthresh {
            self.cwnd += step;
        } else {
            let k = (self.cwnd / (self.max_ssthresh / 2).max(1)).max(1);
            self.cwnd += step / k;
        }
    }

    /// Congestion avoidance: `a` segments per window of ACKed data (per ACK
    /// of one segment without byte counting, as RFC 3649's a(w)/w per ACK).
    pub fn grow(&mut self, a: f64, newly_acked: u64) {
        let acked = if self.cfg.byte_counting {
            newly_acked
        } else {
            self.cfg.mss
        };
        self.credit += a * to_f64(self.cfg.mss) * to_f64(acked) / to_f64(self.cwnd);
        // (the credit is never negative, so truncation is the floor: one
        // instruction, where `floor` is a call into libm on baseline x86-64,
        // 1.4 % of a 10 Gb/s HSTCP run by perf; and below 2^63, so a signed
        // conversion, one instruction too)
        debug_assert!(self.credit >= 0.0);
        let whole = self.credit as i64 as u64;
        self.credit -= to_f64(whole);
        self.cwnd += whole;
    }

    /// ssthresh = (1 − b)·flight, at least two segments; b = 0.5 is Reno's halving.
    pub fn decrease(&mut self, b: f64, flight_size: u64) {
        self.ssthresh = if b >= 0.5 {
            half_flight(&self.cfg, flight_size)
        } else {
            ((flight_size as f64 * (1.0 - b)) as u64).max(2 * self.cfg.mss)
        };
        self.cwnd = self.ssthresh;
        self.credit = 0.0;
    }

    pub fn timeout(&mut self, flight_size: u64, first: bool) {
        if first {
            self.ssthresh = if self.timeout_decrease {
                let b = self.response.b(self.segments());
                ((self.cwnd as f64 * (1.0 - b)) as u64).max(2 * self.cfg.mss)
            } else {
                half_flight(&self.cfg, flight_size)
            };
        }
        self.cwnd = self.cfg.mss;
        self.credit = 0.0;
    }

    pub fn penalise(&mut self) {
        (self.cwnd, self.ssthresh) = super::penalised(&self.cfg, self.cwnd, self.ssthresh);
    }
    pub fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = super::undone(self.cwnd, self.ssthresh, prior_cwnd, prior_ssthresh);
    }
}

pub struct HighSpeed {
    w: HsWindow,
}

impl HighSpeed {
    pub fn new(cfg: CcConfig, p: &Params) -> Self {
        Self {
            w: HsWindow::new(cfg, p),
        }
    }
}

impl CongestionControl for HighSpeed {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        if !ack.cwnd_limited {
            return;
        }
        if self.w.in_slow_start() {
            self.w.slow_start(ack.newly_acked);
        } else {
            let a = self.w.a();
            self.w.grow(a, ack.newly_acked);
        }
    }
    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        let b = self.w.b();
        self.w.decrease(b, flight_size);
    }
    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        self.w.timeout(flight_size, first);
    }
    fn penalise(&mut self) {
        self.w.penalise();
    }
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.w.undo(prior_cwnd, prior_ssthresh);
    }
    fn window(&self) -> u64 {
        self.w.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }
    fn name(&self) -> &'static str {
        "hstcp"
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cc::{check, Reno};
    use std::collections::BTreeMap;

    pub const MSS: u64 = 1000;

    pub fn cfg() -> CcConfig {
        CcConfig {
            mss: MSS,
            initial_window: 2 * MSS,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 0,
        }
    }

    pub fn params(name: &str, given: &[(&str, serde_json::Value)]) -> Params {
        let given: BTreeMap<String, serde_json::Value> =
            given.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        check("", name, &given).unwrap()
    }

    fn response(table: bool) -> Response {
        Response::new(&params("hstcp", &[("table", table.into())]))
    }

    /// The table of `protocols.md` §2 (RFC 3649 appendix B's rows): a(w) and b(w) within 5 %.
    const RFC_ROWS: [(f64, f64, f64); 12] = [
        (38.0, 1.0, 0.50),
        (118.0, 2.0, 0.44),
        (221.0, 3.0, 0.41),
        (347.0, 4.0, 0.38),
        (495.0, 5.0, 0.37),
        (1058.0, 8.0, 0.33),
        (1529.0, 10.0, 0.31),
        (5497.0, 21.0, 0.24),
        (10661.0, 30.0, 0.21),
        (19965.0, 41.0, 0.17),
        (51258.0, 61.0, 0.125),
        (84035.0, 71.0, 0.10),
    ];

    #[test]
    fn formulas_match_the_rfc_table() {
        let r = response(false);
        for (w, a, b) in RFC_ROWS {
            let (ga, gb) = (r.a(w), r.b(w));
            assert!((ga / a - 1.0).abs() <= 0.05, "a({w}) = {ga}, table {a}");
            assert!((gb / b - 1.0).abs() <= 0.05, "b({w}) = {gb}, table {b}");
        }
    }

    #[test]
    fn table_rows_match_the_rfc_table() {
        let r = response(true);
        let rows = r.rows.as_ref().unwrap();
        for (w, a, b) in RFC_ROWS.iter().skip(1).take(7) {
            // row k's upper edge is where a(w) reaches k + 1; the RFC computed
            // its rows with the response function rounded to 0.078/w^1.2,
            // which puts them up to 5 % higher than the exact formula's
            let k = *a as usize - 1;
            let edge = rows[k].0;
            assert!((edge / w - 1.0).abs() < 0.05, "row {k}: {edge} vs {w}");
            assert!((rows[k].1 - b).abs() <= 0.01, "row {k}: b {} vs {b}", rows[k].1);
            // within the row (w_{k−1}, w_k], a = k + 1, the table's a at its upper edge
            assert_eq!(r.a(edge), *a);
            assert_eq!(r.a(rows[k - 1].0 + 0.5), *a);
            assert_eq!(r.a(edge + 0.5), *a + 1.0);
        }
        // Linux's rule is a step above the formula (more aggressive), never below
        let f = response(false);
        for w in [50.0, 300.0, 4000.0, 60000.0] {
            assert!(r.a(w) >= f.a(w), "{w}");
        }
    }

    #[test]
    fn a_rises_and_b_falls_monotonically() {
        for r in [response(false), response(true)] {
            let (mut a0, mut b0) = (r.a(38.0), r.b(38.0));
            assert_eq!((a0, b0), (1.0, 0.5));
            for i in 1..400 {
                let w = 38.0 * 1.02_f64.powi(i);
                let (a, b) = (r.a(w), r.b(w));
                assert!(a >= a0 && b <= b0, "w {w}: a {a0}→{a}, b {b0}→{b}");
                (a0, b0) = (a, b);
            }
        }
    }

    /// A deterministic AIMD(a(w), b(w)) with one loss every 1/p packets
    /// averages the response function w = 0.12/p^0.835 within 10 %
    /// (Reno would give 1.2/√p).
    #[test]
    fn deterministic_response_function() {
        for p in [1e-4_f64, 1e-5, 1e-7] {
            let model = 0.12 / p.powf(0.835);
            // byte counting with stretch ACKs of k segments: the same growth
            // per window of data, in fewer calls
            let k = (1.0 / (p * 1e4)).max(1.0) as u64;
            let mut hs = HighSpeed::new(
                CcConfig {
                    byte_counting: true,
                    abc_limit: k,
                    ..cfg()
                },
                &params("hstcp", &[]),
            );
            hs.on_congestion_event(0, (2.0 * model * MSS as f64) as u64); // halved (b = 0.5 in slow start) to the model's window
            let (mut sent, mut time, mut data) = (0.0, 0.0, 0.0);
            let per_loss = 1.0 / p;
            let mut losses = 0;
            while losses < 14 {
                hs.on_ack(&ack(k * MSS));
                sent += k as f64;
                if sent >= per_loss {
                    sent -= per_loss;
                    losses += 1;
                    let w = hs.window();
                    hs.on_congestion_event(0, w);
                }
                if losses >= 4 {
                    // time-average of the window: k segments last k/w of a round trip
                    let w = hs.window() as f64 / MSS as f64;
                    data += k as f64;
                    time += k as f64 / w;
                }
            }
            let mean = data / time;
            assert!(
                (mean / model - 1.0).abs() <= 0.10,
                "p {p}: mean window {mean:.0}, model {model:.0}"
            );
        }
    }

    fn ack(bytes: u64) -> AckEvent<'static> {
        AckEvent {
            newly_acked: bytes,
            cwnd_limited: true,
            ..Default::default()
        }
    }

    /// Up to Low_Window the trace is Reno's, ACK for ACK.
    #[test]
    fn identical_to_reno_below_low_window() {
        let mut hs = HighSpeed::new(cfg(), &params("hstcp", &[]));
        let mut reno = Reno::new(cfg());
        for i in 0..5000u64 {
            if hs.window() > 38 * MSS {
                break;
            }
            if i % 97 == 96 {
                let f = hs.window();
                hs.on_congestion_event(0, f);
                reno.on_congestion_event(0, f);
            } else if i % 1000 == 999 {
                hs.on_timeout(0, hs.window(), true);
                reno.on_timeout(0, reno.window(), true);
            } else {
                hs.on_ack(&ack(MSS));
                reno.on_ack(&ack(MSS));
            }
            assert_eq!(
                (hs.window(), hs.ssthresh()),
                (reno.window(), reno.ssthresh()),
                "ACK {i}"
            );
        }
    }

    #[test]
    fn decrease_is_b_of_w_and_timeouts_as_configured() {
        let mut hs = HighSpeed::new(cfg(), &params("hstcp", &[]));
        hs.on_congestion_event(0, 2000 * MSS);
        hs.on_ack(&ack(MSS)); // CA now at 1000 segments
        let w = hs.window();
        let b = hs.w.response.b(w as f64 / MSS as f64);
        hs.on_congestion_event(0, w);
        assert_eq!(hs.window(), (w as f64 * (1.0 - b)) as u64);
        assert!((0.32..0.34).contains(&b), "b(1000) = {b}");
        // RFC 3649: a timeout halves as RFC 5681 does
        let f = hs.window();
        hs.on_timeout(0, f, true);
        assert_eq!((hs.window(), hs.ssthresh()), (MSS, f / 2));
        // Linux: (1 − b(w))·cwnd
        let mut lx = HighSpeed::new(cfg(), &params("hstcp", &[("timeout_decrease", true.into())]));
        lx.on_congestion_event(0, 2000 * MSS);
        let w = lx.window();
        let b = lx.w.response.b(w as f64 / MSS as f64);
        lx.on_timeout(0, w, true);
        assert_eq!(lx.ssthresh(), (w as f64 * (1.0 - b)) as u64);
    }

    /// A loss ending slow start halves (ns-2's first decrease, Linux's row 0
    /// before congestion avoidance), unless asked for b(w) of the window.
    #[test]
    fn a_loss_in_slow_start_halves() {
        for (halves, kept) in [(true, 0.5), (false, 1.0 - 0.33)] {
            let mut hs = HighSpeed::new(cfg(), &params("hstcp", &[("slow_start_halves", halves.into())]));
            while hs.window() < 1000 * MSS {
                hs.on_ack(&ack(MSS));
            }
            let w = hs.window();
            hs.on_congestion_event(0, w);
            let got = hs.window() as f64 / w as f64;
            assert!((got - kept).abs() < 0.01, "slow_start_halves {halves}: kept {got}");
        }
    }

    /// RFC 3742: above max_ssthresh, slow start adds at most max_ssthresh/2
    /// segments per round trip.
    #[test]
    fn limited_slow_start() {
        let mut hs = HighSpeed::new(cfg(), &params("hstcp", &[("max_ssthresh", 100.into())]));
        // one round trip = one ACK per segment of the window
        let mut rounds = 0;
        while hs.window() < 1000 * MSS {
            let w = hs.window() / MSS;
            for _ in 0..w {
                hs.on_ack(&ack(MSS));
            }
            let grown = hs.window() / MSS - w;
            if w > 100 {
                assert!(grown <= 50, "window {w}: +{grown} in one round");
                assert!(grown >= 40, "window {w}: +{grown} in one round");
            } else {
                assert_eq!(grown, w.min(100 - w).max(grown.min(w)), "window {w}");
            }
            rounds += 1;
        }
        assert!(
            rounds > 20,
            "{rounds} rounds to 1000 segments (plain slow start needs 9)"
        );
    }

    #[test]
    fn parameters_that_contradict_each_other_are_refused() {
        let given = |k: &str, v: f64| BTreeMap::from([(k.to_string(), serde_json::Value::from(v))]);
        let e = check("flow 'f'.", "hstcp", &given("low_window", 90000.0))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("flow 'f'.cc_params.low_window: 90000 must be below high_window"),
            "{e}"
        );
        let e = check("", "hstcp", &given("high_p", 0.01)).unwrap_err().to_string();
        assert!(e.starts_with("cc_params.high_p: 0.01 must be below low_p"), "{e}");
    }
}
