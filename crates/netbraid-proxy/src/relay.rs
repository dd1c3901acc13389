//! Moving one direction of a connection: bytes from one leg's socket into
//! the other's, through a pipe with splice(2) so they never enter user
//! space (after the first 16 KiB, which are copied: most short exchanges
//! end before a pipe pays for itself; and a copying fallback where the
//! kernel refuses to splice a socket).
//!
//! Each direction alternates: fill the pipe from the source while it is
//! empty, then drain it into the destination until it is empty. A pipe can
//! fill by slots before it fills by bytes (one slot per received fragment),
//! so only an empty pipe makes "nothing to read" mean the socket is empty —
//! the alternation keeps readiness exact, and the kernel's socket buffers
//! keep both legs busy meanwhile. What a direction holds is bounded by its
//! pipe (`--buffer`), and all directions together by the memory budget: a
//! byte is read only once the budget has room for it, so a peer that stops
//! reading stops its sender, never the proxy's memory.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use socket2::SockRef;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Largest single read: the budget is taken in pieces this size so that one
/// large buffer cannot hold it all while idle.
const CHUNK: usize = 64 * 1024;

/// Which leg a socket is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    Client,
    Upstream,
}

impl Leg {
    pub fn name(self) -> &'static str {
        match self {
            Leg::Client => "client",
            Leg::Upstream => "upstream",
        }
    }
}

/// Why a direction stopped before its end of stream.
#[derive(Debug)]
pub enum Stop {
    /// The leg sent RST (or went away while written to).
    Reset(Leg),
    Error(Leg, io::Error),
}

/// One direction's view of its connection and of the whole proxy.
pub struct Direction<'a> {
    pub src: &'a TcpStream,
    pub src_leg: Leg,
    pub dst: &'a TcpStream,
    pub dst_leg: Leg,
    /// Pipe (or copy buffer) size.
    pub buffer: usize,
    /// Bytes the whole proxy may hold (permits are bytes).
    pub budget: &'a Semaphore,
    /// Bytes this direction delivered.
    pub moved: &'a AtomicU64,
    /// Bytes all connections delivered in this direction.
    pub total: &'a AtomicU64,
    /// Milliseconds since start at the last byte moved (for the idle timeout).
    pub last_activity: &'a AtomicU64,
    pub now_ms: &'a (dyn Fn() -> u64 + Sync),
    /// Directions of this connection that have passed their end of stream on.
    pub ended: &'a AtomicU8,
}

/// Relays until the source's end of stream has been passed on (FIN: the
/// other direction goes on, a half-close), or until a leg fails.
///
/// A direction starts by copying through a small buffer: a short exchange
/// ends before a pipe would pay for its set-up (two descriptors, a resize).
/// Once a read fills that buffer the data is bulk, and it moves by splice.
pub async fn run(d: Direction<'_>) -> Result<(), Stop> {
    if !copied(&d, SMALL, true, false).await? {
        return Ok(());
    }
    match Pipe::new(d.buffer) {
        Ok(pipe) => match spliced(&d, &pipe).await {
            Err(Spliced::Unsupported) => copied(&d, CHUNK, false, false).await.map(|_| ()),
            // recv() steps over urgent data; splice stops at it for good.
            Err(Spliced::AtUrgentMark) => copied(&d, CHUNK, false, true).await.map(|_| ()),
            Err(Spliced::Stop(s)) => Err(s),
            Ok(()) => Ok(()),
        },
        // Out of pipes (file descriptors): copying needs none.
        Err(_) => copied(&d, CHUNK, false, false).await.map(|_| ()),
    }
}

/// The first reads' buffer: a full one means bulk data (see [`run`]).
const SMALL: usize = 16 * 1024;

enum Spliced {
    /// The kernel cannot splice this socket (before any byte moved).
    Unsupported,
    /// The source has TCP urgent data (MSG_OOB) next: splice returns
    /// nothing there (or 0 once a FIN follows), while recv() steps over it.
    AtUrgentMark,
    Stop(Stop),
}

