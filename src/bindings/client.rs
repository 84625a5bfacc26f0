//! `Client` (sync) and `AsyncClient` (asyncio): one definition by `client_methods!`; each hands out the
//! protocol handles of its kind (topics, RSMQ queues, streams) and runs the rfq client operations.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::bindings::asyncio::{ready, run_async};
use crate::bindings::core::{op, sync_call, to_py, Arg, ClientArgs, Core};
use crate::bindings::rsmq::{self, AsyncRsmqQueue, RsmqCore, RsmqQueue};
use crate::bindings::runtime;
use crate::bindings::stream::{self, AsyncStream, Stream, StreamCore};
use crate::bindings::topic::{AsyncTopic, Topic, TopicCore};

/// The methods of `Client` / `AsyncClient`: `$run` turns an operation into the Python result; `$topic`,
/// `$rsmq` and `$stream` are the handles it makes; `$($extra)*` are the methods that differ (closing, and
/// the context manager protocol of each kind).
macro_rules! client_methods {
    ($class:ident, $label:literal, $run:path, $topic:ident, $rsmq:ident, $stream:ident, { $($extra:tt)* }) => {
        py_methods! {
            $class, $run, core,
            {
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
                    let args = ClientArgs {
                        url,
                        pool_size,
                        connect_timeout,
                        command_timeout,
                        max_message_bytes,
                        chunk_size,
                        client_name,
                        connection: [
                            username,
                            password,
                            password_file,
                            tls_ca_file,
                            tls_cert_file,
                            tls_key_file,
                            tls_insecure_skip_verify,
                        ],
                    };
                    let core = Core::new(py, args)?;
                    Ok(Self { core: Arc::new(core) })
                }

                #[getter]
                fn url(&self) -> String {
                    self.core.opts.redacted.clone()
                }

                fn __repr__(&self) -> String {
                    self.core.repr($label)
                }

                fn topic(&self, name: &Bound<'_, PyAny>) -> PyResult<$topic> {
                    let keys = self.core.topic(name)?;
                    Ok($topic {
                        inner: TopicCore {
                            core: self.core.clone(),
                            keys,
                        },
                    })
                }

                fn streams<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                    $run(py, stream::streams_op(&self.core))
                }

                #[pyo3(signature = (qname, ns=Arg::missing(), *, realtime=Arg::missing()), text_signature = "(self, /, qname, ns='rsmq', *, realtime=False)")]
                fn rsmq(&self, qname: &Bound<'_, PyAny>, ns: Arg<'_>, realtime: Arg<'_>) -> PyResult<$rsmq> {
                    Ok($rsmq {
                        inner: RsmqCore::new(&self.core, qname, &ns, &realtime)?,
                    })
                }

                fn stream(&self, name: &Bound<'_, PyAny>) -> PyResult<$stream> {
                    Ok($stream {
                        inner: StreamCore::new(&self.core, name)?,
                    })
                }

                #[pyo3(signature = (ns=Arg::missing()), text_signature = "(self, /, ns='rsmq')")]
                fn rsmq_queues<'py>(&self, py: Python<'py>, ns: Arg<'py>) -> PyResult<Bound<'py, PyAny>> {
                    $run(py, rsmq::queues_op(&self.core, &ns))
                }

                $($extra)*
            }

            fn topics() => topics_op();

            #[pyo3(signature = (topics, count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, topics, count=1, block=None, lease=30.0, owner=None)")]
            fn claim(
                topics: &Bound<'py, PyAny>,
                count: Arg<'py>,
                block: Option<&Bound<'py, PyAny>>,
                lease: Arg<'py>,
                owner: Option<&Bound<'py, PyAny>>,
            ) => claim_op(topics, &count, block, &lease, owner, false);

            #[pyo3(name = "_claim_deferred", signature = (topics, count=Arg::missing(), block=None, lease=Arg::missing(), owner=None), text_signature = "(self, /, topics, count=1, block=None, lease=30.0, owner=None)")]
            fn claim_deferred(
                topics: &Bound<'py, PyAny>,
                count: Arg<'py>,
                block: Option<&Bound<'py, PyAny>>,
                lease: Arg<'py>,
                owner: Option<&Bound<'py, PyAny>>,
            ) => claim_op(topics, &count, block, &lease, owner, true);

            fn commit(messages: &Bound<'py, PyAny>) => commit_op(messages);

            #[pyo3(signature = (messages, lease=Arg::missing()), text_signature = "(self, /, messages, lease=30.0)")]
            fn extend(messages: &Bound<'py, PyAny>, lease: Arg<'py>) => extend_op(messages, &lease);

            #[pyo3(signature = (messages, delay=Arg::missing()), text_signature = "(self, /, messages, delay=0.0)")]
            fn release(messages: &Bound<'py, PyAny>, delay: Arg<'py>) => release_op(messages, &delay);

            fn ping() => ping_op();
        }
    };
}

/// A synchronous client (see `_ferroq.pyi`).
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct Client {
    core: Arc<Core>,
}

/// The asyncio twin of `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncClient {
    core: Arc<Core>,
}

client_methods!(Client, "Client", sync_call, Topic, RsmqQueue, Stream, {
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(pool) = self.core.take_for_close() {
            // Closed at once; then the DEL of the keys it left (at most CLOSE_DELETE_WAIT). A Ctrl-C meanwhile
            // is raised: only those keys are left to expire.
            let deleting = pool.close_deleting();
            runtime::wait(py, async move {
                deleting.await;
                Ok(())
            })??;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }
});

client_methods!(
    AsyncClient,
    "AsyncClient",
    run_async,
    AsyncTopic,
    AsyncRsmqQueue,
    AsyncStream,
    {
        fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            match self.core.take_for_close() {
                // Closed at once; the awaitable is the DEL of the keys it left (see Pool::close_deleting).
                Some(pool) => {
                    let deleting = pool.close_deleting();
                    let deleted = async move {
                        deleting.await;
                        Ok(())
                    };
                    run_async(py, Ok(op(deleted, to_py)))
                }
                None => ready(py, py.None().into_bound(py)),
            }
        }

        fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
            let py = slf.py();
            ready(py, slf.into_any())
        }

        #[pyo3(signature = (*_args))]
        fn __aexit__<'py>(&self, py: Python<'py>, _args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
            self.close(py)
        }
    }
);
