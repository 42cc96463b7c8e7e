//! `wirebench etcd watch`: per watch protocol, the watchers (`etcd::watch`) and the put load
//! (the engine's run of `workload::etcd::WatchPuts`) run in their phases; the report
//! (`report::watch`) is written, the exit code says whether events were lost.

use std::sync::Arc;
use std::time::Duration;

use super::{RunError, emit, exit, prepare};
use crate::config::{
    Config, Endpoint, EtcdOp, Format, Load, RangeOptions, Stop, Target, WatchKind, WorkloadSpec,
};
use crate::engine;
use crate::etcd::Cluster;
use crate::etcd::compact::Compactor;
use crate::etcd::discover;
use crate::etcd::watch::{Loss, WatchConfig, Watchers};
use crate::report::watch::{self as report, GetsReport, PutOutcome, WatchReport};
use crate::stack::Proto;
use crate::workload::Workload;
use crate::workload::etcd::WatchPuts;
use crate::workload::etcd::client::MAX_RESPONSE;

/// Runs, writes the report; fails on lost or doubled events, or when no put was acknowledged.
pub(super) fn watch_and_write(cfg: &WatchConfig) -> Result<i32, RunError> {
    let runs = run(cfg).map_err(RunError::Setup)?;
    // Ctrl-C before a put was sent: nothing to report
    if super::interrupted() && runs.iter().all(|r| r.puts.ok + r.puts.failed == 0) {
        return Err(RunError::Interrupted);
    }
    let text = match cfg.format {
        Format::Text => report::render_text(cfg, &runs),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({
                "schema": "wirebench.watch.v2",
                "runs": runs,
            }))
            .unwrap_or_default();
            s.push('\n');
            s
        }
    };
    emit(cfg.output.as_deref(), &text)?;
    // Failed or unsent puts alone do not fail the run (they are in the report, and the zero-loss
    // check covers only the puts etcd acknowledged); lost or doubled events do, and so does a run
    // in which no put was acknowledged at all (nothing was measured).
    let mut code = exit::OK;
    for r in &runs {
        for line in r.puts.failover.iter().flat_map(|f| f.stranded()) {
            eprintln!("warning: watch over {}: puts: {line}", r.title);
        }
        if r.missing > 0 || r.duplicated > 0 {
            eprintln!(
                "error: watch over {}: {} events missing, {} duplicated",
                r.title, r.missing, r.duplicated
            );
            code = exit::FAILURE;
        } else if r.puts.ok == 0 && !r.interrupted {
            eprintln!(
                "error: watch over {}: no put was acknowledged ({} failed, {} not sent)",
                r.title, r.puts.failed, r.puts.not_sent
            );
            code = exit::FAILURE;
        }
    }
    Ok(code)
}

/// Runs the configured watch protocols one after the other.
pub fn run(cfg: &WatchConfig) -> Result<Vec<WatchReport>, String> {
    let cfg = Arc::new(cfg.clone());
    let members = members(&cfg);
    let mut runs = Vec::with_capacity(cfg.protos.len());
    for &p in &cfg.protos {
        // Ctrl-C: no further stack starts
        if super::interrupted() {
            break;
        }
        runs.push(run_linked(&cfg, p, &members)?);
    }
    Ok(runs)
}

/// One stack's watch run, through a fresh `--link` when there is one: the watchers and the
/// put load on the client's side of it, its account in the report.
fn run_linked(
    cfg: &Arc<WatchConfig>,
    proto: Proto,
    members: &[Endpoint],
) -> Result<WatchReport, String> {
    let link = prepare::start_link(cfg.link.as_ref(), &cfg.endpoints, members)?;
    let Some(link) = link else {
        return run_one(cfg, proto, members);
    };
    let linked = Arc::new(WatchConfig {
        net: crate::net::NetConfig {
            link: Some(link.net().clone()),
            ..cfg.net.clone()
        },
        ..(**cfg).clone()
    });
    let run = run_one(&linked, proto, members);
    let account = link.finish().map_err(|e| e.to_string())?;
    let mut report = run?;
    report.link = Some(crate::report::link::LinkSection::of(
        &account,
        &report.per_connection,
    ));
    Ok(report)
}

