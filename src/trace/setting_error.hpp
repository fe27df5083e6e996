// Errors about a setting a caller passed to library code, typed by what went wrong:
//   UsageError  the value is not allowed (a zero --retain, an unknown strategy): exit 2;
//   InputError  the value is allowed but what it names could not be used (a command
//               that does not run, a timer the system refuses): exit 1.
// Their messages name settings by field ("rate", "log_bins"), never by a command-line
// flag: the library does not know how its caller spells them. what() writes the field
// names as they are; the CLI renders the message with its own flag for each field
// (src/cli/setting_flags.cpp), so the user reads "--rate must be positive".
//
//   throw UsageError({field("rate"), " must be positive"});
#pragma once

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snailtrail {

// One piece of a setting error's message: plain text, or the name of a field.
struct MessagePart {
  std::string text;
  bool is_field = false;
  MessagePart(std::string t) : text(std::move(t)) {}  // NOLINT: implicit on purpose
  MessagePart(const char* t) : text(t) {}             // NOLINT
  MessagePart(std::string t, bool f) : text(std::move(t)), is_field(f) {}
};

// The name of the setting a message is about, e.g. field("rate").
inline MessagePart field(std::string name) {
  return {std::move(name), true};
}

// The message pieces shared by UsageError and InputError.
class SettingMessage {
 public:
  explicit SettingMessage(std::initializer_list<MessagePart> parts) : parts_(parts) {}

  // The message with each field written by `name_of(field)` (the CLI: its flag).
  template <typename NameOf>
  std::string render(NameOf&& name_of) const {
    std::string s;
    for (const MessagePart& p : parts_) s += p.is_field ? std::string(name_of(p.text)) : p.text;
    return s;
  }
  // The message with the field names as they are.
  std::string plain() const {
    return render([](const std::string& f) -> const std::string& { return f; });
  }
  // The fields the message names, in order.
  std::vector<std::string> fields() const {
    std::vector<std::string> out;
    for (const MessagePart& p : parts_)
      if (p.is_field) out.push_back(p.text);
    return out;
  }

 private:
  std::vector<MessagePart> parts_;
};

// A setting's value is not allowed (the caller's mistake; the CLI exits 2).
class UsageError : public std::invalid_argument, public SettingMessage {
 public:
  UsageError(std::initializer_list<MessagePart> parts)
      : std::invalid_argument(SettingMessage(parts).plain()), SettingMessage(parts) {}
};

// A setting's value is allowed but what it names could not be used (the CLI exits 1).
class InputError : public std::runtime_error, public SettingMessage {
 public:
  InputError(std::initializer_list<MessagePart> parts)
      : std::runtime_error(SettingMessage(parts).plain()), SettingMessage(parts) {}
};

}  // namespace snailtrail
