//! The tokio runtimes of the extension, and waiting for a call with the GIL released.
//!
//! A sync call runs on a current-thread runtime that the calling thread drives itself, inside `block_on`
//! with the GIL released: the calling thread writes the request, waits in epoll and reads the reply, and
//! no other thread takes part (on a multi-thread runtime the same call wakes a worker thread and is woken
//! back, several context switches per call). Threads that call at the same time share that runtime: one
//! drives it, the others wait for their replies. The asyncio clients' calls run on a multi-thread runtime
//! of 2 workers, since nothing in an event loop's thread may block.
//!
//! Fork safety: each runtime remembers the pid that built it. In a forked child (Spark forks Python
//! workers) its threads do not exist, so a new runtime is built and the parent's is leaked untouched.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tokio::runtime::{Builder, Runtime};

use crate::errors::Result;

/// A runtime of this process, built on first use (again in a forked child).
struct PerProcess(Mutex<Option<(u32, &'static Runtime)>>);

impl PerProcess {
    const fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn get(&self, build: fn() -> std::io::Result<Runtime>) -> &'static Runtime {
        let pid = crate::fork::pid();
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((owner, rt)) = *guard {
            if owner == pid {
                return rt;
            }
        }
        let rt = build().expect("ferroq: cannot start the tokio runtime");
        // Leaked on purpose: a runtime inherited through fork must never be dropped (its threads are gone).
        let rt: &'static Runtime = Box::leak(Box::new(rt));
        *guard = Some((pid, rt));
        rt
    }
}

static ASYNC_RUNTIME: PerProcess = PerProcess::new();
static SYNC_RUNTIME: PerProcess = PerProcess::new();

/// How often a waiting call wakes to let Python handle signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// Set by the exit hook: from then on the runtime's threads never enter Python again.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Runtime threads inside (or entering) Python right now.
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);
/// The longest the exit hook waits for them.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Runs `f` with the GIL on a runtime thread (an asyncio result, the iterable of `publish_stream`), unless the interpreter is
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

/// The runtime of the asyncio clients.
pub fn runtime() -> &'static Runtime {
    ASYNC_RUNTIME.get(|| {
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ferroq-io")
            .enable_all()
            .build()
    })
}

/// The runtime of the sync clients, driven by their calling threads (see the module doc).
fn sync_runtime() -> &'static Runtime {
    SYNC_RUNTIME.get(|| Builder::new_current_thread().enable_all().build())
}

/// Turns of the sync runtime that [`start`] gives a new task. Each turn runs every task that is ready: a
/// claim gives the connections' tasks their turn first (`pool::settle`, two turns), sends its request on an
/// open connection, and the connection's task writes it (four turns in all; the rest are margin). A task
/// that must connect first sends at the next call that drives the runtime.
const START_TURNS: usize = 16;

/// Starts `fut` as a task of the sync runtime and returns at once (the GIL released for a few turns of
/// the runtime, in which the task sends its first request). The task goes on whenever a thread drives the
/// runtime (any sync call, or a [`wait`] for its handle), so its server work overlaps what the caller does
/// meanwhile. `Batches` of the native sync client claims ahead with it.
pub fn start<T, F>(py: Python<'_>, fut: F) -> tokio::task::JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt = sync_runtime();
    let handle = rt.spawn(fut);
    // A runtime thread (Python code it runs) cannot drive the sync runtime: the task starts at the next wait.
    if tokio::runtime::Handle::try_current().is_err() {
        py.detach(|| {
            rt.block_on(async {
                for _ in 0..START_TURNS {
                    tokio::task::yield_now().await;
                }
            });
        });
    }
    handle
}

/// Waits for a task of [`start`], driving the sync runtime with the GIL released and waking every 50 ms
/// to check for signals. A signal handler's error (KeyboardInterrupt) leaves the task running, to wait for
/// again.
pub fn wait_task<T: Send + 'static>(py: Python<'_>, task: &mut tokio::task::JoinHandle<T>) -> PyResult<T> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "ferroq: a runtime thread cannot wait for a sync call (use the asyncio client there)",
        ));
    }
    drive(py, task)?.map_err(|ended| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("ferroq: the call ended without a result: {ended}"))
    })
}

