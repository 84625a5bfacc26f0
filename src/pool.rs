//! Connections: `pool_size` shared multiplexed connections chosen round-robin (each pipelines many calls and
//! is replaced after it drops), plus dedicated connections for blocking claims so a BLMOVE never stalls
//! other calls, and for calls that keep state on their connection (WATCH); blocking connections for the
//! single calls of the sync clients ([`Pool::direct`]). Also the retry policy (LOADING, dropped
//! connections) and script execution with NOSCRIPT fallback.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, IntoConnectionInfo, Pipeline, ProtocolVersion, PushInfo, PushKind, Value};
use tokio::sync::Notify;

use crate::config::Options;
use crate::errors::{Error, ErrorKind, Result};
use crate::limits::MAX_DELETE_LATER;
use crate::scripts;
use crate::server_version;

/// How long a LOADING server is waited for before the call fails.
const LOADING_WAIT: Duration = Duration::from_secs(10);
/// Rounds of NOSCRIPT handling for one call (the cache keeps being flushed): the scripts are loaded and
/// the calls resent, the last time as EVAL with the source, which cannot meet NOSCRIPT.
const NOSCRIPT_ROUNDS: usize = 3;
/// Idle dedicated connections kept for the next blocking claim.
const MAX_IDLE_DEDICATED: usize = 8;
/// The longest a closing client waits for the `DEL` of the keys it left to delete later (see
/// [`Pool::close_deleting`]): a server that does not answer by then leaves them to expire.
const CLOSE_DELETE_WAIT: Duration = Duration::from_secs(1);

/// Where warnings about the server go (the bindings install `warnings.warn`; plain Rust prints them).
static WARNING_SINK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Sends the pools' warnings to `sink` instead of stderr (the first call wins).
pub fn set_warning_sink(sink: fn(&str)) {
    let _ = WARNING_SINK.set(sink);
}

fn warn(message: &str) {
    match WARNING_SINK.get() {
        Some(sink) => sink(message),
        None => eprintln!("ferroq: {message}"),
    }
}

/// The warning for a server whose `maxmemory-policy` is `policy`, if that policy may evict queue keys.
/// The pure client words it the same (`ferroq.pure._ops.eviction_warning`).
pub fn eviction_warning(url: &str, policy: &str) -> Option<String> {
    (policy != "noeviction").then(|| {
        format!(
            "Redis at {url} has maxmemory-policy {policy}: when its memory is full it may evict queue keys, \
             and an evicted message is lost without an error; set maxmemory-policy noeviction"
        )
    })
}

/// `maxmemory-policy` from a `CONFIG GET` reply, or from the text of `INFO memory`.
fn policy_of(reply: &Value) -> Option<String> {
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Some(s.clone()),
        _ => None,
    };
    match reply {
        Value::Array(items) if items.len() == 2 => text(&items[1]),
        Value::Map(pairs) => pairs.first().and_then(|(_, v)| text(v)),
        other => text(other)?
            .lines()
            .find_map(|line| line.strip_prefix("maxmemory_policy:"))
            .map(|p| p.trim().to_string()),
    }
}

/// A connection and the flag its driver sets when the socket closes (RESP3 disconnect notice), so a
/// connection the server dropped while idle is replaced before a call is sent on it (like redis-py's
/// check on checkout): a claim, which is not repeated after a drop, then does not fail needlessly.
///
/// `listener`, when set, is woken by every pub/sub message the connection receives (see [`Subscription`]).
#[derive(Clone)]
struct Live {
    conn: MultiplexedConnection,
    dead: Arc<AtomicBool>,
    listener: Listener,
}

type Listener = Arc<Mutex<Option<Arc<Notify>>>>;

fn wake(listener: &Listener) {
    if let Some(notify) = listener.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        notify.notify_one();
    }
}

impl Live {
    fn alive(&self) -> bool {
        !self.dead.load(Ordering::Acquire)
    }
}

struct Slot {
    /// The live connection and its generation (so a late failure does not drop a newer connection).
    conn: Mutex<Option<(u64, Live)>>,
    /// Held while connecting, so concurrent callers wait for one connection instead of opening many.
    connecting: tokio::sync::Mutex<()>,
}

/// A connection lent by the pool; report failures with [`Pool::failed`].
pub struct Conn {
    pub conn: MultiplexedConnection,
    generation: u64,
}

pub struct Pool {
    client: redis::Client,
    pub opts: Arc<Options>,
    slots: Vec<Slot>,
    next: AtomicUsize,
    generation: AtomicU64,
    dedicated: Mutex<Vec<Live>>,
    /// The blocking connections of [`Pool::direct`]: at most `pool_size`, one per thread calling at once.
    direct: Mutex<DirectConns>,
    /// Set when a blocking connection could not be made; cleared by the next connection made the usual
    /// way: until then [`Pool::direct`] is not tried, so a call does not wait for a connect that fails.
    direct_off: AtomicBool,
    /// Set once the server's eviction policy has been read (on the first connection that can).
    policy_checked: AtomicBool,
    /// Set once the server's version has been found supported (see [`Pool::check_version`]).
    version_checked: AtomicBool,
    /// Keys a later request deletes on its way (see [`Pool::delete_later`]).
    delete_later: Mutex<Vec<String>>,
}

