// A small ordered JSON value for the `shmc` tool: every command builds one,
// then prints it as JSON (--json, and each `dump` line) or as indented text.
//
// Strings hold bytes. Dump() escapes them so that any byte string is valid
// JSON: printable ASCII as is, control bytes and '"' '\' escaped, and every
// byte >= 0x7f as \u00XX (so the string decoded as Latin-1 gives the exact
// bytes back).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace shmc_tool {

class Json {
 public:
  enum class Type { kNull, kBool, kInt, kUint, kDouble, kString, kArray,
                    kObject };

  Json() = default;
  Json(bool b) : type_(Type::kBool), b_(b) {}  // NOLINT: implicit on purpose
  template <class T, class = std::enable_if_t<std::is_integral<T>::value &&
                                              !std::is_same<T, bool>::value>>
  Json(T v)  // NOLINT
      : type_(std::is_signed<T>::value ? Type::kInt : Type::kUint),
        i_(static_cast<int64_t>(v)),
        u_(static_cast<uint64_t>(v)) {}
  Json(double d) : type_(Type::kDouble), d_(d) {}  // NOLINT
  Json(std::string s) : type_(Type::kString), s_(std::move(s)) {}  // NOLINT
  Json(const char* s) : type_(Type::kString), s_(s) {}  // NOLINT

  static Json Object() { Json j; j.type_ = Type::kObject; return j; }
  static Json Array() { Json j; j.type_ = Type::kArray; return j; }

  // Object: appends (or replaces) `key`; returns *this for chaining.
  Json& Set(const std::string& key, Json value);
  // Array: appends.
  Json& Push(Json value);
  // Object member (nullptr if absent or not an object).
  const Json* Get(const std::string& key) const;

  Type type() const { return type_; }
  const std::vector<Json>& items() const { return items_; }
  // Scalar as text: strings without quotes, null as "-".
  std::string Plain() const;
  bool empty() const { return items_.empty() && members_.empty(); }

  // Compact, one line.
  std::string Dump() const;
  // Indented "key: value" lines for people.
  std::string Text() const;

 private:
  void DumpTo(std::string* out) const;
  void TextTo(std::string* out, int indent) const;
  std::string Scalar() const;

  Type type_ = Type::kNull;
  bool b_ = false;
  int64_t i_ = 0;
  uint64_t u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

// JSON string literal (with quotes) for arbitrary bytes.
std::string JsonQuote(const std::string& bytes);
// Lower-case hex of arbitrary bytes.
std::string Hex(const void* data, size_t n);

}  // namespace shmc_tool
