//===- Status.cpp ---------------------------------------------------------===//

#include "kiln/runtime/Status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::runtime {

Status Status::withContext(const std::string &context) const {
  if (ok())
    return *this;
  return Status::error(code_, context + ": " + message_);
}

namespace detail {

void fatalBadStatusOrAccess(const Status &status) {
  std::fprintf(stderr, "kiln: accessed the value of a failed StatusOr: %s\n",
               status.message().c_str());
  std::abort();
}

Status okStatusAsError() {
  return Status::error("internal error: StatusOr constructed from an OK "
                       "Status without a value");
}

} // namespace detail
} // namespace kiln::runtime
