//! The Streaming section from a run's streaming calls: messages each way over the successful
//! calls, and the distributions of the latency to the first message, of each ping-pong reply
//! and of a client stream's last message to its response.

use super::{distribution, ms, per, per_sec};
use crate::report::{ProtoRun, Streaming};
use crate::stats::Latencies;

/// The section, when the run made streaming calls.
pub(super) fn streaming(run: &ProtoRun) -> Option<Streaming> {
    let st = &run.stats;
    let first = st.first_message.as_ref()?;
    let secs = run.elapsed.as_secs_f64();
    let avg_dist = |l: &Option<Latencies>| {
        (
            l.as_ref().and_then(|l| l.mean_ns()).map(ms),
            l.as_ref().map(distribution).unwrap_or_default(),
        )
    };
    let (message_latency_average_ms, message_latency_distribution) = avg_dist(&st.message_latency);
    let (last_to_response_average_ms, last_to_response_distribution) =
        avg_dist(&st.last_to_response);
    Some(Streaming {
        messages: st.messages,
        messages_per_call: per(st.messages, st.ok),
        messages_per_sec: per_sec(st.messages, secs),
        first_message_average_ms: first.mean_ns().map(ms),
        first_message_distribution: distribution(first),
        messages_sent: st.messages_sent,
        messages_sent_per_call: per(st.messages_sent, st.ok),
        message_latency_average_ms,
        message_latency_distribution,
        last_to_response_average_ms,
        last_to_response_distribution,
    })
}
