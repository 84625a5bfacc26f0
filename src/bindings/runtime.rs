//! The one tokio runtime of the extension, and waiting for its tasks with the GIL released.
//!
//! Fork safety: the runtime remembers the pid that built it. In a forked child (Spark forks Python
//! workers) its threads do not exist, so a new runtime is built and the parent's is leaked untouched.

use std::future::Future;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::{Builder, Runtime};

use crate::errors::Result;

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// How often a waiting call wakes to let Python handle signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// The runtime of this process, built on first use (again in a forked child).
pub fn runtime() -> &'static Runtime {
    let pid = std::process::id();
    let mut guard = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, rt)) = *guard {
        if owner == pid {
            return rt;
        }
    }
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ferroq-io")
        .enable_all()
        .build()
        .expect("ferroq: cannot start the tokio runtime");
    // Leaked on purpose: a runtime inherited through fork must never be dropped (its threads are gone).
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    *guard = Some((pid, rt));
    rt
}

/// Runs `fut` on the runtime and waits for it with the GIL released, waking every 50 ms to check for
/// signals; on KeyboardInterrupt (or any signal handler error) the task is aborted and the error raised.
pub fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<Result<T>>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    let handle = runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    let mut rx = rx;
    loop {
        // The receiver goes into the GIL-free closure and comes back out (it is Send, not Sync).
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_SLICE), rx));
        rx = back;
        match got {
            Ok(result) => return Ok(result),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(err) = py.check_signals() {
                    handle.abort();
                    return Err(err);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "ferroq: the I/O task ended without a result",
                ));
            }
        }
    }
}
