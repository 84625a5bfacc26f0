//! `RsmqQueue` (sync) and `AsyncRsmqQueue` (asyncio): the same methods, generated once by `rsmq_methods!`
//! over [`RsmqCore`], which validates under the GIL and prepares each operation as an [`Op`].

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::bindings::arrow;
use crate::bindings::asyncio::run_async;
use crate::bindings::convert;
use crate::bindings::core::{self, op, prepare, sync_call, to_py, Arg, Core, Op};
use crate::bindings::runtime;
use crate::errors::{Error, Result};
use crate::protocol::rsmq::{self, Queue, Settings};
use crate::protocol::validate;
use crate::pyrepr::py_repr;

const DEFAULT_VT: i64 = 30;
const DEFAULT_DELAY: i64 = 0;
const DEFAULT_MAXSIZE: i64 = 65_536;

/// The namespace: RSMQ's default when not given.
fn ns_arg(ns: &Arg<'_>) -> Result<String> {
    ns.0.as_ref().map_or_else(
        || Ok(crate::protocol::keys::RSMQ_DEFAULT_NS.to_string()),
        convert::rsmq::ns,
    )
}

/// `None` (not given or None) or the value.
fn given<'a, 'py>(obj: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    obj.filter(|o| !o.is_none())
}

/// A per-call vt/delay: None keeps the queue's.
fn call_ms(obj: Option<&Bound<'_, PyAny>>, name: &str) -> Result<Option<u64>> {
    given(obj).map(|o| convert::rsmq::call_ms(o, name)).transpose()
}

/// A stored vt/delay/maxsize of `create`: missing takes the default; anything given (None too) is checked.
fn stored(arg: &Arg<'_>, default: i64, check: impl Fn(&Bound<'_, PyAny>) -> Result<i64>) -> Result<i64> {
    arg.0.as_ref().map_or(Ok(default), check)
}

/// The dead-letter arguments as the scripts take them.
fn dead_letter_args(
    qname: &str,
    max_receives: Option<&Bound<'_, PyAny>>,
    dead_letter: Option<&Bound<'_, PyAny>>,
    allow_remove: bool,
) -> Result<(String, String)> {
    let max_receives = given(max_receives)
        .map(|m| convert::rsmq::max_receives(m, allow_remove))
        .transpose()?;
    let dead_letter = given(dead_letter).map(convert::rsmq::qname).transpose()?;
    validate::rsmq::dead_letter(qname, max_receives, dead_letter.as_deref(), allow_remove)
}

/// An RSMQ queue bound to a [`Core`].
#[derive(Clone)]
pub struct RsmqCore {
    pub core: Arc<Core>,
    pub queue: Arc<Queue>,
}

impl RsmqCore {
    /// Validates `qname`, `ns` and `realtime` (no I/O).
    pub fn new(core: &Arc<Core>, qname: &Bound<'_, PyAny>, ns: &Arg<'_>, realtime: &Arg<'_>) -> Result<Self> {
        let qname = convert::rsmq::qname(qname)?;
        let ns = ns_arg(ns)?;
        let realtime = realtime
            .0
            .as_ref()
            .map_or(Ok(false), |r| convert::flag(r, "realtime"))?;
        Ok(Self {
            core: core.clone(),
            queue: Arc::new(Queue::new(&ns, &qname, realtime)),
        })
    }

    fn repr(&self, class: &str) -> String {
        format!(
            "{class}(name={}, ns={}, url={})",
            py_repr(&self.queue.keys.name),
            py_repr(&self.queue.keys.ns),
            py_repr(&self.core.opts.redacted)
        )
    }

