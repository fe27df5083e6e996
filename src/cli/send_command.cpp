// `snailtrail send`: replay a trace to `snailtrail serve` as a live producer.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "importers/importer.hpp"
#include "serve/auth.hpp"
#include "serve/nats_link.hpp"
#include "serve/sender.hpp"

namespace snailtrail::cli {
namespace {

// "1x", "10x", "2.5" or "max" (0: no pacing).
double parse_speed(const std::string& s) {
  if (s == "max") return 0;
  std::string digits = s;
  if (!digits.empty() && (digits.back() == 'x' || digits.back() == 'X')) digits.pop_back();
  const std::optional<double> v = parse_number(digits);
  if (!v || !(*v > 0))
    throw std::invalid_argument("--speed must be like 1x, 10x or max, not \"" + s + "\"");
  return *v;
}

// "0,3,5-7" -> {0, 3, 5, 6, 7}.
std::vector<uint32_t> parse_workers(const std::string& list) {
  std::vector<uint32_t> ids;
  size_t pos = 0;
  while (pos <= list.size() && !list.empty()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    try {
      if (dash == std::string::npos) {
        ids.push_back(static_cast<uint32_t>(std::stoul(item)));
      } else {
        const uint32_t a = static_cast<uint32_t>(std::stoul(item.substr(0, dash)));
        const uint32_t b = static_cast<uint32_t>(std::stoul(item.substr(dash + 1)));
        if (b < a || b - a > 1'000'000) throw std::invalid_argument("range");
        for (uint32_t w = a; w <= b; ++w) ids.push_back(w);
      }
    } catch (const std::exception&) {
      throw std::invalid_argument("--workers: bad item \"" + item + "\" (expected e.g. 0,3,5-7)");
    }
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

CommandRunner add_send_command(CLI::App& app) {
  struct Args {
    std::string trace;
    std::string to = "127.0.0.1:7878";
    double rate = 0;
    std::string speed = "max";
    std::string workers;
    std::string format = "snail";
    std::string importer = "auto";
    bool quiet = false;
    uint64_t repeat = 1;
    double connect_timeout = 5;
    bool resume = false;
    std::string token_file;
    std::string tls_ca;
    std::string nats_creds, nats_tls_cert, nats_tls_key;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "send", "Replay a trace to `snailtrail serve` as a live producer; exits when it is sent");
  cmd->add_option("TRACE", args->trace, "Trace file in any format snailtrail imports")->required();
  cmd->add_option("--to", args->to,
                  "Address of serve's --tcp listener (tls://HOST:PORT: over TLS, verified "
                  "against the system's CA store or --tls-ca), or a JetStream stream "
                  "nats://[USER:PASS@]HOST:PORT/STREAM (tls://... for TLS)")
      ->capture_default_str();
  cmd->add_option("--rate", args->rate, "At most this many events per second (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--speed", args->speed,
                  "Pace by event time: 1x (as recorded), 10x (ten times faster) or max")
      ->capture_default_str();
  cmd->add_option("--workers", args->workers,
                  "Send only these workers' events (e.g. 0,3,5-7): one producer per host")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "Stream framing: snail (binary) or jsonl")
      ->check(CLI::IsMember({"snail", "jsonl"}))
      ->capture_default_str();
  cmd->add_option("--importer", args->importer, "Input format: " + importers::importer_names())
      ->capture_default_str();
  cmd->add_option("--repeat", args->repeat,
                  "Send the trace N times, each copy later by the trace's span (load tests)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--connect-timeout", args->connect_timeout,
                  "Seconds to retry while the server is not up yet (nats://: refused "
                  "credentials or TLS end at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--resume", args->resume,
                "nats:// only: publish what the stream does not hold yet of this trace (after a "
                "send that failed or was killed; same trace, --workers, --rate and --speed)");
  cmd->add_option("--token-file", args->token_file,
                  "Send the token in FILE (its first line) as the stream's first line, for a "
                  "serve started with --token-file (TCP only)");
  cmd->add_option("--tls-ca", args->tls_ca,
                  "Connect over TLS, trusting the CA certificate(s) in this PEM file instead of "
                  "the system's CA store (a serve started with --tls-cert, or a nats-server "
                  "with TLS for nats://); the certificate must name the --to host");
  cmd->add_option("--nats-creds", args->nats_creds,
                  "nats:// only: present this NATS credentials file (user JWT and nkey seed) to "
                  "nats-server");
  cmd->add_option("--nats-tls-cert", args->nats_tls_cert,
                  "nats:// only: a client certificate (PEM) for a nats-server with --tlsverify; "
                  "needs --nats-tls-key");
  cmd->add_option("--nats-tls-key", args->nats_tls_key, "The PEM private key of --nats-tls-cert");
  cmd->add_flag("--quiet,-q", args->quiet, "Print nothing when done");
  return [cmd, args]() {
    if (!*cmd) return -1;
    serve::SendOptions o;
    o.to = args->to;
    o.rate = args->rate;
    o.speed = parse_speed(args->speed);
    o.workers = parse_workers(args->workers);
    o.jsonl = args->format == "jsonl";
    o.repeat = args->repeat;
    o.connect_timeout_s = args->connect_timeout;
    o.resume = args->resume;
    o.tls_ca = args->tls_ca;
    o.nats_creds = args->nats_creds;
    o.nats_tls_cert = args->nats_tls_cert;
    o.nats_tls_key = args->nats_tls_key;
    if (!serve::is_nats_address(o.to) &&
        !(o.nats_creds.empty() && o.nats_tls_cert.empty() && o.nats_tls_key.empty()))
      throw std::invalid_argument(
          "--nats-creds, --nats-tls-cert and --nats-tls-key apply to nats:// destinations");
    if (!args->token_file.empty()) {
      if (serve::is_nats_address(o.to))
        throw std::invalid_argument(
            "--token-file applies to TCP destinations, not nats:// (put the NATS token in the "
            "URL: nats://TOKEN@HOST:PORT/STREAM)");
      o.token = serve::read_token_file(args->token_file, "--token-file");
    }
    const Trace trace = importers::import_trace(args->trace, args->importer);
    cli::warn_if_cut(trace);
    const serve::SendStats s = serve::is_nats_address(o.to) ? serve::send_trace_nats(trace, o)
                                                            : serve::send_trace(trace, o);
    if (!args->quiet)
      fmt::print(stderr, "sent {} events ({} bytes) to {} in {:.3f} s ({:.0f} events/s){}\n",
                 s.events, s.bytes, serve::redact_nats_url(o.to), s.seconds,
                 s.seconds > 0 ? static_cast<double>(s.events) / s.seconds : 0.0,
                 o.resume ? fmt::format("; {} events were stored already", s.skipped_events) : "");
    return 0;
  };
}

}  // namespace snailtrail::cli
