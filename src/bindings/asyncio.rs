//! The asyncio runner of the method macros: each call of an asyncio handle (`AsyncClient`, `AsyncTopic`,
//! `AsyncRsmqQueue`, `AsyncStream`, `AsyncConsumerGroup`) returns an asyncio future.
//!
//! Each call creates a future on the running loop and spawns the operation on the tokio runtime. When it
//! ends, the runtime thread puts the result in the loop's [`Inbox`] and rings it: a byte on a socket that
//! the loop watches (`loop.add_reader`). The loop's own thread then converts the results and sets the
//! futures, skipping those cancelled meanwhile; cancelling a future aborts its operation. A runtime
//! thread never takes the GIL, and a call costs one wake-up of the loop. A loop that cannot watch a
//! socket (Windows' proactor loop) is handed each result with `call_soon_threadsafe` instead, by a
//! blocking-pool thread that takes the GIL (a tokio worker never waits for it).

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::bindings::core::{Convert, Op};
use crate::bindings::exceptions;
use crate::bindings::runtime;
use crate::errors::Result;

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Aborts the tokio task when its asyncio future is cancelled.
#[pyclass(module = "ferroq._ferroq", frozen)]
struct AbortOnCancel {
    handle: tokio::task::AbortHandle,
}

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            self.handle.abort();
        }
        Ok(())
    }
}

fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()
}

/// A future of the running loop, already resolved to `value`.
pub fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let fut = running_loop(py)?.call_method0("create_future")?;
    fut.call_method1("set_result", (value,))?;
    Ok(fut)
}

/// Sets the future `fut` from `result` on the loop's thread, unless it was cancelled meanwhile.
fn deliver(py: Python<'_>, fut: &Bound<'_, PyAny>, result: Result<Convert>) -> PyResult<()> {
    exceptions::issue_warnings(py);
    if fut.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    let outcome = match result {
        Ok(convert) => convert(py),
        Err(err) => Err(PyErr::from(err)),
    };
    match outcome {
        Ok(value) => fut.call_method1("set_result", (value,))?,
        Err(e) => fut.call_method1("set_exception", (e.into_value(py),))?,
    };
    Ok(())
}

/// Where the result of a call goes (see the module doc).
enum Mailbox {
    #[cfg(unix)]
    Inbox(Arc<inbox::Inbox>),
    Loop(Py<PyAny>),
}

impl Mailbox {
    /// The mailbox of the running loop `event_loop`.
    fn of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Self> {
        #[cfg(unix)]
        if let Some(inbox) = inbox::of(py, event_loop)? {
            return Ok(Mailbox::Inbox(inbox));
        }
        #[cfg(not(unix))]
        let _ = py;
        Ok(Mailbox::Loop(event_loop.clone().unbind()))
    }

    /// Hands the result over, on a runtime thread.
    fn put(self, fut: Py<PyAny>, result: Result<Convert>) {
        match self {
            #[cfg(unix)]
            Mailbox::Inbox(inbox) => inbox.put(fut, result),
            Mailbox::Loop(event_loop) => {
                tokio::task::spawn_blocking(move || {
                    runtime::with_python(|py| {
                        let handover = Handover(Mutex::new(Some(result)));
                        // The loop may be closed already: nobody is waiting for the result then.
                        drop(event_loop.call_method1(py, "call_soon_threadsafe", (handover, fut)));
                    })
                });
            }
        }
    }
}

/// A result on its way to the loop through `call_soon_threadsafe`, delivered when the loop calls it.
#[pyclass(module = "ferroq._ferroq", frozen)]
struct Handover(Mutex<Option<Result<Convert>>>);

#[pymethods]
impl Handover {
    fn __call__(&self, py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(result) => deliver(py, fut, result),
            None => Ok(()),
        }
    }
}

#[cfg(unix)]
mod inbox {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::sync::{Arc, Mutex};

