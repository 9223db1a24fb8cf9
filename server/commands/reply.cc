// The RESP2 writers (server/commands/reply.h).
#include "server/commands/reply.h"

#include <charconv>

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

}  // namespace shmkv
