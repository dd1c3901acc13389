//! Cumulative counters. A measurement window is the difference of two
//! snapshots, so every counter struct needs the same field-by-field
//! subtraction; this macro declares the struct and writes it once.

/// Declare a struct of cumulative counters with `since(&earlier)`.
#[macro_export]
macro_rules! counters {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
        $vis struct $name { $($(#[$fmeta])* $fvis $field: $ty,)* }

        impl $name {
            /// What was counted after `earlier` was taken.
            pub fn since(&self, earlier: &Self) -> Self {
                Self { $($field: self.$field - earlier.$field,)* }
            }

            /// Field-by-field sum (the two ends of a flow, or its paths).
            #[allow(dead_code)]
            pub fn plus(&self, other: &Self) -> Self {
                Self { $($field: self.$field + other.$field,)* }
            }
        }
    };
}

/// Declare a flow's counters (`$all`) as the union of what its sending end
/// counts (`$send`) and what its receiving end counts (`$recv`), each a
/// counter struct of its own that converts into the union: a TCP end keeps
/// only its own half (thousands of idle flows), a snapshot the whole.
macro_rules! transport_counters {
    (
        $(#[$meta:meta])* pub struct $all:ident;
        $(#[$smeta:meta])* pub struct $send:ident { $($(#[$sf:meta])* pub $s:ident : $st:ty,)* }
        $(#[$rmeta:meta])* pub struct $recv:ident { $($(#[$rf:meta])* pub $r:ident : $rt:ty,)* }
    ) => {
        crate::counters! { $(#[$smeta])* pub struct $send { $($(#[$sf])* pub $s: $st,)* } }
        crate::counters! { $(#[$rmeta])* pub struct $recv { $($(#[$rf])* pub $r: $rt,)* } }
        crate::counters! {
            $(#[$meta])* pub struct $all { $($(#[$sf])* pub $s: $st,)* $($(#[$rf])* pub $r: $rt,)* }
        }
        impl From<$send> for $all {
            fn from(c: $send) -> Self {
                Self { $($s: c.$s,)* ..Default::default() }
            }
        }
        impl From<$recv> for $all {
            fn from(c: $recv) -> Self {
                Self { $($r: c.$r,)* ..Default::default() }
            }
        }
    };
}

transport_counters! {
    /// What a transport endpoint counts, in one struct for every protocol: the
    /// sending end fills the first group, the receiving end the second, so a
    /// flow's totals are the sum of its two ends (`plus`). Cumulative from
    /// the start of the run; a measurement window is a difference (`since`).
    pub struct TransportCounters;

    /// What a sending end counts.
    pub struct SendCounters {
        /// Data packets sent (segments or datagrams), retransmissions included.
        pub packets_sent: u64,
        /// Payload bytes sent, retransmissions included.
        pub bytes_sent: u64,
        /// Segments sent again (fast, partial-ACK, SACK-driven or after a timeout).
        pub retransmits: u64,
        /// Fast-retransmit / recovery entries.
        pub fast_retransmits: u64,
        /// Window reductions in response to ECN echoes (RFC 3168).
        pub ecn_reductions: u64,
        pub timeouts: u64,
        /// Zero-window probes sent on the persist timer.
        pub window_probes: u64,
        /// Tail loss probes sent (RACK-TLP).
        pub loss_probes: u64,
        /// Segments the receiver reported received twice (D-SACK; as
        /// TCP_INFO's tcpi_dsack_dups), and window reductions undone.
        pub dsack_dups: u64,
        pub undos: u64,
        pub acks_received: u64,
        /// Integral of cwnd over time (bytes·ns), for a time-weighted mean.
        pub cwnd_area: f64,
        /// Integral of the smoothed RTT over the time it is integrated
        /// (ns·ns; TCP: while data is out), and that time: the time-weighted
        /// mean srtt, which is what the kernel's readings of it (`ss`,
        /// iperf3) average on emu.
        pub srtt_area: f64,
        pub srtt_time_ns: u64,
        pub rtt_samples: u64,
        pub rtt_sum_ns: u64,
    }

    /// What a receiving end counts.
    pub struct ReceiveCounters {
        /// Data packets that arrived (duplicates too).
        pub packets_received: u64,
        /// Bytes on the wire of every data packet that arrived.
        pub wire_bytes_received: u64,
        /// New in-order bytes placed in the receive buffer.
        pub delivered_bytes: u64,
        /// Bytes the receiving application read: goodput.
        pub read_bytes: u64,
        pub duplicate_packets: u64,
        pub out_of_order_packets: u64,
        pub acks_sent: u64,
        /// ACKs sent only to announce a window the application's reading reopened.
        pub window_updates: u64,
    }
}

#[cfg(test)]
mod tests {
    crate::counters! {
        struct Example {
            a: u64,
            b: f64,
        }
    }

    #[test]
    fn since_subtracts_every_field() {
        let early = Example { a: 3, b: 1.5 };
        let late = Example { a: 10, b: 4.0 };
        assert_eq!(late.since(&early), Example { a: 7, b: 2.5 });
    }
}