async fn spliced(d: &Direction<'_>, pipe: &Pipe) -> Result<(), Spliced> {
    let (src, dst) = (d.src.as_raw_fd(), d.dst.as_raw_fd());
    let mut first = true;
    loop {
        // Fill: the pipe is empty here.
        let want = pipe.cap.min(CHUNK);
        let got = take(d, want, true, || {
            d.src
                .try_io(Interest::READABLE, || splice(src, pipe.w.as_raw_fd(), want))
        })
        .await;
        let mut held = match got {
            Ok(Some(h)) if h.num_permits() > 0 => h,
            Ok(_) if at_urgent_mark(src) => return Err(Spliced::AtUrgentMark),
            Ok(None) => continue,
            Ok(Some(_)) => return finish(d).map_err(Spliced::Stop),
            Err(e) if first && e.raw_os_error() == Some(libc::EINVAL) => return Err(Spliced::Unsupported),
            Err(e) => return Err(Spliced::Stop(stop(d.src_leg, e))),
        };
        first = false;
        // Drain: until the pipe is empty again.
        while held.num_permits() > 0 {
            d.dst.writable().await.map_err(|e| Spliced::Stop(stop(d.dst_leg, e)))?;
            match d.dst.try_io(Interest::WRITABLE, || {
                splice(pipe.r.as_raw_fd(), dst, held.num_permits())
            }) {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "splice wrote nothing from a full pipe");
                    return Err(Spliced::Stop(Stop::Error(d.dst_leg, e)));
                }
                Ok(n) => delivered(d, &mut held, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Spliced::Stop(stop(d.dst_leg, e))),
            }
        }
    }
}

