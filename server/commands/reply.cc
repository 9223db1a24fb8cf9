// The RESP2 writers and RESP3's own types (server/commands/reply.h).
#include "server/commands/reply.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace shmkv {

namespace {

// A reply's first line: the kind, the number, CRLF (std::to_chars, not
// snprintf: every reply has one, and the format parser showed in profiles).
template <class Int>
void Header(std::string* out, char kind, Int v) {
  char buf[24];
  buf[0] = kind;
  char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, v).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out->append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

void ReplySimple(std::string* out, std::string_view s) {
  out->push_back('+');
  out->append(s.data(), s.size());
  out->append("\r\n", 2);
}

void ReplyError(std::string* out, std::string_view msg) {
  out->push_back('-');
  for (char c : msg) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out->append("\r\n", 2);
}

void ReplyInt(std::string* out, int64_t v) { Header(out, ':', v); }

void ReplyBulk(std::string* out, std::string_view s) {
  Header(out, '$', s.size());
  out->append(s.data(), s.size());
  out->append("\r\n", 2);
}

void ReplyNull(std::string* out) { out->append("$-1\r\n", 5); }

void ReplyArray(std::string* out, size_t n) { Header(out, '*', n); }

std::string DoubleReplyText(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (std::isnan(d)) return "nan";
  char buf[64];
  int len = std::snprintf(buf, sizeof(buf), "%.17g", d);
  return std::string(buf, static_cast<size_t>(len));
}

void Reply::Map(size_t n) {
  if (resp3_) {
    Header(out_, '%', n);
  } else {
    Header(out_, '*', 2 * n);
  }
}

void Reply::Set(size_t n) { Header(out_, resp3_ ? '~' : '*', n); }

void Reply::Push(size_t n) { Header(out_, resp3_ ? '>' : '*', n); }

void Reply::Double(double d) {
  std::string text = DoubleReplyText(d);
  if (!resp3_) return ReplyBulk(out_, text);
  out_->push_back(',');
  out_->append(text);
  out_->append("\r\n", 2);
}

void Reply::Bool(bool b) {
  if (resp3_) {
    Raw(b ? "#t\r\n" : "#f\r\n");
  } else {
    ReplyInt(out_, b ? 1 : 0);
  }
}

void Reply::BigNumber(std::string_view digits) {
  if (!resp3_) return ReplyBulk(out_, digits);
  out_->push_back('(');
  out_->append(digits.data(), digits.size());
  out_->append("\r\n", 2);
}

void Reply::Verbatim(std::string_view text, std::string_view format) {
  if (!resp3_) return ReplyBulk(out_, text);
  Header(out_, '=', text.size() + format.size() + 1);
  out_->append(format.data(), format.size());
  out_->push_back(':');
  out_->append(text.data(), text.size());
  out_->append("\r\n", 2);
}

}  // namespace shmkv
