// CONFIG GET, CONFIG SET and CONFIG's other subcommands (docs/server.md,
// "Settings"): every setting shmkv has under Redis's names, and the ones
// that change at run time (server/store/settings.h). A row in the server
// family.
#include "server/commands/config_family.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/persist_family.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

namespace {

// CONFIG SET save's value as Redis reads it: split at each space, pairs
// of seconds (at least 1) and changes (at least 0); "" is none.
bool ParseSaveSetting(std::string_view text, std::vector<SavePoint>* out) {
  out->clear();
  if (text.empty()) return true;
  std::vector<int64_t> nums;
  size_t from = 0;
  while (true) {
    size_t sp = text.find(' ', from);
    std::string word(text.substr(from, sp == std::string_view::npos
                                           ? std::string_view::npos
                                           : sp - from));
    char* end = nullptr;
    // (strtoll's clamping of an overflow stands, as in Redis)
    long long v = std::strtoll(word.c_str(), &end, 10);
    bool secs = nums.size() % 2 == 0;
    if (*end != '\0' || v < (secs ? 1 : 0)) return false;
    nums.push_back(v);
    if (sp == std::string_view::npos) break;
    from = sp + 1;
  }
  if (nums.size() % 2 != 0) return false;
  for (size_t k = 0; k < nums.size(); k += 2) {
    out->push_back(SavePoint{nums[k], nums[k + 1]});
  }
  return true;
}

// CONFIG GET pattern...: every setting shmkv has, under Redis's names where
// Redis has one. CONFIG SET: notify-keyspace-events, maxmemory and the
// compact forms' limits (server/store/settings.h) change at run time, for
// every worker;
// the rest are fixed at start, so each is refused as Redis refuses an
// immutable setting.
std::vector<std::pair<std::string, std::string>> Settings(CommandContext* c) {
  const ServerInfo& i = *c->info;
  std::vector<std::pair<std::string, std::string>> out = {
      {"port", std::to_string(i.resp_port)},
      {"bind", i.bind},
      {"protected-mode", i.protected_mode ? "yes" : "no"},
      {"requirepass", c->password != nullptr ? *c->password : ""},
      {"timeout", std::to_string(i.timeout_s)},
      {"maxmemory-clients", std::to_string(i.client_memory)},
      {"client-query-buffer-limit", std::to_string(i.max_request)},
      {"databases", "16"},
      {"notify-keyspace-events", NotifyClassesText(c->store->NotifyFlags())},
      {"dir", i.dir},
      {"save", SavePointsText(c)},
      {"dbfilename", i.dbfilename},
      {"appendonly", "no"},
      {"maxmemory-policy", "noeviction"},  // a full store answers -OOM
      {"proto-max-bulk-len", std::to_string(i.max_value)},
      {"shmkv-http-port", std::to_string(i.http_port)},
      {"shmkv-udp-port", std::to_string(i.udp_port)},
      {"shmkv-workers", std::to_string(i.workers)},
      {"shmkv-name", i.name},
      {"shmkv-capacity", std::to_string(i.capacity)},
      {"shmkv-journal-size", std::to_string(i.journal)},
  };
  for (const SettingSpec& spec : SettingSpecs()) {
    int64_t set = c->store->GetSetting(spec.id);
    // maxmemory: the limit in force, --memory unless a lower one is set.
    if (spec.id == Setting::kMaxMemory) {
      set = static_cast<int64_t>(
          set > 0 ? std::min<uint64_t>(i.memory, static_cast<uint64_t>(set))
                  : i.memory);
    }
    std::string v = spec.yes_no ? (set != 0 ? "yes" : "no")
                                : std::to_string(set);
    out.emplace_back(spec.name, v);
    if (spec.alias[0] != '\0') out.emplace_back(spec.alias, v);
  }
  return out;
}

// The setting CONFIG SET names as `name` (Redis's name or its older
// alias), if it is one of server/store/settings.h's.
const SettingSpec* FindSetting(const std::string& name) {
  for (const SettingSpec& spec : SettingSpecs()) {
    if (name == spec.name || name == spec.alias) return &spec;
  }
  return nullptr;
}

// Redis's reading of a memory size: digits and a unit (b, k, kb, m, mb,
// g, gb; k = 1000, kb = 1024), no sign. Overflow wraps as Redis's does.
bool ParseMemorySize(std::string_view v, uint64_t* out) {
  if (!v.empty() && v[0] == '-') return false;
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') {
    ++digits;
  }
  std::string unit = Lower(v.substr(digits));
  uint64_t mul = 0;
  if (unit.empty() || unit == "b") mul = 1;
  else if (unit == "k") mul = 1000;
  else if (unit == "kb") mul = 1024;
  else if (unit == "m") mul = 1000 * 1000;
  else if (unit == "mb") mul = 1024 * 1024;
  else if (unit == "g") mul = 1000ULL * 1000 * 1000;
  else if (unit == "gb") mul = 1024ULL * 1024 * 1024;
  else return false;
  uint64_t n = 0;
  for (size_t k = 0; k < digits; ++k) {
    uint64_t d = static_cast<uint64_t>(v[k] - '0');
    n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
  }
  *out = n * mul;
  return true;
}

