// A strict little JSON parser for tests of the `shmc` tool's output: it is
// written apart from the tool's own writer so that a bug in one is not
// hidden by the same bug in the other. Strings decode \uXXXX below 0x100 to
// one byte (the tool's documented escaping of binary data).
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace shmc_test {

struct JValue {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JValue> arr;
  std::vector<std::pair<std::string, JValue>> obj;

  const JValue* get(const std::string& key) const {
    for (const auto& m : obj) {
      if (m.first == key) return &m.second;
    }
    return nullptr;
  }
  // Convenience for tests: number at key, or -1.
  double number(const std::string& key) const {
    const JValue* v = get(key);
    return v != nullptr && v->type == kNumber ? v->num : -1;
  }
};

class JsonParser {
 public:
  // False if `text` is not exactly one JSON value (whitespace around).
  static bool Parse(const std::string& text, JValue* out) {
    JsonParser p(text);
    p.Ws();
    if (!p.Value(out)) return false;
    p.Ws();
    return p.i_ == text.size();
  }

 private:
  explicit JsonParser(const std::string& s) : s_(s) {}

  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' ||
                              s_[i_] == '\t' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Lit(const char* w) {
    size_t n = std::string(w).size();
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool Value(JValue* v) {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') return Object(v);
    if (c == '[') return Array(v);
    if (c == '"') {
      v->type = JValue::kString;
      return String(&v->str);
    }
    if (Lit("true")) { v->type = JValue::kBool; v->b = true; return true; }
    if (Lit("false")) { v->type = JValue::kBool; return true; }
    if (Lit("null")) { v->type = JValue::kNull; return true; }
    return Number(v);
  }
  bool Number(JValue* v) {
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    bool digits = false;
    while (i_ < s_.size() && (isdigit(static_cast<unsigned char>(s_[i_])) ||
                              s_[i_] == '.' || s_[i_] == 'e' ||
                              s_[i_] == 'E' || s_[i_] == '+' ||
                              (s_[i_] == '-' && i_ > start))) {
      digits = true;
      ++i_;
    }
    if (!digits) return false;
    v->type = JValue::kNumber;
    v->num = std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
    return true;
  }
  bool String(std::string* out) {
    ++i_;  // opening quote
    while (i_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;  // raw control bytes are not JSON
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      char e = s_[i_++];
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned long cp = std::strtoul(s_.substr(i_, 4).c_str(), nullptr,
                                          16);
          i_ += 4;
          if (cp > 0xff) return false;  // the tool never writes these
          *out += static_cast<char>(cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  bool Array(JValue* v) {
    v->type = JValue::kArray;
    ++i_;
    Ws();
    if (i_ < s_.size() && s_[i_] == ']') { ++i_; return true; }
    for (;;) {
      JValue item;
      Ws();
      if (!Value(&item)) return false;
      v->arr.push_back(std::move(item));
      Ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == ']') { ++i_; return true; }
      if (s_[i_++] != ',') return false;
    }
  }
  bool Object(JValue* v) {
    v->type = JValue::kObject;
    ++i_;
    Ws();
    if (i_ < s_.size() && s_[i_] == '}') { ++i_; return true; }
    for (;;) {
      Ws();
      if (i_ >= s_.size() || s_[i_] != '"') return false;
      std::string key;
      if (!String(&key)) return false;
      Ws();
      if (i_ >= s_.size() || s_[i_++] != ':') return false;
      Ws();
      JValue val;
      if (!Value(&val)) return false;
      v->obj.emplace_back(std::move(key), std::move(val));
      Ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}') { ++i_; return true; }
      if (s_[i_++] != ',') return false;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace shmc_test
