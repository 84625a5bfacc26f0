//! `publish_arrow` / `send_arrow`: Arrow data taken through the Arrow C Data Interface (the PyCapsule
//! protocol, `__arrow_c_stream__` / `__arrow_c_array__`), cut into chunks and published one call per chunk
//! (a script call, or for a topic's fresh ids a watched transaction). The chunks are encoded without the GIL on a blocking thread, the next one while the previous one is
//! in flight; no Python object is made per row.

use std::sync::Arc;

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyCapsuleMethods, PyFloat, PyInt, PyString, PyTuple};
use redis::{Cmd, Value};

use crate::bindings::convert::{repr, type_name};
use crate::bindings::core::{Arg, Convert, Core, Op};
use crate::errors::{Error, Result};
use crate::limits::{MAX_DEDUP_KEY, MAX_DEDUP_TTL};
use crate::pool::Pool;
use crate::protocol::arrow::{Chunk, Layout, Rows, Target};
use crate::protocol::common::{eval_one, int};
use crate::protocol::keys::{dedup_token, StreamKeys, TopicKeys, STREAM_PUBLISH_TOKEN_MS};
use crate::protocol::rfq::{self, ChunkWrite};
use crate::protocol::rsmq::{self, Queue};
use crate::protocol::streams::{self, Retention};
use crate::protocol::{ids, validate};
use crate::scripts::{self, Id};

pub type Batches = Box<dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + Send>;

const DEFAULT_DEDUP_TTL_MS: u64 = 86_400_000;

// ---- arguments -----------------------------------------------------------------------------------------

/// `dedup_key`: None, or a non-empty str of at most 200 characters.
pub fn dedup_key(obj: Option<&Bound<'_, PyAny>>) -> Result<Option<String>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = obj.cast::<PyString>() {
        if let Ok(s) = s.to_cow() {
            if !s.is_empty() && s.chars().count() <= MAX_DEDUP_KEY {
                return Ok(Some(s.to_string()));
            }
        }
    }
    Err(Error::invalid(format!(
        "dedup_key must be None or a non-empty str of at most {MAX_DEDUP_KEY} characters, got {}",
        repr(obj)
    )))
}

/// `dedup_ttl` in ms (rounded up): a number of seconds > 0 and at most 30 days.
pub fn dedup_ttl_ms(obj: &Arg<'_>) -> Result<u64> {
    let Some(obj) = obj.0.as_ref() else {
        return Ok(DEFAULT_DEDUP_TTL_MS);
    };
    let ok = !obj.is_instance_of::<PyBool>() && (obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>());
    match ok.then(|| obj.extract::<f64>().ok()).flatten() {
        Some(v) if v > 0.0 && v <= MAX_DEDUP_TTL => Ok((v * 1000.0).ceil() as u64),
        _ => Err(Error::invalid(format!(
            "dedup_ttl must be a number of seconds > 0 and at most {MAX_DEDUP_TTL:.0} (30 days), got {}",
            repr(obj)
        ))),
    }
}

/// `id_column` / `value_column`: None, or a non-empty str.
pub fn column_name(obj: Option<&Bound<'_, PyAny>>, what: &str) -> Result<Option<String>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    match obj
        .cast::<PyString>()
        .ok()
        .and_then(|s| s.to_cow().ok().map(|c| c.into_owned()))
    {
        Some(s) if !s.is_empty() => Ok(Some(s)),
        _ => Err(Error::invalid(format!(
            "{what} must be None or a column name (a non-empty str), got {}",
            repr(obj)
        ))),
    }
}

/// The checked arguments of a publish_arrow call.
pub struct Args {
    pub dedup_key: Option<String>,
    pub ttl_ms: u64,
    pub id_column: Option<String>,
    pub value_column: Option<String>,
}

/// Checks, in this order, `dedup_key`, `dedup_ttl` (kept in ms), `id_column` (topics only: None elsewhere)
/// and `value_column`.
pub fn args(
    dedup_key_arg: Option<&Bound<'_, PyAny>>,
    dedup_ttl: &Arg<'_>,
    id_column: Option<&Bound<'_, PyAny>>,
    value_column: Option<&Bound<'_, PyAny>>,
) -> Result<Args> {
    Ok(Args {
        dedup_key: dedup_key(dedup_key_arg)?,
        ttl_ms: dedup_ttl_ms(dedup_ttl)?,
        id_column: column_name(id_column, "id_column")?,
        value_column: column_name(value_column, "value_column")?,
    })
}

