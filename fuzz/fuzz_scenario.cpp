// libFuzzer target for simulator scenario files (TOML). ScenarioError is the only
// acceptable failure; anything else escapes so the fuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    snailtrail::sim::Scenario s = snailtrail::sim::parse_scenario(text, "fuzz.toml");
    (void)s;
  } catch (const snailtrail::sim::ScenarioError&) {
  }
  return 0;
}
