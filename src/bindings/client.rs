//! The synchronous `Client` / `Topic`, and what they share with the asyncio twins: [`Core`] (options and
//! the per-process pool) and the operations, prepared under the GIL as futures plus a conversion step.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyModuleNotFoundError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator, PyString};

use crate::bindings::arrow;
use crate::bindings::convert::{self, repr};
use crate::bindings::exceptions::issue_warnings;
use crate::bindings::rsmq::{RsmqCore, RsmqQueue};
use crate::bindings::runtime;
use crate::bindings::stream::{Stream, StreamCore};
use crate::config::{Endpoint, Options, RawOptions};
use crate::errors::{Error, Result};
use crate::pool::Pool;
use crate::protocol::common::Fields;
use crate::protocol::keys::{TopicKeys, TopicList};
use crate::protocol::rfq;
use crate::protocol::streams;

/// An optional argument that tells "not given" from an explicit None (which is refused for most).
pub struct Arg<'py>(pub Option<Bound<'py, PyAny>>);

impl<'py> Arg<'py> {
    pub const fn missing() -> Self {
        Arg(None)
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Arg<'py> {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Arg(Some(obj.to_owned())))
    }
}

/// Builds the Python result from the core's result, under the GIL.
pub type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;
/// One prepared operation: validated arguments already captured, no Python object inside.
pub type Op = Pin<Box<dyn Future<Output = Result<Convert>> + Send>>;

pub fn op<T, F, C>(fut: F, convert: C) -> Op
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Box::pin(async move {
        let value = fut.await?;
        Ok(Box::new(move |py: Python<'_>| convert(py, value)) as Convert)
    })
}

pub fn to_py<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: T) -> PyResult<Py<PyAny>> {
    pyo3::IntoPyObjectExt::into_py_any(v, py)
}

/// Runs `op` and waits for it with the GIL released.
pub fn run_sync(py: Python<'_>, op: Op) -> PyResult<Py<PyAny>> {
    let result = runtime::wait(py, op);
    issue_warnings(py);
    result??(py)
}

/// Sync runner of the method macros (`rsmq_methods!`, `stream_methods!`): waits with the GIL released.
pub fn sync_call<'py>(py: Python<'py>, op: Result<Op>) -> PyResult<Bound<'py, PyAny>> {
    Ok(run_sync(py, op?)?.into_bound(py))
}

/// Runs `check` (under the GIL, before any I/O), then prepares `run(pool, target, checked)` and
/// `convert` as one operation: what the queue and stream objects do for every method.
pub fn prepare<S, T, R, F, Fut, C>(
    core: &Core,
    target: &Arc<S>,
    check: impl FnOnce() -> Result<T>,
    run: F,
    convert: C,
) -> Result<Op>
where
    S: Send + Sync + 'static,
    T: Send + 'static,
    R: Send + 'static,
    F: FnOnce(Arc<Pool>, Arc<S>, T) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R>> + Send + 'static,
    C: FnOnce(Python<'_>, R) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let (pool, checked) = core.pool_after(check)?;
    Ok(op(run(pool, target.clone(), checked), convert))
}

