//! rfq topics: `Topic` (sync) and `AsyncTopic` (asyncio), generated once by `topic_methods!` over
//! [`TopicCore`], and the rfq operations of a client (`claim`, `commit`, ... over several topics).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyIterator, PyTuple, PyType};

use crate::bindings::arrow;
use crate::bindings::arrow_read::{self, batch_py, field_names, message_ids};
use crate::bindings::asyncio::run_async;
use crate::bindings::convert;
use crate::bindings::core::{self, op, sync_call, to_py, Arg, Convert, Core, Op};
use crate::bindings::runtime;
use crate::errors::{Error, Result};
use crate::pool::Pool;
use crate::protocol::arrow_read::{DELIVERIES_COLUMN, ID_COLUMN};
use crate::protocol::common::Fields;
use crate::protocol::keys::{TopicKeys, TopicList};
use crate::protocol::rfq;
use crate::pyrepr::py_repr;

/// The rfq operations of a client, over the topics each names.
impl Core {
    pub fn topic(&self, name: &Bound<'_, PyAny>) -> Result<Arc<TopicKeys>> {
        Ok(Arc::new(TopicKeys::new(&convert::rfq::topic_name(name)?)))
    }

    pub fn topics_op(&self) -> Result<Op> {
        let pool = self.pool()?;
        Ok(op(async move { rfq::topics(&pool).await }, to_py))
    }

    pub fn claim_op(
        &self,
        topics: &Bound<'_, PyAny>,
        count: &Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: &Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
        deferred: bool,
    ) -> Result<Op> {
        let names = convert::rfq::topic_names(topics)?;
        let keys: Vec<Arc<TopicKeys>> = names.iter().map(|n| Arc::new(TopicKeys::new(n))).collect();
        claim_op(
            self.pool_after(|| claim_args(count, block, lease, owner))?,
            keys,
            names,
            deferred,
        )
    }

    pub fn commit_op(&self, messages: &Bound<'_, PyAny>) -> Result<Op> {
        let (pool, held) = self.pool_after(|| convert::rfq::held_messages(messages))?;
        Ok(op(async move { rfq::commit(&pool, &held).await }, to_py))
    }

    pub fn extend_op(&self, messages: &Bound<'_, PyAny>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (held, lease_ms)) =
            self.pool_after(|| Ok((convert::rfq::held_messages(messages)?, lease_arg(lease)?)))?;
        Ok(op(async move { rfq::extend(&pool, &held, lease_ms).await }, to_py))
    }

    pub fn release_op(&self, messages: &Bound<'_, PyAny>, delay: &Arg<'_>) -> Result<Op> {
        let (pool, (held, delay_ms)) =
            self.pool_after(|| Ok((convert::rfq::held_messages(messages)?, delay_arg(delay)?)))?;
        Ok(op(async move { rfq::release(&pool, &held, delay_ms).await }, to_py))
    }
}

const DEFAULT_LEASE_MS: u64 = 30_000;

/// A bool option (false when not given); anything but a bool is refused, as the pure client does.
fn flag_arg(value: &Arg<'_>, name: &str) -> Result<bool> {
    value.0.as_ref().map_or(Ok(false), |v| convert::flag(v, name))
}

fn lease_arg(lease: &Arg<'_>) -> Result<u64> {
    match &lease.0 {
        None => Ok(DEFAULT_LEASE_MS),
        Some(l) => convert::rfq::lease_ms(l),
    }
}

fn delay_arg(delay: &Arg<'_>) -> Result<u64> {
    delay.0.as_ref().map_or(Ok(0), convert::rfq::delay_ms)
}

/// count, block, lease in ms and owner ('' for none) of a claim.
type ClaimArgs = (usize, Option<f64>, u64, String);

fn claim_args(
    count: &Arg<'_>,
    block: Option<&Bound<'_, PyAny>>,
    lease: &Arg<'_>,
    owner: Option<&Bound<'_, PyAny>>,
) -> Result<ClaimArgs> {
    let count = match &count.0 {
        None => 1,
        Some(c) => convert::count(c)?,
    };
    Ok((
        count,
        convert::block(block)?,
        lease_arg(lease)?,
        convert::rfq::owner(owner)?,
    ))
}

