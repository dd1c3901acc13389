//! The discrete-event core: virtual time, a deterministic event queue and
//! independent random streams. It knows nothing about networks.

pub mod queue;
pub mod ring;
pub mod rng;
pub mod time;

pub use queue::{EventKey, EventQueue};
pub use ring::Ring;
pub use rng::RandomStream;
pub use time::Time;
