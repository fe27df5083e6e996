// The kinds of import diagnostics (Trace::import_diagnostics: what an importer repaired,
// skipped or found cut, counted per file). Each kind is declared once, next to the
// importer that counts it (the Importer descriptor's `diagnostics`): the name outputs
// write, and what it means to the commands that act on it (the cut-input warning, serve's
// truncated-streams counter), so that they ask the kind, not its spelling.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace snailtrail {

enum class DiagnosticMeaning : uint8_t {
  repaired,   // a problem in complete records: counted, then repaired or skipped
  cut_input,  // the input ends inside a record: cut off while being written
};

struct DiagnosticKind {
  std::string_view name;  // as written in outputs: "spark.truncated_last_line"
  DiagnosticMeaning meaning = DiagnosticMeaning::repaired;
  constexpr bool cut_input() const { return meaning == DiagnosticMeaning::cut_input; }
};

// Shorthands for the declarations.
constexpr DiagnosticKind repaired(std::string_view name) {
  return {name, DiagnosticMeaning::repaired};
}
constexpr DiagnosticKind cut_input(std::string_view name) {
  return {name, DiagnosticMeaning::cut_input};
}

// The kind named `name` in `kinds`; nullptr if it is not there.
constexpr const DiagnosticKind* find_kind(std::span<const DiagnosticKind> kinds,
                                          std::string_view name) {
  for (const DiagnosticKind& k : kinds)
    if (k.name == name) return &k;
  return nullptr;
}

// Two declarations as one (an importer that also counts a shared model's kinds).
template <size_t A, size_t B>
constexpr std::array<DiagnosticKind, A + B> join_kinds(const std::array<DiagnosticKind, A>& a,
                                                       const std::array<DiagnosticKind, B>& b) {
  std::array<DiagnosticKind, A + B> all{};
  for (size_t i = 0; i < A; ++i) all[i] = a[i];
  for (size_t i = 0; i < B; ++i) all[A + i] = b[i];
  return all;
}

}  // namespace snailtrail