/// A claim's operation: its messages, or with `deferred` a [`DeferredBatch`](crate::bindings::core::DeferredBatch)
/// of them.
fn claim_op(
    (pool, (count, block, lease_ms, owner)): (Arc<Pool>, ClaimArgs),
    keys: Vec<Arc<TopicKeys>>,
    names: Vec<String>,
    deferred: bool,
) -> Result<Op> {
    let claim = async move { rfq::claim(&pool, &keys, count, block, lease_ms, &owner).await };
    Ok(op(claim, move |py, claimed| {
        let make = move |py: Python<'_>, claimed| convert::rfq::messages_py(py, &names, claimed);
        if deferred {
            core::deferred(py, claimed, make)
        } else {
            make(py, claimed)
        }
    }))
}

/// A topic bound to a [`Core`]; the operations of `Topic` and `AsyncTopic`.
#[derive(Clone)]
pub struct TopicCore {
    pub core: Arc<Core>,
    pub keys: Arc<TopicKeys>,
}

impl TopicCore {
    fn pool_after<T>(&self, check: impl FnOnce() -> Result<T>) -> Result<(Arc<Pool>, T, Arc<TopicKeys>)> {
        let (pool, checked) = self.core.pool_after(check)?;
        Ok((pool, checked, self.keys.clone()))
    }