impl Pool {
    /// Parses the URL; connects lazily on first use.
    pub fn new(opts: Arc<Options>) -> Result<Self> {
        let invalid =
            |e: redis::RedisError| Error::invalid(format!("invalid Redis URL \"{}\": {}", opts.redacted, e.category()));
        let endpoint = &opts.endpoint;
        // redis-rs's own switch for no certificate checks; `ferroq.connection.resolve` allows it only when
        // asked for by name (tls_insecure_skip_verify), never from a URL alone.
        let url = if endpoint.tls_insecure_skip_verify {
            format!("{}#insecure", opts.url)
        } else {
            opts.url.clone()
        };
        let info = url.as_str().into_connection_info().map_err(invalid)?;
        // RESP3, for the disconnect notice (see `Live`); replies are decoded for both protocols.
        let mut settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        if let Some(username) = &endpoint.username {
            settings = settings.set_username(username);
        }
        if let Some(password) = &endpoint.password {
            settings = settings.set_password(password);
        }
        let info = info.set_redis_settings(settings);
        let client = match endpoint.certificates()? {
            Some(certificates) => redis::Client::build_with_tls(info, certificates)
                .map_err(|e| Error::invalid(format!("the TLS files for {} cannot be used: {e}", opts.redacted)))?,
            None => redis::Client::open(info).map_err(invalid)?,
        };
        let slots = (0..opts.pool_size)
            .map(|_| Slot {
                conn: Mutex::new(None),
                connecting: tokio::sync::Mutex::new(()),
            })
            .collect();
        Ok(Self {
            client,
            opts,
            slots,
            next: AtomicUsize::new(0),
            generation: AtomicU64::new(1),
            dedicated: Mutex::new(Vec::new()),
            direct: Mutex::new(DirectConns::default()),
            direct_off: AtomicBool::new(false),
            policy_checked: AtomicBool::new(false),
            version_checked: AtomicBool::new(false),
            delete_later: Mutex::new(Vec::new()),
        })
    }

    /// The URL with any password masked (never the real one: it may hold a secret).
    pub fn shown_url(&self) -> &str {
        &self.opts.redacted
    }

    /// Maps a redis-rs error with this pool's (redacted) URL.
    pub fn map_err(&self, err: redis::RedisError) -> Error {
        Error::from_redis(&err, self.shown_url())
    }