    /// Runs `check`, then prepares `run(pool, queue, checked)` and `convert` as one operation.
    fn prepare<T, R, F, Fut, C>(&self, check: impl FnOnce() -> Result<T>, run: F, convert: C) -> Result<Op>
    where
        T: Send + 'static,
        R: Send + 'static,
        F: FnOnce(Arc<crate::pool::Pool>, Arc<Queue>, T) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<R>> + Send + 'static,
        C: FnOnce(Python<'_>, R) -> PyResult<Py<PyAny>> + Send + 'static,
    {
        prepare(&self.core, &self.queue, check, run, convert)
    }

    fn create_op(
        &self,
        vt: &Arg<'_>,
        delay: &Arg<'_>,
        maxsize: &Arg<'_>,
        max_receives: Option<&Bound<'_, PyAny>>,
        dead_letter: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        let name = &self.queue.keys.name;
        self.prepare(
            || {
                let vt = stored(vt, DEFAULT_VT, |v| convert::rsmq::stored_seconds(v, "vt"))?;
                let delay = stored(delay, DEFAULT_DELAY, |v| convert::rsmq::stored_seconds(v, "delay"))?;
                let maxsize = stored(maxsize, DEFAULT_MAXSIZE, convert::rsmq::maxsize)?;
                let dl = dead_letter_args(name, max_receives, dead_letter, false)?;
                Ok((vt, delay, maxsize, dl))
            },
            |pool, q, (vt, delay, maxsize, dl)| async move { rsmq::create(&pool, &q, vt, delay, maxsize, dl).await },
            |py, ()| Ok(py.None()),
        )
    }

    fn delete_queue_op(&self) -> Result<Op> {
        self.prepare(
            || Ok(()),
            |pool, q, ()| async move { rsmq::delete_queue(&pool, &q).await },
            |py, ()| Ok(py.None()),
        )
    }

    fn attributes_op(&self) -> Result<Op> {
        self.prepare(
            || Ok(()),
            |pool, q, ()| async move { rsmq::attributes(&pool, &q).await },
            convert::rsmq::attributes_py,
        )
    }

    fn set_attributes_op(
        &self,
        vt: Option<&Bound<'_, PyAny>>,
        delay: Option<&Bound<'_, PyAny>>,
        maxsize: Option<&Bound<'_, PyAny>>,
        max_receives: Option<&Bound<'_, PyAny>>,
        dead_letter: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        let name = &self.queue.keys.name;
        self.prepare(
            || {
                let settings = Settings {
                    vt: given(vt).map(|v| convert::rsmq::stored_seconds(v, "vt")).transpose()?,
                    delay: given(delay)
                        .map(|v| convert::rsmq::stored_seconds(v, "delay"))
                        .transpose()?,
                    maxsize: given(maxsize).map(convert::rsmq::maxsize).transpose()?,
                    dead_letter: dead_letter_args(name, max_receives, dead_letter, true)?,
                };
                if settings == Settings::default() {
                    return Err(Error::invalid(
                        "set_attributes needs at least one of vt, delay, maxsize, max_receives, dead_letter",
                    ));
                }
                Ok(settings)
            },
            |pool, q, settings| async move { rsmq::set_attributes(&pool, &q, settings).await },
            convert::rsmq::attributes_py,
        )
    }

    fn send_op(&self, message: &Bound<'_, PyAny>, delay: Option<&Bound<'_, PyAny>>) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        self.prepare(
            || Ok((convert::rsmq::message(message, max)?, call_ms(delay, "delay")?)),
            |pool, q, (message, delay)| async move { rsmq::send(&pool, &q, message, delay).await },
            to_py,
        )
    }

    fn send_batch_op(&self, messages: &Bound<'_, PyAny>, delay: Option<&Bound<'_, PyAny>>) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        self.prepare(
            || Ok((convert::rsmq::messages(messages, max)?, call_ms(delay, "delay")?)),
            |pool, q, (messages, delay)| async move { rsmq::send_batch(&pool, &q, messages, delay).await },
            to_py,
        )
    }

    /// send_arrow: the arguments, then the data's schema, are checked before anything is sent.
    fn send_arrow_op(
        &self,
        data: &Bound<'_, PyAny>,
        dedup_key: Option<&Bound<'_, PyAny>>,
        dedup_ttl: &Arg<'_>,
        value_column: Option<&Bound<'_, PyAny>>,
        delay: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        arrow::prepare(&self.core, data, || {
            let args = arrow::args(dedup_key, dedup_ttl, None, value_column)?;
            let delay = call_ms(delay, "delay")?.map(|d| d.to_string()).unwrap_or_default();
            Ok((arrow::Sink::Rsmq(self.queue.clone(), delay), args))
        })
    }

    /// receive / receive_batch / pop / pop_batch; `count` None means one message, returned alone; `deferred`
    /// (a batch) returns a [`DeferredBatch`](crate::bindings::core::DeferredBatch) of the messages.
    fn take_op(
        &self,
        count: Option<&Bound<'_, PyAny>>,
        vt: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
        pop: bool,
        deferred: bool,
    ) -> Result<Op> {
        let single = count.is_none();
        self.prepare(
            || {
                let n = count.map_or(Ok(1), convert::count)?;
                Ok((n, call_ms(vt, "vt")?, convert::block(block)?))
            },
            move |pool, q, (n, vt, block)| async move { rsmq::receive(&pool, &q, n, vt, pop, block).await },
            move |py, received| match (single, deferred) {
                (true, _) => convert::rsmq::message_py(py, received),
                (false, false) => convert::rsmq::messages_py(py, received),
                (false, true) => core::deferred(py, received, convert::rsmq::messages_py),
            },
        )
    }

    fn delete_op(&self, id: &Bound<'_, PyAny>) -> Result<Op> {
        self.prepare(
            || Ok(vec![convert::rsmq::id(id)?]),
            |pool, q, ids| async move { Ok(!rsmq::delete_batch(&pool, &q, &ids).await?.is_empty()) },
            to_py,
        )
    }

    fn delete_batch_op(&self, ids: &Bound<'_, PyAny>) -> Result<Op> {
        self.prepare(
            || convert::rsmq::ids(ids),
            |pool, q, ids| async move { rsmq::delete_batch(&pool, &q, &ids).await },
            to_py,
        )
    }

    fn change_visibility_op(&self, id: &Bound<'_, PyAny>, vt: &Bound<'_, PyAny>) -> Result<Op> {
        self.prepare(
            || Ok((convert::rsmq::id(id)?, convert::rsmq::call_ms(vt, "vt")?)),
            |pool, q, (id, vt)| async move { rsmq::change_visibility(&pool, &q, &id, vt).await },
            to_py,
        )
    }
}