/// [`prepare`] for an operation without arguments.
pub fn prepare_plain<S, R, F, Fut, C>(core: &Core, target: &Arc<S>, run: F, convert: C) -> Result<Op>
where
    S: Send + Sync + 'static,
    R: Send + 'static,
    F: FnOnce(Arc<Pool>, Arc<S>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R>> + Send + 'static,
    C: FnOnce(Python<'_>, R) -> PyResult<Py<PyAny>> + Send + 'static,
{
    prepare(core, target, || Ok(()), |pool, t, ()| run(pool, t), convert)
}

/// Options and the connection pool of one client. The pool belongs to the process that built it: in a
/// forked child it is rebuilt on first use and the parent's is left untouched (leaked).
pub struct Core {
    pub opts: Arc<Options>,
    pool: Mutex<Option<(u32, Arc<Pool>)>>,
    closed: AtomicBool,
}

/// Credentials and TLS options of `Client(...)`, passed as given to `ferroq.connection.resolve` (which
/// checks them, with the pure client, in one place).
pub type ConnectionArgs<'py> = [(&'static str, Option<Bound<'py, PyAny>>); 7];

/// The names of [`ConnectionArgs`], in order (the keyword arguments of `Client` and `AsyncClient`).
pub const CONNECTION_ARGS: [&str; 7] = [
    "username",
    "password",
    "password_file",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
    "tls_insecure_skip_verify",
];

/// `ferroq.connection.resolve(url, ...)`: the one place the URL, the credentials and the TLS settings are
/// chosen (may start the embedded server). Without the Python package (Rust tests), the URL as given.
fn resolve(py: Python<'_>, url: Option<&str>, args: &ConnectionArgs<'_>) -> PyResult<(String, Endpoint)> {
    let connection = match py.import("ferroq.connection") {
        Ok(module) => module,
        Err(e) if e.is_instance_of::<PyModuleNotFoundError>(py) && url.is_some() => {
            return Ok((url.unwrap_or_default().to_string(), Endpoint::default()))
        }
        Err(e) => return Err(e),
    };
    let kwargs = PyDict::new(py);
    for (name, value) in args {
        if let Some(value) = value {
            kwargs.set_item(*name, value)?;
        }
    }
    let resolved = connection.getattr("resolve")?.call((url,), Some(&kwargs))?;
    let text = |name: &str| -> PyResult<Option<String>> { resolved.getattr(name)?.extract() };
    let endpoint = Endpoint {
        username: text("username")?,
        password: text("password")?,
        tls_ca_file: text("tls_ca_file")?,
        tls_cert_file: text("tls_cert_file")?,
        tls_key_file: text("tls_key_file")?,
        tls_insecure_skip_verify: resolved.getattr("tls_insecure_skip_verify")?.extract()?,
    };
    Ok((resolved.getattr("url")?.extract()?, endpoint))
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        py: Python<'_>,
        url: Option<&Bound<'_, PyAny>>,
        pool_size: &Bound<'_, PyAny>,
        connect_timeout: &Bound<'_, PyAny>,
        command_timeout: &Bound<'_, PyAny>,
        max_message_bytes: &Bound<'_, PyAny>,
        chunk_size: &Bound<'_, PyAny>,
        client_name: Option<&Bound<'_, PyAny>>,
        connection: &ConnectionArgs<'_>,
    ) -> PyResult<Self> {
        // Every option is checked before the URL is resolved (which may start a server).
        let raw = (|| -> Result<RawOptions> {
            let pool_size = convert::int_option(pool_size, "pool_size", Some(crate::limits::MAX_POOL_SIZE))?;
            let connect_timeout = convert::timeout(connect_timeout, "connect_timeout")?;
            let command_timeout = convert::timeout(command_timeout, "command_timeout")?;
            let max_message_bytes = convert::int_option(max_message_bytes, "max_message_bytes", None)?;
            let chunk_size = convert::int_option(chunk_size, "chunk_size", Some(crate::limits::MAX_CHUNK_SIZE))?;
            let client_name = match client_name {
                None => None,
                Some(n) => match n.cast::<PyString>() {
                    Ok(s) => Some(s.to_string_lossy().into_owned()),
                    Err(_) => {
                        return Err(Error::invalid(format!(
                            "client_name must be a non-empty str without spaces, got {}",
                            repr(n)
                        )))
                    }
                },
            };
            let raw = RawOptions {
                pool_size,
                connect_timeout,
                command_timeout,
                max_message_bytes,
                chunk_size,
                client_name,
            };
            crate::config::validate(&raw)?;
            Ok(raw)
        })()?;
        let url: Option<String> = match url {
            None => None,
            Some(u) => match u.cast::<PyString>() {
                Ok(s) => Some(s.to_cow()?.into_owned()),
                Err(_) => {
                    return Err(Error::invalid(format!("url must be a str, got {}", convert::type_name(u))).into())
                }
            },
        };
        let (url, endpoint) = resolve(py, url.as_deref(), connection)?;
        let opts = Arc::new(Options::new(&url, &raw)?.with_endpoint(endpoint));
        let pool = Arc::new(Pool::new(opts.clone())?);
        Ok(Self {
            opts,
            pool: Mutex::new(Some((std::process::id(), pool))),
            closed: AtomicBool::new(false),
        })
    }

    /// The pool of this process (a forked child builds its own; connections are made lazily).
    pub fn pool(&self) -> Result<Arc<Pool>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let pid = std::process::id();
        let mut guard = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        match guard.take() {
            Some((owner, pool)) if owner == pid => {
                *guard = Some((owner, pool.clone()));
                return Ok(pool);
            }
            // Inherited through fork: its connections and tasks belong to the parent. Never touch them.
            Some(inherited) => std::mem::forget(inherited),
            None => {}
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let pool = Arc::new(Pool::new(self.opts.clone())?);
        *guard = Some((pid, pool.clone()));
        Ok(pool)
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let taken = self.pool.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some((owner, pool)) if owner == std::process::id() => pool.close(),
            Some(inherited) => std::mem::forget(inherited),
            None => {}
        }
    }

    pub fn repr(&self, class: &str) -> String {
        format!("{class}(url={})", crate::pyrepr::py_repr(&self.opts.redacted))
    }

    pub fn topic(&self, name: &Bound<'_, PyAny>) -> Result<Arc<TopicKeys>> {
        Ok(Arc::new(TopicKeys::new(&convert::topic_name(name)?)))
    }

    // ---- operations shared by Client and AsyncClient -----------------------------------------

    pub fn topics_op(&self) -> Result<Op> {
        let pool = self.pool()?;
        Ok(op(async move { rfq::topics(&pool).await }, to_py))
    }

    pub fn streams_op(&self) -> Result<Op> {
        let pool = self.pool()?;
        Ok(op(async move { streams::streams(&pool).await }, to_py))
    }

    pub fn ping_op(&self) -> Result<Op> {
        let pool = self.pool()?;
        Ok(op(async move { rfq::ping(&pool).await }, to_py))
    }

    pub fn claim_op(
        &self,
        topics: &Bound<'_, PyAny>,
        count: &Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: &Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        let names = convert::topic_names(topics)?;
        let keys: Vec<Arc<TopicKeys>> = names.iter().map(|n| Arc::new(TopicKeys::new(n))).collect();
        claim_op(self.pool_after(|| claim_args(count, block, lease, owner))?, keys, names)
    }

    /// Validates first (so bad input never meets a closed client's error), then takes the pool.
    pub fn pool_after<T>(&self, check: impl FnOnce() -> Result<T>) -> Result<(Arc<Pool>, T)> {
        let checked = check()?;
        Ok((self.pool()?, checked))
    }

    pub fn commit_op(&self, messages: &Bound<'_, PyAny>) -> Result<Op> {
        let (pool, held) = self.pool_after(|| convert::held_messages(messages))?;
        Ok(op(async move { rfq::commit(&pool, &held).await }, to_py))
    }

    pub fn extend_op(&self, messages: &Bound<'_, PyAny>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (held, lease_ms)) =
            self.pool_after(|| Ok((convert::held_messages(messages)?, lease_arg(lease)?)))?;
        Ok(op(async move { rfq::extend(&pool, &held, lease_ms).await }, to_py))
    }

    pub fn release_op(&self, messages: &Bound<'_, PyAny>, delay: &Arg<'_>) -> Result<Op> {
        let (pool, (held, delay_ms)) =
            self.pool_after(|| Ok((convert::held_messages(messages)?, delay_arg(delay)?)))?;
        Ok(op(async move { rfq::release(&pool, &held, delay_ms).await }, to_py))
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // A pool inherited through fork must not be dropped in the child (see `Core::pool`).
        if let Some((owner, pool)) = self.pool.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            if owner != std::process::id() {
                std::mem::forget(pool);
            }
        }
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
        Some(l) => convert::lease_ms(l),
    }
}

