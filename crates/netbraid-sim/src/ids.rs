//! Typed indices. Each names one kind of thing, so an endpoint index cannot
//! be passed where a flow index is meant; all are plain `u32`s underneath
//! (indices into the simulation's vectors).

macro_rules! typed_id {
    ($($(#[$meta:meta])* $name:ident;)*) => {$(
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing a vector.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}

typed_id! {
    /// An endpoint: one end of a flow (an application with its socket).
    EndpointId;
    /// A flow of the scenario (a connection, or a UDP stream).
    FlowId;
    /// A packet in the simulation's `PacketPool`.
    PacketRef;
    /// A node (host or router).
    NodeId;
    /// An interface. Every link end is one: link `l` gives interface `2l` on
    /// its `a` node and `2l + 1` on its `b` node.
    IfaceId;
    /// One direction of a link (a "channel"): `2l` is a→b, `2l + 1` is b→a.
    ChannelId;
}

impl IfaceId {
    /// The channel that leaves by this interface (it has the same index).
    #[inline]
    pub fn out_channel(self) -> ChannelId {
        ChannelId(self.0)
    }
    /// The link this interface is an end of.
    #[inline]
    pub fn link(self) -> usize {
        self.idx() / 2
    }
}

impl ChannelId {
    /// The interface this channel leaves by.
    #[inline]
    pub fn from_iface(self) -> IfaceId {
        IfaceId(self.0)
    }
    /// The interface at the far end, where its packets arrive.
    #[inline]
    pub fn to_iface(self) -> IfaceId {
        IfaceId(self.0 ^ 1)
    }
}
