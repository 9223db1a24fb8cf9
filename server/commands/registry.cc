// The command table (server/commands/registry.h).
#include "server/commands/registry.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "server/store/stats.h"

namespace shmkv {
namespace cmd {

namespace {

[[noreturn]] void BadRow(const CommandRow& row, const char* why) {
  std::fprintf(stderr, "shmkv: command table: '%s' (id %u): %s\n", row.name,
               static_cast<unsigned>(row.id), why);
  std::abort();
}

}  // namespace

void Registry::Add(const CommandRow* rows, size_t n, const char* family) {
  for (size_t i = 0; i < n; ++i) {
    const CommandRow& row = rows[i];
    if (row.id == 0 || row.id >= kMaxCommands) {
      BadRow(row, "id outside 1 .. kMaxCommands-1 (0 counts unknown commands)");
    }
    if (by_id_.size() <= row.id) by_id_.resize(row.id + 1u, nullptr);
    if (by_id_[row.id] != nullptr) BadRow(row, "id already taken");
    for (const char* p = row.name; *p != '\0'; ++p) {
      if (std::tolower(static_cast<unsigned char>(*p)) != *p) {
        BadRow(row, "name not in lower case");
      }
    }
    if (!index_.emplace(row.name, &row).second) BadRow(row, "name taken");
    by_id_[row.id] = &row;
    rows_.push_back(&row);
    family_.emplace(&row, family);
  }
}

const CommandRow* Registry::Find(std::string_view name) const {
  // Names are short: lower-case into a small buffer, no allocation.
  char buf[32];
  if (name.size() > sizeof(buf)) return nullptr;
  // (ASCII only, inline: the C library's tolower is a call per byte
  // through the locale, a measurable part of a pipelined GET.)
  for (size_t i = 0; i < name.size(); ++i) {
    char ch = name[i];
    buf[i] = ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
  }
  auto it = index_.find(std::string_view(buf, name.size()));
  return it == index_.end() ? nullptr : it->second;
}

const char* Registry::NameOfId(size_t id) const {
  if (id == 0) return "(other)";
  if (id >= by_id_.size() || by_id_[id] == nullptr) return "";
  return by_id_[id]->name;
}

std::string_view Registry::FamilyOf(const CommandRow* row) const {
  auto it = family_.find(row);
  return it == family_.end() ? std::string_view() : it->second;
}

const Registry& Commands() {
  static const Registry* table = [] {
    auto* r = new Registry();
    RegisterStringFamily(r);
    RegisterKeyspaceFamily(r);
    RegisterServerFamily(r);
    RegisterConnectionFamily(r);
    RegisterTransactionFamily(r);
    RegisterHashFamily(r);
    RegisterListFamily(r);
    RegisterSetFamily(r);
    RegisterZSetFamily(r);
    RegisterStreamFamily(r);
    RegisterStreamGroupFamily(r);
    RegisterHllFamily(r);
    RegisterGeoFamily(r);
    RegisterStandaloneFamily(r);
    RegisterBlockingFamily(r);
    RegisterScriptFamily(r);
    RegisterFunctionFamily(r);
    RegisterPubSubFamily(r);
    return r;
  }();
  return *table;
}

}  // namespace cmd
}  // namespace shmkv
