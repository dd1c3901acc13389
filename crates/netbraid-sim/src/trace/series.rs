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
}

/// Queue occupancy of one link direction at each sample time.
#[derive(Debug, Default, Serialize)]
pub struct LinkSeries {
    pub name: String,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
}