    pub fn publish_op(&self, fields: &Bound<'_, PyAny>, front: &Arg<'_>) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        let (pool, (msg, front), keys) =
            self.pool_after(|| Ok((convert::fields(fields, max)?, flag_arg(front, "front")?)))?;
        Ok(op(
            async move {
                let ids = rfq::publish(&pool, &keys, vec![msg], front).await?;
                ids.into_iter()
                    .next()
                    .ok_or_else(|| Error::protocol("publish returned no id"))
            },
            to_py,
        ))
    }

    pub fn publish_batch_op(&self, messages: &Bound<'_, PyAny>, front: &Arg<'_>) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        let (pool, (msgs, front), keys) =
            self.pool_after(|| Ok((convert::rfq::messages(messages, max)?, flag_arg(front, "front")?)))?;
        Ok(op(async move { rfq::publish(&pool, &keys, msgs, front).await }, to_py))
    }

    /// Publishes `messages` chunk by chunk (see [`stream`]); the result is how many were published.
    pub fn publish_stream_op(&self, messages: &Bound<'_, PyAny>) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        let (pool, iter, keys) = self.pool_after(|| Ok(Arc::new(convert::iterator(messages, "messages")?.unbind())))?;
        Ok(Box::pin(async move {
            let (published, end) = stream(pool, keys, iter, max).await;
            Ok(Box::new(move |py: Python<'_>| match end {
                None => to_py(py, published),
                Some(StreamEnd::Raised(e)) => Err(e),
                Some(StreamEnd::Failed(err)) => {
                    let e = PyErr::from(err);
                    e.value(py).setattr("published", published)?;
                    Err(e)
                }
            }) as Convert)
        }))
    }

    /// publish_arrow: the arguments, then the data's schema, are checked before anything is sent.
    pub fn publish_arrow_op(
        &self,
        data: &Bound<'_, PyAny>,
        dedup_key: Option<&Bound<'_, PyAny>>,
        dedup_ttl: &Arg<'_>,
        id_column: Option<&Bound<'_, PyAny>>,
        value_column: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        arrow::prepare(&self.core, data, || {
            let args = arrow::args(dedup_key, dedup_ttl, id_column, value_column)?;
            Ok((arrow::Sink::Topic(self.keys.clone()), args))
        })
    }

    pub fn claim_op(
        &self,
        count: &Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: &Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
        deferred: bool,
    ) -> Result<Op> {
        let (pool, args, keys) = self.pool_after(|| claim_args(count, block, lease, owner))?;
        let name = keys.name.clone();
        claim_op((pool, args), vec![keys], vec![name], deferred)
    }

    pub fn commit_op(&self, messages: &Bound<'_, PyAny>) -> Result<Op> {
        let (pool, held, _) = self.pool_after(|| convert::rfq::held_in_topic(messages, &self.keys))?;
        Ok(op(async move { rfq::commit(&pool, &held).await }, to_py))
    }

    pub fn extend_op(&self, messages: &Bound<'_, PyAny>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (held, lease_ms), _) =
            self.pool_after(|| Ok((convert::rfq::held_in_topic(messages, &self.keys)?, lease_arg(lease)?)))?;
        Ok(op(async move { rfq::extend(&pool, &held, lease_ms).await }, to_py))
    }

    pub fn release_op(&self, messages: &Bound<'_, PyAny>, delay: &Arg<'_>) -> Result<Op> {
        let (pool, (held, delay_ms), _) =
            self.pool_after(|| Ok((convert::rfq::held_in_topic(messages, &self.keys)?, delay_arg(delay)?)))?;
        Ok(op(async move { rfq::release(&pool, &held, delay_ms).await }, to_py))
    }

    pub fn dead_letter_op(
        &self,
        messages: &Bound<'_, PyAny>,
        error: Option<&Bound<'_, PyAny>>,
        to: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        let (pool, (held, error, dead), _) = self.pool_after(|| {
            let to = match to {
                Some(t) if !t.is_none() => Some(convert::rfq::topic_name(t)?),
                _ => None,
            };
            let dead = crate::protocol::validate::rfq::dead_topic(&self.keys.name, to.as_deref())?;
            Ok((
                convert::rfq::held_in_topic(messages, &self.keys)?,
                convert::error_text(error)?,
                TopicKeys::new(&dead),
            ))
        })?;
        Ok(op(
            async move { rfq::dead_letter(&pool, &held, &dead, &error).await },
            to_py,
        ))
    }

    pub fn resume_op(&self, owner: &Bound<'_, PyAny>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (owner, lease_ms), keys) =
            self.pool_after(|| Ok((convert::rfq::owner(Some(owner))?, lease_arg(lease)?)))?;
        if owner.is_empty() {
            return Err(Error::invalid(
                "owner must be a non-empty str of at most 128 characters without whitespace, got None",
            ));
        }
        let names = vec![keys.name.clone()];
        Ok(op(
            async move { rfq::resume(&pool, &keys, &owner, lease_ms).await },
            move |py, claimed| convert::rfq::messages_py(py, &names, claimed),
        ))
    }

    pub fn harvest_op(&self, all: &Arg<'_>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (all, lease_ms), keys) = self.pool_after(|| Ok((flag_arg(all, "all")?, lease_arg(lease)?)))?;
        Ok(op(
            async move { rfq::harvest(&pool, &keys, all, lease_ms).await },
            to_py,
        ))
    }

    pub fn peek_op(&self, id: &Bound<'_, PyAny>) -> Result<Op> {
        let (pool, id, keys) = self.pool_after(|| convert::rfq::message_id(id))?;
        Ok(op(
            async move { rfq::peek(&pool, &keys, &id).await },
            |py, fields| match fields {
                Some(f) => Ok(convert::fields_dict(py, &f)?.into_any().unbind()),
                None => Ok(py.None()),
            },
        ))
    }

    pub fn inspect_op(&self, queue: &Arg<'_>, start: &Arg<'_>, count: &Arg<'_>) -> Result<Op> {
        let (pool, (queue, start, count), keys) = self.pool_after(|| {
            let queue = match &queue.0 {
                None => TopicList::Backlog,
                Some(q) => convert::rfq::queue(q)?,
            };
            let start = match &start.0 {
                None => 0,
                Some(s) => convert::rfq::start(s)?,
            };
            let count = match &count.0 {
                None => 100,
                Some(c) => convert::count(c)?,
            };
            Ok((queue, start, count))
        })?;
        Ok(op(
            async move { rfq::inspect(&pool, &keys, queue, start, count).await },
            convert::rfq::inspect_py,
        ))
    }

    pub fn stats_op(&self) -> Result<Op> {
        let (pool, (), keys) = self.pool_after(|| Ok(()))?;
        let name = keys.name.clone();
        Ok(op(async move { rfq::stats(&pool, &keys).await }, move |py, s| {
            convert::rfq::stats_py(py, &name, s)
        }))
    }

    pub fn purge_op(&self, queue: &Arg<'_>) -> Result<Op> {
        let (pool, queue, keys) = self.pool_after(|| match &queue.0 {
            None => Ok(TopicList::Backlog),
            Some(q) => convert::rfq::queue(q),
        })?;
        Ok(op(async move { rfq::purge(&pool, &keys, queue).await }, to_py))
    }

    pub fn fetch_arrow_op(&self, ids: &Bound<'_, PyAny>, fields: &Bound<'_, PyAny>, held: &Arg<'_>) -> Result<Op> {
        let (pool, (ids, fields, held)) = self.core.pool_after(|| {
            Ok((
                message_ids(ids)?,
                field_names(fields, &[ID_COLUMN, DELIVERIES_COLUMN])?,
                flag_arg(held, "held")?,
            ))
        })?;
        let keys = self.keys.clone();
        let chunk = self.core.opts.chunk_size;
        Ok(op(
            async move { crate::protocol::arrow_read::fetch(&pool, &keys, &ids, &fields, chunk, held).await },
            batch_py,
        ))
    }
}

