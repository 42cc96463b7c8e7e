//! Test support: a throwaway single-member etcd per test, and helpers to run the wirebench binary.
//!
//! `Etcd::start()` runs `/usr/bin/etcd` (override with `WIREBENCH_ETCD`) on two free loopback
//! ports with its data directory on tmpfs, waits until it has a leader, and kills it on drop.
//! `Cluster::start()` does the same for three members that elect a leader among themselves.
//! The few gateway calls the tests need (status, range, put) are hand-written HTTP/1.1 over
//! `std::net::TcpStream`, so the harness shares no code with the tool under test.
//! `seccomp::deny_syscalls` makes chosen syscalls fail in a child, for the paths that only
//! unprivileged or containerised runs would otherwise take.

#![allow(dead_code)] // each test binary uses a different subset

pub mod capture;
pub mod seccomp;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;

/// Where Debian's etcd-server package puts the binary.
const DEFAULT_ETCD: &str = "/usr/bin/etcd";
/// How long etcd gets to answer with a leader after spawning.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts with fresh ports when etcd dies at startup (e.g. a port was taken in between).
const START_ATTEMPTS: usize = 3;
/// Socket timeout for the harness's own gateway calls.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound for one run of the wirebench binary in tests.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn etcd_binary() -> PathBuf {
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

/// Two distinct free loopback ports (both listeners are held until both are known).
fn free_ports() -> (u16, u16) {
    let ports = free_port_list(2);
    (ports[0], ports[1])
}

