#pragma once
// Request ids: 16 hex digits, unique per process run, cheap to make on any reactor thread.

#include <string>

namespace isolane {

// Safe from any thread.
std::string newRequestId();

}  // namespace isolane
