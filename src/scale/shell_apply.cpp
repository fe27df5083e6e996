#include "scale/shell_apply.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>

#include "scale/scale_output.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::scale {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void apply_command(const std::string& cmd, const Topology& t, double time_s,
                   const std::vector<uint32_t>& p, std::optional<uint32_t> total) {
  std::string line = cmd;
  for (size_t i = 0; i < p.size(); ++i)
    line += " " + shell_quote(fmt::format("{}={}", t.names[i], p[i]));
  std::string json =
      fmt::format("{{\"time_s\": {}, \"parallelism\": {}", json_number(time_s), json_map(t, p));
  if (total) json += fmt::format(", \"total_workers\": {}", *total);
  json += "}\n";
  std::fflush(stdout);
  FILE* f = ::popen(line.c_str(), "w");
  if (!f) throw InputError({field("apply"), ": cannot run " + cmd});
  std::fwrite(json.data(), 1, json.size(), f);
  const int rc = ::pclose(f);
  if (rc != 0)
    fmt::print(stderr, "snailtrail: warning: --apply command exited with status {}\n",
               WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
}

}  // namespace snailtrail::scale
