//! The Python face of the simulator: a resolved scenario goes in as JSON, the
//! run's results come back as JSON. The GIL is released while the simulation
//! runs (threads and progress bars keep going) and taken back now and then
//! to let Ctrl-C stop a long run.

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

/// Run a resolved scenario (JSON) and return the results (JSON).
/// A scenario the simulator rejects raises ValueError with the reason.
#[pyfunction]
fn run_json(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    let mut interrupted = || Python::with_gil(|py| py.check_signals().is_err());
    match py.allow_threads(|| netbraid_sim::run_json_with(&scenario_json, &mut interrupted)) {
        Ok(json) => Ok(json),
        Err(e) if e == "interrupted" => Err(PyKeyboardInterrupt::new_err("simulation interrupted")),
        Err(e) => Err(PyValueError::new_err(e)),
    }
}

/// Check a resolved scenario as a run would, without running it.
#[pyfunction]
fn check_json(py: Python<'_>, scenario_json: String) -> PyResult<()> {
    py.allow_threads(|| netbraid_sim::check_json(&scenario_json)).map_err(PyValueError::new_err)
}

/// The forwarding table of a resolved scenario (JSON), for the emu backend.
#[pyfunction]
fn forwarding_json(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    py.allow_threads(|| netbraid_sim::forwarding_json(&scenario_json)).map_err(PyValueError::new_err)
}

/// Run the link emulator in this process (the `netbraid-linkemu` command);
/// returns its exit status. It installs its own signal handlers and never
/// gives control back to Python before it ends.
#[pyfunction]
fn linkemu_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| netbraid_linkemu::main_with_args(&args))
}

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_json, m)?)?;
    m.add_function(wrap_pyfunction!(forwarding_json, m)?)?;
    m.add_function(wrap_pyfunction!(linkemu_main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
