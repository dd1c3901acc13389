//! The few functions and types of usrsctp (`/usr/include/usrsctp.h`,
//! libusrsctp 0.9.5) the generator uses, declared by hand: the library has
//! no Rust binding on crates.io, and these signatures are its public C API.

use libc::{c_int, c_uint, c_void, size_t, sockaddr, socklen_t, ssize_t};

/// An opaque usrsctp socket.
#[repr(C)]
pub struct Socket {
    _private: [u8; 0],
}

pub type AssocId = u32;

pub const IPPROTO_SCTP: c_int = 132;
pub const SCTP_BINDX_ADD_ADDR: c_int = 0x0000_8001;
pub const SCTP_SENDV_NOINFO: c_uint = 0;
pub const SCTP_GET_PEER_ADDR_INFO: c_int = 0x0000_0101;

/// `struct sctp_paddrinfo`: one peer address's state, window and RTT.
#[repr(C)]
pub struct PeerAddrInfo {
    pub address: libc::sockaddr_storage,
    pub assoc_id: AssocId,
    pub state: i32,
    pub cwnd: u32,
    /// Smoothed RTT, ms.
    pub srtt: u32,
    pub rto: u32,
    pub mtu: u32,
}

/// `struct sctpstat` (usrsctp.h), the stack's counters: 32-bit words only
/// (166 in libusrsctp 0.9.5), read as an array; where each word the
/// generator uses sits, found in the installed header by build.rs.
pub mod stat {
    include!(concat!(env!("OUT_DIR"), "/sctpstat.rs"));
}

#[link(name = "usrsctp")]
extern "C" {
    /// port 0: SCTP over raw IPv4 (root), not UDP encapsulation.
    pub fn usrsctp_init(
        port: u16,
        conn_output: Option<extern "C" fn(*mut c_void, *mut c_void, size_t, u8, u8) -> c_int>,
        debug_printf: *const c_void,
    );
    pub fn usrsctp_socket(
        domain: c_int,
        kind: c_int,
        protocol: c_int,
        receive_cb: *const c_void,
        send_cb: *const c_void,
        sb_threshold: u32,
        ulp_info: *mut c_void,
    ) -> *mut Socket;
    pub fn usrsctp_setsockopt(
        so: *mut Socket,
        level: c_int,
        name: c_int,
        value: *const c_void,
        len: socklen_t,
    ) -> c_int;
    pub fn usrsctp_opt_info(so: *mut Socket, id: AssocId, opt: c_int, arg: *mut c_void, size: *mut socklen_t) -> c_int;
    pub fn usrsctp_bind(so: *mut Socket, name: *const sockaddr, len: socklen_t) -> c_int;
    pub fn usrsctp_bindx(so: *mut Socket, addrs: *const sockaddr, count: c_int, flags: c_int) -> c_int;
    pub fn usrsctp_listen(so: *mut Socket, backlog: c_int) -> c_int;
    pub fn usrsctp_accept(so: *mut Socket, name: *mut sockaddr, len: *mut socklen_t) -> *mut Socket;
    pub fn usrsctp_connectx(so: *mut Socket, addrs: *const sockaddr, count: c_int, id: *mut AssocId) -> c_int;
    pub fn usrsctp_sendv(
        so: *mut Socket,
        data: *const c_void,
        len: size_t,
        to: *const sockaddr,
        addrcnt: c_int,
        info: *const c_void,
        infolen: socklen_t,
        infotype: c_uint,
        flags: c_int,
    ) -> ssize_t;
    pub fn usrsctp_recvv(
        so: *mut Socket,
        buf: *mut c_void,
        len: size_t,
        from: *mut sockaddr,
        fromlen: *mut socklen_t,
        info: *mut c_void,
        infolen: *mut socklen_t,
        infotype: *mut c_uint,
        flags: *mut c_int,
    ) -> ssize_t;
    pub fn usrsctp_shutdown(so: *mut Socket, how: c_int) -> c_int;
    pub fn usrsctp_close(so: *mut Socket);
    pub fn usrsctp_finish() -> c_int;
    /// Copies the stack's `struct sctpstat`.
    pub fn usrsctp_get_stat(stat: *mut u32);
    pub fn usrsctp_sysctl_set_sctp_cmt_on_off(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_cmt_use_dac(value: u32) -> c_int;
}
