//! A throwaway single-member etcd per test, and the gateway calls the harness makes to it.
//!
//! `Etcd::start()` runs `/usr/bin/etcd` (override with `WIREBENCH_ETCD`) on two free loopback
//! ports with its data directory on tmpfs, waits until it has a leader, and kills it on drop.
//! The few gateway calls the tests need (status, range, put) go through `http_client`. The
//! command line, the spawning and the gateway helpers here serve `cluster` too.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;

use super::http_client;
use super::ports::free_ports;
use super::process::die_with_parent;

/// Where Debian's etcd-server package puts the binary.
const DEFAULT_ETCD: &str = "/usr/bin/etcd";
/// How long etcd gets to answer with a leader after spawning.
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts with fresh ports when etcd dies at startup (e.g. a port was taken in between).
pub(super) const START_ATTEMPTS: usize = 3;

/// The etcd binary; panics, saying how to install it, when there is none.
pub(super) fn etcd_binary() -> PathBuf {
    let path = std::env::var_os("WIREBENCH_ETCD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ETCD));
    if !path.is_file() {
        panic!(
            "etcd is not installed ({} not found): run `.ci/run` (it installs it) or \
             `apt-get install etcd-server`, or point WIREBENCH_ETCD at an etcd 3.4+ binary",
            path.display()
        );
    }
    path
}

/// A fresh data directory, on tmpfs where there is one.
pub(super) fn data_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix("wirebench-etcd-");
        b
    };
    if shm.is_dir()
        && let Ok(d) = builder.tempdir_in(shm)
    {
        return d;
    }
    builder
        .tempdir()
        .expect("create a temporary data directory")
}

/// The store revision, through a gateway call `call(path, body)` (a range's header.revision).
pub(super) fn revision_via(call: impl Fn(&str, &Value) -> Value) -> i64 {
    let v = call(
        "/v3/kv/range",
        &serde_json::json!({ "key": B64.encode([0u8]) }),
    );
    header_revision(&v)
}

/// Writes `key` = `value` through a gateway call; returns the revision it created.
pub(super) fn put_via(
    call: impl Fn(&str, &Value) -> Value,
    key: impl AsRef<[u8]>,
    value: impl AsRef<[u8]>,
) -> i64 {
    let body = serde_json::json!({
        "key": B64.encode(key.as_ref()),
        "value": B64.encode(value.as_ref()),
    });
    header_revision(&call("/v3/kv/put", &body))
}

/// A single-member etcd listening on loopback; killed (SIGKILL) and its data removed on drop.
pub struct Etcd {
    child: Option<Child>,
    client_port: u16,
    peer_port: u16,
    // Declared after `child` so the process is gone before its directory is removed.
    dir: tempfile::TempDir,
}

impl Etcd {
    /// Starts etcd and waits until it answers with a leader; panics (with etcd's log) if it
    /// does not within `READY_TIMEOUT`.
    pub fn start() -> Etcd {
        Etcd::start_listening_on("127.0.0.1")
    }

    /// `start()` with the client port listening on `ip` (`0.0.0.0`: every address, which a
    /// run through `--link` needs); the advertised URL stays 127.0.0.1.
    pub fn start_listening_on(ip: &str) -> Etcd {
        let bin = etcd_binary();
        let mut last_log = String::new();
        for _ in 0..START_ATTEMPTS {
            let (client_port, peer_port) = free_ports();
            let dir = data_dir();
            let child = spawn_etcd(&bin, dir.path(), client_port, peer_port, ip);
            let mut etcd = Etcd {
                child: Some(child),
                client_port,
                peer_port,
                dir,
            };
            match etcd.wait_ready(READY_TIMEOUT) {
                Ok(()) => return etcd,
                Err(Exited(status)) => {
                    // Most likely a port was taken between picking and binding: try new ones.
                    last_log = format!("etcd exited with {status} at startup:\n{}", etcd.log());
                }
                Err(TimedOut) => {
                    let log = etcd.log();
                    drop(etcd);
                    panic!(
                        "etcd did not become ready within {READY_TIMEOUT:?} on 127.0.0.1:{client_port}; \
                         its log:\n{log}"
                    );
                }
            }
        }
        panic!("etcd failed to start {START_ATTEMPTS} times; last attempt: {last_log}");
    }

