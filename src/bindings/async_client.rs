//! `AsyncClient` / `AsyncTopic`: the same operations as the sync classes, returning asyncio futures.
//!
//! Each call creates a future on the running loop and spawns the operation on the tokio runtime. When it
//! ends, a blocking-pool thread (a tokio worker never waits for the GIL) converts the result and hands
//! it to the loop with `call_soon_threadsafe`; the setter skips futures cancelled meanwhile, and
//! cancelling the future aborts the operation.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use crate::bindings::client::{new_core, Arg, Core, Op, TopicCore};
use crate::bindings::exceptions::{self, IntoPy};
use crate::bindings::rsmq::{AsyncRsmqQueue, RsmqCore};
use crate::bindings::runtime;
use crate::errors::Result;

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SET_RESULT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SET_EXCEPTION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

#[pyfunction]
fn _set_result(fut: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if !fut.call_method0("done")?.is_truthy()? {
        fut.call_method1("set_result", (value,))?;
    }
    Ok(())
}

#[pyfunction]
fn _set_exception(fut: &Bound<'_, PyAny>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
    if !fut.call_method0("done")?.is_truthy()? {
        fut.call_method1("set_exception", (exc,))?;
    }
    Ok(())
}

fn setter<'py>(py: Python<'py>, ok: bool) -> PyResult<&'py Bound<'py, PyAny>> {
    let (cell, f) = if ok { (&SET_RESULT, 0) } else { (&SET_EXCEPTION, 1) };
    cell.get_or_try_init(py, || {
        let func = if f == 0 {
            wrap_pyfunction!(_set_result, py)?
        } else {
            wrap_pyfunction!(_set_exception, py)?
        };
        Ok::<_, PyErr>(func.into_any().unbind())
    })
    .map(|f| f.bind(py))
}

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

fn deliver(py: Python<'_>, event_loop: Py<PyAny>, fut: Py<PyAny>, result: Result<crate::bindings::client::Convert>) {
    exceptions::issue_warnings(py);
    let outcome = match result {
        Ok(convert) => convert(py).map_err(|e| e.into_value(py).into_any()),
        Err(err) => match exceptions::instance(py, &err) {
            Ok(exc) => Err(exc.unbind()),
            Err(e) => Err(e.into_value(py).into_any()),
        },
    };
    let (ok, value) = match outcome {
        Ok(v) => (true, v),
        Err(e) => (false, e),
    };
    let sent = setter(py, ok).and_then(|set| event_loop.call_method1(py, "call_soon_threadsafe", (set, fut, value)));
    // The loop may be closed already: nobody is waiting for the result then.
    drop(sent);
}

/// Runs `op` on the runtime; returns an asyncio future of its result. Bad arguments fail the future.
pub fn run_async<'py>(py: Python<'py>, op: Result<Op>) -> PyResult<Bound<'py, PyAny>> {
    let fut = running_loop(py)?.call_method0("create_future")?;
    let op = match op {
        Ok(op) => op,
        Err(err) => {
            fut.call_method1("set_exception", (exceptions::instance(py, &err)?,))?;
            return Ok(fut);
        }
    };
    let event_loop = running_loop(py)?.unbind();
    let target = fut.clone().unbind();
    let handle = runtime::runtime().spawn(async move {
        let result = op.await;
        tokio::task::spawn_blocking(move || runtime::with_python(|py| deliver(py, event_loop, target, result)));
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
    #[pyo3(signature = (url=None, *, pool_size=Arg::missing(), connect_timeout=Arg::missing(), command_timeout=Arg::missing(), max_message_bytes=Arg::missing(), chunk_size=Arg::missing(), client_name=None))]
    #[pyo3(
        text_signature = "(url=None, *, pool_size=2, connect_timeout=5.0, command_timeout=10.0, max_message_bytes=1048576, chunk_size=1000, client_name=None)"
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

    fn topic(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<AsyncTopic> {
        let keys = self.core.topic(name).py_err(py)?;
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

    #[pyo3(signature = (qname, ns=Arg::missing(), *, realtime=Arg::missing()), text_signature = "(self, /, qname, ns='rsmq', *, realtime=False)")]
    fn rsmq(
        &self,
        py: Python<'_>,
        qname: &Bound<'_, PyAny>,
        ns: Arg<'_>,
        realtime: Arg<'_>,
    ) -> PyResult<AsyncRsmqQueue> {
        Ok(AsyncRsmqQueue {
            inner: RsmqCore::new(&self.core, qname, &ns, &realtime).py_err(py)?,
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
            crate::protocol::validate::py_repr(&self.inner.keys.name),
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
