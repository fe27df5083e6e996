// libFuzzer target for DS2's CSV formats (src/scale/ds2_files.hpp): the input is split
// at the first NUL into a topology and a rates file (source rates reuse the rates text).
// TraceError is the only acceptable failure; the policy then runs on whatever parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scale/ds2_files.hpp"
#include "trace/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t cut = text.find('\0');
  const std::string_view topo = text.substr(0, cut);
  const std::string_view rates = cut == std::string_view::npos ? "" : text.substr(cut + 1);
  try {
    scale::Topology t = scale::parse_topology_csv(topo, "topology.csv");
    std::vector<double> src;
    try {
      src = scale::parse_source_rates_csv(rates, "sources.csv", t);
    } catch (const TraceError&) {
    }
    for (const scale::RatesEpoch& e : scale::parse_rates_csv(rates, "rates.csv", t)) {
      scale::Topology cur = t;
      cur.parallelism = e.parallelism;
      scale::PolicyOptions o;
      o.threshold = 0.9;
      scale::ds2_policy(cur, scale::aggregate(cur, e.instances),
                        scale::total_source_rates(src, e.parallelism), o);
    }
  } catch (const TraceError&) {
  }
  return 0;
}