// A CONFIG SET value for `spec`: false with Redis's reason when it is not
// one.
bool ParseSettingValue(const SettingSpec& spec, std::string_view text,
                       int64_t* v, std::string* why) {
  if (spec.yes_no) {
    if (Eq(text, "yes") || Eq(text, "no")) {
      *v = Eq(text, "yes") ? 1 : 0;
      return true;
    }
    *why = "argument must be 'yes' or 'no'";
    return false;
  }
  bool memory = spec.id == Setting::kHashValue ||
                spec.id == Setting::kZSetValue ||
                spec.id == Setting::kMaxMemory ||
                spec.id == Setting::kStreamNodeBytes ||
                spec.id == Setting::kHllSparseMaxBytes;
  uint64_t m = 0;
  if (memory && ParseMemorySize(text, &m)) {
    *v = static_cast<int64_t>(m);
  } else if (memory || !ToInt(text, v)) {
    *why = memory ? "argument must be a memory value"
                  : "argument couldn't be parsed into an integer";
    return false;
  }
  // (The sizes are unsigned in Redis: a negative one is out of range.)
  if (*v < spec.min || *v > spec.max) {
    *why = "argument must be between " + std::to_string(spec.min) +
           " and " + std::to_string(spec.max) + " inclusive";
    return false;
  }
  return true;
}

}  // namespace

// CONFIG GET pattern [pattern ...] | CONFIG SET parameter value [...] | CONFIG RESETSTAT | CONFIG HELP
void Config(const Args& a, CommandContext* c, Reply* r) {
  std::string sub = Lower(a[1]);
  if (sub == "get") {
    if (a.size() < 3) {
      return r->Error("ERR wrong number of arguments for 'config|get' "
                       "command");
    }
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& p : Settings(c)) {
      for (size_t i = 2; i < a.size(); ++i) {
        if (GlobMatch(Lower(a[i]), p.first)) {
          kv.push_back(p);
          break;
        }
      }
    }
    r->Map(kv.size());
    for (const auto& p : kv) {
      r->Bulk(p.first);
      r->Bulk(p.second);
    }
  } else if (sub == "set") {
    if (a.size() < 4 || a.size() % 2 != 0) {
      return r->Error("ERR wrong number of arguments for 'config|set' "
                       "command");
    }
    // notify-keyspace-events and the settings of server/store/settings.h
    // change at run time (shared words); the rest are fixed at start.
    // All or nothing, as Redis: every value is checked before any is set.
    auto failed = [&](std::string_view arg, std::string_view why) {
      r->Error("ERR CONFIG SET failed (possibly related to argument '" +
               std::string(arg) + "') - " + std::string(why));
    };
    uint32_t notify = 0;
    bool set_notify = false;
    std::vector<std::pair<Setting, int64_t>> values;
    std::vector<SavePoint> save;
    bool set_save = false;
    const auto known_names = Settings(c);
    for (size_t i = 2; i < a.size(); i += 2) {
      std::string name = Lower(a[i]);
      bool known = false;
      for (const auto& p : known_names) known = known || p.first == name;
      if (!known) {
        return r->Error("ERR Unknown option or number of arguments for "
                         "CONFIG SET - '" + std::string(a[i]) + "'");
      }
      if (const SettingSpec* spec = FindSetting(name)) {
        for (size_t j = 2; j < i; j += 2) {
          if (Lower(a[j]) == name) return failed(a[i], "duplicate parameter");
        }
        int64_t v = 0;
        std::string why;
        if (!ParseSettingValue(*spec, a[i + 1], &v, &why)) {
          return failed(a[i], why);
        }
        values.emplace_back(spec->id, v);
        continue;
      }
      if (name == "save") {
        if (set_save) return failed(a[i], "duplicate parameter");
        if (!ParseSaveSetting(a[i + 1], &save)) {
          return failed(a[i], "Invalid save parameters");
        }
        if (save.size() > kMaxSavePoints) {
          return failed(a[i], "shmkv keeps at most " +
                                  std::to_string(kMaxSavePoints) +
                                  " save points");
        }
        set_save = true;
        continue;
      }
      if (name == "maxmemory-policy") {
        // The one policy shmkv has: setting it again changes nothing.
        if (Lower(a[i + 1]) == "noeviction") continue;
        return failed(a[i], "shmkv evicts no key: its only policy is "
                            "noeviction");
      }
      if (name != "notify-keyspace-events") {
        return failed(a[i], "can't set immutable config");
      }
      if (set_notify) return failed(a[i], "duplicate parameter");
      if (!ParseNotifyClasses(a[i + 1], &notify)) {
        return failed(a[i], "Invalid event class character. Use "
                            "'Ag$lshzxeKEtmdn'.");
      }
      set_notify = true;
    }
    if (set_notify) c->store->SetNotifyFlags(notify);
    if (set_save) c->store->SetSavePoints(save, c->txn != nullptr);
    for (const auto& [id, v] : values) c->store->SetSetting(id, v);
    r->Simple("OK");
  } else if (sub == "help") {
    if (a.size() != 2) {
      return r->Error("ERR wrong number of arguments for 'config|help' "
                      "command");
    }
    HelpReply(r, "CONFIG",
              {"GET <pattern> [<pattern> ...]",
               "    Return the parameters whose names match the glob-style",
               "    patterns, each with its value.",
               "SET <parameter> <value> [<parameter> <value> ...]",
               "    Set each parameter to its value, all or none."});
  } else if (sub == "resetstat" || sub == "rewrite") {
    r->Error("ERR CONFIG " + Lower(a[1]) + " is not supported by shmkv");
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
                  "'. Try CONFIG HELP.");
  }
}

}  // namespace cmd
}  // namespace shmkv
