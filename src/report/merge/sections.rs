//! The sections a merged run has when every agent's run has them (open loop, server streaming,
//! connection setup), and the ones summed by key (endpoints, connect times): each with the
//! histogram its distribution came from.

use hdrhistogram::Histogram;

use super::MergeError;
use super::combine::{Runs, max_known, merged_histogram, min_known, ns_of, recorded, weighted};
use crate::report::derive::{buckets_of, distribution_of, ms, per};
use crate::report::hdr;
use crate::report::{
    ConnectTimes, ConnectionSetup, EndpointReport, HandshakeCost, OpenLoop, Streaming, Wire,
};
use crate::stats::{TIMERFD, TOKIO_FALLBACK};

/// Open loop, when every run was: the targets and counts summed, the lags and uncorrected
/// latency pooled; `written`: the merged requests written.
pub(super) fn open_loop(
    r: &Runs,
    written: u64,
) -> Result<Option<(OpenLoop, Histogram<u64>)>, MergeError> {
    let Some(o) = r.every(|x| x.open_loop.as_ref()) else {
        return Ok(None);
    };
    let unc = r.hist("uncorrected_latency", |h| h.uncorrected_latency.as_deref())?;
    let timers: Vec<Option<&str>> = o.iter().map(|x| x.timer.as_deref()).collect();
    let open_loop = OpenLoop {
        target_rate: o.iter().map(|x| x.target_rate).sum(),
        achieved_rate: r.per_sec(written),
        expired_sends: o.iter().map(|x| x.expired_sends).sum(),
        timer: if timers.contains(&Some(TOKIO_FALLBACK)) {
            Some(TOKIO_FALLBACK)
        } else if timers.iter().all(|t| *t == Some(TIMERFD)) {
            Some(TIMERFD)
        } else {
            None
        },
        late_sends: o.iter().map(|x| x.late_sends).sum(),
        overdue_sends: o.iter().map(|x| x.overdue_sends).sum(),
        sends_taken: o.iter().map(|x| x.sends_taken).sum(),
        average_send_lag_ms: weighted(o.iter().map(|x| (x.average_send_lag_ms, x.sends_taken))),
        max_send_lag_ms: max_known(o.iter().map(|x| x.max_send_lag_ms)),
        uncorrected_average_ms: weighted(o.iter().zip(&r.runs).map(|(x, run)| {
            (
                x.uncorrected_average_ms,
                recorded(run.histograms.uncorrected_latency.as_deref()),
            )
        })),
        uncorrected_slowest_ms: max_known(o.iter().map(|x| x.uncorrected_slowest_ms)),
        uncorrected_distribution: distribution_of(&unc),
    };
    Ok(Some((open_loop, unc)))
}

/// The streams' other histograms, pooled: (message latency, last message to response), each
/// when every run has it.
pub(super) type StreamHists = (Option<Histogram<u64>>, Option<Histogram<u64>>);

/// Streaming, when every run streamed: the messages summed, the latencies pooled; `ok`: the
/// merged successful calls.
pub(super) fn streaming(
    r: &Runs,
    ok: u64,
) -> Result<Option<(Streaming, Histogram<u64>, StreamHists)>, MergeError> {
    let Some(s) = r.every(|x| x.streaming.as_ref()) else {
        return Ok(None);
    };
    let first = r.hist("first_message", |h| h.first_message.as_deref())?;
    let pooled = |what: &str, pick: fn(&hdr::Histograms) -> Option<&str>| match r
        .every(|x| pick(&x.histograms))
    {
        Some(_) => r.hist(what, pick).map(Some),
        None => Ok(None),
    };
    let message = pooled("message_latency", |h| h.message_latency.as_deref())?;
    let last = pooled("last_to_response", |h| h.last_to_response.as_deref())?;
    let messages_sent = s.iter().map(|x| x.messages_sent).sum();
    let avg = |pick: fn(&Streaming) -> Option<f64>, hist: fn(&hdr::Histograms) -> Option<&str>| {
        weighted(
            s.iter()
                .zip(&r.runs)
                .map(|(x, run)| (pick(x), recorded(hist(&run.histograms)))),
        )
    };
    let messages = s.iter().map(|x| x.messages).sum();
    let streaming = Streaming {
        messages,
        messages_per_call: per(messages, ok),
        messages_per_sec: r.per_sec(messages),
        first_message_average_ms: weighted(s.iter().zip(&r.runs).map(|(x, run)| {
            (
                x.first_message_average_ms,
                recorded(run.histograms.first_message.as_deref()),
            )
        })),
        first_message_distribution: distribution_of(&first),
        messages_sent,
        messages_sent_per_call: per(messages_sent, ok),
        message_latency_average_ms: message.as_ref().and_then(|_| {
            avg(
                |x| x.message_latency_average_ms,
                |h| h.message_latency.as_deref(),
            )
        }),
        message_latency_distribution: message.as_ref().map(distribution_of).unwrap_or_default(),
        last_to_response_average_ms: last.as_ref().and_then(|_| {
            avg(
                |x| x.last_to_response_average_ms,
                |h| h.last_to_response.as_deref(),
            )
        }),
        last_to_response_distribution: last.as_ref().map(distribution_of).unwrap_or_default(),
    };
    Ok(Some((streaming, first, (message, last))))
}

