//! The few socket calls std does not offer: forced buffer sizes, kernel
//! receive timestamps, non-blocking receive with its ancillary data, poll.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

fn set_int(sock: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: valid fd and a pointer to an int of the given length.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            &value as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Socket buffer of `bytes`: beyond net.core.[rw]mem_max when root (FORCE),
/// else as large as the system allows.
pub fn set_buffer(sock: &UdpSocket, receive: bool, bytes: i32) {
    let (force, plain) = if receive {
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)
    } else {
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)
    };
    if set_int(sock, libc::SOL_SOCKET, force, bytes).is_err() {
        let _ = set_int(sock, libc::SOL_SOCKET, plain, bytes);
    }
}

pub fn enable_timestamps(sock: &UdpSocket) -> io::Result<()> {
    set_int(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

/// Wait up to `timeout_ms` for the socket to become readable.
pub fn wait_readable(sock: &UdpSocket, timeout_ms: i32) -> io::Result<bool> {
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut fds, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0)
}

/// Receive one datagram without blocking: Some((length, kernel receive time
/// in ns of CLOCK_REALTIME, if the kernel gave one)), or None when the queue
/// is empty.
pub fn receive_stamped(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, Option<u64>)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // Room for one timespec control message, u64-aligned.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: valid fd and msghdr.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays inside msg_control as the kernel filled it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some((n as usize, stamp)))
}