fn delay_arg(delay: &Arg<'_>) -> Result<u64> {
    delay.0.as_ref().map_or(Ok(0), convert::delay_ms)
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
    Ok((count, convert::block(block)?, lease_arg(lease)?, convert::owner(owner)?))
}

fn claim_op(
    (pool, (count, block, lease_ms, owner)): (Arc<Pool>, ClaimArgs),
    keys: Vec<Arc<TopicKeys>>,
    names: Vec<String>,
) -> Result<Op> {
    Ok(op(
        async move { rfq::claim(&pool, &keys, count, block, lease_ms, &owner).await },
        move |py, claimed| convert::messages_py(py, &names, claimed),
    ))
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
                let ids = rfq::publish_batch(&pool, &keys, vec![msg], front).await?;
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
            self.pool_after(|| Ok((convert::messages(messages, max)?, flag_arg(front, "front")?)))?;
        Ok(op(
            async move { rfq::publish_batch(&pool, &keys, msgs, front).await },
            to_py,
        ))
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
    ) -> Result<Op> {
        let (pool, args, keys) = self.pool_after(|| claim_args(count, block, lease, owner))?;
        let name = keys.name.clone();
        claim_op((pool, args), vec![keys], vec![name])
    }

    pub fn commit_op(&self, messages: &Bound<'_, PyAny>) -> Result<Op> {
        let (pool, held, _) = self.pool_after(|| convert::held_in_topic(messages, &self.keys))?;
        Ok(op(async move { rfq::commit(&pool, &held).await }, to_py))
    }

    pub fn extend_op(&self, messages: &Bound<'_, PyAny>, lease: &Arg<'_>) -> Result<Op> {
        let (pool, (held, lease_ms), _) =
            self.pool_after(|| Ok((convert::held_in_topic(messages, &self.keys)?, lease_arg(lease)?)))?;
        Ok(op(async move { rfq::extend(&pool, &held, lease_ms).await }, to_py))
    }

    pub fn release_op(&self, messages: &Bound<'_, PyAny>, delay: &Arg<'_>) -> Result<Op> {
        let (pool, (held, delay_ms), _) =
            self.pool_after(|| Ok((convert::held_in_topic(messages, &self.keys)?, delay_arg(delay)?)))?;
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
                Some(t) if !t.is_none() => Some(convert::topic_name(t)?),
                _ => None,
            };
            let dead = crate::protocol::validate::dead_topic(&self.keys.name, to.as_deref())?;
            Ok((
                convert::held_in_topic(messages, &self.keys)?,
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
            self.pool_after(|| Ok((convert::owner(Some(owner))?, lease_arg(lease)?)))?;
        if owner.is_empty() {
            return Err(Error::invalid(
                "owner must be a non-empty str of at most 128 characters without whitespace, got None",
            ));
        }
        let names = vec![keys.name.clone()];
        Ok(op(
            async move { rfq::resume(&pool, &keys, &owner, lease_ms).await },
            move |py, claimed| convert::messages_py(py, &names, claimed),
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
        let (pool, id, keys) = self.pool_after(|| convert::message_id(id))?;
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
                Some(q) => convert::queue(q)?,
            };
            let start = match &start.0 {
                None => 0,
                Some(s) => convert::start(s)?,
            };
            let count = match &count.0 {
                None => 100,
                Some(c) => convert::count(c)?,
            };
            Ok((queue, start, count))
        })?;
        Ok(op(
            async move { rfq::inspect(&pool, &keys, queue, start, count).await },
            convert::inspect_py,
        ))
    }

    pub fn stats_op(&self) -> Result<Op> {
        let (pool, (), keys) = self.pool_after(|| Ok(()))?;
        let name = keys.name.clone();
        Ok(op(async move { rfq::stats(&pool, &keys).await }, move |py, s| {
            convert::stats_py(py, &name, s)
        }))
    }

    pub fn purge_op(&self, queue: &Arg<'_>) -> Result<Op> {
        let (pool, queue, keys) = self.pool_after(|| match &queue.0 {
            None => Ok(TopicList::Backlog),
            Some(q) => convert::queue(q),
        })?;
        Ok(op(async move { rfq::purge(&pool, &keys, queue).await }, to_py))
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
            out = Some(match convert::messages_chunk(iter.bind(py), n, max, start) {
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

// ---- the synchronous classes ---------------------------------------------------------------------

/// A synchronous client (see `_ferroq.pyi`).
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct Client {
    core: Arc<Core>,
}

#[pymethods]
impl Client {
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
        self.core.repr("Client")
    }

    fn topic(&self, name: &Bound<'_, PyAny>) -> PyResult<Topic> {
        let keys = self.core.topic(name)?;
        Ok(Topic {
            inner: TopicCore {
                core: self.core.clone(),
                keys,
            },
        })
    }

    fn topics(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.topics_op()?)
    }

    fn streams(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.streams_op()?)
    }

    #[pyo3(signature = (qname, ns=Arg::missing(), *, realtime=Arg::missing()), text_signature = "(self, /, qname, ns='rsmq', *, realtime=False)")]
    fn rsmq(&self, qname: &Bound<'_, PyAny>, ns: Arg<'_>, realtime: Arg<'_>) -> PyResult<RsmqQueue> {
        Ok(RsmqQueue {
            inner: RsmqCore::new(&self.core, qname, &ns, &realtime)?,
        })
    }

    fn stream(&self, name: &Bound<'_, PyAny>) -> PyResult<Stream> {
        Ok(Stream {
            inner: StreamCore::new(&self.core, name)?,
        })
    }

    #[pyo3(signature = (ns=Arg::missing()), text_signature = "(self, /, ns='rsmq')")]
    fn rsmq_queues(&self, py: Python<'_>, ns: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, crate::bindings::rsmq::queues_op(&self.core, &ns)?)
    }

    #[pyo3(signature = (topics, count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, topics, count=1, block=None, lease=30.0, owner=None)")]
    fn claim(
        &self,
        py: Python<'_>,
        topics: &Bound<'_, PyAny>,
        count: Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.claim_op(topics, &count, block, &lease, owner)?)
    }

    fn commit(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.commit_op(messages)?)
    }

    #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
    fn extend(&self, py: Python<'_>, messages: &Bound<'_, PyAny>, lease: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.extend_op(messages, &lease)?)
    }

    #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
    fn release(&self, py: Python<'_>, messages: &Bound<'_, PyAny>, delay: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.release_op(messages, &delay)?)
    }

    fn ping(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.core.ping_op()?)
    }

    fn close(&self) {
        self.core.close();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.core.close();
    }
}

