// Taking RESP replies apart in tests.
#pragma once

#include <string>
#include <vector>

namespace shmkv_test {

// The strings of a reply that is an array of bulk strings ("*n" then n
// "$len" and their bytes), in order.
inline std::vector<std::string> BulkElements(const std::string& reply) {
  std::vector<std::string> out;
  size_t at = reply.find("\r\n");
  at = at == std::string::npos ? reply.size() : at + 2;
  while (at < reply.size()) {
    size_t e = reply.find("\r\n", at);
    if (e == std::string::npos) break;
    size_t len = std::stoul(reply.substr(at + 1, e - at - 1));
    out.push_back(reply.substr(e + 2, len));
    at = e + 2 + len + 2;
  }
  return out;
}

}  // namespace shmkv_test
