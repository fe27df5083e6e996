// HTTP from the tests to a server they started on 127.0.0.1 (serve --http, run --http).
#pragma once

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "process_util.hpp"

namespace snailtrail::testing {

// GET http://127.0.0.1:PORT/TARGET: the body ("" when there is no answer); the status
// (-1 when there is no answer) and Content-Type when asked for.
inline std::string http_get(int port, const std::string& target, int* status = nullptr,
                            std::string* content_type = nullptr) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto res = client.Get(target.c_str());
  if (status) *status = res ? res->status : -1;
  if (res && content_type) *content_type = res->get_header_value("Content-Type");
  return res ? res->body : std::string();
}

// The port of `run --http`'s "live dashboard on http[s]://127.0.0.1:PORT/" in the file
// `err` (its stderr), waiting up to `timeout_s`; -1 if it does not appear.
inline int dashboard_port(const std::filesystem::path& err, double timeout_s) {
  const std::regex re("live dashboard on https?://127\\.0\\.0\\.1:([0-9]+)/");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = slurp(err);
    if (std::regex_search(text, m, re)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

}  // namespace snailtrail::testing
