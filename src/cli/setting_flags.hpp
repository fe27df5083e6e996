// The command-line flag of each setting that library errors name (trace/setting_error.hpp):
// library code says field("log_bins"), the user typed --bins. One table for every
// command, so a setting is spelled the same wherever its error comes from.
#pragma once

#include <algorithm>
#include <array>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "trace/setting_error.hpp"

namespace snailtrail::cli {

// Setting (field) -> flag. tests/test_setting_error.cpp checks that every field named
// by a library error under src/ has its row.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 32> kSettingFlags{{
    {"apply", "--apply"},
    {"binary", "--binary"},
    {"connection_timeout", "--connection-timeout"},
    {"duration", "--duration"},
    {"follow", "--follow"},
    {"follow_importer", "--importer"},
    {"hz", "--hz"},
    {"id_regex", "--id"},
    {"ingest_buffer", "--ingest-buffer"},
    {"interval", "--interval"},
    {"log_bins", "--bins"},
    {"max_workers", "--max-workers"},
    {"mode", "--mode"},
    {"nats", "--nats"},
    {"profile", "--profile"},
    {"profile_hz", "--profile-hz"},
    {"rate", "--rate"},
    {"rate_interval", "--rate-interval"},
    {"rate_profile", "--rate-profile"},
    {"records", "--records"},
    {"reference", "--reference"},
    {"repeat", "--repeat"},
    {"retain", "--retain"},
    {"serve", "--serve"},
    {"shard", "--shard"},
    {"skew_profile", "--skew-profile"},
    {"speed_up", "--speed-up"},
    {"stdin", "--stdin"},
    {"strategy", "--strategy"},
    {"tcp", "--tcp"},
    {"tls_ca", "--tls-ca"},
    {"workers", "--workers"},
}};

// The flag of `field`, or "" when the table has no row for it.
inline std::string_view table_flag(std::string_view field) {
  const auto* row = std::find_if(kSettingFlags.begin(), kSettingFlags.end(),
                                 [&](const auto& r) { return r.first == field; });
  return row == kSettingFlags.end() ? std::string_view{} : row->second;
}

// The flag of `field`; a field without a row reads as its flag would be spelled
// ("new_knob" -> "--new-knob") rather than failing the error message.
inline std::string flag_of(std::string_view field) {
  const std::string_view f = table_flag(field);
  if (!f.empty()) return std::string(f);
  std::string s = "--" + std::string(field);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// An exception's message as the user reads it: setting errors with the CLI's flags.
inline std::string error_message(const std::exception& e) {
  if (const auto* m = dynamic_cast<const SettingMessage*>(&e)) return m->render(flag_of);
  return e.what();
}

}  // namespace snailtrail::cli