/// `Client.rsmq_queues` / `AsyncClient.rsmq_queues`.
pub fn queues_op(core: &Core, ns: &Arg<'_>) -> Result<Op> {
    let (pool, ns) = core.pool_after(|| ns_arg(ns))?;
    Ok(op(async move { rsmq::queues(&pool, &ns).await }, to_py))
}

/// The methods of `RsmqQueue` / `AsyncRsmqQueue`: `$run` turns an operation into the Python result;
/// `$batches` is the class of `ferroq.batches` that `batches()` returns (the receive ahead runs in a thread
/// or a task, around its `receive_batch`).
macro_rules! rsmq_methods {
    ($class:ident, $label:literal, $batches:literal, $run:path) => {
        py_methods! {
            $class, $run, inner,
            {
                #[getter]
                fn name(&self) -> String {
                    self.inner.queue.keys.name.clone()
                }

                #[getter]
                fn ns(&self) -> String {
                    self.inner.queue.keys.ns.clone()
                }

                #[getter]
                fn realtime(&self) -> bool {
                    self.inner.queue.realtime
                }

                fn __repr__(&self) -> String {
                    self.inner.repr($label)
                }

                #[pyo3(signature = (*args, **kwargs), text_signature = "(self, /, count=100, *, vt=None, block=None)")]
                fn batches<'py>(
                    slf: &Bound<'py, Self>,
                    args: &Bound<'py, PyTuple>,
                    kwargs: Option<&Bound<'py, PyDict>>,
                ) -> PyResult<Bound<'py, PyAny>> {
                    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                    let class = CLASS.import(slf.py(), "ferroq.batches", $batches)?;
                    crate::bindings::core::batches_of(slf.as_any(), class, args, kwargs)
                }
            }

            #[pyo3(signature = (vt=Arg::missing(), delay=Arg::missing(), maxsize=Arg::missing(), *, max_receives=None, dead_letter=None), text_signature = "(self, /, vt=30, delay=0, maxsize=65536, *, max_receives=None, dead_letter=None)")]
            fn create(
                vt: Arg<'py>,
                delay: Arg<'py>,
                maxsize: Arg<'py>,
                max_receives: Option<&Bound<'py, PyAny>>,
                dead_letter: Option<&Bound<'py, PyAny>>,
            ) => create_op(&vt, &delay, &maxsize, max_receives, dead_letter);

            fn delete_queue() => delete_queue_op();

            fn attributes() => attributes_op();

            #[pyo3(signature = (vt=None, delay=None, maxsize=None, *, max_receives=None, dead_letter=None))]
            fn set_attributes(
                vt: Option<&Bound<'py, PyAny>>,
                delay: Option<&Bound<'py, PyAny>>,
                maxsize: Option<&Bound<'py, PyAny>>,
                max_receives: Option<&Bound<'py, PyAny>>,
                dead_letter: Option<&Bound<'py, PyAny>>,
            ) => set_attributes_op(vt, delay, maxsize, max_receives, dead_letter);

            #[pyo3(signature = (message, delay=None))]
            fn send(message: &Bound<'py, PyAny>, delay: Option<&Bound<'py, PyAny>>) => send_op(message, delay);

            #[pyo3(signature = (data, *, dedup_key=None, dedup_ttl=Arg::missing(), value_column=None, delay=None), text_signature = "(self, /, data, *, dedup_key=None, dedup_ttl=86400.0, value_column=None, delay=None)")]
            fn send_arrow(
                data: &Bound<'py, PyAny>,
                dedup_key: Option<&Bound<'py, PyAny>>,
                dedup_ttl: Arg<'py>,
                value_column: Option<&Bound<'py, PyAny>>,
                delay: Option<&Bound<'py, PyAny>>,
            ) => send_arrow_op(data, dedup_key, &dedup_ttl, value_column, delay);

            #[pyo3(signature = (messages, delay=None))]
            fn send_batch(
                messages: &Bound<'py, PyAny>,
                delay: Option<&Bound<'py, PyAny>>,
            ) => send_batch_op(messages, delay);

            #[pyo3(signature = (vt=None, block=None))]
            fn receive(
                vt: Option<&Bound<'py, PyAny>>,
                block: Option<&Bound<'py, PyAny>>,
            ) => take_op(None, vt, block, false, false);

            #[pyo3(signature = (count, vt=None, block=None))]
            fn receive_batch(
                count: &Bound<'py, PyAny>,
                vt: Option<&Bound<'py, PyAny>>,
                block: Option<&Bound<'py, PyAny>>,
            ) => take_op(Some(count), vt, block, false, false);

            #[pyo3(name = "_receive_batch_deferred", signature = (count, vt=None, block=None))]
            fn receive_batch_deferred(
                count: &Bound<'py, PyAny>,
                vt: Option<&Bound<'py, PyAny>>,
                block: Option<&Bound<'py, PyAny>>,
            ) => take_op(Some(count), vt, block, false, true);

            fn pop() => take_op(None, None, None, true, false);

            fn pop_batch(count: &Bound<'py, PyAny>) => take_op(Some(count), None, None, true, false);

            fn delete(id: &Bound<'py, PyAny>) => delete_op(id);

            fn delete_batch(ids: &Bound<'py, PyAny>) => delete_batch_op(ids);

            fn change_visibility(id: &Bound<'py, PyAny>, vt: &Bound<'py, PyAny>) => change_visibility_op(id, vt);
        }
    };
}

/// An RSMQ queue of a `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct RsmqQueue {
    pub inner: RsmqCore,
}

