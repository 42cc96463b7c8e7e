//! Leader discovery (`wirebench::etcd::discover`) against a real 3-member etcd cluster, over both stacks.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use wirebench::client::grpc::H2Config;
use wirebench::config::Endpoint;
use wirebench::etcd::discover::{self, ClusterView, Target};
use wirebench::net::NetConfig;

use support::Cluster;

const PROTOCOLS: [(bool, &str); 2] = [(true, "gRPC"), (false, "HTTP/1.1")];

fn parse(urls: &[String]) -> Vec<Endpoint> {
    urls.iter().map(|u| Endpoint::parse(u).unwrap()).collect()
}

fn discover(endpoints: &[Endpoint], over_grpc: bool, token: Option<&str>) -> ClusterView {
    discover::discover(
        endpoints,
        over_grpc,
        &NetConfig::default(),
        &H2Config::default(),
        token,
    )
    .unwrap_or_else(|e| panic!("discovery (grpc: {over_grpc}) failed: {e}"))
}

fn urls(endpoints: &[Endpoint]) -> Vec<&str> {
    endpoints.iter().map(|e| e.url.as_str()).collect()
}

#[test]
fn finds_the_leader_and_the_followers_over_both_protocols() {
    let started = Instant::now();
    let cluster = Cluster::start();
    eprintln!("cluster ready in {:?}", started.elapsed());
    let all = parse(&cluster.endpoints());
    let leader = cluster.leader();
    let leader_id = cluster.member_id(leader);
    let ids: BTreeSet<u64> = (0..3).map(|i| cluster.member_id(i)).collect();
    assert_eq!(ids.len(), 3, "member ids {ids:?}");
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();

    for (over_grpc, name) in PROTOCOLS {
        let view = discover(&all, over_grpc, None);
        assert_eq!(view.statuses.len(), 3, "{name}: {view:?}");
        for (i, s) in view.statuses.iter().enumerate() {
            assert_eq!(s.endpoint, i, "{name}: {view:?}");
            assert_eq!(s.member_id, cluster.member_id(i), "{name}: {view:?}");
            assert_eq!(s.leader, leader_id, "{name}: {view:?}");
            assert!(s.raft_term >= 1, "{name}: {view:?}");
            assert!(!s.is_learner, "{name}: {view:?}");
        }
        let listed: BTreeSet<u64> = view.members.iter().map(|m| m.id).collect();
        assert_eq!(listed, ids, "{name}: {view:?}");
        for m in &view.members {
            let i = (0..3).find(|&i| cluster.member_id(i) == m.id).unwrap();
            assert_eq!(m.name, format!("m{}", i + 1), "{name}: {view:?}");
            assert_eq!(m.client_urls, [cluster.endpoint(i)], "{name}: {view:?}");
        }

        let chosen = discover::resolve(&all, Target::Leader, &view).unwrap();
        assert_eq!(urls(&chosen), [cluster.endpoint(leader)], "{name}");
        let chosen = discover::resolve(&all, Target::Followers, &view).unwrap();
        let want: Vec<String> = followers.iter().map(|&i| cluster.endpoint(i)).collect();
        assert_eq!(urls(&chosen), want, "{name}");
        assert_eq!(
            discover::select(&view, &all, Target::Followers).unwrap(),
            followers,
            "{name}"
        );

        // Only a follower given: the leader comes from the member list.
        let one = vec![all[followers[0]].clone()];
        let view = discover(&one, over_grpc, None);
        assert_eq!(view.statuses.len(), 1, "{name}: {view:?}");
        assert_eq!(view.members.len(), 3, "{name}: {view:?}");
        let chosen = discover::resolve(&one, Target::Leader, &view).unwrap();
        assert_eq!(chosen.len(), 1, "{name}");
        assert_eq!(chosen[0].addr, all[leader].addr, "{name}");
        assert_eq!(chosen[0].url, cluster.endpoint(leader), "{name}");
        let chosen = discover::resolve(&one, Target::Followers, &view).unwrap();
        assert_eq!(urls(&chosen), [one[0].url.as_str()], "{name}");
    }

    // One endpoint that does not answer fails the whole discovery, naming it.
    let closed = format!("http://127.0.0.1:{}", support::unused_port());
    let mixed = vec![all[0].clone(), Endpoint::parse(&closed).unwrap()];
    for (over_grpc, name) in PROTOCOLS {
        let e = discover::discover(
            &mixed,
            over_grpc,
            &NetConfig::default(),
            &H2Config::default(),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!("status of {closed}: connect: ")),
            "{name}: {e}"
        );
        assert!(!e.contains('\n'), "{name}: {e}");
    }

    // With auth on, Status and MemberList still answer without a token and ignore an invalid
    // one (etcd 3.4 checks no permission for them); a valid token is accepted too.
    cluster.call(
        0,
        "/v3/auth/user/add",
        &serde_json::json!({ "name": "root", "password": "pw" }),
    );
    cluster.call(
        0,
        "/v3/auth/user/grant",
        &serde_json::json!({ "user": "root", "role": "root" }),
    );
    cluster.call(0, "/v3/auth/enable", &serde_json::json!({}));
    let auth = cluster.call(
        0,
        "/v3/auth/authenticate",
        &serde_json::json!({ "name": "root", "password": "pw" }),
    );
    let token = auth["token"].as_str().expect("a token").to_string();
    for (over_grpc, name) in PROTOCOLS {
        for token in [None, Some(token.as_str()), Some("garbage")] {
            let view = discover(&all, over_grpc, token);
            let chosen = discover::resolve(&all, Target::Leader, &view).unwrap();
            assert_eq!(
                urls(&chosen),
                [cluster.endpoint(cluster.leader())],
                "{name}, token {token:?}"
            );
        }
    }
    eprintln!("whole test: {:?}", started.elapsed());
}