/// Every member a watch run may move to when one goes away: the given endpoints first, then
/// the other members the cluster lists (none when it cannot be asked: a single member).
fn members(cfg: &WatchConfig) -> Vec<Endpoint> {
    let over_grpc = cfg.protos.contains(&Proto::Grpc) || cfg.put_proto == Proto::Grpc;
    match discover::discover(&cfg.endpoints, over_grpc, &cfg.net, &cfg.h2, None) {
        Ok(view) => discover::members(&cfg.endpoints, &cfg.endpoints, &view),
        Err(_) => cfg.endpoints.clone(),
    }
}

/// One watch run: every watch created first, then the put load while the watchers receive,
/// then the drain for the revisions of the acknowledged puts. A member lost meanwhile moves
/// the streams and the puts it carried to live members.
fn run_one(
    cfg: &Arc<WatchConfig>,
    proto: Proto,
    members: &[Endpoint],
) -> Result<WatchReport, String> {
    if let WatchKind::Get {
        get_clients,
        get_key,
    } = &cfg.kind
    {
        return run_get(cfg, proto, members, *get_clients, get_key);
    }
    let watchers = Watchers::start(cfg, proto, members, 0).map_err(|e| e.to_string())?;
    // --compact-interval: a compactor beside the put load (stopped with it, or on its error)
    let compactor = match cfg.compact {
        Some(c) => match Compactor::start(c, Cluster::watch(cfg)) {
            Ok(c) => Some(c),
            Err(e) => {
                let _ = watchers.finish(Arc::default());
                return Err(e.to_string());
            }
        },
        None => None,
    };
    let puts = put_load(cfg, members);
    let compaction = compactor.map(Compactor::stop);
    let puts = match puts {
        Ok(p) => p,
        Err(e) => {
            let _ = watchers.finish(Arc::default());
            return Err(e);
        }
    };
    // Every watcher should see every acknowledged put to the keys it watches.
    let expected = Arc::new(cfg.expected(&puts.revisions));
    let expected_events: u64 = expected.iter().map(|v| v.len() as u64).sum();
    let w = watchers
        .finish(expected.clone())
        .map_err(|e| e.to_string())?;
    let loss = Loss::count(&expected, &w.seen);
    let mut report = WatchReport::new(cfg, proto, w, &puts, expected_events, loss);
    report.compaction = compaction.as_ref().map(crate::report::CompactionReport::of);
    Ok(report)
}

/// etcd benchmark's watch-get over `proto`: the puts first (the history), then the range load
/// of `get_key` by `get_clients` clients; once its measured window has begun the watchers are
/// created from the first put's revision, and the range load stops when every watcher has
/// every event (or the drain's `--timeout` ran out).
fn run_get(
    cfg: &Arc<WatchConfig>,
    proto: Proto,
    members: &[Endpoint],
    get_clients: usize,
    get_key: &str,
) -> Result<WatchReport, String> {
    let puts = put_load(cfg, members)?;
    let Some(from) = puts.revisions.iter().flatten().min().copied() else {
        return Err(format!(
            "watch-get: none of the {} puts was acknowledged",
            cfg.put_total
        ));
    };
    let expected = Arc::new(cfg.expected(&puts.revisions));
    let expected_events: u64 = expected.iter().map(|v| v.len() as u64).sum();
    let gets_cfg = gets_config(cfg, proto, get_clients, get_key);
    let workload =
        Workload::new(&gets_cfg.spec, &cfg.endpoints[..1], 0, None).map_err(|e| e.to_string())?;
    let control = Arc::new(engine::Control::default());
    let gets = {
        let (control, endpoints) = (control.clone(), cfg.endpoints[..1].to_vec());
        std::thread::Builder::new()
            .name("wirebench-watch-get".into())
            .spawn(move || {
                let taps = engine::Taps {
                    control: Some(control),
                    ..engine::Taps::default()
                };
                engine::run_proto_with(&gets_cfg, &workload, &endpoints, proto, None, None, &taps)
            })
            .map_err(|e| format!("cannot start the range load: {e}"))?
    };
    // The watchers are created once the range load runs (etcd's tool starts it with the first
    // watch); its setup is bounded by the connect timeout.
    let setup = cfg.net.connect_timeout + Duration::from_secs(5);
    let waited = std::time::Instant::now();
    while !control.started() && !gets.is_finished() && waited.elapsed() < setup {
        std::thread::sleep(Duration::from_millis(2));
    }
    let watched = Watchers::start(cfg, proto, members, from)
        .and_then(|watchers| watchers.finish(expected.clone()));
    control.stop();
    let ran = gets
        .join()
        .map_err(|_| "the range load's thread panicked (a bug: please report it)".to_string())?;
    let w = watched.map_err(|e| e.to_string())?;
    let ran = ran.map_err(|e| e.to_string())?;
    let loss = Loss::count(&expected, &w.seen);
    let mut report = WatchReport::new(cfg, proto, w, &puts, expected_events, loss);
    report.gets = Some(GetsReport::of(&ran, get_clients, get_key));
    Ok(report)
}

