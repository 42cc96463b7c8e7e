//! Runs that survive a member's loss, on a 3-member etcd cluster with etcd's default election
//! timeout (1 s) and a 10 ms heartbeat: the leader (or a follower) is SIGKILLed a third into a
//! 9-second put run; the clients move to the member the cluster names, the failover is
//! in the report, `--verify` finds every acknowledged put in etcd's history, and the revision
//! accounting holds: ok ≤ revision delta ≤ ok + outcome unknown.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Cluster, Run, proto_run, report_of, run_bounded_on_thread, u64_at};

/// Long enough after the kill for an election with a split vote: etcd's followers notice a lost
/// leader after 1-2 s (the randomised election timeout) and a split vote costs another 1-2 s;
/// with 6 s runs killed at 2.3 s, a run sometimes ended before the cluster had a leader again.
const RUN: &str = "9s";
/// A third of the run, plus the setup before the start line.
const KILL_AFTER: Duration = Duration::from_millis(3000);

/// The cluster's members serialize: each test starts three etcd processes.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

enum Victim {
    Leader,
    Follower,
}

/// Runs wirebench with `args`, SIGKILLs member `killed` of `cluster` `KILL_AFTER` in, and
/// waits for the run (at most a minute).
fn run_through_a_kill(cluster: &mut Cluster, killed: usize, args: &[&str]) -> Run {
    let started = Instant::now();
    let run = run_bounded_on_thread(args, Duration::from_secs(60));
    std::thread::sleep(KILL_AFTER.saturating_sub(started.elapsed()));
    cluster.kill(killed);
    run.join().expect("the run's thread")
}

/// Runs a put load against `cluster` over `proto` with `target`, kills the victim a third of
/// the way in; returns the report, the killed member's URL and the revision delta.
fn put_through_a_kill(proto: &str, target: &str, victim: Victim) -> (Value, String, String, i64) {
    let mut cluster = Cluster::start_failover_timing();
    let leader = cluster.leader();
    let killed = match victim {
        Victim::Leader => leader,
        Victim::Follower => (leader + 1) % 3,
    };
    let witness = (killed + 2) % 3;
    let before = cluster.revision_at(witness);
    let endpoints = cluster.endpoints_arg();
    let run = run_through_a_kill(
        &mut cluster,
        killed,
        &[
            "etcd",
            "put",
            "--endpoints",
            &endpoints,
            "--target",
            target,
            "--proto",
            proto,
            "-c",
            "9",
            "-z",
            RUN,
            "--timeout",
            "1s",
            "--key-space-size",
            "1000",
            "--verify",
            "--format",
            "json",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let new_leader = cluster.live_leader();
    let delta = cluster.revision_at(witness) - before;
    (
        report_of(&run),
        cluster.endpoint(killed),
        cluster.endpoint(new_leader),
        delta,
    )
}

/// The checks every scenario shares: one failover off the killed member, puts resumed in time,
/// nothing lost, the revisions accounted for, the run on time.
fn check(r: &Value, killed: &str, delta: i64, what: &str) -> Value {
    let events = r["failover"]["events"].as_array().expect("failover events");
    let e = events
        .iter()
        .find(|e| e["from"] == killed)
        .unwrap_or_else(|| panic!("{what}: no failover off {killed}: {:#}", r["failover"]));
    assert_ne!(e["to"], killed, "{what}");
    let first_failure = e["first_failure_s"].as_f64().unwrap();
    let moved = e["moved_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: the clients never moved: {:#}", r["failover"]));
    let first_success = e["first_success_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no success after the move: {e}"));
    // Puts resume within 300 ms of the last re-discovery that found no leader: the rest of the
    // wait was etcd's election. An election takes 1-2 s (the randomised timeout), and a split
    // vote another 1-2 s (seen once: puts back 2.96 s after the first failure): within 2.5 s of the
    // first failure when the first re-discovery already found a leader, within 5 s when the
    // clients had to wait for one.
    let gap = first_success - first_failure;
    let until = e["unresolved_until_s"].as_f64();
    let bound = if until.is_some() { 5.0 } else { 2.5 };
    assert!(
        gap <= bound,
        "{what}: first failure {first_failure}, moved {moved}, first success {first_success}: {e}"
    );
    if let Some(until) = until {
        assert!(
            first_failure <= until && until <= moved && first_success - until <= 0.3,
            "{what}: the last re-discovery without a leader at {until}: {e}"
        );
    }
    let s = &r["summary"];
    let ok = u64_at(s, "/ok") as i64;
    let unknown = u64_at(s, "/outcome_unknown") as i64;
    assert!(
        ok <= delta && delta <= ok + unknown,
        "{what}: {ok} acknowledged, revision delta {delta}, {unknown} outcome unknown"
    );
    let v = &r["verify"];
    assert_eq!(u64_at(v, "/lost"), 0, "{what}: {v}");
    assert_eq!(u64_at(v, "/checked") as i64, ok, "{what}");
    let total = s["total_s"].as_f64().unwrap();
    assert!(
        (9.0..10.5).contains(&total),
        "{what}: the run took {total} s"
    );
    e.clone()
}

