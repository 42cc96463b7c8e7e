//! `--find-max`: what a capacity search looks for and its bounds, validated.

use std::time::Duration;

use crate::threshold::Threshold;

/// A capacity search: open-loop steps from `start_rate`, doubling until an objective breaks,
/// then bisecting to `precision`; each step settles for `settle`, then measures `step`.
#[derive(Debug, Clone)]
pub struct CapacitySpec {
    /// every one must hold in a step for its rate to count as sustained
    pub objectives: Vec<Threshold>,
    /// requests/s of the first step
    pub start_rate: f64,
    /// the search stops when (lowest broken - highest met) <= precision x highest met
    pub precision: f64,
    /// the measured window of each step
    pub step: Duration,
    /// requests sent at a step's rate before its window, left out of its figures
    pub settle: Duration,
    /// steps of the search, confirmations not counted
    pub max_steps: usize,
    /// the whole search, confirmations included: no step starts that would end past it
    pub max_duration: Duration,
    /// runs at the answer once found
    pub confirm: usize,
    /// how many times a rate that broke is measured again before it counts as broken
    pub retries: usize,
}
