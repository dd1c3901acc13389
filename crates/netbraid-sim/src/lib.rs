//! netbraid's packet-level discrete-event simulator.
//!
//! Layout, bottom up:
//! - `engine`: virtual time, the event queue, seeded random streams;
//! - `net`: packets, links (queue → transmitter → wire), loss, routing;
//! - `cc`: congestion controllers behind one trait;
//! - `transport`: sans-IO protocol endpoints (TCP sender/receiver, UDP);
//! - `app`: traffic sources;
//! - `trace`: pcap and time series;
//! - `scenario`: the resolved scenario the Python layer produces;
//! - `sim`: the simulation that wires them together and reports results.

pub mod app;
pub mod cc;
pub mod engine;
pub mod net;
pub mod scenario;
pub mod sim;
pub mod trace;
pub mod transport;

pub use scenario::Scenario;
pub use sim::{RunResult, Simulation};

/// Parse a resolved scenario (JSON), run it, and return the results as JSON.
/// Every failure is an `Err` with a message for the user.
pub fn run_json(scenario_json: &str) -> Result<String, String> {
    run_json_with(scenario_json, &mut || false)
}

/// As `run_json`, asking `interrupted` now and then whether to stop.
pub fn run_json_with(scenario_json: &str, interrupted: &mut dyn FnMut() -> bool) -> Result<String, String> {
    let result = Simulation::new(&parse_scenario(scenario_json)?)?.run_with(interrupted)?;
    serde_json::to_string(&result).map_err(|e| format!("could not encode results: {e}"))
}

/// Every check a run makes before it starts, without running.
pub fn check_json(scenario_json: &str) -> Result<(), String> {
    Simulation::new(&parse_scenario(scenario_json)?).map(|_| ())
}

/// The forwarding table of a resolved scenario (see
/// `Simulation::forwarding`) as JSON: [{"node", "dst_iface", "channels"}].
pub fn forwarding_json(scenario_json: &str) -> Result<String, String> {
    let table = Simulation::new(&parse_scenario(scenario_json)?)?.forwarding()?;
    let rows: Vec<serde_json::Value> = table
        .into_iter()
        .map(|(node, dst_iface, channels)| serde_json::json!({"node": node, "dst_iface": dst_iface, "channels": channels}))
        .collect();
    Ok(serde_json::Value::Array(rows).to_string())
}

pub fn parse_scenario(json: &str) -> Result<Scenario, String> {
    serde_json::from_str(json).map_err(|e| format!("invalid resolved scenario: {e}"))
}

pub fn run_scenario(scn: &Scenario) -> Result<RunResult, String> {
    Simulation::new(scn)?.run()
}
