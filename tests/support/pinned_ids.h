// A family's statistics ids, pinned by its test: a change that would
// renumber counters kept in shared memory across a hot reload (an id
// edited, a row dropped, a row added without its pin) fails the family's
// own test.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "server/commands/registry.h"

namespace shmkv_test {

// Every row of `family` has exactly the id `pins` gives its name, and
// every pinned name is a row of that family. Add a pin for a new command
// (with a new id); never change or reuse one.
inline void ExpectPinnedIds(const char* family,
                            const std::map<std::string, int>& pins) {
  const shmkv::cmd::Registry& table = shmkv::cmd::Commands();
  std::set<std::string> seen;
  for (const shmkv::cmd::CommandRow* row : table.rows()) {
    if (table.FamilyOf(row) != family) continue;
    auto it = pins.find(row->name);
    if (it == pins.end()) {
      ADD_FAILURE() << row->name << " has no pinned id in " << family
                    << "'s test: pin it";
      continue;
    }
    EXPECT_EQ(row->id, it->second)
        << row->name << "'s id changed: counters in shared memory would be "
                        "misread across a hot reload";
    seen.insert(row->name);
  }
  for (const auto& [name, id] : pins) {
    EXPECT_TRUE(seen.count(name))
        << name << " (id " << id << ") is gone from " << family;
  }
}

}  // namespace shmkv_test
