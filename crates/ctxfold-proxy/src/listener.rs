//! Accepting client connections, with the bounds a service open for weeks
//! needs: at most `max_connections` open at once (more wait in the
//! kernel's listen queue, not in memory); a deadline for a request's head
//! once its first byte has come (`header_timeout`); and one for a
//! kept-alive connection waiting for its next request (`idle_timeout`).
//! Bodies have their own deadline where the proxy reads them
//! ([`crate::intake`]) and a bound on silence everywhere else (the
//! router's layer). While a request is being answered no deadline of this
//! module runs: a streamed answer may take minutes.
//!
//! hyper has a head timeout of its own, but its timer starts as soon as
//! the connection is ready for a request, so it cannot tell an idle
//! connection from a slow head; each connection here has a watchdog that
//! follows what the connection does instead (`Activity`, below).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt as _;

/// How the listener bounds its clients.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a client may take to send a request's head, from its
    /// first byte.
    pub header_timeout: Duration,
    /// The longest a kept-alive connection (or a new one) may wait for
    /// its next request.
    pub idle_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

/// How long a shutdown waits for requests in flight before it drops them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serve `router` on `listener` until `shutdown` completes, then let the
/// requests in flight finish (up to [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    // hyper's graceful shutdown closes a connection only between requests
    // once it served one: a watchdog closes any connection not answering
    // a request when this turns true (a fresh one, a head half sent).
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below times heads; hyper's own timer would also close
    // idle connections at the head's deadline.
    builder.header_read_timeout(None);
    tokio::pin!(shutdown);
    loop {
        // A permit first: past the cap, connections wait to be accepted.
        let permit = tokio::select! {
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY an answer's head and body, written apart,
        // wait for the client's delayed acknowledgement: 40 ms on every
        // request of a client that delays them (measured with httpx).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY could not be set on a connection: {e}");
        }
        let activity = Arc::new(Activity::new());
        let service = tracked(router.clone(), Arc::clone(&activity));
        let io = TokioIo::new(Watched {
            io: tcp,
            activity: Arc::clone(&activity),
        });
        let conn = graceful.watch(builder.serve_connection(io, TowerToHyperService::new(service)));
        let mut stop = stop.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            loop {
                let deadline = activity.deadline(&limits);
                if deadline.is_some() && *stop.borrow_and_update() {
                    tracing::debug!("closing a client connection: shutting down");
                    break;
                }
                // Made before the next look at the state: a change in
                // between is not lost (`notify_one` keeps a permit).
                let changed = activity.changed.notified();
                let expired = async {
                    match deadline {
                        Some((at, _)) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!("a client connection ended: {e}");
                        }
                        break;
                    }
                    () = changed => {}
                    // Once stopping, no more to watch (and a closed
                    // channel would answer at once, for ever).
                    _ = stop.changed(), if !*stop.borrow() => {}
                    () = expired => {
                        if let Some((at, what)) = activity.deadline(&limits)
                            && at <= Instant::now()
                        {
                            // Dropping the connection closes its socket.
                            tracing::debug!("closing a client connection: {what}");
                            break;
                        }
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    stopping.send_replace(true);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!(
                "shutting down with requests still open after {} s",
                SHUTDOWN_GRACE.as_secs()
            );
        }
    }
    Ok(())
}

/// Where a connection is, for its watchdog.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request, since then.
    Idle(Instant),
    /// A request's head started arriving then.
    Head(Instant),
    /// This many requests are being answered (more than one only when a
    /// client pipelines).
    Busy(usize),
}

/// A connection's phase, shared by its socket (bytes read), its service
/// (a request dispatched, its answer done) and its watchdog.
struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            phase: Mutex::new(Phase::Idle(Instant::now())),
            changed: Notify::new(),
        }
    }

    fn update(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *phase = f(*phase);
        drop(phase);
        self.changed.notify_one();
    }

    /// When the connection is to be closed unless it moves on, and why.
    fn deadline(&self, limits: &Limits) -> Option<(Instant, &'static str)> {
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Idle(since) => Some((
                since + limits.idle_timeout,
                "no request within idle_timeout_secs",
            )),
            Phase::Head(since) => Some((
                since + limits.header_timeout,
                "a request's head not whole within header_timeout_secs",
            )),
            Phase::Busy(_) => None,
        }
    }

    /// Bytes arrived: on an idle connection, a head has begun.
    fn read(&self) {
        let idle = matches!(
            *self.phase.lock().unwrap_or_else(|e| e.into_inner()),
            Phase::Idle(_)
        );
        if idle {
            self.update(|p| match p {
                Phase::Idle(_) => Phase::Head(Instant::now()),
                p => p,
            });
        }
    }

    /// A request's head was read and the request dispatched.
    fn begin(&self) {
        self.update(|p| match p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            Phase::Idle(_) | Phase::Head(_) => Phase::Busy(1),
        });
    }

    /// A request's answer was written (or dropped).
    fn end(&self) {
        self.update(|p| match p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        });
    }
}

/// The router, telling `activity` when each request starts and when its
/// answer is done (its body dropped, by hyper at its end).
fn tracked(
    router: Router,
    activity: Arc<Activity>,
) -> impl tower::Service<
    axum::http::Request<hyper::body::Incoming>,
    Response = axum::http::Response<Answer>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone
+ Send
+ 'static {
    let on_answer = Arc::clone(&activity);
    router
        .map_request(move |req: axum::http::Request<hyper::body::Incoming>| {
            activity.begin();
            req.map(Body::new)
        })
        .map_response(move |resp: axum::response::Response| {
            let busy = Busy(Arc::clone(&on_answer));
            resp.map(|body| Answer { body, _busy: busy })
        })
}

/// Marks its request answered when dropped.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// An answer's body, passed on as it is: its connection counts the
/// request as unanswered until the body is dropped.
pub struct Answer {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A client's socket that reports the bytes it reads to its
/// [`Activity`].
struct Watched {
    io: tokio::net::TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1,
        }
    }

    /// The watchdog's deadlines follow the connection: idle, a head begun,
    /// answering (none), idle again.
    #[test]
    fn deadlines_follow_what_the_connection_does() {
        let a = Activity::new();
        let l = limits();
        let (_, why) = a.deadline(&l).unwrap();
        assert!(why.contains("idle_timeout_secs"));
        a.read();
        let (_, why) = a.deadline(&l).unwrap();
        assert!(why.contains("header_timeout_secs"));
        a.begin();
        // Bytes of a body, and a second pipelined request, keep it busy.
        a.read();
        a.begin();
        assert!(a.deadline(&l).is_none());
        a.end();
        assert!(a.deadline(&l).is_none());
        a.end();
        let (_, why) = a.deadline(&l).unwrap();
        assert!(why.contains("idle_timeout_secs"));
    }
}
