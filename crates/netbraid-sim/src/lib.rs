//! netbraid's packet-level discrete-event simulator.
//!
//! Layout, bottom up; data flows from an application through its socket,
//! out on a path, over links and routers, into the peer's socket and up to
//! the peer application:
//! - `engine`: virtual time, the event queue, seeded random streams;
//! - `net`: packets (and their side table of variable parts), links
//!   (queue → transmitter → wire), loss, routing;
//! - `cc`: congestion controllers, one file each, behind one trait;
//! - `transport`: sans-IO sockets (TCP sender and receiver, UDP);
//! - `app`: applications, the endpoints the simulator drives (bulk sender,
//!   reader, CBR and on-off sources, UDP sink);
//! - `endpoint`: the one interface between the simulator and endpoints;
//! - `trace`: counters, pcap and time series;
//! - `scenario`: the resolved scenario the Python layer produces;
//! - `sim`: the simulation that wires them together and reports results.

pub mod app;
pub mod cc;
pub mod endpoint;
pub mod engine;
pub mod error;
pub mod ids;
pub mod net;
pub mod scenario;
pub mod sim;
pub mod trace;
pub mod transport;

#[cfg(test)]
mod testing;

pub use error::SimError;
pub use scenario::Scenario;
pub use sim::{RunResult, Simulation};

/// Parse a resolved scenario (JSON), run it, and return the results as JSON.
/// Every failure is an `Err` with a message for the user.
pub fn run_json(scenario_json: &str) -> Result<String, SimError> {
    run_json_with(scenario_json, &mut || false)
}

/// As `run_json`, asking `interrupted` now and then whether to stop.
pub fn run_json_with(scenario_json: &str, interrupted: &mut dyn FnMut() -> bool) -> Result<String, SimError> {
    // the parsed scenario is dropped once the simulation is built, not held
    // through the run (with many flows it is a good part of the memory)
    let sim = Simulation::new(&parse_scenario(scenario_json)?)?;
    results_json(&sim.run_with(interrupted)?)
}

/// A run's results as JSON.
pub fn results_json(result: &RunResult) -> Result<String, SimError> {
    serde_json::to_string(result).map_err(|e| SimError::Output(format!("could not encode results: {e}")))
}

/// Write the results of a run as JSON (one line) to `out`, encoding as it writes.
pub fn write_results_json(result: &RunResult, out: impl std::io::Write) -> Result<(), SimError> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(out);
    let fail = |e: &dyn std::fmt::Display| SimError::Output(format!("could not write results: {e}"));
    serde_json::to_writer(&mut out, result).map_err(|e| fail(&e))?;
    writeln!(out).and_then(|()| out.flush()).map_err(|e| fail(&e))
}

/// Every check a run makes before it starts, without running.
pub fn check_json(scenario_json: &str) -> Result<(), SimError> {
    Simulation::new(&parse_scenario(scenario_json)?).map(|_| ())
}

/// Check one TCP configuration (JSON, as in a resolved flow's `tcp`), with
/// `field` prefixing the names in messages: the rules the simulator applies,
/// for the Python layer to apply first with the same words. With
/// `controller` false the controller is not checked (emu runs the kernel's).
pub fn check_tcp_json(tcp_json: &str, field: &str, controller: bool) -> Result<(), SimError> {
    let cfg: transport::tcp::TcpConfig = serde_json::from_str(tcp_json)
        .map_err(|e| SimError::invalid(field.trim_end_matches('.'), format!("invalid TCP settings: {e}")))?;
    if controller {
        cfg.validate(field)
    } else {
        cfg.validate_settings(field)
    }
}

/// The forwarding table of a resolved scenario (see
/// `Simulation::forwarding`) as JSON: [{"node", "dst_iface", "channels"}].
pub fn forwarding_json(scenario_json: &str) -> Result<String, SimError> {
    let scn = parse_scenario(scenario_json)?;
    let proxies: Vec<ids::NodeId> = scn.proxies.iter().map(|p| ids::NodeId(p.node)).collect();
    let table = Simulation::new(&scn)?.forwarding(&proxies)?;
    let rows: Vec<serde_json::Value> = table
        .into_iter()
        .map(|(node, dst_iface, channels)| serde_json::json!({"node": node, "dst_iface": dst_iface, "channels": channels}))
        .collect();
    Ok(serde_json::Value::Array(rows).to_string())
}

/// Build the simulation of a resolved scenario given as owned JSON text,
/// freeing the text and the parsed scenario before the run (the binary's
/// way: its peak memory is then the simulation's own).
pub fn simulation_from_json(text: String) -> Result<Simulation, SimError> {
    let scenario = parse_scenario(&text)?;
    drop(text);
    Simulation::new(&scenario)
}

pub fn parse_scenario(json: &str) -> Result<Scenario, SimError> {
    // (flows with equal TCP settings share one copy as they are parsed)
    serde_json::from_str(json).map_err(|e| SimError::invalid("", format!("invalid resolved scenario: {e}")))
}

pub fn run_scenario(scn: &Scenario) -> Result<RunResult, SimError> {
    Simulation::new(scn)?.run()
}