/// A publish_arrow operation: `check` validates the arguments and names the sink (no I/O), then the data
/// and its schema are checked, then the pool is taken (a closed client is reported after bad input).
pub fn prepare(core: &Core, data: &Bound<'_, PyAny>, check: impl FnOnce() -> Result<(Sink, Args)>) -> Result<Op> {
    let (pool, job) = core.pool_after(|| {
        let (sink, args) = check()?;
        job(sink, data, args)
    })?;
    Ok(op(pool, job))
}

// ---- importing the data ----------------------------------------------------------------------------------

fn not_arrow(obj: &Bound<'_, PyAny>) -> Error {
    Error::invalid(format!(
        "data must be a pyarrow RecordBatch, Table or RecordBatchReader, or an object with \
         __arrow_c_stream__ or __arrow_c_array__ (the Arrow PyCapsule interface), got {}",
        type_name(obj)
    ))
}

fn arrow_error(e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("the Arrow data cannot be read: {e}"))
}

fn capsule<'a, 'py>(obj: &'a Bound<'py, PyAny>, name: &std::ffi::CStr) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
    let cap = obj
        .cast::<PyCapsule>()
        .map_err(|_| arrow_error(format!("expected a PyCapsule named {name:?}")))?;
    cap.pointer_checked(Some(name)).map_err(arrow_error)
}

/// The schema and record batches of `data`, imported under the GIL (nothing is read yet for a stream).
pub fn import(data: &Bound<'_, PyAny>) -> Result<(SchemaRef, Batches)> {
    let py = data.py();
    if data.hasattr("__arrow_c_stream__").unwrap_or(false) {
        let cap = data
            .call_method0("__arrow_c_stream__")
            .map_err(|e| arrow_error(e.value(py).to_string()))?;
        let ptr = capsule(&cap, c"arrow_array_stream")?;
        // SAFETY: the capsule holds an ArrowArrayStream; from_raw moves it out and leaves a released
        // (empty) struct behind, so the capsule's destructor does not release it again.
        let stream = unsafe { FFI_ArrowArrayStream::from_raw(ptr.as_ptr().cast()) };
        let reader = ArrowArrayStreamReader::try_new(stream).map_err(arrow_error)?;
        return Ok((reader.schema(), Box::new(reader)));
    }
    if data.hasattr("__arrow_c_array__").unwrap_or(false) {
        let pair = data
            .call_method0("__arrow_c_array__")
            .map_err(|e| arrow_error(e.value(py).to_string()))?;
        let pair = pair
            .cast::<PyTuple>()
            .map_err(|_| arrow_error("__arrow_c_array__ did not return a pair"))?;
        if pair.len() != 2 {
            return Err(arrow_error("__arrow_c_array__ did not return a pair"));
        }
        let (schema_cap, array_cap) = (
            pair.get_item(0).map_err(arrow_error)?,
            pair.get_item(1).map_err(arrow_error)?,
        );
        let schema_ptr = capsule(&schema_cap, c"arrow_schema")?;
        let array_ptr = capsule(&array_cap, c"arrow_array")?;
        // SAFETY: the capsules hold an ArrowSchema (borrowed: its capsule keeps and releases it) and an
        // ArrowArray (moved out, as for the stream).
        let (schema, array) = unsafe {
            let schema: &FFI_ArrowSchema = &*schema_ptr.as_ptr().cast::<FFI_ArrowSchema>();
            (schema, FFI_ArrowArray::from_raw(array_ptr.as_ptr().cast()))
        };
        // SAFETY: the array and schema come from the same producer call.
        let data = unsafe { from_ffi(array, schema) }.map_err(arrow_error)?;
        if !matches!(data.data_type(), arrow_schema::DataType::Struct(_)) {
            return Err(Error::invalid(
                "data must hold rows: a record batch, a table or a struct array",
            ));
        }
        let batch = RecordBatch::from(StructArray::from(data));
        return Ok((batch.schema(), Box::new(std::iter::once(Ok(batch)))));
    }
    Err(not_arrow(data))
}

// ---- where the rows go --------------------------------------------------------------------------------------

/// The target of a publish_arrow call, with its per-call options.
pub enum Sink {
    Topic(Arc<TopicKeys>),
    /// The queue and the delay in ms ('' for the queue's).
    Rsmq(Arc<Queue>, String),
    Stream(Arc<StreamKeys>, Retention),
}

impl Sink {
    pub fn target(&self) -> Target {
        match self {
            Sink::Topic(_) => Target::Topic,
            Sink::Rsmq(..) => Target::Rsmq,
            Sink::Stream(..) => Target::Stream,
        }
    }
}

/// Everything a call needs once validated: no Python object inside.
pub struct Job {
    pub sink: Sink,
    pub rows: Rows<Batches>,
    pub dedup_key: Option<String>,
    pub ttl_ms: u64,
}