    /// A new connection, its future boxed: it is large (redis-rs's handshake), and kept inline it would make
    /// the future of every call that might connect that large too, copied in full at each of the call's
    /// moves (a single publish's future was 6 KB).
    fn connect(&self, response_timeout: Duration) -> futures_util::future::BoxFuture<'_, Result<Live>> {
        Box::pin(self.connect_now(response_timeout))
    }

    async fn connect_now(&self, response_timeout: Duration) -> Result<Live> {
        let dead = Arc::new(AtomicBool::new(false));
        let listener: Listener = Arc::new(Mutex::new(None));
        let (flag, to_wake) = (dead.clone(), listener.clone());
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.opts.connect_timeout))
            .set_response_timeout(Some(response_timeout))
            .set_push_sender(move |info: PushInfo| {
                match info.kind {
                    PushKind::Disconnection => {
                        flag.store(true, Ordering::Release);
                        // A waiter wakes at once and finds the connection dead.
                        wake(&to_wake);
                    }
                    PushKind::Message => wake(&to_wake),
                    _ => {}
                }
                Ok::<(), ()>(())
            });
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| {
                let err = self.map_err(e);
                match err.kind {
                    // A connect that times out is a connection failure, not a slow command.
                    ErrorKind::Timeout => Error::new(
                        ErrorKind::Connection,
                        format!(
                            "cannot connect to Redis at {} within {} s",
                            self.shown_url(),
                            self.opts.connect_timeout.as_secs_f64()
                        ),
                    ),
                    // TLS 1.3: a server that wants a client certificate checks it after the client has
                    // finished its part of the handshake, then closes; the first write may meet the close
                    // before the alert (which `Error::from_redis` maps). The same words as the pure client's.
                    ErrorKind::Connection if self.closed_for_want_of_a_certificate(&err) => Error::new(
                        ErrorKind::Tls,
                        format!(
                            "TLS handshake with Redis at {} failed: the server closed the connection (when it \
                             does so at every connect, it requires a client certificate: give tls_cert_file \
                             and tls_key_file) ({})",
                            self.shown_url(),
                            err.message
                        ),
                    ),
                    // The handshake's reply was not RESP.
                    ErrorKind::Protocol => Error::not_redis(self.shown_url()),
                    _ => err,
                }
            })?;
        if let Some(name) = &self.opts.client_name {
            let mut cmd = redis::cmd("CLIENT");
            cmd.arg("SETNAME").arg(name);
            cmd.query_async::<()>(&mut conn).await.map_err(|e| self.map_err(e))?;
        }
        if !self.version_checked.load(Ordering::Acquire) {
            self.check_version(&mut conn).await?;
        }
        if !self.policy_checked.load(Ordering::Acquire) {
            self.check_policy(&mut conn).await;
        }
        self.direct_off.store(false, Ordering::Relaxed);
        Ok(Live { conn, dead, listener })
    }

    /// A TLS connection without a client certificate that the server reset or closed while connecting.
    fn closed_for_want_of_a_certificate(&self, err: &Error) -> bool {
        let closed = [
            "Connection reset by peer",
            "Broken pipe",
            "unexpected EOF",
            "connection closed",
        ];
        self.opts.url.to_ascii_lowercase().starts_with("rediss://")
            && self.opts.endpoint.tls_cert_file.is_none()
            && closed.iter().any(|w| err.message.contains(w))
    }

    /// Refuses a server older than [`crate::limits::MINIMUM_SERVER`], from `INFO server`. A user without INFO
    /// (ACL) is not checked; other errors leave the check for the next connection.
    async fn check_version(&self, conn: &mut MultiplexedConnection) -> Result<()> {
        let mut info = redis::cmd("INFO");
        info.arg("server");
        match self.query(conn, &info).await {
            Ok(Value::BulkString(text)) => server_version::check(self.shown_url(), &String::from_utf8_lossy(&text))?,
            Ok(Value::VerbatimString { text, .. }) => server_version::check(self.shown_url(), &text)?,
            Err(e) if e.kind != ErrorKind::PermissionDenied => return Ok(()),
            _ => {}
        }
        self.version_checked.store(true, Ordering::Release);
        Ok(())
    }

    /// Warns once per pool when the server may evict queue keys. `CONFIG GET` first; a user without
    /// CONFIG (ACL) gets the policy from `INFO memory`. Errors leave it for the next connection.
    async fn check_policy(&self, conn: &mut MultiplexedConnection) {
        let mut config = redis::cmd("CONFIG");
        config.arg("GET").arg("maxmemory-policy");
        let mut policy = self.query(conn, &config).await.ok().as_ref().and_then(policy_of);
        if policy.is_none() {
            let mut info = redis::cmd("INFO");
            info.arg("memory");
            policy = match self.query(conn, &info).await {
                Ok(reply) => policy_of(&reply),
                Err(_) => return,
            };
        }
        if self.policy_checked.swap(true, Ordering::AcqRel) {
            return; // another connection got there first
        }
        if let Some(message) = policy.and_then(|p| eviction_warning(self.shown_url(), &p)) {
            warn(&message);
        }
    }

    /// A shared connection, round-robin over the slots; connects the slot if needed.
    pub async fn get(&self) -> Result<Conn> {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.get_slot(slot).await
    }

    async fn get_slot(&self, slot: usize) -> Result<Conn> {
        let s = &self.slots[slot];
        let current = || match s.conn.lock().unwrap().as_ref() {
            Some((generation, live)) if live.alive() => Some(Conn {
                conn: live.conn.clone(),
                generation: *generation,
            }),
            _ => None,
        };
        if let Some(conn) = current() {
            return Ok(conn);
        }
        let _connecting = s.connecting.lock().await;
        if let Some(conn) = current() {
            return Ok(conn);
        }
        // Every other empty slot connects alongside this one: a later call that lands on an empty slot
        // would wait for the connection handshake, which only the connect timeout bounds, not the command
        // timeout (and a paused or busy server answers no handshake).
        let others: Vec<_> = (0..self.slots.len())
            .filter(|&i| i != slot)
            .filter_map(|i| {
                let guard = self.slots[i].connecting.try_lock().ok()?;
                self.slots[i].conn.lock().unwrap().is_none().then_some((i, guard))
            })
            .collect();
        let (own, extra) = futures_util::future::join(
            self.connect(self.opts.command_timeout),
            futures_util::future::join_all(others.iter().map(|_| self.connect(self.opts.command_timeout))),
        )
        .await;
        for ((i, _guard), live) in others.iter().zip(extra) {
            if let Ok(live) = live {
                self.install(*i, live);
            }
        }
        let live = own?;
        let conn = live.conn.clone();
        let generation = self.install(slot, live);
        Ok(Conn { conn, generation })
    }

    /// Puts a new connection in a slot; returns its generation.
    fn install(&self, slot: usize, live: Live) -> u64 {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        *self.slots[slot].conn.lock().unwrap() = Some((generation, live));
        generation
    }

    /// After a dropped connection, forgets it and every other connection made before it: whatever
    /// dropped one (a server restart, CLIENT KILL, a network cut) most likely dropped them all, and each
    /// would otherwise fail one more call. Calls in flight keep theirs; the next calls reconnect.
    pub fn failed(&self, conn: &Conn, err: &Error) {
        if err.kind != ErrorKind::Connection {
            return;
        }
        for slot in &self.slots {
            let mut state = slot.conn.lock().unwrap();
            if matches!(state.as_ref(), Some((g, _)) if *g <= conn.generation) {
                *state = None;
            }
        }
        self.dedicated.lock().unwrap().clear();
        self.direct.lock().unwrap().forget_idle();
    }

    /// Runs one blocking command on a dedicated connection (never a shared one, which it would stall), with
    /// a response timeout of `block` + command timeout. An idle connection kept from an earlier call may
    /// have died meanwhile: then the command is sent once more on a new connection.
    pub fn blocking<'a>(&'a self, block: Duration, cmd: &'a Cmd) -> futures_util::future::BoxFuture<'a, Result<Value>> {
        // Boxed: the future of every call that may block (a claim with `block`) would otherwise carry it.
        Box::pin(self.blocking_now(block, cmd))
    }

    async fn blocking_now(&self, block: Duration, cmd: &Cmd) -> Result<Value> {
        let timeout = block + self.opts.command_timeout;
        let idle = {
            let mut idle = self.dedicated.lock().unwrap();
            idle.retain(Live::alive);
            idle.pop()
        };
        let reused = idle.is_some();
        let mut live = match idle {
            Some(live) => live,
            None => self.connect(timeout).await?,
        };
        live.conn.set_response_timeout(timeout);
        let mut result = self.query(&mut live.conn, cmd).await;
        if reused && matches!(&result, Err(e) if e.kind == ErrorKind::Connection) {
            live = self.connect(timeout).await?;
            result = self.query(&mut live.conn, cmd).await;
        }
        if result.is_ok() {
            self.give_back(live);
        }
        result
    }

    /// Subscribes a dedicated connection (never a shared one) to `channel`. Until [`Subscription::close`],
    /// every message published there wakes [`Subscription::wait`].
    pub async fn subscribe(&self, channel: &str) -> Result<Subscription<'_>> {
        let mut live = self.lend_dedicated().await?;
        let notify = Arc::new(Notify::new());
        *live.listener.lock().unwrap() = Some(notify.clone());
        live.conn.subscribe(channel).await.map_err(|e| self.map_err(e))?;
        Ok(Subscription {
            pool: self,
            live,
            notify,
            channel: channel.to_string(),
        })
    }

    /// Keeps a dedicated connection after a blocking call that completed normally.
    fn give_back(&self, live: Live) {
        let mut idle = self.dedicated.lock().unwrap();
        if idle.len() < MAX_IDLE_DEDICATED && live.alive() {
            idle.push(live);
        }
    }

    /// Drops every connection (in-flight calls keep theirs until they finish).
    pub fn close(&self) {
        for s in &self.slots {
            s.conn.lock().unwrap().take();
        }
        self.dedicated.lock().unwrap().clear();
        self.direct.lock().unwrap().forget_idle();
    }

    /// Runs `op` on a shared connection, with the retry policy of [`Retries`].
    pub async fn run<T, F, Fut>(&self, idempotent: bool, op: F) -> Result<T>
    where
        T: Send,
        F: FnMut(MultiplexedConnection) -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
    {
        // The same slot on every attempt: after a drop it reconnects, while other slots may be dead too.
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.attempts(idempotent, Some(slot), op).await
    }

    /// Runs `op` on a connection nobody else uses until it returns (an idle dedicated connection, else a new
    /// one): for state kept per connection, as WATCH is, which a shared connection would mix between calls.
    /// The retry policy is [`Pool::run`]'s. The connection is kept for later only when `op` succeeded, so
    /// whatever state a failed `op` left on it (a WATCH, a reply still on its way) goes with it.
    pub async fn exclusive<T, F, Fut>(&self, idempotent: bool, op: F) -> Result<T>
    where
        T: Send,
        F: FnMut(MultiplexedConnection) -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
    {
        self.attempts(idempotent, None, op).await
    }

    /// The attempts of [`Pool::run`] (on shared connection `slot`) or [`Pool::exclusive`] (`slot` None), their
    /// future boxed: with the connection's and the retries' states it is large, and the future of every call
    /// that has this way to go (a sync call goes [`Pool::direct`] first) would be that large too.
    fn attempts<'a, T, F, Fut>(
        &'a self,
        idempotent: bool,
        slot: Option<usize>,
        op: F,
    ) -> futures_util::future::BoxFuture<'a, Result<T>>
    where
        T: Send + 'a,
        F: FnMut(MultiplexedConnection) -> Fut + Send + 'a,
        Fut: Future<Output = Result<T>> + Send + 'a,
    {
        Box::pin(self.attempts_now(idempotent, slot, op))
    }

    async fn attempts_now<T, F, Fut>(&self, idempotent: bool, slot: Option<usize>, mut op: F) -> Result<T>
    where
        F: FnMut(MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        if !idempotent {
            settle().await;
        }
        let mut retries = Retries::new(idempotent);
        loop {
            let result = match slot {
                Some(slot) => match self.get_slot(slot).await {
                    Ok(conn) => {
                        let result = op(conn.conn.clone()).await;
                        if let Err(err) = &result {
                            self.failed(&conn, err);
                        }
                        result
                    }
                    Err(err) => Err(err),
                },
                None => self.on_dedicated(&mut op).await,
            };
            match result {
                Err(err) if retries.again(self, &err).await? => {}
                other => return other,
            }
        }
    }

    /// An idle dedicated connection, else a new one, with the command timeout.
    async fn lend_dedicated(&self) -> Result<Live> {
        let idle = {
            let mut idle = self.dedicated.lock().unwrap();
            idle.retain(Live::alive);
            idle.pop()
        };
        let mut live = match idle {
            Some(live) => live,
            None => self.connect(self.opts.command_timeout).await?,
        };
        live.conn.set_response_timeout(self.opts.command_timeout);
        Ok(live)
    }

    /// One attempt of [`Pool::exclusive`].
    async fn on_dedicated<T, F, Fut>(&self, op: &mut F) -> Result<T>
    where
        F: FnMut(MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        // The shared connections are made alongside the first dedicated one, as `get_slot` makes every empty
        // slot at once: a later call would otherwise wait for a handshake that only the connect timeout bounds.
        let (live, _) = futures_util::future::join(self.lend_dedicated(), self.get_slot(0)).await;
        let live = live?;
        let result = op(live.conn.clone()).await;
        match &result {
            Ok(_) => self.give_back(live),
            // The idle ones were made before it and most likely dropped too (see `failed`).
            Err(err) if err.kind == ErrorKind::Connection => self.dedicated.lock().unwrap().clear(),
            Err(_) => {}
        }
        result
    }

    /// Sends `cmds` in one round trip on a blocking connection, written and read by the calling thread, when
    /// that thread waits for the call itself (a call of a sync client, inside [`SYNC_CALL`]; never a call on
    /// the asyncio clients' runtime, whose threads must not block, nor a call started ahead, whose caller
    /// goes on meanwhile): the reply then reaches the caller without the connection's task, its channels
    /// and the runtime's turns in between (about 10 µs of client CPU per single publish here, a tenth of
    /// its time). After a dropped connection or a wait cut short by a signal once `cmds` were written, the
    /// caller is told they may have run ([`Direct::Again`]): an idempotent call is made again the usual
    /// way, a claim first looks whether it was made.
    ///
    /// The keys left by [`Pool::delete_later`] go first, as in [`Pool::send_pipeline`], once `min_deletes` of
    /// them wait; the replies are `cmds`', error replies included, in order. Not tried before the pool's
    /// first connection has checked the server (see [`Pool::connect`]), nor when no blocking connection can
    /// be made (the usual way then connects, or says why it cannot).
    pub fn direct(&self, cmds: &[&Cmd], min_deletes: usize) -> Direct<Vec<Value>> {
        let sync_call = SYNC_CALL.try_with(|_| ()).is_ok();
        if !sync_call || self.direct_off.load(Ordering::Relaxed) || !self.version_checked.load(Ordering::Acquire) {
            return Direct::NothingDone;
        }
        // With `pool_size` threads in direct calls already, this one goes the usual way.
        let Some(idle) = self.direct.lock().unwrap().take(self.opts.pool_size) else {
            return Direct::NothingDone;
        };
        let Some(mut conn) = idle.or_else(|| self.connect_direct()) else {
            self.direct.lock().unwrap().total -= 1;
            return Direct::NothingDone;
        };
        let keys = self.take_delete_later(min_deletes);
        let (mut packed, skip) = if keys.is_empty() {
            (Vec::new(), 0)
        } else {
            let deletes = deletes_of(&keys);
            (deletes.get_packed_pipeline(), deletes.len())
        };
        for cmd in cmds {
            cmd.write_packed_command(&mut packed);
        }
        let replies = exchange(&mut conn, &packed, skip, cmds.len());
        self.unless_sent(&replies, keys);
        match replies {
            // Nothing ran: the usual way loads the scripts, or waits for the server to load its data.
            Ok(replies) if replies.iter().any(|r| is_noscript(r) || is_loading(r)) => {
                self.keep_direct(conn);
                Direct::NothingDone
            }
            Ok(replies) => {
                self.keep_direct(conn);
                Direct::Done(Ok(replies))
            }
            Err(e) => {
                self.direct.lock().unwrap().total -= 1;
                if e.is_timeout() {
                    Direct::Done(Err(self.map_err(e)))
                } else {
                    // Dropped, or a signal cut the wait short (the usual way's wait checks for it).
                    Direct::Again
                }
            }
        }
    }

    /// One script call by [`Pool::direct`]; an error reply becomes the error.
    pub fn direct_eval(&self, cmd: &Cmd, min_deletes: usize) -> Direct<Value> {
        match self.direct(&[cmd], min_deletes) {
            Direct::Done(replies) => Direct::Done(
                replies
                    .and_then(first_error)
                    .and_then(|mut replies| replies.pop().ok_or_else(|| Error::protocol("Redis sent no reply"))),
            ),
            Direct::Again => Direct::Again,
            Direct::NothingDone => Direct::NothingDone,
        }
    }

    /// A new blocking connection with the pool's timeouts and client name; None (and direct calls off
    /// until the next usual connection) when it cannot be made.
    fn connect_direct(&self) -> Option<redis::Connection> {
        let made = (|| {
            let mut conn = self.client.get_connection_with_timeout(self.opts.connect_timeout)?;
            conn.set_read_timeout(Some(self.opts.command_timeout))?;
            conn.set_write_timeout(Some(self.opts.command_timeout))?;
            if let Some(name) = &self.opts.client_name {
                redis::cmd("CLIENT").arg("SETNAME").arg(name).exec(&mut conn)?;
            }
            redis::RedisResult::Ok(conn)
        })();
        if made.is_err() {
            self.direct_off.store(true, Ordering::Relaxed);
        }
        made.ok()
    }

    fn keep_direct(&self, conn: redis::Connection) {
        self.direct.lock().unwrap().idle.push(conn);
    }

    /// Leaves `key` (a key that expires by itself, such as a publish record) for the client's next request to
    /// delete on its way, rather than spending a round trip of its own on its `DEL`. A single publish takes
    /// them along only once `MIN_DELETE_LATER` wait (see `rfq::publish_one`).
    pub fn delete_later(&self, key: String) {
        let mut keys = self.delete_later.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() < MAX_DELETE_LATER {
            keys.push(key);
        }
    }

    /// Closes the pool (as [`Pool::close`]) and returns the sending of the keys left by
    /// [`Pool::delete_later`], on a connection that was open (never a new one): a closing client awaits it.
    /// Best effort, and bounded by [`CLOSE_DELETE_WAIT`]: a key it misses expires.
    pub fn close_deleting(&self) -> impl Future<Output = ()> + Send + 'static {
        let keys = self.take_delete_later(1);
        let open = if keys.is_empty() {
            None
        } else {
            self.slots
                .iter()
                .find_map(|s| match s.conn.lock().unwrap().as_ref() {
                    Some((_, live)) if live.alive() => Some(live.conn.clone()),
                    _ => None,
                })
                .or_else(|| {
                    let idle = self.dedicated.lock().unwrap();
                    idle.iter().find(|live| live.alive()).map(|live| live.conn.clone())
                })
        };
        // The connection taken above outlives the pool's own handles, which go now.
        self.close();
        async move {
            if let Some(mut conn) = open {
                let pipe = deletes_of(&keys);
                let _ = tokio::time::timeout(CLOSE_DELETE_WAIT, conn.send_packed_commands(&pipe, 0, pipe.len())).await;
            }
        }
    }

    /// The keys left by [`Pool::delete_later`], now the caller's to delete (best effort: they expire), once at
    /// least `min` of them wait (none before).
    fn take_delete_later(&self, min: usize) -> Vec<String> {
        let mut keys = self.delete_later.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() < min {
            return Vec::new();
        }
        std::mem::take(&mut *keys)
    }

    /// Sends `pipe` (EVALSHA calls of the scripts in `ids`, one per command) in one round trip and returns
    /// the replies in order. Scripts missing from the server's cache are loaded and their calls resent;
    /// a cache flushed again between the load and the resend (SCRIPT FLUSH, a failover) gets another
    /// round, up to [`NOSCRIPT_ROUNDS`], the last of which sends EVAL with the source (it cannot meet
    /// NOSCRIPT). The first error reply, if any, becomes the error.
    pub async fn eval_pipe(
        &self,
        conn: &mut MultiplexedConnection,
        ids: &[scripts::Id],
        pipe: &Pipeline,
    ) -> Result<Vec<Value>> {
        self.eval_pipe_taking(conn, ids, pipe, 1).await
    }

    /// [`Pool::eval_pipe`] that takes the keys left by [`Pool::delete_later`] along only once `min_deletes`
    /// of them wait.
    async fn eval_pipe_taking(
        &self,
        conn: &mut MultiplexedConnection,
        ids: &[scripts::Id],
        pipe: &Pipeline,
        min_deletes: usize,
    ) -> Result<Vec<Value>> {
        let mut replies = self.send_pipeline_taking(conn, pipe, min_deletes).await?;
        let all: Vec<&Cmd> = pipe.cmd_iter().collect();
        for round in 0..NOSCRIPT_ROUNDS {
            let missing: Vec<usize> = (0..replies.len()).filter(|&i| is_noscript(&replies[i])).collect();
            if missing.is_empty() {
                break;
            }
            let mut load = Pipeline::new();
            let mut loaded: Vec<scripts::Id> = Vec::new();
            for &i in &missing {
                if !loaded.contains(&ids[i]) {
                    loaded.push(ids[i]);
                    load.add_command(scripts::load_cmd(ids[i].script()));
                }
            }
            first_error(self.send_pipeline(conn, &load).await?)?;
            let mut again = Pipeline::with_capacity(missing.len());
            for &i in &missing {
                if round + 1 == NOSCRIPT_ROUNDS {
                    again.add_command(scripts::eval_with_source(ids[i], all[i]));
                } else {
                    again.add_command(all[i].clone());
                }
            }
            for (&i, reply) in missing.iter().zip(self.send_pipeline(conn, &again).await?) {
                replies[i] = reply;
            }
        }
        first_error(replies)
    }

    /// One EVALSHA call (see [`Pool::eval_pipe`]).
    pub async fn eval(&self, conn: &mut MultiplexedConnection, id: scripts::Id, cmd: &Cmd) -> Result<Value> {
        self.eval_taking(conn, id, cmd, 1).await
    }

    /// [`Pool::eval`] that takes the keys left by [`Pool::delete_later`] along only once `min_deletes` of them
    /// wait (a single publish).
    pub async fn eval_taking(
        &self,
        conn: &mut MultiplexedConnection,
        id: scripts::Id,
        cmd: &Cmd,
        min_deletes: usize,
    ) -> Result<Value> {
        let mut pipe = Pipeline::with_capacity(1);
        pipe.add_command(cmd.clone());
        let mut replies = self.eval_pipe_taking(conn, &[id], &pipe, min_deletes).await?;
        replies.pop().ok_or_else(|| Error::protocol("Redis sent no reply"))
    }

    /// Sends `pipe` in one round trip; every reply, error replies included, in order. The keys left by
    /// [`Pool::delete_later`] go first, in the same round trip (see [`Pool::with_deletes`]).
    pub async fn send_pipeline(&self, conn: &mut MultiplexedConnection, pipe: &Pipeline) -> Result<Vec<Value>> {
        self.send_pipeline_taking(conn, pipe, 1).await
    }

    async fn send_pipeline_taking(
        &self,
        conn: &mut MultiplexedConnection,
        pipe: &Pipeline,
        min_deletes: usize,
    ) -> Result<Vec<Value>> {
        let replies = match self.with_deletes(pipe.cmd_iter(), min_deletes) {
            None => conn.send_packed_commands(pipe, 0, pipe.len()).await,
            Some((with, keys)) => {
                let sent = conn
                    .send_packed_commands(&with, with.len() - pipe.len(), pipe.len())
                    .await;
                self.unless_sent(&sent, keys);
                sent
            }
        }
        .map_err(|e| self.map_err(e))?;
        if replies.len() != pipe.len() {
            return Err(Error::protocol(format!(
                "Redis sent {} replies for {} commands",
                replies.len(),
                pipe.len()
            )));
        }
        Ok(replies)
    }

    /// Plain commands in one round trip on a shared connection; the first error reply becomes the error.
    pub async fn query_pipe(&self, conn: &mut MultiplexedConnection, pipe: &Pipeline) -> Result<Vec<Value>> {
        first_error(self.send_pipeline(conn, pipe).await?)
    }

    /// One plain command (with the keys left by [`Pool::delete_later`] ahead of it, as for a pipeline).
    pub async fn query(&self, conn: &mut MultiplexedConnection, cmd: &Cmd) -> Result<Value> {
        let reply = match self.with_deletes(std::iter::once(cmd), 1) {
            None => conn.send_packed_command(cmd).await,
            Some((with, keys)) => {
                let sent = conn.send_packed_commands(&with, with.len() - 1, 1).await;
                self.unless_sent(&sent, keys);
                sent.map(|mut replies| replies.pop().unwrap_or(Value::Nil))
            }
        }
        .map_err(|e| self.map_err(e))?;
        match reply {
            Value::ServerError(e) => Err(Error::server(e.code(), e.details().unwrap_or(""))),
            v => Ok(v),
        }
    }

    /// When at least `min` keys wait in [`Pool::delete_later`]: their `DEL` ([`deletes_of`]) followed by `cmds`,
    /// and the keys. The `DEL`'s reply is skipped (best effort: a key it misses expires, so its failure must
    /// not fail the request); the caller's own commands come after it in the same round trip, on the same
    /// connection, so the deletes cost no wait.
    fn with_deletes<'a>(&self, cmds: impl Iterator<Item = &'a Cmd>, min: usize) -> Option<(Pipeline, Vec<String>)> {
        let keys = self.take_delete_later(min);
        if keys.is_empty() {
            return None;
        }
        let mut with = deletes_of(&keys);
        for cmd in cmds {
            with.add_command(cmd.clone());
        }
        Some((with, keys))
    }

    /// After a request that carried `keys` (see [`Pool::with_deletes`]): when it failed (a dropped
    /// connection, a timeout), they are left for the next request again.
    fn unless_sent<T>(&self, sent: &redis::RedisResult<T>, keys: Vec<String>) {
        if sent.is_err() {
            for key in keys {
                self.delete_later(key);
            }
        }
    }
}

