// What the `shmc` commands do for each kind of container: one file per
// kind (kinds/<kind>.cc) gives its info, check (and repair) and dump, for
// each backend; FindKind (kinds/table.cc) picks them by the kind name the
// resolver gives. inspect.cc does the parts every kind shares.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "shmc/detail/segment.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"
#include "tools/shmc/container.h"
#include "tools/shmc/fixed_view.h"
#include "tools/shmc/json.h"

namespace shmc_tool {
namespace kinds {

namespace sd = shmc::detail;
using sd::ContainerKind;

inline int Fail(const shmc::Error& e, std::string* err) {
  *err = e.message;
  return ExitFor(e.code);
}

inline std::string Data(const std::string& bytes, bool hex) {
  return hex ? Hex(bytes.data(), bytes.size()) : bytes;
}

// What `check` found in one container.
struct Findings {
  Json problems = Json::array();
  Json fixed = Json::array();
  Json stats = Json::object();
};

// Where `dump` sends its records, and whether it wants more.
struct Sink {
  const DumpOptions& opt;
  const std::function<void(const Json&)>& emit;
  size_t emitted = 0;
  bool more() const { return opt.limit == 0 || emitted < opt.limit; }
  void out(Json j) {
    emit(j);
    ++emitted;
  }
};

// One kind's handlers for one backend. Each reads only through the
// container's own read path (or, for the fixed-node kinds, the library's
// layout description) after the header has been validated. A null dump:
// the kind has no records to print.
template <class Alloc>
struct KindOps {
  int (*info)(const Container&, Json*, std::string*);
  int (*check)(const Container&, bool, Findings*, std::string*);
  int (*dump)(const Container&, Sink*, std::string*);
};

// The kind named `kind`, or nullptr when this build has no handlers for it.
template <class Alloc>
const KindOps<Alloc>* FindKind(const std::string& kind);

// Each kind file's handlers.
template <class Alloc> KindOps<Alloc> MapOps();
template <class Alloc> KindOps<Alloc> FixedOps();
template <class Alloc> KindOps<Alloc> LinkOps();
template <class Alloc> KindOps<Alloc> ExtentMapOps();
template <class Alloc> KindOps<Alloc> ExtentOps();
template <class Alloc> KindOps<Alloc> QueueOps();
template <class Alloc> KindOps<Alloc> SyncOps();
template <class Alloc> KindOps<Alloc> DoubleBufOps();
template <class Alloc> KindOps<Alloc> DoubleTableOps();
template <class Alloc> KindOps<Alloc> SortedOps();
template <class Alloc> KindOps<Alloc> PercentileOps();

// An array's nodes by index, a table's nodes in use by row and slot
// (kinds/fixed.cc; a double table dumps its published half with it).
void DumpNodes(const FixedView& v, Sink* sink);

// The backends the tool reads, each kind file compiled for all of them.
#define SHMC_TOOL_INSTANTIATE_KIND(F)                 \
  template KindOps<shmc::POSIX> F<shmc::POSIX>();     \
  template KindOps<shmc::SVIPC> F<shmc::SVIPC>();     \
  template KindOps<shmc::MAPFILE> F<shmc::MAPFILE>();

}  // namespace kinds
}  // namespace shmc_tool
