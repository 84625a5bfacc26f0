//! The one tokio runtime of the extension, and waiting for its tasks with the GIL released.
//!
//! Fork safety: the runtime remembers the pid that built it. In a forked child (Spark forks Python
//! workers) its threads do not exist, so a new runtime is built and the parent's is leaked untouched.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tokio::runtime::{Builder, Runtime};

use crate::errors::Result;

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// How often a waiting call wakes to let Python handle signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// Set by the exit hook: from then on the runtime's threads never enter Python again.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Runtime threads inside (or entering) Python right now.
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);
/// The longest the exit hook waits for them.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Runs `f` with the GIL on a runtime thread (an asyncio result, a warning), unless the interpreter is
/// exiting. A thread still inside Python when the interpreter finalizes crashes the process (it may be
/// waiting for the GIL that the finalizing main thread holds), so the exit hook waits for such calls to
/// end and stops new ones; whatever they would have delivered has nobody left to receive it.
pub fn with_python(f: impl FnOnce(Python<'_>)) {
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    if !EXITING.load(Ordering::SeqCst) {
        Python::try_attach(f);
    }
    IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
}

/// The exit hook (atexit runs before the interpreter starts finalizing, while other threads can still
/// take the GIL): stops runtime threads from entering Python and waits, GIL released, for those inside.
#[pyfunction]
fn quiesce_at_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + EXIT_WAIT;
    py.detach(|| {
        while IN_PYTHON.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Registers [`quiesce_at_exit`] with `atexit`.
pub fn register_exit_hook(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(quiesce_at_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}

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