/// The retry policy of one call: LOADING is waited out (up to 10 s, backing off); after a dropped
/// connection the call is made once more when it is `idempotent`.
struct Retries {
    idempotent: bool,
    started: Instant,
    backoff: Duration,
    retried: bool,
}

impl Retries {
    fn new(idempotent: bool) -> Self {
        Self {
            idempotent,
            started: Instant::now(),
            backoff: Duration::from_millis(50),
            retried: false,
        }
    }

    /// Whether the call that failed with `err` is made again (after waiting, for LOADING); an error when
    /// the server is still loading after [`LOADING_WAIT`].
    async fn again(&mut self, pool: &Pool, err: &Error) -> Result<bool> {
        match err.kind {
            ErrorKind::Loading => {
                if self.started.elapsed() >= LOADING_WAIT {
                    return Err(Error::new(
                        ErrorKind::Connection,
                        format!(
                            "Redis at {} is loading its dataset (still after {} s)",
                            pool.shown_url(),
                            LOADING_WAIT.as_secs()
                        ),
                    ));
                }
                tokio::time::sleep(self.backoff).await;
                self.backoff = (self.backoff * 2).min(Duration::from_secs(1));
                Ok(true)
            }
            ErrorKind::Connection if self.idempotent && !self.retried => {
                self.retried = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Gives the connections' tasks a turn before a call that is not repeated after a drop. On the sync
/// clients' runtime nothing drives them between calls (see `bindings::runtime`): the first yield lets
/// the runtime poll for I/O, which wakes the tasks of connections with news, the second lets those
/// tasks run. A connection the server dropped meanwhile is then marked dead (see [`Live`]) and replaced
/// before the call is sent on it. Idempotent calls skip this: after a drop they are sent once more.
async fn settle() {
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
}

tokio::task_local! {
    /// Set around the future of a call that its caller's thread waits for, driving the sync clients'
    /// runtime itself (`bindings::runtime::wait`): its round trips may go through [`Pool::direct`]. Tasks
    /// it spawns, and calls started ahead, do not inherit it.
    pub static SYNC_CALL: ();
}

/// The blocking connections of [`Pool::direct`]: the idle ones, and how many there are in all (idle or in
/// a call); one dropped after an error no longer counts.
#[derive(Default)]
struct DirectConns {
    idle: Vec<redis::Connection>,
    total: usize,
}

impl DirectConns {
    /// An idle connection (`Some(Some(_))`); else, below `most`, leave to make a new one (`Some(None)`,
    /// counted from now: the caller uncounts it if it cannot be made); else None.
    fn take(&mut self, most: usize) -> Option<Option<redis::Connection>> {
        if let Some(conn) = self.idle.pop() {
            return Some(Some(conn));
        }
        (self.total < most).then(|| {
            self.total += 1;
            None
        })
    }

    /// Drops the idle connections (after a dropped connection, or on close); those in calls stay counted
    /// until their calls end.
    fn forget_idle(&mut self) {
        self.total -= self.idle.len();
        self.idle.clear();
    }
}

/// What [`Pool::direct`] came to.
pub enum Direct<T> {
    /// Not sent, or refused before it ran (NOSCRIPT, LOADING): the call is to be made the usual way.
    NothingDone,
    /// The call may have reached the server (and may yet run, after a signal: the server reads what was
    /// written before the connection's close); whether to make it again the usual way is the caller's call.
    Again,
    /// The call's result.
    Done(Result<T>),
}

/// Writes `packed` (`skip` + `count` commands) and reads their replies, those of the last `count` kept;
/// stops at the first failure (a timeout, a dropped connection, a signal), which leaves the connection's
/// replies out of step: the caller drops it.
fn exchange(conn: &mut redis::Connection, packed: &[u8], skip: usize, count: usize) -> redis::RedisResult<Vec<Value>> {
    conn.send_packed_command(packed)?;
    let mut replies = Vec::with_capacity(count);
    let mut read = 0;
    while read < skip + count {
        match conn.recv_response()? {
            // Out-of-band (RESP3 push): not a reply.
            Value::Push { .. } => continue,
            reply if read >= skip => replies.push(reply),
            _ => {}
        }
        read += 1;
    }
    Ok(replies)
}

fn is_loading(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.code() == "LOADING")
}

fn is_noscript(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.code() == "NOSCRIPT")
}

/// One `DEL` of all the keys (at most `MAX_DELETE_LATER`), as a pipeline the caller's commands follow: a key
/// costs the server 3,000 instructions in it against 5,600 in a `DEL` of its own (counted with callgrind). A
/// cluster client splits a `DEL` by slot itself (redis-rs routes it to every node holding a key).
fn deletes_of(keys: &[String]) -> Pipeline {
    let mut pipe = Pipeline::with_capacity(2);
    pipe.cmd("DEL").arg(keys);
    pipe
}

pub fn first_error(replies: Vec<Value>) -> Result<Vec<Value>> {
    if let Some(Value::ServerError(e)) = replies.iter().find(|v| matches!(v, Value::ServerError(_))) {
        return Err(Error::server(e.code(), e.details().unwrap_or("")));
    }
    Ok(replies)
}

/// A dedicated connection subscribed to one channel (see [`Pool::subscribe`]). Dropped without
/// [`Subscription::close`], the connection is simply closed.
pub struct Subscription<'a> {
    pool: &'a Pool,
    live: Live,
    notify: Arc<Notify>,
    channel: String,
}

impl Subscription<'_> {
    /// Waits up to `timeout` for a message on the channel; true if one came (or the connection dropped,
    /// so the caller looks again instead of sleeping on a dead subscription). A message that arrived
    /// since the last wait counts at once.
    pub async fn wait(&self, timeout: Duration) -> bool {
        if !self.live.alive() {
            tokio::time::sleep(timeout).await;
            return false;
        }
        tokio::time::timeout(timeout, self.notify.notified()).await.is_ok()
    }