/// `n` distinct free loopback ports (every listener is held until all are known).
fn free_port_list(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// A port on which nothing listens (at the time of the call).
pub fn unused_port() -> u16 {
    free_ports().0
}

fn data_dir() -> tempfile::TempDir {
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
fn revision_via(call: impl Fn(&str, &Value) -> Value) -> i64 {
    let v = call(
        "/v3/kv/range",
        &serde_json::json!({ "key": B64.encode([0u8]) }),
    );
    header_revision(&v)
}

/// Writes `key` = `value` through a gateway call; returns the revision it created.
fn put_via(
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
        let bin = etcd_binary();
        let mut last_log = String::new();
        for _ in 0..START_ATTEMPTS {
            let (client_port, peer_port) = free_ports();
            let dir = data_dir();
            let child = spawn_etcd(&bin, dir.path(), client_port, peer_port);
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
    fn call(&self, path: &str, body: &Value) -> Value {
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
        let Ok((200, body)) = http_post(self.client_addr(), "/v3/maintenance/status", "{}") else {
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

enum NotReady {
    Exited(std::process::ExitStatus),
    TimedOut,
}
use NotReady::{Exited, TimedOut};

/// POSTs JSON to the gateway at `addr`; the body of a 200 answer, parsed.
fn gateway_call(addr: SocketAddr, path: &str, body: &Value) -> Result<Value, String> {
    let (status, resp) = http_post(addr, path, &body.to_string())
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

fn spawn_etcd(bin: &Path, dir: &Path, client: u16, peer: u16) -> Child {
    let log = std::fs::File::create(dir.join("etcd.log")).expect("create etcd.log");
    spawn_etcd_logging_to(bin, dir, client, peer, log)
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
fn etcd_command(
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
fn spawn(mut cmd: Command, bin: &Path) -> Child {
    // If the test process dies without running Drop (killed by a signal, aborted), take etcd
    // with it. PR_SET_PDEATHSIG fires when the spawning *thread* exits; every test starts and
    // drops its etcd on its own thread, so that is never earlier than Drop.
    die_with_parent(&mut cmd);
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

/// Members of a test cluster.
const CLUSTER_SIZE: usize = 3;
/// Raft timing of test clusters (ms): a quick first election, yet enough slack that a busy
/// machine does not trigger a new one in the middle of a test.
const CLUSTER_HEARTBEAT_MS: &str = "50";
const CLUSTER_ELECTION_MS: &str = "500";

/// One member of a `Cluster`.
struct Member {
    child: Option<Child>,
    client_port: u16,
    /// its id as etcd reports it (known once the cluster is ready)
    id: u64,
    // Declared after `child` so the process is gone before its directory is removed.
    dir: tempfile::TempDir,
}

/// A 3-member etcd cluster (m1..m3) on loopback, data on tmpfs; every member is killed
/// (SIGKILL) and its data removed on drop.
pub struct Cluster {
    members: Vec<Member>,
}

impl Cluster {
    /// Starts the three members at once and waits until all of them name the same leader;
    /// panics (with their logs) if they do not within `READY_TIMEOUT`.
    pub fn start() -> Cluster {
        let bin = etcd_binary();
        let mut last_log = String::new();
        for attempt in 0..START_ATTEMPTS {
            let ports = free_port_list(2 * CLUSTER_SIZE);
            let (client_ports, peer_ports) = ports.split_at(CLUSTER_SIZE);
            let initial_cluster = peer_ports
                .iter()
                .enumerate()
                .map(|(i, p)| format!("m{}=http://127.0.0.1:{p}", i + 1))
                .collect::<Vec<_>>()
                .join(",");
            let token = format!(
                "wirebench-test-{}-{}-{attempt}",
                std::process::id(),
                client_ports[0]
            );
            let members = (0..CLUSTER_SIZE)
                .map(|i| {
                    let dir = data_dir();
                    let log = std::fs::File::create(dir.path().join("etcd.log"))
                        .expect("create etcd.log");
                    let mut cmd = etcd_command(
                        &bin,
                        dir.path(),
                        &format!("m{}", i + 1),
                        client_ports[i],
                        peer_ports[i],
                        &initial_cluster,
                        log,
                    );
                    cmd.args(["--initial-cluster-state", "new"])
                        .args(["--initial-cluster-token", &token])
                        .args(["--heartbeat-interval", CLUSTER_HEARTBEAT_MS])
                        .args(["--election-timeout", CLUSTER_ELECTION_MS]);
                    Member {
                        child: Some(spawn(cmd, &bin)),
                        client_port: client_ports[i],
                        id: 0,
                        dir,
                    }
                })
                .collect();
            let mut cluster = Cluster { members };
            match cluster.wait_ready(READY_TIMEOUT) {
                Ok(()) => return cluster,
                Err(Exited(status)) => {
                    // Most likely a port was taken between picking and binding: try new ones.
                    last_log = format!(
                        "a member exited with {status} at startup:\n{}",
                        cluster.logs()
                    );
                }
                Err(TimedOut) => {
                    let logs = cluster.logs();
                    drop(cluster);
                    panic!(
                        "the etcd cluster did not agree on a leader within {READY_TIMEOUT:?}; \
                         the members' logs:\n{logs}"
                    );
                }
            }
        }
        panic!("the etcd cluster failed to start {START_ATTEMPTS} times; last attempt: {last_log}");
    }

    /// The client URLs, one per member, in member order (m1, m2, m3).
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.members.len()).map(|i| self.endpoint(i)).collect()
    }

    /// Member `i`'s client URL.
    pub fn endpoint(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.members[i].client_port)
    }

    /// All client URLs as wirebench's `--endpoints` takes them (comma-separated).
    pub fn endpoints_arg(&self) -> String {
        self.endpoints().join(",")
    }

    pub fn client_addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.members[i].client_port))
    }

    /// Member `i`'s id, as its status reports it.
    pub fn member_id(&self, i: usize) -> u64 {
        self.members[i].id
    }

    /// The index of the member that leads now, by the members' own statuses (retried while
    /// they disagree, e.g. during an election); panics if they do not agree within
    /// `READY_TIMEOUT`.
    pub fn leader(&self) -> usize {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(leader) = self.agreed_leader() {
                return leader;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the etcd members do not agree on a leader; their logs:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The current store revision (through member m1's gateway).
    pub fn revision(&self) -> i64 {
        revision_via(|path, body| self.call(0, path, body))
    }

    /// Writes `key` = `value` through member m1's gateway; returns the revision it created.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> i64 {
        put_via(|path, body| self.call(0, path, body), key, value)
    }

    /// POSTs JSON to member `i`'s gateway; panics (with the logs) unless the answer is 200
    /// with a JSON body.
    pub fn call(&self, i: usize, path: &str, body: &Value) -> Value {
        gateway_call(self.client_addr(i), path, body)
            .unwrap_or_else(|e| panic!("{e}\nthe members' logs:\n{}", self.logs()))
    }

    /// Everything member `i` wrote to stdout and stderr so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.members[i].dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Every member's log, each under a `--- m1 ---` line.
    fn logs(&self) -> String {
        (0..self.members.len())
            .map(|i| format!("--- m{} ---\n{}", i + 1, self.log(i)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// (member id, leader) of every member, or `None` if one does not answer.
    fn statuses(&self) -> Option<Vec<(u64, u64)>> {
        (0..self.members.len())
            .map(|i| member_status(self.client_addr(i)))
            .collect()
    }

    /// The index of the leader every member names, if they all name the same known member.
    fn agreed_leader(&self) -> Option<usize> {
        let statuses = self.statuses()?;
        let leader = statuses.first()?.1;
        if leader == 0 || statuses.iter().any(|&(_, l)| l != leader) {
            return None;
        }
        statuses.iter().position(|&(id, _)| id == leader)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + limit;
        loop {
            for m in &mut self.members {
                if let Some(child) = m.child.as_mut()
                    && let Ok(Some(status)) = child.try_wait()
                {
                    m.child = None;
                    return Err(Exited(status));
                }
            }
            if self.agreed_leader().is_some()
                && let Some(statuses) = self.statuses()
            {
                for (m, (id, _)) in self.members.iter_mut().zip(statuses) {
                    m.id = id;
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TimedOut);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Kill them all first, then reap: no member outlives the others by a reap's wait.
        let mut children: Vec<Child> = self
            .members
            .iter_mut()
            .filter_map(|m| m.child.take())
            .collect();
        for c in &mut children {
            let _ = c.kill();
        }
        for c in &mut children {
            let _ = c.wait();
        }
    }
}

/// (header.member_id, leader) from `/v3/maintenance/status` (uint64 as decimal strings).
fn member_status(addr: SocketAddr) -> Option<(u64, u64)> {
    let Ok((200, body)) = http_post(addr, "/v3/maintenance/status", "{}") else {
        return None;
    };
    let v: Value = serde_json::from_slice(&body).ok()?;
    let id = v["header"]["member_id"].as_str()?.parse().ok()?;
    let leader = v
        .get("leader")
        .and_then(Value::as_str)
        .map_or(Some(0), |s| s.parse().ok())?;
    Some((id, leader))
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

/// One HTTP/1.1 POST on a fresh connection (`Connection: close`); returns status and body.
fn http_post(addr: SocketAddr, path: &str, body: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    // No shutdown(Write) here: Go's server takes a half-close as the client going away and
    // cancels the request (408 "context canceled"). `Connection: close` ends the response.
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_response(&raw).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "malformed HTTP response: {:?}",
                String::from_utf8_lossy(&raw)
            ),
        )
    })
}

fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let rest = &raw[end + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().ok()?);
        }
    }
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        rest.get(..n)?.to_vec()
    } else {
        rest.to_vec()
    };
    Some((status, body))
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_line = std::str::from_utf8(&rest[..eol]).ok()?;
        let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// Makes a child process die (SIGKILL) when the thread that spawned it exits, so a test that
/// dies without running Drop leaves no server or capture behind.
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) run between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() == 1 {
                // The parent already died between fork and prctl.
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// The wirebench binary built for these tests.
pub fn wirebench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wirebench"))
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// the child's user + system CPU over its whole life (wait4's rusage), when known
    pub cpu: Option<Duration>,
}

impl Run {
    /// stderr without its final newline, split into lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Runs wirebench with `args`, no stdin, killing it if it takes longer than `limit`.
pub fn run_bounded(args: &[&str], limit: Duration) -> Run {
    let mut cmd = wirebench();
    cmd.args(args);
    run_command(cmd, limit)
}

/// Runs a prepared command with piped output, killing it after `limit` (and then panicking).
// The child is reaped with wait4 (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn run_command(mut cmd: Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wirebench");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    // Reaped with wait4, for the child's CPU time (std's Child has no rusage).
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let (code, cpu) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain old data that wait4 fills in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to a c_int and a rusage we own; WNOHANG never blocks.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        assert!(rc >= 0, "wait4: {}", std::io::Error::last_os_error());
        if rc == pid {
            let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            break (code, tv(ru.ru_utime) + tv(ru.ru_stime));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err_reader.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not finish within {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    Run {
        code,
        stdout,
        stderr,
        elapsed,
        cpu: Some(cpu),
    }
}

/// Runs wirebench with `args` plus `--format json`; asserts exit 0 and returns the report.
pub fn run_json(args: &[&str]) -> Value {
    run_json_within(args, RUN_TIMEOUT)
}

/// `run_json`, failing the test if the run takes longer than `limit` (the process is killed).
pub fn run_json_within(args: &[&str], limit: Duration) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json"]);
    let run = run_bounded(&all, limit);
    assert_eq!(
        run.code,
        Some(0),
        "wirebench {} exited with {:?}\nstderr:\n{}\nstdout:\n{}",
        all.join(" "),
        run.code,
        run.stderr,
        run.stdout
    );
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "wirebench {}: stdout is not JSON ({e}):\n{}",
            all.join(" "),
            run.stdout
        )
    })
}

/// The run for `proto` ("http" or "grpc") in a report.
pub fn proto_run<'a>(report: &'a Value, proto: &str) -> &'a Value {
    report["runs"]
        .as_array()
        .expect("runs[] in the report")
        .iter()
        .find(|r| r["proto"] == proto)
        .unwrap_or_else(|| panic!("no {proto} run in the report: {report:#}"))
}

