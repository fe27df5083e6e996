// Values with their units as one variable for the miner (issue 34): "1190 bytes",
// "1190 bytes (1.16 KB)", "<1 sec", "45 ms" are one token, so an optional unit or
// restatement does not change a message's token count, and Proxifier's `close` lines (one
// event whose sizes and lifetimes come with or without them) are one template.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "logs/drain.hpp"
#include "logs/flows.hpp"
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"

namespace snailtrail::logs::test_logs_units {
namespace {

std::vector<std::string> values_of(std::string_view message) {
  std::vector<Token> tokens;
  tokenize(message, tokens, 256);
  std::vector<std::string> out;
  for (const Token& t : tokens)
    out.push_back(t.var ? masked(t) + "=" + std::string(t.value()) : std::string(t.raw));
  return out;
}

using Words = std::vector<std::string>;

TEST(LogUnits, AValueWithItsUnitIsOneVariableToken) {
  EXPECT_EQ(values_of("0 bytes sent, 1190 bytes (1.16 KB) received, lifetime <1 sec"),
            (Words{"<*>=0 bytes", "sent,", "<*>=1190 bytes (1.16 KB)", "received,", "lifetime",
                   "<*>=<1 sec"}));
  EXPECT_EQ(values_of("lifetime 00:01"), (Words{"lifetime", "<*>=00:01"}));
  EXPECT_EQ(values_of("Completed in 45 ms, took (3 s) and 2 seconds."),
            (Words{"Completed", "in", "<*>,=45 ms", "took", "(<*>)=3 s", "and", "<*>.=2 seconds"}));
  EXPECT_EQ(values_of("stored (estimated size=2.1 KB, free 530.0 KB)"),
            (Words{"stored", "(estimated", "size=<*>,=2.1 KB", "free", "<*>)=530.0 KB"}));
  EXPECT_EQ(values_of("size 1190 (1.16KB), ok"), (Words{"size", "<*>,=1190 (1.16KB)", "ok"}));
  // Not quantities: a number before a word that is no unit, a parenthesised counter, a
  // number ending in punctuation before a unit-like word.
  EXPECT_EQ(values_of("retry 3 times"), (Words{"retry", "<*>=3", "times"}));
  EXPECT_EQ(values_of("stage 3.0 (1/4)"), (Words{"stage", "<*>=3.0", "(<*>)=1/4"}));
  EXPECT_EQ(values_of("got 5, s ok"), (Words{"got", "<*>,=5", "s", "ok"}));
  EXPECT_EQ(values_of("Health check OK"), (Words{"Health", "check", "OK"}));
  // A quantity is never an identifier.
  EXPECT_FALSE(id_like("45 ms"));
  EXPECT_FALSE(id_like("1190 bytes (1.16 KB)"));
}

// Proxifier lines as Proxifier writes them, loghub's events: E2 open, E3 could not
// resolve, E5 status code, E7 canceled, E8 close (sizes with or without a restatement in
// KB or MB, lifetimes "<1 sec", "00:01", "1:02:19").
struct LabelledLine {
  std::string line;
  int event;
};

// Each draw in its own statement: the order of two draws in one expression is unspecified
// (a release and a sanitizer build made different lines from one seed).
std::string size_text(std::mt19937_64& rng) {
  const bool zero = rng() % 4 == 0;
  const bool large = rng() % 3 == 0;
  const uint64_t b = zero ? 0 : rng() % (large ? 3'000'000 : 3000);
  std::string s = std::to_string(b) + " bytes";
  // Proxifier's restatement: three significant digits, never an exponent ("(53.1 KB)",
  // "(1021 KB)", "(2.86 MB)"); printf's %.3g would write "1.02e+03" from 1000 KB on.
  auto restated = [](double v, const char* unit) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 99.95 ? " (%.0f %s)" : " (%.3g %s)", v, unit);
    return std::string(buf);
  };
  if (b >= 1024 * 1024) return s + restated(static_cast<double>(b) / (1024.0 * 1024.0), "MB");
  if (b >= 1024) return s + restated(static_cast<double>(b) / 1024.0, "KB");
  return s;
}