/// Drives `fut` on the sync runtime in the calling thread, the GIL released, in slices of 50 ms with a
/// check for signals between them; a signal handler's error is returned with `fut` left where it was.
fn drive<F>(py: Python<'_>, fut: &mut F) -> PyResult<F::Output>
where
    F: Future + Unpin + Send,
    F::Output: Send,
{
    let rt = sync_runtime();
    loop {
        // The timer is made inside `block_on`: it needs the runtime's context.
        match py.detach(|| rt.block_on(async { tokio::time::timeout(SIGNAL_SLICE, &mut *fut).await })) {
            Ok(result) => return Ok(result),
            Err(_elapsed) => py.check_signals()?,
        }
    }
}

/// Runs `fut` on the sync runtime in the calling thread, with the GIL released, waking every 50 ms to
/// check for signals; on KeyboardInterrupt (or any signal handler error) the future is dropped (which
/// cancels it) and the error raised. No Python code runs in this thread meanwhile (warnings wait for
/// the end of the call, see `exceptions::warn`), so nothing can call in again while it drives the runtime.
pub fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<Result<T>>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // Python code run by a runtime thread calls in: this thread cannot drive the sync runtime.
        return wait_on_new_thread(py, fut);
    }
    let interrupted = {
        // Pinned here, so a slice that times out leaves the call where it is for the next slice.
        let mut call = std::pin::pin!(crate::pool::SYNC_CALL.scope((), fut));
        match drive(py, &mut call) {
            Ok(result) => return Ok(result),
            Err(err) => err,
        }
    };
    let rt = sync_runtime();
    // Dropping the call aborted the connection tasks only it used (a blocking claim's connection). One
    // turn of the runtime ends them now, closing their sockets, instead of at the next call: the server
    // must not keep a BLMOVE for a caller that is gone.
    py.detach(|| rt.block_on(tokio::task::yield_now()));
    Err(interrupted)
}

/// [`wait`] from a thread inside a runtime's context, which cannot drive the sync runtime (Python code
/// run by a runtime thread, such as the iterable given to `publish_stream`, calling a sync client): a
/// new thread drives the call.
fn wait_on_new_thread<T, F>(py: Python<'_>, fut: F) -> PyResult<Result<T>>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (fut, abort) = futures_util::future::abortable(fut);
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || {
        let rt = sync_runtime();
        match rt.block_on(fut) {
            Ok(result) => drop(tx.send(result)),
            // Interrupted: the aborted connection tasks end now (see `wait`).
            Err(_aborted) => rt.block_on(tokio::task::yield_now()),
        }
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
                    abort.abort();
                    return Err(err);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "ferroq: the I/O thread ended without a result",
                ));
            }
        }
    }
}

/// The batches of a sync handle's iterator, each call started one ahead ([`start`]): the claims of
/// `ferroq.Batches` over a native `Topic`, the receives over a native `RsmqQueue`. The next call is sent
/// before the current batch becomes Python objects, so the server works on it while the caller converts,
/// handles and acknowledges the current one; the caller's next call drives it. It belongs to the process
/// that made it: its task and connections do not exist in a forked child.
pub struct Ahead<I> {
    task: Mutex<Option<tokio::task::JoinHandle<Result<Vec<I>>>>>,
    pid: u32,
}

impl<I: Send + 'static> Ahead<I> {
    pub fn new() -> Self {
        Self {
            task: Mutex::new(None),
            pid: crate::fork::pid(),
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<tokio::task::JoinHandle<Result<Vec<I>>>>> {
        self.task.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next batch: the call ahead's (starting `call()` first when none is ahead), after starting the
    /// call after it when this one found anything. A closed client (`call()` fails) starts none: the next
    /// `next` raises its error. A signal leaves the call in flight, for the next `next`.
    pub fn next<F>(&self, py: Python<'_>, call: impl Fn() -> Result<F>) -> PyResult<Vec<I>>
    where
        F: Future<Output = Result<Vec<I>>> + Send + 'static,
    {
        self.check_process()?;
        let taken = self.slot().take();
        let task = match taken {
            Some(task) => task,
            None => start(py, call()?),
        };
        let batch = self.wait(py, task)??;
        if !batch.is_empty() {
            if let Ok(fut) = call() {
                *self.slot() = Some(start(py, fut));
            }
        }
        Ok(batch)
    }

    /// Stops: the batch of the call ahead (waiting for it), for the caller to give back; none when none is
    /// ahead or it failed (a failed call holds nothing).
    pub fn finish(&self, py: Python<'_>) -> PyResult<Vec<I>> {
        self.check_process()?;
        let taken = self.slot().take();
        Ok(match taken {
            Some(task) => self.wait(py, task)?.unwrap_or_default(),
            None => Vec::new(),
        })
    }

    fn wait(&self, py: Python<'_>, mut task: tokio::task::JoinHandle<Result<Vec<I>>>) -> PyResult<Result<Vec<I>>> {
        wait_task(py, &mut task).inspect_err(|_| *self.slot() = Some(task))
    }

    fn check_process(&self) -> PyResult<()> {
        if crate::fork::pid() == self.pid {
            return Ok(());
        }
        Err(
            crate::errors::Error::invalid("a batches iterator cannot be used in a forked child: make a new one there")
                .into(),
        )
    }
}