/// A non-negative integer field, with the report in the panic message.
pub fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not an unsigned integer in {v:#}"))
}

/// A number field, with the report in the panic message.
pub fn f64_at(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} is not a number in {v:#}"))
}

/// How long `wirebench serve` gets to print its "listening on" line.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);

/// `wirebench serve` on an ephemeral loopback port; SIGKILLed and reaped on drop.
pub struct ServeProcess {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl ServeProcess {
    pub fn start(extra: &[&str]) -> ServeProcess {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wirebench"));
        cmd.args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("spawn wirebench serve");

        // Drain stderr for the whole life of the server (so it never blocks on a full pipe),
        // keeping it for failure messages and handing each line to the waiter below.
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let pipe = child.stderr.take().unwrap();
        let log = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
                let _ = tx.send(line);
            }
        });

        let deadline = Instant::now() + LISTEN_TIMEOUT;
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = parse_listening(&line) {
                        break addr;
                    }
                }
                Err(e) => {
                    let _ = child.kill();
                    let status = child.wait();
                    panic!(
                        "wirebench serve {extra:?} printed no \"listening on ADDR\" line \
                         ({e}; exit: {status:?}); stderr:\n{}",
                        stderr.lock().unwrap()
                    );
                }
            }
        };
        ServeProcess {
            child,
            addr,
            stderr,
        }
    }

    pub fn target(&self) -> String {
        self.addr.to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) the server process: a stalled server.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} {}", self.child.id());
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// "wirebench serve: listening on 127.0.0.1:NNNNN (gRPC ...)" -> the address.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.split_once("listening on ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}
