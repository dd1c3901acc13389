//! Time series sampled at a fixed interval, stored column-wise.

use serde::Serialize;

#[derive(Debug, Default, Serialize)]
pub struct TimeSeries {
    /// End of each sampling interval, seconds.
    pub time_s: Vec<f64>,
    pub flows: Vec<FlowSeries>,
    pub links: Vec<LinkSeries>,
}

/// Rates are averages over the interval that ends at `time_s`; cwnd and RTT
/// are instantaneous values at that time (null for flows without them).
#[derive(Debug, Default, Serialize)]
pub struct FlowSeries {
    pub name: String,
    pub throughput_bps: Vec<f64>,
    pub goodput_bps: Vec<f64>,
    pub cwnd_bytes: Vec<Option<u64>>,
    pub srtt_s: Vec<Option<f64>>,
    /// The same per path, for flows with several (MPTCP subflows, or the
    /// legs of a relayed flow).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<FlowSeries>,
    /// A relayed flow: each proxy's relay-buffer occupancy, in path order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relay_buffer_bytes: Vec<Vec<u64>>,
}

impl FlowSeries {
    /// Samples taken so far.
    pub fn time_len(&self) -> usize {
        self.goodput_bps.len()
    }

    /// A series that starts late: `missing` samples of nothing first.
    pub fn padded(name: String, missing: usize) -> Self {
        Self {
            name,
            throughput_bps: vec![0.0; missing],
            goodput_bps: vec![0.0; missing],
            cwnd_bytes: vec![None; missing],
            srtt_s: vec![None; missing],
            subflows: Vec::new(),
            relay_buffer_bytes: Vec::new(),
        }
    }
}

/// Queue occupancy of one link direction at each sample time.
#[derive(Debug, Default, Serialize)]
pub struct LinkSeries {
    pub name: String,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
}
