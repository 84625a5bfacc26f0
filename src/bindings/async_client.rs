//! `AsyncClient` / `AsyncTopic`: the same operations as the sync classes, returning asyncio futures.
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
use pyo3::types::PyTuple;

use crate::bindings::client::{new_core, Arg, Convert, Core, Op, TopicCore};
use crate::bindings::exceptions;
use crate::bindings::rsmq::{AsyncRsmqQueue, RsmqCore};
use crate::bindings::runtime;
use crate::bindings::stream::{AsyncStream, StreamCore};
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
fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
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
    use crate::bindings::client::Convert;
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

/// The asyncio twin of `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncClient {
    core: Arc<Core>,
}

#[pymethods]
impl AsyncClient {
    #[new]
    #[pyo3(signature = (url=None, *, pool_size=Arg::missing(), connect_timeout=Arg::missing(), command_timeout=Arg::missing(), max_message_bytes=Arg::missing(), chunk_size=Arg::missing(), client_name=None, username=None, password=None, password_file=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None, tls_insecure_skip_verify=None))]
    #[pyo3(
        text_signature = "(url=None, *, pool_size=2, connect_timeout=5.0, command_timeout=10.0, max_message_bytes=1048576, chunk_size=1000, client_name=None, username=None, password=None, password_file=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None, tls_insecure_skip_verify=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: Option<&Bound<'_, PyAny>>,
        pool_size: Arg<'_>,
        connect_timeout: Arg<'_>,
        command_timeout: Arg<'_>,
        max_message_bytes: Arg<'_>,
        chunk_size: Arg<'_>,
        client_name: Option<&Bound<'_, PyAny>>,
        username: Option<Bound<'_, PyAny>>,
        password: Option<Bound<'_, PyAny>>,
        password_file: Option<Bound<'_, PyAny>>,
        tls_ca_file: Option<Bound<'_, PyAny>>,
        tls_cert_file: Option<Bound<'_, PyAny>>,
        tls_key_file: Option<Bound<'_, PyAny>>,
        tls_insecure_skip_verify: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let core = new_core(
            py,
            url,
            pool_size,
            connect_timeout,
            command_timeout,
            max_message_bytes,
            chunk_size,
            client_name,
            [
                username,
                password,
                password_file,
                tls_ca_file,
                tls_cert_file,
                tls_key_file,
                tls_insecure_skip_verify,
            ],
        )?;
        Ok(Self { core: Arc::new(core) })
    }

    #[getter]
    fn url(&self) -> String {
        self.core.opts.redacted.clone()
    }

    fn __repr__(&self) -> String {
        self.core.repr("AsyncClient")
    }

    fn topic(&self, name: &Bound<'_, PyAny>) -> PyResult<AsyncTopic> {
        let keys = self.core.topic(name)?;
        Ok(AsyncTopic {
            inner: TopicCore {
                core: self.core.clone(),
                keys,
            },
        })
    }

    fn topics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.topics_op())
    }

    fn streams<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.streams_op())
    }

    #[pyo3(signature = (qname, ns=Arg::missing(), *, realtime=Arg::missing()), text_signature = "(self, /, qname, ns='rsmq', *, realtime=False)")]
    fn rsmq(&self, qname: &Bound<'_, PyAny>, ns: Arg<'_>, realtime: Arg<'_>) -> PyResult<AsyncRsmqQueue> {
        Ok(AsyncRsmqQueue {
            inner: RsmqCore::new(&self.core, qname, &ns, &realtime)?,
        })
    }

    fn stream(&self, name: &Bound<'_, PyAny>) -> PyResult<AsyncStream> {
        Ok(AsyncStream {
            inner: StreamCore::new(&self.core, name)?,
        })
    }

    #[pyo3(signature = (ns=Arg::missing()), text_signature = "(self, /, ns='rsmq')")]
    fn rsmq_queues<'py>(&self, py: Python<'py>, ns: Arg<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, crate::bindings::rsmq::queues_op(&self.core, &ns))
    }

    #[pyo3(signature = (topics, count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, topics, count=1, block=None, lease=30.0, owner=None)")]
    fn claim<'py>(
        &self,
        py: Python<'py>,
        topics: &Bound<'py, PyAny>,
        count: Arg<'py>,
        block: Option<&Bound<'py, PyAny>>,
        lease: Arg<'py>,
        owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.claim_op(topics, &count, block, &lease, owner))
    }

    fn commit<'py>(&self, py: Python<'py>, messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.commit_op(messages))
    }

    #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
    fn extend<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        lease: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.extend_op(messages, &lease))
    }

    #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
    fn release<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        delay: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.release_op(messages, &delay))
    }

    fn ping<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.core.ping_op())
    }

    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.core.close();
        ready(py, py.None().into_bound(py))
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        ready(py, slf.into_any())
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__<'py>(&self, py: Python<'py>, _args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        self.core.close();
        ready(py, py.None().into_bound(py))
    }
}

