//! The Python face of the simulator: a resolved scenario goes in as JSON, the
//! run's results come back as JSON. The GIL is released while the simulation
//! runs (threads and progress bars keep going) and taken back now and then
//! to let Ctrl-C stop a long run.

use netbraid_sim::SimError;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

fn to_py(e: SimError) -> PyErr {
    match e {
        SimError::Interrupted => PyKeyboardInterrupt::new_err("simulation interrupted"),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// Run a resolved scenario (JSON) and return the results (JSON).
/// A scenario the simulator rejects raises ValueError with the reason.
#[pyfunction]
fn run_json(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    let mut interrupted = || Python::with_gil(|py| py.check_signals().is_err());
    py.allow_threads(|| netbraid_sim::run_json_with(&scenario_json, &mut interrupted))
        .map_err(to_py)
}

/// Check a resolved scenario as a run would, without running it.
#[pyfunction]
fn check_json(py: Python<'_>, scenario_json: String) -> PyResult<()> {
    py.allow_threads(|| netbraid_sim::check_json(&scenario_json))
        .map_err(to_py)
}

/// Check one TCP configuration (JSON) by the simulator's rules; `field`
/// prefixes the names in the message (e.g. "flows[0]."); `controller`:
/// also check the controller and its parameters (sim only).
#[pyfunction]
fn check_tcp_json(tcp_json: String, field: String, controller: bool) -> PyResult<()> {
    netbraid_sim::check_tcp_json(&tcp_json, &field, controller).map_err(to_py)
}

/// The congestion controllers the simulator has, with their parameters (JSON).
#[pyfunction]
fn controllers_json() -> String {
    netbraid_sim::cc::controllers_json()
}

/// The forwarding table of a resolved scenario (JSON), for the emu backend.
#[pyfunction]
fn forwarding_json(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    py.allow_threads(|| netbraid_sim::forwarding_json(&scenario_json))
        .map_err(to_py)
}

/// Run the link emulator in this process (the `netbraid-linkemu` command);
/// returns its exit status. It installs its own signal handlers and never
/// gives control back to Python before it ends.
#[pyfunction]
fn linkemu_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| netbraid_linkemu::main_with_args(&args))
}

/// Run the UDP generator in this process (`udpgen send|recv CONFIG-JSON`,
/// started inside a namespace by the emu backend); returns its exit status.
#[pyfunction]
fn udpgen_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| netbraid_udpgen::main_with_args(&args))
}

/// Run the split-TCP proxy in this process (`netbraid proxy ARGS...`);
/// returns its exit status after a clean shutdown (SIGTERM or SIGINT).
#[pyfunction]
fn proxy_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| netbraid_proxy::main_with_args(&args))
}

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_json, m)?)?;
    m.add_function(wrap_pyfunction!(forwarding_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_tcp_json, m)?)?;
    m.add_function(wrap_pyfunction!(controllers_json, m)?)?;
    m.add_function(wrap_pyfunction!(linkemu_main, m)?)?;
    m.add_function(wrap_pyfunction!(udpgen_main, m)?)?;
    m.add_function(wrap_pyfunction!(proxy_main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
