// Terminal widths of names, their abbreviation to a column and their printable form
// (output/names.hpp): the table's columns are measured in display columns, not bytes, a
// cut name keeps what tells it apart from its neighbours, and a name's control
// characters are shown as escapes instead of reaching the terminal.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "output/names.hpp"
#include "trace/json_text.hpp"

namespace snailtrail {
namespace {

// Decodes the UTF-8 code point at s[i]; sets `len` to its bytes (1 for an invalid byte,
// which then counts as one column).
uint32_t decode_utf8(std::string_view s, size_t i, size_t& len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    len = 1;
    return c;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) >> 6) != 2) {
      len = 1;
      return c;
    }
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  len = n;
  return cp;
}

size_t code_point_width(uint32_t cp) {
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || cp == 0xfe0f) return 0;
  const bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
                    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
                    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

// Byte offset where the longest suffix of at most `cols` columns starts (code points are
// decoded forwards, so the offsets are boundaries).
size_t suffix_start(std::string_view s, size_t cols) {
  std::vector<std::pair<size_t, size_t>> points;  // (offset, width)
  for (size_t i = 0, len; i < s.size(); i += len)
    points.emplace_back(i, code_point_width(decode_utf8(s, i, len)));
  size_t w = 0, start = s.size();
  for (size_t k = points.size(); k-- > 0;) {
    if (w + points[k].second > cols) break;
    w += points[k].second;
    start = points[k].first;
  }
  return start;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         (static_cast<unsigned char>(c) & 0x80);
}

// Runs of digits [begin, end): numbers tell instances, stages and partitions apart.
std::vector<std::pair<size_t, size_t>> digit_runs(std::string_view name) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < name.size();) {
    if (!is_digit(name[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < name.size() && is_digit(name[j])) ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  return runs;
}

// The length of the escape printable() writes that starts `s` (\n, \r, \t, \xHH,
// \uHHHH), or 0.
size_t escape_length(std::string_view s) {
  const auto hex = [&](size_t from, size_t n) {
    if (s.size() < from + n) return false;
    for (size_t k = from; k < from + n; ++k)
      if (!std::isxdigit(static_cast<unsigned char>(s[k]))) return false;
    return true;
  };
  if (s.size() < 2 || s[0] != '\\') return 0;
  if (s[1] == 'n' || s[1] == 'r' || s[1] == 't') return 2;
  if (s[1] == 'x') return hex(2, 2) ? 4 : 0;
  if (s[1] == 'u') return hex(2, 4) ? 6 : 0;
  return 0;
}

// A candidate abbreviation: name[0, head) + "…" + name[tail, end).
struct Cut {
  size_t head, tail;
  int kind;  // preference on ties: 2 head with number, 1 head up to a delimiter, 0 end only
};

// The abbreviation of one name to `width` columns (width >= 2, the name wider): builds
// the candidate cuts, then keeps the one that ranks best.
class Abbreviator {
 public:
  Abbreviator(std::string_view name, size_t width)
      : name_(name), width_(width), runs_(digit_runs(name)) {}

  std::vector<Cut> candidates() const {
    std::vector<Cut> cuts;
    cuts.push_back(cut(0, 0));
    // The leading identifier: up to the end of the first number, if "…" and a bit of the
    // end still fit after it.
    if (!runs_.empty() && width_of(0, runs_[0].second) + 2 <= width_) {
      size_t head = runs_[0].second;
      // Keep a delimiter right after the number ("stage 50 (") when room remains.
      for (std::string_view d : {" (", ": ", " - ", "(", ":"})
        if (name_.substr(head, d.size()) == d) {
          if (width_of(0, head + d.size()) + 1 + 6 <= width_) head += d.size();
          break;
        }
      cuts.push_back(cut(head, 2));
    }
    // A short head up to the first delimiter: "Source:", "Window(".
    const size_t d = name_.find_first_of(":(");
    if (d != std::string_view::npos && d >= 2 && width_of(0, d + 1) <= width_ / 3)
      cuts.push_back(cut(d + 1, 1));
    return cuts;
  }

  // Best: the most whole numbers kept, then the first number (usually the identifier),
  // then an end that starts at a word boundary, then a head followed by a good part of
  // the end (a third of the width), then the end alone, then the most of the name.
  auto rank(const Cut& c) const {
    const size_t tail_w = width_of(c.tail, name_.size());
    const int pref = c.kind == 0 ? 1 : 3 * tail_w >= width_ ? 2 : 0;
    return std::make_tuple(kept(c), first_kept(c), clean(c), pref, width_of(0, c.head) + tail_w);
  }

  std::string render(const Cut& c) const {
    std::string out(name_.substr(0, c.head));
    out += "…";
    out += name_.substr(c.tail);
    return out;
  }

 private:
  size_t width_of(size_t begin, size_t end) const {
    return display_width(name_.substr(begin, end - begin));
  }

  // The cut after a head of `head` bytes (trailing spaces dropped from the head).
  Cut cut(size_t head, int kind) const {
    const size_t tail = tail_after(head);
    head = escape_around(head).first;
    while (head > 0 && name_[head - 1] == ' ') --head;
    return {head, tail, kind};
  }

  // The escape printable() wrote (\n, \x1b, \u202e) that byte offset `i` cuts through,
  // as [begin, end); {i, i} when it cuts none. A cut keeps an escape whole or drops it:
  // half of one ("…1b[31m") reads as part of the name.
  std::pair<size_t, size_t> escape_around(size_t i) const {
    for (size_t b = i > 5 ? i - 5 : 0; b < i; ++b)
      if (name_[b] == '\\') {
        const size_t len = escape_length(name_.substr(b));
        if (len != 0 && b + len > i) return {b, b + len};
      }
    return {i, i};
  }

  // The end after a head of `head` bytes, starting at a word boundary when one is near.
  size_t tail_after(size_t head) const {
    const size_t room = width_ - 1 - width_of(0, head);
    size_t t = std::max(head, suffix_start(name_, room));
    if (t > 0 && t < name_.size() && is_word(name_[t - 1]) && is_word(name_[t])) {
      // Mid-word: skip to the next boundary if it is within the first third of the end
      // and skips no digit.
      const size_t limit = t + room / 3;
      for (size_t k = t; k < name_.size() && k <= limit; ++k) {
        if (is_digit(name_[k])) break;
        if (!is_word(name_[k])) {
          t = k;
          break;
        }
      }
    }
    t = escape_around(t).second;
    while (t < name_.size() &&
           (name_[t] == ' ' || name_[t] == ':' || name_[t] == ',' || name_[t] == ';'))
      ++t;
    return t;
  }

  int kept(const Cut& c) const {
    int n = 0;
    for (const auto& [rs, re] : runs_) n += re <= c.head || rs >= c.tail;
    return n;
  }
  bool first_kept(const Cut& c) const {
    return !runs_.empty() && (runs_[0].second <= c.head || runs_[0].first >= c.tail);
  }
  bool clean(const Cut& c) const {
    return c.tail == 0 || c.tail >= name_.size() || !is_word(name_[c.tail - 1]) ||
           !is_word(name_[c.tail]);
  }

  std::string_view name_;
  size_t width_;
  std::vector<std::pair<size_t, size_t>> runs_;
};

}  // namespace

namespace {

// Code points printable() escapes among the valid ones: C0 controls and DEL, C1 controls,
// the line and paragraph separators and the bidirectional embeddings, overrides and
// isolates (they reorder the text around them on the terminal).
bool is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void put_escape(std::string& out, uint32_t cp) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '\\';
  switch (cp) {
    case '\n':
      out += 'n';
      return;
    case '\r':
      out += 'r';
      return;
    case '\t':
      out += 't';
      return;
    default:
      break;
  }
  const int digits = cp <= 0x7f ? 2 : 4;
  out += cp <= 0x7f ? 'x' : 'u';
  for (int d = digits - 1; d >= 0; --d) out += kHex[(cp >> (4 * d)) & 15];
}

}  // namespace

