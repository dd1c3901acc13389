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
        }
    };
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
