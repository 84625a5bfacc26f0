//! What every handle of the bindings shares, and nothing protocol-specific: [`Arg`], the operations
//! ([`Op`]: validated under the GIL, then a future plus a conversion step), [`prepare`], the sync runner,
//! and [`Core`] (a client's options and its per-process pool). The asyncio runner is `bindings::asyncio`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyModuleNotFoundError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::bindings::convert::{self, repr};
use crate::bindings::exceptions::issue_warnings;
use crate::bindings::runtime;
use crate::config::{Endpoint, Options, RawOptions};
use crate::errors::{Error, Result};
use crate::limits::{MAX_CHUNK_SIZE, MAX_POOL_SIZE};
use crate::pool::Pool;
use crate::protocol::rfq;

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

/// A batch (a claim's or a receive's messages) whose Python objects are made when asked (`messages()`), not
/// when its call returns: a loop that calls ahead sends its next call first, and the server works on it while
/// the caller's thread makes them (the native asyncio `batches()` and worker). Made by [`deferred`].
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct DeferredBatch {
    len: usize,
    make: Mutex<Option<Convert>>,
}

#[pymethods]
impl DeferredBatch {
    fn __len__(&self) -> usize {
        self.len
    }

    /// The messages, made once: a second call raises RuntimeError.
    fn messages(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let make = self.make.lock().unwrap_or_else(|e| e.into_inner()).take();
        match make {
            Some(make) => make(py),
            None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "ferroq: this batch's messages were already taken",
            )),
        }
    }

    fn __repr__(&self) -> String {
        format!("DeferredBatch(len={})", self.len)
    }
}

/// The conversion of `batch` by `convert`, deferred: a [`DeferredBatch`] that makes it when asked.
pub fn deferred<I: Send + 'static>(
    py: Python<'_>,
    batch: Vec<I>,
    convert: impl FnOnce(Python<'_>, Vec<I>) -> PyResult<Py<PyAny>> + Send + 'static,
) -> PyResult<Py<PyAny>> {
    let len = batch.len();
    let make: Convert = Box::new(move |py: Python<'_>| convert(py, batch));
    Ok(Py::new(
        py,
        DeferredBatch {
            len,
            make: Mutex::new(Some(make)),
        },
    )?
    .into_any())
}

pub fn to_py<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: T) -> PyResult<Py<PyAny>> {
    pyo3::IntoPyObjectExt::into_py_any(v, py)
}

/// The sync runner of the method macros: runs the operation and waits for it with the GIL released (bad
/// arguments raise at once).
pub fn sync_call<'py>(py: Python<'py>, op: Result<Op>) -> PyResult<Bound<'py, PyAny>> {
    let result = runtime::wait(py, op?);
    issue_warnings(py);
    Ok(result??(py)?.into_bound(py))
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

/// The arguments of `Client(...)` / `AsyncClient(...)`, as given.
pub struct ClientArgs<'py> {
    pub url: Option<&'py Bound<'py, PyAny>>,
    pub pool_size: Arg<'py>,
    pub connect_timeout: Arg<'py>,
    pub command_timeout: Arg<'py>,
    pub max_message_bytes: Arg<'py>,
    pub chunk_size: Arg<'py>,
    pub client_name: Option<&'py Bound<'py, PyAny>>,
    /// The credentials and TLS options, in [`CONNECTION_ARGS`] order, passed as given to
    /// `ferroq.connection.resolve` (which checks them, with the pure client, in one place).
    pub connection: [Option<Bound<'py, PyAny>>; 7],
}

