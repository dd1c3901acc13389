//! Errors the simulator reports. A user's mistake is `Invalid`, naming the
//! field and what is allowed; the Python layer shows it as it is.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A scenario value the simulator cannot run.
    Invalid {
        /// Where the value is, as the user wrote it (e.g. `flow 'bulk'.mss`);
        /// empty when the problem is the scenario as a whole.
        field: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The caller asked the run to stop (Ctrl-C).
    Interrupted,
    /// Results could not be written (a pcap file, the JSON encoding).
    Output(String),
}

impl SimError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        SimError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Invalid { field, reason } if field.is_empty() => write!(f, "{reason}"),
            SimError::Invalid { field, reason } => write!(f, "{field}: {reason}"),
            SimError::Interrupted => write!(f, "interrupted"),
            SimError::Output(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SimError {}

pub type SimResult<T> = Result<T, SimError>;