    /// Forgets a notification that came before now (the caller is about to look anyway).
    pub fn drain(&self) {
        let _ = futures_util::FutureExt::now_or_never(self.notify.notified());
    }

    /// Unsubscribes and keeps the connection for later blocking calls.
    pub async fn close(mut self) {
        *self.live.listener.lock().unwrap() = None;
        if self.live.alive() && self.live.conn.unsubscribe(&self.channel).await.is_ok() {
            self.pool.give_back(self.live);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_policy_from_config_or_info() {
        let config = Value::Array(vec![
            Value::BulkString(b"maxmemory-policy".to_vec()),
            Value::BulkString(b"allkeys-lru".to_vec()),
        ]);
        assert_eq!(policy_of(&config).as_deref(), Some("allkeys-lru"));
        let info = Value::VerbatimString {
            format: redis::VerbatimFormat::Text,
            text: "# Memory\r\nused_memory:1\r\nmaxmemory_policy:volatile-lfu\r\n".into(),
        };
        assert_eq!(policy_of(&info).as_deref(), Some("volatile-lfu"));
        assert_eq!(policy_of(&Value::Nil), None);
    }

    #[test]
    fn direct_connections_stay_within_their_bound() {
        let mut conns = DirectConns::default();
        assert!(matches!(conns.take(2), Some(None)));
        assert!(matches!(conns.take(2), Some(None)));
        assert!(conns.take(2).is_none(), "a third thread goes the usual way");
        conns.total -= 1; // one of them could not be made, or was dropped after an error
        assert!(matches!(conns.take(2), Some(None)));
        conns.forget_idle();
        assert_eq!(conns.total, 2, "connections in calls stay counted");
    }

    #[test]
    fn warns_for_every_policy_but_noeviction() {
        assert!(eviction_warning("redis://h:1", "noeviction").is_none());
        let text = eviction_warning("redis://h:1", "allkeys-lru").unwrap();
        assert!(
            text.contains("maxmemory-policy allkeys-lru") && text.contains("noeviction"),
            "{text}"
        );
    }
}