/// The range load of watch-get: `get_clients` clients reading `get_key` serializably from the
/// first endpoint over `proto`, one connection, until told to stop (at most for the setup and
/// the drain).
fn gets_config(cfg: &WatchConfig, proto: Proto, get_clients: usize, get_key: &str) -> Config {
    let base = put_config(cfg);
    Config {
        protos: vec![proto],
        load: Load {
            clients: get_clients,
            timeout: cfg.put_timeout,
            rate: None,
            stop: Stop::Duration(cfg.net.connect_timeout + GETS_SLACK + cfg.drain),
            ..base.load
        },
        spec: WorkloadSpec::Etcd(EtcdOp::Range {
            key: get_key.as_bytes().to_vec(),
            serializable: true,
            options: RangeOptions::default(),
        }),
        target: Target::First,
        ..base
    }
}

/// How long watch-get's range load may run beyond the watchers' drain: their setup (the
/// connects, every watch created) is bounded by the connect timeout plus this.
const GETS_SLACK: Duration = Duration::from_secs(60);

/// Runs the put load of `cfg` through the engine (alone, when no watchers run): `--put-total`
/// stamped puts over `--put-proto` to the first endpoint, moved to a live one of `members`
/// when it goes away. Every put ends counted in exactly one of `ok`, `failed` and
/// `not_sent`; an error is a setup error (a connection, the request).
pub fn put_load(cfg: &WatchConfig, members: &[Endpoint]) -> Result<PutOutcome, String> {
    let workload = Workload::WatchPuts(Box::new(WatchPuts::new(cfg).map_err(|e| e.to_string())?));
    let endpoints = &cfg.endpoints[..1];
    let put_cfg = put_config(cfg);
    let failover = (members.len() > 1).then(|| prepare::failover(&put_cfg, members.to_vec(), None));
    let run = engine::run_proto(
        &put_cfg,
        &workload,
        endpoints,
        cfg.put_proto,
        None,
        failover.as_ref(),
    )
    .map_err(|e| e.to_string())?;
    PutOutcome::from_run(cfg, run).map_err(|e| e.to_string())
}

/// The engine's configuration of the put load: `--put-clients` as -c on one thread (gRPC: one
/// connection they share), `--put-total` as -n, `--put-rate` as --rate, `--put-timeout` as the
/// per-request timeout; no warmup.
fn put_config(cfg: &WatchConfig) -> Config {
    Config {
        endpoints: cfg.endpoints[..1].to_vec(),
        protos: vec![cfg.put_proto],
        load: Load {
            clients: cfg.put_clients,
            conns: 1,
            pipeline: 1,
            requests_per_conn: None,
            threads: 1,
            stop: Stop::Total(cfg.put_total),
            warmup: Duration::ZERO,
            start_at: None,
            timeout: cfg.put_timeout,
            rate: cfg.put_rate,
            connect_rate: None,
            stages: None,
            interval: None,
        },
        net: cfg.net.clone(),
        h2: cfg.h2,
        max_body: MAX_RESPONSE as u64,
        // what runs is the workload handed to the engine; the spec only describes it
        spec: WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: 0,
            val_size: cfg.val_size,
            key_space_size: cfg.watched_keys as u64,
            sequential_keys: true,
        }),
        seed: 0,
        agent: None,
        format: cfg.format,
        output: None,
        server_pid: None,
        per_conn: false,
        svg: None,
        outputs: Default::default(),
        thresholds: Vec::new(),
        capacity: None,
        auth: None,
        // a dead member's puts move to a live one (the watch run's members)
        target: Target::All,
        verify: false,
        // the compactor runs beside the put load, started by `run_one`
        compact: None,
        link: None,
    }
}