std::string printable(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const bool plain =
      std::all_of(p, p + s.size(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; });
  if (plain) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(p + i, s.size() - i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for each byte that starts no valid sequence
      ++i;
      continue;
    }
    size_t decoded = 0;
    const uint32_t cp = decode_utf8(s, i, decoded);
    if (is_control(cp))
      put_escape(out, cp);
    else
      out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (size_t i = 0, len; i < s.size(); i += len) w += code_point_width(decode_utf8(s, i, len));
  return w;
}

std::string abbreviate(std::string_view name, size_t width) {
  if (display_width(name) <= width) return std::string(name);
  if (width == 0) return "";
  if (width == 1) return "…";
  const Abbreviator a(name, width);
  const std::vector<Cut> cuts = a.candidates();
  const Cut* best = &cuts[0];
  for (const Cut& c : cuts)
    if (a.rank(c) > a.rank(*best)) best = &c;
  return a.render(*best);
}

std::string fit_column(std::string_view name, size_t width) {
  std::string s = abbreviate(name, width);
  s.append(width - std::min(width, display_width(s)), ' ');
  return s;
}

std::string abbreviate_pair(std::string_view a, std::string_view sep, std::string_view b,
                            size_t width) {
  const size_t aw = display_width(a), bw = display_width(b), sw = display_width(sep);
  if (aw + sw + bw <= width) return std::string(a) + std::string(sep) + std::string(b);
  if (width < sw + 2) return abbreviate(std::string(a) + std::string(sep) + std::string(b), width);
  const size_t room = width - sw;
  size_t a_room = (room + 1) / 2;
  if (aw <= a_room)
    a_room = aw;
  else if (bw <= room - a_room)
    a_room = room - bw;
  return abbreviate(a, a_room) + std::string(sep) + abbreviate(b, room - a_room);
}

}  // namespace snailtrail