std::vector<LabelledLine> proxifier_lines(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> programs = {"chrome.exe", "firefox.exe", "Dropbox.exe",
                                             "Skype.exe", "QQ.exe"};
  const std::vector<std::string> targets = {"proxy.cse.cuhk.edu.hk:5070", "www.google.com:443",
                                            "clients1.google.com:443", "183.62.156.108:22",
                                            "play.google.com:443"};
  const std::string proxy = "proxy.cse.cuhk.edu.hk:5070";
  std::vector<LabelledLine> out;
  for (int i = 0; i < n; ++i) {
    char head[64];
    std::snprintf(head, sizeof head, "[10.30 %02d:%02d:%02d] ", 16 + i / 3600, i / 60 % 60, i % 60);
    const std::string& program = programs[rng() % programs.size()];
    const std::string& target = targets[rng() % targets.size()];
    const std::string pre = head + program + " - " + target + " ";
    const int pick = static_cast<int>(rng() % 20);
    if (pick < 8) {
      out.push_back({pre + "open through proxy " + proxy + " HTTPS", 2});
    } else if (pick < 17) {
      const int lifetime = static_cast<int>(rng() % 4);
      const std::string life = lifetime == 0   ? "<1 sec"
                               : lifetime == 1 ? "00:0" + std::to_string(rng() % 10)
                               : lifetime == 2 ? "02:" + std::to_string(10 + rng() % 50)
                                               : "1:02:" + std::to_string(10 + rng() % 50);
      const std::string sent = size_text(rng);
      const std::string received = size_text(rng);
      out.push_back(
          {pre + "close, " + sent + " sent, " + received + " received, lifetime " + life, 8});
    } else if (pick == 17) {
      out.push_back({pre + "error : Could not connect to proxy " + proxy + " - Could not resolve " +
                         proxy + " error " + std::to_string(11001 + rng() % 3),
                     3});
    } else if (pick == 18) {
      out.push_back({pre + "error : Could not connect through proxy " + proxy +
                         " - Proxy server cannot establish a connection with the target, status "
                         "code " +
                         std::to_string(rng() % 2 ? 403 : 502),
                     5});
    } else {
      out.push_back({pre + "error : A connection request was canceled before the completion.", 7});
    }
  }
  return out;
}

TEST(LogUnits, ProxifierEventsGroupExactly) {
  for (const uint64_t seed : {30, 31, 32, 33}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<LabelledLine> lines = proxifier_lines(600, seed);
    std::string bytes;
    std::vector<int> truth;
    for (const LabelledLine& l : lines) bytes += l.line + "\n", truth.push_back(l.event);
    const LogSet set = parse_logs({{"proxifier.log", bytes}}, LogOptions{});
    ASSERT_EQ(set.files[0].format, "proxifier");
    ASSERT_EQ(set.records.size(), lines.size());
    std::vector<uint32_t> found;
    for (const LogRecord& r : set.records) found.push_back(r.cluster);
    EXPECT_DOUBLE_EQ(grouping_accuracy(truth, found), 1.0);
    EXPECT_EQ(set.drain.cluster_count(), 5u);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].event != 8) continue;
      EXPECT_EQ(set.drain.template_text(found[i]),
                "<*> close, <*> sent, <*> received, lifetime <*>");
      break;
    }
  }
  // The parameters are whole quantities.
  Drain d;
  d.add("proxy.cse.cuhk.edu.hk:5070 close, 0 bytes sent, 0 bytes received, lifetime 00:01");
  const std::string m =
      "www.google.com:443 close, 1190 bytes (1.16 KB) sent, 1727 bytes (1.68 KB) received, "
      "lifetime <1 sec";
  const uint32_t c = d.add(m);
  std::vector<Token> tokens;
  std::vector<std::string_view> params;
  tokenize(m, tokens, 256);
  d.params(c, tokens, params);
  EXPECT_EQ(params, (std::vector<std::string_view>{"www.google.com:443", "1190 bytes (1.16 KB)",
                                                   "1727 bytes (1.68 KB)", "<1 sec"}));
}

}  // namespace
}  // namespace snailtrail::logs::test_logs_units
