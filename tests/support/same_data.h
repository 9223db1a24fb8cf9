// Two servers (shmkv and redis-server, or two shmkv) compared key by key:
// every key's value as a value (its DUMP payload decoded, members in
// order where the type has one) and its expiry to the millisecond.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/rdb/codec.h"
#include "tests/support/shmkv_server.h"

namespace shmkv_test {

// The replies to `cmds`, sent as one pipeline.
inline std::vector<std::string> Pipeline(
    Client* c, const std::vector<std::vector<std::string>>& cmds) {
  std::string out;
  for (const auto& cmd : cmds) out += Client::Encode(cmd);
  std::vector<std::string> replies;
  if (!c->SendRaw(out)) return replies;
  for (size_t i = 0; i < cmds.size(); ++i) replies.push_back(c->Reply());
  return replies;
}

// Every command of `cmds`, in pipelines of 5,000; true if none failed
// (the first failure is reported).
inline bool RunAll(Client* c,
                   const std::vector<std::vector<std::string>>& cmds) {
  for (size_t i = 0; i < cmds.size(); i += 5000) {
    std::vector<std::vector<std::string>> part(
        cmds.begin() + i, cmds.begin() + std::min(cmds.size(), i + 5000));
    for (const std::string& r : Pipeline(c, part)) {
      if (r.empty() || r[0] == '-') {
        ADD_FAILURE() << "a command failed: " << r;
        return false;
      }
    }
  }
  return true;
}

// The bytes of a bulk reply ("" for anything else).
inline std::string BulkBody(const std::string& reply) {
  const size_t nl = reply.find("\r\n");
  if (reply.empty() || reply[0] != '$' || nl == std::string::npos ||
      reply.size() < nl + 4) {
    return "";
  }
  return reply.substr(nl + 2, reply.size() - nl - 4);
}

// A DUMP reply as a value whose members compare in a fixed order (sets,
// hashes and sorted sets have none of their own); false if it does not
// decode.
inline bool CanonicalValue(const std::string& dump_reply,
                           shmkv::rdb::Value* v, std::string* why) {
  bool ok = false;
  if (!shmkv::rdb::Undump(BulkBody(dump_reply), 512u << 20, v, &ok, why)) {
    return false;
  }
  std::sort(v->pairs.begin(), v->pairs.end());
  std::sort(v->scored.begin(), v->scored.end());
  if (v->kind == shmkv::rdb::Value::kSet) {
    std::sort(v->items.begin(), v->items.end());
  }
  return true;
}

// `keys` hold equal values with equal expiries on both servers, in the
// database each client has selected. Returns how many differ.
inline size_t ExpectSameKeys(Client* a, Client* b,
                             const std::vector<std::string>& keys) {
  size_t differ = 0;
  for (size_t i = 0; i < keys.size(); i += 2000) {
    std::vector<std::vector<std::string>> dumps, ttls;
    for (size_t j = i; j < keys.size() && j < i + 2000; ++j) {
      dumps.push_back({"DUMP", keys[j]});
      ttls.push_back({"PEXPIRETIME", keys[j]});
    }
    std::vector<std::string> da = Pipeline(a, dumps), db = Pipeline(b, dumps);
    std::vector<std::string> ta = Pipeline(a, ttls), tb = Pipeline(b, ttls);
    if (da.size() != dumps.size() || db.size() != dumps.size()) {
      ADD_FAILURE() << "a connection closed";
      return differ + 1;
    }
    for (size_t j = 0; j < dumps.size(); ++j) {
      const std::string& key = dumps[j][1];
      shmkv::rdb::Value va, vb;
      std::string why;
      bool same = ta[j] == tb[j];
      if (da[j] == "$-1\r\n" || db[j] == "$-1\r\n") {
        same = same && da[j] == db[j];
      } else if (!CanonicalValue(da[j], &va, &why) ||
                 !CanonicalValue(db[j], &vb, &why)) {
        same = false;
      } else {
        same = same && va.kind == vb.kind && va.items == vb.items &&
               va.pairs == vb.pairs && va.scored == vb.scored;
      }
      if (!same && ++differ <= 10) {
        ADD_FAILURE() << "key " << key << " differs (expiry " << ta[j]
                      << " vs " << tb[j] << ") " << why;
      }
    }
  }
  return differ;
}

// Every key of database `db` (KEYS *), sorted.
inline std::vector<std::string> AllKeys(Client* c, int db) {
  c->Call({"SELECT", std::to_string(db)});
  std::string r = c->Call({"KEYS", "*"});
  std::vector<std::string> keys;
  size_t p = r.find("\r\n");
  while (p != std::string::npos && p + 2 < r.size()) {
    size_t len_end = r.find("\r\n", p + 2);
    if (len_end == std::string::npos || r[p + 2] != '$') break;
    size_t len = std::stoul(r.substr(p + 3, len_end - p - 3));
    keys.push_back(r.substr(len_end + 2, len));
    p = len_end + 2 + len;
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Databases `dbs` hold the same keys with the same values and expiries
// on both servers (each client is left in database 0).
inline void ExpectSameData(Client* a, Client* b, const std::vector<int>& dbs) {
  for (int db : dbs) {
    std::vector<std::string> ka = AllKeys(a, db), kb = AllKeys(b, db);
    EXPECT_EQ(ka.size(), kb.size()) << "keys in database " << db;
    EXPECT_TRUE(ka == kb) << "key names in database " << db;
    EXPECT_EQ(ExpectSameKeys(a, b, ka), 0u) << "database " << db;
  }
  a->Call({"SELECT", "0"});
  b->Call({"SELECT", "0"});
}

}  // namespace shmkv_test
