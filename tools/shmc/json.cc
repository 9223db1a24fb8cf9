#include "tools/shmc/json.h"

#include <cmath>
#include <cstdio>

namespace shmc_tool {

Json& Json::Set(const std::string& key, Json value) {
  for (auto& m : members_) {
    if (m.first == key) {
      m.second = std::move(value);
      return *this;
    }
  }
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::Push(Json value) {
  items_.push_back(std::move(value));
  return *this;
}

const Json* Json::Get(const std::string& key) const {
  for (const auto& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

std::string JsonQuote(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
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

std::string Json::Scalar() const {
  char buf[64];
  switch (type_) {
    case Type::kNull: return "null";
    case Type::kBool: return b_ ? "true" : "false";
    case Type::kInt: return std::to_string(i_);
    case Type::kUint: return std::to_string(u_);
    case Type::kDouble:
      if (!std::isfinite(d_)) return "null";
      std::snprintf(buf, sizeof(buf), "%.6g", d_);
      return buf;
    case Type::kString: return JsonQuote(s_);
    default: return "";
  }
}

void Json::DumpTo(std::string* out) const {
  if (type_ == Type::kArray) {
    *out += '[';
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i > 0) *out += ',';
      items_[i].DumpTo(out);
    }
    *out += ']';
  } else if (type_ == Type::kObject) {
    *out += '{';
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i > 0) *out += ',';
      *out += JsonQuote(members_[i].first);
      *out += ':';
      members_[i].second.DumpTo(out);
    }
    *out += '}';
  } else {
    *out += Scalar();
  }
}

std::string Json::Plain() const {
  if (type_ == Type::kString) return s_;
  if (type_ == Type::kNull) return "-";
  return Dump();
}

std::string Json::Dump() const {
  std::string out;
  DumpTo(&out);
  return out;
}

namespace {
// Strings people can read need no quotes in text output.
std::string TextScalar(const Json& j, const std::string& scalar) {
  if (j.type() != Json::Type::kString || scalar.size() < 3) return scalar;
  std::string inner = scalar.substr(1, scalar.size() - 2);
  for (char c : inner) {
    if (c == '\\' || c == '"' || c == ' ' || c == ',') return scalar;
  }
  return inner;
}

bool IsScalar(const Json& j) {
  return j.type() != Json::Type::kArray && j.type() != Json::Type::kObject;
}
}  // namespace

void Json::TextTo(std::string* out, int indent) const {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (type_ == Type::kObject) {
    for (const auto& m : members_) {
      const Json& v = m.second;
      *out += pad + m.first + ":";
      if (IsScalar(v) || v.empty()) {
        *out += " " + (v.empty() && !IsScalar(v)
                           ? std::string(v.type_ == Type::kArray ? "[]" : "{}")
                           : TextScalar(v, v.Scalar())) + "\n";
      } else if (v.type_ == Type::kArray && IsScalar(v.items_[0])) {
        std::string line;
        for (const Json& item : v.items_) {
          line += (line.empty() ? " " : ", ") +
                  TextScalar(item, item.Scalar());
        }
        *out += line + "\n";
      } else {
        *out += "\n";
        v.TextTo(out, indent + 1);
      }
    }
  } else if (type_ == Type::kArray) {
    for (const Json& item : items_) {
      bool flat = item.type_ == Type::kObject;
      for (const auto& m : item.members_) flat = flat && IsScalar(m.second);
      if (IsScalar(item)) {
        *out += pad + "- " + TextScalar(item, item.Scalar()) + "\n";
      } else if (flat && !item.members_.empty()) {
        // A record of scalars reads best on one line.
        std::string line;
        for (const auto& m : item.members_) {
          line += (line.empty() ? "" : ", ") + m.first + ": " +
                  TextScalar(m.second, m.second.Scalar());
        }
        *out += pad + "- " + line + "\n";
      } else {
        *out += pad + "-\n";
        item.TextTo(out, indent + 1);
      }
    }
  } else {
    *out += pad + Scalar() + "\n";
  }
}

std::string Json::Text() const {
  std::string out;
  TextTo(&out, 0);
  return out;
}

}  // namespace shmc_tool
