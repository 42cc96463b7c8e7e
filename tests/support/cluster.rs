//! A 3-member etcd cluster per test (m1..m3 on loopback, data on tmpfs) that elects a leader
//! among its members; started, called and logged like `etcd::Etcd`, with whose command line,
//! spawning and gateway helpers it is built.

use std::net::SocketAddr;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::etcd::{
    Exited, NotReady, READY_TIMEOUT, START_ATTEMPTS, TimedOut, data_dir, etcd_binary, etcd_command,
    gateway_call, put_via, revision_via, spawn,
};
use super::http_client;
use super::ports::free_port_list;

/// Members of a test cluster.
const CLUSTER_SIZE: usize = 3;
/// Raft timing of test clusters (ms): a quick first election, yet enough slack that a busy
/// machine does not trigger a new one in the middle of a test.
const CLUSTER_HEARTBEAT_MS: &str = "50";
const CLUSTER_ELECTION_MS: &str = "500";
/// Raft timing of the failover tests (ms): etcd's default election timeout, so a lost leader is
/// noticed as late as in a real cluster, with a heartbeat near loopback's round trip (etcd's
/// tuning advice). At the default 100 ms heartbeat the election's randomised timeout has ten
/// steps, the two survivors often stand at once and split the vote, and the test would wait
/// for etcd's second or third election.
const FAILOVER_HEARTBEAT_MS: &str = "10";
const FAILOVER_ELECTION_MS: &str = "1000";

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
        Cluster::start_timed(CLUSTER_HEARTBEAT_MS, CLUSTER_ELECTION_MS)
    }

    /// `start` with etcd's default election timeout (1 s) and a 10 ms heartbeat.
    pub fn start_failover_timing() -> Cluster {
        Cluster::start_timed(FAILOVER_HEARTBEAT_MS, FAILOVER_ELECTION_MS)
    }

    fn start_timed(heartbeat_ms: &str, election_ms: &str) -> Cluster {
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
                        .args(["--heartbeat-interval", heartbeat_ms])
                        .args(["--election-timeout", election_ms]);
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

    /// Kills member `i` (SIGKILL) and reaps it.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The index of the member that leads among those still running, once they agree on one
    /// that answers; panics if they do not within `READY_TIMEOUT`.
    pub fn live_leader(&self) -> usize {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let live: Vec<(usize, (u64, u64))> = (0..self.members.len())
                .filter(|&i| self.members[i].child.is_some())
                .filter_map(|i| member_status(self.client_addr(i)).map(|s| (i, s)))
                .collect();
            if let Some(&(_, (_, leader))) = live.first()
                && leader != 0
                && live.iter().all(|(_, (_, l))| *l == leader)
                && let Some(&(i, _)) = live.iter().find(|(_, (id, _))| *id == leader)
            {
                return i;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the live members do not agree on a leader; logs:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The current store revision through member `i`'s gateway.
    pub fn revision_at(&self, i: usize) -> i64 {
        revision_via(|path, body| self.call(i, path, body))
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
    let Ok((200, body)) = http_client::post(addr, "/v3/maintenance/status", "{}") else {
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
