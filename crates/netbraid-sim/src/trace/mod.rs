//! What a run records: pcap captures of chosen link directions and sampled
//! time series. Counters live beside the state they count.

pub mod counters;
pub mod pcap;
pub mod series;