/// The names of [`ClientArgs::connection`], in order (keyword arguments of `Client` and `AsyncClient`).
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
fn resolve(py: Python<'_>, url: Option<&str>, given: &[Option<Bound<'_, PyAny>>; 7]) -> PyResult<(String, Endpoint)> {
    let connection = match py.import("ferroq.connection") {
        Ok(module) => module,
        Err(e) if e.is_instance_of::<PyModuleNotFoundError>(py) && url.is_some() => {
            return Ok((url.unwrap_or_default().to_string(), Endpoint::default()))
        }
        Err(e) => return Err(e),
    };
    let kwargs = PyDict::new(py);
    for (name, value) in CONNECTION_ARGS.iter().zip(given) {
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
    /// The core of `Client(...)` / `AsyncClient(...)`: options not given take the documented defaults.
    pub fn new(py: Python<'_>, args: ClientArgs<'_>) -> PyResult<Self> {
        let d = RawOptions::default();
        let int = |arg: &Arg<'_>, name: &str, most: Option<i64>, default: i64| {
            arg.0
                .as_ref()
                .map_or(Ok(default), |v| convert::int_option(v, name, most))
        };
        let seconds =
            |arg: &Arg<'_>, name: &str, default: f64| arg.0.as_ref().map_or(Ok(default), |v| convert::timeout(v, name));
        // Every option is checked before the URL is resolved (which may start a server).
        let raw = (|| -> Result<RawOptions> {
            let pool_size = int(&args.pool_size, "pool_size", Some(MAX_POOL_SIZE), d.pool_size)?;
            let connect_timeout = seconds(&args.connect_timeout, "connect_timeout", d.connect_timeout)?;
            let command_timeout = seconds(&args.command_timeout, "command_timeout", d.command_timeout)?;
            let max_message_bytes = int(&args.max_message_bytes, "max_message_bytes", None, d.max_message_bytes)?;
            let chunk_size = int(&args.chunk_size, "chunk_size", Some(MAX_CHUNK_SIZE), d.chunk_size)?;
            let client_name = match args.client_name {
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
        let url: Option<String> = match args.url {
            None => None,
            Some(u) => match u.cast::<PyString>() {
                Ok(s) => Some(s.to_cow()?.into_owned()),
                Err(_) => {
                    return Err(Error::invalid(format!("url must be a str, got {}", convert::type_name(u))).into())
                }
            },
        };
        let (url, endpoint) = resolve(py, url.as_deref(), &args.connection)?;
        let opts = Arc::new(Options::new(&url, &raw)?.with_endpoint(endpoint));
        let pool = Arc::new(Pool::new(opts.clone())?);
        Ok(Self {
            opts,
            pool: Mutex::new(Some((crate::fork::pid(), pool))),
            closed: AtomicBool::new(false),
        })
    }

    /// The pool of this process (a forked child builds its own; connections are made lazily).
    pub fn pool(&self) -> Result<Arc<Pool>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let pid = crate::fork::pid();
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

    /// Marks the client closed (no call starts from now on) and takes its pool, for the caller to close: None
    /// if it was closed already, or its pool is a parent's (inherited through fork, never touched).
    pub fn take_for_close(&self) -> Option<Arc<Pool>> {
        self.closed.store(true, Ordering::Release);
        let taken = self.pool.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some((owner, pool)) if owner == crate::fork::pid() => Some(pool),
            Some(inherited) => {
                std::mem::forget(inherited);
                None
            }
            None => None,
        }
    }

    pub fn repr(&self, class: &str) -> String {
        format!("{class}(url={})", crate::pyrepr::py_repr(&self.opts.redacted))
    }

    /// Validates first (so bad input never meets a closed client's error), then takes the pool.
    pub fn pool_after<T>(&self, check: impl FnOnce() -> Result<T>) -> Result<(Arc<Pool>, T)> {
        let checked = check()?;
        Ok((self.pool()?, checked))
    }

    pub fn ping_op(&self) -> Result<Op> {
        let pool = self.pool()?;
        Ok(op(async move { rfq::ping(&pool).await }, to_py))
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // A pool inherited through fork must not be dropped in the child (see `Core::pool`).
        if let Some((owner, pool)) = self.pool.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            if owner != crate::fork::pid() {
                std::mem::forget(pool);
            }
        }
    }
}

/// `class(slf, *args, **kwargs)`: the `batches()` of a topic or queue, an iterator class of `ferroq.batches`
/// (written once in Python for every client).
pub fn batches_of<'py>(
    slf: &Bound<'py, PyAny>,
    class: &Bound<'py, pyo3::types::PyType>,
    args: &Bound<'py, pyo3::types::PyTuple>,
    kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let all: Vec<Bound<'py, PyAny>> = std::iter::once(slf.clone()).chain(args.iter()).collect();
    class.call(pyo3::types::PyTuple::new(slf.py(), all)?, kwargs)
}