// ---- publish_stream ----------------------------------------------------------------------------------

/// Why a stream stopped early: the iterable's own exception (passed on unchanged), or a ferroq error.
enum StreamEnd {
    Raised(PyErr),
    Failed(Error),
}

/// The chunk being sent and its length; dropping it (a cancelled or interrupted call) aborts the send.
struct InFlight(tokio::task::JoinHandle<Result<Vec<String>>>, usize);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The next chunk of the stream, pulled and checked on a blocking-pool thread with the GIL (a tokio
/// worker never waits for the GIL).
async fn pull(
    iter: Arc<Py<PyIterator>>,
    n: usize,
    max: usize,
    start: usize,
) -> std::result::Result<Vec<Fields>, StreamEnd> {
    let pulled = tokio::task::spawn_blocking(move || {
        let mut out = None;
        runtime::with_python(|py| {
            out = Some(match convert::rfq::messages_chunk(iter.bind(py), n, max, start) {
                Err(raised) => Err(StreamEnd::Raised(raised)),
                Ok(checked) => checked.map_err(StreamEnd::Failed),
            })
        });
        // Not run: the interpreter is exiting.
        out.unwrap_or_else(|| Err(StreamEnd::Failed(Error::closed())))
    })
    .await;
    pulled.unwrap_or_else(|e| {
        Err(StreamEnd::Failed(Error::protocol(format!(
            "reading the messages failed: {e}"
        ))))
    })
}

/// Publishes the messages of `iter` in chunks of `chunk_size`, each one `publish-1n` call like
/// `publish_batch`. The next chunk is pulled and checked while the previous one is sent, and at most one
/// is in flight, so memory stays bounded whatever the length. Returns how many messages were published,
/// and why the stream stopped early if it did.
async fn stream(
    pool: Arc<Pool>,
    keys: Arc<TopicKeys>,
    iter: Arc<Py<PyIterator>>,
    max: usize,
) -> (usize, Option<StreamEnd>) {
    let n = pool.opts.chunk_size;
    let (mut published, mut pulled, mut exhausted) = (0, 0, false);
    let mut in_flight: Option<InFlight> = None;
    loop {
        let chunk = if exhausted {
            Ok(Vec::new())
        } else {
            pull(iter.clone(), n, max, pulled).await
        };
        if let Some(mut sent) = in_flight.take() {
            match (&mut sent.0).await {
                Ok(Ok(_ids)) => published += sent.1,
                Ok(Err(e)) => return (published, Some(StreamEnd::Failed(e))),
                Err(e) => {
                    let e = Error::protocol(format!("publishing a chunk failed: {e}"));
                    return (published, Some(StreamEnd::Failed(e)));
                }
            }
        }
        let msgs = match chunk {
            Ok(msgs) if msgs.is_empty() => return (published, None),
            Ok(msgs) => msgs,
            Err(end) => return (published, Some(end)),
        };
        let len = msgs.len();
        pulled += len;
        // A short chunk means the iterator ended: it is not asked again.
        exhausted = len < n;
        let (pool, keys) = (pool.clone(), keys.clone());
        let send = tokio::spawn(async move { rfq::publish_batch(&pool, &keys, msgs, false).await });
        in_flight = Some(InFlight(send, len));
    }
}

/// The methods of `Topic` / `AsyncTopic`: `$run` turns an operation into the Python result.
/// `$batches` is the class of `ferroq.batches` that `batches()` returns, written once in Python for every
/// client (the claim ahead runs in a thread or a task, around this class's own `claim`).
macro_rules! topic_methods {
    ($class:ident, $label:literal, $client_label:literal, $batches:literal, $run:path) => {
        py_methods! {
            $class, $run, inner,
            {
                #[getter]
                fn name(&self) -> String {
                    self.inner.keys.name.clone()
                }

                fn __repr__(&self) -> String {
                    format!(
                        "{}({}, client={})",
                        $label,
                        py_repr(&self.inner.keys.name),
                        self.inner.core.repr($client_label)
                    )
                }

                #[pyo3(signature = (*args, **kwargs), text_signature = "(self, /, count=100, *, block=None, lease=30.0, owner=None)")]
                fn batches<'py>(
                    slf: &Bound<'py, Self>,
                    args: &Bound<'py, PyTuple>,
                    kwargs: Option<&Bound<'py, PyDict>>,
                ) -> PyResult<Bound<'py, PyAny>> {
                    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                    let class = CLASS.import(slf.py(), "ferroq.batches", $batches)?;
                    crate::bindings::core::batches_of(slf.as_any(), class, args, kwargs)
                }

                #[pyo3(signature = (ids, fields, *, held=Arg::missing()), text_signature = "(self, /, ids, fields, *, held=False)")]
                fn fetch_arrow<'py>(
                    &self,
                    py: Python<'py>,
                    ids: &Bound<'py, PyAny>,
                    fields: &Bound<'py, PyAny>,
                    held: Arg<'py>,
                ) -> PyResult<Bound<'py, PyAny>> {
                    arrow_read::need_pyarrow(py)?;
                    $run(py, self.inner.fetch_arrow_op(ids, fields, &held))
                }
            }

            #[pyo3(signature = (fields, front=Arg::missing()), text_signature = "(self, /, fields, front=False)")]
            fn publish(fields: &Bound<'py, PyAny>, front: Arg<'py>) => publish_op(fields, &front);

            #[pyo3(signature = (messages, front=Arg::missing()), text_signature = "(self, /, messages, front=False)")]
            fn publish_batch(messages: &Bound<'py, PyAny>, front: Arg<'py>) => publish_batch_op(messages, &front);

            fn publish_stream(messages: &Bound<'py, PyAny>) => publish_stream_op(messages);

            #[pyo3(signature = (data, *, dedup_key=None, dedup_ttl=Arg::missing(), id_column=None, value_column=None), text_signature = "(self, /, data, *, dedup_key=None, dedup_ttl=86400.0, id_column=None, value_column=None)")]
            fn publish_arrow(
                data: &Bound<'py, PyAny>,
                dedup_key: Option<&Bound<'py, PyAny>>,
                dedup_ttl: Arg<'py>,
                id_column: Option<&Bound<'py, PyAny>>,
                value_column: Option<&Bound<'py, PyAny>>,
            ) => publish_arrow_op(data, dedup_key, &dedup_ttl, id_column, value_column);

            #[pyo3(signature = (count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, count=1, block=None, lease=30.0, owner=None)")]
            fn claim(
                count: Arg<'py>,
                block: Option<&Bound<'py, PyAny>>,
                lease: Arg<'py>,
                owner: Option<&Bound<'py, PyAny>>,
            ) => claim_op(&count, block, &lease, owner, false);

            #[pyo3(name = "_claim_deferred", signature = (count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, count=1, block=None, lease=30.0, owner=None)")]
            fn claim_deferred(
                count: Arg<'py>,
                block: Option<&Bound<'py, PyAny>>,
                lease: Arg<'py>,
                owner: Option<&Bound<'py, PyAny>>,
            ) => claim_op(&count, block, &lease, owner, true);

            fn commit(messages: &Bound<'py, PyAny>) => commit_op(messages);

            #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
            fn extend(messages: &Bound<'py, PyAny>, lease: Arg<'py>) => extend_op(messages, &lease);

            #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
            fn release(messages: &Bound<'py, PyAny>, delay: Arg<'py>) => release_op(messages, &delay);

            #[pyo3(signature = (messages, error=None, to=None), text_signature = "(self, /, messages, error='', to=None)")]
            fn dead_letter(
                messages: &Bound<'py, PyAny>,
                error: Option<&Bound<'py, PyAny>>,
                to: Option<&Bound<'py, PyAny>>,
            ) => dead_letter_op(messages, error, to);

            #[pyo3(signature = (owner, lease=Arg::missing()), text_signature = "(self, /, owner, lease=30.0)")]
            fn resume(owner: &Bound<'py, PyAny>, lease: Arg<'py>) => resume_op(owner, &lease);

            #[pyo3(signature = (all=Arg::missing(), lease=Arg::missing()), text_signature = "(self, /, all=False, lease=30.0)")]
            fn harvest(all: Arg<'py>, lease: Arg<'py>) => harvest_op(&all, &lease);

            fn peek(id: &Bound<'py, PyAny>) => peek_op(id);

            #[pyo3(signature = (queue=Arg::missing(), start=Arg::missing(), count=Arg::missing()), text_signature = "(self, /, queue='backlog', start=0, count=100)")]
            fn inspect(queue: Arg<'py>, start: Arg<'py>, count: Arg<'py>) => inspect_op(&queue, &start, &count);

            fn stats() => stats_op();

            #[pyo3(signature = (queue=Arg::missing()), text_signature = "(self, /, queue='backlog')")]
            fn purge(queue: Arg<'py>) => purge_op(&queue);
        }
    };
}

/// An rfq topic of a `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct Topic {
    pub inner: TopicCore,
}

/// The asyncio twin of `Topic`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncTopic {
    pub inner: TopicCore,
}