    /// The client URL, as wirebench's `--endpoints` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    pub fn client_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The data directory (etcd's log is `etcd.log` in it).
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Everything etcd wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// The current store revision (header.revision of a range; etcd sends int64 as a string).
    pub fn revision(&self) -> i64 {
        revision_via(|path, body| self.call(path, body))
    }

    /// Writes `key` = `value` through the JSON gateway; returns the revision it created.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> i64 {
        put_via(|path, body| self.call(path, body), key, value)
    }

    /// Reads `key` through the JSON gateway; `None` when it does not exist.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<Vec<u8>> {
        let v = self.call(
            "/v3/kv/range",
            &serde_json::json!({ "key": B64.encode(key.as_ref()) }),
        );
        let kv = v.get("kvs")?.as_array()?.first()?;
        // An empty value is omitted from the JSON.
        let value = kv.get("value").and_then(Value::as_str).unwrap_or("");
        Some(B64.decode(value).expect("etcd returned invalid base64"))
    }

    /// Stops etcd (SIGSTOP) until the returned guard is dropped or resumed (SIGCONT): a stalled
    /// server whose kernel still accepts connections and buffers requests. The guard resumes it
    /// in every path, a panicking test included.
    pub fn pause(&self) -> Paused<'_> {
        self.signal(libc::SIGSTOP);
        Paused { etcd: self }
    }

    /// Sends `sig` to the etcd process (nothing when it is not running).
    pub fn signal(&self, sig: libc::c_int) {
        if let Some(child) = &self.child {
            let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
            // SAFETY: kill(2) with our own child's pid; no memory is involved.
            let rc = unsafe { libc::kill(pid, sig) };
            assert_eq!(
                rc,
                0,
                "kill({pid}, {sig}): {}",
                std::io::Error::last_os_error()
            );
        }
    }

    /// Kills etcd (SIGKILL) and reaps it; the data directory stays until drop.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data directory (after `stop()`, or kills the
    /// running one first) and waits until the member has a leader again, like `start()`.
    /// etcd's log is appended to, so `log()` keeps what the previous incarnation wrote.
    /// Panics (with etcd's log) if it does not come back within `READY_TIMEOUT`.
    pub fn restart(&mut self) {
        self.stop();
        let bin = etcd_binary();
        let mut last_log = String::new();
        for attempt in 0..START_ATTEMPTS {
            if attempt > 0 {
                // The ports cannot change: give whatever held one a moment to let go.
                std::thread::sleep(Duration::from_millis(200));
            }
            let log = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(self.dir.path().join("etcd.log"))
                .expect("open etcd.log");
            self.child = Some(spawn_etcd_logging_to(
                &bin,
                self.dir.path(),
                self.client_port,
                self.peer_port,
                log,
            ));
            match self.wait_ready(READY_TIMEOUT) {
                Ok(()) => return,
                Err(Exited(status)) => {
                    last_log = format!("etcd exited with {status} at restart:\n{}", self.log());
                }
                Err(TimedOut) => {
                    let log = self.log();
                    self.stop();
                    panic!(
                        "etcd did not become ready again within {READY_TIMEOUT:?} on \
                         127.0.0.1:{}; its log:\n{log}",
                        self.client_port
                    );
                }
            }
        }
        panic!("etcd failed to restart {START_ATTEMPTS} times; last attempt: {last_log}");
    }

    /// POSTs JSON to the gateway; panics unless the answer is 200 with a JSON body.
    pub fn call(&self, path: &str, body: &Value) -> Value {
        gateway_call(self.client_addr(), path, body)
            .unwrap_or_else(|e| panic!("{e}\netcd log:\n{}", self.log()))
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(Exited(status));
            }
            if self.has_leader() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TimedOut);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Maintenance status answers 200 and names a leader.
    fn has_leader(&self) -> bool {
        let Ok((200, body)) = http_client::post(self.client_addr(), "/v3/maintenance/status", "{}")
        else {
            return false;
        };
        let Ok(v) = serde_json::from_slice::<Value>(&body) else {
            return false;
        };
        matches!(v.get("leader").and_then(Value::as_str), Some(l) if !l.is_empty() && l != "0")
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A stopped (SIGSTOP) etcd; dropping it resumes the process (SIGCONT).
pub struct Paused<'a> {
    etcd: &'a Etcd,
}