/// Shared by `Client.__new__` and `AsyncClient.__new__`: missing options take the documented defaults.
#[allow(clippy::too_many_arguments)]
pub fn new_core(
    py: Python<'_>,
    url: Option<&Bound<'_, PyAny>>,
    pool_size: Arg<'_>,
    connect_timeout: Arg<'_>,
    command_timeout: Arg<'_>,
    max_message_bytes: Arg<'_>,
    chunk_size: Arg<'_>,
    client_name: Option<&Bound<'_, PyAny>>,
    connection: [Option<Bound<'_, PyAny>>; 7],
) -> PyResult<Core> {
    let mut names = CONNECTION_ARGS.iter();
    let connection: ConnectionArgs<'_> = connection.map(|value| (*names.next().unwrap_or(&""), value));
    let d = RawOptions::default();
    fn or<'py>(a: Arg<'py>, default: Bound<'py, PyAny>) -> Bound<'py, PyAny> {
        a.0.unwrap_or(default)
    }
    let int = |v: i64| -> PyResult<Bound<'_, PyAny>> { Ok(v.into_pyobject(py)?.into_any()) };
    let float = |v: f64| -> PyResult<Bound<'_, PyAny>> { Ok(v.into_pyobject(py)?.into_any()) };
    Core::new(
        py,
        url,
        &or(pool_size, int(d.pool_size)?),
        &or(connect_timeout, float(d.connect_timeout)?),
        &or(command_timeout, float(d.command_timeout)?),
        &or(max_message_bytes, int(d.max_message_bytes)?),
        &or(chunk_size, int(d.chunk_size)?),
        client_name,
        &connection,
    )
}

/// An rfq topic of a `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct Topic {
    inner: TopicCore,
}

