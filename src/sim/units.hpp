// Quantities with units as written in scenario files: durations ("250us", "1.5s"),
// rates ("20000/s", "1000000/min") and bandwidths ("10Gbit/s", "1.25GB/s").
#pragma once

#include <cstdint>
#include <string_view>

namespace snailtrail::sim {

// "<number><unit>", unit ns, us, ms, s, m (or min) or h; fractions allowed. Returns
// nanoseconds. Throws std::invalid_argument naming the problem.
int64_t parse_duration_text(std::string_view text);

// "<number>/<unit>" with unit s, min or h, or a plain number: records per second.
double parse_rate_text(std::string_view text);

// "<number><unit>" with unit B/s, KB/s, MB/s, GB/s (bytes, powers of 1000) or
// bit/s, Kbit/s, Mbit/s, Gbit/s (also kbps, Mbps, Gbps). Returns bytes per second.
double parse_bandwidth_text(std::string_view text);

}  // namespace snailtrail::sim