impl Paused<'_> {
    pub fn resume(self) {}
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        // No assert here: a panic while unwinding would abort the test binary.
        if let Some(child) = &self.etcd.child
            && let Ok(pid) = libc::pid_t::try_from(child.id())
        {
            // SAFETY: kill(2) with our own child's pid; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }
}

/// Why a start did not come up.
pub(super) enum NotReady {
    Exited(std::process::ExitStatus),
    TimedOut,
}
pub(super) use NotReady::{Exited, TimedOut};

/// POSTs JSON to the gateway at `addr`; the body of a 200 answer, parsed.
pub(super) fn gateway_call(addr: SocketAddr, path: &str, body: &Value) -> Result<Value, String> {
    let (status, resp) = http_client::post(addr, path, &body.to_string())
        .map_err(|e| format!("POST {path} to etcd failed: {e}"))?;
    if status != 200 {
        return Err(format!(
            "POST {path} answered {status}: {}",
            String::from_utf8_lossy(&resp)
        ));
    }
    serde_json::from_slice(&resp).map_err(|e| {
        format!(
            "POST {path}: body is not JSON ({e}): {}",
            String::from_utf8_lossy(&resp)
        )
    })
}

fn spawn_etcd(bin: &Path, dir: &Path, client: u16, peer: u16, ip: &str) -> Child {
    let log = std::fs::File::create(dir.join("etcd.log")).expect("create etcd.log");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut cmd = etcd_command(bin, dir, "t", client, peer, &format!("t={peer_url}"), log);
    // a lone member: a short election timeout only shortens the first election
    cmd.args(["--heartbeat-interval", "20", "--election-timeout", "200"]);
    // the last --listen-client-urls counts
    cmd.args(["--listen-client-urls", &format!("http://{ip}:{client}")]);
    spawn(cmd, bin)
}

/// Spawns etcd with both of its output streams going to `log`.
fn spawn_etcd_logging_to(
    bin: &Path,
    dir: &Path,
    client: u16,
    peer: u16,
    log: std::fs::File,
) -> Child {
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut cmd = etcd_command(bin, dir, "t", client, peer, &format!("t={peer_url}"), log);
    // a lone member: a short election timeout only shortens the first election
    cmd.args(["--heartbeat-interval", "20", "--election-timeout", "200"]);
    spawn(cmd, bin)
}

/// An etcd command for member `name` on loopback `client` and `peer` ports, both output
/// streams going to `log`; the caller adds cluster and timing flags.
pub(super) fn etcd_command(
    bin: &Path,
    dir: &Path,
    name: &str,
    client: u16,
    peer: u16,
    initial_cluster: &str,
    log: std::fs::File,
) -> Command {
    let log2 = log.try_clone().expect("dup etcd.log");
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut cmd = Command::new(bin);
    cmd.arg("--name")
        .arg(name)
        .arg("--data-dir")
        .arg(dir)
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", initial_cluster])
        // zap honours --log-level (the 3.4 default, capnslog, still prints raft at INFO)
        .args(["--logger", "zap", "--log-level", "error"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    cmd
}

/// Spawns an etcd command that dies with the spawning thread.
pub(super) fn spawn(mut cmd: Command, bin: &Path) -> Child {
    // If the test process dies without running Drop (killed by a signal, aborted), take etcd
    // with it. PR_SET_PDEATHSIG fires when the spawning *thread* exits; every test starts and
    // drops its etcd on its own thread, so that is never earlier than Drop.
    die_with_parent(&mut cmd);
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

fn header_revision(v: &Value) -> i64 {
    let rev = &v["header"]["revision"];
    match rev {
        Value::String(s) => s
            .parse()
            .unwrap_or_else(|e| panic!("header.revision {s:?}: {e}")),
        Value::Number(n) => n.as_i64().expect("header.revision is an int64"),
        // proto3 JSON omits zero values
        Value::Null => 0,
        other => panic!("unexpected header.revision {other}"),
    }
}
