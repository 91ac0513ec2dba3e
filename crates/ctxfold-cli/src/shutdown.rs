//! What stops a server (`proxy`, `ui`): Ctrl-C or SIGTERM.

use std::future::Future;

/// Ctrl-C or SIGTERM, listened for from this call on: call it (inside the
/// runtime) before the server says it listens. A signal sent between that
/// line and a handler installed later would find the default action and
/// end the process by the signal (a service manager stopping it at once
/// would see no clean exit).
pub fn shutdown() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let int = signal(SignalKind::interrupt()).ok();
        let term = signal(SignalKind::terminate()).ok();
        async fn one(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        async move {
            tokio::select! {
                _ = one(int) => {},
                _ = one(term) => {},
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
