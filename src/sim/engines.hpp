// The three execution models (internal to src/sim; use simulate() from simulator.hpp).
// Each engine names the workers and operators in the recorder, writes their events and
// fills the measured part of the truth (Truth::instances).
#pragma once

#include "sim/recorder.hpp"
#include "sim/scenario.hpp"
#include "sim/truth.hpp"

namespace snailtrail::sim {

// Flink/Heron-like: one worker per operator instance, bounded buffers with credit-based
// flow control, periodic watermarks (pipelined.cpp).
void run_pipelined(const Scenario& scenario, Recorder& recorder, Truth& truth);

// Spark-like: a driver schedules the tasks of every stage of every batch on executors
// (microbatch.cpp).
void run_microbatch(const Scenario& scenario, Recorder& recorder, Truth& truth);

// Timely-like: every worker runs every operator, records are exchanged all-to-all and
// progress is broadcast after each step (timely.cpp).
void run_timely(const Scenario& scenario, Recorder& recorder, Truth& truth);

}  // namespace snailtrail::sim