/// Copies through a buffer of at most `size` bytes until end of stream
/// (`Ok(false)`), or, with `until_bulk`, until a read fills the buffer and
/// its bytes are delivered (`Ok(true)`). `read_now`: the splice path hands
/// over with data waiting and the runtime's readiness already spent, so read
/// the socket directly until it is empty before waiting for readiness.
async fn copied(d: &Direction<'_>, size: usize, until_bulk: bool, read_now: bool) -> Result<bool, Stop> {
    let mut buf = PooledBuf::take(d.buffer.clamp(1, size));
    let buf = &mut buf.0;
    let mut wait = !read_now;
    loop {
        let want = buf.capacity();
        buf.clear();
        // Into the spare capacity: no zeroing of a buffer per connection.
        let got = if wait {
            take(d, want, true, || d.src.try_read_buf(buf)).await
        } else {
            take(d, want, false, || recv_now(d.src.as_raw_fd(), buf)).await
        };
        let mut held = match got {
            Ok(Some(h)) => h,
            Ok(None) => {
                wait = true;
                continue;
            }
            Err(e) => return Err(stop(d.src_leg, e)),
        };
        let got = held.num_permits();
        if got == 0 {
            return finish(d).map(|_| false);
        }
        // The source's end of stream already in sight (a short read, and the
        // runtime has seen its FIN): hold the last bytes back (MSG_MORE) so
        // that the FIN passed on next leaves in the same segment.
        let last = got < want && read_closed(d.src);
        let mut from = 0;
        while from < got {
            d.dst.writable().await.map_err(|e| stop(d.dst_leg, e))?;
            let fd = d.dst.as_raw_fd();
            let wrote = if last {
                d.dst.try_io(Interest::WRITABLE, || send_more(fd, &buf[from..got]))
            } else {
                d.dst.try_write(&buf[from..got])
            };
            match wrote {
                Ok(n) => {
                    from += n;
                    delivered(d, &mut held, n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(stop(d.dst_leg, e)),
            }
        }
        if until_bulk && got == want && d.buffer > want {
            return Ok(true);
        }
    }
}

/// One read of at most `want` bytes from the source, once it is readable
/// and the budget has room for them. The permit returned holds the bytes
/// read and not yet delivered: given back as they are delivered, and all
/// that is left when the direction is dropped (a timeout, a reset on the
/// other direction, the end of a drain), so no budget is lost with a
/// connection. `None`: nothing to read after all (readiness cleared).
async fn take<'a>(
    d: &Direction<'a>,
    want: usize,
    wait: bool,
    read: impl FnOnce() -> io::Result<usize>,
) -> io::Result<Option<SemaphorePermit<'a>>> {
    if wait {
        d.src.readable().await?;
    }
    let mut permit = d
        .budget
        .acquire_many(want as u32)
        .await
        .expect("the budget is never closed");
    match read() {
        Ok(n) => {
            drop(permit.split(want - n)); // what was not read goes back
            Ok(Some(permit))
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

fn delivered(d: &Direction<'_>, held: &mut SemaphorePermit<'_>, n: usize) {
    drop(held.split(n));
    d.moved.fetch_add(n as u64, Ordering::Relaxed);
    d.total.fetch_add(n as u64, Ordering::Relaxed);
    d.last_activity.store((d.now_ms)(), Ordering::Relaxed);
}

/// The source's FIN, passed on. The second direction to end leaves it to
/// the close that follows at once (its destination has nothing unread: its
/// end of stream was read), a system call fewer per connection.
fn finish(d: &Direction<'_>) -> Result<(), Stop> {
    if d.ended.fetch_add(1, Ordering::AcqRel) == 1 {
        return Ok(());
    }
    match SockRef::from(d.dst).shutdown(std::net::Shutdown::Write) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Err(Stop::Reset(d.dst_leg)),
        Err(e) => Err(stop(d.dst_leg, e)),
    }
}

fn stop(leg: Leg, e: io::Error) -> Stop {
    match e.raw_os_error() {
        Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => Stop::Reset(leg),
        _ => Stop::Error(leg, e),
    }
}

/// Whether the runtime has seen the source's FIN (no system call).
fn read_closed(src: &TcpStream) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let ready = std::pin::pin!(src.ready(Interest::READABLE));
    matches!(ready.poll(&mut cx), std::task::Poll::Ready(Ok(r)) if r.is_read_closed())
}

/// send(2) with MSG_MORE: the kernel holds the bytes for what follows (the
/// FIN of the shutdown or close that comes next).
fn send_more(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: send reads `data.len()` bytes from a live slice.
    let n = unsafe {
        libc::send(
            fd,
            data.as_ptr().cast(),
            data.len(),
            libc::MSG_MORE | libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    syscall_len(n)
}

/// Copy buffers kept per thread (each worker runs its connections on its own
/// thread): no allocation and free of 16–64 KiB per connection.
struct PooledBuf(Vec<u8>);

thread_local! {
    static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Buffers a thread keeps at most (what 256 idle short connections use).
const POOL_MAX: usize = 256;

impl PooledBuf {
    fn take(capacity: usize) -> PooledBuf {
        let reused = POOL.with(|p| {
            let mut p = p.borrow_mut();
            let at = p.iter().rposition(|b| b.capacity() == capacity)?;
            Some(p.swap_remove(at))
        });
        PooledBuf(reused.unwrap_or_else(|| Vec::with_capacity(capacity)))
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        let mut b = std::mem::take(&mut self.0);
        b.clear();
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < POOL_MAX {
                p.push(b);
            }
        });
    }
}

/// One non-blocking recv(2) into `buf`'s spare capacity, bypassing the
/// runtime's readiness (which a read of the splice path may have spent).
fn recv_now(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    let room = buf.spare_capacity_mut();
    // SAFETY: recv writes at most `room.len()` bytes into the spare capacity,
    // and the length is extended by exactly what it wrote.
    let n = syscall_len(unsafe { libc::recv(fd, room.as_mut_ptr().cast(), room.len(), libc::MSG_DONTWAIT) })?;
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// A byte count from a system call, or its errno.
fn syscall_len(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Whether the socket's next byte is TCP urgent data (SIOCATMARK).
fn at_urgent_mark(fd: RawFd) -> bool {
    const SIOCATMARK: libc::c_ulong = 0x8905; // linux/sockios.h
    let mut mark: libc::c_int = 0;
    // SAFETY: an ioctl on an open socket writing one int.
    unsafe { libc::ioctl(fd, SIOCATMARK as _, &mut mark) == 0 && mark != 0 }
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: both descriptors are open for the duration of the call (the
    // sockets and the pipe outlive it); null offsets mean "current position".
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    syscall_len(n)
}

/// A non-blocking pipe sized to the direction's buffer (as far as the
/// kernel allows: /proc/sys/fs/pipe-max-size for unprivileged users).
struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    cap: usize,
}

impl Pipe {
    fn new(want: usize) -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both are open descriptors we now own.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on an open descriptor. F_SETPIPE_SZ returns the size
        // it set; when it refuses, the pipe keeps its default.
        let cap = unsafe {
            match libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want.max(4096) as libc::c_int) {
                n if n > 0 => n,
                _ => libc::fcntl(w.as_raw_fd(), libc::F_GETPIPE_SZ),
            }
        };
        if cap <= 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Pipe {
            r,
            w,
            cap: (cap as usize).min(want.max(4096)),
        })
    }
}