/// The asyncio twin of `Topic`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncTopic {
    inner: TopicCore,
}

#[pymethods]
impl AsyncTopic {
    #[getter]
    fn name(&self) -> String {
        self.inner.keys.name.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "AsyncTopic({}, client={})",
            crate::pyrepr::py_repr(&self.inner.keys.name),
            self.inner.core.repr("AsyncClient")
        )
    }

    #[pyo3(signature = (fields, front=Arg::missing()), text_signature = "(self, /, fields, front=False)")]
    fn publish<'py>(
        &self,
        py: Python<'py>,
        fields: &Bound<'py, PyAny>,
        front: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.publish_op(fields, &front))
    }

    #[pyo3(signature = (messages, front=Arg::missing()), text_signature = "(self, /, messages, front=False)")]
    fn publish_batch<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        front: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.publish_batch_op(messages, &front))
    }

    fn publish_stream<'py>(&self, py: Python<'py>, messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.publish_stream_op(messages))
    }

    #[pyo3(signature = (data, *, dedup_key=None, dedup_ttl=Arg::missing(), id_column=None, value_column=None), text_signature = "(self, /, data, *, dedup_key=None, dedup_ttl=86400.0, id_column=None, value_column=None)")]
    fn publish_arrow<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        dedup_key: Option<&Bound<'py, PyAny>>,
        dedup_ttl: Arg<'py>,
        id_column: Option<&Bound<'py, PyAny>>,
        value_column: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(
            py,
            self.inner
                .publish_arrow_op(data, dedup_key, &dedup_ttl, id_column, value_column),
        )
    }

    #[pyo3(signature = (count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, count=1, block=None, lease=30.0, owner=None)")]
    fn claim<'py>(
        &self,
        py: Python<'py>,
        count: Arg<'py>,
        block: Option<&Bound<'py, PyAny>>,
        lease: Arg<'py>,
        owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.claim_op(&count, block, &lease, owner))
    }

    fn commit<'py>(&self, py: Python<'py>, messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.commit_op(messages))
    }

    #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
    fn extend<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        lease: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.extend_op(messages, &lease))
    }

    #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
    fn release<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        delay: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.release_op(messages, &delay))
    }

    #[pyo3(signature = (messages, error=None, to=None), text_signature = "(self, /, messages, error='', to=None)")]
    fn dead_letter<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        error: Option<&Bound<'py, PyAny>>,
        to: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.dead_letter_op(messages, error, to))
    }

    #[pyo3(signature = (owner, lease=Arg::missing()), text_signature = "(self, /, owner, lease=30.0)")]
    fn resume<'py>(&self, py: Python<'py>, owner: &Bound<'py, PyAny>, lease: Arg<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.resume_op(owner, &lease))
    }

    #[pyo3(signature = (all=Arg::missing(), lease=Arg::missing()), text_signature = "(self, /, all=False, lease=30.0)")]
    fn harvest<'py>(&self, py: Python<'py>, all: Arg<'py>, lease: Arg<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.harvest_op(&all, &lease))
    }

    fn peek<'py>(&self, py: Python<'py>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.peek_op(id))
    }

    fn fetch_arrow<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        fields: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::bindings::arrow_read::need_pyarrow(py)?;
        run_async(py, self.inner.fetch_arrow_op(ids, fields))
    }

    #[pyo3(signature = (queue=Arg::missing(), start=Arg::missing(), count=Arg::missing()), text_signature = "(self, /, queue='backlog', start=0, count=100)")]
    fn inspect<'py>(
        &self,
        py: Python<'py>,
        queue: Arg<'py>,
        start: Arg<'py>,
        count: Arg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.inspect_op(&queue, &start, &count))
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.stats_op())
    }

    #[pyo3(signature = (queue=Arg::missing()), text_signature = "(self, /, queue='backlog')")]
    fn purge<'py>(&self, py: Python<'py>, queue: Arg<'py>) -> PyResult<Bound<'py, PyAny>> {
        run_async(py, self.inner.purge_op(&queue))
    }
}