#[test]
fn discovery_of_a_closed_port_fails_with_one_line_naming_it() {
    let url = format!("http://127.0.0.1:{}", support::unused_port());
    let eps = vec![Endpoint::parse(&url).unwrap()];
    for (over_grpc, name) in PROTOCOLS {
        let e = discover::discover(
            &eps,
            over_grpc,
            &NetConfig::default(),
            &H2Config::default(),
            None,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!("status of {url}: connect: connection refused"),
            "{name}"
        );
    }
}

/// The per-endpoint rows of one protocol's report: (url, role, requests).
fn endpoint_rows(run: &serde_json::Value) -> Vec<(String, String, u64)> {
    run["per_endpoint"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["count"].as_u64().unwrap() > 0)
        .map(|e| {
            (
                e["endpoint"].as_str().unwrap().to_string(),
                e["role"].as_str().unwrap_or("-").to_string(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn runs_target_the_leader_the_followers_or_all_members() {
    let cluster = Cluster::start();
    let leader = cluster.leader();
    let eps = cluster.endpoints_arg();
    let rev = cluster.revision();
    let put = |target: &str| {
        support::run_json_within(
            &[
                "etcd",
                "put",
                "--endpoints",
                &eps,
                "--target",
                target,
                "-c",
                "6",
                "-n",
                "300",
            ],
            Duration::from_secs(60),
        )
    };

    // leader: every request to the leader, over each protocol
    let report = put("leader");
    for proto in ["http", "grpc"] {
        let rows = endpoint_rows(support::proto_run(&report, proto));
        assert_eq!(
            rows,
            [(cluster.endpoint(leader), "leader".to_string(), 300)],
            "{proto}"
        );
    }
    // all writes applied, exactly: 300 per protocol
    assert_eq!(cluster.revision(), rev + 600);

    // followers: both followers get clients, the leader none
    let report = put("followers");
    for proto in ["http", "grpc"] {
        let rows = endpoint_rows(support::proto_run(&report, proto));
        let got: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
        let want: BTreeSet<String> = (0..3)
            .filter(|&i| i != leader)
            .map(|i| cluster.endpoint(i))
            .collect();
        assert_eq!(got, want, "{proto}: {rows:?}");
        assert!(rows.iter().all(|r| r.1 == "follower"), "{proto}: {rows:?}");
    }

    // all: six clients spread two per member, each labelled with its role
    let report = put("all");
    for proto in ["http", "grpc"] {
        let run = support::proto_run(&report, proto);
        let rows = endpoint_rows(run);
        assert_eq!(rows.len(), 3, "{proto}: {rows:?}");
        let leaders: Vec<&(String, String, u64)> =
            rows.iter().filter(|r| r.1 == "leader").collect();
        assert_eq!(leaders.len(), 1, "{proto}: {rows:?}");
        assert_eq!(leaders[0].0, cluster.endpoint(leader), "{proto}");
        assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), 300, "{proto}");
        // gRPC: one connection per member at least, so every member has streams
        assert!(
            support::u64_at(run, "/connections") >= 3,
            "{proto}: {}",
            run["connections"]
        );
    }
    assert_eq!(cluster.revision(), rev + 1800);
}

#[test]
fn sweep_prints_one_row_per_cell_in_etcds_order() {
    let cluster = Cluster::start();
    let eps = cluster.endpoints_arg();
    let run = support::run_bounded(
        &[
            "sweep",
            "etcd",
            "range",
            "--endpoints",
            &eps,
            "--clients",
            "1,4",
            "--key-size",
            "8,16",
            "--target",
            "leader,all",
            "--proto",
            "http,grpc",
            "-n",
            "100",
            "--format",
            "csv",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 16, "{}", run.stdout);
    let header: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "key_size",
        "clients",
        "target",
        "proto",
        "qps",
        "p90_ms",
        "p99_ms",
        "bytes_per_op",
        "packets_per_op",
        "client_cpu_us_per_op",
    ] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut expected = Vec::new();
    for target in ["leader", "all"] {
        for key in ["8", "16"] {
            for clients in ["1", "4"] {
                for proto in ["http", "grpc"] {
                    expected.push((target, key, clients, proto));
                }
            }
        }
    }
    for (line, want) in lines[1..].iter().zip(&expected) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), header.len(), "{line}");
        let got = (
            f[col("target")],
            f[col("key_size")],
            f[col("clients")],
            f[col("proto")],
        );
        assert_eq!(&got, want, "{line}");
        assert_eq!(f[col("ok")], "100", "{line}");
        assert_eq!(f[col("failed")], "0", "{line}");
        for c in ["qps", "p90_ms", "bytes_per_op", "packets_per_op"] {
            let v: f64 = f[col(c)].parse().unwrap();
            assert!(v > 0.0, "{c} in {line}");
        }
    }
    // one progress line per row on stderr
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.starts_with("wirebench sweep: "))
            .count(),
        16,
        "{}",
        run.stderr
    );

    // markdown: etcd's columns first, one row per cell
    let md = support::run_bounded(
        &[
            "sweep",
            "etcd",
            "put",
            "--endpoints",
            &eps,
            "--clients",
            "2",
            "--key-size",
            "64",
            "--target",
            "leader",
            "-n",
            "50",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(md.code, Some(0), "{}", md.stderr);
    let table: Vec<&str> = md.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 2 + 2, "{}", md.stdout);
    assert!(
        table[0].starts_with("| key size (B) | clients | target | proto | QPS | p90 ms | p99 ms |"),
        "{}",
        table[0]
    );
    assert!(
        table[2].starts_with("| 64 | 2 | leader | HTTP/1.1 |"),
        "{}",
        table[2]
    );
    assert!(
        table[3].starts_with("| 64 | 2 | leader | gRPC |"),
        "{}",
        table[3]
    );

    // --fail-if judges every row: a QPS no row reaches breaks on both, and the table is
    // printed all the same
    let judged = support::run_bounded(
        &[
            "sweep",
            "etcd",
            "put",
            "--endpoints",
            &eps,
            "--clients",
            "2",
            "--key-size",
            "64",
            "--target",
            "leader",
            "-n",
            "50",
            "--fail-if",
            "rps>100000000",
            "--fail-if",
            "errors<1%",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(judged.code, Some(3), "{}", judged.stderr);
    let broken: Vec<&str> = judged
        .stderr
        .lines()
        .filter(|l| {
            l.starts_with(
                "error: threshold rps>100000000 broken by the row of key 64 B, 2 clients, leader, ",
            )
        })
        .collect();
    assert_eq!(broken.len(), 2, "{}", judged.stderr);
    assert!(
        judged.stdout.contains("| 64 | 2 | leader | gRPC |"),
        "{}",
        judged.stdout
    );
}