#[test]
fn leader_killed_mid_run_the_clients_follow_the_new_leader() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for proto in ["http", "grpc"] {
        // a cluster that elects no new leader before the run ends (seen once on a loaded
        // machine: both members at the old term, no leader, for the six seconds left) tests
        // etcd, not the clients: that scenario runs again once, on a fresh cluster
        for attempt in 1..=2 {
            let (report, killed, new_leader, delta) =
                put_through_a_kill(proto, "leader", Victim::Leader);
            let r = proto_run(&report, proto);
            if attempt == 1 && no_election(r) {
                eprintln!(
                    "{proto}: no leader elected during the run: {:#}",
                    r["failover"]
                );
                continue;
            }
            let e = check(r, &killed, delta, proto);
            assert_eq!(e["to"], new_leader.as_str(), "{proto}: {e}");
            break;
        }
    }
}

/// Whether the run ended with its clients still waiting for an election: no move off the
/// killed member, and the last re-discovery found no leader.
fn no_election(r: &Value) -> bool {
    let f = &r["failover"];
    let unmoved = f["events"]
        .as_array()
        .is_some_and(|es| es.iter().any(|e| e["moved_s"].is_null()));
    unmoved
        && f["last_rediscovery_error"]
            .as_str()
            .is_some_and(|e| e.contains("no leader yet"))
}

#[test]
fn follower_killed_under_target_all_its_clients_move_to_the_live_members() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for proto in ["http", "grpc"] {
        let (report, killed, _, delta) = put_through_a_kill(proto, "all", Victim::Follower);
        let r = proto_run(&report, proto);
        check(r, &killed, delta, proto);
        // the other members' clients never stopped
        let rows = r["per_endpoint"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        for row in rows.iter().filter(|row| row["endpoint"] != killed.as_str()) {
            assert_eq!(u64_at(row, "/failed"), 0, "{proto}: {row}");
        }
    }
}

/// A watch run over `proto` on every member (stream i on endpoint i, the puts on the first),
/// endpoint `victim` (a follower) SIGKILLed a third of the way into the puts: its stream moves
/// to a live member and its watchers are created again from the revision after their last
/// event, the puts move too when they were on it, and still no event is missing or duplicated.
fn watch_through_a_kill(proto: &str, victim: usize) {
    let mut cluster = Cluster::start_failover_timing();
    let leader = cluster.leader();
    // the followers first: neither kill makes the cluster elect
    let order = [(leader + 1) % 3, (leader + 2) % 3, leader];
    let killed = order[victim];
    let endpoints: Vec<String> = order.iter().map(|&i| cluster.endpoint(i)).collect();
    let endpoints = endpoints.join(",");
    let run = run_through_a_kill(
        &mut cluster,
        killed,
        &[
            "etcd",
            "watch",
            "--endpoints",
            &endpoints,
            "--proto",
            proto,
            "--watchers",
            "6",
            "--streams",
            "3",
            "--conns",
            "3",
            "--put-total",
            "3000",
            "--put-rate",
            "500",
            "--put-clients",
            "4",
            "--put-timeout",
            "1s",
            "--timeout",
            "10s",
            "--format",
            "json",
        ],
    );
    let what = format!("{proto}, endpoint {victim} killed");
    assert_eq!(run.code, Some(0), "{what}: {}", run.stderr);
    let report = report_of(&run);
    let r = &report["runs"][0];
    let killed_url = cluster.endpoint(killed);
    assert_eq!(u64_at(r, "/missing"), 0, "{what}: {r:#}");
    assert_eq!(u64_at(r, "/duplicated"), 0, "{what}: {r:#}");
    // stream `victim` (watchers victim and victim + 3) was on the killed member: it moved,
    // once, and both its watchers were created again
    let moves = r["stream_moves"].as_array().expect("stream moves");
    assert_eq!(moves.len(), 1, "{what}: {moves:#?}");
    let m = &moves[0];
    assert_eq!(m["from"], killed_url.as_str(), "{what}: {m}");
    assert_ne!(m["to"], killed_url.as_str(), "{what}: {m}");
    assert_eq!(u64_at(m, "/stream"), victim as u64, "{what}: {m}");
    assert!(m["recreated_after_ms"].as_f64().is_some(), "{what}: {m}");
    assert_eq!(u64_at(r, "/recreated_watchers"), 2, "{what}: {r:#}");
    // every watcher, moved or not, saw every acknowledged put after the kill as well
    let puts = &r["puts"];
    let ok = u64_at(puts, "/ok");
    assert!(ok > 2000, "{what}: {puts:#}");
    assert_eq!(u64_at(r, "/expected_events"), 6 * ok, "{what}: {r:#}");
    let moved = puts["failover"]["events"].as_array().expect("put failover");
    if victim == 0 {
        assert!(
            moved.iter().any(
                |e| e["from"] == killed_url.as_str() && e["first_success_s"].as_f64().is_some()
            ),
            "{what}: {:#}",
            puts["failover"]
        );
    } else {
        // the puts never stopped: the killed member's stream had events to catch up on
        assert!(moved.is_empty(), "{what}: {:#}", puts["failover"]);
        assert_eq!(u64_at(puts, "/failed"), 0, "{what}: {puts:#}");
    }
}