/// `--requests-per-conn`, when every run had it: connections per request from the merged
/// `wire`, the connect and handshake costs pooled, the latency without the setup merged.
pub(super) fn connection_setup(
    r: &Runs,
    wire: &Wire,
) -> Result<Option<(ConnectionSetup, Histogram<u64>)>, MergeError> {
    let Some(c) = r.every(|x| x.connection_setup.as_ref()) else {
        return Ok(None);
    };
    let without = r.hist("without_setup", |h| h.without_setup.as_deref())?;
    let tls: Option<Vec<&HandshakeCost>> = c.iter().map(|x| x.tls.as_ref()).collect();
    let setup = ConnectionSetup {
        requests_per_conn: c[0].requests_per_conn,
        connections_per_request: per(wire.connections_opened, wire.requests_on_wire),
        tcp_connect_average_ms: weighted(
            c.iter()
                .zip(&r.runs)
                .map(|(x, run)| (x.tcp_connect_average_ms, run.wire.connections_opened)),
        ),
        tls: tls.map(|t| handshakes(&t)),
        without_setup_average_ms: weighted(c.iter().zip(&r.runs).map(|(x, run)| {
            (
                x.without_setup_average_ms,
                recorded(run.histograms.without_setup.as_deref()),
            )
        })),
        without_setup_distribution: distribution_of(&without),
    };
    Ok(Some((setup, without)))
}

/// The TLS handshakes of several runs: counts summed, costs weighted by their handshakes.
fn handshakes(t: &[&HandshakeCost]) -> HandshakeCost {
    let w = |f: fn(&HandshakeCost) -> Option<f64>| weighted(t.iter().map(|h| (f(h), h.handshakes)));
    HandshakeCost {
        handshakes: t.iter().map(|h| h.handshakes).sum(),
        full: t.iter().map(|h| h.full).sum(),
        resumed: t.iter().map(|h| h.resumed).sum(),
        average_ms: w(|h| h.average_ms),
        client_cpu_us: w(|h| h.client_cpu_us),
        bytes_out: w(|h| h.bytes_out),
        bytes_in: w(|h| h.bytes_in),
    }
}

/// Endpoints by URL, in the order they first appear, each with its histogram encoded (the
/// rows and the histograms apart, in one order).
pub(super) fn endpoints(r: &Runs) -> Result<(Vec<EndpointReport>, Vec<String>), MergeError> {
    let mut endpoints: Vec<(EndpointReport, Histogram<u64>)> = Vec::new();
    for (file, run) in r.with_files() {
        if run.per_endpoint.len() != run.histograms.per_endpoint.len() {
            return Err(MergeError::EndpointHistograms {
                file: file.to_string(),
                endpoints: run.per_endpoint.len(),
                histograms: run.histograms.per_endpoint.len(),
            });
        }
        for (e, text) in run.per_endpoint.iter().zip(&run.histograms.per_endpoint) {
            let h = merged_histogram([(file, text.as_str())], "per_endpoint")?;
            match endpoints.iter_mut().find(|(x, _)| x.endpoint == e.endpoint) {
                Some((x, sum)) => {
                    x.count += e.count;
                    x.ok += e.ok;
                    x.failed += e.failed;
                    if x.role != e.role {
                        x.role = None;
                    }
                    sum.add(&h).map_err(|cause| MergeError::EndpointRange {
                        file: file.to_string(),
                        cause,
                    })?;
                }
                None => endpoints.push((e.clone(), h)),
            }
        }
    }
    let q = |h: &Histogram<u64>, p: f64| (!h.is_empty()).then(|| ms(h.value_at_quantile(p) as f64));
    Ok(endpoints
        .into_iter()
        .map(|(e, h)| {
            let row = EndpointReport {
                requests_per_sec: r.per_sec(e.count),
                p50_ms: q(&h, 0.5),
                p90_ms: q(&h, 0.9),
                p99_ms: q(&h, 0.99),
                ..e
            };
            (row, hdr::encode(&h))
        })
        .unzip())
}

/// The merged connect histogram (None when no run had one) and its figures (None when no
/// agent had a connection to time).
pub(super) fn connect_times(
    r: &Runs,
) -> Result<(Option<Histogram<u64>>, Option<ConnectTimes>), MergeError> {
    if r.runs.iter().all(|run| run.histograms.connect.is_none()) {
        return Ok((None, None));
    }
    let h = r.hist("connect", |h| h.connect.as_deref())?;
    let times: Vec<&ConnectTimes> = r
        .runs
        .iter()
        .filter_map(|run| run.connect_times.as_ref())
        .collect();
    let figures = connect_figures(&h, &times);
    Ok((Some(h), figures))
}

/// The connect times of `times` over their merged histogram `h` (None: no connection timed).
fn connect_figures(h: &Histogram<u64>, times: &[&ConnectTimes]) -> Option<ConnectTimes> {
    let fastest = min_known(times.iter().map(|c| Some(c.fastest_ms)))?;
    let slowest = max_known(times.iter().map(|c| Some(c.slowest_ms)))?;
    Some(ConnectTimes {
        connections: h.len(),
        average_ms: weighted(times.iter().map(|c| (Some(c.average_ms), c.connections)))?,
        fastest_ms: fastest,
        slowest_ms: slowest,
        histogram: buckets_of(h, ns_of(fastest), ns_of(slowest)),
        distribution: distribution_of(h),
    })
}
