// A `serve --otlp` receiver for tests (src/serve/otlp_receiver.hpp): on an ephemeral port
// of 127.0.0.1, writing its critical paths to a temporary file, with an HTTP client.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"
#include "serve/otlp_receiver.hpp"
#include "temp_file.hpp"

namespace snailtrail::testing {

class TestReceiver {
 public:
  TestReceiver(serve::OtlpOptions o, const std::string& name) {
    o.address = "127.0.0.1:0";
    path_ = write_temp(name, "");
    out_ = std::fopen(path_.c_str(), "w");
    receiver_ = std::make_unique<serve::OtlpReceiver>(o, out_);
    receiver_->start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", receiver_->port());
  }
  ~TestReceiver() {
    receiver_->stop();
    std::fclose(out_);
  }
  TestReceiver(const TestReceiver&) = delete;
  TestReceiver& operator=(const TestReceiver&) = delete;

  serve::OtlpReceiver& operator*() { return *receiver_; }
  httplib::Client& client() { return *client_; }
  httplib::Result post(const std::string& body, const char* type,
                       const httplib::Headers& headers = {}) {
    return client_->Post("/v1/traces", headers, body, type);
  }
  // GET `target`, expecting `status`; the body.
  std::string get(const std::string& target, int status = 200) {
    auto res = client_->Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return {};
    EXPECT_EQ(res->status, status) << target << ": " << res->body;
    return res->body;
  }
  // Waits (up to 60 s) for `n` lines of paths.
  std::vector<std::string> lines(size_t n) {
    std::vector<std::string> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      out.clear();
      const std::string text = slurp(path_);
      for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
        out.push_back(text.substr(at, nl - at));
      if (out.size() >= n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return out;
  }
  // Waits (up to 60 s) until `n` traces' paths are written.
  void wait_written(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (receiver_->counters().traces_written < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(receiver_->counters().traces_written, n);
  }

 private:
  std::string path_;
  std::FILE* out_ = nullptr;
  std::unique_ptr<serve::OtlpReceiver> receiver_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace snailtrail::testing