#[test]
fn a_watch_run_whose_member_is_killed_moves_its_streams_and_loses_no_event() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for proto in ["http", "grpc"] {
        // a member with watchers only; then the one with the puts as well
        watch_through_a_kill(proto, 1);
        watch_through_a_kill(proto, 0);
    }
}

/// `--verify`'s lookups outlast the loss of the member they ask: they start on the leader, which
/// is SIGKILLed while they run; the rest move to a follower, which answers "leader changed" or
/// "no leader", or nothing, until the cluster has elected again, and are asked again. Every
/// write is checked, none is lost. (They used to stop at the first such answer, which ended two
/// of ten HTTP/1.1 rounds of scripts/failover.sh without a report.)
#[test]
fn verify_moves_on_and_asks_again_when_its_member_is_killed_mid_lookup() {
    use wirebench::etcd::verify::{Keys, verify_writes};

    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start_failover_timing();
    let leader = cluster.leader();
    const SPACE: u64 = 100;
    const LOOKUPS: usize = 60_000;
    let size = 16;
    let written: Vec<(u64, i64)> = (0..SPACE)
        .map(|n| {
            (
                n,
                cluster.put(wirebench::workload::etcd::put_key(size, n), b"v"),
            )
        })
        .collect();
    // each write looked up many times over: long enough to be under way at the kill
    let acks: Vec<(u64, i64)> = written.iter().copied().cycle().take(LOOKUPS).collect();
    let order = [leader, (leader + 1) % 3, (leader + 2) % 3];
    let urls: Vec<String> = order.iter().map(|&i| cluster.endpoint(i)).collect();
    let members: Vec<wirebench::config::Endpoint> = urls
        .iter()
        .map(|u| wirebench::config::Endpoint::parse(u).expect("an endpoint"))
        .collect();
    let cli = <wirebench::cli::Cli as clap::Parser>::try_parse_from([
        "wirebench",
        "etcd",
        "put",
        "--endpoints",
        urls.join(",").as_str(),
    ])
    .expect("valid flags");
    let Ok(wirebench::app::Action::Run { cfg, .. }) = cli.into_action() else {
        panic!("not a run");
    };
    let started = Instant::now();
    let lookups = std::thread::spawn(move || {
        let keys = Keys {
            size,
            ops: 1,
            space: SPACE,
        };
        let timeout = Duration::from_secs(1);
        verify_writes(&members, &acks, keys, &cfg.net, &cfg.h2, None, timeout)
    });
    std::thread::sleep(Duration::from_millis(300));
    cluster.kill(leader);
    let v = lookups
        .join()
        .expect("the lookups' thread")
        .expect("--verify outlasts the kill");
    let took = started.elapsed();
    assert!(
        v.retried > 0,
        "the lookups ended before the kill ({took:?}): make LOOKUPS larger; {v:?}"
    );
    assert_eq!((v.checked, v.lost), (LOOKUPS as u64, 0), "{v:?}");
    assert_ne!(v.via, urls[0], "{v:?}");
    eprintln!(
        "{LOOKUPS} lookups in {took:?}, {} asked again, via {}",
        v.retried, v.via
    );
}