    use pyo3::exceptions::PyNotImplementedError;
    use pyo3::prelude::*;
    use pyo3::sync::PyOnceLock;

    use super::deliver;
    use crate::bindings::core::Convert;
    use crate::errors::Result;

    /// The [`Bell`] of each event loop, or None for a loop that cannot watch a socket (a
    /// `weakref.WeakKeyDictionary`: a loop's entry goes with it).
    static BELLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

    /// Finished calls of one event loop, waiting for its thread; filled by runtime threads without the GIL.
    pub struct Inbox {
        results: Mutex<Vec<(Py<PyAny>, Result<Convert>)>>,
        /// Written to when `results` stops being empty; the loop watches the other end.
        ring: UnixStream,
    }

    impl Inbox {
        pub fn put(&self, fut: Py<PyAny>, result: Result<Convert>) {
            let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
            results.push((fut, result));
            if results.len() == 1 {
                // A full socket already holds a byte the loop has not read: nothing is lost.
                let _ = (&self.ring).write(&[1]);
            }
        }
    }

    /// The loop's reader callback, and the way to its [`Inbox`].
    #[pyclass(module = "ferroq._ferroq", frozen)]
    struct Bell {
        inbox: Arc<Inbox>,
        heard: UnixStream,
    }

    #[pymethods]
    impl Bell {
        fn __call__(&self, py: Python<'_>) {
            // The bytes first: a result put after the take below rings again.
            let mut bytes = [0u8; 64];
            while matches!((&self.heard).read(&mut bytes), Ok(n) if n == bytes.len()) {}
            let results = std::mem::take(&mut *self.inbox.results.lock().unwrap_or_else(|e| e.into_inner()));
            for (fut, result) in results {
                if let Err(e) = deliver(py, fut.bind(py), result) {
                    e.write_unraisable(py, Some(fut.bind(py)));
                }
            }
        }
    }

    /// The inbox of the running loop `event_loop`, made and watched on first use; None when the loop
    /// cannot watch a socket. (A forked child never runs its parent's loop: asyncio refuses to.)
    pub fn of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Inbox>>> {
        let bells = BELLS.get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("weakref")?.getattr("WeakKeyDictionary")?.call0()?.unbind())
        })?;
        let bells = bells.bind(py);
        if let Ok(bell) = bells.get_item(event_loop) {
            return Ok(bell.cast_into::<Bell>().ok().map(|b| b.get().inbox.clone()));
        }
        let (ring, heard) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        heard.set_nonblocking(true)?;
        let inbox = Arc::new(Inbox {
            results: Mutex::new(Vec::new()),
            ring,
        });
        let fd = heard.as_raw_fd();
        let bell = Bound::new(
            py,
            Bell {
                inbox: inbox.clone(),
                heard,
            },
        )?;
        match event_loop.call_method1("add_reader", (fd, &bell)) {
            Ok(_) => {
                bells.set_item(event_loop, bell)?;
                Ok(Some(inbox))
            }
            Err(e) if e.is_instance_of::<PyNotImplementedError>(py) => {
                bells.set_item(event_loop, py.None())?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// Runs `op` on the runtime; returns an asyncio future of its result. Bad arguments fail the future.
pub fn run_async<'py>(py: Python<'py>, op: Result<Op>) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = running_loop(py)?;
    let fut = event_loop.call_method0("create_future")?;
    let op = match op {
        Ok(op) => op,
        Err(err) => {
            fut.call_method1("set_exception", (exceptions::instance(py, &err)?,))?;
            return Ok(fut);
        }
    };
    let mailbox = Mailbox::of(py, &event_loop)?;
    let target = fut.clone().unbind();
    let handle = runtime::runtime().spawn(async move {
        let result = op.await;
        mailbox.put(target, result);
    });
    fut.call_method1(
        "add_done_callback",
        (AbortOnCancel {
            handle: handle.abort_handle(),
        },),
    )?;
    Ok(fut)
}
