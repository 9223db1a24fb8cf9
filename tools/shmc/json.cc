#include "tools/shmc/json.h"

#include <cmath>
#include <cstdio>

namespace shmc_tool {

namespace {

// Bytes as the UTF-8 of the Latin-1 characters they are, so the library
// prints (with ensure_ascii) each byte >= 0x80 as \u00XX.
std::string Latin1(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

// A copy of `j` whose strings (values and member names) are Latin1's.
Json Printable(const Json& j) {
  if (j.is_string()) return Latin1(j.get_ref<const std::string&>());
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& item : j) out.push_back(Printable(item));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out[Latin1(it.key())] = Printable(it.value());
    }
    return out;
  }
  return j;
}

bool IsScalar(const Json& j) { return !j.is_array() && !j.is_object(); }

// Strings people can read need no quotes in text output, and a fraction
// needs six digits, not the seventeen that give its exact double back.
std::string TextScalar(const Json& j) {
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", d);
    return buf;
  }
  std::string scalar = Line(j);
  if (!j.is_string() || scalar.size() < 3) return scalar;
  std::string inner = scalar.substr(1, scalar.size() - 2);
  for (char c : inner) {
    if (c == '\\' || c == '"' || c == ' ' || c == ',') return scalar;
  }
  return inner;
}

void TextTo(const Json& j, std::string* out, int indent) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const Json& v = it.value();
      *out += pad + it.key() + ":";
      if (IsScalar(v) || v.empty()) {
        *out += " " + (IsScalar(v) ? TextScalar(v)
                                   : std::string(v.is_array() ? "[]" : "{}")) +
                "\n";
      } else if (v.is_array() && IsScalar(v[0])) {
        std::string line;
        for (const Json& item : v) {
          line += (line.empty() ? " " : ", ") + TextScalar(item);
        }
        *out += line + "\n";
      } else {
        *out += "\n";
        TextTo(v, out, indent + 1);
      }
    }
  } else if (j.is_array()) {
    for (const Json& item : j) {
      bool flat = item.is_object() && !item.empty();
      for (const Json& m : item) flat = flat && IsScalar(m);
      if (IsScalar(item)) {
        *out += pad + "- " + TextScalar(item) + "\n";
      } else if (flat) {
        // A record of scalars reads best on one line.
        std::string line;
        for (auto it = item.begin(); it != item.end(); ++it) {
          line += (line.empty() ? "" : ", ") + it.key() + ": " +
                  TextScalar(it.value());
        }
        *out += pad + "- " + line + "\n";
      } else {
        *out += pad + "-\n";
        TextTo(item, out, indent + 1);
      }
    }
  } else {
    *out += pad + TextScalar(j) + "\n";
  }
}

}  // namespace

const Json* Find(const Json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string Plain(const Json& j) {
  if (j.is_string()) return j.get_ref<const std::string&>();
  if (j.is_null()) return "-";
  return Line(j);
}

std::string Line(const Json& j) {
  return Printable(j).dump(-1, ' ', true);
}

std::string Text(const Json& j) {
  std::string out;
  TextTo(j, &out, 0);
  return out;
}

std::string Hex(const void* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  const unsigned char* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

}  // namespace shmc_tool