/// Validates what is left (the schema against the options) and prepares the call.
pub fn job(sink: Sink, data: &Bound<'_, PyAny>, args: Args) -> Result<Job> {
    let (schema, batches) = import(data)?;
    let layout = Layout::new(
        &schema,
        sink.target(),
        args.id_column.as_deref(),
        args.value_column.as_deref(),
    )?;
    Ok(Job {
        sink,
        rows: Rows::new(batches, layout),
        dedup_key: args.dedup_key,
        ttl_ms: args.ttl_ms,
    })
}

/// How one chunk is sent.
enum ChunkCall {
    /// One script call.
    Script(Cmd),
    /// A topic's chunk of fresh ids: a watched transaction (see [`rfq::write_chunk`]).
    Watched(ChunkWrite),
}

/// The call of one chunk; its record token is derived from the dedup key, else random.
fn command(job: &Job, chunk: &Chunk) -> ChunkCall {
    let layout = job.rows.layout();
    let token = match &job.dedup_key {
        Some(k) => dedup_token(k, chunk.index),
        None => ids::new_tokens(1).remove(0),
    };
    let ttl = if job.dedup_key.is_some() {
        job.ttl_ms
    } else {
        STREAM_PUBLISH_TOKEN_MS
    };
    match &job.sink {
        Sink::Topic(topic) if chunk.messages.first().is_some_and(|m| m.id.is_none()) => {
            // A dedup key's record stays for dedup_ttl; a random token's is deleted once the chunk is written.
            let mut write = ChunkWrite::new(topic, &token, ttl, false, job.dedup_key.is_none());
            for (id, m) in ids::new_ids(chunk.len()).into_iter().zip(&chunk.messages) {
                write.message(topic, id, chunk.fields(layout, m));
            }
            ChunkCall::Watched(write)
        }
        Sink::Topic(topic) => {
            // Ids from the id column: publish-2n, whose insert-if-absent (an EXISTS per message, in Lua) keeps
            // a message that already exists under a caller's id; a transaction cannot skip by a key's
            // existence without reading every key first.
            let ids: Vec<&str> = chunk.messages.iter().map(|m| chunk.id(m).unwrap_or_default()).collect();
            let mut cmd = scripts::evalsha(Id::Publish, 2 + chunk.len());
            cmd.arg(&topic.backlog).arg(topic.published(&token));
            for id in &ids {
                cmd.arg(topic.message(id));
            }
            // Without a dedup key no record is kept: insert-if-absent already makes a resent chunk harmless.
            cmd.arg("0");
            if job.dedup_key.is_some() {
                cmd.arg(ttl);
            } else {
                cmd.arg("");
            }
            for (id, m) in ids.iter().zip(&chunk.messages) {
                cmd.arg(*id).arg(m.fields.1 - m.fields.0);
                for (k, v) in chunk.fields(layout, m) {
                    cmd.arg(k).arg(v);
                }
            }
            ChunkCall::Script(cmd)
        }
        Sink::Rsmq(q, delay) => {
            let longest = chunk.messages.iter().map(|m| m.utf16).max().unwrap_or(0);
            let mut cmd = rsmq::send_head(q, delay, longest, &token, ttl);
            for (random, m) in ids::rsmq_randoms(chunk.len()).iter().zip(&chunk.messages) {
                cmd.arg(random);
                if let Some((_, body)) = chunk.fields(layout, m).next() {
                    cmd.arg(body);
                }
            }
            ChunkCall::Script(cmd)
        }
        Sink::Stream(s, retention) => {
            let mut cmd = streams::publish_head(s, &token, ttl, retention);
            for m in &chunk.messages {
                cmd.arg(m.fields.1 - m.fields.0);
                for (k, v) in chunk.fields(layout, m) {
                    cmd.arg(k).arg(v);
                }
            }
            ChunkCall::Script(cmd)
        }
    }
}

/// Sends one chunk (repeated once after a dropped connection: every call is idempotent); returns how many
/// messages it wrote (0 when its record says an earlier call wrote it).
async fn send(pool: Arc<Pool>, sink: SinkRef, call: ChunkCall) -> Result<usize> {
    let cmd = match call {
        ChunkCall::Watched(write) => return rfq::write_chunk(&pool, write).await,
        ChunkCall::Script(cmd) => cmd,
    };
    match sink {
        SinkRef::Topic => {
            let n = int(eval_one(&pool, true, Id::Publish, &cmd).await?)?;
            Ok(usize::try_from(n).unwrap_or(0))
        }
        SinkRef::Rsmq(q) => {
            let reply = eval_one(&pool, true, Id::RsmqSend, &cmd).await?;
            let (ids, fresh) = rsmq::decode_send(&pool, &q, reply, &[])?;
            Ok(if fresh { ids.len() } else { 0 })
        }
        SinkRef::Stream => {
            let reply: Value = eval_one(&pool, true, Id::StreamPublish, &cmd).await?;
            let (ids, fresh) = streams::decode_publish(reply)?;
            Ok(if fresh { ids.len() } else { 0 })
        }
    }
}

