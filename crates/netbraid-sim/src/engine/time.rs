//! Virtual time: integer nanoseconds since the start of the run.
//!
//! Integers rather than floats so that event order never depends on rounding,
//! and so that the same scenario gives the same trace on every machine.

/// Nanoseconds since the start of the run.
pub type Time = u64;

pub const NANOS_PER_SEC: u64 = 1_000_000_000;
pub const MILLISECOND: Time = 1_000_000;
pub const SECOND: Time = NANOS_PER_SEC;

/// The earlier of two optional deadlines (an endpoint with several timers).
#[inline]
pub fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    // (without branches: the engine asks for timers after every packet, and
    // which of them are set changes from one packet to the next; no timer is
    // ever due at Time::MAX, 584 years)
    deadline(a.unwrap_or(Time::MAX).min(b.unwrap_or(Time::MAX)))
}

/// A deadline kept as a plain time, `Time::MAX` for none (cheap to take the
/// earliest of), as an option.
#[inline]
pub fn deadline(t: Time) -> Option<Time> {
    (t != Time::MAX).then_some(t)
}

/// `x as f64` for a count or a time below 2^63 (every byte count, window
/// and nanosecond here): the same value, converted as a signed integer —
/// one instruction, where baseline x86-64 converts an unsigned one in six
/// (per-ACK arithmetic does several).
#[inline(always)]
pub fn to_f64(x: u64) -> f64 {
    debug_assert!(x < 1 << 63);
    x as i64 as f64
}

/// Seconds as a float, for reports and controllers' arithmetic (never for
/// scheduling). Every time the simulator holds is below 2^63 ns
/// (`MAX_TIME_NS` and its timers).
#[inline]
pub fn as_secs_f64(t: Time) -> f64 {
    to_f64(t) / NANOS_PER_SEC as f64
}

/// Time to serialise `bytes` at `rate_bps`, rounded up to the next nanosecond
/// so that a link never sends faster than its rate.
#[inline]
pub fn serialisation_time(bytes: u32, rate_bps: u64) -> Time {
    // bytes·8·10^9 fits in a u64 below 2^31 bytes (every packet): a 64-bit
    // division, several times cheaper than the 128-bit one, same result.
    if bytes < 1 << 31 {
        return (bytes as u64 * 8 * NANOS_PER_SEC).div_ceil(rate_bps);
    }
    let bits = bytes as u128 * 8 * NANOS_PER_SEC as u128;
    bits.div_ceil(rate_bps as u128) as Time
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_matches_rate() {
        // 1500 bytes at 1 Gb/s = 12 µs exactly; at 10 Mb/s = 1.2 ms.
        assert_eq!(serialisation_time(1500, 1_000_000_000), 12_000);
        assert_eq!(serialisation_time(1500, 10_000_000), 1_200_000);
        // Rounds up: 1 byte at 3 b/s is 8/3 s.
        assert_eq!(serialisation_time(1, 3), 2_666_666_667);
        // The 64-bit path agrees with 128-bit arithmetic at its edge and beyond.
        for bytes in [1u32, 1499, 65535, (1 << 31) - 1, 1 << 31, u32::MAX] {
            for rate in [1u64, 7, 10_000_000, 10u64.pow(13)] {
                let exact = (bytes as u128 * 8 * NANOS_PER_SEC as u128).div_ceil(rate as u128) as Time;
                assert_eq!(serialisation_time(bytes, rate), exact, "{bytes} B at {rate} b/s");
            }
        }
    }

    #[test]
    fn earliest_is_the_sooner_deadline_or_whichever_is_set() {
        let times = [None, Some(0), Some(1), Some(7), Some(SECOND), Some(Time::MAX - 1)];
        for a in times {
            for b in times {
                let expected = match (a, b) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                assert_eq!(earliest(a, b), expected, "{a:?} {b:?}");
            }
        }
    }
}
