//! The Python face of the simulator: one function that takes a resolved
//! scenario as JSON and returns the run's results as JSON. The GIL is
//! released while the simulation runs, so threads and progress bars keep going.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run a resolved scenario (JSON) and return the results (JSON).
/// A scenario the simulator rejects raises ValueError with the reason.
#[pyfunction]
fn run_json(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    py.allow_threads(|| netbraid_sim::run_json(&scenario_json)).map_err(PyValueError::new_err)
}

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