/// What a send task needs of the sink.
#[derive(Clone)]
enum SinkRef {
    Topic,
    Rsmq(Arc<Queue>),
    Stream,
}

/// The chunk being sent; dropping it (a cancelled or interrupted call) aborts the send.
struct InFlight(tokio::task::JoinHandle<Result<usize>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Encodes the next chunk on a blocking thread (the Arrow stream may call into Python, taking the GIL).
async fn next_chunk(mut job: Job, n: usize, max: usize) -> (Option<Job>, Result<Option<(Chunk, ChunkCall)>>) {
    let done = tokio::task::spawn_blocking(move || {
        let chunk = job.rows.next_chunk(n, max);
        let out = chunk.map(|c| {
            c.map(|c| {
                let cmd = command(&job, &c);
                (c, cmd)
            })
        });
        (Some(job), out)
    })
    .await;
    done.unwrap_or_else(|e| {
        (
            None,
            Err(Error::protocol(format!("reading the Arrow data failed: {e}"))),
        )
    })
}

/// Publishes every row of `job`; returns (rows read, messages written) and the error that stopped it.
pub async fn run(pool: Arc<Pool>, job: Job, max: usize) -> (usize, usize, Option<Error>) {
    let n = pool.opts.chunk_size;
    let sink = match &job.sink {
        Sink::Topic(_) => SinkRef::Topic,
        Sink::Rsmq(q, _) => SinkRef::Rsmq(q.clone()),
        Sink::Stream(..) => SinkRef::Stream,
    };
    let (mut read, mut published) = (0, 0);
    let mut job = Some(job);
    let mut in_flight: Option<InFlight> = None;
    // RSMQ: the queue's maxsize, read once before the first chunk is sent (None: not read yet).
    let mut maxsize: Option<(i64, String)> = None;
    loop {
        let next = match job.take() {
            Some(j) => {
                let (back, next) = next_chunk(j, n, max).await;
                job = back;
                next
            }
            None => Ok(None),
        };
        if let Some(mut sent) = in_flight.take() {
            match (&mut sent.0).await {
                Ok(Ok(written)) => published += written,
                Ok(Err(e)) => return (read, published, Some(e)),
                Err(e) => {
                    return (
                        read,
                        published,
                        Some(Error::protocol(format!("publishing a chunk failed: {e}"))),
                    )
                }
            }
        }
        let (chunk, cmd) = match next {
            Ok(Some(c)) => c,
            Ok(None) => return (read, published, None),
            Err(e) => return (read, published, Some(e)),
        };
        if let SinkRef::Rsmq(q) = &sink {
            if maxsize.is_none() {
                match rsmq::queue_maxsize(&pool, q).await {
                    Ok(m) => maxsize = Some(m),
                    Err(e) => return (read, published, Some(e)),
                }
            }
            if let Some((limit, text)) = &maxsize {
                if let Some((i, m)) = chunk
                    .messages
                    .iter()
                    .enumerate()
                    .find(|(_, m)| *limit != -1 && m.utf16 as i64 > *limit)
                {
                    let e = validate::rsmq::too_long(m.utf16, text);
                    let row = chunk.index * n + i;
                    return (
                        read,
                        published,
                        Some(Error::new(e.kind, format!("row {row}: {}", e.message))),
                    );
                }
            }
        }
        read += chunk.len();
        let (pool, sink) = (pool.clone(), sink.clone());
        in_flight = Some(InFlight(tokio::spawn(async move { send(pool, sink, cmd).await })));
    }
}

/// The operation: `(rows, published)`, or the error with `published` (messages written before it) set.
pub fn op(pool: Arc<Pool>, job: Job) -> Op {
    let max = pool.opts.max_message_bytes;
    Box::pin(async move {
        let (rows, published, end) = run(pool, job, max).await;
        Ok(Box::new(move |py: Python<'_>| match end {
            None => Ok((rows, published).into_pyobject(py)?.into_any().unbind()),
            Some(err) => {
                let e = PyErr::from(err);
                e.value(py).setattr("published", published)?;
                Err(e)
            }
        }) as Convert)
    })
}