#[pymethods]
impl Topic {
    #[getter]
    fn name(&self) -> String {
        self.inner.keys.name.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Topic({}, client={})",
            crate::pyrepr::py_repr(&self.inner.keys.name),
            self.inner.core.repr("Client")
        )
    }

    #[pyo3(signature = (fields, front=Arg::missing()), text_signature = "(self, /, fields, front=False)")]
    fn publish(&self, py: Python<'_>, fields: &Bound<'_, PyAny>, front: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.publish_op(fields, &front)?)
    }

    #[pyo3(signature = (messages, front=Arg::missing()), text_signature = "(self, /, messages, front=False)")]
    fn publish_batch(&self, py: Python<'_>, messages: &Bound<'_, PyAny>, front: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.publish_batch_op(messages, &front)?)
    }

    fn publish_stream(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.publish_stream_op(messages)?)
    }

    #[pyo3(signature = (data, *, dedup_key=None, dedup_ttl=Arg::missing(), id_column=None, value_column=None), text_signature = "(self, /, data, *, dedup_key=None, dedup_ttl=86400.0, id_column=None, value_column=None)")]
    fn publish_arrow(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        dedup_key: Option<&Bound<'_, PyAny>>,
        dedup_ttl: Arg<'_>,
        id_column: Option<&Bound<'_, PyAny>>,
        value_column: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let op = self
            .inner
            .publish_arrow_op(data, dedup_key, &dedup_ttl, id_column, value_column)?;
        run_sync(py, op)
    }

    #[pyo3(signature = (count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, count=1, block=None, lease=30.0, owner=None)")]
    fn claim(
        &self,
        py: Python<'_>,
        count: Arg<'_>,
        block: Option<&Bound<'_, PyAny>>,
        lease: Arg<'_>,
        owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.claim_op(&count, block, &lease, owner)?)
    }

    fn commit(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.commit_op(messages)?)
    }

    #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
    fn extend(&self, py: Python<'_>, messages: &Bound<'_, PyAny>, lease: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.extend_op(messages, &lease)?)
    }

    #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
    fn release(&self, py: Python<'_>, messages: &Bound<'_, PyAny>, delay: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.release_op(messages, &delay)?)
    }

    #[pyo3(signature = (messages, error=None, to=None), text_signature = "(self, /, messages, error='', to=None)")]
    fn dead_letter(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        error: Option<&Bound<'_, PyAny>>,
        to: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.dead_letter_op(messages, error, to)?)
    }

    #[pyo3(signature = (owner, lease=Arg::missing()), text_signature = "(self, /, owner, lease=30.0)")]
    fn resume(&self, py: Python<'_>, owner: &Bound<'_, PyAny>, lease: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.resume_op(owner, &lease)?)
    }

    #[pyo3(signature = (all=Arg::missing(), lease=Arg::missing()), text_signature = "(self, /, all=False, lease=30.0)")]
    fn harvest(&self, py: Python<'_>, all: Arg<'_>, lease: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.harvest_op(&all, &lease)?)
    }

    fn peek(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.peek_op(id)?)
    }

    fn fetch_arrow(&self, py: Python<'_>, ids: &Bound<'_, PyAny>, fields: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::bindings::arrow_read::need_pyarrow(py)?;
        run_sync(py, self.inner.fetch_arrow_op(ids, fields)?)
    }

    #[pyo3(signature = (queue=Arg::missing(), start=Arg::missing(), count=Arg::missing()), text_signature = "(self, /, queue='backlog', start=0, count=100)")]
    fn inspect(&self, py: Python<'_>, queue: Arg<'_>, start: Arg<'_>, count: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.inspect_op(&queue, &start, &count)?)
    }

    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.stats_op()?)
    }

    #[pyo3(signature = (queue=Arg::missing()), text_signature = "(self, /, queue='backlog')")]
    fn purge(&self, py: Python<'_>, queue: Arg<'_>) -> PyResult<Py<PyAny>> {
        run_sync(py, self.inner.purge_op(&queue)?)
    }
}
