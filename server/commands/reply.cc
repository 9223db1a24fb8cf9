// The RESP2 writers (server/commands/reply.h).
#include "server/commands/reply.h"

#include <cstdio>

namespace shmkv {

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

void ReplyInt(std::string* out, int64_t v) {
  char buf[32];
  int k = std::snprintf(buf, sizeof(buf), ":%lld\r\n",
                        static_cast<long long>(v));
  out->append(buf, static_cast<size_t>(k));
}

void ReplyBulk(std::string* out, std::string_view s) {
  char buf[32];
  int k = std::snprintf(buf, sizeof(buf), "$%zu\r\n", s.size());
  out->append(buf, static_cast<size_t>(k));
  out->append(s.data(), s.size());
  out->append("\r\n", 2);
}

void ReplyNull(std::string* out) { out->append("$-1\r\n", 5); }

void ReplyArray(std::string* out, size_t n) {
  char buf[32];
  int k = std::snprintf(buf, sizeof(buf), "*%zu\r\n", n);
  out->append(buf, static_cast<size_t>(k));
}

}  // namespace shmkv