topic_methods!(Topic, "Topic", "Client", "Batches", sync_call);

topic_methods!(AsyncTopic, "AsyncTopic", "AsyncClient", "AsyncBatches", run_async);

/// The claims of `ferroq.Batches` over a native sync `Topic`, one ahead ([`runtime::Ahead`]); the task of
/// each claim reads its bodies whenever the caller's next call (the commit) drives the runtime.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct ClaimAhead {
    /// Its client's pool is taken for each claim: a closed client claims nothing more.
    topic: TopicCore,
    args: ClaimArgs,
    ahead: runtime::Ahead<rfq::Claimed>,
}

impl ClaimAhead {
    fn claim(&self) -> Result<impl std::future::Future<Output = Result<Vec<rfq::Claimed>>> + Send + 'static> {
        let (pool, keys) = (self.topic.core.pool()?, self.topic.keys.clone());
        let (count, block, lease_ms, owner) = self.args.clone();
        Ok(async move { rfq::claim(&pool, &[keys], count, block, lease_ms, &owner).await })
    }
}

#[pymethods]
impl ClaimAhead {
    #[new]
    #[pyo3(signature = (topic, count=Arg::missing(), block=None, lease=Arg::missing(), owner=None))]
    #[pyo3(text_signature = "(topic, count=1, block=None, lease=30.0, owner=None)")]
    fn new(
        topic: &Bound<'_, Topic>,
        count: Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let topic = topic.get().inner.clone();
        let (_, args, _) = topic.pool_after(|| claim_args(&count, block, &lease, owner))?;
        Ok(Self {
            topic,
            args,
            ahead: runtime::Ahead::new(),
        })
    }

    /// The next batch: the claim in flight's messages (sending it first, on the first call), after sending
    /// the claim after it when it found messages.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Py<PyAny>> {
        let claimed = self.ahead.next(py, || self.claim())?;
        convert::rfq::messages_py(py, std::slice::from_ref(&self.topic.keys.name), claimed)
    }

    /// Stops claiming: the messages of the claim in flight (waiting for it), for the caller to give back;
    /// none when there is none, or it failed (a failed claim holds nothing).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Py<PyAny>> {
        let claimed = self.ahead.finish(py)?;
        convert::rfq::messages_py(py, std::slice::from_ref(&self.topic.keys.name), claimed)
    }
}