/// An RSMQ queue of an `AsyncClient`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncRsmqQueue {
    pub inner: RsmqCore,
}

rsmq_methods!(RsmqQueue, "RsmqQueue", "RsmqBatches", sync_call);
rsmq_methods!(AsyncRsmqQueue, "AsyncRsmqQueue", "AsyncRsmqBatches", run_async);

/// The receives of `ferroq.RsmqBatches` over a native sync `RsmqQueue`, one ahead ([`runtime::Ahead`]), as
/// `ClaimAhead` claims for a topic; the caller's next call (its delete) drives each.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct ReceiveAhead {
    /// Its client's pool is taken for each receive: a closed client receives nothing more.
    queue: RsmqCore,
    /// count, vt (ms; None keeps the queue's), block (seconds)
    args: (usize, Option<u64>, Option<f64>),
    ahead: runtime::Ahead<rsmq::Received>,
}

impl ReceiveAhead {
    fn receive(&self) -> Result<impl std::future::Future<Output = Result<Vec<rsmq::Received>>> + Send + 'static> {
        let (pool, q) = (self.queue.core.pool()?, self.queue.queue.clone());
        let (count, vt, block) = self.args;
        Ok(async move { rsmq::receive(&pool, &q, count, vt, false, block).await })
    }
}

#[pymethods]
impl ReceiveAhead {
    #[new]
    #[pyo3(signature = (queue, count, vt=None, block=None))]
    fn new(
        queue: &Bound<'_, RsmqQueue>,
        count: &Bound<'_, PyAny>,
        vt: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let queue = queue.get().inner.clone();
        let args = (convert::count(count)?, call_ms(vt, "vt")?, convert::block(block)?);
        queue.core.pool()?; // a closed client fails here, as receive_batch() does
        Ok(Self {
            queue,
            args,
            ahead: runtime::Ahead::new(),
        })
    }

    /// The next batch: the receive in flight's messages (sending it first, on the first call), after
    /// sending the receive after it when it found messages.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Py<PyAny>> {
        let received = self.ahead.next(py, || self.receive())?;
        convert::rsmq::messages_py(py, received)
    }

    /// Stops receiving: the messages of the receive in flight (waiting for it), for the caller to make
    /// visible again; none when there is none, or it failed.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Py<PyAny>> {
        let received = self.ahead.finish(py)?;
        convert::rsmq::messages_py(py, received)
    }
}
